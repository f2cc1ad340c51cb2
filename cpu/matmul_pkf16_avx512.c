/* matmul_pkf16_avx512: the AVX-512 kernels on repacked F16 / BF16 weights (repack.h: per
 * column k, the 16 values of a 16-row group side by side). One call is one group of 16 rows
 * x up to PKF_MAX_TOK tokens of F32 activations (no activation rounding): per column k one
 * 32-byte load, converted to 16 floats (F16C / a 16-bit shift for BF16), one FMA per token
 * against x[t][k] broadcast; lane r is row r, so there are no horizontal sums and the
 * output is a masked store. Prompt batches keep 16 token accumulators in registers (one
 * weight conversion per 16 FMAs); below 4 tokens each token gets several accumulators over
 * interleaved columns, so decode is not bound by the FMA latency. */
#include "cpu_kernels.h"
#include "repack.h"

#include <immintrin.h>
#include <stdbool.h>

#define PKF_ATTR __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))
#define PKF_INLINE static inline __attribute__((always_inline)) PKF_ATTR
#define PKF_UNROLL _Pragma("GCC unroll 16")

PKF_INLINE __m512 pkf_load(const bool bf, const uint16_t *p) {
    const __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)p);
    if (bf) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    return _mm512_cvtph_ps(h);
}

/* U accumulators per token over columns k = U * s + u, summed at the end (U = 1 for
 * batches, where the NT chains already hide the FMA latency). TR: act is the tile
 * transposed, x[t][k] at act[k * PKF_MAX_TOK + t] (one cache line per column, one base
 * register); else token t's row at act + t * act_rb. */
PKF_INLINE void pkf_body(const bool bf, const bool TR, int64_t cols, const uint8_t *grp, const void *act, size_t act_rb,
                         const int NT, const int U, float *out, int64_t out_stride, __mmask16 mask, bool accumulate) {
    const uint16_t *w = (const uint16_t *)(const void *)grp;
    const float *xt = act;
    const float *x[PKF_MAX_TOK];
    for (int t = 0; t < NT; t++) x[t] = (const float *)(const void *)((const uint8_t *)act + (size_t)t * act_rb);
#define PKF_X(t, k) (TR ? xt[(size_t)(k) * PKF_MAX_TOK + (size_t)(t)] : x[t][k])
    __m512 acc[4][PKF_MAX_TOK];
    PKF_UNROLL for (int u = 0; u < U; u++) PKF_UNROLL for (int t = 0; t < NT; t++) acc[u][t] = _mm512_setzero_ps();
    int64_t k = 0;
    for (; k + U <= cols; k += U) {
        PKF_UNROLL for (int u = 0; u < U; u++) {
            const __m512 wv = pkf_load(bf, w + (size_t)(k + u) * PK_ROWS);
            PKF_UNROLL for (int t = 0; t < NT; t++) acc[u][t] = _mm512_fmadd_ps(wv, _mm512_set1_ps(PKF_X(t, k + u)), acc[u][t]);
        }
    }
    for (; k < cols; k++) {
        const __m512 wv = pkf_load(bf, w + (size_t)k * PK_ROWS);
        PKF_UNROLL for (int t = 0; t < NT; t++) acc[0][t] = _mm512_fmadd_ps(wv, _mm512_set1_ps(PKF_X(t, k)), acc[0][t]);
    }
#undef PKF_X
    PKF_UNROLL for (int t = 0; t < NT; t++) {
        __m512 v = acc[0][t];
        if (U == 4) v = _mm512_add_ps(_mm512_add_ps(acc[0][t], acc[1][t]), _mm512_add_ps(acc[2][t], acc[3][t]));
        else if (U == 2) v = _mm512_add_ps(acc[0][t], acc[1][t]);
        float *o = out + (int64_t)t * out_stride;
        if (accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, o));
        _mm512_mask_storeu_ps(o, mask, v);
    }
}

/* act_rb == 0: the transposed tile (the driver transposes batches of 4+ tokens); else rows. */
#define PKF_CASE(n, u) case n: pkf_body(bf, true, cols, grp, act, 0, n, u, out, out_stride, m, accumulate); break;
#define PKF_KERNEL(name, bf_)                                                                                           \
    PKF_ATTR static void name(int64_t cols, const uint8_t *grp, const void *act, size_t act_rb, int nt, float *out,    \
                              int64_t out_stride, uint32_t mask, bool accumulate) {                                    \
        const bool bf = bf_;                                                                                            \
        const __mmask16 m = (__mmask16)mask;                                                                            \
        if (act_rb > 0) {                                                                                               \
            if (nt >= 3) pkf_body(bf, false, cols, grp, act, act_rb, 3, 2, out, out_stride, m, accumulate);             \
            else if (nt == 2) pkf_body(bf, false, cols, grp, act, act_rb, 2, 2, out, out_stride, m, accumulate);        \
            else pkf_body(bf, false, cols, grp, act, act_rb, 1, 4, out, out_stride, m, accumulate);                     \
            return;                                                                                                     \
        }                                                                                                               \
        switch (nt) {                                                                                                   \
            PKF_CASE(16, 1) PKF_CASE(15, 1) PKF_CASE(14, 1) PKF_CASE(13, 1) PKF_CASE(12, 1) PKF_CASE(11, 1)              \
            PKF_CASE(10, 1) PKF_CASE(9, 1) PKF_CASE(8, 1) PKF_CASE(7, 1) PKF_CASE(6, 1) PKF_CASE(5, 1)                  \
            PKF_CASE(4, 1) PKF_CASE(3, 2) PKF_CASE(2, 2)                                                                \
        default: pkf_body(bf, true, cols, grp, act, 0, 1, 4, out, out_stride, m, accumulate); break;                   \
        }                                                                                                               \
    }
PKF_KERNEL(pk_f16_avx512, false)
PKF_KERNEL(pk_bf16_avx512, true)

void mm_packed_float_install_avx512(mm_kernels *k) {
    k->packed[QT_F16] = pk_f16_avx512;
    k->packed[QT_BF16] = pk_bf16_avx512;
    k->packed_nt[QT_F16] = PKF_MAX_TOK;
    k->packed_nt[QT_BF16] = PKF_MAX_TOK;
}
