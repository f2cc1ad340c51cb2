/* matmul_avx512: placeholder during development. */
#include "cpu_kernels.h"
void mm_kernels_avx512(mm_kernels *k) { (void)k; }
