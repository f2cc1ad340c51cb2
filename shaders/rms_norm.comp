#version 450
// rms_norm: one workgroup per row: out = x / sqrt(mean(x^2) + eps) * w (w optional).
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128;
layout(binding = 0) readonly buffer X { float xf[]; };
layout(binding = 1) readonly buffer Wt { float wf[]; };
layout(binding = 2) writeonly buffer D { float dst[]; };
layout(push_constant) uniform PC {
    uint row_len, n_rows, x_off, w_off, has_w, d_off, groups_x; float eps;
} pc;
#include "reduce.glsl"
void main() {
    const uint row = gl_WorkGroupID.y * pc.groups_x + gl_WorkGroupID.x;
    if (row >= pc.n_rows) return;
    const uint tid = gl_LocalInvocationID.x;
    const uint xb = pc.x_off + row * pc.row_len, db = pc.d_off + row * pc.row_len;
    float s = 0.0;
    for (uint i = tid; i < pc.row_len; i += WG) { float v = xf[xb + i]; s += v * v; }
    s = wg_sum(s);
    const float scale = inversesqrt(s / float(pc.row_len) + pc.eps);
    for (uint i = tid; i < pc.row_len; i += WG)
        dst[db + i] = xf[xb + i] * scale * (pc.has_w != 0u ? wf[pc.w_off + i] : 1.0);
}
