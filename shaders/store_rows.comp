#version 450
// store_rows: dst rows = convert(src rows), F32 -> DST_F32 / DST_F16 / DST_Q8_0 / DST_Q4_0
// (the KV cache); the conversions: kv_store.glsl.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
layout(local_size_x = 64) in;
layout(binding = 0) readonly buffer S { float sf[]; };
#if defined(DST_F32)
layout(binding = 1) writeonly buffer D { float df[]; };
#else
layout(binding = 1) writeonly buffer D { uint16_t dh[]; };
#endif
layout(push_constant) uniform PC { uint cols, n_rows, s_off, s_stride, d_off, d_stride, groups_x; } pc;
#include "kv_store.glsl"
void main() {
    const uint row = gl_WorkGroupID.y;
    const uint i = gl_WorkGroupID.x * 64u + gl_LocalInvocationID.x;
    if (row >= pc.n_rows) return;
    const uint sb = pc.s_off + row * pc.s_stride, rowb = pc.d_off + row * pc.d_stride;
#ifdef KV_QUANT
    if (i >= pc.cols / 32u) return;            // one invocation per block
    float x[32];
    for (uint j = 0u; j < 32u; j++) x[j] = sf[sb + 32u * i + j];
    kv_put_block(rowb, i, x);
#else
    if (i >= pc.cols) return;
    kv_put(rowb, i, sf[sb + i]);
#endif
}
