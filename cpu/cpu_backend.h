/* cpu_backend: the CPU implementation of backend.h: threaded, with AVX2/AVX-512 kernels
 * chosen at run time and plain C otherwise. Weights alias the mmap'd GGUF (zero copy). */
#ifndef ANVIL_CPU_BACKEND_H
#define ANVIL_CPU_BACKEND_H
#include "backend.h"

/* n_threads <= 0: all cores. NULL with anv_last_error() on failure, e.g. when
 * ANVIL_CPU_SIMD is set to something other than scalar, avx2 or avx512. */
backend *cpu_backend_new(int n_threads);
int cpu_backend_threads(const backend *be);
/* "avx512", "avx2" or "scalar": the kernel set cpu_backend_new would choose now (the best
 * this CPU has, lowered by ANVIL_CPU_SIMD=scalar|avx2|avx512). NULL with anv_last_error()
 * when ANVIL_CPU_SIMD has another value (cpu_backend_new then fails with the same message).
 * Never exits the process. */
const char *cpu_backend_simd(void);
#endif
