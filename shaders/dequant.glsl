// dequant.glsl: reading every GGUF weight type from a `uint wq[]` storage buffer that the
// including shader declares. Byte-exact layouts of engine/quant.h. One DATA_A_<TYPE>
// define selects the type. Provides:
//   QK, BLOCK_BYTES          elements / bytes of one block (F32/F16/BF16: 1 element)
//   float dq_elem(bb, e)     element e (< QK) of the block starting at byte bb
//   Mat-vec units: MV_QK elements per unit-block, MV_UNITS units per block, MV_RUNS runs of
//   4 consecutive elements per unit, mv_pos(u, r) the block position of run r of unit u,
//   dq_unit(bb, u, v) the dequantized runs (F types: one unit = 8 elements, v masked by caller).
// Kernels address blocks through the layout-neutral accessors dq_at(rb, nb, b, e) and
// dq_unit_at(rb, nb, b, u, v) (rb: the row's first byte, nb: QK-blocks per row, b: block).
// DQ_WIDE selects the repacked layout of engine/vulkan/vk_wide.c (Q4_0/Q4_1/Q5_0/Q5_1/Q8_0/
// Q6_K): per row the quants of every block (QBYTES each, 16-byte aligned), then the rest of
// each block (the scales / mins / high bits, SIDE_BYTES each); the mat-vec units then read one
// uvec4 (16 bytes) of quants per lane, adjacent lanes adjacent.
#if defined(DQ_WIDE) && !defined(DQ_WQ4_DECLARED) // (a shader binding an array of weights declares its own wq4)
layout(binding = 0) readonly buffer W4 { uvec4 wq4[]; };
#endif

uint ld_u16(uint b) { return (wq[b >> 2] >> ((b & 2u) << 3)) & 0xffffu; }
uint ld_u8(uint b) { return (wq[b >> 2] >> ((b & 3u) << 3)) & 0xffu; }
// 4 bytes at an even address.
uint ld_u32(uint b) {
    uint lo = wq[b >> 2];
    if ((b & 2u) == 0u) return lo;
    return (lo >> 16) | (wq[(b >> 2) + 1u] << 16);
}
// 4 bytes at any address (blocks of odd size, e.g. MXFP4's 17 bytes).
uint ld_u32_any(uint b) {
    uint s = (b & 3u) << 3, lo = wq[b >> 2];
    if (s == 0u) return lo;
    return (lo >> s) | (wq[(b >> 2) + 1u] << (32u - s));
}
float ld_f16(uint b) { return unpackHalf2x16(ld_u16(b)).x; }
vec4 nib_lo(uint q) { return vec4(q & 0xfu, (q >> 8) & 0xfu, (q >> 16) & 0xfu, (q >> 24) & 0xfu); }
vec4 nib_hi(uint q) { return vec4((q >> 4) & 0xfu, (q >> 12) & 0xfu, (q >> 20) & 0xfu, q >> 28); }
vec4 bytes_s8(uint q) { return vec4(ivec4(int(q << 24), int(q << 16), int(q << 8), int(q)) >> 24); }
// Bit i (i = 0..3) of 4 consecutive bits of h starting at bit s, as 0/1 floats.
vec4 bits4(uint h, uint s) { return vec4((h >> s) & 1u, (h >> (s + 1u)) & 1u, (h >> (s + 2u)) & 1u, (h >> (s + 3u)) & 1u); }
// Bit `bit` of each of the 4 bytes of q.
vec4 bytebit(uint q, uint bit) { return vec4((q >> bit) & 1u, (q >> (bit + 8u)) & 1u, (q >> (bit + 16u)) & 1u, (q >> (bit + 24u)) & 1u); }
// 2-bit fields at `shift` of each of the 4 bytes of q.
vec4 byte2(uint q, uint shift) { return vec4((q >> shift) & 3u, (q >> (shift + 8u)) & 3u, (q >> (shift + 16u)) & 3u, (q >> (shift + 24u)) & 3u); }

// K-quant 6-bit scale/min pair j of a 12-byte packed scale array at byte sb (ggml get_scale_min_k4).
vec2 scale_min_k4(uint sb, uint j) {
    if (j < 4u) return vec2(ld_u8(sb + j) & 63u, ld_u8(sb + j + 4u) & 63u);
    uint a = ld_u8(sb + j + 4u), lo = ld_u8(sb + j - 4u), hi = ld_u8(sb + j);
    return vec2((a & 0xfu) | ((lo >> 6) << 4), (a >> 4) | ((hi >> 6) << 4));
}
// Q3_K signed 6-bit scale i (0..15) from the 12-byte array at sb.
float q3k_scale(uint sb, uint i) {
    uint lo4 = (ld_u8(sb + (i & 7u)) >> (4u * (i >> 3))) & 0xfu;
    uint hi2 = (ld_u8(sb + 8u + (i & 3u)) >> (2u * (i >> 2))) & 3u;
    return float(int(lo4 | (hi2 << 4)) - 32);
}

#if defined(DATA_A_F32)
#define QK 1u
#define BLOCK_BYTES 4u
#define IS_FLOAT_TYPE 1
float dq_elem(uint bb, uint e) { return uintBitsToFloat(wq[bb >> 2]); }
#elif defined(DATA_A_F16)
#define QK 1u
#define BLOCK_BYTES 2u
#define IS_FLOAT_TYPE 1
float dq_elem(uint bb, uint e) { return ld_f16(bb); }
#elif defined(DATA_A_BF16)
#define QK 1u
#define BLOCK_BYTES 2u
#define IS_FLOAT_TYPE 1
float dq_elem(uint bb, uint e) { return uintBitsToFloat(ld_u16(bb) << 16); }
// The 32-element types: dq_split(sb, qb, e) reads the block's side bytes (scale, min, high
// bits) at sb and its quants at qb (adjacent in the GGUF layout, apart in the repacked one).
#elif defined(DATA_A_Q4_0)
#define QK 32u
#define BLOCK_BYTES 18u
#define QBYTES 16u
float dq_split(uint sb, uint qb, uint e) {
    uint q = ld_u8(qb + (e & 15u));
    q = e < 16u ? (q & 0xfu) : (q >> 4);
    return ld_f16(sb) * (float(q) - 8.0);
}
#elif defined(DATA_A_Q4_1)
#define QK 32u
#define BLOCK_BYTES 20u
#define QBYTES 16u
float dq_split(uint sb, uint qb, uint e) {
    uint q = ld_u8(qb + (e & 15u));
    q = e < 16u ? (q & 0xfu) : (q >> 4);
    return ld_f16(sb) * float(q) + ld_f16(sb + 2u);
}
#elif defined(DATA_A_Q5_0)
#define QK 32u
#define BLOCK_BYTES 22u
#define QBYTES 16u
float dq_split(uint sb, uint qb, uint e) {
    uint qh = ld_u16(sb + 2u) | (ld_u16(sb + 4u) << 16);
    uint q = ld_u8(qb + (e & 15u));
    q = (e < 16u ? (q & 0xfu) : (q >> 4)) | (((qh >> e) & 1u) << 4);
    return ld_f16(sb) * (float(q) - 16.0);
}
#elif defined(DATA_A_Q5_1)
#define QK 32u
#define BLOCK_BYTES 24u
#define QBYTES 16u
float dq_split(uint sb, uint qb, uint e) {
    uint qh = ld_u32(sb + 4u);
    uint q = ld_u8(qb + (e & 15u));
    q = (e < 16u ? (q & 0xfu) : (q >> 4)) | (((qh >> e) & 1u) << 4);
    return ld_f16(sb) * float(q) + ld_f16(sb + 2u);
}
#elif defined(DATA_A_Q8_0)
#define QK 32u
#define BLOCK_BYTES 34u
#define QBYTES 32u
float dq_split(uint sb, uint qb, uint e) {
    int q = int(ld_u8(qb + e) << 24) >> 24;
    return ld_f16(sb) * float(q);
}
#elif defined(DATA_A_Q2_K)
#define QK 256u
#define BLOCK_BYTES 84u
float dq_elem(uint bb, uint e) {
    uint sc = ld_u8(bb + e / 16u);
    uint n = e / 128u, j = (e % 128u) / 32u, l = e % 32u;
    uint q = (ld_u8(bb + 16u + 32u * n + l) >> (2u * j)) & 3u;
    return ld_f16(bb + 80u) * float(sc & 0xfu) * float(q) - ld_f16(bb + 82u) * float(sc >> 4);
}
#elif defined(DATA_A_Q3_K)
#define QK 256u
#define BLOCK_BYTES 110u
float dq_elem(uint bb, uint e) {
    uint n = e / 128u, j = (e % 128u) / 32u, l = e % 32u;
    uint q = (ld_u8(bb + 32u + 32u * n + l) >> (2u * j)) & 3u;
    uint h = (ld_u8(bb + l) >> (4u * n + j)) & 1u;
    return ld_f16(bb + 108u) * q3k_scale(bb + 96u, e / 16u) * (float(q) - (h != 0u ? 0.0 : 4.0));
}
#elif defined(DATA_A_Q4_K)
#define QK 256u
#define BLOCK_BYTES 144u
float dq_elem(uint bb, uint e) {
    uint g = e / 64u, l = e % 32u, s = e / 32u;
    uint q = ld_u8(bb + 16u + 32u * g + l);
    q = (s & 1u) == 0u ? (q & 0xfu) : (q >> 4);
    vec2 sm = scale_min_k4(bb + 4u, s);
    return ld_f16(bb) * sm.x * float(q) - ld_f16(bb + 2u) * sm.y;
}
#elif defined(DATA_A_Q5_K)
#define QK 256u
#define BLOCK_BYTES 176u
float dq_elem(uint bb, uint e) {
    uint g = e / 64u, l = e % 32u, s = e / 32u;
    uint q = ld_u8(bb + 48u + 32u * g + l);
    q = (s & 1u) == 0u ? (q & 0xfu) : (q >> 4);
    q |= ((ld_u8(bb + 16u + l) >> s) & 1u) << 4;
    vec2 sm = scale_min_k4(bb + 4u, s);
    return ld_f16(bb) * sm.x * float(q) - ld_f16(bb + 2u) * sm.y;
}
#elif defined(DATA_A_Q6_K)
// quants (ql[128], qh[64]) at qb, side bytes (scales[16] int8, d f16) at sb; in the GGUF
// block the quants come first (QOFF 0), the repacked layout has the 32-element types' form
#define QK 256u
#define BLOCK_BYTES 210u
#define QBYTES 192u
#define QOFF 0u
#define SOFF 192u
float dq_split(uint sb, uint qb, uint e) {
    uint n = e / 128u, k = (e % 128u) / 32u, l = e % 32u;
    uint ql = ld_u8(qb + 64u * n + l + 32u * (k & 1u));
    ql = (k >> 1) == 0u ? (ql & 0xfu) : (ql >> 4);
    uint qh = (ld_u8(qb + 128u + 32u * n + l) >> (2u * k)) & 3u;
    float sc = float(int(ld_u8(sb + e / 16u) << 24) >> 24);
    return ld_f16(sb + 16u) * sc * (float(ql | (qh << 4)) - 32.0);
}
#elif defined(DATA_A_MXFP4) || defined(DATA_A_IQ4_NL) || defined(DATA_A_IQ4_XS) || defined(DATA_A_IQ3_XXS) || \
    defined(DATA_A_IQ3_S) || defined(DATA_A_IQ2_XXS) || defined(DATA_A_IQ2_XS) || defined(DATA_A_IQ2_S) ||       \
    defined(DATA_A_IQ1_S) || defined(DATA_A_IQ1_M) || defined(DATA_A_TQ1_0) || defined(DATA_A_TQ2_0)
#include "dequant_iq.glsl"
#else
#error "dequant.glsl: no DATA_A_<type> defined"
#endif

// ---- block addressing, one interface for both layouts ----
#ifdef QBYTES
#define SIDE_BYTES (BLOCK_BYTES - QBYTES)
#ifndef QOFF // the 32-element types: side bytes, then the quants
#define QOFF SIDE_BYTES
#define SOFF 0u
#endif
float dq_elem(uint bb, uint e) { return dq_split(bb + SOFF, bb + QOFF, e); }
#ifdef DQ_WIDE
uint dq_qb(uint rb, uint nb, uint b) { return rb + b * QBYTES; }
uint dq_sb(uint rb, uint nb, uint b) { return rb + nb * QBYTES + b * SIDE_BYTES; }
#else
uint dq_qb(uint rb, uint nb, uint b) { return rb + b * BLOCK_BYTES + QOFF; }
uint dq_sb(uint rb, uint nb, uint b) { return rb + b * BLOCK_BYTES + SOFF; }
#endif
float dq_at(uint rb, uint nb, uint b, uint e) { return dq_split(dq_sb(rb, nb, b), dq_qb(rb, nb, b), e); }
#else
#if defined(DQ_WIDE) && !defined(DATA_A_Q4_K) && !defined(DATA_A_Q5_K)
#error "dequant.glsl: DQ_WIDE for a type without a repacked layout or 16-byte blocks"
#endif
float dq_at(uint rb, uint nb, uint b, uint e) { return dq_elem(rb + b * BLOCK_BYTES, e); }
#endif

#ifdef DQ_UNITS
// ---- mat-vec units: runs of 4 consecutive elements ----
#if defined(DQ_WIDE) && (defined(DATA_A_Q4_K) || defined(DATA_A_Q5_K))
// GGUF layout (144 / 176-byte blocks, 16-byte multiples): unit u = 16 bytes of quants (group
// u / 2, half u % 2), read as one uvec4, with the block's 16-byte header (d, dmin, 12 scale
// bytes) as another; Q5_K adds the uvec4 of high bits of the same 16 elements.
#define MV_QK 256u
#define MV_UNITS 8u
#define MV_RUNS 8
uint mv_pos(uint u, uint r) { return 64u * (u / 2u) + 16u * (u % 2u) + (r < 4u ? 4u * r : 32u + 4u * (r - 4u)); }
uint hdr_byte(uvec4 h, uint i) { return (h[1u + i / 4u] >> (8u * (i % 4u))) & 0xffu; }
vec2 scale_min_hdr(uvec4 h, uint j) { // scale_min_k4 on the header's scale bytes
    if (j < 4u) return vec2(hdr_byte(h, j) & 63u, hdr_byte(h, j + 4u) & 63u);
    const uint a = hdr_byte(h, j + 4u), lo = hdr_byte(h, j - 4u), hi = hdr_byte(h, j);
    return vec2((a & 0xfu) | ((lo >> 6) << 4), (a >> 4) | ((hi >> 6) << 4));
}
void dq_unit_at(uint rb, uint nb, uint b, uint u, out vec4 v[MV_RUNS]) {
    const uint bb = rb + b * BLOCK_BYTES, g = u / 2u, hf = u % 2u;
    const uvec4 hd = wq4[bb >> 4];
    const vec2 dm = unpackHalf2x16(hd.x);
    const vec2 sm0 = scale_min_hdr(hd, 2u * g), sm1 = scale_min_hdr(hd, 2u * g + 1u);
#if defined(DATA_A_Q4_K)
    const uvec4 q = wq4[(bb >> 4) + 1u + u];
#else
    const uvec4 q = wq4[(bb >> 4) + 3u + u];
    const uvec4 qh = wq4[(bb >> 4) + 1u + hf];
#endif
    [[unroll]] for (uint k = 0u; k < 4u; k++) {
#if defined(DATA_A_Q4_K)
        const vec4 h0 = vec4(0.0), h1 = vec4(0.0);
#else
        const vec4 h0 = 16.0 * bytebit(qh[k], 2u * g), h1 = 16.0 * bytebit(qh[k], 2u * g + 1u);
#endif
        v[k] = dm.x * sm0.x * (nib_lo(q[k]) + h0) - dm.y * sm0.y;
        v[4u + k] = dm.x * sm1.x * (nib_hi(q[k]) + h1) - dm.y * sm1.y;
    }
}
#elif defined(DQ_WIDE) && defined(DATA_A_Q6_K)
// repacked: unit u = 16 bytes of ql at 16u (half n = u / 4, ql run j = (u / 2) % 2, lanes
// h = u % 2) read as one uvec4 with the uvec4 of the same 16 lanes' qh (shared by the two
// units of a lane pair); low nibbles are elements 128n + 32j + 16h + i, high nibbles 64 on
#define MV_QK 256u
#define MV_UNITS 8u
#define MV_RUNS 8
uint mv_pos(uint u, uint r) { return 128u * (u / 4u) + 16u * (u % 4u) + (r < 4u ? 4u * r : 64u + 4u * (r - 4u)); }
void dq_unit_at(uint rb, uint nb, uint b, uint u, out vec4 v[MV_RUNS]) {
    const uint q4 = dq_qb(rb, nb, b) >> 4, sb = dq_sb(rb, nb, b), j = (u / 2u) % 2u;
    const uvec4 q = wq4[q4 + u], qh = wq4[q4 + 8u + 2u * (u / 4u) + u % 2u];
    const uint is = 8u * (u / 4u) + 2u * j + u % 2u; // scale of the low runs; +4 the high ones
    const float d = ld_f16(sb + 16u);
    const float s0 = d * float(int(ld_u8(sb + is) << 24) >> 24), s1 = d * float(int(ld_u8(sb + is + 4u) << 24) >> 24);
    [[unroll]] for (uint k = 0u; k < 4u; k++) {
        v[k] = s0 * (nib_lo(q[k]) + 16.0 * byte2(qh[k], 2u * j) - 32.0);
        v[4u + k] = s1 * (nib_hi(q[k]) + 16.0 * byte2(qh[k], 2u * j + 4u) - 32.0);
    }
}
#elif defined(DQ_WIDE) && defined(DATA_A_Q8_0)
// one uvec4 = 16 of the block's 32 quants; two units per block
#define MV_QK 32u
#define MV_UNITS 2u
#define MV_RUNS 4
uint mv_pos(uint u, uint r) { return 16u * u + 4u * r; }
void dq_unit_at(uint rb, uint nb, uint b, uint u, out vec4 v[MV_RUNS]) {
    const float d = ld_f16(dq_sb(rb, nb, b));
    const uvec4 q = wq4[(dq_qb(rb, nb, b) >> 4) + u];
    v[0] = d * bytes_s8(q.x); v[1] = d * bytes_s8(q.y); v[2] = d * bytes_s8(q.z); v[3] = d * bytes_s8(q.w);
}
#elif defined(DQ_WIDE)
// Q4_0/Q4_1/Q5_0/Q5_1: one uvec4 = the block's 32 nibbles; one unit per block
#define MV_QK 32u
#define MV_UNITS 1u
#define MV_RUNS 8
uint mv_pos(uint u, uint r) { return r < 4u ? 4u * r : 16u + 4u * (r - 4u); }
void dq_unit_at(uint rb, uint nb, uint b, uint u, out vec4 v[MV_RUNS]) {
    const uint sb = dq_sb(rb, nb, b);
    const uvec4 q = wq4[dq_qb(rb, nb, b) >> 4];
    const float d = ld_f16(sb);
#if defined(DATA_A_Q4_0)
    const float off = -8.0, m = 0.0;
#elif defined(DATA_A_Q4_1)
    const float off = 0.0, m = ld_f16(sb + 2u);
#elif defined(DATA_A_Q5_0)
    const float off = -16.0, m = 0.0;
    const uint qh = ld_u16(sb + 2u) | (ld_u16(sb + 4u) << 16);
#else
    const float off = 0.0, m = ld_f16(sb + 2u);
    const uint qh = ld_u32(sb + 4u);
#endif
    [[unroll]] for (uint k = 0u; k < 4u; k++) {
        vec4 lo = nib_lo(q[k]), hi = nib_hi(q[k]);
#if defined(DATA_A_Q5_0) || defined(DATA_A_Q5_1)
        lo += 16.0 * bits4(qh, 4u * k);
        hi += 16.0 * bits4(qh, 16u + 4u * k);
#endif
        v[k] = d * (lo + off) + m;
        v[4u + k] = d * (hi + off) + m;
    }
}
#elif defined(IS_FLOAT_TYPE)
#define MV_QK 8u
#define MV_UNITS 1u
#define MV_RUNS 2
uint mv_pos(uint u, uint r) { return 4u * r; }
#if defined(DATA_A_F32)
void dq_unit(uint bb, uint u, out vec4 v[MV_RUNS]) {
    v[0] = vec4(uintBitsToFloat(wq[(bb >> 2)]), uintBitsToFloat(wq[(bb >> 2) + 1u]), uintBitsToFloat(wq[(bb >> 2) + 2u]), uintBitsToFloat(wq[(bb >> 2) + 3u]));
    v[1] = vec4(uintBitsToFloat(wq[(bb >> 2) + 4u]), uintBitsToFloat(wq[(bb >> 2) + 5u]), uintBitsToFloat(wq[(bb >> 2) + 6u]), uintBitsToFloat(wq[(bb >> 2) + 7u]));
}
#elif defined(DATA_A_F16)
void dq_unit(uint bb, uint u, out vec4 v[MV_RUNS]) {
    v[0] = vec4(unpackHalf2x16(ld_u32(bb)), unpackHalf2x16(ld_u32(bb + 4u)));
    v[1] = vec4(unpackHalf2x16(ld_u32(bb + 8u)), unpackHalf2x16(ld_u32(bb + 12u)));
}
#else
vec2 bf2(uint w) { return vec2(uintBitsToFloat(w << 16), uintBitsToFloat(w & 0xffff0000u)); }
void dq_unit(uint bb, uint u, out vec4 v[MV_RUNS]) {
    v[0] = vec4(bf2(ld_u32(bb)), bf2(ld_u32(bb + 4u)));
    v[1] = vec4(bf2(ld_u32(bb + 8u)), bf2(ld_u32(bb + 12u)));
}
#endif
#elif defined(DATA_A_Q4_0) || defined(DATA_A_Q4_1) || defined(DATA_A_Q5_0) || defined(DATA_A_Q5_1)
#define MV_QK 32u
#define MV_UNITS 4u
#define MV_RUNS 2
uint mv_pos(uint u, uint r) { return 4u * u + 16u * r; }
void dq_unit(uint bb, uint u, out vec4 v[MV_RUNS]) {
    float d = ld_f16(bb);
#if defined(DATA_A_Q4_0)
    uint q = ld_u32(bb + 2u + 4u * u);
    v[0] = d * (nib_lo(q) - 8.0); v[1] = d * (nib_hi(q) - 8.0);
#elif defined(DATA_A_Q4_1)
    float m = ld_f16(bb + 2u);
    uint q = ld_u32(bb + 4u + 4u * u);
    v[0] = d * nib_lo(q) + m; v[1] = d * nib_hi(q) + m;
#elif defined(DATA_A_Q5_0)
    uint qh = ld_u16(bb + 2u) | (ld_u16(bb + 4u) << 16);
    uint q = ld_u32(bb + 6u + 4u * u);
    v[0] = d * (nib_lo(q) + 16.0 * bits4(qh, 4u * u) - 16.0);
    v[1] = d * (nib_hi(q) + 16.0 * bits4(qh, 16u + 4u * u) - 16.0);
#else
    float m = ld_f16(bb + 2u);
    uint qh = ld_u32(bb + 4u);
    uint q = ld_u32(bb + 8u + 4u * u);
    v[0] = d * (nib_lo(q) + 16.0 * bits4(qh, 4u * u)) + m;
    v[1] = d * (nib_hi(q) + 16.0 * bits4(qh, 16u + 4u * u)) + m;
#endif
}
#elif defined(DQ_IQ_UNITS)
// dequant_iq.glsl defines the units of its types
#elif defined(DATA_A_Q8_0)
#define MV_QK 32u
#define MV_UNITS 4u
#define MV_RUNS 2
uint mv_pos(uint u, uint r) { return 8u * u + 4u * r; }
void dq_unit(uint bb, uint u, out vec4 v[MV_RUNS]) {
    float d = ld_f16(bb);
    v[0] = d * bytes_s8(ld_u32(bb + 2u + 8u * u));
    v[1] = d * bytes_s8(ld_u32(bb + 6u + 8u * u));
}
#elif defined(DATA_A_Q4_K) || defined(DATA_A_Q5_K)
#define MV_QK 256u
#define MV_UNITS 32u
#define MV_RUNS 2
uint mv_pos(uint u, uint r) { return 64u * (u / 8u) + 32u * r + 4u * (u % 8u); }
void dq_unit(uint bb, uint u, out vec4 v[MV_RUNS]) {
    uint g = u / 8u, l0 = 4u * (u % 8u);
    float d = ld_f16(bb), dmin = ld_f16(bb + 2u);
    vec2 sm0 = scale_min_k4(bb + 4u, 2u * g), sm1 = scale_min_k4(bb + 4u, 2u * g + 1u);
#if defined(DATA_A_Q4_K)
    uint q = ld_u32(bb + 16u + 32u * g + l0);
    vec4 h0 = vec4(0.0), h1 = vec4(0.0);
#else
    uint q = ld_u32(bb + 48u + 32u * g + l0);
    uint qh = ld_u32(bb + 16u + l0);
    vec4 h0 = 16.0 * bytebit(qh, 2u * g), h1 = 16.0 * bytebit(qh, 2u * g + 1u);
#endif
    v[0] = d * sm0.x * (nib_lo(q) + h0) - dmin * sm0.y;
    v[1] = d * sm1.x * (nib_hi(q) + h1) - dmin * sm1.y;
}
#elif defined(DATA_A_Q2_K) || defined(DATA_A_Q3_K) || defined(DATA_A_Q6_K)
#define MV_QK 256u
#define MV_UNITS 16u
#define MV_RUNS 4
uint mv_pos(uint u, uint r) { return 128u * (u / 8u) + 32u * r + 4u * (u % 8u); }
void dq_unit(uint bb, uint u, out vec4 v[MV_RUNS]) {
    uint n = u / 8u, l0 = 4u * (u % 8u);
    uint is0 = 8u * n + l0 / 16u; // scale index of run r is is0 + 2r
#if defined(DATA_A_Q2_K)
    float d = ld_f16(bb + 80u), dmin = ld_f16(bb + 82u);
    uint q = ld_u32(bb + 16u + 32u * n + l0);
    for (uint r = 0u; r < 4u; r++) {
        uint sc = ld_u8(bb + is0 + 2u * r);
        v[r] = d * float(sc & 0xfu) * byte2(q, 2u * r) - dmin * float(sc >> 4);
    }
#elif defined(DATA_A_Q3_K)
    float d = ld_f16(bb + 108u);
    uint q = ld_u32(bb + 32u + 32u * n + l0);
    uint hm = ld_u32(bb + l0);
    for (uint r = 0u; r < 4u; r++)
        v[r] = d * q3k_scale(bb + 96u, is0 + 2u * r) * (byte2(q, 2u * r) - 4.0 + 4.0 * bytebit(hm, 4u * n + r));
#else
    float d = ld_f16(bb + 208u);
    uint ql0 = ld_u32(bb + 64u * n + l0), ql1 = ld_u32(bb + 64u * n + 32u + l0);
    uint qh = ld_u32(bb + 128u + 32u * n + l0);
    vec4 qv[4];
    qv[0] = nib_lo(ql0); qv[1] = nib_lo(ql1); qv[2] = nib_hi(ql0); qv[3] = nib_hi(ql1);
    for (uint r = 0u; r < 4u; r++) {
        float sc = float(int(ld_u8(bb + 192u + is0 + 2u * r) << 24) >> 24);
        v[r] = d * sc * (qv[r] + 16.0 * byte2(qh, 2u * r) - 32.0);
    }
#endif
}
#endif
#ifndef DQ_WIDE
void dq_unit_at(uint rb, uint nb, uint b, uint u, out vec4 v[MV_RUNS]) { dq_unit(rb + b * ((MV_QK / QK) * BLOCK_BYTES), u, v); }
#endif
#endif
