/* attn_tile_avx512: the AVX-512 GEMM of the CPU attention over many query rows
 * (cpu_attention.c's tiles, contract in cpu_kernels.h): 4 rows x 32 columns of accumulators
 * in zmm registers, then 16-, 8-column and scalar remainders. The softmax passes stay the
 * AVX2 ones (they are a small part of the work). Installed by mm_kernels_avx512. */
#include "cpu_kernels.h"

#include <immintrin.h>

#define MR 4

/* Rows 0 .. mr (mr <= MR) of c; rows past mr read row mr - 1 of a and are not stored. */
static void gemm_rows4(const float *a, int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc, int mr, int k, int n,
                       bool accumulate) {
    const float *ar[MR];
    for (int i = 0; i < MR; i++) ar[i] = a + (int64_t)(i < mr ? i : mr - 1) * lda;
    int j = 0;
    for (; j + 32 <= n; j += 32) {
        __m512 c0[MR], c1[MR];
        for (int i = 0; i < MR; i++) {
            const bool ld = accumulate && i < mr;
            c0[i] = ld ? _mm512_loadu_ps(c + i * ldc + j) : _mm512_setzero_ps();
            c1[i] = ld ? _mm512_loadu_ps(c + i * ldc + j + 16) : _mm512_setzero_ps();
        }
        for (int x = 0; x < k; x++) {
            const __m512 b0 = _mm512_loadu_ps(b + x * ldb + j), b1 = _mm512_loadu_ps(b + x * ldb + j + 16);
            for (int i = 0; i < MR; i++) {
                const __m512 av = _mm512_set1_ps(ar[i][x]);
                c0[i] = _mm512_fmadd_ps(av, b0, c0[i]);
                c1[i] = _mm512_fmadd_ps(av, b1, c1[i]);
            }
        }
        for (int i = 0; i < mr; i++) {
            _mm512_storeu_ps(c + i * ldc + j, c0[i]);
            _mm512_storeu_ps(c + i * ldc + j + 16, c1[i]);
        }
    }
    for (; j + 16 <= n; j += 16) {
        __m512 c0[MR];
        for (int i = 0; i < MR; i++) c0[i] = accumulate && i < mr ? _mm512_loadu_ps(c + i * ldc + j) : _mm512_setzero_ps();
        for (int x = 0; x < k; x++) {
            const __m512 b0 = _mm512_loadu_ps(b + x * ldb + j);
            for (int i = 0; i < MR; i++) c0[i] = _mm512_fmadd_ps(_mm512_set1_ps(ar[i][x]), b0, c0[i]);
        }
        for (int i = 0; i < mr; i++) _mm512_storeu_ps(c + i * ldc + j, c0[i]);
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

static void att_gemm_avx512(const float *a, int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc, int m, int k, int n,
                            bool accumulate) {
    for (int r = 0; r < m; r += MR)
        gemm_rows4(a + r * lda, lda, b, ldb, c + r * ldc, ldc, m - r < MR ? m - r : MR, k, n, accumulate);
}

void attn_tile_install_avx512(mm_kernels *k) {
    k->att_gemm = att_gemm_avx512;
}
