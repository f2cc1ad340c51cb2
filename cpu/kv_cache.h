/* kv_cache: the CPU backend's KV-cache row codecs for the quantized cache types (Q8_0,
 * Q4_0): which types a cache may have, the per-head layout check, and the block -> F32
 * decoder the attention op reads K/V chunks with (scalar, or AVX2 where the CPU has it). */
#ifndef ANVIL_CPU_KV_CACHE_H
#define ANVIL_CPU_KV_CACHE_H
#include <stdbool.h>
#include <stdint.h>

/* n elements (a multiple of 32) of blocks at src to F32. */
typedef void (*kv_dequant_fn)(const void *src, float *dst, int64_t n);

/* Whether t is a KV cache type of the CPU backend (F32, F16, Q8_0, Q4_0). */
bool kv_type_supported(uint32_t t);
/* 0, or -1 with an error naming op when a head of head_dim elements does not start on a
 * block boundary of the quantized type t. */
int kv_check_head_dim(const char *op, uint32_t t, int head_dim);
/* Decoder of a quantized cache type (Q8_0, Q4_0) for the SIMD level (cpu_simd_level);
 * NULL for other types. */
kv_dequant_fn kv_dequant_for(uint32_t t, int simd);
/* The AVX2 decoders (kv_cache_avx2.c). */
void kv_dequant_q4_0_avx2(const void *src, float *dst, int64_t n);
void kv_dequant_q8_0_avx2(const void *src, float *dst, int64_t n);
#endif
