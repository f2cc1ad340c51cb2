/* cpu_backend: the CPU implementation of backend.h: threaded, with AVX2/AVX-512 kernels
 * chosen at run time and plain C otherwise. Weights alias the mmap'd GGUF (zero copy). */
#ifndef ANVIL_CPU_BACKEND_H
#define ANVIL_CPU_BACKEND_H
#include "backend.h"
#include "backend_extras.h"

/* n_threads <= 0: all cores. NULL with anv_last_error() on failure, e.g. when
 * ANVIL_CPU_SIMD is set to something other than scalar, avx2 or avx512. */
backend *cpu_backend_new(int n_threads);
int cpu_backend_threads(const backend *be);
/* True if be is a CPU backend. */
bool cpu_backend_is(const backend *be);
/* Its optional entries (cpu_extras.c): the host bandwidth probe, the `-v` description. */
extern const backend_extras cpu_backend_extras;
/* cpu_backend_new whose weights are never repacked (as ANVIL_CPU_REPACK=0): for a model
 * loaded only to read its shape and bytes (the placement probe), which repacking would
 * cost a pass over every weight for nothing. */
backend *cpu_backend_new_unpacked(int n_threads);
/* "avx512", "avx2" or "scalar": the kernel set cpu_backend_new would choose now (the best
 * this CPU has, lowered by ANVIL_CPU_SIMD=scalar|avx2|avx512). NULL with anv_last_error()
 * when ANVIL_CPU_SIMD has another value (cpu_backend_new then fails with the same message).
 * Never exits the process. */
const char *cpu_backend_simd(void);

/* What the last model load (backend_ops weights_end) did with the packed weights: the
 * repack cache file (cpu/repack_cache.h) used or written, and the cost. */
typedef enum { CPU_REPACK_CACHE_NONE = 0, CPU_REPACK_CACHE_HIT = 1, CPU_REPACK_CACHE_WRITTEN = 2 } cpu_repack_cache_state;
typedef struct {
    cpu_repack_cache_state cache; /* NONE: off, not keyed, too large for the bound, or a write error */
    bool rebuilt;                 /* a cache file was there but unusable (logged), and was replaced */
    int n_weights;                /* distinct packed weights */
    uint64_t packed_bytes;
    double seconds;               /* repack (and write) or map (and verify) */
    char path[4096 + 160];        /* the cache file ("" when not keyed) */
    char reason[8192];            /* why the cache file was not used or written (also logged), or "" */
} cpu_repack_info;
void cpu_backend_repack_info(const backend *be, cpu_repack_info *out);
#endif
