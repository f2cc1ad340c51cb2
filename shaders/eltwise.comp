#version 450
// eltwise: OP_ADD out = a + b[i % b_n], OP_MUL out = a * b[i % b_n], OP_SCALE a *= s,
// OP_CLAMP out = max(min(a, s2), s) (ggml_clamp; b unused, s2 only in its push constants).
// out may alias a (same index read then written by one invocation). b_phase: the index
// of element 0 of this dispatch within b's period (work split over device buffers).
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer A { float af[]; };
layout(binding = 1) readonly buffer B { float bf[]; };
layout(binding = 2) writeonly buffer D { float dst[]; };
#if defined(OP_CLAMP)
layout(push_constant) uniform PC { uint n, b_n, a_off, b_off, d_off, groups_x; float s; uint b_phase; float s2; } pc;
#else
layout(push_constant) uniform PC { uint n, b_n, a_off, b_off, d_off, groups_x; float s; uint b_phase; } pc;
#endif
void main() {
    const uint i = (gl_WorkGroupID.y * pc.groups_x + gl_WorkGroupID.x) * 256u + gl_LocalInvocationID.x;
    if (i >= pc.n) return;
#if defined(OP_ADD)
    dst[pc.d_off + i] = af[pc.a_off + i] + bf[pc.b_off + (i + pc.b_phase) % pc.b_n];
#elif defined(OP_MUL)
    dst[pc.d_off + i] = af[pc.a_off + i] * bf[pc.b_off + (i + pc.b_phase) % pc.b_n];
#elif defined(OP_SCALE)
    dst[pc.d_off + i] = af[pc.a_off + i] * pc.s;
#elif defined(OP_CLAMP)
    const float v = af[pc.a_off + i];
    const float lo_hi = v < pc.s2 ? v : pc.s2;
    dst[pc.d_off + i] = lo_hi > pc.s ? lo_hi : pc.s;
#else
#error "eltwise: define OP_ADD, OP_MUL, OP_SCALE or OP_CLAMP"
#endif
}
