/* vk_backend: the public face of the Vulkan backend: device enumeration, a per-device
 * info query (for the device-selection layer built on top), and the backend.h
 * implementation for one device. Without a loader, driver or device every call fails
 * with a one-line reason and the CPU backend keeps working.
 * Environment: ANVIL_VK_VALIDATE=1 (validation layer; messages counted and printed),
 * ANVIL_VK_DISABLE=fp16,subgroup,int8,sgsize,fuse,splitk,wide,coopmat|all (force fallback paths; an unknown name is an error),
 * ANVIL_VK_SPLITK=1..256 (split-K decode attention: that many KV chunks whenever it applies; tests),
 * ANVIL_VK_TEST_BREAK=<kernel> (tests: dispatches of that kernel are skipped, a planted wrong kernel), ANVIL_VK_MAX_ALLOCATION=<bytes>
 * (lower the per-allocation limit), ANVIL_VK_PROFILE=1 (per-kernel GPU times at destroy),
 * ANVIL_VK_NO_PIPELINE_CACHE=1 (do not read/write ~/.cache/anvil), ANVIL_VK_MV_ROWS=1..8 (rows per
 * mat-vec workgroup; default 2, 8 on CPU devices), ANVIL_VK_MV_MAX_TOK=1..64 (batches up to this
 * size use mat-vec kernels; default 8, 32 on CPU devices), ANVIL_VK_TUNE=0|1 (first-use autotuning of
 * the mat-vec rows per workgroup off / re-time everything; vk_tune.c). A malformed value is a
 * one-line error. */
#ifndef ANVIL_VK_BACKEND_H
#define ANVIL_VK_BACKEND_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "backend.h"

typedef enum {
    ANV_VK_DEVICE_OTHER = 0,
    ANV_VK_DEVICE_INTEGRATED,
    ANV_VK_DEVICE_DISCRETE,
    ANV_VK_DEVICE_VIRTUAL,
    ANV_VK_DEVICE_CPU,
} anv_vk_device_type;

#define ANV_VK_MAX_HEAPS 16

typedef struct {
    uint64_t size;        /* bytes */
    uint64_t budget;      /* VK_EXT_memory_budget; = size when the extension is absent */
    uint64_t usage;       /* bytes in use by this process (budget extension), else 0 */
    bool device_local;
} anv_vk_heap;

typedef struct {
    int index;                   /* physical-device index as enumerated */
    char name[256];
    uint32_t vendor_id, device_id;
    anv_vk_device_type type;
    uint32_t api_version;        /* VK_MAKE_API_VERSION */
    char driver_name[256];       /* VkPhysicalDeviceDriverProperties */
    char driver_info[256];
    uint32_t driver_version;     /* raw, vendor-encoded */
    bool has_pci;                /* VK_EXT_pci_bus_info */
    char pci_bus_id[32];         /* "0000:03:00.0" when has_pci */
    uint8_t uuid[16];            /* VkPhysicalDeviceIDProperties.deviceUUID */
    char uuid_str[40];
    int n_heaps;
    anv_vk_heap heaps[ANV_VK_MAX_HEAPS];
    bool has_budget;
    uint64_t device_local_bytes, device_local_budget; /* sums over device-local heaps */
    bool uma;                    /* integrated or CPU: memory shared with the host */
    /* Capabilities. */
    bool storage16;              /* storageBuffer16BitAccess (required) */
    bool fp16;                   /* shaderFloat16 arithmetic */
    bool int8_dot;               /* shaderIntegerDotProduct */
    bool int8_dot_accelerated;   /* integerDotProduct4x8BitPackedSignedAccelerated */
    uint32_t subgroup_size, subgroup_min, subgroup_max;
    bool subgroup_arith;         /* compute stage, basic + arithmetic ops */
    bool subgroup_shuffle;
    bool sg_size_control;        /* Vulkan 1.3 subgroupSizeControl + computeFullSubgroups, compute stage */
    uint64_t max_allocation;     /* maxMemoryAllocationSize */
    uint64_t max_storage_range;  /* maxStorageBufferRange */
    uint64_t max_buffer_size;    /* maintenance4 maxBufferSize, else max_allocation */
    uint32_t max_shared_memory;  /* maxComputeSharedMemorySize */
    uint32_t min_storage_align;  /* minStorageBufferOffsetAlignment */
    /* VK_KHR_cooperative_matrix (vk_coopmat.c): the advertised fp16 x fp16 -> fp32 subgroup
     * configuration the tiled mat-mat uses, its subgroup size; else why not. */
    bool coopmat;
    uint32_t coopmat_m, coopmat_n, coopmat_k, coopmat_sg;
    char coopmat_why[192];
    bool supported;              /* Vulkan >= 1.2 and 16-bit storage */
    char unsupported_why[128];
} anv_vk_device_info;

/* Number of Vulkan physical devices (any type), or -1 with a one-line reason in why
 * ("Vulkan unavailable: libvulkan.so.1 not found (install libvulkan1)", ...). 0 devices
 * also fills why. */
int vk_device_count(char *why, size_t why_len);
/* Info about device `index` (< vk_device_count()); 0, or -1 with anv_last_error(). */
int vk_device_info_get(int index, anv_vk_device_info *out);
/* "discrete", "integrated", "virtual", "cpu", "other". */
const char *vk_device_type_name(anv_vk_device_type t);
/* Index of the first device of `type`, or -1 (tests pick lavapipe with ANV_VK_DEVICE_CPU). */
int vk_device_find(anv_vk_device_type type);

/* A backend on device `index`; NULL with anv_last_error() on failure. */
backend *vk_backend_new(int device_index);
/* The same with an explicit ANVIL_VK_DISABLE list (NULL = the environment's; "" = none). */
backend *vk_backend_new_opts(int device_index, const char *disable);
/* "fp16,subgroup,int8,sgsize,fuse,splitk,wide,coopmat": every optional path ANVIL_VK_DISABLE can name. */
const char *vk_optional_paths(void);
/* 0 if every entry of list names an optional path (or "all"); -1 + anv_last_error(). */
int vk_disable_check(const char *list);
/* Comma-separated names of the kernels (SPIR-V variants) dispatched since the last call,
 * then forgets them; returns their count (doctor --verify attributes each op). */
int vk_backend_take_kernels(backend *be, char *out, size_t out_len);
/* A digest of every embedded SPIR-V kernel (keys cached self-check results to this build's kernels). */
uint32_t vk_kernels_digest(void);
/* The autotuned choices so far ("mul_mat_vec_q4_k_sg K~2^11: 4 rows; ..."); their count. */
int vk_backend_tuning(backend *be, char *out, size_t out_len);
/* True if be is a Vulkan backend. */
bool vk_backend_is(const backend *be);
/* Which optional paths this backend uses (after ANVIL_VK_DISABLE): for tests and logs. */
typedef struct {
    bool fp16, subgroup, int8, sgsize;
    bool wide;               /* repacked weight layout + 16-byte-load kernels (vk_wide.c) */
    bool fuse;               /* the fused decode ops (vk_fused.c) */
    bool splitk;             /* split-K decode attention (vk_attention.c) */
    bool coopmat;            /* cooperative-matrix tiled mat-mat (vk_coopmat.c) */
    int splitk_forced;       /* ANVIL_VK_SPLITK, 0 = the split count is chosen per call */
    uint32_t subgroup_size, sg_required;
    uint64_t max_allocation, max_binding;
    int mv_max_tok;          /* matmul batches up to this many tokens use the mat-vec kernels */
} anv_vk_paths;
anv_vk_paths vk_backend_paths(const backend *be);
/* Number of chunks (separate VkBuffers) backing tensor t (tests of the large-weight split). */
int vk_tensor_chunks(const be_tensor *t);
/* Validation-layer messages (warnings and errors) seen in this process (ANVIL_VK_VALIDATE=1). */
int vk_validation_messages(void);
/* True while the validation layer's debug messenger is installed (ANVIL_VK_VALIDATE=1). */
bool vk_validation_active(void);
#endif
