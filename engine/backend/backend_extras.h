/* backend_extras: the optional entries of a backend beside its ops (backend.h): what the
 * tools (`anvil bench`, `-v`) and the device layer's kernel self-check (gpu_verify.c) ask of
 * any backend without naming it. Each backend fills one (cpu_extras.c, vk_extras.c,
 * hip_extras.c); the device layer finds it (device_extras.h). An entry a backend has not is
 * NULL: no bandwidth probe, nothing to describe, no optional paths to retry without. */
#ifndef ANVIL_BACKEND_EXTRAS_H
#define ANVIL_BACKEND_EXTRAS_H
#include <stdbool.h>
#include <stddef.h>

#include "backend.h"

#define BE_MAX_FIX_CANDIDATES 10

typedef struct backend_extras {
    const char *kind;   /* "cpu", "vulkan", "hip" */
    /* True if be is one of this backend's. */
    bool (*is)(const backend *be);
    /* Read bandwidth of the device's memory in GB/s over about `bytes` (>= 1 MiB); source
     * receives what measured it. 0, or -1 + anv_last_error() (source: what failed). */
    int (*membw)(backend *be, size_t bytes, double *gbps, char *source, size_t source_len);
    /* One log line on how be runs (CPU: its kernel set and threads; Vulkan: the autotuned
     * rows); its length, 0 when there is nothing to say. */
    int (*describe)(backend *be, char *out, size_t out_len);
    /* The names of the kernels be dispatched since the last call, comma separated, then
     * forgets them ("" when it cannot say). */
    void (*take_kernels)(backend *be, char *out, size_t out_len);
    /* Batches up to this many tokens run be's mat-vec kernels (the self-check goes past it). */
    int (*matvec_max_tokens)(const backend *be);
    /* The variable that turns optional paths off ("ANVIL_VK_DISABLE"), NULL if there are none;
     * fix_candidates: the paths the kernels belong to, most specific first (at most
     * BE_MAX_FIX_CANDIDATES), and reopen_without: device device_index again with `disable` off. */
    const char *fix_setting;
    int (*fix_candidates)(const backend *be, const char *kernels, const char **out);
    backend *(*reopen_without)(int device_index, const char *disable);
    /* The self-check cache's file name for device device_index + its driver + this build's
     * kernels (no folder); false when the device cannot say. */
    bool (*verify_key)(int device_index, char *out, size_t out_len);
} backend_extras;
#endif
