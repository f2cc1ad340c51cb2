#version 450
// rms_norm: one workgroup per row: out = x / sqrt(mean(x^2) + eps) * w (w optional).
// Decode normalises a single row, so the kernel is latency-bound, not bandwidth-bound: a
// fixed 256-wide workgroup (the host's 64-wide specialisation is ignored: measured on an
// H200, 64 lanes x 64 dependent loads cost 34 us per 4096-row) with four independent loads
// in flight per lane.
#extension GL_EXT_control_flow_attributes : enable
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint WG_HOST = 64;  // set by the host for every WG kernel; unused here
const uint WG = 256;
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
    float s4[4] = float[4](0.0, 0.0, 0.0, 0.0);
    uint i = tid;
    for (; i + 3u * WG < pc.row_len; i += 4u * WG)
        [[unroll]] for (uint k = 0u; k < 4u; k++) { const float v = xf[xb + i + k * WG]; s4[k] += v * v; }
    for (; i < pc.row_len; i += WG) { const float v = xf[xb + i]; s4[0] += v * v; }
    const float s = wg_sum((s4[0] + s4[1]) + (s4[2] + s4[3]));
    const float scale = inversesqrt(s / float(pc.row_len) + pc.eps);
    for (i = tid; i + 3u * WG < pc.row_len; i += 4u * WG)
        [[unroll]] for (uint k = 0u; k < 4u; k++) {
            const uint j = i + k * WG;
            dst[db + j] = xf[xb + j] * scale * (pc.has_w != 0u ? wf[pc.w_off + j] : 1.0);
        }
    for (; i < pc.row_len; i += WG)
        dst[db + i] = xf[xb + i] * scale * (pc.has_w != 0u ? wf[pc.w_off + i] : 1.0);
}
