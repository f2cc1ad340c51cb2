/* matmul_k32_x86: the x86 SIMD dot kernels of the 32-element weight types (Q4_0, Q4_1,
 * Q5_0, Q5_1, Q8_0 against blk_q8x), written once and included by matmul_avx2.c (integer
 * dot = maddubs + madd) and matmul_avx512.c (integer dot = VNNI vpdpbusd). The includer
 * defines K32_ATTR (function attributes), K32_IDOT(u, s) (8 int32 partial sums of
 * u8 x s8 byte products), K32_SUFFIX (name suffix of the exported kernels) and K32_NT4
 * (tokens per 4-row call: 4 with 16 vector registers, 8 with AVX-512's 32).
 * Two shapes: one weight row x NT tokens, and four rows x NT tokens (rows share the
 * activation loads, and the four block scales are applied as one vector). The driver uses
 * the 4-row form for prompt batches only: for a single token (memory-bound) its four
 * interleaved weight streams measured ~2x slower than one sequential stream here. */
#include <immintrin.h>
#include "cpu_kernels.h"

#define K32_INLINE static inline __attribute__((always_inline)) K32_ATTR
#define K32_CAT2(a, b) a##b
#define K32_CAT(a, b) K32_CAT2(a, b)
#define K32_ACT(x, xs, t) ((const void *)((const uint8_t *)(x) + (size_t)(t) * (xs)))

typedef enum { K32_Q4_0, K32_Q4_1, K32_Q5_0, K32_Q5_1, K32_Q8_0 } k32_kind;

K32_INLINE float k32_hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* 32 nibbles of a 16-byte block: low nibbles are elements 0..15, high ones 16..31. */
K32_INLINE __m256i k32_nibbles(const uint8_t *qs) {
    const __m128i b = _mm_loadu_si128((const __m128i *)(const void *)qs);
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(b, 4), b), _mm256_set1_epi8(0x0F));
}

/* 0x10 in byte j where bit j of the 32-bit qh is set (the 5th bit of Q5_0/Q5_1). */
K32_INLINE __m256i k32_q5_high(const uint8_t *qh4) {
    uint32_t qh;
    memcpy(&qh, qh4, 4);
    const __m256i shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0x0000000000000000);
    __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32((int)qh), shuf);
    bytes = _mm256_or_si256(bytes, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
    return _mm256_and_si256(_mm256_cmpeq_epi8(bytes, _mm256_set1_epi64x(-1)), _mm256_set1_epi8(0x10));
}

/* Block i of a row: unsigned quants u (Q8_0: |q|, with q kept for the sign move), the
 * scale bits d and the offset term: value = d * u + m, m = -8d, -16d, a stored min, or 0. */
typedef struct { __m256i u, q; uint16_t d, m; } k32_block;

K32_INLINE k32_block k32_load(k32_kind kind, const void *w, int64_t i) {
    k32_block b;
    b.q = _mm256_setzero_si256();
    b.m = 0;
    if (kind == K32_Q4_0) {
        const block_q4_0 *p = (const block_q4_0 *)w + i;
        b.u = k32_nibbles(p->qs); b.d = p->d;
    } else if (kind == K32_Q4_1) {
        const block_q4_1 *p = (const block_q4_1 *)w + i;
        b.u = k32_nibbles(p->qs); b.d = p->d; b.m = p->m;
    } else if (kind == K32_Q5_0) {
        const block_q5_0 *p = (const block_q5_0 *)w + i;
        b.u = _mm256_or_si256(k32_nibbles(p->qs), k32_q5_high(p->qh)); b.d = p->d;
    } else if (kind == K32_Q5_1) {
        const block_q5_1 *p = (const block_q5_1 *)w + i;
        b.u = _mm256_or_si256(k32_nibbles(p->qs), k32_q5_high(p->qh)); b.d = p->d; b.m = p->m;
    } else {
        const block_q8_0 *p = (const block_q8_0 *)w + i;
        b.q = _mm256_loadu_si256((const __m256i *)(const void *)p->qs);
        b.u = _mm256_sign_epi8(b.q, b.q); b.d = p->d;
    }
    return b;
}

/* Offset factor per unit of d for the types whose m is implied. */
K32_INLINE float k32_implied_m(k32_kind kind) { return kind == K32_Q4_0 ? -8.0f : kind == K32_Q5_0 ? -16.0f : 0.0f; }
K32_INLINE bool k32_has_m(k32_kind kind) { return kind != K32_Q8_0; }
K32_INLINE bool k32_stored_m(k32_kind kind) { return kind == K32_Q4_1 || kind == K32_Q5_1; }

/* One row x NT tokens: res[t]. One accumulator chain, blocks in order: the summation order
 * of ggml's q*_0 x q8_0 dot, which keeps greedy continuations identical to llama.cpp's (two
 * interleaved chains decode Q4_0 ~15% faster at one thread but flipped a real-Gemma greedy
 * step in tests/data/golden). */
K32_INLINE void k32_row_body(k32_kind kind, int64_t n, const void *w, const void *x, size_t xs, const int NT, float *res) {
    __m256 acc[MM_MAX_TOK];
    float accm[MM_MAX_TOK];
    for (int t = 0; t < NT; t++) { acc[t] = _mm256_setzero_ps(); accm[t] = 0; }
    for (int64_t i = 0; i < n / 32; i++) {
        const k32_block b = k32_load(kind, w, i);
        const float dw = _cvtsh_ss(b.d);
        const float mw = k32_stored_m(kind) ? _cvtsh_ss(b.m) : k32_implied_m(kind) * dw;
        for (int t = 0; t < NT; t++) {
            const blk_q8x *y = (const blk_q8x *)K32_ACT(x, xs, t) + i;
            __m256i yq = _mm256_loadu_si256((const __m256i *)(const void *)y->qs);
            if (kind == K32_Q8_0) yq = _mm256_sign_epi8(yq, b.q);
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dw * y->d), _mm256_cvtepi32_ps(K32_IDOT(b.u, yq)), acc[t]);
            if (k32_has_m(kind)) accm[t] += mw * y->s;
        }
    }
    for (int t = 0; t < NT; t++) res[t] = k32_hsum(acc[t]) + accm[t];
}

/* Four rows (w, w + w_rb, ...) x NT tokens: res[t * 4 + r]. */
K32_INLINE void k32_rows4_body(k32_kind kind, int64_t n, const void *w, size_t w_rb, const void *x, size_t xs, const int NT, float *res) {
    __m256 acc[MM_MAX_TOK4];
    __m128 accm[MM_MAX_TOK4];
    for (int t = 0; t < NT; t++) { acc[t] = _mm256_setzero_ps(); accm[t] = _mm_setzero_ps(); }
    const uint8_t *w0 = w;
    for (int64_t i = 0; i < n / 32; i++) {
        const k32_block b0 = k32_load(kind, w0, i), b1 = k32_load(kind, w0 + w_rb, i);
        const k32_block b2 = k32_load(kind, w0 + 2 * w_rb, i), b3 = k32_load(kind, w0 + 3 * w_rb, i);
        const __m128 d4 = _mm_cvtph_ps(_mm_setr_epi16((short)b0.d, (short)b1.d, (short)b2.d, (short)b3.d, 0, 0, 0, 0));
        __m128 m4 = _mm_setzero_ps();
        if (k32_stored_m(kind)) m4 = _mm_cvtph_ps(_mm_setr_epi16((short)b0.m, (short)b1.m, (short)b2.m, (short)b3.m, 0, 0, 0, 0));
        else if (k32_has_m(kind)) m4 = _mm_mul_ps(d4, _mm_set1_ps(k32_implied_m(kind)));
        for (int t = 0; t < NT; t++) {
            const blk_q8x *y = (const blk_q8x *)K32_ACT(x, xs, t) + i;
            const __m256i yq = _mm256_loadu_si256((const __m256i *)(const void *)y->qs);
            __m256i p0, p1, p2, p3;
            if (kind == K32_Q8_0) {
                p0 = K32_IDOT(b0.u, _mm256_sign_epi8(yq, b0.q)); p1 = K32_IDOT(b1.u, _mm256_sign_epi8(yq, b1.q));
                p2 = K32_IDOT(b2.u, _mm256_sign_epi8(yq, b2.q)); p3 = K32_IDOT(b3.u, _mm256_sign_epi8(yq, b3.q));
            } else {
                p0 = K32_IDOT(b0.u, yq); p1 = K32_IDOT(b1.u, yq); p2 = K32_IDOT(b2.u, yq); p3 = K32_IDOT(b3.u, yq);
            }
            /* per 128-bit lane: [row0, row1, row2, row3] partial sums */
            const __m256i s = _mm256_hadd_epi32(_mm256_hadd_epi32(p0, p1), _mm256_hadd_epi32(p2, p3));
            const __m128 sc = _mm_mul_ps(d4, _mm_set1_ps(y->d));
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set_m128(sc, sc), acc[t]);
            if (k32_has_m(kind)) accm[t] = _mm_fmadd_ps(m4, _mm_set1_ps(y->s), accm[t]);
        }
    }
    for (int t = 0; t < NT; t++) {
        const __m128 r = _mm_add_ps(_mm_add_ps(_mm256_castps256_ps128(acc[t]), _mm256_extractf128_ps(acc[t], 1)), accm[t]);
        _mm_storeu_ps(res + 4 * t, r);
    }
}

#if K32_NT4 == 8
#define K32_NT4_CASES(kind)                                                                                            \
    case 8: k32_rows4_body(kind, n, w, w_rb, x, xs, 8, res); break;                                                    \
    case 7: k32_rows4_body(kind, n, w, w_rb, x, xs, 7, res); break;                                                    \
    case 6: k32_rows4_body(kind, n, w, w_rb, x, xs, 6, res); break;                                                    \
    case 5: k32_rows4_body(kind, n, w, w_rb, x, xs, 5, res); break;
#elif K32_NT4 == 4
#define K32_NT4_CASES(kind)
#else
#error "K32_NT4 must be 4 or 8"
#endif

#define K32_KERNELS(tag, kind)                                                                                         \
    K32_ATTR static void K32_CAT(dot_##tag, K32_SUFFIX)(int64_t n, const void *w, const void *x, size_t xs, int nt,   \
                                                        float *res) {                                                 \
        switch (nt) {                                                                                                  \
        case 4: k32_row_body(kind, n, w, x, xs, 4, res); break;                                                        \
        case 3: k32_row_body(kind, n, w, x, xs, 3, res); break;                                                        \
        case 2: k32_row_body(kind, n, w, x, xs, 2, res); break;                                                        \
        default: k32_row_body(kind, n, w, x, xs, 1, res); break;                                                       \
        }                                                                                                              \
    }                                                                                                                  \
    K32_ATTR static void K32_CAT(dot4_##tag, K32_SUFFIX)(int64_t n, const void *w, size_t w_rb, const void *x,        \
                                                         size_t xs, int nt, float *res) {                             \
        switch (nt) {                                                                                                  \
        K32_NT4_CASES(kind)                                                                                            \
        case 4: k32_rows4_body(kind, n, w, w_rb, x, xs, 4, res); break;                                                \
        case 3: k32_rows4_body(kind, n, w, w_rb, x, xs, 3, res); break;                                                \
        case 2: k32_rows4_body(kind, n, w, w_rb, x, xs, 2, res); break;                                                \
        default: k32_rows4_body(kind, n, w, w_rb, x, xs, 1, res); break;                                               \
        }                                                                                                              \
    }
K32_KERNELS(q4_0, K32_Q4_0)
K32_KERNELS(q4_1, K32_Q4_1)
K32_KERNELS(q5_0, K32_Q5_0)
K32_KERNELS(q5_1, K32_Q5_1)
K32_KERNELS(q8_0, K32_Q8_0)

/* Installs the kernels above into a table. */
static inline void k32_install(mm_kernels *k) {
    k->dot[QT_Q4_0] = K32_CAT(dot_q4_0, K32_SUFFIX);   k->dot4[QT_Q4_0] = K32_CAT(dot4_q4_0, K32_SUFFIX);
    k->dot[QT_Q4_1] = K32_CAT(dot_q4_1, K32_SUFFIX);   k->dot4[QT_Q4_1] = K32_CAT(dot4_q4_1, K32_SUFFIX);
    k->dot[QT_Q5_0] = K32_CAT(dot_q5_0, K32_SUFFIX);   k->dot4[QT_Q5_0] = K32_CAT(dot4_q5_0, K32_SUFFIX);
    k->dot[QT_Q5_1] = K32_CAT(dot_q5_1, K32_SUFFIX);   k->dot4[QT_Q5_1] = K32_CAT(dot4_q5_1, K32_SUFFIX);
    k->dot[QT_Q8_0] = K32_CAT(dot_q8_0, K32_SUFFIX);   k->dot4[QT_Q8_0] = K32_CAT(dot4_q8_0, K32_SUFFIX);
    k->dot4_nt[QT_Q4_0] = k->dot4_nt[QT_Q4_1] = k->dot4_nt[QT_Q5_0] = k->dot4_nt[QT_Q5_1] = k->dot4_nt[QT_Q8_0] = K32_NT4;
}
