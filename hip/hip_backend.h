/* hip_backend: the HIP implementation of backend.h for ROCm AMD GPUs, host side in C over
 * the run-time loaded runtime (hip_loader.h) and the kernels of hip_kernels.hip, built at
 * build time for each gfx target of the build and embedded (hip_codeobj.h). Also the
 * enumeration the device layer uses (engine/device/device_hip_runtime.c). */
#ifndef ANVIL_HIP_BACKEND_H
#define ANVIL_HIP_BACKEND_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "backend.h"

typedef struct {
    char name[256];        /* "AMD Radeon RX 7900 XTX" */
    char gfx[48];          /* "gfx1100" (gcnArchName, features included when reported) */
    char pci_bus_id[32];   /* "0000:03:00.0" ("" if unknown) */
    bool has_uuid;
    uint8_t uuid[16];      /* ROCm: 16 ASCII characters ("GPU-" + these is the ROCR id) */
    uint64_t mem_total, mem_free;
    bool integrated;       /* an APU (by gfx target: gfx1035/1036/1103/1150-1153/90c ...) */
    int runtime_version;   /* HIP_VERSION of the runtime */
} anv_hip_device_info;

/* GPUs the runtime sees (after ROCR/HIP_VISIBLE_DEVICES, which it applies), or -1 with a
 * one-line reason (no runtime, too old, hipInit failed). */
int hip_device_count(char *why, size_t why_len);
/* 0, or -1 with anv_last_error(). */
int hip_device_info_get(int index, anv_hip_device_info *out);
/* The gfx targets compiled into this build, comma separated ("gfx1030,gfx1100"). */
const char *hip_build_targets(void);
/* The runtime library in use ("libamdhip64.so.6" or $ANVIL_HIP_LIBRARY), "" if none. */
const char *hip_runtime_path(void);
/* Opens device `index` running the code object built for `gfx` (the device's target after
 * HSA_OVERRIDE_GFX_VERSION; features such as ":xnack-" are ignored). NULL + anv_last_error(). */
backend *hip_backend_new(int index, const char *gfx);
/* Device bytes this backend holds now (tensors + weights + scratch). */
uint64_t hip_backend_allocated(const backend *be);
/* The code object target the backend runs ("gfx1100"). */
const char *hip_backend_target(const backend *be);
/* Whether be is a HIP backend. */
bool hip_backend_is(const backend *be);
/* The kernels launched since the last call ("matvec_q4_0,rms_norm"), then forgets them. */
void hip_backend_take_kernels(backend *be, char *out, size_t out_len);
/* FNV-1a of every code object of this build (the verify cache key changes with it). */
uint32_t hip_kernels_digest(void);
#endif
