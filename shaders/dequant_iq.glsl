// dequant_iq.glsl: the read-only weight types of engine/gguf/quant_iq.h for dequant.glsl
// (included from it, inside its DATA_A_<type> chain): MXFP4, the i-quants and TQ1_0/TQ2_0.
// Same interface: QK, BLOCK_BYTES, dq_elem(bb, e) and, under DQ_UNITS, the mat-vec units
// (defining DQ_IQ_UNITS so that dequant.glsl skips its own). The grid types (IQ3/IQ2/IQ1)
// decode through their lookup grid, a storage buffer at binding 3 after the including
// shader's 0..2 (engine/vulkan/vk_iq_grids.c binds it; a 2048-entry GLSL constant array
// took lavapipe minutes to compile): entry i of an 8-value grid is uints 2i (values 0..3,
// byte j = value j) and 2i+1 (values 4..7), of a 4-value grid uint i. dq_elem decodes one
// element, dq_unit 8.
#if defined(DATA_A_IQ2_XXS) || defined(DATA_A_IQ2_XS) || defined(DATA_A_IQ2_S) || defined(DATA_A_IQ3_XXS) || \
    defined(DATA_A_IQ3_S) || defined(DATA_A_IQ1_S) || defined(DATA_A_IQ1_M)
layout(binding = 3) readonly buffer IQG { uint iq_grid[]; };
#define iq2xxs_grid iq_grid
#define iq2xs_grid iq_grid
#define iq2s_grid iq_grid
#define iq3xxs_grid iq_grid
#define iq3s_grid iq_grid
#define iq1s_grid iq_grid
#endif

// ggml's ksigns_iq2xs: 7 sign bits plus a parity bit (an even count of minus signs).
uint iq_ksigns(uint i) { i &= 127u; return i | ((uint(bitCount(i)) & 1u) << 7); }
float iq_sign(uint signs, uint j) { return ((signs >> j) & 1u) != 0u ? -1.0 : 1.0; }
// Byte j (0..7) of entry i of an 8-value grid, and of a 4-value one.
#define GRID8(g, i, j) ((g[2u * (i) + ((j) >> 2)] >> (8u * ((j) & 3u))) & 0xffu)
#define GRID4(g, i, j) ((g[i] >> (8u * (j))) & 0xffu)

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
#elif defined(DATA_A_IQ4_NL) || defined(DATA_A_IQ4_XS)
const float KV4[16] = float[](-127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0, 1.0, 13.0, 25.0, 38.0, 53.0, 69.0, 89.0, 113.0);
#if defined(DATA_A_IQ4_NL)
#define QK 32u
#define BLOCK_BYTES 18u
float dq_elem(uint bb, uint e) {
    uint q = ld_u8(bb + 2u + (e & 15u));
    q = e < 16u ? (q & 0xfu) : (q >> 4);
    return ld_f16(bb) * KV4[q];
}
#else
#define QK 256u
#define BLOCK_BYTES 136u
// Scale of sub-block ib: d * (6-bit scale - 32).
float iq4xs_scale(uint bb, uint ib) {
    uint ls = ((ld_u8(bb + 4u + ib / 2u) >> (4u * (ib & 1u))) & 0xfu) | (((ld_u16(bb + 2u) >> (2u * ib)) & 3u) << 4);
    return ld_f16(bb) * float(int(ls) - 32);
}
float dq_elem(uint bb, uint e) {
    uint ib = e / 32u, j = e % 32u;
    uint q = ld_u8(bb + 8u + 16u * ib + (j & 15u));
    q = j < 16u ? (q & 0xfu) : (q >> 4);
    return iq4xs_scale(bb, ib) * KV4[q];
}
#endif
#elif defined(DATA_A_IQ2_XXS)
#define QK 256u
#define BLOCK_BYTES 66u
float dq_elem(uint bb, uint e) {
    uint ib = e / 32u, l = (e % 32u) / 8u, j = e % 8u;
    uint base = bb + 2u + 8u * ib;
    uint aux1 = ld_u16(base + 4u) | (ld_u16(base + 6u) << 16);
    float db = ld_f16(bb) * (0.5 + float(aux1 >> 28)) * 0.25;
    uint g = GRID8(iq2xxs_grid, ld_u8(base + l), j);
    return db * float(g) * iq_sign(iq_ksigns(aux1 >> (7u * l)), j);
}
#elif defined(DATA_A_IQ2_XS)
#define QK 256u
#define BLOCK_BYTES 74u
float dq_elem(uint bb, uint e) {
    uint ib = e / 32u, l = (e % 32u) / 8u, j = e % 8u;
    uint q = ld_u16(bb + 2u + 2u * (4u * ib + l));
    float db = ld_f16(bb) * (0.5 + float((ld_u8(bb + 66u + ib) >> (4u * (l / 2u))) & 0xfu)) * 0.25;
    return db * float(GRID8(iq2xs_grid, q & 511u, j)) * iq_sign(iq_ksigns(q >> 9), j);
}
#elif defined(DATA_A_IQ2_S)
#define QK 256u
#define BLOCK_BYTES 82u
float dq_elem(uint bb, uint e) {
    uint ib = e / 32u, l = (e % 32u) / 8u, j = e % 8u;
    uint idx = ld_u8(bb + 2u + 4u * ib + l) | ((ld_u8(bb + 66u + ib) << (8u - 2u * l)) & 0x300u);
    float db = ld_f16(bb) * (0.5 + float((ld_u8(bb + 74u + ib) >> (4u * (l / 2u))) & 0xfu)) * 0.25;
    return db * float(GRID8(iq2s_grid, idx, j)) * iq_sign(ld_u8(bb + 34u + 4u * ib + l), j);
}
#elif defined(DATA_A_IQ3_XXS)
#define QK 256u
#define BLOCK_BYTES 98u
float dq_elem(uint bb, uint e) {
    uint ib = e / 32u, l = (e % 32u) / 8u, j = e % 8u;
    uint aux = ld_u16(bb + 66u + 4u * ib) | (ld_u16(bb + 68u + 4u * ib) << 16);
    float db = ld_f16(bb) * (0.5 + float(aux >> 28)) * 0.5;
    uint g = GRID4(iq3xxs_grid, ld_u8(bb + 2u + 8u * ib + 2u * l + j / 4u), j % 4u);
    return db * float(g) * iq_sign(iq_ksigns(aux >> (7u * l)), j);
}
#elif defined(DATA_A_IQ3_S)
#define QK 256u
#define BLOCK_BYTES 110u
float dq_elem(uint bb, uint e) {
    uint ib = e / 32u, l = (e % 32u) / 8u, j = e % 8u, h = j / 4u;
    uint idx = ld_u8(bb + 2u + 8u * ib + 2u * l + h) | ((ld_u8(bb + 66u + ib) << (8u - 2u * l - h)) & 256u);
    float db = ld_f16(bb) * float(1u + 2u * ((ld_u8(bb + 106u + ib / 2u) >> (4u * (ib & 1u))) & 0xfu));
    return db * float(GRID4(iq3s_grid, idx, j % 4u)) * iq_sign(ld_u8(bb + 74u + 4u * ib + l), j);
}
#elif defined(DATA_A_IQ1_S)
#define QK 256u
#define BLOCK_BYTES 50u
float dq_elem(uint bb, uint e) {
    uint ib = e / 32u, l = (e % 32u) / 8u, j = e % 8u;
    uint qh = ld_u16(bb + 34u + 2u * ib);
    float dl = ld_f16(bb) * float(2u * ((qh >> 12) & 7u) + 1u);
    float delta = (qh & 0x8000u) != 0u ? -0.125 : 0.125;
    uint idx = ld_u8(bb + 2u + 4u * ib + l) | (((qh >> (3u * l)) & 7u) << 8);
    int g = int(GRID8(iq1s_grid, idx, j) << 24) >> 24;
    return dl * (float(g) + delta);
}
#elif defined(DATA_A_IQ1_M)
#define QK 256u
#define BLOCK_BYTES 56u
float dq_elem(uint bb, uint e) {
    uint ib = e / 32u, l = (e % 32u) / 8u, j = e % 8u;
    uint s0 = ld_u16(bb + 48u), s1 = ld_u16(bb + 50u), s2 = ld_u16(bb + 52u), s3 = ld_u16(bb + 54u);
    uint dbits = (s0 >> 12) | ((s1 >> 8) & 0xf0u) | ((s2 >> 4) & 0xf00u) | (s3 & 0xf000u);
    uint sc = ld_u16(bb + 48u + 2u * (ib / 2u));
    float dl = unpackHalf2x16(dbits).x * float(2u * ((sc >> (6u * (ib & 1u) + 3u * (l / 2u))) & 7u) + 1u);
    uint qh = ld_u8(bb + 32u + 2u * ib + l / 2u);
    uint idx = ld_u8(bb + 4u * ib + l) | ((qh << ((l & 1u) == 0u ? 8u : 4u)) & 0x700u);
    float delta = (qh & ((l & 1u) == 0u ? 0x08u : 0x80u)) != 0u ? -0.125 : 0.125;
    int g = int(GRID8(iq1s_grid, idx, j) << 24) >> 24;
    return dl * (float(g) + delta);
}
#elif defined(DATA_A_TQ1_0)
#define QK 256u
#define BLOCK_BYTES 54u
// Base-3 digits: 5 per byte of qs (48 bytes: elements 0..239), 4 per byte of qh.
float dq_elem(uint bb, uint e) {
    uint byte, n;
    if (e < 160u) { byte = e % 32u; n = e / 32u; }
    else if (e < 240u) { byte = 32u + (e - 160u) % 16u; n = (e - 160u) / 16u; }
    else { byte = 48u + (e - 240u) % 4u; n = (e - 240u) / 4u; }
    const uint pow3[5] = uint[](1u, 3u, 9u, 27u, 81u);
    uint q = (ld_u8(bb + byte) * pow3[n]) & 0xffu;
    return float(int((q * 3u) >> 8) - 1) * ld_f16(bb + 52u);
}
#elif defined(DATA_A_TQ2_0)
#define QK 256u
#define BLOCK_BYTES 66u
float dq_elem(uint bb, uint e) {
    uint q = (ld_u8(bb + 32u * (e / 128u) + e % 32u) >> (2u * ((e % 128u) / 32u))) & 3u;
    return float(int(q) - 1) * ld_f16(bb + 64u);
}
#endif

#ifdef DQ_UNITS
#define DQ_IQ_UNITS
#if defined(DATA_A_MXFP4) || defined(DATA_A_IQ4_NL) || defined(DATA_A_IQ4_XS)
// The 4 values of 4 nibbles at bit `sh` of each byte of q, through the 16-entry KV4.
vec4 lut4(uint q, uint sh) {
    return vec4(KV4[(q >> sh) & 0xfu], KV4[(q >> (sh + 8u)) & 0xfu], KV4[(q >> (sh + 16u)) & 0xfu], KV4[(q >> (sh + 24u)) & 0xfu]);
}
#endif
#if defined(DATA_A_MXFP4) || defined(DATA_A_IQ4_NL)
#define MV_QK 32u
#define MV_UNITS 4u
#define MV_RUNS 2
uint mv_pos(uint u, uint r) { return 4u * u + 16u * r; }
void dq_unit(uint bb, uint u, out vec4 v[MV_RUNS]) {
#if defined(DATA_A_MXFP4)
    float d = e8m0_half(ld_u8(bb));
    uint q = ld_u32_any(bb + 1u + 4u * u);
#else
    float d = ld_f16(bb);
    uint q = ld_u32(bb + 2u + 4u * u);
#endif
    v[0] = d * lut4(q, 0u); v[1] = d * lut4(q, 4u);
}
#elif defined(DATA_A_IQ4_XS)
#define MV_QK 256u
#define MV_UNITS 32u
#define MV_RUNS 2
uint mv_pos(uint u, uint r) { return 32u * (u / 4u) + 4u * (u % 4u) + 16u * r; }
void dq_unit(uint bb, uint u, out vec4 v[MV_RUNS]) {
    uint ib = u / 4u;
    float dl = iq4xs_scale(bb, ib);
    uint q = ld_u32(bb + 8u + 16u * ib + 4u * (u % 4u));
    v[0] = dl * lut4(q, 0u); v[1] = dl * lut4(q, 4u);
}
#else
// Grid and ternary types: unit u = elements 8u..8u+7 of the 256-block (sub-block ib = u / 4,
// group l = u % 4: one 8-value grid entry, or two 4-value ones for IQ3), decoded as a whole:
// the scale, grid index and signs once per unit, the 8 values as two vec4 (the element-wise
// dq_elem 8 times over compiled ~10x larger: minutes of LLVM time on lavapipe).
#define MV_QK 256u
#define MV_UNITS 32u
#define MV_RUNS 2
uint mv_pos(uint u, uint r) { return 8u * u + 4u * r; }
vec4 bytes_u8(uint q) { return vec4(q & 0xffu, (q >> 8) & 0xffu, (q >> 16) & 0xffu, q >> 24); }
// The sign (+1/-1) of bits s..s+3 of signs.
vec4 signs4(uint signs, uint s) { return 1.0 - 2.0 * bits4(signs, s); }
void dq_unit(uint bb, uint u, out vec4 v[MV_RUNS]) {
    const uint ib = u / 4u, l = u % 4u;
    const float d = ld_f16(bb);
#if defined(DATA_A_IQ2_XXS) || defined(DATA_A_IQ2_XS) || defined(DATA_A_IQ2_S)
#if defined(DATA_A_IQ2_XXS)
    const uint base = bb + 2u + 8u * ib;
    const uint aux1 = ld_u16(base + 4u) | (ld_u16(base + 6u) << 16);
    const float db = d * (0.5 + float(aux1 >> 28)) * 0.25;
    const uint gi = 2u * ld_u8(base + l), signs = iq_ksigns(aux1 >> (7u * l));
    const uint g0 = iq2xxs_grid[gi], g1 = iq2xxs_grid[gi + 1u];
#elif defined(DATA_A_IQ2_XS)
    const uint q = ld_u16(bb + 2u + 2u * (4u * ib + l));
    const float db = d * (0.5 + float((ld_u8(bb + 66u + ib) >> (4u * (l / 2u))) & 0xfu)) * 0.25;
    const uint gi = 2u * (q & 511u), signs = iq_ksigns(q >> 9);
    const uint g0 = iq2xs_grid[gi], g1 = iq2xs_grid[gi + 1u];
#else
    const uint gi = 2u * (ld_u8(bb + 2u + 4u * ib + l) | ((ld_u8(bb + 66u + ib) << (8u - 2u * l)) & 0x300u));
    const float db = d * (0.5 + float((ld_u8(bb + 74u + ib) >> (4u * (l / 2u))) & 0xfu)) * 0.25;
    const uint signs = ld_u8(bb + 34u + 4u * ib + l);
    const uint g0 = iq2s_grid[gi], g1 = iq2s_grid[gi + 1u];
#endif
    v[0] = db * bytes_u8(g0) * signs4(signs, 0u);
    v[1] = db * bytes_u8(g1) * signs4(signs, 4u);
#elif defined(DATA_A_IQ3_XXS)
    const uint aux = ld_u16(bb + 66u + 4u * ib) | (ld_u16(bb + 68u + 4u * ib) << 16);
    const float db = d * (0.5 + float(aux >> 28)) * 0.5;
    const uint qb = bb + 2u + 8u * ib + 2u * l, signs = iq_ksigns(aux >> (7u * l));
    v[0] = db * bytes_u8(iq3xxs_grid[ld_u8(qb)]) * signs4(signs, 0u);
    v[1] = db * bytes_u8(iq3xxs_grid[ld_u8(qb + 1u)]) * signs4(signs, 4u);
#elif defined(DATA_A_IQ3_S)
    const uint qb = bb + 2u + 8u * ib + 2u * l, qh = ld_u8(bb + 66u + ib);
    const float db = d * float(1u + 2u * ((ld_u8(bb + 106u + ib / 2u) >> (4u * (ib & 1u))) & 0xfu));
    const uint signs = ld_u8(bb + 74u + 4u * ib + l);
    v[0] = db * bytes_u8(iq3s_grid[ld_u8(qb) | ((qh << (8u - 2u * l)) & 256u)]) * signs4(signs, 0u);
    v[1] = db * bytes_u8(iq3s_grid[ld_u8(qb + 1u) | ((qh << (7u - 2u * l)) & 256u)]) * signs4(signs, 4u);
#elif defined(DATA_A_IQ1_S) || defined(DATA_A_IQ1_M)
#if defined(DATA_A_IQ1_S)
    const uint qh = ld_u16(bb + 34u + 2u * ib);
    const float dl = d * float(2u * ((qh >> 12) & 7u) + 1u);
    const float delta = (qh & 0x8000u) != 0u ? -0.125 : 0.125;
    const uint gi = 2u * (ld_u8(bb + 2u + 4u * ib + l) | (((qh >> (3u * l)) & 7u) << 8));
#else
    const uint s0 = ld_u16(bb + 48u), s1 = ld_u16(bb + 50u), s2 = ld_u16(bb + 52u), s3 = ld_u16(bb + 54u);
    const uint dbits = (s0 >> 12) | ((s1 >> 8) & 0xf0u) | ((s2 >> 4) & 0xf00u) | (s3 & 0xf000u);
    const uint sc = ld_u16(bb + 48u + 2u * (ib / 2u));
    const float dl = unpackHalf2x16(dbits).x * float(2u * ((sc >> (6u * (ib & 1u) + 3u * (l / 2u))) & 7u) + 1u);
    const uint qh = ld_u8(bb + 32u + 2u * ib + l / 2u);
    const uint gi = 2u * (ld_u8(bb + 4u * ib + l) | ((qh << ((l & 1u) == 0u ? 8u : 4u)) & 0x700u));
    const float delta = (qh & ((l & 1u) == 0u ? 0x08u : 0x80u)) != 0u ? -0.125 : 0.125;
#endif
    v[0] = dl * (bytes_s8(iq1s_grid[gi]) + delta);
    v[1] = dl * (bytes_s8(iq1s_grid[gi + 1u]) + delta);
#elif defined(DATA_A_TQ1_0)
    // A run of 4 consecutive elements is 4 consecutive bytes at one power of 3 (see dq_elem).
    const float dt = ld_f16(bb + 52u);
    [[unroll]] for (uint r = 0u; r < 2u; r++) {
        const uint e = 8u * u + 4u * r;
        uint byte, n;
        if (e < 160u) { byte = e % 32u; n = e / 32u; }
        else if (e < 240u) { byte = 32u + (e - 160u) % 16u; n = (e - 160u) / 16u; }
        else { byte = 48u; n = (e - 240u) / 4u; }
        const uint p = n == 0u ? 1u : n == 1u ? 3u : n == 2u ? 9u : n == 3u ? 27u : 81u;
        const uint q = ld_u32(bb + byte);
        uvec4 b = (uvec4(q & 0xffu, (q >> 8) & 0xffu, (q >> 16) & 0xffu, q >> 24) * p) & 0xffu;
        v[r] = dt * (vec4((b * 3u) >> 8) - 1.0);
    }
#elif defined(DATA_A_TQ2_0)
    const float dt = ld_f16(bb + 64u);
    const uint e = 8u * u;
    const uint q0 = ld_u32(bb + 32u * (e / 128u) + e % 32u), q1 = ld_u32(bb + 32u * (e / 128u) + e % 32u + 4u);
    const uint sh = 2u * ((e % 128u) / 32u);
    v[0] = dt * (byte2(q0, sh) - 1.0);
    v[1] = dt * (byte2(q1, sh) - 1.0);
#endif
}
#endif
#endif
