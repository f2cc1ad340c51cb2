/* kv_cache_avx2: AVX2 decoders of the quantized KV-cache blocks (Q4_0, Q8_0) to F32, the
 * chunk loads of cpu_attention.c. Exact: the same products d * q as dequantize_row. */
#include "kv_cache.h"
#include "quant.h"

#include <immintrin.h>
#include <string.h>

static inline float half_at(const void *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

void kv_dequant_q4_0_avx2(const void *src, float *dst, int64_t n) {
    const block_q4_0 *b = src;
    const __m128i lo_mask = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
    for (int64_t i = 0; i < n / QK4_0; i++, dst += QK4_0) {
        const __m256 d = _mm256_set1_ps(half_at(&b[i].d));
        const __m128i q = _mm_loadu_si128((const __m128i *)(const void *)b[i].qs);
        /* elements 0..15 are the low nibbles, 16..31 the high ones; q - 8 in int8 */
        const __m128i lo = _mm_sub_epi8(_mm_and_si128(q, lo_mask), eight);
        const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), lo_mask), eight);
        _mm256_storeu_ps(dst, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo))));
        _mm256_storeu_ps(dst + 8, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)))));
        _mm256_storeu_ps(dst + 16, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi))));
        _mm256_storeu_ps(dst + 24, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)))));
    }
}

void kv_dequant_q8_0_avx2(const void *src, float *dst, int64_t n) {
    const block_q8_0 *b = src;
    for (int64_t i = 0; i < n / QK8_0; i++, dst += QK8_0) {
        const __m256 d = _mm256_set1_ps(half_at(&b[i].d));
        for (int k = 0; k < 4; k++) {
            const __m128i q = _mm_loadl_epi64((const __m128i *)(const void *)(b[i].qs + 8 * k));
            _mm256_storeu_ps(dst + 8 * k, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q))));
        }
    }
}
