/* matmul_avx512: AVX-512 VNNI dot kernels (256-bit vpdpbusd via AVX512VL) for the 32-
 * element weight types: one instruction replaces AVX2's maddubs + madd per block and
 * token, which matters for prompt batches (compute-bound). The K-quants keep the AVX2
 * kernels: their per-16-element integer scales need the madd step either way. */
#include "cpu_kernels.h"
#include "fp16.h"

#include <immintrin.h>

/* The build compiles this file for AVX-512 F/BW/VL; VNNI is enabled per function. */
#define VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline)) VNNI
#define ACT(x, xs, t) ((const void *)((const uint8_t *)(x) + (size_t)(t) * (xs)))

INLINE float hsum_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

INLINE __m256i unpack_nibbles(const uint8_t *qs) {
    const __m128i b = _mm_loadu_si128((const __m128i *)(const void *)qs);
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(b, 4), b), _mm256_set1_epi8(0x0F));
}

INLINE __m256i q5_high_bits(const uint8_t *qh4) {
    uint32_t qh;
    memcpy(&qh, qh4, 4);
    /* bit j of qh -> byte j: a mask register does it directly */
    return _mm256_maskz_mov_epi8((__mmask32)qh, _mm256_set1_epi8(0x10));
}

typedef enum { K_Q4_0, K_Q4_1, K_Q5_0, K_Q5_1, K_Q8_0 } k32_kind;

/* dot = dw * dx * sum(u * qx) + mw * sx, with u unsigned (Q8_0: |q| against sign-moved qx). */
INLINE void dot_k32_body(k32_kind kind, int64_t n, const void *w, const void *x, size_t xs, const int NT, float *res) {
    __m256 acc[MM_MAX_TOK];
    float accs[MM_MAX_TOK];
    for (int t = 0; t < NT; t++) { acc[t] = _mm256_setzero_ps(); accs[t] = 0; }
    for (int64_t i = 0; i < n / 32; i++) {
        __m256i u, q = _mm256_setzero_si256();
        float dw, mw = 0;
        if (kind == K_Q4_0) {
            const block_q4_0 *b = (const block_q4_0 *)w + i;
            u = unpack_nibbles(b->qs); dw = _cvtsh_ss(b->d); mw = -8.0f * dw;
        } else if (kind == K_Q4_1) {
            const block_q4_1 *b = (const block_q4_1 *)w + i;
            u = unpack_nibbles(b->qs); dw = _cvtsh_ss(b->d); mw = _cvtsh_ss(b->m);
        } else if (kind == K_Q5_0) {
            const block_q5_0 *b = (const block_q5_0 *)w + i;
            u = _mm256_or_si256(unpack_nibbles(b->qs), q5_high_bits(b->qh)); dw = _cvtsh_ss(b->d); mw = -16.0f * dw;
        } else if (kind == K_Q5_1) {
            const block_q5_1 *b = (const block_q5_1 *)w + i;
            u = _mm256_or_si256(unpack_nibbles(b->qs), q5_high_bits(b->qh)); dw = _cvtsh_ss(b->d); mw = _cvtsh_ss(b->m);
        } else {
            const block_q8_0 *b = (const block_q8_0 *)w + i;
            q = _mm256_loadu_si256((const __m256i *)(const void *)b->qs);
            u = _mm256_abs_epi8(q); dw = _cvtsh_ss(b->d);
        }
        for (int t = 0; t < NT; t++) {
            const blk_q8x *y = (const blk_q8x *)ACT(x, xs, t) + i;
            __m256i yq = _mm256_loadu_si256((const __m256i *)(const void *)y->qs);
            if (kind == K_Q8_0) yq = _mm256_sign_epi8(yq, q);
            const __m256 p = _mm256_cvtepi32_ps(_mm256_dpbusd_epi32(_mm256_setzero_si256(), u, yq));
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dw * y->d), p, acc[t]);
            if (kind != K_Q8_0) accs[t] += mw * y->s;
        }
    }
    for (int t = 0; t < NT; t++) res[t] = hsum_ps(acc[t]) + accs[t];
}

#define K32_KERNEL(name, kind)                                                                        \
    VNNI static void name(int64_t n, const void *w, const void *x, size_t xs, int nt, float *res) {   \
        switch (nt) {                                                                                 \
        case 4: dot_k32_body(kind, n, w, x, xs, 4, res); break;                                       \
        case 3: dot_k32_body(kind, n, w, x, xs, 3, res); break;                                       \
        case 2: dot_k32_body(kind, n, w, x, xs, 2, res); break;                                       \
        default: dot_k32_body(kind, n, w, x, xs, 1, res); break;                                      \
        }                                                                                             \
    }
K32_KERNEL(dot_q4_0_vnni, K_Q4_0)
K32_KERNEL(dot_q4_1_vnni, K_Q4_1)
K32_KERNEL(dot_q5_0_vnni, K_Q5_0)
K32_KERNEL(dot_q5_1_vnni, K_Q5_1)
K32_KERNEL(dot_q8_0_vnni, K_Q8_0)

void mm_kernels_avx512(mm_kernels *k) {
    k->dot[QT_Q4_0] = dot_q4_0_vnni;
    k->dot[QT_Q4_1] = dot_q4_1_vnni;
    k->dot[QT_Q5_0] = dot_q5_0_vnni;
    k->dot[QT_Q5_1] = dot_q5_1_vnni;
    k->dot[QT_Q8_0] = dot_q8_0_vnni;
}
