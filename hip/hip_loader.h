/* hip_loader: opens the ROCm HIP runtime (libamdhip64) at run time with dlopen and fills a
 * table of the few hip* entry points Anvil uses, so the anvil binary has no link-time ROCm
 * dependency. The library is $ANVIL_HIP_LIBRARY when set (tests point it at the fake
 * runtime in tests/hip/), else libamdhip64.so.{7,6,5}, libamdhip64.so, then
 * $ROCM_PATH/lib and /opt/rocm/lib. A missing library, a missing entry point (a ROCm too
 * old for this build) or a runtime older than ANV_HIP_MIN_VERSION is reported in one line.
 * The types are declared here (ABI-stable subset) instead of including ROCm headers. */
#ifndef ANVIL_HIP_LOADER_H
#define ANVIL_HIP_LOADER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Oldest HIP runtime accepted: ROCm 5.2 (the code objects are built by its clang, v4). */
#define ANV_HIP_MIN_VERSION 50200000 /* HIP_VERSION = major * 10^7 + minor * 10^5 + patch */

typedef int anv_hip_err;      /* hipError_t; 0 = hipSuccess */
typedef void *anv_hip_module; /* hipModule_t */
typedef void *anv_hip_func;   /* hipFunction_t */
typedef void *anv_hip_stream; /* hipStream_t */
#define ANV_HIP_OOM 2         /* hipErrorOutOfMemory */

typedef struct {
    void *lib;
    char path[512];
    anv_hip_err (*hipInit)(unsigned flags);
    anv_hip_err (*hipRuntimeGetVersion)(int *v);
    anv_hip_err (*hipGetDeviceCount)(int *n);
    anv_hip_err (*hipSetDevice)(int dev);
    anv_hip_err (*hipDeviceGetName)(char *name, int len, int dev);
    anv_hip_err (*hipDeviceGetPCIBusId)(char *bus, int len, int dev);
    anv_hip_err (*hipDeviceTotalMem)(size_t *bytes, int dev);
    anv_hip_err (*hipGetDeviceProperties)(void *props, int dev); /* read only for gcnArchName */
    anv_hip_err (*hipMemGetInfo)(size_t *free_b, size_t *total_b);
    anv_hip_err (*hipMalloc)(void **p, size_t n);
    anv_hip_err (*hipFree)(void *p);
    anv_hip_err (*hipMemcpyHtoD)(void *dst, const void *src, size_t n);
    anv_hip_err (*hipMemcpyDtoH)(void *dst, void *src, size_t n);
    anv_hip_err (*hipDeviceSynchronize)(void);
    anv_hip_err (*hipModuleLoadData)(anv_hip_module *m, const void *image);
    anv_hip_err (*hipModuleUnload)(anv_hip_module m);
    anv_hip_err (*hipModuleGetFunction)(anv_hip_func *f, anv_hip_module m, const char *name);
    anv_hip_err (*hipModuleLaunchKernel)(anv_hip_func f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                         unsigned bz, unsigned shared, anv_hip_stream s, void **params, void **extra);
    anv_hip_err (*hipGetLastError)(void);
    const char *(*hipGetErrorString)(anv_hip_err e);
    /* Optional (may be NULL). */
    anv_hip_err (*hipDeviceGetUuid)(uint8_t uuid[16], int dev);
    int runtime_version;
} anv_hip_api;

/* The process-wide runtime, opened and hipInit'ed once (thread-safe). NULL with a one-line
 * reason in why (also kept for later calls: anv_hip_why()). */
const anv_hip_api *anv_hip_api_get(char *why, size_t why_len);
/* "hipErrorOutOfMemory (2)"-style text of an error code. */
const char *anv_hip_strerror(const anv_hip_api *api, anv_hip_err e);
/* snprintf that truncates silently (vsnprintf: no -Wformat-truncation noise). */
void anv_hip_fmt(char *dst, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Tests: forget the loaded runtime (dlclose) so the next get opens $ANVIL_HIP_LIBRARY again. */
void anv_hip_api_reset(void);
#endif
