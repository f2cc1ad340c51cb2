/* matmul_avx512: AVX-512 VNNI kernels (256-bit vpdpbusd via AVX512VL) for the 32-element
 * weight types: one instruction replaces AVX2's maddubs + madd per block and token. The
 * kernels themselves are matmul_k32_x86.h; the K-quants keep the AVX2 kernels (their
 * per-16-element integer scales need the madd step either way). */
#include "cpu_kernels.h"
#include "fp16.h"

#include <immintrin.h>

/* The build compiles this file for AVX-512 F/BW/VL; VNNI is enabled per function. */
#define K32_ATTR __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define K32_IDOT(u, s) _mm256_dpbusd_epi32(_mm256_setzero_si256(), (u), (s))
#define K32_SUFFIX _vnni
#include "matmul_k32_x86.h"

void mm_kernels_avx512(mm_kernels *k) { k32_install(k); }
