/* matmul_pkq5_avx512: the Q5_K mat-vec (1-3 tokens, decode) on the repacked Q5_K layout
 * (repack.h: PK_K_*, PK_Q5K_QH), AVX-512 VNNI. The general packed kernel
 * (matmul_packed_avx512.c) walks sub-block by sub-block, so it loads every nibble line
 * twice and every high-bit line eight times per superblock; here one step k of a 64-byte
 * chunk loads its nibble line and the qh line once and builds both sub-blocks' 5-bit
 * weights from them (low / high nibble, bit 2c / 2c + 1 of qh moved to bit 4), into two
 * accumulators. The integer sums are the same exact ones (ggml's q5_K x q8_K dot), added in
 * the same order, so results match the general kernel bit for bit; measured 1.2-1.4x its
 * speed and the file-layout kernel's at one token (tests/cpu/bench_cpu_ops Q5_K). 4+
 * tokens go to the general kernel. (A GFNI gf2p8affine for the bit moves was slower here.) */
#include "cpu_kernels.h"
#include "repack.h"

#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#define PQ5_ATTR __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define PQ5_INLINE static inline __attribute__((always_inline)) PQ5_ATTR
#define PQ5_UNROLL _Pragma("GCC unroll 16")

static mm_packed_fn pq5_general; /* the kernel for 4+ tokens (set once at install) */

static inline int32_t pq5_load4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

PQ5_INLINE void pq5_body(int64_t nb, const uint8_t *grp, const void *act, size_t act_rb, const int NT, float *out,
                         int64_t out_stride, __mmask16 mask, bool accumulate) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), b16 = _mm512_set1_epi8(0x10);
    __m512 acc[3];
    PQ5_UNROLL for (int t = 0; t < NT; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *pb = grp + (size_t)i * PK_Q5K_BYTES;
        const blk_q8ks *y[3];
        PQ5_UNROLL for (int t = 0; t < NT; t++) y[t] = (const blk_q8ks *)(const void *)((const uint8_t *)act + (size_t)t * act_rb) + i;
        __m512i isum[3];
        PQ5_UNROLL for (int t = 0; t < NT; t++) isum[t] = _mm512_setzero_si512();
        PQ5_UNROLL for (int c = 0; c < 4; c++) {
            __m512i s0[3], s1[3];
            PQ5_UNROLL for (int t = 0; t < NT; t++) s0[t] = s1[t] = _mm512_setzero_si512();
            PQ5_UNROLL for (int k = 0; k < 8; k++) {
                const __m512i p = _mm512_loadu_si512((const void *)(pb + PK_K_QS + (size_t)(c * 8 + k) * 64));
                const __m512i qh = _mm512_loadu_si512((const void *)(pb + PK_Q5K_QH + (size_t)k * 64));
                /* w0 = (p & 0x0F) | bit 2c of qh at bit 4, w1 = (p >> 4 & 0x0F) | bit 2c + 1 at bit 4
                 * (epi16 shifts: the 0x10 mask keeps only bits that stayed in their byte) */
                const int sh0 = 4 - 2 * c, sh1 = 3 - 2 * c;
                const __m512i h0 = sh0 >= 0 ? _mm512_slli_epi16(qh, (unsigned)sh0) : _mm512_srli_epi16(qh, (unsigned)-sh0);
                const __m512i h1 = sh1 >= 0 ? _mm512_slli_epi16(qh, (unsigned)sh1) : _mm512_srli_epi16(qh, (unsigned)-sh1);
                const __m512i w0 = _mm512_ternarylogic_epi32(_mm512_and_si512(p, m4), h0, b16, 0xF8);
                const __m512i w1 = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(p, 4), m4), h1, b16, 0xF8);
                PQ5_UNROLL for (int t = 0; t < NT; t++) {
                    const int8_t *yq = y[t]->qs + 64 * c + 4 * k;
                    s0[t] = _mm512_dpbusd_epi32(s0[t], w0, _mm512_set1_epi32(pq5_load4(yq)));
                    s1[t] = _mm512_dpbusd_epi32(s1[t], w1, _mm512_set1_epi32(pq5_load4(yq + 32)));
                }
            }
            const __m512i sc0 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(pb + PK_K_SC + 16 * (2 * c))));
            const __m512i sc1 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(pb + PK_K_SC + 16 * (2 * c + 1))));
            PQ5_UNROLL for (int t = 0; t < NT; t++) {
                isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(s0[t], sc0));
                isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(s1[t], sc1));
            }
        }
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(pb + PK_K_D)));
        const __m512 dm = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(pb + PK_K_DMIN)));
        __m512i mn[4];
        PQ5_UNROLL for (int q = 0; q < 4; q++) mn[q] = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(const void *)(pb + PK_K_MN + 32 * q)));
        PQ5_UNROLL for (int t = 0; t < NT; t++) {
            __m512i ms = _mm512_setzero_si512();
            PQ5_UNROLL for (int q = 0; q < 4; q++) {
                int32_t pair;
                memcpy(&pair, y[t]->bs32 + 2 * q, 4);
                ms = _mm512_dpwssd_epi32(ms, mn[q], _mm512_set1_epi32(pair));
            }
            const __m512 dy = _mm512_set1_ps(y[t]->d);
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(dw, dy), acc[t]);
            acc[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(ms), _mm512_mul_ps(dm, dy), acc[t]);
        }
    }
    PQ5_UNROLL for (int t = 0; t < NT; t++) {
        float *o = out + (int64_t)t * out_stride;
        __m512 v = acc[t];
        if (accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, o));
        _mm512_mask_storeu_ps(o, mask, v);
    }
}

PQ5_ATTR static void pk_q5_K_gemv(int64_t nb, const uint8_t *grp, const void *act, size_t act_rb, int nt, float *out,
                                  int64_t out_stride, uint32_t mask, bool accumulate) {
    const __mmask16 m = (__mmask16)mask;
    switch (nt) {
    case 1: pq5_body(nb, grp, act, act_rb, 1, out, out_stride, m, accumulate); break;
    case 2: pq5_body(nb, grp, act, act_rb, 2, out, out_stride, m, accumulate); break;
    case 3: pq5_body(nb, grp, act, act_rb, 3, out, out_stride, m, accumulate); break;
    default: pq5_general(nb, grp, act, act_rb, nt, out, out_stride, mask, accumulate); break;
    }
}

void mm_packed_q5_install_avx512(mm_kernels *k) {
    if (!k->packed[QT_Q5_K] || k->packed[QT_Q5_K] == pk_q5_K_gemv) return;
    pq5_general = k->packed[QT_Q5_K];
    k->packed[QT_Q5_K] = pk_q5_K_gemv;
    k->packed_gemv[QT_Q5_K] = true;
}
