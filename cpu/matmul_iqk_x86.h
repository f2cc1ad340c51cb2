/* matmul_iqk_x86: the x86 SIMD dot kernels of the 256-element i-quants and the ternary types
 * against Q8_K activations (IQ4_XS, IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M,
 * TQ1_0, TQ2_0), written once and included by matmul_iq_avx2.c and matmul_iq_avx512.c. The
 * includer defines IQK_ATTR (function attributes), IQK_DPWSSD(acc, a, b) (acc + the int32
 * pair sums of int16 a * b: madd + add on AVX2, one vpdpwssd with AVX512-VNNI), IQK_SUFFIX,
 * IQD_NT (tokens of the 4-row prompt kernel) and, for AVX-512, IQD_ZMM (the 16-row one).
 *
 * Every i-quant block decodes, 32 elements at a time, to w = dw * sc * v with v a signed byte
 * (grid value with its sign, IQ4 level; IQ1_S/IQ1_M: 8 * grid + the +-1 delta, so that the
 * delta needs no activation sums), sc a small integer scale per 16 or 32 elements and dw one
 * float per block. A group is applied to every token as maddubs(|v|, sign(y, v)) and one
 * madd with the scales (IQ2_XS's mat-vec instead looks up v + 64 for each 16-bit word in one
 * table and takes the bias back out with the activation sums, see iqk_iq2xs_body). The
 * mat-vec (dot) decodes a block once for up to MM_MAX_TOK tokens;
 * the prompt kernels (gemm, more than 2 * MM_MAX_TOK tokens) decode rows once per slab of
 * blocks and chunk of tokens into a plain int8 form and then only multiply and add.
 * The grids and value tables are quant_iq.h's. */
#include <immintrin.h>
#include "cpu_kernels.h"
#include "fp16.h"
#include "quant_iq.h"

#define IQK_INLINE static inline __attribute__((always_inline)) IQK_ATTR
#define IQK_CAT2(a, b) a##b
#define IQK_CAT(a, b) IQK_CAT2(a, b)
#define IQK_ACT(x, xs, t) ((const void *)((const uint8_t *)(x) + (size_t)(t) * (xs)))

/* A decoded 32-element group: u = |v| (unsigned bytes), sv has v's signs (the sign_epi8
 * operand that moves them onto the activations; zero where v is zero), sc the int16 scale
 * of elements 0..15 (low 128-bit lane) and 16..31 (high lane). */
typedef struct { __m256i u, sv, sc; } iqk_group;

IQK_INLINE float iqk_hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

IQK_INLINE uint16_t iqk_u16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
IQK_INLINE uint32_t iqk_u32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

/* Bytes with bit 7 clear get bit 7 = the parity of bits 0..6 (ggml's ksigns: an even count
 * of negative values per 8). Bit 0 of each byte of p ends up as the parity of its byte: the
 * shifts only bring bits of the next byte into bit positions >= 1 at each step. */
IQK_INLINE uint32_t iqk_even_signs(uint32_t s) {
    uint32_t p = s ^ (s >> 4);
    p ^= p >> 2;
    p ^= p >> 1;
    return s | ((p & 0x01010101u) << 7);
}

/* The four 7-bit sign indices in bits 0..27 of a, as four sign bytes. */
IQK_INLINE uint32_t iqk_ksigns4(uint32_t a) {
    return iqk_even_signs((a & 0x7Fu) | ((a << 1) & 0x7F00u) | ((a << 2) & 0x7F0000u) | ((a << 3) & 0x7F000000u));
}

/* 32 sign bits (bit k: element k negative) as bytes -1 / +1. */
IQK_INLINE __m256i iqk_sign_bytes(uint32_t s) {
    const __m256i pick = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    const __m256i m = _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int)s), pick), bit), bit);
    return _mm256_or_si256(m, _mm256_set1_epi8(1));
}

IQK_INLINE __m256i iqk_grid8x4(const uint64_t *grid, unsigned a, unsigned b, unsigned c, unsigned d) {
    return _mm256_set_epi64x((long long)grid[d], (long long)grid[c], (long long)grid[b], (long long)grid[a]);
}

IQK_INLINE __m256i iqk_grid4x8(const uint32_t *grid, const unsigned i[8]) {
    return _mm256_set_epi32((int)grid[i[7]], (int)grid[i[6]], (int)grid[i[5]], (int)grid[i[4]], (int)grid[i[3]], (int)grid[i[2]],
                            (int)grid[i[1]], (int)grid[i[0]]);
}

IQK_INLINE __m256i iqk_pair_scales(int lo, int hi) {
    return _mm256_set_m128i(_mm_set1_epi16((short)hi), _mm_set1_epi16((short)lo));
}

/* IQ1_S/IQ1_M: the int8 grid values g (-1, 0, 1) of four 8-element runs as 8 * g + delta,
 * delta (+1 or -1) per run from the byte vector dl. */
IQK_INLINE iqk_group iqk_iq1_group(__m256i g, __m256i dl, __m256i sc) {
    const __m256i v = _mm256_add_epi8(_mm256_sign_epi8(_mm256_set1_epi8(8), g), dl);
    return (iqk_group){_mm256_abs_epi8(v), v, sc};
}

IQK_INLINE size_t iqk_block_bytes(qtype T) {
    switch (T) {
    case QT_IQ4_XS: return sizeof(block_iq4_xs);
    case QT_IQ3_XXS: return sizeof(block_iq3_xxs);
    case QT_IQ3_S: return sizeof(block_iq3_s);
    case QT_IQ2_XXS: return sizeof(block_iq2_xxs);
    case QT_IQ2_XS: return sizeof(block_iq2_xs);
    case QT_IQ2_S: return sizeof(block_iq2_s);
    case QT_IQ1_S: return sizeof(block_iq1_s);
    default: return sizeof(block_iq1_m);
    }
}

/* The block's float factor dw (w = dw * sc * v). */
IQK_INLINE float iqk_block_scale(qtype T, const uint8_t *blk) {
    switch (T) {
    case QT_IQ1_M: return _cvtsh_ss(iq1m_scale_bits(((const block_iq1_m *)(const void *)blk)->scales)) * 0.125f;
    case QT_IQ4_XS: case QT_IQ3_S: return _cvtsh_ss(iqk_u16(blk));
    case QT_IQ3_XXS: return _cvtsh_ss(iqk_u16(blk)) * 0.25f;
    default: return _cvtsh_ss(iqk_u16(blk)) * 0.125f; /* IQ2_*, IQ1_S */
    }
}

/* Group ib (elements 32 * ib ..) of block blk of type T. */
IQK_INLINE iqk_group iqk_decode(qtype T, const uint8_t *blk, int ib) {
    switch (T) {
    case QT_IQ4_XS: {
        const block_iq4_xs *b = (const block_iq4_xs *)(const void *)blk;
        const __m128i t = _mm_loadu_si128((const __m128i *)(const void *)kvalues_iq4nl);
        const __m128i q = _mm_loadu_si128((const __m128i *)(const void *)(b->qs + 16 * ib));
        const __m256i nib = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0x0F));
        const __m256i v = _mm256_shuffle_epi8(_mm256_set_m128i(t, t), nib);
        const int ls = (((b->scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) | (((b->scales_h >> 2 * ib) & 3) << 4)) - 32;
        return (iqk_group){_mm256_abs_epi8(v), v, _mm256_set1_epi16((short)ls)};
    }
    case QT_IQ2_XXS: {
        const uint8_t *q = blk + 2 + 8 * ib;
        const uint32_t a1 = iqk_u32(q + 4);
        return (iqk_group){iqk_grid8x4(iq2xxs_grid, q[0], q[1], q[2], q[3]), iqk_sign_bytes(iqk_ksigns4(a1)),
                           _mm256_set1_epi16((short)(2 * (a1 >> 28) + 1))};
    }
    case QT_IQ2_XS: {
        const block_iq2_xs *b = (const block_iq2_xs *)(const void *)blk;
        const uint8_t *q = blk + 2 + 8 * ib;
        const unsigned q0 = iqk_u16(q), q1 = iqk_u16(q + 2), q2 = iqk_u16(q + 4), q3 = iqk_u16(q + 6);
        const uint32_t s = iqk_even_signs((q0 >> 9) | ((q1 >> 9) << 8) | ((q2 >> 9) << 16) | ((q3 >> 9) << 24));
        const int sc = b->scales[ib];
        return (iqk_group){iqk_grid8x4(iq2xs_grid, q0 & 511, q1 & 511, q2 & 511, q3 & 511), iqk_sign_bytes(s),
                           iqk_pair_scales(2 * (sc & 0xf) + 1, 2 * (sc >> 4) + 1)};
    }
    case QT_IQ2_S: {
        const block_iq2_s *b = (const block_iq2_s *)(const void *)blk;
        const uint8_t *q = b->qs + 4 * ib;
        const unsigned h = b->qh[ib];
        const int sc = b->scales[ib];
        return (iqk_group){iqk_grid8x4(iq2s_grid, q[0] | ((h << 8) & 0x300), q[1] | ((h << 6) & 0x300), q[2] | ((h << 4) & 0x300),
                                       q[3] | ((h << 2) & 0x300)),
                           iqk_sign_bytes(iqk_u32(b->qs + QK_K / 8 + 4 * ib)), iqk_pair_scales(2 * (sc & 0xf) + 1, 2 * (sc >> 4) + 1)};
    }
    case QT_IQ3_XXS: {
        const block_iq3_xxs *b = (const block_iq3_xxs *)(const void *)blk;
        const uint8_t *q = b->qs + 8 * ib;
        const uint32_t a = iqk_u32(b->qs + QK_K / 4 + 4 * ib);
        const unsigned idx[8] = {q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7]};
        return (iqk_group){iqk_grid4x8(iq3xxs_grid, idx), iqk_sign_bytes(iqk_ksigns4(a)), _mm256_set1_epi16((short)(2 * (a >> 28) + 1))};
    }
    case QT_IQ3_S: {
        const block_iq3_s *b = (const block_iq3_s *)(const void *)blk;
        const uint8_t *q = b->qs + 8 * ib;
        const unsigned h = b->qh[ib];
        unsigned idx[8];
        for (int k = 0; k < 8; k++) idx[k] = q[k] | (((h >> k) & 1u) << 8);
        const int sc = (b->scales[ib / 2] >> 4 * (ib % 2)) & 0xf;
        return (iqk_group){iqk_grid4x8(iq3s_grid, idx), iqk_sign_bytes(iqk_u32(b->signs + 4 * ib)), _mm256_set1_epi16((short)(2 * sc + 1))};
    }
    case QT_IQ1_S: {
        const block_iq1_s *b = (const block_iq1_s *)(const void *)blk;
        const uint8_t *q = b->qs + 4 * ib;
        const unsigned h = b->qh[ib];
        const __m256i g = iqk_grid8x4(iq1s_grid, q[0] | ((h << 8) & 0x700), q[1] | ((h << 5) & 0x700), q[2] | ((h << 2) & 0x700),
                                      q[3] | ((h >> 1) & 0x700));
        return iqk_iq1_group(g, _mm256_set1_epi8((char)(1 - (int)((h >> 14) & 2))), _mm256_set1_epi16((short)(2 * ((h >> 12) & 7) + 1)));
    }
    default: { /* QT_IQ1_M */
        const block_iq1_m *b = (const block_iq1_m *)(const void *)blk;
        const uint8_t *q = b->qs + 4 * ib, *qh = b->qh + 2 * ib;
        const __m256i g = iqk_grid8x4(iq1s_grid, q[0] | ((qh[0] << 8) & 0x700u), q[1] | ((qh[0] << 4) & 0x700u),
                                      q[2] | ((qh[1] << 8) & 0x700u), q[3] | ((qh[1] << 4) & 0x700u));
        /* the delta signs: bits 3 and 7 of qh[0], qh[1], one per 8-element run (branch-free) */
        const __m256i bit = _mm256_setr_epi16(0x08, 0x08, 0x08, 0x08, 0x80, 0x80, 0x80, 0x80, 0x800, 0x800, 0x800, 0x800,
                                              (short)0x8000, (short)0x8000, (short)0x8000, (short)0x8000);
        const __m256i hb = _mm256_and_si256(_mm256_set1_epi16((short)iqk_u16(qh)), bit);
        const __m256i dl = _mm256_or_si256(_mm256_cmpeq_epi16(hb, bit), _mm256_set1_epi8(1));
        const unsigned sw = iqk_u16(b->scales + 2 * (ib / 2)) >> (6 * (ib % 2));
        return iqk_iq1_group(g, dl, iqk_pair_scales(2 * (sw & 7) + 1, 2 * ((sw >> 3) & 7) + 1));
    }
    }
}

IQK_INLINE __m256i iqk_load(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* The weight stream of a mat-vec is read a few bytes at a time with dependent grid loads
 * after them: a block a few blocks ahead is prefetched (also across the row's end: the next
 * row follows in memory). */
#define IQK_PREFETCH_BLOCKS 8
IQK_INLINE void iqk_prefetch(const uint8_t *p, size_t bytes) {
    for (size_t o = 0; o < bytes; o += 64) _mm_prefetch((const char *)(p + o), _MM_HINT_T0);
    _mm_prefetch((const char *)(p + bytes - 1), _MM_HINT_T0);
}

/* One i-quant row against NT tokens. */
IQK_INLINE void iqk_body(const qtype T, int64_t n, const void *w, const void *x, size_t xs, const int NT, float *res) {
    const size_t bsize = iqk_block_bytes(T);
    __m256 acc[MM_MAX_TOK];
    for (int t = 0; t < NT; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *blk = (const uint8_t *)w + (size_t)i * bsize;
        iqk_prefetch(blk + IQK_PREFETCH_BLOCKS * bsize, bsize);
        __m256i sumi[MM_MAX_TOK];
        for (int t = 0; t < NT; t++) sumi[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int ib = 0; ib < 8; ib++) {
            const iqk_group g = iqk_decode(T, blk, ib);
            for (int t = 0; t < NT; t++) {
                const block_q8_K *y = (const block_q8_K *)IQK_ACT(x, xs, t) + i;
                const __m256i ys = _mm256_sign_epi8(iqk_load(y->qs + 32 * ib), g.sv);
                sumi[t] = IQK_DPWSSD(sumi[t], _mm256_maddubs_epi16(g.u, ys), g.sc);
            }
        }
        const float dw = iqk_block_scale(T, blk);
        for (int t = 0; t < NT; t++) {
            const block_q8_K *y = (const block_q8_K *)IQK_ACT(x, xs, t) + i;
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dw * y->d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++) res[t] = iqk_hsum(acc[t]);
}

/* IQ2_XS mat-vec: each 16-bit qs word (grid index, sign index) looks up its 8 values
 * v + 64 at once (iq2xs_word_values: no sign decoding, no |v| / sign split), so a 32-element
 * group is four loads, one maddubs and one vpdpwssd per token; u = v + 64 <= 107 keeps
 * maddubs' pair sums below 2^15. The bias comes back out once per block as
 * -64 * sum(sc16 * bsums). The 16 scales sit as int16 with runs 0, 2, .. 14 in the low lane
 * and 1, 3, .. 15 in the high one, so group g's pair is one in-lane shuffle. */
IQK_INLINE void iqk_iq2xs_body(int64_t n, const void *w, const void *x, size_t xs, const int NT, float *res) {
    const uint64_t *tab = iq2xs_word_values();
    const __m256i evens_odds = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15,
                                                0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
    __m256 acc[MM_MAX_TOK];
    for (int t = 0; t < NT; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const block_iq2_xs *b = (const block_iq2_xs *)w + i;
        iqk_prefetch((const uint8_t *)(b + IQK_PREFETCH_BLOCKS), sizeof *b);
        const __m128i sb = _mm_loadl_epi64((const __m128i *)(const void *)b->scales);
        const __m128i m4 = _mm_set1_epi8(0x0f);
        const __m256i sc = _mm256_add_epi16(_mm256_slli_epi16(_mm256_set_m128i(_mm_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sb, 4), m4)),
                                                                                _mm_cvtepu8_epi16(_mm_and_si128(sb, m4))), 1),
                                            _mm256_set1_epi16(1));
        const __m256i nsc = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(sc, 6));
        __m256i sumi[MM_MAX_TOK];
        for (int t = 0; t < NT; t++) {
            const block_q8_K *y = (const block_q8_K *)IQK_ACT(x, xs, t) + i;
            const __m256i bs = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(iqk_load(y->bsums), evens_odds), 0xD8);
            sumi[t] = _mm256_madd_epi16(nsc, bs);
        }
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++) {
            const uint16_t *q = b->qs + 4 * g;
            const __m256i u = _mm256_set_epi64x((long long)tab[q[3]], (long long)tab[q[2]], (long long)tab[q[1]], (long long)tab[q[0]]);
            const __m256i scg = _mm256_shuffle_epi8(sc, _mm256_set1_epi16((short)(0x0100 + 0x0202 * g)));
            for (int t = 0; t < NT; t++) {
                const block_q8_K *y = (const block_q8_K *)IQK_ACT(x, xs, t) + i;
                sumi[t] = IQK_DPWSSD(sumi[t], _mm256_maddubs_epi16(u, iqk_load(y->qs + 32 * g)), scg);
            }
        }
        const float dw = _cvtsh_ss(b->d) * 0.125f;
        for (int t = 0; t < NT; t++) {
            const block_q8_K *y = (const block_q8_K *)IQK_ACT(x, xs, t) + i;
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dw * y->d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++) res[t] = iqk_hsum(acc[t]);
}

#ifdef IQD_ZMM
/* IQ2_XS mat-vec, AVX-512: 64 elements per zmm, the 8 words' values by one vpgatherdq from
 * the table, the four 16-element scales of the 64 by one vpermw from the block's 16 in run
 * order (so the bias needs no reordering of bsums). */
/* vpermw indices that put scale word 4 j + k of the 16 into every word of 128-bit lane k. */
IQK_INLINE __m512i iqk_iq2xs_lane_pick(int j) {
    const long long w = 0x0001000100010001ll, base = 4 * j * w;
    return _mm512_set_epi64(base + 3 * w, base + 3 * w, base + 2 * w, base + 2 * w, base + w, base + w, base, base);
}
IQK_INLINE void iqk_iq2xs_body_zmm(int64_t n, const void *w, const void *x, size_t xs, const int NT, float *res) {
    const long long *tab = (const long long *)iq2xs_word_values();
    __m512 acc[MM_MAX_TOK];
    for (int t = 0; t < NT; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const block_iq2_xs *b = (const block_iq2_xs *)w + i;
        iqk_prefetch((const uint8_t *)(b + IQK_PREFETCH_BLOCKS), sizeof *b);
        const __m128i sb = _mm_loadl_epi64((const __m128i *)(const void *)b->scales);
        const __m128i m4 = _mm_set1_epi8(0x0f);
        const __m128i runs8 = _mm_unpacklo_epi8(_mm_and_si128(sb, m4), _mm_and_si128(_mm_srli_epi16(sb, 4), m4));
        const __m256i sc = _mm256_add_epi16(_mm256_slli_epi16(_mm256_cvtepu8_epi16(runs8), 1), _mm256_set1_epi16(1));
        const __m256i nsc = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(sc, 6));
        const __m512i sc512 = _mm512_castsi256_si512(sc);
        __m512i sumi[MM_MAX_TOK];
        for (int t = 0; t < NT; t++) {
            const block_q8_K *y = (const block_q8_K *)IQK_ACT(x, xs, t) + i;
            sumi[t] = _mm512_zextsi256_si512(_mm256_madd_epi16(nsc, iqk_load(y->bsums)));
        }
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            const __m256i idx = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(b->qs + 8 * j)));
            const __m512i u = _mm512_i32gather_epi64(idx, tab, 8);
            const __m512i scj = _mm512_permutexvar_epi16(iqk_iq2xs_lane_pick(j), sc512);
            for (int t = 0; t < NT; t++) {
                const block_q8_K *y = (const block_q8_K *)IQK_ACT(x, xs, t) + i;
                sumi[t] = _mm512_dpwssd_epi32(sumi[t], _mm512_maddubs_epi16(u, _mm512_loadu_si512((const void *)(y->qs + 64 * j))), scj);
            }
        }
        const float dw = _cvtsh_ss(b->d) * 0.125f;
        for (int t = 0; t < NT; t++) {
            const block_q8_K *y = (const block_q8_K *)IQK_ACT(x, xs, t) + i;
            acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(dw * y->d), _mm512_cvtepi32_ps(sumi[t]), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++) res[t] = _mm512_reduce_add_ps(acc[t]);
}
#endif

/* ---- ternary types: u = w + 1 in {0, 1, 2}; dot = d * dy * (u . y - sum(y)) ---- */

/* TQ1_0 packs 5 (or 4) base-3 digits per byte as ceil(x * 256 / 3^5): digit n of byte b is
 * the top of ((b * 3^n) mod 256) * 3, i.e. 0, 1 or 2 as that byte q is below 86, below 171
 * or not (q * 3 >= 256 <=> q >= 86; q * 3 >= 512 <=> q >= 171). Byte products mod 256 by 3
 * and 9 are adds and a masked shift (AVX2 has no byte multiply). */
IQK_INLINE __m256i iqk_mul3_u8(__m256i q) { return _mm256_add_epi8(q, _mm256_add_epi8(q, q)); }
IQK_INLINE __m256i iqk_mul9_u8(__m256i q) {
    return _mm256_add_epi8(_mm256_and_si256(_mm256_slli_epi16(q, 3), _mm256_set1_epi8((char)0xF8)), q);
}
IQK_INLINE __m256i iqk_tq1_top(__m256i q) {
    const __m256i s = _mm256_xor_si256(q, _mm256_set1_epi8((char)0x80));
    const __m256i ge86 = _mm256_cmpgt_epi8(s, _mm256_set1_epi8((char)(85 ^ 0x80)));
    const __m256i ge171 = _mm256_cmpgt_epi8(s, _mm256_set1_epi8((char)(170 ^ 0x80)));
    return _mm256_sub_epi8(_mm256_setzero_si256(), _mm256_add_epi8(ge86, ge171));
}

/* Group k (elements 32 * k ..) of a TQ1_0 block as u in {0, 1, 2}: qs[0..32) hold 5 digits
 * for elements 0..159, qs[32..48) 5 for 160..239 (16 per digit), qh[0..4) 4 for 240..255
 * (element 240 + 4 n + j: digit n of qh[j]). */
IQK_INLINE __m256i iqk_tq1_group(const block_tq1_0 *b, int k) {
    if (k < 5) {
        const __m256i q = iqk_load(b->qs);
        const __m256i p = k == 0 ? q : k == 1 ? iqk_mul3_u8(q) : k == 2 ? iqk_mul9_u8(q) : k == 3 ? iqk_mul9_u8(iqk_mul3_u8(q))
                                                                                                  : iqk_mul9_u8(iqk_mul9_u8(q));
        return iqk_tq1_top(p);
    }
    const __m128i q16 = _mm_loadu_si128((const __m128i *)(const void *)(b->qs + 32));
    const __m256i q = _mm256_set_m128i(q16, q16);
    if (k == 5) return iqk_tq1_top(_mm256_blend_epi32(q, iqk_mul3_u8(q), 0xF0));                  /* x1 | x3 */
    const __m256i q9 = iqk_mul9_u8(q);
    if (k == 6) return iqk_tq1_top(_mm256_blend_epi32(q9, iqk_mul3_u8(q9), 0xF0));                /* x9 | x27 */
    /* x81 | qh: dwords of qh bytes times 1, 3, 9, 27 */
    const __m256i h = _mm256_set1_epi32((int)iqk_u32(b->qh)), h3 = iqk_mul3_u8(h), h9 = iqk_mul9_u8(h);
    const __m256i hh = _mm256_blend_epi32(_mm256_blend_epi32(h, h3, 0x20), _mm256_blend_epi32(h9, iqk_mul3_u8(h9), 0x80), 0xC0);
    return iqk_tq1_top(_mm256_blend_epi32(iqk_mul9_u8(q9), hh, 0xF0));
}

IQK_INLINE __m256i iqk_tq2_group(const block_tq2_0 *b, int k) {
    const __m256i q = iqk_load(b->qs + 32 * (k / 4));
    return _mm256_and_si256(_mm256_srli_epi16(q, 2 * (k % 4)), _mm256_set1_epi8(3));
}

IQK_INLINE void iqk_tq_body(const bool is_tq1, int64_t n, const void *w, const void *x, size_t xs, const int NT, float *res) {
    const size_t bsize = is_tq1 ? sizeof(block_tq1_0) : sizeof(block_tq2_0);
    const __m256i one16 = _mm256_set1_epi16(1);
    __m256 acc[MM_MAX_TOK];
    for (int t = 0; t < NT; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *blk = (const uint8_t *)w + (size_t)i * bsize;
        iqk_prefetch(blk + IQK_PREFETCH_BLOCKS * bsize, bsize);
        __m256i sumi[MM_MAX_TOK];
        for (int t = 0; t < NT; t++) {
            const block_q8_K *y = (const block_q8_K *)IQK_ACT(x, xs, t) + i;
            sumi[t] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_madd_epi16(iqk_load(y->bsums), one16));
        }
        /* u . y pair sums stay within int16 over the block (8 groups x 2 x 2 x 127 = 4064):
         * int16 adds, one widening madd per block */
        __m256i s16[MM_MAX_TOK];
        for (int t = 0; t < NT; t++) s16[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            const __m256i u = is_tq1 ? iqk_tq1_group((const block_tq1_0 *)(const void *)blk, k)
                                     : iqk_tq2_group((const block_tq2_0 *)(const void *)blk, k);
            for (int t = 0; t < NT; t++) {
                const block_q8_K *y = (const block_q8_K *)IQK_ACT(x, xs, t) + i;
                s16[t] = _mm256_add_epi16(s16[t], _mm256_maddubs_epi16(u, iqk_load(y->qs + 32 * k)));
            }
        }
        for (int t = 0; t < NT; t++) sumi[t] = IQK_DPWSSD(sumi[t], s16[t], one16);
        const float dw = _cvtsh_ss(is_tq1 ? ((const block_tq1_0 *)(const void *)blk)->d : ((const block_tq2_0 *)(const void *)blk)->d);
        for (int t = 0; t < NT; t++) {
            const block_q8_K *y = (const block_q8_K *)IQK_ACT(x, xs, t) + i;
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dw * y->d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++) res[t] = iqk_hsum(acc[t]);
}

#define IQK_KERNEL(tag, call)                                                                                            \
    IQK_ATTR static void IQK_CAT(dot_##tag, IQK_SUFFIX)(int64_t n, const void *w, const void *x, size_t xs, int nt,      \
                                                       float *res) {                                                    \
        switch (nt) {                                                                                                    \
        case 4: call(n, w, x, xs, 4, res); break;                                                                        \
        case 3: call(n, w, x, xs, 3, res); break;                                                                        \
        case 2: call(n, w, x, xs, 2, res); break;                                                                        \
        default: call(n, w, x, xs, 1, res); break;                                                                       \
        }                                                                                                                \
    }
#define IQK_TYPE_BODY(tag, T)                                                                                            \
    IQK_INLINE void iqk_##tag##_body(int64_t n, const void *w, const void *x, size_t xs, const int NT, float *res) {     \
        iqk_body(T, n, w, x, xs, NT, res);                                                                               \
    }                                                                                                                    \
    IQK_KERNEL(tag, iqk_##tag##_body)
IQK_TYPE_BODY(iq4_xs, QT_IQ4_XS)
IQK_TYPE_BODY(iq3_xxs, QT_IQ3_XXS)
IQK_TYPE_BODY(iq3_s, QT_IQ3_S)
IQK_TYPE_BODY(iq2_xxs, QT_IQ2_XXS)
#ifdef IQD_ZMM
IQK_KERNEL(iq2_xs, iqk_iq2xs_body_zmm)
#else
IQK_KERNEL(iq2_xs, iqk_iq2xs_body)
#endif
IQK_TYPE_BODY(iq2_s, QT_IQ2_S)
IQK_TYPE_BODY(iq1_s, QT_IQ1_S)
IQK_TYPE_BODY(iq1_m, QT_IQ1_M)
IQK_INLINE void iqk_tq1_0_body(int64_t n, const void *w, const void *x, size_t xs, const int NT, float *res) { iqk_tq_body(true, n, w, x, xs, NT, res); }
IQK_INLINE void iqk_tq2_0_body(int64_t n, const void *w, const void *x, size_t xs, const int NT, float *res) { iqk_tq_body(false, n, w, x, xs, NT, res); }
IQK_KERNEL(tq1_0, iqk_tq1_0_body)
IQK_KERNEL(tq2_0, iqk_tq2_0_body)

/* ---- prompt batches (gemm4): four rows decoded once per slab of IQD_SLAB blocks and
 * chunk of IQD_TCHUNK tokens into iqd_block form, then a 4-row x IQD_NT-token kernel that
 * only loads, multiplies and accumulates. The includer sets IQD_NT (register budget). ----
 * Grid types and the ternary ones store u = v + bias (bias 64 for the grids, |v| <= 62,
 * so u * y never saturates maddubs; 1 for TQ's {0, 1, 2}); the bias comes back out per
 * block as bias * sum(sc16 * bsums). IQ4_XS (|v| up to 127) keeps |v| and v's signs. */
#define IQD_SLAB 8
#define IQD_TCHUNK 64
typedef struct {
    uint8_t u[QK_K];     /* v + bias, or |v| (IQ4_XS) */
    int16_t sc[8][16];   /* per group: its scale pair as a maddubs-result multiplier */
    int16_t sc16[16];    /* -bias * the scale of each 16 elements (the bias correction against bsums) */
    float dw;
} iqd_block;

IQK_INLINE int iqd_bias(qtype T) { return T == QT_IQ4_XS ? 0 : (T == QT_TQ1_0 || T == QT_TQ2_0) ? 1 : 64; }

/* Decodes blocks [i0, i0 + nb) of one row into d (and sv: v's signs, IQ4_XS only). */
IQK_INLINE void iqd_decode_row(const qtype T, const uint8_t *row, int64_t i0, int nb, iqd_block *d, uint8_t (*sv)[QK_K]) {
    const bool tq = T == QT_TQ1_0 || T == QT_TQ2_0;
    const size_t bsize = tq ? (T == QT_TQ1_0 ? sizeof(block_tq1_0) : sizeof(block_tq2_0)) : iqk_block_bytes(T);
    for (int b = 0; b < nb; b++) {
        const uint8_t *blk = row + (size_t)(i0 + b) * bsize;
        iqd_block *o = &d[b];
        if (tq) {
            for (int k = 0; k < 8; k++) {
                const __m256i u = T == QT_TQ1_0 ? iqk_tq1_group((const block_tq1_0 *)(const void *)blk, k)
                                                : iqk_tq2_group((const block_tq2_0 *)(const void *)blk, k);
                _mm256_storeu_si256((__m256i *)(void *)(o->u + 32 * k), u);
                _mm256_storeu_si256((__m256i *)(void *)o->sc[k], _mm256_set1_epi16(1));
            }
            _mm256_storeu_si256((__m256i *)(void *)o->sc16, _mm256_set1_epi16(-1));
            o->dw = _cvtsh_ss(T == QT_TQ1_0 ? ((const block_tq1_0 *)(const void *)blk)->d : ((const block_tq2_0 *)(const void *)blk)->d);
            continue;
        }
        for (int ib = 0; ib < 8; ib++) {
            const iqk_group g = iqk_decode(T, blk, ib);
            if (T == QT_IQ4_XS) {
                _mm256_storeu_si256((__m256i *)(void *)(o->u + 32 * ib), g.u);
                _mm256_storeu_si256((__m256i *)(void *)sv[b] + ib, g.sv);
            } else {
                const __m256i v = _mm256_sign_epi8(g.u, g.sv);
                _mm256_storeu_si256((__m256i *)(void *)(o->u + 32 * ib), _mm256_add_epi8(v, _mm256_set1_epi8(64)));
            }
            _mm256_storeu_si256((__m256i *)(void *)o->sc[ib], g.sc);
            o->sc16[2 * ib] = (int16_t)(-64 * o->sc[ib][0]); /* unused for IQ4_XS (no bias) */
            o->sc16[2 * ib + 1] = (int16_t)(-64 * o->sc[ib][8]);
        }
        o->dw = iqk_block_scale(T, blk);
    }
}

/* Lanes [a, b, c, d] of the int32 sums of four 8-lane vectors. */
IQK_INLINE __m128i iqd_hsum4(__m256i a, __m256i b, __m256i c, __m256i d) {
    const __m256i s = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
    return _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
}

/* 4 decoded rows (d[r * nb + b]) x NT tokens over nb blocks starting at block i0 of the
 * activations: acc[t * 4 + r] += the partial dot products. */
IQK_INLINE void iqd_kernel(const qtype T, const iqd_block *d, const uint8_t (*sv)[QK_K], int nb, int64_t i0, const void *x, size_t xs,
                           const int NT, float *acc) {
    const bool bias = iqd_bias(T) != 0;
    __m128 facc[IQD_NT];
    for (int t = 0; t < NT; t++) facc[t] = _mm_loadu_ps(acc + 4 * t);
    for (int b = 0; b < nb; b++) {
        const block_q8_K *y[IQD_NT];
        for (int t = 0; t < NT; t++) y[t] = (const block_q8_K *)IQK_ACT(x, xs, t) + i0 + b;
        const iqd_block *rw[4] = {&d[b], &d[nb + b], &d[2 * nb + b], &d[3 * nb + b]};
        __m256i sumi[IQD_NT][4];
        /* the bias: sum over the 16-element runs of (-bias * sc16) * bsums */
        for (int t = 0; t < NT; t++) {
            const __m256i bs = bias ? iqk_load(y[t]->bsums) : _mm256_setzero_si256();
            for (int r = 0; r < 4; r++) sumi[t][r] = bias ? _mm256_madd_epi16(iqk_load(rw[r]->sc16), bs) : _mm256_setzero_si256();
        }
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++) {
            __m256i u[4], sc[4];
            for (int r = 0; r < 4; r++) { u[r] = iqk_load(rw[r]->u + 32 * g); sc[r] = iqk_load(rw[r]->sc[g]); }
            for (int t = 0; t < NT; t++) {
                const __m256i yq = iqk_load(y[t]->qs + 32 * g);
                for (int r = 0; r < 4; r++) {
                    const __m256i ys = bias ? yq : _mm256_sign_epi8(yq, iqk_load(sv[r * nb + b] + 32 * g));
                    sumi[t][r] = IQK_DPWSSD(sumi[t][r], _mm256_maddubs_epi16(u[r], ys), sc[r]);
                }
            }
        }
        const __m128 dw4 = _mm_setr_ps(rw[0]->dw, rw[1]->dw, rw[2]->dw, rw[3]->dw);
        for (int t = 0; t < NT; t++) {
            const __m128i s4 = iqd_hsum4(sumi[t][0], sumi[t][1], sumi[t][2], sumi[t][3]);
            facc[t] = _mm_fmadd_ps(_mm_mul_ps(dw4, _mm_set1_ps(y[t]->d)), _mm_cvtepi32_ps(s4), facc[t]);
        }
    }
    for (int t = 0; t < NT; t++) _mm_storeu_ps(acc + 4 * t, facc[t]);
}

IQK_INLINE void iqd_gemm4(const qtype T, int64_t n, const void *w, size_t w_rb, const void *x, size_t xs, int n_tok, float *out,
                          int64_t out_stride, bool accumulate) {
    iqd_block d[4 * IQD_SLAB];
    uint8_t sv[4 * IQD_SLAB][QK_K]; /* IQ4_XS only (the others keep no signs) */
    float acc[IQD_TCHUNK * 4];
    const int64_t nbk = n / QK_K;
    for (int tc = 0; tc < n_tok; tc += IQD_TCHUNK) {
        const int ntc = n_tok - tc < IQD_TCHUNK ? n_tok - tc : IQD_TCHUNK;
        memset(acc, 0, sizeof acc);
        const uint8_t *xc = (const uint8_t *)x + (size_t)tc * xs;
        for (int64_t i0 = 0; i0 < nbk; i0 += IQD_SLAB) {
            const int nb = nbk - i0 < IQD_SLAB ? (int)(nbk - i0) : IQD_SLAB;
            for (int r = 0; r < 4; r++) iqd_decode_row(T, (const uint8_t *)w + (size_t)r * w_rb, i0, nb, d + r * nb, sv + r * nb);
            int t0 = 0;
            for (; t0 + IQD_NT <= ntc; t0 += IQD_NT) iqd_kernel(T, d, (const uint8_t(*)[QK_K])sv, nb, i0, xc + (size_t)t0 * xs, xs, IQD_NT, acc + 4 * t0);
            for (; t0 < ntc; t0++) iqd_kernel(T, d, (const uint8_t(*)[QK_K])sv, nb, i0, xc + (size_t)t0 * xs, xs, 1, acc + 4 * t0);
        }
        for (int t = 0; t < ntc; t++)
            for (int r = 0; r < 4; r++) {
                float *o = out + (int64_t)(tc + t) * out_stride + r;
                *o = accumulate ? *o + acc[4 * t + r] : acc[4 * t + r];
            }
    }
}

#ifdef IQD_ZMM
/* ---- AVX-512 (IQD_ZMM): 16 rows per gemm call, decoded once per slab and IQP_TCHUNK tokens
 * into a row-interleaved tile: for each 4 consecutive elements (a quad) the 16 rows' 4 bytes
 * side by side, so one vpdpbusd against the token's 4 activation bytes broadcast gives 16
 * rows' partial sums with no horizontal reduction. Weights are stored unsigned as v + 128
 * (TQ: v + 1), the bias comes out as -bias * sum(y) per scale run (the accumulator's start
 * value, from bsums); each run's int32 sums are scaled in float by dw * scale per row. ---- */
#define IQP_ROWS 16
#define IQP_NT 8
#define IQP_TCHUNK 128

IQK_INLINE bool iqp_is_tq(qtype T) { return T == QT_TQ1_0 || T == QT_TQ2_0; }
/* Elements per scale run: 16 for the types with two scales per 32, else 32. */
IQK_INLINE int iqp_run(qtype T) { return (T == QT_IQ2_XS || T == QT_IQ2_S || T == QT_IQ1_M) ? 16 : 32; }

/* Decodes blocks [i0, i0 + nb) of 16 rows: tile[(b * 64 + quad) * 16 + r] (4 bytes each),
 * fsc[(b * runs + run) * 16 + r] = dw * scale. */
IQK_INLINE void iqp_decode(const qtype T, const uint8_t *w, size_t w_rb, int64_t i0, int nb, uint32_t *tile, float *fsc) {
    const int runs = QK_K / iqp_run(T);
    const size_t bsize = iqp_is_tq(T) ? (T == QT_TQ1_0 ? sizeof(block_tq1_0) : sizeof(block_tq2_0)) : iqk_block_bytes(T);
    for (int r = 0; r < IQP_ROWS; r++) {
        for (int b = 0; b < nb; b++) {
            const uint8_t *blk = w + (size_t)r * w_rb + (size_t)(i0 + b) * bsize;
            uint32_t *tq = tile + (size_t)b * 64 * IQP_ROWS + r;
            float *fs = fsc + (size_t)b * runs * IQP_ROWS + r;
            if (iqp_is_tq(T)) {
                const float dw = _cvtsh_ss(T == QT_TQ1_0 ? ((const block_tq1_0 *)(const void *)blk)->d : ((const block_tq2_0 *)(const void *)blk)->d);
#pragma GCC unroll 8
                for (int k = 0; k < 8; k++) {
                    const __m256i u = T == QT_TQ1_0 ? iqk_tq1_group((const block_tq1_0 *)(const void *)blk, k)
                                                    : iqk_tq2_group((const block_tq2_0 *)(const void *)blk, k);
                    _mm256_i32scatter_epi32((int *)(void *)(tq + 8 * k * IQP_ROWS), _mm256_setr_epi32(0, 16, 32, 48, 64, 80, 96, 112), u, 4);
                    fs[k * IQP_ROWS] = dw;
                }
                continue;
            }
            const float dw = iqk_block_scale(T, blk);
            for (int ib = 0; ib < 8; ib++) {
                const iqk_group g = iqk_decode(T, blk, ib);
                const __m256i u = _mm256_xor_si256(_mm256_sign_epi8(g.u, g.sv), _mm256_set1_epi8((char)0x80));
                _mm256_i32scatter_epi32((int *)(void *)(tq + 8 * ib * IQP_ROWS), _mm256_setr_epi32(0, 16, 32, 48, 64, 80, 96, 112), u, 4);
                const int lo = (int16_t)_mm256_extract_epi16(g.sc, 0), hi = (int16_t)_mm256_extract_epi16(g.sc, 8);
                if (runs == 16) {
                    fs[2 * ib * IQP_ROWS] = dw * (float)lo;
                    fs[(2 * ib + 1) * IQP_ROWS] = dw * (float)hi;
                } else {
                    fs[ib * IQP_ROWS] = dw * (float)lo;
                }
            }
        }
    }
}

/* 16 decoded rows x NT tokens over nb blocks from block i0: acc[t * 16 + r] +=. */
IQK_INLINE void iqp_kernel(const qtype T, const uint32_t *tile, const float *fsc, int nb, int64_t i0, const void *x, size_t xs, const int NT,
                           float *acc) {
    const int run = iqp_run(T), runs = QK_K / run, qpr = run / 4; /* quads per run */
    const short nbias = iqp_is_tq(T) ? -1 : -128;
    __m512 facc[IQP_NT];
    for (int t = 0; t < NT; t++) facc[t] = _mm512_loadu_ps(acc + 16 * t);
    for (int b = 0; b < nb; b++) {
        const block_q8_K *y[IQP_NT];
        int32_t corr[IQP_NT][16]; /* -bias * the activation sum of each run */
        for (int t = 0; t < NT; t++) {
            y[t] = (const block_q8_K *)IQK_ACT(x, xs, t) + i0 + b;
            const __m256i bs = iqk_load(y[t]->bsums);
            if (run == 16) _mm512_storeu_si512((void *)corr[t], _mm512_mullo_epi32(_mm512_cvtepi16_epi32(bs), _mm512_set1_epi32(nbias)));
            else _mm256_storeu_si256((__m256i *)(void *)corr[t], _mm256_madd_epi16(bs, _mm256_set1_epi16(nbias)));
        }
        __m512 blk[IQP_NT];
        for (int t = 0; t < NT; t++) blk[t] = _mm512_setzero_ps();
        const uint32_t *tb = tile + (size_t)b * 64 * IQP_ROWS;
        for (int s = 0; s < runs; s++) {
            __m512i a[IQP_NT];
            for (int t = 0; t < NT; t++) a[t] = _mm512_set1_epi32(corr[t][s]);
            for (int q = 0; q < qpr; q++) {
                const __m512i wq = _mm512_loadu_si512((const void *)(tb + (size_t)(s * qpr + q) * IQP_ROWS));
                for (int t = 0; t < NT; t++) {
                    int32_t yv;
                    memcpy(&yv, y[t]->qs + run * s + 4 * q, 4);
                    a[t] = _mm512_dpbusd_epi32(a[t], wq, _mm512_set1_epi32(yv));
                }
            }
            const __m512 f = _mm512_loadu_ps(fsc + ((size_t)b * runs + s) * IQP_ROWS);
            for (int t = 0; t < NT; t++) blk[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a[t]), f, blk[t]);
        }
        for (int t = 0; t < NT; t++) facc[t] = _mm512_fmadd_ps(blk[t], _mm512_set1_ps(y[t]->d), facc[t]);
    }
    for (int t = 0; t < NT; t++) _mm512_storeu_ps(acc + 16 * t, facc[t]);
}

IQK_INLINE void iqp_gemm16(const qtype T, int64_t n, const void *w, size_t w_rb, const void *x, size_t xs, int n_tok, float *out,
                           int64_t out_stride, bool accumulate) {
    uint32_t tile[IQD_SLAB * 64 * IQP_ROWS];
    float fsc[IQD_SLAB * 16 * IQP_ROWS];
    float acc[IQP_TCHUNK * IQP_ROWS];
    const int64_t nbk = n / QK_K;
    for (int tc = 0; tc < n_tok; tc += IQP_TCHUNK) {
        const int ntc = n_tok - tc < IQP_TCHUNK ? n_tok - tc : IQP_TCHUNK;
        memset(acc, 0, sizeof(float) * (size_t)ntc * IQP_ROWS);
        const uint8_t *xc = (const uint8_t *)x + (size_t)tc * xs;
        for (int64_t i0 = 0; i0 < nbk; i0 += IQD_SLAB) {
            const int nb = nbk - i0 < IQD_SLAB ? (int)(nbk - i0) : IQD_SLAB;
            iqp_decode(T, (const uint8_t *)w, w_rb, i0, nb, tile, fsc);
            int t0 = 0;
            for (; t0 + IQP_NT <= ntc; t0 += IQP_NT) iqp_kernel(T, tile, fsc, nb, i0, xc + (size_t)t0 * xs, xs, IQP_NT, acc + IQP_ROWS * t0);
            for (; t0 < ntc; t0++) iqp_kernel(T, tile, fsc, nb, i0, xc + (size_t)t0 * xs, xs, 1, acc + IQP_ROWS * t0);
        }
        for (int t = 0; t < ntc; t++) {
            float *o = out + (int64_t)(tc + t) * out_stride;
            for (int r = 0; r < IQP_ROWS; r++) o[r] = accumulate ? o[r] + acc[IQP_ROWS * t + r] : acc[IQP_ROWS * t + r];
        }
    }
}
#define IQD_GEMM_FN iqp_gemm16
#define IQD_ROWS IQP_ROWS
#else
#define IQD_GEMM_FN iqd_gemm4
#define IQD_ROWS 4
#endif

#define IQD_KERNEL(tag, T)                                                                                               \
    IQK_ATTR static void IQK_CAT(gemm4_##tag, IQK_SUFFIX)(int64_t n, const void *w, size_t w_rb, const void *x,           \
                                                         size_t xs, int n_tok, float *out, int64_t out_stride,           \
                                                         bool accumulate) {                                              \
        IQD_GEMM_FN(T, n, w, w_rb, x, xs, n_tok, out, out_stride, accumulate);                                           \
    }
IQD_KERNEL(iq4_xs, QT_IQ4_XS)
IQD_KERNEL(iq3_xxs, QT_IQ3_XXS)
IQD_KERNEL(iq3_s, QT_IQ3_S)
IQD_KERNEL(iq2_xxs, QT_IQ2_XXS)
IQD_KERNEL(iq2_xs, QT_IQ2_XS)
IQD_KERNEL(iq2_s, QT_IQ2_S)
IQD_KERNEL(iq1_s, QT_IQ1_S)
IQD_KERNEL(iq1_m, QT_IQ1_M)
IQD_KERNEL(tq1_0, QT_TQ1_0)
IQD_KERNEL(tq2_0, QT_TQ2_0)

/* Installs the kernels above into a table. */
static inline void iqk_install(mm_kernels *k) {
    k->dot[QT_IQ4_XS] = IQK_CAT(dot_iq4_xs, IQK_SUFFIX);
    k->dot[QT_IQ3_XXS] = IQK_CAT(dot_iq3_xxs, IQK_SUFFIX);
    k->dot[QT_IQ3_S] = IQK_CAT(dot_iq3_s, IQK_SUFFIX);
    k->dot[QT_IQ2_XXS] = IQK_CAT(dot_iq2_xxs, IQK_SUFFIX);
    k->dot[QT_IQ2_XS] = IQK_CAT(dot_iq2_xs, IQK_SUFFIX);
    k->dot[QT_IQ2_S] = IQK_CAT(dot_iq2_s, IQK_SUFFIX);
    k->dot[QT_IQ1_S] = IQK_CAT(dot_iq1_s, IQK_SUFFIX);
    k->dot[QT_IQ1_M] = IQK_CAT(dot_iq1_m, IQK_SUFFIX);
    k->dot[QT_TQ1_0] = IQK_CAT(dot_tq1_0, IQK_SUFFIX);
    k->dot[QT_TQ2_0] = IQK_CAT(dot_tq2_0, IQK_SUFFIX);
    k->gemm[QT_IQ4_XS] = IQK_CAT(gemm4_iq4_xs, IQK_SUFFIX);
    k->gemm[QT_IQ3_XXS] = IQK_CAT(gemm4_iq3_xxs, IQK_SUFFIX);
    k->gemm[QT_IQ3_S] = IQK_CAT(gemm4_iq3_s, IQK_SUFFIX);
    k->gemm[QT_IQ2_XXS] = IQK_CAT(gemm4_iq2_xxs, IQK_SUFFIX);
    k->gemm[QT_IQ2_XS] = IQK_CAT(gemm4_iq2_xs, IQK_SUFFIX);
    k->gemm[QT_IQ2_S] = IQK_CAT(gemm4_iq2_s, IQK_SUFFIX);
    k->gemm[QT_IQ1_S] = IQK_CAT(gemm4_iq1_s, IQK_SUFFIX);
    k->gemm[QT_IQ1_M] = IQK_CAT(gemm4_iq1_m, IQK_SUFFIX);
    k->gemm[QT_TQ1_0] = IQK_CAT(gemm4_tq1_0, IQK_SUFFIX);
    k->gemm[QT_TQ2_0] = IQK_CAT(gemm4_tq2_0, IQK_SUFFIX);
    for (int t = 0; t < QT_COUNT; t++)
        if (k->gemm[t]) k->gemm_rows[t] = IQD_ROWS;
}
