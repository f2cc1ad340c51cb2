#version 450
// store_rows: dst rows = convert(src rows), F32 -> DST_F32 / DST_F16 / DST_Q8_0 (the KV
// cache). F16/Q8_0 are written as 16-bit words (16-bit storage). Q8_0 matches ggml's
// quantize_row_q8_0_ref: d = amax/127, q = roundf(x/d) (half away from zero).
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
void main() {
    const uint row = gl_WorkGroupID.y;
    const uint i = gl_WorkGroupID.x * 64u + gl_LocalInvocationID.x;
    if (row >= pc.n_rows) return;
    const uint sb = pc.s_off + row * pc.s_stride;
#if defined(DST_F32)
    if (i >= pc.cols) return;
    df[(pc.d_off + row * pc.d_stride) / 4u + i] = sf[sb + i];
#elif defined(DST_F16)
    if (i >= pc.cols) return;
    dh[(pc.d_off + row * pc.d_stride) / 2u + i] = uint16_t(packHalf2x16(vec2(sf[sb + i], 0.0)));
#elif defined(DST_Q8_0)
    if (i >= pc.cols / 32u) return;            // one invocation per block
    float amax = 0.0;
    for (uint j = 0u; j < 32u; j++) amax = max(amax, abs(sf[sb + 32u * i + j]));
    const float d = amax / 127.0;
    const float id = d != 0.0 ? 1.0 / d : 0.0;
    const uint w = (pc.d_off + row * pc.d_stride) / 2u + 17u * i;
    dh[w] = uint16_t(packHalf2x16(vec2(d, 0.0)));
    for (uint j = 0u; j < 16u; j++) {
        float v0 = sf[sb + 32u * i + 2u * j] * id, v1 = sf[sb + 32u * i + 2u * j + 1u] * id;
        int q0 = int(sign(v0) * floor(abs(v0) + 0.5)), q1 = int(sign(v1) * floor(abs(v1) + 0.5));
        dh[w + 1u + j] = uint16_t((uint(q0) & 0xffu) | ((uint(q1) & 0xffu) << 8));
    }
#else
#error "store_rows: define DST_F32, DST_F16 or DST_Q8_0"
#endif
}
