/* quant_impl: internal to the quant module (quant.c, quant_legacy.c, quant_k.c): the
 * per-type reference (de)quantizers that quant.c dispatches to, and the two float->int
 * helpers whose exact behaviour the byte-exactness with ggml depends on. Not a public API:
 * everything outside the quant module uses quant.h. */
#ifndef ANVIL_QUANT_IMPL_H
#define ANVIL_QUANT_IMPL_H
#include <stdint.h>
#include <string.h>
#include "quant.h"

/* ggml's nearest_int: round-to-nearest-even through the 1.5*2^23 trick (same bits for the
 * same float, no UB for any input; meaningless but deterministic beyond |x| > 2^22). */
static inline int q_nearest_int(float fval) {
    float val = fval + 12582912.f;
    int32_t i;
    memcpy(&i, &val, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

/* A C cast float -> small integer type, as x86-64 compiles it (cvttss2si to 32 bits, then
 * the low byte): truncation toward zero for in-range values, 0x80000000 (low byte 0) for
 * NaN/inf/out-of-range, where the C cast itself would be undefined behaviour. */
static inline uint8_t q_trunc_u8(float f) {
    if (!(f > -2147483648.0f && f < 2147483648.0f)) return 0;
    return (uint8_t)(uint32_t)(int32_t)f;
}
static inline int8_t q_trunc_i8(float f) {
    uint8_t u = q_trunc_u8(f);
    return (int8_t)(u >= 128 ? (int)u - 256 : (int)u);
}

typedef void (*q_dequant_fn)(const void *src, float *dst, int64_t n);
typedef void (*q_quant_fn)(const float *src, void *dst, int64_t n);

/* quant_legacy.c: n is a multiple of the block size (1 for float types, 32 otherwise). */
void qref_dequant_f32(const void *src, float *dst, int64_t n);
void qref_dequant_f16(const void *src, float *dst, int64_t n);
void qref_dequant_bf16(const void *src, float *dst, int64_t n);
void qref_dequant_q4_0(const void *src, float *dst, int64_t n);
void qref_dequant_q4_1(const void *src, float *dst, int64_t n);
void qref_dequant_q5_0(const void *src, float *dst, int64_t n);
void qref_dequant_q5_1(const void *src, float *dst, int64_t n);
void qref_dequant_q8_0(const void *src, float *dst, int64_t n);
void qref_dequant_q8_1(const void *src, float *dst, int64_t n);
void qref_quant_f32(const float *src, void *dst, int64_t n);
void qref_quant_f16(const float *src, void *dst, int64_t n);
void qref_quant_bf16(const float *src, void *dst, int64_t n);
void qref_quant_q4_0(const float *src, void *dst, int64_t n);
void qref_quant_q4_1(const float *src, void *dst, int64_t n);
void qref_quant_q5_0(const float *src, void *dst, int64_t n);
void qref_quant_q5_1(const float *src, void *dst, int64_t n);
void qref_quant_q8_0(const float *src, void *dst, int64_t n);
void qref_quant_q8_1(const float *src, void *dst, int64_t n);

/* quant_k.c: n is a multiple of QK_K. */
void qref_dequant_q2_K(const void *src, float *dst, int64_t n);
void qref_dequant_q3_K(const void *src, float *dst, int64_t n);
void qref_dequant_q4_K(const void *src, float *dst, int64_t n);
void qref_dequant_q5_K(const void *src, float *dst, int64_t n);
void qref_dequant_q6_K(const void *src, float *dst, int64_t n);
void qref_dequant_q8_K(const void *src, float *dst, int64_t n);
void qref_quant_q2_K(const float *src, void *dst, int64_t n);
void qref_quant_q3_K(const float *src, void *dst, int64_t n);
void qref_quant_q4_K(const float *src, void *dst, int64_t n);
void qref_quant_q5_K(const float *src, void *dst, int64_t n);
void qref_quant_q6_K(const float *src, void *dst, int64_t n);
void qref_quant_q8_K(const float *src, void *dst, int64_t n);

/* quant_mxfp4.c / quant_iq.c: read-only types (no quantizer: llama-quantize writes them). */
void qref_dequant_mxfp4(const void *src, float *dst, int64_t n);
void qref_dequant_iq4_nl(const void *src, float *dst, int64_t n);
void qref_dequant_iq4_xs(const void *src, float *dst, int64_t n);
void qref_dequant_iq2_xxs(const void *src, float *dst, int64_t n);
void qref_dequant_iq2_xs(const void *src, float *dst, int64_t n);
void qref_dequant_iq2_s(const void *src, float *dst, int64_t n);
void qref_dequant_iq3_xxs(const void *src, float *dst, int64_t n);
void qref_dequant_iq3_s(const void *src, float *dst, int64_t n);
void qref_dequant_iq1_s(const void *src, float *dst, int64_t n);
void qref_dequant_iq1_m(const void *src, float *dst, int64_t n);
void qref_dequant_tq1_0(const void *src, float *dst, int64_t n);
void qref_dequant_tq2_0(const void *src, float *dst, int64_t n);
#endif
