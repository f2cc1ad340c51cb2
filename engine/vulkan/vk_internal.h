/* vk_internal: private structures shared by the Vulkan backend's source files
 * (instance, memory, command recording, pipelines, ops). Not for use outside engine/vulkan. */
#ifndef ANVIL_VK_INTERNAL_H
#define ANVIL_VK_INTERNAL_H
#include "vk_loader.h"
#include "vk_backend.h"
#include "vk_pipelines.h"
#include "error.h"

/* ---- instance (vk_instance.c) ---- */
typedef struct {
    VkInstance instance;
    uint32_t api_version;   /* instance API version used */
    uint32_t n_pdev;
    VkPhysicalDevice *pdev;
} vk_instance;

/* Takes a reference on the process-wide instance (created on first use). */
vk_instance *vk_instance_acquire(char *why, size_t why_len);
void vk_instance_release(void);
bool vk_has_device_extension(const vk_instance *vi, VkPhysicalDevice pd, const char *name);
void vk_fill_device_info(const vk_instance *vi, int index, anv_vk_device_info *out);

/* ---- memory (vk_memory.c) ---- */
typedef struct vk_block vk_block;

/* One VkBuffer covering a row-aligned byte range of a tensor's logical storage. */
typedef struct {
    VkBuffer buf;
    vk_block *block;
    VkDeviceSize mem_offset;
    size_t begin, size;      /* logical bytes [begin, begin + size) of the tensor storage */
    uint8_t *mapped;         /* host pointer when the memory is host-visible and coherent */
    uint64_t write_epoch, read_epoch; /* hazard tracking (vk_cmd.c) */
} vk_chunk;

typedef struct {
    int n_chunks;
    size_t total;
    size_t wide_stride;      /* vk_wide.c: row stride of a repacked weight; 0: the GGUF layout */
    int64_t wide_cols;       /* its columns (views must keep them) */
    vk_chunk chunk[];
} vk_storage;

/* One autotuned choice (vk_tune.c). */
typedef struct { int pipe; int kclass, tclass; uint32_t rows; double us[4]; bool timed; } vk_tune_entry; /* tclass: 1, 2, 4, 8 tokens */

/* ---- the backend context ---- */
typedef struct vk_ctx {
    backend base;
    char name[32], desc[1024];
    vk_instance *vi;
    int index;
    anv_vk_device_info info;
    VkPhysicalDevice pdev;
    VkDevice dev;
    struct VolkDeviceTable fn; /* this device's functions (volk) */
    VkQueue queue;
    uint32_t queue_family;
    /* paths */
    bool use_fp16, use_subgroup, use_int8, use_sgsize;
    bool use_int8_k;         /* Q4_K/Q5_K integer-dot mat-vec too (ANVIL_VK_INT8_K=1, vk_int8.c) */
    bool use_wide;           /* repacked weight layout + 16-byte-load kernels (vk_wide.c) */
    bool use_fuse;           /* the fused decode ops (vk_fused.c) */
    bool use_splitk;         /* split-K decode attention (vk_attention.c) */
    bool use_coopmat;        /* cooperative-matrix tiled mat-mat (vk_coopmat.c) */
    bool use_onetile;        /* mat-vec: all tokens in one tile (CPU devices; spec constant TILE_ALL) */
    int splitk_forced;       /* ANVIL_VK_SPLITK: the split count whenever n_tok is small; 0 = chosen per call */
    uint32_t n_cu;           /* compute units (vk_attention.c, on first use; 0 = not yet known) */
    vk_storage *scratch_fa;  /* split-K partials */
    uint32_t sg_required;    /* requiredSubgroupSize of the subgroup kernels (use_sgsize) */
    char disable[128];       /* ANVIL_VK_DISABLE (or vk_backend_new_opts) */
    char test_break[64];     /* ANVIL_VK_TEST_BREAK: the kernel whose dispatches are skipped (tests) */
    bool used_since[VKP_COUNT]; /* kernels dispatched since vk_backend_take_kernels */
    uint32_t mv_rows;        /* rows per workgroup of the mat-vec kernels (spec constant) */
    bool mv_rows_forced;     /* ANVIL_VK_MV_ROWS set: no autotuning */
    int mv_max_tok;          /* batches up to this size use mat-vec (8 tokens per pass), larger the tiled kernel */
    uint64_t max_alloc, max_binding; /* effective limits for one allocation / one binding */
    uint32_t timestamp_valid_bits;
    float timestamp_period;
    /* memory */
    VkPhysicalDeviceMemoryProperties memprops;
    vk_block *blocks;        /* arena blocks with free space */
    uint64_t block_size;
    uint64_t mem_limit, mem_allocated; /* ANVIL_VK_MAX_DEVICE_MEMORY (tests of the fewer-layers fallback); bytes in blocks */
    /* staging ring: host-visible buffer used by uploads and downloads of one submission */
    VkBuffer staging;
    VkDeviceMemory staging_mem;
    uint8_t *staging_map;
    size_t staging_size, staging_used;
    /* command recording */
    VkCommandPool cmd_pool;
    VkCommandBuffer cmd;
    VkFence fence;
    bool recording;
    uint64_t epoch, cmd_epoch0;
    int n_dispatch_pending;
    VkDescriptorPool *desc_pools;
    int n_desc_pools, cur_desc_pool, desc_sets_in_pool;
    /* pending host copies after the submit completes (downloads through staging) */
    struct vk_readback { size_t staging_off; void *dst; size_t n; } *readbacks;
    int n_readbacks, cap_readbacks;
    /* pipelines */
    VkPipelineCache pcache;
    char pcache_path[512];
    vk_pipeline pipes[VKP_COUNT];
    VkBuffer dummy;          /* bound where an optional input is absent */
    vk_storage *dummy_storage;
    /* profiling */
    bool profile;
    VkQueryPool query_pool;
    uint32_t n_queries;
    struct vk_prof_rec { int pipe; uint64_t bytes; } *prof_pending;
    double prof_ns[VKP_COUNT];
    double prof_bytes[VKP_COUNT];
    uint64_t prof_calls[VKP_COUNT];
    vk_storage *scratch_q8;  /* quantized activations of the integer-dot mat-vec */
    vk_storage *iq_grid[VK_IQ_N_GRIDS]; /* i-quant lookup grids, uploaded on first use (vk_iq_grids.c) */
    /* autotuning (vk_tune.c) */
    int tune_mode;           /* 0 off (ANVIL_VK_TUNE=0 or ANVIL_VK_MV_ROWS), 1 on first use, 2 re-tune everything */
    vk_tune_entry *tune;
    int n_tune, cap_tune;
    bool tune_dirty;
    char tune_path[600];
} vk_ctx;

static inline vk_ctx *vk_of(backend *be) { return (vk_ctx *)be; }

/* vk_memory.c */
bool vk_memory_init(vk_ctx *c);
void vk_memory_shutdown(vk_ctx *c);
vk_storage *vk_storage_new(vk_ctx *c, size_t bytes, size_t row_bytes, bool weights);
void vk_storage_free(vk_ctx *c, vk_storage *s);
/* Chunk holding logical bytes [off, off + n), or NULL if the range spans chunks. */
vk_chunk *vk_storage_find(vk_storage *s, size_t off, size_t n);

/* vk_cmd.c */
bool vk_cmd_init(vk_ctx *c);
void vk_cmd_shutdown(vk_ctx *c);
/* Submits what was recorded and waits for it; 0 or -1 (the backend's sticky error, be_fail). */
int vk_flush(vk_ctx *c);
typedef struct { vk_chunk *ch; bool write; } vk_binding;
/* Records one dispatch of pipeline p; push constants pc (size of the pipeline's block). */
void vk_dispatch(vk_ctx *c, int p, int variant, const vk_binding *b, int nb, const void *pc, uint32_t gx, uint32_t gy, uint32_t gz, uint64_t bytes);
/* Copies n bytes into the staging ring (bindable as a read-only input of a dispatch in
 * this submission: bind chunk NULL); returns the byte offset. */
size_t vk_staging_put(vk_ctx *c, const void *src, size_t n);
/* Records a copy host -> chunk via the staging ring. */
void vk_record_upload(vk_ctx *c, vk_chunk *dst, size_t dst_off, const void *src, size_t n);
/* Records a copy chunk -> host (done at the next flush). */
void vk_record_download(vk_ctx *c, vk_chunk *src, size_t src_off, void *dst, size_t n);
void vk_profile_report(vk_ctx *c);

/* vk_backend.c: the memory half of backend_ops */
void vkb_destroy(backend *be);
be_tensor *vkb_tensor_new(backend *be, uint32_t type, int64_t cols, int64_t rows);
be_tensor *vkb_weight_new(backend *be, uint32_t type, int64_t cols, int64_t rows, const void *host_data);
void vkb_tensor_free(backend *be, be_tensor *t);
void vkb_upload(backend *be, be_tensor *t, size_t off, const void *src, size_t n);
void vkb_download(backend *be, const be_tensor *t, size_t off, void *dst, size_t n);
void vkb_sync(backend *be);

/* vk_iq_grids.c: the i-quant grid of type qtype (index, -1 if none), its device buffer
 * (uploaded on first use; NULL + sticky error on failure), freed at shutdown */
int vk_iq_grid_index(uint32_t qtype);
vk_chunk *vk_iq_grid(vk_ctx *c, int g);
void vk_iq_grids_free(vk_ctx *c);

/* vk_tune.c: first-use autotuning of the mat-vec rows per workgroup */
void vk_tune_init(vk_ctx *c);
void vk_tune_shutdown(vk_ctx *c);
/* Rows per workgroup for mat-vec pipeline `pipe` on this weight (K = pc[0]); the first
 * use of a (kernel, K class) times every variant on b/pc (output to a scratch buffer). */
uint32_t vk_tune_mv_rows(vk_ctx *c, int pipe, const vk_binding *b, const uint32_t *pc, uint32_t nrows, uint64_t w_bytes);
/* Prompts: use coopmat pipeline cm (true) or the tiled mm? The first use of a (kernel, K class)
 * times both on b/pc (up to 64 of the nt tokens, into a scratch output); tuning off: true. */
bool vk_tune_mm_coopmat(vk_ctx *c, int mm, int cm, const vk_binding *b, const uint32_t *pc, uint32_t nrows, uint32_t nt, uint64_t bytes);

/* vk_ops.c: argument checks shared with vk_attention.c (sticky error on failure). vk_span:
 * the one chunk holding bytes [t->offset + off, + n) of t, its local offset; vk_elem_ranges:
 * elements [0, n) of F32 tensors split where any of them changes chunk, range ends multiples
 * of g (bounds[0..count], at most VK_MAX_RANGES); vk_grid2: groups as x (<= 65535) by y. */
#define VK_MAX_RANGES 256
vk_chunk *vk_span(vk_ctx *c, const be_tensor *t, size_t off, size_t n, size_t *local, const char *op);
bool vk_same_be(vk_ctx *c, const be_tensor *t, const char *op);
bool vk_f32_tensor(vk_ctx *c, const be_tensor *t, const char *op);
void vk_grid2(uint32_t groups, uint32_t *gx, uint32_t *gy);
int vk_elem_ranges(vk_ctx *c, const be_tensor *const *ts, int nt, int64_t n, int64_t g, int64_t *bounds, const char *op);

/* vk_attention.c: the attention op (single-pass flash attention; split-K at decode) */
void vk_op_attention(backend *be, const be_tensor *q, const be_tensor *k, const be_tensor *v, be_tensor *out, const be_attn_params *p);

/* vk_fused.c: the optional fused ops (backend.h matmul_glu, rope_store) */
bool vk_op_matmul_glu(backend *be, const be_tensor *wg, const be_tensor *wu, const be_tensor *x, be_tensor *out, int n_tok,
                      be_glu_kind kind);
bool vk_op_rope_store(backend *be, be_tensor *q, const be_tensor *k, const be_tensor *v, be_tensor *kc, be_tensor *vc, int n_tok,
                      int n_head, int n_kv_head, int head_dim, int pos0, const be_rope_params *p);

/* vk_recurrent.c: backend.h conv1d_state and delta_net (qwen35) */
void vk_op_conv1d_state(backend *be, const be_tensor *x, be_tensor *state, const be_tensor *w, be_tensor *out, int n_tok);
void vk_op_delta_net(backend *be, const be_tensor *qkv, const be_tensor *alpha, const be_tensor *beta, const be_tensor *dt_bias,
                     const be_tensor *a, be_tensor *state, be_tensor *out, const be_delta_params *p);

/* vk_pipelines.c */
bool vk_pipelines_init(vk_ctx *c);
void vk_pipelines_shutdown(vk_ctx *c);
/* Creates pipeline p (variant) on first use; VK_NULL_HANDLE (sticky error) on failure. */
VkPipeline vk_pipeline_get(vk_ctx *c, int p, int variant);
void vk_pipeline_cache_save(vk_ctx *c);
#endif
