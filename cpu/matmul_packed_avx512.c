/* matmul_packed_avx512: the AVX-512 VNNI kernels on repacked weights (repack.h): one
 * group of PK_ROWS = 16 rows x up to PK_MAX_TOK tokens per call, one 32-bit lane per row,
 * so each vpdpbusd step is 16 rows x 4 elements against 4 activation bytes broadcast from
 * memory, and no horizontal sums: lane r is row r. Weights are decoded once per block and
 * kept in registers for all the tokens (prompt batches); a single token (generation) reads
 * one sequential stream per group. Per block and row the integer sum is exact (the offset
 * of Q4_0 / Q8_0's unsigned form is folded in as -8 / -128 x the activation block's integer
 * sum), then d_w * d_x * sum is added in block order, as ggml's q*_0 x q8_0 dot does. */
#include "cpu_kernels.h"
#include "repack.h"

#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#define PK_ATTR __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define PK_INLINE static inline __attribute__((always_inline)) PK_ATTR

static inline int32_t pk_load4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* is_q4: Q4_0 (4 steps of packed nibbles: low = elements 4k.., high = 16 + 4k..), else
 * Q8_0 (8 steps of signed bytes, made unsigned by xor 0x80: offset -128). */
PK_INLINE void pk_body(const bool is_q4, int64_t nb, const uint8_t *grp, const void *act, size_t act_rb, const int NT,
                       float *out, int64_t out_stride, __mmask16 mask, bool accumulate) {
    const size_t pblk = is_q4 ? PK_ROWS * sizeof(block_q4_0) : PK_ROWS * sizeof(block_q8_0);
    const int off = is_q4 ? -8 : -128;
    const __m512i m4 = _mm512_set1_epi8(0x0F), x80 = _mm512_set1_epi8((char)0x80);
    __m512 acc[PK_MAX_TOK];
    for (int t = 0; t < NT; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *pb = grp + (size_t)i * pblk;
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)pb));
        __m512i w[8];
        if (is_q4) {
            for (int k = 0; k < 4; k++) {
                const __m512i p = _mm512_loadu_si512((const void *)(pb + 32 + 64 * k));
                w[k] = _mm512_and_si512(p, m4);
                w[k + 4] = _mm512_and_si512(_mm512_srli_epi16(p, 4), m4);
            }
        } else {
            for (int k = 0; k < 8; k++) w[k] = _mm512_xor_si512(_mm512_loadu_si512((const void *)(pb + 32 + 64 * k)), x80);
        }
        for (int t = 0; t < NT; t++) {
            const blk_q8s *y = (const blk_q8s *)(const void *)((const uint8_t *)act + (size_t)t * act_rb) + i;
            __m512i s = _mm512_set1_epi32(off * y->sum);
            for (int k = 0; k < 8; k++) s = _mm512_dpbusd_epi32(s, w[k], _mm512_set1_epi32(pk_load4(y->qs + 4 * k)));
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, _mm512_set1_ps(y->d)), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++) {
        float *o = out + (int64_t)t * out_stride;
        __m512 v = acc[t];
        if (accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, o));
        _mm512_mask_storeu_ps(o, mask, v);
    }
}

#define PK_KERNEL(name, is_q4)                                                                                          \
    PK_ATTR static void name(int64_t nb, const uint8_t *grp, const void *act, size_t act_rb, int nt, float *out,       \
                             int64_t out_stride, uint32_t mask, bool accumulate) {                                     \
        const __mmask16 m = (__mmask16)mask;                                                                            \
        switch (nt) {                                                                                                   \
        case 8: pk_body(is_q4, nb, grp, act, act_rb, 8, out, out_stride, m, accumulate); break;                         \
        case 7: pk_body(is_q4, nb, grp, act, act_rb, 7, out, out_stride, m, accumulate); break;                         \
        case 6: pk_body(is_q4, nb, grp, act, act_rb, 6, out, out_stride, m, accumulate); break;                         \
        case 5: pk_body(is_q4, nb, grp, act, act_rb, 5, out, out_stride, m, accumulate); break;                         \
        case 4: pk_body(is_q4, nb, grp, act, act_rb, 4, out, out_stride, m, accumulate); break;                         \
        case 3: pk_body(is_q4, nb, grp, act, act_rb, 3, out, out_stride, m, accumulate); break;                         \
        case 2: pk_body(is_q4, nb, grp, act, act_rb, 2, out, out_stride, m, accumulate); break;                         \
        default: pk_body(is_q4, nb, grp, act, act_rb, 1, out, out_stride, m, accumulate); break;                        \
        }                                                                                                               \
    }
PK_KERNEL(pk_q4_0_vnni, true)
PK_KERNEL(pk_q8_0_vnni, false)

void mm_packed_install_avx512(mm_kernels *k) {
    k->packed[QT_Q4_0] = pk_q4_0_vnni;
    k->packed[QT_Q8_0] = pk_q8_0_vnni;
}
