#version 450
// store_rows: dst rows = convert(src rows), F32 -> DST_F32 / DST_F16 / DST_Q8_0 / DST_Q4_0
// (the KV cache). F16/Q8_0/Q4_0 are written as 16-bit words (16-bit storage). Q8_0 matches
// ggml's quantize_row_q8_0_ref: d = amax/127, q = roundf(x/d) (half away from zero); Q4_0
// its quantize_row_q4_0_ref: d = (the value of largest magnitude) / -8, q = min(15,
// trunc(x/d + 8.5)), elements 0..15 in the low nibbles, 16..31 in the high ones.
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
#elif defined(DST_Q4_0)
    if (i >= pc.cols / 32u) return;            // one invocation per 18-byte block (9 words)
    const uint xb = sb + 32u * i;
    float amax = 0.0, vmax = 0.0;
    for (uint j = 0u; j < 32u; j++) {
        const float v = sf[xb + j];
        if (amax < abs(v)) { amax = abs(v); vmax = v; }
    }
    const float d = vmax / -8.0;
    const float id = d != 0.0 ? 1.0 / d : 0.0;
    const uint w = (pc.d_off + row * pc.d_stride) / 2u + 9u * i;
    dh[w] = uint16_t(packHalf2x16(vec2(d, 0.0)));
    for (uint j = 0u; j < 8u; j++) {
        uint word = 0u;
        for (uint b = 0u; b < 2u; b++) {
            const uint e = 2u * j + b;        // byte e: element e (low nibble), e + 16 (high)
            precise float l = sf[xb + e] * id + 8.5, h = sf[xb + e + 16u] * id + 8.5;
            const uint ql = min(15u, uint(int(l))), qh = min(15u, uint(int(h)));
            word |= (ql | (qh << 4)) << (8u * b);
        }
        dh[w + 1u + j] = uint16_t(word);
    }
#else
#error "store_rows: define DST_F32, DST_F16, DST_Q8_0 or DST_Q4_0"
#endif
}
