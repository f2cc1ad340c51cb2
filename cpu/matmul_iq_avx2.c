/* matmul_iq_avx2: AVX2 dot kernels of the read-only weight types: MXFP4 and IQ4_NL against
 * blk_q8x here, the 256-element i-quants and TQ types against Q8_K from matmul_iqk_x86.h. MXFP4/IQ4_NL: the 16 values of the type are a pshufb table, so a block decodes to 32 signed
 * bytes in two instructions; the integer dot is maddubs + madd on |w| and sign(w) * x.
 * Installed by mm_kernels_iq_avx2 after the run-time CPU check (cpu_backend.c). */
#include "cpu_kernels.h"
#include "quant_iq.h"

#include <immintrin.h>

/* ---- the 256-element i-quants and TQ types against Q8_K: matmul_iqk_x86.h with madd + add ---- */
#define IQK_ATTR
#define IQK_DPWSSD(acc, a, b) _mm256_add_epi32((acc), _mm256_madd_epi16((a), (b)))
#define IQK_SUFFIX _avx2
#define IQD_NT 2
#include "matmul_iqk_x86.h"

#define INLINE static inline __attribute__((always_inline))
#define ACT(x, xs, t) ((const void *)((const uint8_t *)(x) + (size_t)(t) * (xs)))

INLINE float hsum_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* The 32 signed values of a 16-byte nibble array through a 16-entry table: low nibbles
 * are elements 0..15, high ones 16..31. */
INLINE __m256i lut_nibbles(const uint8_t *qs, __m256i table) {
    const __m128i b = _mm_loadu_si128((const __m128i *)(const void *)qs);
    const __m256i nib = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(b, 4), b), _mm256_set1_epi8(0x0F));
    return _mm256_shuffle_epi8(table, nib);
}

/* 8 int32 partial sums of the byte products of signed v and signed y. */
INLINE __m256i dot_s8s8(__m256i v, __m256i y) {
    const __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(v, v), _mm256_sign_epi8(y, v));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

INLINE __m256i table16(const int8_t *kv) {
    const __m128i t = _mm_loadu_si128((const __m128i *)(const void *)kv);
    return _mm256_set_m128i(t, t);
}

INLINE void mxfp4_body(int64_t n, const void *w, const void *x, size_t xs, const int NT, float *res) {
    const block_mxfp4 *b = w;
    const __m256i table = table16(kvalues_mxfp4);
    __m256 acc[MM_MAX_TOK];
    for (int t = 0; t < NT; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 32; i++) {
        const __m256i v = lut_nibbles(b[i].qs, table);
        const float dw = e8m0_to_fp32_half(b[i].e);
        for (int t = 0; t < NT; t++) {
            const blk_q8x *y = (const blk_q8x *)ACT(x, xs, t) + i;
            const __m256i yq = _mm256_loadu_si256((const __m256i *)(const void *)y->qs);
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dw * y->d), _mm256_cvtepi32_ps(dot_s8s8(v, yq)), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++) res[t] = hsum_ps(acc[t]);
}

INLINE void iq4_nl_body(int64_t n, const void *w, const void *x, size_t xs, const int NT, float *res) {
    const block_iq4_nl *b = w;
    const __m256i table = table16(kvalues_iq4nl);
    __m256 acc[MM_MAX_TOK];
    for (int t = 0; t < NT; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 32; i++) {
        const __m256i v = lut_nibbles(b[i].qs, table);
        const float dw = _cvtsh_ss(b[i].d);
        for (int t = 0; t < NT; t++) {
            const blk_q8x *y = (const blk_q8x *)ACT(x, xs, t) + i;
            const __m256i yq = _mm256_loadu_si256((const __m256i *)(const void *)y->qs);
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dw * y->d), _mm256_cvtepi32_ps(dot_s8s8(v, yq)), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++) res[t] = hsum_ps(acc[t]);
}

#define NT_DISPATCH(name, body)                                                                   \
    static void name(int64_t n, const void *w, const void *x, size_t xs, int nt, float *res) {     \
        switch (nt) {                                                                             \
        case 1: body(n, w, x, xs, 1, res); break;                                                 \
        case 2: body(n, w, x, xs, 2, res); break;                                                 \
        case 3: body(n, w, x, xs, 3, res); break;                                                 \
        default: body(n, w, x, xs, 4, res); break;                                                \
        }                                                                                         \
    }
NT_DISPATCH(dot_mxfp4_avx2, mxfp4_body)
NT_DISPATCH(dot_iq4_nl_avx2, iq4_nl_body)

void mm_kernels_iq_avx2(mm_kernels *k) {
    k->dot[QT_MXFP4] = dot_mxfp4_avx2;
    k->dot[QT_IQ4_NL] = dot_iq4_nl_avx2;
    iqk_install(k);
}
