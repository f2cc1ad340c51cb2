/* vecmath_avx2: the GLU activations of the CPU backend vectorized with AVX2/FMA: SiLU and
 * tanh-GELU gates times up, on an expf accurate to a few ulp (range reduction by ln 2,
 * degree-6 polynomial). GELU uses 0.5 * (1 + tanh(u)) = 1 / (1 + exp(-2u)), which also
 * avoids the cancellation of 1 + tanh(u) for negative u. Installed by mm_kernels_avx2. */
#include "cpu_kernels.h"

#include "exp_avx2.h"
#include <immintrin.h>
#include <math.h>

#define GELU_C 0.79788456080286535587989211986876f /* sqrt(2 / pi) */

/* g / (1 + exp(-z)) * u */
static inline __m256 gate8(__m256 g, __m256 z, __m256 u) {
    const __m256 den = _mm256_add_ps(_mm256_set1_ps(1.0f), exp8(_mm256_sub_ps(_mm256_setzero_ps(), z)));
    return _mm256_mul_ps(_mm256_div_ps(g, den), u);
}

static void glu_silu_avx2(const float *gate, const float *up, float *out, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 g = _mm256_loadu_ps(gate + i);
        _mm256_storeu_ps(out + i, gate8(g, g, _mm256_loadu_ps(up + i)));
    }
    for (; i < n; i++) out[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}

static void glu_gelu_avx2(const float *gate, const float *up, float *out, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 g = _mm256_loadu_ps(gate + i);
        /* z = 2u, u = sqrt(2/pi) * g * (1 + 0.044715 g^2) */
        const __m256 g2 = _mm256_mul_ps(g, g);
        const __m256 z = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(2.0f * GELU_C), g),
                                       _mm256_fmadd_ps(_mm256_set1_ps(0.044715f), g2, _mm256_set1_ps(1.0f)));
        _mm256_storeu_ps(out + i, gate8(g, z, _mm256_loadu_ps(up + i)));
    }
    for (; i < n; i++) {
        const float g = gate[i];
        out[i] = g / (1.0f + expf(-2.0f * GELU_C * g * (1.0f + 0.044715f * g * g))) * up[i];
    }
}

void vecmath_install_avx2(mm_kernels *k) {
    k->glu_silu = glu_silu_avx2;
    k->glu_gelu = glu_gelu_avx2;
}
