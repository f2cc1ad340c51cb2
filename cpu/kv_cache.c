/* kv_cache: the CPU KV-cache type table and decoders (see kv_cache.h). */
#include "kv_cache.h"
#include "cpu_internal.h"
#include "error.h"
#include "quant.h"

bool kv_type_supported(uint32_t t) { return t == QT_F32 || t == QT_F16 || t == QT_Q8_0 || t == QT_Q4_0; }

int kv_check_head_dim(const char *op, uint32_t t, int head_dim) {
    if ((t == QT_Q8_0 || t == QT_Q4_0) && head_dim % 32 != 0) {
        anv_set_error("%s: a %s KV cache needs head_dim %% 32 == 0 (head_dim %d)", op, qtype_get(t)->name, head_dim);
        return -1;
    }
    return 0;
}

static void dequant_q4_0_scalar(const void *src, float *dst, int64_t n) { dequantize_row(QT_Q4_0, src, dst, n); }
static void dequant_q8_0_scalar(const void *src, float *dst, int64_t n) { dequantize_row(QT_Q8_0, src, dst, n); }

kv_dequant_fn kv_dequant_for(uint32_t t, int simd) {
    const bool avx2 = simd >= CPU_SIMD_AVX2;
    if (t == QT_Q4_0) return avx2 ? kv_dequant_q4_0_avx2 : dequant_q4_0_scalar;
    if (t == QT_Q8_0) return avx2 ? kv_dequant_q8_0_avx2 : dequant_q8_0_scalar;
    return 0;
}
