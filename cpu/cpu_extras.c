/* cpu_extras: the CPU backend's optional entries (backend_extras.h): the host memory
 * bandwidth probe (membw.c) and the kernel set and threads for `-v` logs. */
#include <stdio.h>

#include "cpu_backend.h"
#include "error.h"
#include "membw.h"

static int cpu_membw(backend *be, size_t bytes, double *gbps, char *source, size_t source_len) {
    (void)be;
    membw_result r;
    if (membw_read(bytes, 0, 5, &r) != 0) {
        snprintf(source, source_len, "cpu membw failed");
        return -1;
    }
    *gbps = r.gbps;
    snprintf(source, source_len, "cpu membw %s, %d threads, %zu MiB", r.kernel, r.n_threads, r.bytes >> 20);
    return 0;
}

static int cpu_describe(backend *be, char *out, size_t out_len) {
    const int n = snprintf(out, out_len, "cpu kernels: %s, %d threads", cpu_backend_simd(), cpu_backend_threads(be));
    return n < 0 ? 0 : n;
}

const backend_extras cpu_backend_extras = {
    .kind = "cpu",
    .is = cpu_backend_is,
    .membw = cpu_membw,
    .describe = cpu_describe,
};
