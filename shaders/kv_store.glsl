// kv_store.glsl: converting F32 values into one KV-cache row, shared by store_rows.comp and
// rope_store.comp (the same bits). The including shader declares the destination buffer as
// `float df[]` (DST_F32) or `uint16_t dh[]` (DST_F16 / DST_Q8_0 / DST_Q4_0: 16-bit words,
// 16-bit storage) and rowb, the byte offset of the destination row. Q8_0 matches ggml's
// quantize_row_q8_0_ref: d = amax/127, q = roundf(x/d) (half away from zero); Q4_0 its
// quantize_row_q4_0_ref: d = (the value of largest magnitude) / -8, q = min(15,
// trunc(x/d + 8.5)), elements 0..15 in the low nibbles, 16..31 in the high ones.
#if defined(DST_F32)
void kv_put(uint rowb, uint i, float v) { df[rowb / 4u + i] = v; }
#elif defined(DST_F16)
void kv_put(uint rowb, uint i, float v) { dh[rowb / 2u + i] = uint16_t(packHalf2x16(vec2(v, 0.0))); }
#elif defined(DST_Q8_0)
#define KV_QUANT 1
// block i (32 elements x) of the row
void kv_put_block(uint rowb, uint i, float x[32]) {
    float amax = 0.0;
    for (uint j = 0u; j < 32u; j++) amax = max(amax, abs(x[j]));
    const float d = amax / 127.0;
    const float id = d != 0.0 ? 1.0 / d : 0.0;
    const uint w = rowb / 2u + 17u * i;
    dh[w] = uint16_t(packHalf2x16(vec2(d, 0.0)));
    for (uint j = 0u; j < 16u; j++) {
        float v0 = x[2u * j] * id, v1 = x[2u * j + 1u] * id;
        int q0 = int(sign(v0) * floor(abs(v0) + 0.5)), q1 = int(sign(v1) * floor(abs(v1) + 0.5));
        dh[w + 1u + j] = uint16_t((uint(q0) & 0xffu) | ((uint(q1) & 0xffu) << 8));
    }
}
#elif defined(DST_Q4_0)
#define KV_QUANT 1
void kv_put_block(uint rowb, uint i, float x[32]) {  // one 18-byte block (9 words)
    float amax = 0.0, vmax = 0.0;
    for (uint j = 0u; j < 32u; j++) {
        const float v = x[j];
        if (amax < abs(v)) { amax = abs(v); vmax = v; }
    }
    const float d = vmax / -8.0;
    const float id = d != 0.0 ? 1.0 / d : 0.0;
    const uint w = rowb / 2u + 9u * i;
    dh[w] = uint16_t(packHalf2x16(vec2(d, 0.0)));
    for (uint j = 0u; j < 8u; j++) {
        uint word = 0u;
        for (uint b = 0u; b < 2u; b++) {
            const uint e = 2u * j + b;        // byte e: element e (low nibble), e + 16 (high)
            precise float l = x[e] * id + 8.5, h = x[e + 16u] * id + 8.5;
            const uint ql = min(15u, uint(int(l))), qh = min(15u, uint(int(h)));
            word |= (ql | (qh << 4)) << (8u * b);
        }
        dh[w + 1u + j] = uint16_t(word);
    }
}
#else
#error "kv_store: define DST_F32, DST_F16, DST_Q8_0 or DST_Q4_0"
#endif
