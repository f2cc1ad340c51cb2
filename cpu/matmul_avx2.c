/* matmul_avx2: AVX2/FMA/F16C dot kernels for the CPU matmul (see cpu_kernels.h), used
 * only after a run-time CPU check. Integer dot products with maddubs/madd against the
 * Q8 activations; each kernel decodes a weight block once and applies it to up to
 * MM_MAX_TOK tokens (the NT template parameter), so prompt batches reuse weight reads. */
#include "cpu_kernels.h"
#include "fp16.h"

#include <immintrin.h>

#define INLINE static inline __attribute__((always_inline))
#define ACT(x, xs, t) ((const void *)((const uint8_t *)(x) + (size_t)(t) * (xs)))

INLINE float hsum_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

INLINE float f16(uint16_t h) { return _cvtsh_ss(h); }

/* Sum over 32 byte pairs of u (unsigned) * s (signed), as 8 float partial sums. */
INLINE __m256i dot_u8s8_i32(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

INLINE __m256i load256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* ---- 32-element types: matmul_k32_x86.h with maddubs + madd ---- */
#define K32_ATTR
#define K32_IDOT(u, s) dot_u8s8_i32((u), (s))
#define K32_SUFFIX _avx2
#include "matmul_k32_x86.h"

/* ---- K-quants against Q8_K ---- */

/* int16 scale a in the low 128-bit lane, b in the high one (two 16-element sub-blocks). */
INLINE __m256i pair_scales(int a, int b) {
    return _mm256_set_m128i(_mm_set1_epi16((short)b), _mm_set1_epi16((short)a));
}

/* Adds sc_lo * (u . y[0..16)) + sc_hi * (u . y[16..32)) to sumi. */
INLINE __m256i acc_scaled(__m256i sumi, __m256i u, const int8_t *y, __m256i scales) {
    return _mm256_add_epi32(sumi, _mm256_madd_epi16(_mm256_maddubs_epi16(u, load256(y)), scales));
}

INLINE void dot_q4_K_body(int64_t n, const void *w, const void *x, size_t xs, const int NT, float *res) {
    __m256 acc[MM_MAX_TOK];
    for (int t = 0; t < NT; t++) acc[t] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int64_t i = 0; i < n / QK_K; i++) {
        const block_q4_K *b = (const block_q4_K *)w + i;
        uint32_t ut[4];
        memcpy(ut, b->scales, 12);
        ut[3] = ((ut[2] >> 4) & 0x0f0f0f0fu) | (((ut[1] >> 6) & 0x03030303u) << 4);
        const uint32_t uaux = ut[1] & 0x3f3f3f3fu;
        ut[1] = (ut[2] & 0x0f0f0f0fu) | (((ut[0] >> 6) & 0x03030303u) << 4);
        ut[2] = uaux;
        ut[0] &= 0x3f3f3f3fu;
        const uint8_t *sc = (const uint8_t *)ut, *mn = sc + 8;
        /* mins duplicated per 16-element sub-block, against bsums */
        const __m128i m8 = _mm_loadl_epi64((const __m128i *)(const void *)mn);
        const __m256i mins = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));
        const float d = f16(b->d), dmin = f16(b->dmin);
        __m256i sumi[MM_MAX_TOK];
        for (int t = 0; t < NT; t++) sumi[t] = _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {
            const __m256i q = load256(b->qs + 32 * j);
            const __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            const __m256i s_lo = _mm256_set1_epi16(sc[2 * j]), s_hi = _mm256_set1_epi16(sc[2 * j + 1]);
            for (int t = 0; t < NT; t++) {
                const block_q8_K *y = (const block_q8_K *)ACT(x, xs, t) + i;
                sumi[t] = acc_scaled(sumi[t], lo, y->qs + 64 * j, s_lo);
                sumi[t] = acc_scaled(sumi[t], hi, y->qs + 64 * j + 32, s_hi);
            }
        }
        for (int t = 0; t < NT; t++) {
            const block_q8_K *y = (const block_q8_K *)ACT(x, xs, t) + i;
            const __m256i pm = _mm256_madd_epi16(mins, load256(y->bsums));
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * y->d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
            acc[t] = _mm256_fnmadd_ps(_mm256_set1_ps(dmin * y->d), _mm256_cvtepi32_ps(pm), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++) res[t] = hsum_ps(acc[t]);
}

INLINE void dot_q5_K_body(int64_t n, const void *w, const void *x, size_t xs, const int NT, float *res) {
    __m256 acc[MM_MAX_TOK];
    for (int t = 0; t < NT; t++) acc[t] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
    for (int64_t i = 0; i < n / QK_K; i++) {
        const block_q5_K *b = (const block_q5_K *)w + i;
        uint32_t ut[4];
        memcpy(ut, b->scales, 12);
        ut[3] = ((ut[2] >> 4) & 0x0f0f0f0fu) | (((ut[1] >> 6) & 0x03030303u) << 4);
        const uint32_t uaux = ut[1] & 0x3f3f3f3fu;
        ut[1] = (ut[2] & 0x0f0f0f0fu) | (((ut[0] >> 6) & 0x03030303u) << 4);
        ut[2] = uaux;
        ut[0] &= 0x3f3f3f3fu;
        const uint8_t *sc = (const uint8_t *)ut, *mn = sc + 8;
        const __m128i m8 = _mm_loadl_epi64((const __m128i *)(const void *)mn);
        const __m256i mins = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));
        const float d = f16(b->d), dmin = f16(b->dmin);
        __m256i hbits = load256(b->qh);
        __m256i sumi[MM_MAX_TOK];
        for (int t = 0; t < NT; t++) sumi[t] = _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {
            const __m256i q = load256(b->qs + 32 * j);
            const __m256i h_lo = _mm256_slli_epi16(_mm256_and_si256(hbits, one), 4);
            const __m256i h_hi = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 1), one), 4);
            hbits = _mm256_srli_epi16(hbits, 2);
            const __m256i lo = _mm256_or_si256(_mm256_and_si256(q, m4), h_lo);
            const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4), h_hi);
            const __m256i s_lo = _mm256_set1_epi16(sc[2 * j]), s_hi = _mm256_set1_epi16(sc[2 * j + 1]);
            for (int t = 0; t < NT; t++) {
                const block_q8_K *y = (const block_q8_K *)ACT(x, xs, t) + i;
                sumi[t] = acc_scaled(sumi[t], lo, y->qs + 64 * j, s_lo);
                sumi[t] = acc_scaled(sumi[t], hi, y->qs + 64 * j + 32, s_hi);
            }
        }
        for (int t = 0; t < NT; t++) {
            const block_q8_K *y = (const block_q8_K *)ACT(x, xs, t) + i;
            const __m256i pm = _mm256_madd_epi16(mins, load256(y->bsums));
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * y->d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
            acc[t] = _mm256_fnmadd_ps(_mm256_set1_ps(dmin * y->d), _mm256_cvtepi32_ps(pm), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++) res[t] = hsum_ps(acc[t]);
}

/* Q6_K: u = q + 32 in [0, 64); dot = d * dx * (sum sc * (u . y) - 32 * sum sc * bsum). */
INLINE void dot_q6_K_body(int64_t n, const void *w, const void *x, size_t xs, const int NT, float *res) {
    __m256 acc[MM_MAX_TOK];
    for (int t = 0; t < NT; t++) acc[t] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0F), m3 = _mm256_set1_epi8(3);
    for (int64_t i = 0; i < n / QK_K; i++) {
        const block_q6_K *b = (const block_q6_K *)w + i;
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)b->scales));
        const float d = f16(b->d);
        __m256i sumi[MM_MAX_TOK];
        for (int t = 0; t < NT; t++) {
            const block_q8_K *y = (const block_q8_K *)ACT(x, xs, t) + i;
            sumi[t] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(_mm256_madd_epi16(sc16, load256(y->bsums)), 5));
        }
        for (int h = 0; h < 2; h++) {
            const __m256i ql1 = load256(b->ql + 64 * h), ql2 = load256(b->ql + 64 * h + 32), qh = load256(b->qh + 32 * h);
            for (int k = 0; k < 4; k++) {
                const __m256i ql = (k & 1) ? ql2 : ql1;
                const __m256i lo4 = (k < 2) ? _mm256_and_si256(ql, m4) : _mm256_and_si256(_mm256_srli_epi16(ql, 4), m4);
                __m256i hi2;
                if (k == 0) hi2 = _mm256_and_si256(qh, m3);
                else if (k == 1) hi2 = _mm256_and_si256(_mm256_srli_epi16(qh, 2), m3);
                else if (k == 2) hi2 = _mm256_and_si256(_mm256_srli_epi16(qh, 4), m3);
                else hi2 = _mm256_and_si256(_mm256_srli_epi16(qh, 6), m3);
                const __m256i u = _mm256_or_si256(lo4, _mm256_slli_epi16(hi2, 4));
                const __m256i s = pair_scales(b->scales[8 * h + 2 * k], b->scales[8 * h + 2 * k + 1]);
                for (int t = 0; t < NT; t++) {
                    const block_q8_K *y = (const block_q8_K *)ACT(x, xs, t) + i;
                    sumi[t] = acc_scaled(sumi[t], u, y->qs + 128 * h + 32 * k, s);
                }
            }
        }
        for (int t = 0; t < NT; t++) {
            const block_q8_K *y = (const block_q8_K *)ACT(x, xs, t) + i;
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * y->d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++) res[t] = hsum_ps(acc[t]);
}

/* Q2_K: u in [0, 4), min per sub-block; Q3_K: u = q + 4 in [0, 8), no min, signed scales. */
INLINE void dot_q23_K_body(bool is_q3, int64_t n, const void *w, const void *x, size_t xs, const int NT, float *res) {
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
            d = f16(b->d); dmin = d;
            qs = b->qs;
            hcur = load256(b->hmask);
        } else {
            const block_q2_K *b = (const block_q2_K *)w + i;
            for (int j = 0; j < 16; j++) sc[j] = b->scales[j] & 0xF;
            const __m128i s8 = _mm_loadu_si128((const __m128i *)(const void *)b->scales);
            minus = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s8, 4), _mm_set1_epi8(0x0F)));
            d = f16(b->d); dmin = f16(b->dmin);
            qs = b->qs;
        }
        __m256i sumi[MM_MAX_TOK];
        for (int t = 0; t < NT; t++) sumi[t] = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const __m256i q = load256(qs + 32 * h);
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
                const __m256i s = pair_scales(sc[8 * h + 2 * k], sc[8 * h + 2 * k + 1]);
                for (int t = 0; t < NT; t++) {
                    const block_q8_K *y = (const block_q8_K *)ACT(x, xs, t) + i;
                    sumi[t] = acc_scaled(sumi[t], u, y->qs + 128 * h + 32 * k, s);
                }
            }
        }
        for (int t = 0; t < NT; t++) {
            const block_q8_K *y = (const block_q8_K *)ACT(x, xs, t) + i;
            const __m256i pm = _mm256_madd_epi16(minus, load256(y->bsums));
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * y->d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
            acc[t] = _mm256_fnmadd_ps(_mm256_set1_ps(dmin * y->d), _mm256_cvtepi32_ps(pm), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++) res[t] = hsum_ps(acc[t]);
}

INLINE void dot_q2_K_body(int64_t n, const void *w, const void *x, size_t xs, const int NT, float *res) { dot_q23_K_body(false, n, w, x, xs, NT, res); }
INLINE void dot_q3_K_body(int64_t n, const void *w, const void *x, size_t xs, const int NT, float *res) { dot_q23_K_body(true, n, w, x, xs, NT, res); }

/* ---- float weights against F32 activations ---- */

typedef enum { F_F32, F_F16, F_BF16 } fkind;

INLINE __m256 load8w(fkind kind, const void *w, int64_t i) {
    if (kind == F_F32) return _mm256_loadu_ps((const float *)w + i);
    const __m128i h = _mm_loadu_si128((const __m128i *)(const void *)((const uint16_t *)w + i));
    if (kind == F_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

INLINE float load1w(fkind kind, const void *w, int64_t i) {
    if (kind == F_F32) return ((const float *)w)[i];
    if (kind == F_F16) return fp16_to_fp32(((const uint16_t *)w)[i]);
    return bf16_to_fp32(((const uint16_t *)w)[i]);
}

INLINE void dot_float_body(fkind kind, int64_t n, const void *w, const void *x, size_t xs, const int NT, float *res) {
    __m256 a0[MM_MAX_TOK], a1[MM_MAX_TOK];
    for (int t = 0; t < NT; t++) { a0[t] = _mm256_setzero_ps(); a1[t] = _mm256_setzero_ps(); }
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256 w0 = load8w(kind, w, i), w1 = load8w(kind, w, i + 8);
        for (int t = 0; t < NT; t++) {
            const float *y = (const float *)ACT(x, xs, t) + i;
            a0[t] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(y), a0[t]);
            a1[t] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(y + 8), a1[t]);
        }
    }
    for (; i + 8 <= n; i += 8) {
        const __m256 w0 = load8w(kind, w, i);
        for (int t = 0; t < NT; t++) a0[t] = _mm256_fmadd_ps(w0, _mm256_loadu_ps((const float *)ACT(x, xs, t) + i), a0[t]);
    }
    for (int t = 0; t < NT; t++) {
        float r = hsum_ps(_mm256_add_ps(a0[t], a1[t]));
        const float *y = (const float *)ACT(x, xs, t);
        for (int64_t k = i; k < n; k++) r += load1w(kind, w, k) * y[k];
        res[t] = r;
    }
}

INLINE void dot_f32_body(int64_t n, const void *w, const void *x, size_t xs, const int NT, float *res) { dot_float_body(F_F32, n, w, x, xs, NT, res); }
INLINE void dot_f16_body(int64_t n, const void *w, const void *x, size_t xs, const int NT, float *res) { dot_float_body(F_F16, n, w, x, xs, NT, res); }
INLINE void dot_bf16_body(int64_t n, const void *w, const void *x, size_t xs, const int NT, float *res) { dot_float_body(F_BF16, n, w, x, xs, NT, res); }

#define NT_KERNEL(name)                                                                               \
    static void name##_avx2(int64_t n, const void *w, const void *x, size_t xs, int nt, float *res) {  \
        switch (nt) {                                                                                 \
        case 4: name##_body(n, w, x, xs, 4, res); break;                                              \
        case 3: name##_body(n, w, x, xs, 3, res); break;                                              \
        case 2: name##_body(n, w, x, xs, 2, res); break;                                              \
        default: name##_body(n, w, x, xs, 1, res); break;                                             \
        }                                                                                             \
    }
NT_KERNEL(dot_q2_K)
NT_KERNEL(dot_q3_K)
NT_KERNEL(dot_q4_K)
NT_KERNEL(dot_q5_K)
NT_KERNEL(dot_q6_K)
NT_KERNEL(dot_f32)
NT_KERNEL(dot_f16)
NT_KERNEL(dot_bf16)

/* ---- activation quantizers (round to nearest even, same as the scalar lrintf path) ---- */

/* 32 floats -> 32 int8 (in order) with scale id; returns the sum of the quants. */
INLINE int quant32(const float *x, float id, int8_t *out) {
    const __m256 mul = _mm256_set1_ps(id);
    __m256i i0 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x), mul), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    __m256i i1 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 8), mul), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    __m256i i2 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 16), mul), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    __m256i i3 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 24), mul), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    const __m256i s = _mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3));
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1));
    i0 = _mm256_packs_epi32(i0, i1);
    i2 = _mm256_packs_epi32(i2, i3);
    i0 = _mm256_packs_epi16(i0, i2);
    i0 = _mm256_permutevar8x32_epi32(i0, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)(void *)out, i0);
    return _mm_cvtsi128_si32(s4);
}

INLINE __m256 absmax8(__m256 m, const float *x) {
    return _mm256_max_ps(m, _mm256_andnot_ps(_mm256_set1_ps(-0.0f), _mm256_loadu_ps(x)));
}

INLINE float hmax_ps(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

static void quant_q8x_avx2(const float *x, void *yv, int64_t n) {
    blk_q8x *y = yv;
    for (int64_t b = 0; b < n / 32; b++) {
        const float *xb = x + b * 32;
        __m256 m = _mm256_setzero_ps();
        for (int k = 0; k < 32; k += 8) m = absmax8(m, xb + k);
        const float d = hmax_ps(m) / 127.0f, id = d > 0 ? 1.0f / d : 0.0f;
        const int sum = quant32(xb, id, y[b].qs);
        y[b].d = d;
        y[b].s = d * (float)sum;
    }
}

static void quant_q8k_avx2(const float *x, void *yv, int64_t n) {
    block_q8_K *y = yv;
    for (int64_t b = 0; b < n / QK_K; b++) {
        const float *xb = x + b * QK_K;
        __m256 m = _mm256_setzero_ps();
        for (int k = 0; k < QK_K; k += 8) m = absmax8(m, xb + k);
        const float d = hmax_ps(m) / 127.0f, id = d > 0 ? 1.0f / d : 0.0f;
        for (int k = 0; k < QK_K; k += 32) quant32(xb + k, id, y[b].qs + k);
        for (int j = 0; j < QK_K / 16; j++) {
            /* sum of 16 int8: widen to int16 and fold */
            const __m256i v = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(y[b].qs + 16 * j)));
            __m128i s = _mm_add_epi16(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
            s = _mm_add_epi16(s, _mm_shuffle_epi32(s, 0x4E));
            s = _mm_add_epi16(s, _mm_shuffle_epi32(s, 0xB1));
            s = _mm_add_epi16(s, _mm_srli_epi32(s, 16));
            y[b].bsums[j] = (int16_t)_mm_cvtsi128_si32(s);
        }
        y[b].d = d;
    }
}

/* ---- float helpers ---- */

static float vec_dot_f32_avx2(const float *a, const float *b, int64_t n) {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    }
    for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    float r = hsum_ps(_mm256_add_ps(s0, s1));
    for (; i < n; i++) r += a[i] * b[i];
    return r;
}

static void vec_mad_f32_avx2(float *y, const float *x, float a, int64_t n) {
    const __m256 va = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; i++) y[i] += a * x[i];
}

static void cvt_f16_f32_avx2(const uint16_t *src, float *dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(src + i))));
    for (; i < n; i++) dst[i] = fp16_to_fp32(src[i]);
}

void mm_kernels_avx2(mm_kernels *k) {
    k->dot[QT_F32] = dot_f32_avx2;
    k->dot[QT_F16] = dot_f16_avx2;
    k->dot[QT_BF16] = dot_bf16_avx2;
    k32_install(k);
    k->dot[QT_Q2_K] = dot_q2_K_avx2;
    k->dot[QT_Q3_K] = dot_q3_K_avx2;
    k->dot[QT_Q4_K] = dot_q4_K_avx2;
    k->dot[QT_Q5_K] = dot_q5_K_avx2;
    k->dot[QT_Q6_K] = dot_q6_K_avx2;
    k->quant_q8x = quant_q8x_avx2;
    k->quant_q8k = quant_q8k_avx2;
    k->vec_dot_f32 = vec_dot_f32_avx2;
    k->vec_mad_f32 = vec_mad_f32_avx2;
    k->cvt_f16_f32 = cvt_f16_f32_avx2;
}
