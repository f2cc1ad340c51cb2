/* device: the device-selection layer. Every backend (CPU, Vulkan, later HIP) registers an
 * enumerator; device_list_probe() lists every device through every backend, and
 * device_list_select() decides which ones are used, with a plain-words reason for every
 * device that is not: dedup of one GPU seen twice (Vulkan+HIP, RADV+AMDVLK), the type
 * policy (discrete > integrated > CPU; software rasterisers only when asked), and the
 * environment variables (ANVIL_VK_VISIBLE_DEVICES, GGML_VK_VISIBLE_DEVICES,
 * HIP/ROCR/CUDA_VISIBLE_DEVICES, ANVIL_BACKEND, ANVIL_DEVICE, ANVIL_IGPU,
 * HSA_OVERRIDE_GFX_VERSION). device_plan_make() then places a model's layers on the used
 * devices (split in proportion to free memory, or by a --tensor-split override) and writes
 * one log line per device, including the ones not used and why.
 *
 * Never a silent CPU fallback: a malformed variable, an index that does not exist or an
 * explicit request that cannot be honoured is an error naming the variable. */
#ifndef ANVIL_DEVICE_H
#define ANVIL_DEVICE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "backend.h"
#include "error.h"

#define DEVICE_MAX 32
#define DEVICE_MAX_NOTES 16
#define DEVICE_DEFAULT_RESERVE (256ull << 20) /* headroom left free on each GPU */

typedef enum { DEV_BACKEND_CPU = 0, DEV_BACKEND_VULKAN, DEV_BACKEND_HIP } dev_backend_kind;
typedef enum { DEV_TYPE_DISCRETE = 0, DEV_TYPE_INTEGRATED, DEV_TYPE_VIRTUAL, DEV_TYPE_SOFTWARE, DEV_TYPE_CPU, DEV_TYPE_OTHER } dev_type;
typedef enum { DEV_OS_LINUX = 0, DEV_OS_WINDOWS, DEV_OS_OTHER } dev_os;

/* Why a device is not used (DEV_SKIP_NONE when it is). */
typedef enum {
    DEV_SKIP_NONE = 0,
    DEV_SKIP_UNSUPPORTED,   /* the backend cannot run on it (Vulkan < 1.2, no 16-bit storage, ...) */
    DEV_SKIP_HIP_TARGET,    /* gfx target not in this HIP build */
    DEV_SKIP_ENV,           /* hidden or excluded by an environment variable */
    DEV_SKIP_DUPLICATE,     /* the same GPU through another backend or driver is used */
    DEV_SKIP_SOFTWARE,      /* software rasteriser: only when asked */
    DEV_SKIP_VIRTUAL,       /* virtual / other GPU type: only when asked */
    DEV_SKIP_IGPU,          /* integrated GPU while a discrete GPU is used (or ANVIL_IGPU=0) */
    DEV_SKIP_EXTRA_IGPU,    /* only the first integrated GPU is used */
    DEV_SKIP_CPU_FALLBACK,  /* the CPU: holds only what does not go to a GPU */
} dev_skip;

typedef struct {
    /* Filled by the enumerator. */
    dev_backend_kind backend;
    int backend_index;        /* set by the probe: position in the enumerator's list (Vulkan:
                                 physical-device index; HIP: index before the visibility variables) */
    char name[256];           /* "AMD Radeon RX 7900 XTX (RADV NAVI31)" */
    uint32_t vendor_id, device_id;
    dev_type type;
    char driver_name[128];    /* "radv", "AMD open-source driver", "llvmpipe", "ROCm 6.2" */
    char driver_info[128];    /* "Mesa 24.2.8" */
    bool has_pci;
    char pci_bus_id[32];      /* "0000:03:00.0" */
    bool has_uuid;
    uint8_t uuid[16];
    char uuid_str[48];        /* Vulkan "xxxxxxxx-xxxx-..."; HIP "GPU-xxxxxxxxxxxxxxxx" */
    uint64_t mem_total, mem_free; /* bytes usable by this device (UMA: shared memory it may use) */
    bool mem_free_known;      /* false: mem_free = mem_total (no budget extension) */
    char mem_detail[224];     /* Vulkan: the heaps (UMA: carve-out vs shared GTT), budget source, memory path */
    bool fp16, int8_dot;
    bool coopmat;             /* Vulkan: VK_KHR_cooperative_matrix configuration the mat-mat uses */
    char coopmat_info[192];   /* "16x16x16 fp16->fp32, subgroup 32", or why the path is absent ("" = not Vulkan) */
    uint32_t subgroup_size;
    uint64_t max_allocation, max_storage_range;
    char gfx_target[48];      /* HIP (and AMD Vulkan when known): "gfx1100", "gfx90a:xnack-" */
    bool supported;
    char unsupported_why[160];

    /* Filled by device_list_probe / device_list_select. */
    char id[24];              /* "vulkan0", "hip1", "cpu"; "-" for a HIP device hidden by a variable */
    char desc[200];           /* "llvmpipe / Mesa lavapipe 22.3.6" (for logs) */
    char effective_gfx[48];   /* HIP: gfx target after HSA_OVERRIDE_GFX_VERSION */
    bool used;
    bool explicit_pick;       /* named by ANVIL_DEVICE or ANVIL_VK_VISIBLE_DEVICES */
    int duplicate_of;         /* index of the used copy of the same GPU, or -1 */
    dev_skip skip;
    char why[256];            /* why not used (or the CPU's role) */
    char fix[256];            /* what to do to use it ("" if nothing to do) */
} dev_info;

/* The hook every backend registers through. enumerate() writes up to max devices into out
 * (zeroed by the caller) and returns their count, or -1 with a one-line reason in why when
 * the backend is unavailable (no loader, no runtime). open() creates the backend for a
 * device (NULL with anv_last_error()). */
typedef struct device_enumerator {
    dev_backend_kind kind;
    const char *name;                /* "vulkan", "hip" */
    int (*enumerate)(void *user, dev_info *out, int max, char *why, size_t why_len);
    backend *(*open)(void *user, const dev_info *d, int n_threads);
    void *user;
    /* HIP only: gfx targets compiled into the HIP build ("gfx1030,gfx1100,gfx11-generic"). */
    const char *hip_targets;
    /* HIP only: true if the enumerator goes through the ROCm runtime, which applies
     * ROCR/HIP/CUDA_VISIBLE_DEVICES itself (then they are validated and reported, not reapplied). */
    bool runtime_applies_visibility;
} device_enumerator;

/* Registers a backend's enumerator (copied; at most one per kind: a second replaces the
 * first). 0, or -1 with anv_last_error(). */
int device_register(const device_enumerator *e);
/* Forgets every registration (tests); the next probe registers the built-in ones again
 * unless device_registry_use_builtin(false). */
void device_registry_reset(void);
/* Whether probe registers the built-in backends (CPU always; Vulkan when built with
 * ANVIL_HAVE_VULKAN; HIP when built with ANVIL_HAVE_HIP). Default true; tests turn it off
 * and register synthetic enumerators (the CPU device is always listed). */
void device_registry_use_builtin(bool on);

#ifdef ANVIL_HAVE_VULKAN
/* engine/device/device_vulkan.c */
const device_enumerator *device_vulkan_enumerator(void);
#endif
#ifdef ANVIL_HAVE_HIP
/* Provided by the HIP backend (hip/). */
const device_enumerator *device_hip_enumerator(void);
#endif

/* The environment the policy reads; NULL = unset. An empty value is the same as unset. */
typedef struct {
    const char *anvil_vk_visible;   /* ANVIL_VK_VISIBLE_DEVICES (wins over GGML_VK_VISIBLE_DEVICES) */
    const char *ggml_vk_visible;    /* GGML_VK_VISIBLE_DEVICES */
    const char *hip_visible;        /* HIP_VISIBLE_DEVICES (wins over CUDA_VISIBLE_DEVICES) */
    const char *rocr_visible;       /* ROCR_VISIBLE_DEVICES (applied first: indices or GPU-<uuid>) */
    const char *cuda_visible;       /* CUDA_VISIBLE_DEVICES */
    const char *backend;            /* ANVIL_BACKEND=vulkan|hip|cpu */
    const char *device;             /* ANVIL_DEVICE=vulkan0|hip0|cpu */
    const char *igpu;               /* ANVIL_IGPU=0|1 */
    const char *hsa_override;       /* HSA_OVERRIDE_GFX_VERSION=10.3.0 (Linux only) */
    dev_os os;
} device_env;

/* Reads the variables above from the process environment. */
void device_env_from_process(device_env *env);

typedef struct device_list {
    int n;
    dev_info dev[DEVICE_MAX];
    int n_notes;
    char notes[DEVICE_MAX_NOTES][256]; /* backend-level facts: "vulkan: unavailable: ..." */
    int n_probe_notes;                 /* notes[0..n_probe_notes) come from the probe, the rest from select */
    bool vulkan_built, hip_built;
    int vk_count;                      /* Vulkan devices enumerated, -1 = Vulkan unavailable */
    char vk_why[256];
    int hip_count;                     /* -1 = HIP unavailable or not built */
    char hip_why[256];
    char hip_targets[256];
    const char *vk_var;                /* the Vulkan visibility variable in effect, or NULL */
    bool selected;
} device_list;

/* Lists every device through every registered backend, the CPU last. Never fails on a
 * missing backend (its reason goes to notes); NULL only when out of memory. */
device_list *device_list_probe(void);
void device_list_free(device_list *l);
/* Applies visibility, dedup and the type policy: sets used/why/fix on every device.
 * 0, or -1 with anv_last_error() naming the variable (the caller exits non-zero). */
int device_list_select(device_list *l, const device_env *env);
/* Indices of the used GPUs in placement order (the order anvil devices lists them, which
 * is also the order of --tensor-split values); returns their count. */
int device_list_used_gpus(const device_list *l, int *idx, int max);
/* Index of the device with this id ("vulkan0", "cpu"), or -1. */
int device_list_find(const device_list *l, const char *id);
/* Creates the backend for device i (CPU: cpu_backend_new(n_threads)). */
backend *device_open(const device_list *l, int i, int n_threads);

/* HIP target logic (exposed for tests and doctor). */
/* True if gfx (e.g. "gfx1031", "gfx90a:sramecc+:xnack-") is covered by a target list
 * ("gfx1030,gfx11-generic"), exactly or through an LLVM generic target. */
bool hip_target_in_build(const char *gfx, const char *targets);
/* "10.3.0" -> "gfx1030", "9.0.10" -> "gfx90a". 0, or -1 if malformed. */
int hip_gfx_from_version(const char *version, char *out, size_t out_len);
/* If gfx is not in the build but a sibling of the same major.minor is (gfx1031 -> gfx1030),
 * writes the HSA_OVERRIDE_GFX_VERSION value for it ("10.3.0") and returns true. */
bool hip_override_suggestion(const char *gfx, const char *targets, char *out, size_t out_len);

/* Parses "3,1" / "3 1" / "0.75,0.25" into at most max non-negative weights, not all zero.
 * Returns the count, or -1 with anv_last_error() naming `what`. */
int device_parse_split(const char *what, const char *s, float *out, int max);

/* ---- placement ---- */
typedef struct {
    int n_layer;
    const uint64_t *layer_weight_bytes; /* [n_layer] */
    const uint64_t *layer_kv_bytes;     /* [n_layer] KV cache at the requested context (NULL = 0) */
    uint64_t output_bytes;              /* output norm + head: travels with the last layer */
    uint64_t output_tied_bytes;         /* part of output_bytes that is the embedding table (tied head): no extra memory on the CPU */
    uint64_t compute_bytes;             /* activations/scratch needed on each GPU used */
    uint64_t cpu_bytes;                 /* always on the CPU (token embeddings), for the log */
    int n_gpu_layers;                   /* -1 = as many as fit, 0 = CPU only, N = the last N layers */
    const char *tensor_split;           /* "3,1" over the used GPUs in order, or NULL = by free memory */
    int64_t reserve_bytes;              /* headroom kept free on each GPU; < 0 = DEVICE_DEFAULT_RESERVE */
} device_plan_request;

typedef struct {
    int device;                   /* index in the device_list */
    int layer_begin, layer_end;   /* layers [begin, end); empty when equal */
    bool has_output;
    uint64_t weight_bytes, kv_bytes, compute_bytes;
    char line[320];               /* "vulkan0 (llvmpipe / Mesa lavapipe 22.3.6): layers 0-17 + output, ..." */
} device_plan_entry;

typedef struct {
    int n_entries;                /* devices holding layers, in layer order (CPU first if any) */
    device_plan_entry entries[DEVICE_MAX];
    int n_notes;                  /* one line per device not used and why */
    char notes[DEVICE_MAX][400];
    int n_gpu_layers;             /* layers placed on GPUs */
} device_plan;

/* Places the layers: CPU gets layers [0, n_layer - n_gpu), the used GPUs the rest in
 * order, split by tensor_split or in proportion to free memory. With n_gpu_layers = -1 as
 * many layers as fit go to the GPUs; an explicit N that does not fit, a bad tensor_split,
 * or GPU layers with no usable GPU (ANVIL_BACKEND/ANVIL_DEVICE forcing one) is an error.
 * 0, or -1 with anv_last_error(). l must be selected. */
int device_plan_make(const device_list *l, const device_plan_request *req, device_plan *out);
/* Index of the entry (in out->entries) holding layer il, or -1. */
int device_plan_layer_entry(const device_plan *p, int il);
/* anv_log()s every entry line, then every note. */
void device_plan_log(const device_plan *p);

/* Small helpers shared with the CLI and doctor. */
/* snprintf that truncates silently (a vsnprintf wrapper: no -Wformat-truncation noise). */
void dev_fmt(char *dst, size_t dst_len, const char *fmt, ...) ANV_PRINTF(3, 4);
const char *dev_type_name(dev_type t);        /* "discrete", "integrated", "virtual", "software", "cpu", "other" */
const char *dev_backend_name(dev_backend_kind k); /* "cpu", "vulkan", "hip" */
/* "162 MiB", "7.8 GiB". */
void dev_format_bytes(uint64_t bytes, char *out, size_t out_len);
/* "fp16 int8dot sg32" */
void dev_format_features(const dev_info *d, char *out, size_t out_len);
/* Host memory (Linux /proc/meminfo MemTotal / MemAvailable); 0 if unknown. */
uint64_t dev_host_mem_total(void);
uint64_t dev_host_mem_available(void);
#endif
