#version 450
// rope_rows: rotates NEOX pairs (i, i + n_rot/2) of x [n_tok][n_head * head_dim] in place by a
// per-token table [n_tok][n_rot] of (cos, sin) per pair (M-RoPE image rows, the qwen-vl ViT's
// 2-D rope; backend.h rope_rows); dims >= n_rot pass through.
layout(local_size_x = 64) in;
layout(binding = 0) buffer X { float xf[]; };
layout(binding = 1) readonly buffer T { float tab[]; };
layout(push_constant) uniform PC {
    uint n_head, head_dim, n_rot, x_off, x_stride, t_off;
} pc;
void main() {
    const uint half_rot = pc.n_rot / 2u;
    const uint i = gl_GlobalInvocationID.x;     // pair index within a head
    const uint th = gl_WorkGroupID.y;           // token * n_head + head
    if (i >= half_rot) return;
    const uint t = th / pc.n_head, h = th % pc.n_head;
    const float c = tab[pc.t_off + t * pc.n_rot + 2u * i], s = tab[pc.t_off + t * pc.n_rot + 2u * i + 1u];
    const uint base = pc.x_off + t * pc.x_stride + h * pc.head_dim;
    const float x0 = xf[base + i], x1 = xf[base + i + half_rot];
    xf[base + i] = x0 * c - x1 * s;
    xf[base + i + half_rot] = x0 * s + x1 * c;
}
