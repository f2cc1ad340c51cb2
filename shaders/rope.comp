#version 450
// rope: rotates pairs of x [n_tok][n_head * head_dim] in place. NORMAL pairs (2i, 2i+1),
// NEOX pairs (i, i + n_rot/2); dims >= n_rot pass through. The angles: rope.glsl.
layout(local_size_x = 64) in;
layout(binding = 0) buffer X { float xf[]; };
layout(binding = 1) readonly buffer FF { float ff[]; };
layout(push_constant) uniform PC {
    uint n_tok, n_head, head_dim, pos0, n_rot, neox, x_off, x_stride, ff_off, has_ff;
    float theta_scale, freq_scale;
    float ext_factor, mscale, corr_lo, corr_hi;
} pc;
#include "rope.glsl"
void main() {
    const uint half_rot = pc.n_rot / 2u;
    const uint i = gl_GlobalInvocationID.x;     // pair index within a head
    const uint th = gl_WorkGroupID.y;           // token * n_head + head
    if (i >= half_rot) return;
    const uint t = th / pc.n_head, h = th % pc.n_head;
    const vec2 cs = rope_cs(i, pc.pos0 + t, pc.has_ff != 0u ? ff[pc.ff_off + i] : 1.0, pc.theta_scale, pc.freq_scale,
                            pc.ext_factor, pc.mscale, pc.corr_lo, pc.corr_hi);
    const float c = cs.x, s = cs.y;
    const uint base = pc.x_off + t * pc.x_stride + h * pc.head_dim;
    const uint i0 = pc.neox != 0u ? base + i : base + 2u * i;
    const uint i1 = pc.neox != 0u ? base + i + half_rot : base + 2u * i + 1u;
    const float x0 = xf[i0], x1 = xf[i1];
    xf[i0] = x0 * c - x1 * s;
    xf[i1] = x0 * s + x1 * c;
}
