/* test_kv_q4_0: the CPU backend's Q4_0 KV cache (store_rows, attention) against ref_ops,
 * on every SIMD path this CPU has (ANVIL_CPU_SIMD) at 1 and 3 threads; the cases are
 * tests/cpu/kv_q4_0_cases.h, shared with the Vulkan and HIP tests. */
#include "cpu_backend.h"
#include "kv_q4_0_cases.h"

#include <stdio.h>

int main(void) {
    anv_log_enabled = 0;
    const char *paths[3] = {"scalar", "avx2", "avx512"};
    setenv("ANVIL_CPU_SIMD", "avx512", 1);
    const char *best = cpu_backend_simd();
    const int n_paths = !strcmp(best, "avx512") ? 3 : !strcmp(best, "avx2") ? 2 : 1;
    for (int pi = 0; pi < n_paths; pi++) {
        setenv("ANVIL_CPU_SIMD", paths[pi], 1);
        for (int threads = 1; threads <= 3; threads += 2) {
            backend *be = cpu_backend_new(threads);
            CHECK(be != NULL);
            if (!be) continue;
            printf("path %s, %d thread(s)\n", paths[pi], threads);
            kvq_test_store(be, true);
            kvq_test_attention(be, 256);
            be->ops->destroy(be);
        }
    }
    return tu_finish();
}
