/* hip_dequant: device-side element access for every GGUF weight type the HIP kernels
 * read: deq<T>(row, c) returns element c of a row of type T (T = the GGUF type id), with
 * the block layouts of engine/gguf/quant.h, plus the fp16 <-> fp32 conversions (bit exact
 * with engine/base/fp16.h). Included by hip_kernels.hip only; neutral HIP/CUDA subset. */
#ifndef ANVIL_HIP_DEQUANT_H
#define ANVIL_HIP_DEQUANT_H
#include <stdint.h>
#include "hip_vendor.h"

ANV_DEV float anv_h2f(uint32_t h) {
    const uint32_t w = h << 16, sign = w & 0x80000000u, two_w = w + w;
    const float normalized = __uint_as_float((two_w >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
    const float denormalized = __uint_as_float((two_w >> 17) | (126u << 23)) - 0.5f;
    const uint32_t r = sign | (two_w < (1u << 27) ? __float_as_uint(denormalized) : __float_as_uint(normalized));
    return __uint_as_float(r);
}

ANV_DEV uint32_t anv_f2h(float f) {
    float base = fabsf(f) * 0x1.0p+112f * 0x1.0p-110f;
    const uint32_t w = __float_as_uint(f), shl1_w = w + w, sign = w & 0x80000000u;
    uint32_t bias = shl1_w & 0xFF000000u;
    if (bias < 0x71000000u) bias = 0x71000000u;
    base = __uint_as_float((bias >> 1) + 0x07800000u) + base;
    const uint32_t bits = __float_as_uint(base);
    const uint32_t nonsign = ((bits >> 13) & 0x00007C00u) + (bits & 0x00000FFFu);
    return (sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign);
}

ANV_DEV uint32_t ld16(const uint8_t *p) { return (uint32_t)p[0] | ((uint32_t)p[1] << 8); }
ANV_DEV uint32_t ld32(const uint8_t *p) { return ld16(p) | (ld16(p + 2) << 16); }

/* ggml's get_scale_min_k4 (Q4_K / Q5_K). */
ANV_DEV void scale_min_k4(int j, const uint8_t *q, int *d, int *m) {
    if (j < 4) { *d = q[j] & 63; *m = q[j + 4] & 63; }
    else { *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4); *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4); }
}

template <int T> ANV_DEV float deq(const uint8_t *row, int64_t c);

template <> __device__ __forceinline__ float deq<0>(const uint8_t *row, int64_t c) { return ((const float *)row)[c]; }
template <> __device__ __forceinline__ float deq<1>(const uint8_t *row, int64_t c) { return anv_h2f(((const uint16_t *)row)[c]); }
template <> __device__ __forceinline__ float deq<30>(const uint8_t *row, int64_t c) { return __uint_as_float((uint32_t)((const uint16_t *)row)[c] << 16); }

/* Q4_0: 18-byte blocks of 32: d, 16 bytes of nibbles (low: 0..15, high: 16..31), q - 8. */
template <> __device__ __forceinline__ float deq<2>(const uint8_t *row, int64_t c) {
    const uint8_t *b = row + (c / 32) * 18;
    const int e = (int)(c % 32);
    const int q = e < 16 ? (b[2 + e] & 0xF) : (b[2 + e - 16] >> 4);
    return (float)(q - 8) * anv_h2f(ld16(b));
}
/* Q4_1: 20-byte blocks: d, m, nibbles; d * q + m. */
template <> __device__ __forceinline__ float deq<3>(const uint8_t *row, int64_t c) {
    const uint8_t *b = row + (c / 32) * 20;
    const int e = (int)(c % 32);
    const int q = e < 16 ? (b[4 + e] & 0xF) : (b[4 + e - 16] >> 4);
    return (float)q * anv_h2f(ld16(b)) + anv_h2f(ld16(b + 2));
}
/* Q5_0: 22-byte blocks: d, qh (bit e = bit 4 of element e), nibbles; q - 16. */
template <> __device__ __forceinline__ float deq<6>(const uint8_t *row, int64_t c) {
    const uint8_t *b = row + (c / 32) * 22;
    const int e = (int)(c % 32);
    const uint32_t qh = ld32(b + 2);
    const int lo = e < 16 ? (b[6 + e] & 0xF) : (b[6 + e - 16] >> 4);
    const int q = lo | (int)(((qh >> e) & 1u) << 4);
    return (float)(q - 16) * anv_h2f(ld16(b));
}
/* Q5_1: 24-byte blocks: d, m, qh, nibbles; d * q + m. */
template <> __device__ __forceinline__ float deq<7>(const uint8_t *row, int64_t c) {
    const uint8_t *b = row + (c / 32) * 24;
    const int e = (int)(c % 32);
    const uint32_t qh = ld32(b + 4);
    const int lo = e < 16 ? (b[8 + e] & 0xF) : (b[8 + e - 16] >> 4);
    const int q = lo | (int)(((qh >> e) & 1u) << 4);
    return (float)q * anv_h2f(ld16(b)) + anv_h2f(ld16(b + 2));
}
/* Q8_0: 34-byte blocks: d, 32 int8. */
template <> __device__ __forceinline__ float deq<8>(const uint8_t *row, int64_t c) {
    const uint8_t *b = row + (c / 32) * 34;
    return (float)(int8_t)b[2 + c % 32] * anv_h2f(ld16(b));
}
/* Q2_K: 84-byte blocks of 256: scales[16], qs[64], d, dmin. */
template <> __device__ __forceinline__ float deq<10>(const uint8_t *row, int64_t c) {
    const uint8_t *b = row + (c / 256) * 84;
    const int e = (int)(c % 256), k = e / 128, r = e % 128, s = r / 32, half = (r % 32) / 16, l = r % 16;
    const int sc = b[k * 8 + s * 2 + half];
    const int q = (b[16 + 32 * k + l + 16 * half] >> (2 * s)) & 3;
    return anv_h2f(ld16(b + 80)) * (float)(sc & 0xF) * (float)q - anv_h2f(ld16(b + 82)) * (float)(sc >> 4);
}
/* Q3_K: 110-byte blocks: hmask[32], qs[64], scales[12], d. */
template <> __device__ __forceinline__ float deq<11>(const uint8_t *row, int64_t c) {
    const uint8_t *b = row + (c / 256) * 110;
    const int e = (int)(c % 256), k = e / 128, r = e % 128, s = r / 32, half = (r % 32) / 16, l = r % 16;
    const int is = k * 8 + s * 2 + half, idx = l + 16 * half;
    const uint8_t *scales = b + 96;
    const int lo = is < 8 ? scales[is] & 0xF : scales[is - 8] >> 4;
    const int sc = (lo | (((scales[8 + is % 4] >> (2 * (is / 4))) & 3) << 4)) - 32;
    const int q = ((b[32 + 32 * k + idx] >> (2 * s)) & 3) - ((b[idx] & (1 << (k * 4 + s))) ? 0 : 4);
    return anv_h2f(ld16(b + 108)) * (float)sc * (float)q;
}
/* Q4_K: 144-byte blocks: d, dmin, scales[12], qs[128]. */
template <> __device__ __forceinline__ float deq<12>(const uint8_t *row, int64_t c) {
    const uint8_t *b = row + (c / 256) * 144;
    const int e = (int)(c % 256), j = e / 64, r = e % 64, l = r % 32;
    int sc, m;
    scale_min_k4(2 * j + (r >= 32), b + 4, &sc, &m);
    const uint8_t qb = b[16 + 32 * j + l];
    const int q = r < 32 ? (qb & 0xF) : (qb >> 4);
    return anv_h2f(ld16(b)) * (float)sc * (float)q - anv_h2f(ld16(b + 2)) * (float)m;
}
/* Q5_K: 176-byte blocks: d, dmin, scales[12], qh[32], qs[128]. */
template <> __device__ __forceinline__ float deq<13>(const uint8_t *row, int64_t c) {
    const uint8_t *b = row + (c / 256) * 176;
    const int e = (int)(c % 256), j = e / 64, r = e % 64, l = r % 32, is = 2 * j + (r >= 32);
    int sc, m;
    scale_min_k4(is, b + 4, &sc, &m);
    const uint8_t qb = b[48 + 32 * j + l];
    const int q = (r < 32 ? (qb & 0xF) : (qb >> 4)) + ((b[16 + l] >> is) & 1 ? 16 : 0);
    return anv_h2f(ld16(b)) * (float)sc * (float)q - anv_h2f(ld16(b + 2)) * (float)m;
}
/* Q6_K: 210-byte blocks: ql[128], qh[64], scales[16] (int8), d. */
template <> __device__ __forceinline__ float deq<14>(const uint8_t *row, int64_t c) {
    const uint8_t *b = row + (c / 256) * 210;
    const int e = (int)(c % 256), k = e / 128, r = e % 128, quarter = r / 32, l = r % 32;
    const uint8_t *ql = b + 64 * k, *qh = b + 128 + 32 * k;
    const int8_t *sc = (const int8_t *)(b + 192 + 8 * k);
    const int lo = quarter & 1 ? ql[l + 32] : ql[l];
    const int q = ((quarter & 2 ? lo >> 4 : lo & 0xF) | (((qh[l] >> (2 * quarter)) & 3) << 4)) - 32;
    return anv_h2f(ld16(b + 208)) * (float)sc[l / 16 + 2 * quarter] * (float)q;
}
#endif
