/* cpu_backend: the CPU implementation of backend.h: threaded, with AVX2/AVX-512 kernels
 * chosen at run time and plain C otherwise. Weights alias the mmap'd GGUF (zero copy). */
#ifndef ANVIL_CPU_BACKEND_H
#define ANVIL_CPU_BACKEND_H
#include "backend.h"

/* n_threads <= 0: all cores. */
backend *cpu_backend_new(int n_threads);
int cpu_backend_threads(const backend *be);
/* "avx512", "avx2" or "scalar": the kernel set chosen for this CPU (ANVIL_CPU_SIMD=scalar|avx2|avx512 overrides). */
const char *cpu_backend_simd(void);
#endif
