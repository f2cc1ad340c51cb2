// dequant_iq.glsl: the read-only weight types of engine/gguf/quant_iq.h for dequant.glsl
// (included from it, inside its DATA_A_<type> chain): MXFP4 and the i-quants. Same
// interface: QK, BLOCK_BYTES, dq_elem(bb, e) and, under DQ_UNITS, the mat-vec units
// (defining DQ_IQ_UNITS so that dequant.glsl skips its own).

#if defined(DATA_A_MXFP4)
#define QK 32u
#define BLOCK_BYTES 17u
const float KV4[16] = float[](0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 0.0, -1.0, -2.0, -3.0, -4.0, -6.0, -8.0, -12.0);
// E8M0 exponent as float, halved (the values are E2M1 doubled): 2^(e-128).
float e8m0_half(uint e) { return uintBitsToFloat(e < 2u ? (0x00200000u << e) : ((e - 1u) << 23)); }
float dq_elem(uint bb, uint e) {
    uint q = ld_u8(bb + 1u + (e & 15u));
    q = e < 16u ? (q & 0xfu) : (q >> 4);
    return KV4[q] * e8m0_half(ld_u8(bb));
}
#endif

#ifdef DQ_UNITS
#define DQ_IQ_UNITS
// The 4 values of 4 nibbles at bit `sh` of each byte of q, through the 16-entry KV4.
vec4 lut4(uint q, uint sh) {
    return vec4(KV4[(q >> sh) & 0xfu], KV4[(q >> (sh + 8u)) & 0xfu], KV4[(q >> (sh + 16u)) & 0xfu], KV4[(q >> (sh + 24u)) & 0xfu]);
}
#if defined(DATA_A_MXFP4)
#define MV_QK 32u
#define MV_UNITS 4u
#define MV_RUNS 2
uint mv_pos(uint u, uint r) { return 4u * u + 16u * r; }
void dq_unit(uint bb, uint u, out vec4 v[MV_RUNS]) {
    float d = e8m0_half(ld_u8(bb));
    uint q = ld_u32_any(bb + 1u + 4u * u);
    v[0] = d * lut4(q, 0u); v[1] = d * lut4(q, 4u);
}
#endif
#endif
