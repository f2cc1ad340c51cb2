/* matmul_kq_x86: the x86 SIMD dot kernels of the K-quant weight types (Q2_K..Q6_K against
 * Q8_K), written once and included by matmul_avx2.c and matmul_avx512.c. The includer
 * defines KQ_ATTR (function attributes), KQ_DPWSSD(acc, a, b) (acc + the int32 pair sums
 * of int16 a * b: madd + add on AVX2, one vpdpwssd with AVX512-VNNI) and KQ_SUFFIX (name
 * suffix of the exported kernels). Each kernel decodes a weight block once and applies
 * it to up to MM_MAX_TOK tokens (the NT parameter), so prompt batches reuse weight reads. */
#include <immintrin.h>
#include <stdbool.h>
#include "cpu_kernels.h"

#define KQ_INLINE static inline __attribute__((always_inline)) KQ_ATTR
#define KQ_CAT2(a, b) a##b
#define KQ_CAT(a, b) KQ_CAT2(a, b)
#define KQ_ACT(x, xs, t) ((const void *)((const uint8_t *)(x) + (size_t)(t) * (xs)))

KQ_INLINE float kq_hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
KQ_INLINE float kq_f16(uint16_t h) { return _cvtsh_ss(h); }
KQ_INLINE __m256i kq_load256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }


/* int16 scale a in the low 128-bit lane, b in the high one (two 16-element sub-blocks). */
KQ_INLINE __m256i kq_pair_scales(int a, int b) {
    return _mm256_set_m128i(_mm_set1_epi16((short)b), _mm_set1_epi16((short)a));
}

/* Adds sc_lo * (u . y[0..16)) + sc_hi * (u . y[16..32)) to sumi. */
KQ_INLINE __m256i kq_acc_scaled(__m256i sumi, __m256i u, const int8_t *y, __m256i scales) {
    return KQ_DPWSSD(sumi, _mm256_maddubs_epi16(u, kq_load256(y)), scales);
}

/* Q4_K and Q5_K (q5: a fifth bit per weight in qh): eight 6-bit (scale, min) pairs per
 * block; dot = d * dx * sum sc * (q . y) - dmin * dx * sum min * bsum. Both blocks start with
 * d, dmin, scales[12]; has_qh is a compile-time constant at every call. */
KQ_INLINE void kq_q45_K_body(int64_t n, const void *w, const void *x, size_t xs, const int NT, float *res, const bool has_qh) {
    __m256 acc[MM_MAX_TOK];
    for (int t = 0; t < NT; t++) acc[t] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
    const size_t block_bytes = has_qh ? sizeof(block_q5_K) : sizeof(block_q4_K);
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *blk = (const uint8_t *)w + (size_t)i * block_bytes;
        const block_q4_K *b4 = (const block_q4_K *)(const void *)blk;
        const block_q5_K *b5 = (const block_q5_K *)(const void *)blk;
        const uint8_t *qs = has_qh ? b5->qs : b4->qs;
        uint32_t ut[4];
        memcpy(ut, b4->scales, 12);
        ut[3] = ((ut[2] >> 4) & 0x0f0f0f0fu) | (((ut[1] >> 6) & 0x03030303u) << 4);
        const uint32_t uaux = ut[1] & 0x3f3f3f3fu;
        ut[1] = (ut[2] & 0x0f0f0f0fu) | (((ut[0] >> 6) & 0x03030303u) << 4);
        ut[2] = uaux;
        ut[0] &= 0x3f3f3f3fu;
        const uint8_t *sc = (const uint8_t *)ut, *mn = sc + 8;
        /* mins duplicated per 16-element sub-block, against bsums */
        const __m128i m8 = _mm_loadl_epi64((const __m128i *)(const void *)mn);
        const __m256i mins = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));
        const float d = kq_f16(b4->d), dmin = kq_f16(b4->dmin);
        __m256i hbits = has_qh ? kq_load256(b5->qh) : _mm256_setzero_si256();
        __m256i sumi[MM_MAX_TOK];
        for (int t = 0; t < NT; t++) sumi[t] = _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {
            const __m256i q = kq_load256(qs + 32 * j);
            __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            if (has_qh) {
                lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(hbits, one), 4));
                hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 1), one), 4));
                hbits = _mm256_srli_epi16(hbits, 2);
            }
            const __m256i s_lo = _mm256_set1_epi16(sc[2 * j]), s_hi = _mm256_set1_epi16(sc[2 * j + 1]);
            for (int t = 0; t < NT; t++) {
                const block_q8_K *y = (const block_q8_K *)KQ_ACT(x, xs, t) + i;
                sumi[t] = kq_acc_scaled(sumi[t], lo, y->qs + 64 * j, s_lo);
                sumi[t] = kq_acc_scaled(sumi[t], hi, y->qs + 64 * j + 32, s_hi);
            }
        }
        for (int t = 0; t < NT; t++) {
            const block_q8_K *y = (const block_q8_K *)KQ_ACT(x, xs, t) + i;
            const __m256i pm = _mm256_madd_epi16(mins, kq_load256(y->bsums));
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * y->d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
            acc[t] = _mm256_fnmadd_ps(_mm256_set1_ps(dmin * y->d), _mm256_cvtepi32_ps(pm), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++) res[t] = kq_hsum(acc[t]);
}

KQ_INLINE void kq_q4_K_body(int64_t n, const void *w, const void *x, size_t xs, const int NT, float *res) {
    kq_q45_K_body(n, w, x, xs, NT, res, false);
}

KQ_INLINE void kq_q5_K_body(int64_t n, const void *w, const void *x, size_t xs, const int NT, float *res) {
    kq_q45_K_body(n, w, x, xs, NT, res, true);
}

/* Q6_K: u = q + 32 in [0, 64); dot = d * dx * (sum sc * (u . y) - 32 * sum sc * bsum). */
KQ_INLINE void kq_q6_K_body(int64_t n, const void *w, const void *x, size_t xs, const int NT, float *res) {
    __m256 acc[MM_MAX_TOK];
    for (int t = 0; t < NT; t++) acc[t] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0F), m3 = _mm256_set1_epi8(3);
    for (int64_t i = 0; i < n / QK_K; i++) {
        const block_q6_K *b = (const block_q6_K *)w + i;
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)b->scales));
        const float d = kq_f16(b->d);
        __m256i sumi[MM_MAX_TOK];
        for (int t = 0; t < NT; t++) {
            const block_q8_K *y = (const block_q8_K *)KQ_ACT(x, xs, t) + i;
            sumi[t] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(_mm256_madd_epi16(sc16, kq_load256(y->bsums)), 5));
        }
        for (int h = 0; h < 2; h++) {
            const __m256i ql1 = kq_load256(b->ql + 64 * h), ql2 = kq_load256(b->ql + 64 * h + 32), qh = kq_load256(b->qh + 32 * h);
            for (int k = 0; k < 4; k++) {
                const __m256i ql = (k & 1) ? ql2 : ql1;
                const __m256i lo4 = (k < 2) ? _mm256_and_si256(ql, m4) : _mm256_and_si256(_mm256_srli_epi16(ql, 4), m4);
                __m256i hi2;
                if (k == 0) hi2 = _mm256_and_si256(qh, m3);
                else if (k == 1) hi2 = _mm256_and_si256(_mm256_srli_epi16(qh, 2), m3);
                else if (k == 2) hi2 = _mm256_and_si256(_mm256_srli_epi16(qh, 4), m3);
                else hi2 = _mm256_and_si256(_mm256_srli_epi16(qh, 6), m3);
                const __m256i u = _mm256_or_si256(lo4, _mm256_slli_epi16(hi2, 4));
                const __m256i s = kq_pair_scales(b->scales[8 * h + 2 * k], b->scales[8 * h + 2 * k + 1]);
                for (int t = 0; t < NT; t++) {
                    const block_q8_K *y = (const block_q8_K *)KQ_ACT(x, xs, t) + i;
                    sumi[t] = kq_acc_scaled(sumi[t], u, y->qs + 128 * h + 32 * k, s);
                }
            }
        }
        for (int t = 0; t < NT; t++) {
            const block_q8_K *y = (const block_q8_K *)KQ_ACT(x, xs, t) + i;
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * y->d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++) res[t] = kq_hsum(acc[t]);
}

/* Q2_K: u in [0, 4), min per sub-block; Q3_K: u = q + 4 in [0, 8), no min, signed scales. */
KQ_INLINE void kq_q23_K_body(bool is_q3, int64_t n, const void *w, const void *x, size_t xs, const int NT, float *res) {
    __m256 acc[MM_MAX_TOK];
    for (int t = 0; t < NT; t++) acc[t] = _mm256_setzero_ps();
    const __m256i m3 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
    for (int64_t i = 0; i < n / QK_K; i++) {
        int16_t sc[16];
        __m256i minus; /* per sub-block constant subtracted: dmin*m (Q2_K) or 4*sc (Q3_K), as int16 */
        float d, dmin;
        const uint8_t *qs;
        __m256i hcur = _mm256_setzero_si256();
        if (is_q3) {
            const block_q3_K *b = (const block_q3_K *)w + i;
            int8_t s8[16];
            q3k_scales(b->scales, s8);
            for (int j = 0; j < 16; j++) sc[j] = s8[j];
            minus = _mm256_slli_epi16(_mm256_loadu_si256((const __m256i *)(const void *)sc), 2);
            d = kq_f16(b->d); dmin = d;
            qs = b->qs;
            hcur = kq_load256(b->hmask);
        } else {
            const block_q2_K *b = (const block_q2_K *)w + i;
            for (int j = 0; j < 16; j++) sc[j] = b->scales[j] & 0xF;
            const __m128i s8 = _mm_loadu_si128((const __m128i *)(const void *)b->scales);
            minus = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s8, 4), _mm_set1_epi8(0x0F)));
            d = kq_f16(b->d); dmin = kq_f16(b->dmin);
            qs = b->qs;
        }
        __m256i sumi[MM_MAX_TOK];
        for (int t = 0; t < NT; t++) sumi[t] = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const __m256i q = kq_load256(qs + 32 * h);
            for (int k = 0; k < 4; k++) {
                __m256i u;
                if (k == 0) u = _mm256_and_si256(q, m3);
                else if (k == 1) u = _mm256_and_si256(_mm256_srli_epi16(q, 2), m3);
                else if (k == 2) u = _mm256_and_si256(_mm256_srli_epi16(q, 4), m3);
                else u = _mm256_and_si256(_mm256_srli_epi16(q, 6), m3);
                if (is_q3) {
                    u = _mm256_or_si256(u, _mm256_slli_epi16(_mm256_and_si256(hcur, one), 2));
                    hcur = _mm256_srli_epi16(hcur, 1);
                }
                const __m256i s = kq_pair_scales(sc[8 * h + 2 * k], sc[8 * h + 2 * k + 1]);
                for (int t = 0; t < NT; t++) {
                    const block_q8_K *y = (const block_q8_K *)KQ_ACT(x, xs, t) + i;
                    sumi[t] = kq_acc_scaled(sumi[t], u, y->qs + 128 * h + 32 * k, s);
                }
            }
        }
        for (int t = 0; t < NT; t++) {
            const block_q8_K *y = (const block_q8_K *)KQ_ACT(x, xs, t) + i;
            const __m256i pm = _mm256_madd_epi16(minus, kq_load256(y->bsums));
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * y->d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
            acc[t] = _mm256_fnmadd_ps(_mm256_set1_ps(dmin * y->d), _mm256_cvtepi32_ps(pm), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++) res[t] = kq_hsum(acc[t]);
}

KQ_INLINE void kq_q2_K_body(int64_t n, const void *w, const void *x, size_t xs, const int NT, float *res) { kq_q23_K_body(false, n, w, x, xs, NT, res); }
KQ_INLINE void kq_q3_K_body(int64_t n, const void *w, const void *x, size_t xs, const int NT, float *res) { kq_q23_K_body(true, n, w, x, xs, NT, res); }

#ifdef KQ_ROWS4
/* ---- four weight rows x NT tokens (KQ_ROWS4: only where 32 vector registers hold the
 * 4 x NT accumulators): rows share each activation load, and the block epilogue (scales,
 * mins against bsums) runs once per token for four rows as one 4-wide vector. ---- */

/* Lanes [r0, r1, r2, r3] of the int32 sums of four 8-lane vectors. */
KQ_INLINE __m128i kq_hsum4_epi32(__m256i a, __m256i b, __m256i c, __m256i d) {
    const __m256i s = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
    return _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
}

/* 6-bit scales (sc[0..8)) and mins (sc[8..16)) of a Q4_K/Q5_K block. */
KQ_INLINE void kq_k4_scales(const uint8_t *packed, uint32_t ut[4]) {
    memcpy(ut, packed, 12);
    ut[3] = ((ut[2] >> 4) & 0x0f0f0f0fu) | (((ut[1] >> 6) & 0x03030303u) << 4);
    const uint32_t uaux = ut[1] & 0x3f3f3f3fu;
    ut[1] = (ut[2] & 0x0f0f0f0fu) | (((ut[0] >> 6) & 0x03030303u) << 4);
    ut[2] = uaux;
    ut[0] &= 0x3f3f3f3fu;
}

/* Q4_K (is_q5 false) or Q5_K: res[t * 4 + r]. The two block types share the scale layout;
 * Q5_K adds the 5th bit from qh. */
KQ_INLINE void kq_k45_rows4_body(bool is_q5, int64_t n, const void *w, size_t w_rb, const void *x, size_t xs, const int NT, float *res) {
    __m128 acc[MM_MAX_TOK];
    for (int t = 0; t < NT; t++) acc[t] = _mm_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
    const size_t bsize = is_q5 ? sizeof(block_q5_K) : sizeof(block_q4_K);
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *blk[4];
        uint32_t ut[4][4];
        __m256i mins[4], hbits[4];
        float d[4], dmin[4];
        for (int r = 0; r < 4; r++) {
            blk[r] = (const uint8_t *)w + (size_t)r * w_rb + (size_t)i * bsize;
            const uint8_t *scales = is_q5 ? ((const block_q5_K *)(const void *)blk[r])->scales : ((const block_q4_K *)(const void *)blk[r])->scales;
            const uint16_t dh = is_q5 ? ((const block_q5_K *)(const void *)blk[r])->d : ((const block_q4_K *)(const void *)blk[r])->d;
            const uint16_t mh = is_q5 ? ((const block_q5_K *)(const void *)blk[r])->dmin : ((const block_q4_K *)(const void *)blk[r])->dmin;
            kq_k4_scales(scales, ut[r]);
            const __m128i m8 = _mm_loadl_epi64((const __m128i *)(const void *)((const uint8_t *)ut[r] + 8));
            mins[r] = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));
            d[r] = kq_f16(dh);
            dmin[r] = kq_f16(mh);
            hbits[r] = is_q5 ? kq_load256(((const block_q5_K *)(const void *)blk[r])->qh) : _mm256_setzero_si256();
        }
        __m256i sumi[MM_MAX_TOK][4];
        for (int t = 0; t < NT; t++)
            for (int r = 0; r < 4; r++) sumi[t][r] = _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {
            for (int r = 0; r < 4; r++) {
                const uint8_t *qs = is_q5 ? ((const block_q5_K *)(const void *)blk[r])->qs : ((const block_q4_K *)(const void *)blk[r])->qs;
                const __m256i q = kq_load256(qs + 32 * j);
                __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
                if (is_q5) {
                    lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(hbits[r], one), 4));
                    hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits[r], 1), one), 4));
                    hbits[r] = _mm256_srli_epi16(hbits[r], 2);
                }
                const uint8_t *sc = (const uint8_t *)ut[r];
                const __m256i s_lo = _mm256_set1_epi16(sc[2 * j]), s_hi = _mm256_set1_epi16(sc[2 * j + 1]);
                for (int t = 0; t < NT; t++) {
                    const block_q8_K *y = (const block_q8_K *)KQ_ACT(x, xs, t) + i;
                    sumi[t][r] = kq_acc_scaled(sumi[t][r], lo, y->qs + 64 * j, s_lo);
                    sumi[t][r] = kq_acc_scaled(sumi[t][r], hi, y->qs + 64 * j + 32, s_hi);
                }
            }
        }
        const __m128 d4 = _mm_loadu_ps(d), dmin4 = _mm_loadu_ps(dmin);
        for (int t = 0; t < NT; t++) {
            const block_q8_K *y = (const block_q8_K *)KQ_ACT(x, xs, t) + i;
            const __m256i bs = kq_load256(y->bsums);
            const __m128i s4 = kq_hsum4_epi32(sumi[t][0], sumi[t][1], sumi[t][2], sumi[t][3]);
            const __m128i m4s = kq_hsum4_epi32(_mm256_madd_epi16(mins[0], bs), _mm256_madd_epi16(mins[1], bs),
                                               _mm256_madd_epi16(mins[2], bs), _mm256_madd_epi16(mins[3], bs));
            const __m128 yd = _mm_set1_ps(y->d);
            acc[t] = _mm_fmadd_ps(_mm_mul_ps(d4, yd), _mm_cvtepi32_ps(s4), acc[t]);
            acc[t] = _mm_fnmadd_ps(_mm_mul_ps(dmin4, yd), _mm_cvtepi32_ps(m4s), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++) _mm_storeu_ps(res + 4 * t, acc[t]);
}

#define KQ_ROWS4_KERNEL(tag, is_q5)                                                                                      \
    KQ_ATTR static void KQ_CAT(dot4_##tag, KQ_SUFFIX)(int64_t n, const void *w, size_t w_rb, const void *x, size_t xs,  \
                                                      int nt, float *res) {                                             \
        switch (nt) {                                                                                                    \
        case 4: kq_k45_rows4_body(is_q5, n, w, w_rb, x, xs, 4, res); break;                                              \
        case 3: kq_k45_rows4_body(is_q5, n, w, w_rb, x, xs, 3, res); break;                                              \
        case 2: kq_k45_rows4_body(is_q5, n, w, w_rb, x, xs, 2, res); break;                                              \
        default: kq_k45_rows4_body(is_q5, n, w, w_rb, x, xs, 1, res); break;                                             \
        }                                                                                                                \
    }
KQ_ROWS4_KERNEL(q4_K, false)
KQ_ROWS4_KERNEL(q5_K, true)
#endif

#define KQ_KERNEL(tag)                                                                                                   \
    KQ_ATTR static void KQ_CAT(dot_##tag, KQ_SUFFIX)(int64_t n, const void *w, const void *x, size_t xs, int nt,        \
                                                     float *res) {                                                      \
        switch (nt) {                                                                                                    \
        case 4: kq_##tag##_body(n, w, x, xs, 4, res); break;                                                             \
        case 3: kq_##tag##_body(n, w, x, xs, 3, res); break;                                                             \
        case 2: kq_##tag##_body(n, w, x, xs, 2, res); break;                                                             \
        default: kq_##tag##_body(n, w, x, xs, 1, res); break;                                                            \
        }                                                                                                                \
    }
KQ_KERNEL(q2_K)
KQ_KERNEL(q3_K)
KQ_KERNEL(q4_K)
KQ_KERNEL(q5_K)
KQ_KERNEL(q6_K)

/* Installs the kernels above into a table. */
static inline void kq_install(mm_kernels *k) {
    k->dot[QT_Q2_K] = KQ_CAT(dot_q2_K, KQ_SUFFIX);
    k->dot[QT_Q3_K] = KQ_CAT(dot_q3_K, KQ_SUFFIX);
    k->dot[QT_Q4_K] = KQ_CAT(dot_q4_K, KQ_SUFFIX);
    k->dot[QT_Q5_K] = KQ_CAT(dot_q5_K, KQ_SUFFIX);
    k->dot[QT_Q6_K] = KQ_CAT(dot_q6_K, KQ_SUFFIX);
#ifdef KQ_ROWS4
    k->dot4[QT_Q4_K] = KQ_CAT(dot4_q4_K, KQ_SUFFIX);
    k->dot4[QT_Q5_K] = KQ_CAT(dot4_q5_K, KQ_SUFFIX);
    k->dot4_nt[QT_Q4_K] = k->dot4_nt[QT_Q5_K] = 4;
#endif
}
