/* matmul_packed_avx512: the AVX-512 VNNI kernels on repacked weights (repack.h): one
 * group of PK_ROWS = 16 rows x up to PK_MAX_TOK tokens per call, one 32-bit lane per row,
 * so each vpdpbusd step is 16 rows x 4 elements against 4 activation bytes broadcast from
 * memory, and no horizontal sums: lane r is row r. Weights are decoded once per block and
 * kept in registers for all the tokens (prompt batches); a single token (generation) reads
 * one sequential stream per group. Per block and row the integer sum is exact (the offset
 * of Q4_0 / Q8_0's unsigned form is folded in as -8 / -128 x the activation block's integer
 * sum), then d_w * d_x * sum is added in block order, as ggml's q*_0 x q8_0 dot does.
 * Q4_K/Q5_K/Q6_K: exact per-superblock integer sums (ggml's q*_K x q8_K), one float add each. */
#include "cpu_kernels.h"
#include "quant_iq.h"
#include "repack.h"

#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#define PK_ATTR __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define PK_INLINE static inline __attribute__((always_inline)) PK_ATTR
#define PK_UNROLL _Pragma("GCC unroll 16")

static inline int32_t pk_load4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* IQ4_NL's 16 levels plus 128 (unsigned, 1..241), as a pshufb table in every 128-bit lane:
 * the packed IQ4_NL kernel is Q4_0's with the nibbles looked up, offset -128. */
PK_INLINE __m512i pk_iq4nl_table(void) {
    const __m128i t = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)kvalues_iq4nl), _mm_set1_epi8((char)0x80));
    return _mm512_broadcast_i32x4(t);
}

/* is_q4: Q4_0 (4 steps of packed nibbles: low = elements 4k.., high = 16 + 4k..; is_nl:
 * IQ4_NL, the nibbles through pk_iq4nl_table), else Q8_0 (8 steps of signed bytes, made
 * unsigned by xor 0x80: offset -128). */
PK_INLINE void pk_body_nl(const bool is_q4, const bool is_nl, int64_t nb, const uint8_t *grp, const void *act, size_t act_rb, const int NT,
                       float *out, int64_t out_stride, __mmask16 mask, bool accumulate) {
    const size_t pblk = is_q4 ? PK_ROWS * sizeof(block_q4_0) : PK_ROWS * sizeof(block_q8_0);
    const int off = is_q4 && !is_nl ? -8 : -128;
    const __m512i m4 = _mm512_set1_epi8(0x0F), x80 = _mm512_set1_epi8((char)0x80), lut = pk_iq4nl_table();
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
                if (is_nl) { w[k] = _mm512_shuffle_epi8(lut, w[k]); w[k + 4] = _mm512_shuffle_epi8(lut, w[k + 4]); }
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

PK_INLINE void pk_body(const bool is_q4, int64_t nb, const uint8_t *grp, const void *act, size_t act_rb, const int NT,
                       float *out, int64_t out_stride, __mmask16 mask, bool accumulate) {
    pk_body_nl(is_q4, false, nb, grp, act, act_rb, NT, out, out_stride, mask, accumulate);
}
PK_INLINE void pk_body_iq4nl(const bool is_q4, int64_t nb, const uint8_t *grp, const void *act, size_t act_rb, const int NT,
                             float *out, int64_t out_stride, __mmask16 mask, bool accumulate) {
    pk_body_nl(is_q4, true, nb, grp, act, act_rb, NT, out, out_stride, mask, accumulate);
}

#define PK_KERNEL(name, body, is_q4)                                                                                          \
    PK_ATTR static void name(int64_t nb, const uint8_t *grp, const void *act, size_t act_rb, int nt, float *out,       \
                             int64_t out_stride, uint32_t mask, bool accumulate) {                                     \
        const __mmask16 m = (__mmask16)mask;                                                                            \
        switch (nt) {                                                                                                   \
        case 8: body(is_q4, nb, grp, act, act_rb, 8, out, out_stride, m, accumulate); break;                         \
        case 7: body(is_q4, nb, grp, act, act_rb, 7, out, out_stride, m, accumulate); break;                         \
        case 6: body(is_q4, nb, grp, act, act_rb, 6, out, out_stride, m, accumulate); break;                         \
        case 5: body(is_q4, nb, grp, act, act_rb, 5, out, out_stride, m, accumulate); break;                         \
        case 4: body(is_q4, nb, grp, act, act_rb, 4, out, out_stride, m, accumulate); break;                         \
        case 3: body(is_q4, nb, grp, act, act_rb, 3, out, out_stride, m, accumulate); break;                         \
        case 2: body(is_q4, nb, grp, act, act_rb, 2, out, out_stride, m, accumulate); break;                         \
        default: body(is_q4, nb, grp, act, act_rb, 1, out, out_stride, m, accumulate); break;                        \
        }                                                                                                               \
    }
PK_KERNEL(pk_q4_0_vnni, pk_body, true)
PK_KERNEL(pk_iq4_nl_vnni, pk_body_iq4nl, true)
PK_KERNEL(pk_q8_0_vnni, pk_body, false)

/* Q4_K / Q5_K (has_qh): per superblock the exact integer sums of ggml's q4_K x q8_K dot:
 * isum = sum_j sc_j * (q_j . y_j) (vpdpbusd per sub-block, vpmulld by the row's scale) and
 * msum = sum_j m_j * ysum_j (vpdpwssd on the min pairs), then
 * acc += d * dy * isum - dmin * dy * msum. nb here counts superblocks. */
PK_INLINE void pk_k45_body(const bool has_qh, int64_t nb, const uint8_t *grp, const void *act, size_t act_rb, const int NT,
                           float *out, int64_t out_stride, __mmask16 mask, bool accumulate) {
    const size_t sbb = has_qh ? PK_Q5K_BYTES : PK_Q4K_BYTES;
    const __m512i m4 = _mm512_set1_epi8(0x0F), b4 = _mm512_set1_epi8(0x10);
    __m512 acc[PK_MAX_TOK];
    for (int t = 0; t < NT; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *pb = grp + (size_t)i * sbb;
        __m512i isum[PK_MAX_TOK];
        for (int t = 0; t < NT; t++) isum[t] = _mm512_setzero_si512();
        PK_UNROLL for (int c = 0; c < 4; c++)
            PK_UNROLL for (int h = 0; h < 2; h++) {
                const __m512i sc = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(pb + PK_K_SC + 16 * (2 * c + h))));
                __m512i w[8];
                PK_UNROLL for (int k = 0; k < 8; k++) {
                    const __m512i p = _mm512_loadu_si512((const void *)(pb + PK_K_QS + (size_t)(c * 8 + k) * 64));
                    w[k] = h ? _mm512_and_si512(_mm512_srli_epi16(p, 4), m4) : _mm512_and_si512(p, m4);
                    if (has_qh) {
                        /* bit 2c + h of each qh byte to bit 4 (epi16 shifts: the 0x10 mask keeps
                         * only bits that stayed in their byte) */
                        const __m512i qh = _mm512_loadu_si512((const void *)(pb + PK_Q5K_QH + (size_t)k * 64));
                        const int sh = 4 - (2 * c + h);
                        const __m512i hb = sh >= 0 ? _mm512_slli_epi16(qh, (unsigned)sh) : _mm512_srli_epi16(qh, (unsigned)-sh);
                        w[k] = _mm512_ternarylogic_epi32(w[k], hb, b4, 0xF8); /* w | (hb & 0x10) */
                    }
                }
                for (int t = 0; t < NT; t++) {
                    const blk_q8ks *y = (const blk_q8ks *)(const void *)((const uint8_t *)act + (size_t)t * act_rb) + i;
                    const int8_t *yq = y->qs + 64 * c + 32 * h;
                    __m512i s = _mm512_setzero_si512();
                    for (int k = 0; k < 8; k++) s = _mm512_dpbusd_epi32(s, w[k], _mm512_set1_epi32(pk_load4(yq + 4 * k)));
                    isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(s, sc));
                }
            }
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(pb + PK_K_D)));
        const __m512 dm = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(pb + PK_K_DMIN)));
        __m512i mn[4];
        for (int q = 0; q < 4; q++) mn[q] = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(const void *)(pb + PK_K_MN + 32 * q)));
        for (int t = 0; t < NT; t++) {
            const blk_q8ks *y = (const blk_q8ks *)(const void *)((const uint8_t *)act + (size_t)t * act_rb) + i;
            __m512i ms = _mm512_setzero_si512();
            for (int q = 0; q < 4; q++) {
                int32_t pair;
                memcpy(&pair, y->bs32 + 2 * q, 4);
                ms = _mm512_dpwssd_epi32(ms, mn[q], _mm512_set1_epi32(pair));
            }
            const __m512 dy = _mm512_set1_ps(y->d);
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(dw, dy), acc[t]);
            acc[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(ms), _mm512_mul_ps(dm, dy), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++) {
        float *o = out + (int64_t)t * out_stride;
        __m512 v = acc[t];
        if (accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, o));
        _mm512_mask_storeu_ps(o, mask, v);
    }
}

#define PK_KKERNEL(name, has_qh)                                                                                        \
    PK_ATTR static void name(int64_t nb, const uint8_t *grp, const void *act, size_t act_rb, int nt, float *out,       \
                             int64_t out_stride, uint32_t mask, bool accumulate) {                                     \
        const __mmask16 m = (__mmask16)mask;                                                                            \
        switch (nt) {                                                                                                   \
        case 8: pk_k45_body(has_qh, nb, grp, act, act_rb, 8, out, out_stride, m, accumulate); break;                    \
        case 7: pk_k45_body(has_qh, nb, grp, act, act_rb, 7, out, out_stride, m, accumulate); break;                    \
        case 6: pk_k45_body(has_qh, nb, grp, act, act_rb, 6, out, out_stride, m, accumulate); break;                    \
        case 5: pk_k45_body(has_qh, nb, grp, act, act_rb, 5, out, out_stride, m, accumulate); break;                    \
        case 4: pk_k45_body(has_qh, nb, grp, act, act_rb, 4, out, out_stride, m, accumulate); break;                    \
        case 3: pk_k45_body(has_qh, nb, grp, act, act_rb, 3, out, out_stride, m, accumulate); break;                    \
        case 2: pk_k45_body(has_qh, nb, grp, act, act_rb, 2, out, out_stride, m, accumulate); break;                    \
        default: pk_k45_body(has_qh, nb, grp, act, act_rb, 1, out, out_stride, m, accumulate); break;                   \
        }                                                                                                               \
    }
PK_KKERNEL(pk_q4_K_vnni, false)
PK_KKERNEL(pk_q5_K_vnni, true)

/* Q6_K: per sub-block j of 16 elements the exact sum sc_j * (u . y_j - 32 * ysum_j), u = q + 32
 * in [0, 64) (vpdpbusd from -32 * ysum_j, vpmulld by the row's int8 scale), summed over the
 * superblock as integers (ggml's q6_K x q8_K), then acc += d * dy * isum. The weight bytes
 * of one sub-block (4 steps of 16 rows x 4 elements: nibble | 2 qh bits << 4) are built once
 * for all the tokens. nb counts superblocks. */
PK_INLINE void pk_q6k_body(int64_t nb, const uint8_t *grp, const void *act, size_t act_rb, const int NT, float *out,
                           int64_t out_stride, __mmask16 mask, bool accumulate) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
    __m512 acc[PK_MAX_TOK];
    for (int t = 0; t < NT; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *pb = grp + (size_t)i * PK_Q6K_BYTES;
        __m512i isum[PK_MAX_TOK];
        for (int t = 0; t < NT; t++) isum[t] = _mm512_setzero_si512();
        PK_UNROLL for (int h = 0; h < 2; h++)
            PK_UNROLL for (int m = 0; m < 4; m++)
                PK_UNROLL for (int kh = 0; kh < 2; kh++) {
                    const int j = 8 * h + 2 * m + kh;
                    const __m512i sc = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(pb + PK_Q6K_SC + 16 * j)));
                    __m512i w[4];
                    PK_UNROLL for (int kk = 0; kk < 4; kk++) {
                        const int k = 4 * kh + kk;
                        const __m512i ql = _mm512_loadu_si512((const void *)(pb + PK_Q6K_QL(h, m & 1, k)));
                        const __m512i qh = _mm512_loadu_si512((const void *)(pb + PK_Q6K_QH(h, k)));
                        const __m512i lo = m < 2 ? _mm512_and_si512(ql, m4) : _mm512_and_si512(_mm512_srli_epi16(ql, 4), m4);
                        /* bits 2m, 2m+1 of each qh byte to bits 4, 5 (the 0x30 mask drops what crossed bytes) */
                        const __m512i hb = m == 0 ? _mm512_slli_epi16(qh, 4) : m == 1 ? _mm512_slli_epi16(qh, 2)
                                         : m == 2 ? qh : _mm512_srli_epi16(qh, 2);
                        w[kk] = _mm512_ternarylogic_epi32(lo, hb, m30, 0xF8); /* lo | (hb & 0x30) */
                    }
                    for (int t = 0; t < NT; t++) {
                        const blk_q8ks *y = (const blk_q8ks *)(const void *)((const uint8_t *)act + (size_t)t * act_rb) + i;
                        const int8_t *yq = y->qs + 128 * h + 32 * m + 16 * kh;
                        __m512i s = _mm512_set1_epi32(-32 * (int32_t)y->bs16[j]);
                        PK_UNROLL for (int kk = 0; kk < 4; kk++) s = _mm512_dpbusd_epi32(s, w[kk], _mm512_set1_epi32(pk_load4(yq + 4 * kk)));
                        isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(s, sc));
                    }
                }
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(pb + PK_Q6K_D)));
        for (int t = 0; t < NT; t++) {
            const blk_q8ks *y = (const blk_q8ks *)(const void *)((const uint8_t *)act + (size_t)t * act_rb) + i;
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(dw, _mm512_set1_ps(y->d)), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++) {
        float *o = out + (int64_t)t * out_stride;
        __m512 v = acc[t];
        if (accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, o));
        _mm512_mask_storeu_ps(o, mask, v);
    }
}

/* Q6_K for 1-3 tokens (decode): the same exact sums as pk_q6k_body, but the superblock is
 * read once in storage order: per half h and step k the three adjacent lines (two ql, one
 * qh) give the four weight vectors of m = 0..3 (sub-block 8h + 2m + k / 4), summed into 8
 * per-sub-block accumulators per token; no line is loaded twice. (In cache 2.4x the
 * file-layout kernel; from DRAM about even with it only since the lines are in this
 * order: three interleaved 8-line streams per superblock ran at half speed.) */
PK_INLINE void pk_q6k_gemv_body(int64_t nb, const uint8_t *grp, const void *act, size_t act_rb, const int NT, float *out,
                                int64_t out_stride, __mmask16 mask, bool accumulate) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
    __m512 acc[3];
    for (int t = 0; t < NT; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *pb = grp + (size_t)i * PK_Q6K_BYTES;
        __m512i isum[3];
        for (int t = 0; t < NT; t++) isum[t] = _mm512_setzero_si512();
        PK_UNROLL for (int h = 0; h < 2; h++) {
            __m512i s[3][8];
            for (int t = 0; t < NT; t++) {
                const blk_q8ks *y = (const blk_q8ks *)(const void *)((const uint8_t *)act + (size_t)t * act_rb) + i;
                PK_UNROLL for (int q = 0; q < 8; q++) s[t][q] = _mm512_set1_epi32(-32 * (int32_t)y->bs16[8 * h + q]);
            }
            PK_UNROLL for (int k = 0; k < 8; k++) {
                const __m512i qh = _mm512_loadu_si512((const void *)(pb + PK_Q6K_QH(h, k)));
                const __m512i qa = _mm512_loadu_si512((const void *)(pb + PK_Q6K_QL(h, 0, k)));
                const __m512i qb = _mm512_loadu_si512((const void *)(pb + PK_Q6K_QL(h, 1, k)));
                __m512i w[4];
                w[0] = _mm512_ternarylogic_epi32(_mm512_and_si512(qa, m4), _mm512_slli_epi16(qh, 4), m30, 0xF8);
                w[1] = _mm512_ternarylogic_epi32(_mm512_and_si512(qb, m4), _mm512_slli_epi16(qh, 2), m30, 0xF8);
                w[2] = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(qa, 4), m4), qh, m30, 0xF8);
                w[3] = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(qb, 4), m4), _mm512_srli_epi16(qh, 2), m30, 0xF8);
                for (int t = 0; t < NT; t++) {
                    const blk_q8ks *y = (const blk_q8ks *)(const void *)((const uint8_t *)act + (size_t)t * act_rb) + i;
                    PK_UNROLL for (int m = 0; m < 4; m++) {
                        const int8_t *yq = y->qs + 128 * h + 32 * m + 4 * k; /* step k of m: element 32m + 4k */
                        s[t][2 * m + k / 4] = _mm512_dpbusd_epi32(s[t][2 * m + k / 4], w[m], _mm512_set1_epi32(pk_load4(yq)));
                    }
                }
            }
            PK_UNROLL for (int q = 0; q < 8; q++) {
                const __m512i sc = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(pb + PK_Q6K_SC + 16 * (8 * h + q))));
                for (int t = 0; t < NT; t++) isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(s[t][q], sc));
            }
        }
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(pb + PK_Q6K_D)));
        for (int t = 0; t < NT; t++) {
            const blk_q8ks *y = (const blk_q8ks *)(const void *)((const uint8_t *)act + (size_t)t * act_rb) + i;
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(dw, _mm512_set1_ps(y->d)), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++) {
        float *o = out + (int64_t)t * out_stride;
        __m512 v = acc[t];
        if (accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, o));
        _mm512_mask_storeu_ps(o, mask, v);
    }
}

PK_ATTR static void pk_q6_K_vnni(int64_t nb, const uint8_t *grp, const void *act, size_t act_rb, int nt, float *out,
                                 int64_t out_stride, uint32_t mask, bool accumulate) {
    const __mmask16 m = (__mmask16)mask;
    switch (nt) {
    case 8: pk_q6k_body(nb, grp, act, act_rb, 8, out, out_stride, m, accumulate); break;
    case 7: pk_q6k_body(nb, grp, act, act_rb, 7, out, out_stride, m, accumulate); break;
    case 6: pk_q6k_body(nb, grp, act, act_rb, 6, out, out_stride, m, accumulate); break;
    case 5: pk_q6k_body(nb, grp, act, act_rb, 5, out, out_stride, m, accumulate); break;
    case 4: pk_q6k_body(nb, grp, act, act_rb, 4, out, out_stride, m, accumulate); break;
    case 3: pk_q6k_gemv_body(nb, grp, act, act_rb, 3, out, out_stride, m, accumulate); break;
    case 2: pk_q6k_gemv_body(nb, grp, act, act_rb, 2, out, out_stride, m, accumulate); break;
    default: pk_q6k_gemv_body(nb, grp, act, act_rb, 1, out, out_stride, m, accumulate); break;
    }
}

void mm_packed_install_avx512(mm_kernels *k) {
    k->packed[QT_Q6_K] = pk_q6_K_vnni;
    k->packed[QT_Q4_K] = pk_q4_K_vnni;
    k->packed[QT_Q5_K] = pk_q5_K_vnni;
    k->packed[QT_Q4_0] = pk_q4_0_vnni;
    k->packed[QT_IQ4_NL] = pk_iq4_nl_vnni;
    k->packed[QT_Q8_0] = pk_q8_0_vnni;
}
