/* attn_tile_avx2: the AVX2/FMA kernels of the CPU attention over many query rows
 * (cpu_attention.c's tiles): a small row-major F32 GEMM (4 rows x 16 columns of
 * accumulators in registers, the a values broadcast, the b rows loaded once per 4 rows),
 * the scale-and-max pass and the exp-and-sum pass of the online softmax (exp8). Installed
 * by mm_kernels_avx2. */
#include "cpu_kernels.h"

#include "exp_avx2.h"
#include <immintrin.h>
#include <math.h>

#define MR 4

static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline float hmax8(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* Rows r0 .. r0 + mr (mr <= MR) of c; rows past mr read row mr - 1 of a and are not stored. */
static void gemm_rows4(const float *a, int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc, int mr, int k, int n,
                       bool accumulate) {
    const float *ar[MR];
    for (int i = 0; i < MR; i++) ar[i] = a + (int64_t)(i < mr ? i : mr - 1) * lda;
    int j = 0;
    for (; j + 16 <= n; j += 16) {
        __m256 c0[MR], c1[MR];
        for (int i = 0; i < MR; i++) {
            const bool ld = accumulate && i < mr;
            c0[i] = ld ? _mm256_loadu_ps(c + i * ldc + j) : _mm256_setzero_ps();
            c1[i] = ld ? _mm256_loadu_ps(c + i * ldc + j + 8) : _mm256_setzero_ps();
        }
        for (int x = 0; x < k; x++) {
            const __m256 b0 = _mm256_loadu_ps(b + x * ldb + j), b1 = _mm256_loadu_ps(b + x * ldb + j + 8);
            for (int i = 0; i < MR; i++) {
                const __m256 av = _mm256_broadcast_ss(ar[i] + x);
                c0[i] = _mm256_fmadd_ps(av, b0, c0[i]);
                c1[i] = _mm256_fmadd_ps(av, b1, c1[i]);
            }
        }
        for (int i = 0; i < mr; i++) {
            _mm256_storeu_ps(c + i * ldc + j, c0[i]);
            _mm256_storeu_ps(c + i * ldc + j + 8, c1[i]);
        }
    }
    for (; j + 8 <= n; j += 8) {
        __m256 c0[MR];
        for (int i = 0; i < MR; i++) c0[i] = accumulate && i < mr ? _mm256_loadu_ps(c + i * ldc + j) : _mm256_setzero_ps();
        for (int x = 0; x < k; x++) {
            const __m256 b0 = _mm256_loadu_ps(b + x * ldb + j);
            for (int i = 0; i < MR; i++) c0[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(ar[i] + x), b0, c0[i]);
        }
        for (int i = 0; i < mr; i++) _mm256_storeu_ps(c + i * ldc + j, c0[i]);
    }
    for (; j < n; j++)
        for (int i = 0; i < mr; i++) {
            float s = accumulate ? c[i * ldc + j] : 0.0f;
            for (int x = 0; x < k; x++) s += ar[i][x] * b[x * ldb + j];
            c[i * ldc + j] = s;
        }
}

static void att_gemm_avx2(const float *a, int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc, int m, int k, int n,
                          bool accumulate) {
    for (int r = 0; r < m; r += MR)
        gemm_rows4(a + r * lda, lda, b, ldb, c + r * ldc, ldc, m - r < MR ? m - r : MR, k, n, accumulate);
}

static float att_scale_max_avx2(float *x, int n, float scale) {
    const __m256 sv = _mm256_set1_ps(scale);
    __m256 mv = _mm256_set1_ps(-INFINITY);
    int j = 0;
    for (; j + 8 <= n; j += 8) {
        const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + j), sv);
        _mm256_storeu_ps(x + j, v);
        mv = _mm256_max_ps(mv, v);
    }
    float m = hmax8(mv);
    for (; j < n; j++) {
        x[j] *= scale;
        if (x[j] > m) m = x[j];
    }
    return m;
}

static float att_exp_sum_avx2(float *x, int n, float mx) {
    const __m256 mv = _mm256_set1_ps(mx), ninf = _mm256_set1_ps(-INFINITY);
    __m256 sv = _mm256_setzero_ps();
    int j = 0;
    for (; j + 8 <= n; j += 8) {
        const __m256 v = _mm256_loadu_ps(x + j);
        const __m256 e = _mm256_and_ps(exp8(_mm256_sub_ps(v, mv)), _mm256_cmp_ps(v, ninf, _CMP_NEQ_OQ));
        _mm256_storeu_ps(x + j, e);
        sv = _mm256_add_ps(sv, e);
    }
    float s = hsum8(sv);
    for (; j < n; j++) {
        x[j] = x[j] == -INFINITY ? 0.0f : expf(x[j] - mx);
        s += x[j];
    }
    return s;
}

void attn_tile_install_avx2(mm_kernels *k) {
    k->att_gemm = att_gemm_avx2;
    k->att_scale_max = att_scale_max_avx2;
    k->att_exp_sum = att_exp_sum_avx2;
}
