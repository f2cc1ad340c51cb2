/* quant_legacy: reference dequantizers and quantizers of the float types (F32, F16, BF16)
 * and the 32-element block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1). The quantizers
 * produce the same bytes as ggml's quantize_row_*_ref for the same input, including its
 * float->int conversions (see q_trunc_u8 in quant_impl.h). */
#include <float.h>
#include <math.h>
#include <string.h>
#include "fp16.h"
#include "quant_impl.h"

/* Byte-exactness with ggml needs every a*b+c rounded twice, never fused into an FMA, even
 * where the target has FMA (-march=native) or the dialect allows contraction (gnu11). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

/* ---- float types ---- */

void qref_dequant_f32(const void *src, float *dst, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof(float));
}

void qref_dequant_f16(const void *src, float *dst, int64_t n) {
    const uint16_t *h = src;
    for (int64_t i = 0; i < n; i++) dst[i] = fp16_to_fp32(h[i]);
}

void qref_dequant_bf16(const void *src, float *dst, int64_t n) {
    const uint16_t *h = src;
    for (int64_t i = 0; i < n; i++) dst[i] = bf16_to_fp32(h[i]);
}

void qref_quant_f32(const float *src, void *dst, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof(float));
}

void qref_quant_f16(const float *src, void *dst, int64_t n) {
    uint16_t *h = dst;
    for (int64_t i = 0; i < n; i++) h[i] = fp32_to_fp16(src[i]);
}

void qref_quant_bf16(const float *src, void *dst, int64_t n) {
    uint16_t *h = dst;
    for (int64_t i = 0; i < n; i++) h[i] = fp32_to_bf16(src[i]);
}

/* ---- shared pieces of the 32-element block formats ---- */

/* The element of largest magnitude, with its sign (the first one on ties). */
static float signed_absmax(const float *x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; j++) {
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    }
    return max;
}

static void min_max(const float *x, int n, float *min_out, float *max_out) {
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < n; j++) {
        if (x[j] < min) min = x[j];
        if (x[j] > max) max = x[j];
    }
    *min_out = min;
    *max_out = max;
}

static inline uint8_t min_u8(uint8_t a, int8_t b) { return (uint8_t)(b < (int)a ? b : (int)a); }

/* ---- Q4_0: d * (q - 8), q in 0..15; low nibbles hold elements 0..15, high 16..31 ---- */

void qref_quant_q4_0(const float *x, void *dst, int64_t n) {
    block_q4_0 *y = dst;
    for (int64_t i = 0; i < n / QK4_0; i++, x += QK4_0) {
        const float d = signed_absmax(x, QK4_0) / -8;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = fp32_to_fp16(d);
        for (int j = 0; j < QK4_0 / 2; j++) {
            const uint8_t lo = min_u8(15, q_trunc_i8(x[j] * id + 8.5f));
            const uint8_t hi = min_u8(15, q_trunc_i8(x[j + QK4_0 / 2] * id + 8.5f));
            y[i].qs[j] = (uint8_t)(lo | (hi << 4));
        }
    }
}

void qref_dequant_q4_0(const void *src, float *y, int64_t n) {
    const block_q4_0 *x = src;
    for (int64_t i = 0; i < n / QK4_0; i++, y += QK4_0) {
        const float d = fp16_to_fp32(x[i].d);
        for (int j = 0; j < QK4_0 / 2; j++) {
            y[j] = ((x[i].qs[j] & 0x0F) - 8) * d;
            y[j + QK4_0 / 2] = ((x[i].qs[j] >> 4) - 8) * d;
        }
    }
}

/* ---- Q4_1: d * q + m, q in 0..15 ---- */

void qref_quant_q4_1(const float *x, void *dst, int64_t n) {
    block_q4_1 *y = dst;
    for (int64_t i = 0; i < n / QK4_1; i++, x += QK4_1) {
        float min, max;
        min_max(x, QK4_1, &min, &max);
        const float d = (max - min) / 15;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = fp32_to_fp16(d);
        y[i].m = fp32_to_fp16(min);
        for (int j = 0; j < QK4_1 / 2; j++) {
            const uint8_t lo = min_u8(15, q_trunc_i8((x[j] - min) * id + 0.5f));
            const uint8_t hi = min_u8(15, q_trunc_i8((x[j + QK4_1 / 2] - min) * id + 0.5f));
            y[i].qs[j] = (uint8_t)(lo | (hi << 4));
        }
    }
}

void qref_dequant_q4_1(const void *src, float *y, int64_t n) {
    const block_q4_1 *x = src;
    for (int64_t i = 0; i < n / QK4_1; i++, y += QK4_1) {
        const float d = fp16_to_fp32(x[i].d), m = fp16_to_fp32(x[i].m);
        for (int j = 0; j < QK4_1 / 2; j++) {
            y[j] = (x[i].qs[j] & 0x0F) * d + m;
            y[j + QK4_1 / 2] = (x[i].qs[j] >> 4) * d + m;
        }
    }
}

/* ---- Q5_0 / Q5_1: 4 low bits in qs (as Q4_x), bit 4 of element j in bit j of qh ---- */

static uint32_t load_qh(const uint8_t qh[4]) {
    uint32_t v;
    memcpy(&v, qh, 4);
    return v;
}

void qref_quant_q5_0(const float *x, void *dst, int64_t n) {
    block_q5_0 *y = dst;
    for (int64_t i = 0; i < n / QK5_0; i++, x += QK5_0) {
        const float d = signed_absmax(x, QK5_0) / -16;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = fp32_to_fp16(d);
        uint32_t qh = 0;
        for (int j = 0; j < QK5_0 / 2; j++) {
            const uint8_t lo = min_u8(31, q_trunc_i8(x[j] * id + 16.5f));
            const uint8_t hi = min_u8(31, q_trunc_i8(x[j + QK5_0 / 2] * id + 16.5f));
            y[i].qs[j] = (uint8_t)((lo & 0x0F) | ((hi & 0x0F) << 4));
            qh |= ((uint32_t)(lo & 0x10u) >> 4) << j;
            qh |= ((uint32_t)(hi & 0x10u) >> 4) << (j + QK5_0 / 2);
        }
        memcpy(y[i].qh, &qh, 4);
    }
}

void qref_dequant_q5_0(const void *src, float *y, int64_t n) {
    const block_q5_0 *x = src;
    for (int64_t i = 0; i < n / QK5_0; i++, y += QK5_0) {
        const float d = fp16_to_fp32(x[i].d);
        const uint32_t qh = load_qh(x[i].qh);
        for (int j = 0; j < QK5_0 / 2; j++) {
            const int h0 = (int)((qh >> j) << 4) & 0x10;
            const int h1 = (int)(qh >> (j + 12)) & 0x10;
            y[j] = (((x[i].qs[j] & 0x0F) | h0) - 16) * d;
            y[j + QK5_0 / 2] = (((x[i].qs[j] >> 4) | h1) - 16) * d;
        }
    }
}

void qref_quant_q5_1(const float *x, void *dst, int64_t n) {
    block_q5_1 *y = dst;
    for (int64_t i = 0; i < n / QK5_1; i++, x += QK5_1) {
        float min, max;
        min_max(x, QK5_1, &min, &max);
        const float d = (max - min) / 31;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = fp32_to_fp16(d);
        y[i].m = fp32_to_fp16(min);
        uint32_t qh = 0;
        for (int j = 0; j < QK5_1 / 2; j++) {
            /* ggml does not clamp here: (max-min)*id rounds to at most 31.5 -> 31 */
            const uint8_t lo = q_trunc_u8((x[j] - min) * id + 0.5f);
            const uint8_t hi = q_trunc_u8((x[j + QK5_1 / 2] - min) * id + 0.5f);
            y[i].qs[j] = (uint8_t)((lo & 0x0F) | ((hi & 0x0F) << 4));
            qh |= ((uint32_t)(lo & 0x10u) >> 4) << j;
            qh |= ((uint32_t)(hi & 0x10u) >> 4) << (j + QK5_1 / 2);
        }
        memcpy(y[i].qh, &qh, 4);
    }
}

void qref_dequant_q5_1(const void *src, float *y, int64_t n) {
    const block_q5_1 *x = src;
    for (int64_t i = 0; i < n / QK5_1; i++, y += QK5_1) {
        const float d = fp16_to_fp32(x[i].d), m = fp16_to_fp32(x[i].m);
        const uint32_t qh = load_qh(x[i].qh);
        for (int j = 0; j < QK5_1 / 2; j++) {
            const int h0 = (int)((qh >> j) << 4) & 0x10;
            const int h1 = (int)(qh >> (j + 12)) & 0x10;
            y[j] = ((x[i].qs[j] & 0x0F) | h0) * d + m;
            y[j + QK5_1 / 2] = ((x[i].qs[j] >> 4) | h1) * d + m;
        }
    }
}

/* ---- Q8_0 / Q8_1: d * q, q in -127..127; Q8_1 also stores s = d * sum(q) ---- */

static float absmax(const float *x, int n) {
    float amax = 0.0f;
    for (int j = 0; j < n; j++) amax = amax > fabsf(x[j]) ? amax : fabsf(x[j]); /* ggml's MAX order */
    return amax;
}

void qref_quant_q8_0(const float *x, void *dst, int64_t n) {
    block_q8_0 *y = dst;
    for (int64_t i = 0; i < n / QK8_0; i++, x += QK8_0) {
        const float d = absmax(x, QK8_0) / 127;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = fp32_to_fp16(d);
        for (int j = 0; j < QK8_0; j++) y[i].qs[j] = q_trunc_i8(roundf(x[j] * id));
    }
}

void qref_dequant_q8_0(const void *src, float *y, int64_t n) {
    const block_q8_0 *x = src;
    for (int64_t i = 0; i < n / QK8_0; i++, y += QK8_0) {
        const float d = fp16_to_fp32(x[i].d);
        for (int j = 0; j < QK8_0; j++) y[j] = x[i].qs[j] * d;
    }
}

void qref_quant_q8_1(const float *x, void *dst, int64_t n) {
    block_q8_1 *y = dst;
    for (int64_t i = 0; i < n / QK8_0; i++, x += QK8_0) {
        const float d = absmax(x, QK8_0) / 127;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = fp32_to_fp16(d);
        int sum = 0;
        for (int j = 0; j < QK8_0; j++) {
            y[i].qs[j] = q_trunc_i8(roundf(x[j] * id));
            sum += y[i].qs[j];
        }
        y[i].s = fp32_to_fp16((float)sum * d);
    }
}

/* ggml has no Q8_1 dequantizer (it is an activation format); this is d * q. */
void qref_dequant_q8_1(const void *src, float *y, int64_t n) {
    const block_q8_1 *x = src;
    for (int64_t i = 0; i < n / QK8_0; i++, y += QK8_0) {
        const float d = fp16_to_fp32(x[i].d);
        for (int j = 0; j < QK8_0; j++) y[j] = x[i].qs[j] * d;
    }
}
