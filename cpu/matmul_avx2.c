/* matmul_avx2: AVX2/FMA/F16C dot kernels for the CPU matmul (see cpu_kernels.h), used
 * only after a run-time CPU check. Integer dot products with maddubs/madd against the
 * Q8 activations (the 32-element and K-quant kernels live in shared x86 headers); each
 * kernel decodes a weight block once and applies it to up to MM_MAX_TOK tokens (the NT
 * template parameter), so prompt batches reuse weight reads. */
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

/* Sum over 32 byte pairs of u (unsigned) * s (signed), as 8 float partial sums. */
INLINE __m256i dot_u8s8_i32(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

/* ---- 32-element types: matmul_k32_x86.h with maddubs + madd ---- */
#define K32_ATTR
#define K32_IDOT(u, s) dot_u8s8_i32((u), (s))
#define K32_SUFFIX _avx2
#define K32_NT4 4
#include "matmul_k32_x86.h"

/* ---- K-quants against Q8_K: matmul_kq_x86.h with madd + add ---- */
#define KQ_ATTR
#define KQ_DPWSSD(acc, a, b) _mm256_add_epi32((acc), _mm256_madd_epi16((a), (b)))
#define KQ_SUFFIX _avx2
#include "matmul_kq_x86.h"

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

/* n floats (a multiple of 32) to int8 with one scale (max |x| / 127): returns the scale,
 * and the sum of the int8 values when sum is not NULL. */
INLINE float quant_run(const float *xb, int n, int8_t *qs, int *sum) {
    __m256 m = _mm256_setzero_ps();
    for (int k = 0; k < n; k += 8) m = absmax8(m, xb + k);
    const float d = hmax_ps(m) / 127.0f, id = d > 0 ? 1.0f / d : 0.0f;
    int s = 0;
    for (int k = 0; k < n; k += 32) s += quant32(xb + k, id, qs + k);
    if (sum) *sum = s;
    return d;
}

/* The sum of 16 int8 values. */
INLINE int16_t sum16_i8(const int8_t *q) {
    const __m256i v = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)q));
    __m128i s = _mm_add_epi16(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi16(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi16(s, _mm_shuffle_epi32(s, 0xB1));
    s = _mm_add_epi16(s, _mm_srli_epi32(s, 16));
    return (int16_t)_mm_cvtsi128_si32(s);
}

static void quant_q8x_avx2(const float *x, void *yv, int64_t n) {
    blk_q8x *y = yv;
    for (int64_t b = 0; b < n / 32; b++) {
        int sum;
        const float d = quant_run(x + b * 32, 32, y[b].qs, &sum);
        y[b].d = d;
        y[b].s = d * (float)sum;
    }
}

static void quant_q8s_avx2(const float *x, void *yv, int64_t n) {
    blk_q8s *y = yv;
    for (int64_t b = 0; b < n / 32; b++) {
        int sum;
        y[b].d = quant_run(x + b * 32, 32, y[b].qs, &sum);
        y[b].sum = sum;
    }
}

static void quant_q8ks_avx2(const float *x, void *yv, int64_t n) {
    blk_q8ks *y = yv;
    for (int64_t b = 0; b < n / QK_K; b++) {
        y[b].d = quant_run(x + b * QK_K, QK_K, y[b].qs, NULL);
        for (int j = 0; j < QK_K / 16; j++) y[b].bs16[j] = sum16_i8(y[b].qs + 16 * j);
        for (int j = 0; j < 8; j++) y[b].bs32[j] = (int16_t)(y[b].bs16[2 * j] + y[b].bs16[2 * j + 1]);
    }
}

static void quant_q8k_avx2(const float *x, void *yv, int64_t n) {
    block_q8_K *y = yv;
    for (int64_t b = 0; b < n / QK_K; b++) {
        y[b].d = quant_run(x + b * QK_K, QK_K, y[b].qs, NULL);
        for (int j = 0; j < QK_K / 16; j++) y[b].bsums[j] = sum16_i8(y[b].qs + 16 * j);
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
    kq_install(k);
    vecmath_install_avx2(k);
    attn_tile_install_avx2(k);
    k->quant_q8x = quant_q8x_avx2;
    k->quant_q8s = quant_q8s_avx2;
    k->quant_q8ks = quant_q8ks_avx2;
    k->quant_q8k = quant_q8k_avx2;
    k->vec_dot_f32 = vec_dot_f32_avx2;
    k->vec_mad_f32 = vec_mad_f32_avx2;
    k->cvt_f16_f32 = cvt_f16_f32_avx2;
}
