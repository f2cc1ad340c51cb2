/* matmul_iq_avx512: the AVX512-VNNI form of matmul_iqk_x86.h's i-quant and TQ kernels against
 * Q8_K: the mat-vec in 256-bit vectors via AVX512VL (the per-group scale madd and the int32
 * add fuse into one vpdpwssd; IQ2_XS's in 512-bit ones, table words gathered 8 at a time),
 * prompts through the 16-row vpdpbusd kernel (IQD_ZMM).
 * Installed by mm_kernels_iq_avx512 after mm_kernels_avx512 (cpu_backend.c). */
#include "cpu_kernels.h"

#include <immintrin.h>

/* The build compiles this file for AVX-512 F/BW/VL; VNNI is enabled per function. */
#define IQK_ATTR __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define IQK_DPWSSD(acc, a, b) _mm256_dpwssd_epi32((acc), (a), (b))
#define IQK_SUFFIX _vnni
#define IQD_NT 4
#define IQD_ZMM 1
#include "matmul_iqk_x86.h"

void mm_kernels_iq_avx512(mm_kernels *k) { iqk_install(k); }
