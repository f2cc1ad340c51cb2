/* matmul_avx512: AVX-512 VNNI kernels (256-bit forms via AVX512VL). The 32-element weight
 * types (matmul_k32_x86.h) use vpdpbusd in place of AVX2's maddubs + madd per block and
 * token; the K-quants (matmul_kq_x86.h) keep maddubs (their per-16/32-element integer
 * scales need an int16 step) but fuse the scale madd and the int32 add into vpdpwssd. */
#include "cpu_kernels.h"
#include "fp16.h"

#include <immintrin.h>

/* The build compiles this file for AVX-512 F/BW/VL; VNNI is enabled per function. */
#define K32_ATTR __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define K32_IDOT(u, s) _mm256_dpbusd_epi32(_mm256_setzero_si256(), (u), (s))
#define K32_SUFFIX _vnni
#define K32_NT4 8
#include "matmul_k32_x86.h"

#define KQ_ATTR K32_ATTR
#define KQ_DPWSSD(acc, a, b) _mm256_dpwssd_epi32((acc), (a), (b))
#define KQ_SUFFIX _vnni
#define KQ_ROWS4 1
#include "matmul_kq_x86.h"

void mm_kernels_avx512(mm_kernels *k) {
    k32_install(k);
    kq_install(k);
    mm_packed_install_avx512(k);
    mm_packed_q5_install_avx512(k);
    mm_packed_float_install_avx512(k);
    attn_tile_install_avx512(k);
}
