/* vk_pipelines: the ids of every compute pipeline of the Vulkan backend and their
 * per-id description (SPIR-V variant, bindings, push-constant size, specialization). */
#ifndef ANVIL_VK_PIPELINES_H
#define ANVIL_VK_PIPELINES_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan.h>

/* Weight types with shaders, in this order (index = vkp_type_index()). */
#define VKP_N_TYPES 25
#define VK_IQ_N_GRIDS 6 /* i-quant lookup grids (vk_iq_grids.c) */
int vkp_type_index(uint32_t qtype); /* -1 if the type has no shaders */
#define VKW_N_TYPES 6 /* weight types with a repacked layout (vk_wide.c) */
#define VKQ_N_IDS 9 /* integer-dot mat-vec kernels of mul_mat_vecq_x.comp (vk_int8.c) */

enum {
    VKP_GET_ROWS = 0,
    VKP_MMV = VKP_GET_ROWS + VKP_N_TYPES,
    VKP_MM = VKP_MMV + VKP_N_TYPES,
    VKP_MMVQ_Q4_0 = VKP_MM + VKP_N_TYPES,
    VKP_MMVQ_Q8_0,
    VKP_QUANT_Q8_1,
    VKP_RMS_NORM,
    VKP_ADD, VKP_MUL, VKP_SCALE,
    VKP_GLU_SILU, VKP_GLU_GELU, VKP_GLU_OAI,
    VKP_ROPE,
    VKP_GET_ROWS_W, /* the kernels reading the repacked layout (vk_wide.c), VKW_N_TYPES of each */
    VKP_MMV_W = VKP_GET_ROWS_W + VKW_N_TYPES,
    VKP_MM_W = VKP_MMV_W + VKW_N_TYPES,
    VKP_MMVQ_Q4_0_W = VKP_MM_W + VKW_N_TYPES, VKP_MMVQ_Q8_0_W,
    VKP_MMV_Q4_K_W, VKP_MMV_Q5_K_W, /* GGUF layout (16-byte blocks), uvec4 loads */
    VKP_STORE_F32, VKP_STORE_F16, VKP_STORE_Q8_0, VKP_STORE_Q4_0,
    VKP_FA_F32, VKP_FA_F16, VKP_FA_Q8_0, VKP_FA_Q4_0,
    VKP_FA_SPLIT_F32, VKP_FA_SPLIT_F16, VKP_FA_SPLIT_Q8_0, VKP_FA_SPLIT_Q4_0, VKP_FA_MERGE, /* split-K decode */
    VKP_MMV_GLU, /* fused gate/up mat-vec + glu per weight type (vk_fused.c) */
    VKP_ROPE_STORE_F32 = VKP_MMV_GLU + VKP_N_TYPES, VKP_ROPE_STORE_F16, VKP_ROPE_STORE_Q8_0, VKP_ROPE_STORE_Q4_0,
    VKP_MMV_GLU_W, VKP_MMV_GLU_W_LAST = VKP_MMV_GLU_W + VKW_N_TYPES - 1, /* their "_w" twins (vk_wide.c's types) */
    VKP_MMVQ_X, VKP_MMVQ_X_LAST = VKP_MMVQ_X + VKQ_N_IDS - 1, /* integer-dot mat-vec of Q4_1..Q6_K (vk_int8.c) */
    VKP_GLU_SIGMOID, VKP_CONV1D_STATE, VKP_DELTA_NET, /* qwen35 */
    VKP_CLAMP, /* gemma4v's clipped linears */
    VKP_ROPE_ROWS, /* rope by a per-row table (M-RoPE images, the qwen-vl ViT) */
    VKP_MM_CM, /* cooperative-matrix twins of VKP_MM (per type) and VKP_MM_W (vk_coopmat.c) */
    VKP_MM_CM_W = VKP_MM_CM + VKP_N_TYPES, VKP_MM_CM_W_LAST = VKP_MM_CM_W + VKW_N_TYPES - 1,
    VKP_COUNT
};

/* Mat-vec pipelines exist per token count (spec constant NTOK): 1, 2, 4, 8, and per rows
 * per workgroup (spec constant ROWS, the autotuned choice): 1, 2, 4, 8.
 * variant = ntok index + 4 * rows index. */
#define VKP_N_VARIANTS 16
static inline int vkp_ntok_variant(int n_tok) { return n_tok <= 1 ? 0 : n_tok <= 2 ? 1 : n_tok <= 4 ? 2 : 3; }
static inline int vkp_rows_index(uint32_t rows) { return rows <= 1 ? 0 : rows <= 2 ? 1 : rows <= 4 ? 2 : 3; }
static inline int vkp_mv_variant(int n_tok, uint32_t rows) { return vkp_ntok_variant(n_tok) + 4 * vkp_rows_index(rows); }

typedef enum { VKP_SPEC_NONE, VKP_SPEC_WG, VKP_SPEC_MV, VKP_SPEC_MM, VKP_SPEC_CM } vkp_spec_kind;

typedef struct {
    char name[48];          /* SPIR-V base name; "_sg"/"_f16" appended when those paths are used */
    int n_bind;
    uint32_t pc_size;
    vkp_spec_kind spec;
    bool has_sg, has_f16;   /* variants exist */
    int grid;               /* 1 + the i-quant grid bound after the n_bind - 1 given bindings (vk_dispatch); 0: none */
    bool arr0;              /* binding 0 is an array of 2 buffers: vk_dispatch's b[0], b[1] (n_bind counts bindings) */
} vkp_desc;

typedef struct {
    vkp_desc desc;
    VkPipeline pipe[VKP_N_VARIANTS];
    VkPipelineLayout layout;
    VkDescriptorSetLayout dsl;
    bool layout_ready;
    char used_name[64];     /* resolved SPIR-V variant (profile output) */
} vk_pipeline;

void vkp_describe(int id, vkp_desc *out);
/* How many pipelines (variants) one id can have: the 16 ROWS x NTOK ones of a mat-vec kernel, else 1. */
static inline int vkp_n_variants(const vkp_desc *d) { return d->spec == VKP_SPEC_MV ? VKP_N_VARIANTS : 1; }
/* The specialization constants vk_pipeline_get sets for a variant (written to spec, count
 * returned); one_tile: the mat-vec kernels take all their tokens in one tile (CPU devices,
 * lavapipe: no register file to fit; GPUs get token tiles that bound registers). The one truth
 * for them: the ACO gate (tools/aco/) compiles with these too (one_tile false, as on RADV). */
#define VKP_MAX_SPEC 7
uint32_t vkp_spec_constants(const vkp_desc *d, int variant, bool one_tile, uint32_t spec[VKP_MAX_SPEC]);
/* The SPIR-V variant a description resolves to ("_sg" / "_f16" when those paths are used). */
void vkp_variant_name(const vkp_desc *d, bool use_subgroup, bool use_fp16, char *out, size_t n);
/* The required subgroup size the pipeline is created with (with full subgroups), 0 for none:
 * subgroup kernels get the device's widest size when size control is used (sg_required, else 0). */
static inline uint32_t vkp_required_subgroup_size(const vkp_desc *d, bool use_subgroup, uint32_t sg_required) {
    return d->has_sg && use_subgroup ? sg_required : 0;
}
#endif
