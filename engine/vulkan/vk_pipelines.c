/* vk_pipelines: pipeline descriptions (which SPIR-V variant, bindings, push constants,
 * specialization constants, always set explicitly), lazy creation on first use, and the
 * VkPipelineCache kept on disk in ~/.cache/anvil (ANVIL_VK_NO_PIPELINE_CACHE=1 skips it). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "quant.h"
#include "vk_internal.h"
#include "vk_spirv.h"
#include "vk_coopmat.h"
#include "vk_int8.h"
#include "vk_wide.h"
#include "hash.h"
#include "settings.h"

static const uint32_t k_types[VKP_N_TYPES] = { QT_F32, QT_F16, QT_BF16, QT_Q4_0, QT_Q4_1, QT_Q5_0, QT_Q5_1,
                                               QT_Q8_0, QT_Q2_K, QT_Q3_K, QT_Q4_K, QT_Q5_K, QT_Q6_K,
                                               QT_MXFP4, QT_IQ4_NL, QT_IQ4_XS, QT_IQ3_XXS, QT_IQ3_S, QT_IQ2_XXS, QT_IQ2_XS, QT_IQ2_S, QT_IQ1_S, QT_IQ1_M, QT_TQ1_0, QT_TQ2_0 };
static const char *k_type_names[VKP_N_TYPES] = { "f32", "f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1",
                                                 "q8_0", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k",
                                                 "mxfp4", "iq4_nl", "iq4_xs", "iq3_xxs", "iq3_s", "iq2_xxs", "iq2_xs", "iq2_s", "iq1_s", "iq1_m", "tq1_0", "tq2_0" };

int vkp_type_index(uint32_t qtype) {
    for (int i = 0; i < VKP_N_TYPES; i++)
        if (k_types[i] == qtype) return i;
    return -1;
}

#define PC_MAT 44u  /* 11 x u32 */

void vkp_describe(int id, vkp_desc *d) {
    memset(d, 0, sizeof *d);
    if (id >= VKP_GET_ROWS && id < VKP_GET_ROWS + VKP_N_TYPES) {
        snprintf(d->name, sizeof d->name, "get_rows_%s", k_type_names[id - VKP_GET_ROWS]);
        d->n_bind = 3; d->pc_size = 40; d->spec = VKP_SPEC_NONE;
    } else if (id >= VKP_MMV && id < VKP_MMV + VKP_N_TYPES) {
        snprintf(d->name, sizeof d->name, "mul_mat_vec_%s", k_type_names[id - VKP_MMV]);
        d->n_bind = 3; d->pc_size = PC_MAT; d->spec = VKP_SPEC_MV; d->has_sg = true;
    } else if (id >= VKP_MM && id < VKP_MM + VKP_N_TYPES) {
        snprintf(d->name, sizeof d->name, "mul_mm_%s", k_type_names[id - VKP_MM]);
        d->n_bind = 3; d->pc_size = PC_MAT; d->spec = VKP_SPEC_MM; d->has_f16 = true;
    } else if (id >= VKP_MMV_GLU && id < VKP_MMV_GLU + VKP_N_TYPES) { /* vk_fused.c: gate and up weights at binding 0 */
        snprintf(d->name, sizeof d->name, "mul_mat_vec_glu_%s", k_type_names[id - VKP_MMV_GLU]);
        d->n_bind = 3; d->pc_size = PC_MAT + 4; d->spec = VKP_SPEC_MV; d->has_sg = true; d->arr0 = true;
    } else if (id >= VKP_MMV_GLU_W && id <= VKP_MMV_GLU_W_LAST) { /* ... on the repacked layout (vk_wide.c) */
        for (int i = 0; i < VKP_N_TYPES; i++)
            if (vkw_type_index(k_types[i]) == id - VKP_MMV_GLU_W) snprintf(d->name, sizeof d->name, "mul_mat_vec_glu_%s_w", k_type_names[i]);
        d->n_bind = 3; d->pc_size = PC_MAT + 4; d->spec = VKP_SPEC_MV; d->has_sg = true; d->arr0 = true;
    }
    if (id >= VKP_MMV_GLU_W && id <= VKP_MMV_GLU_W_LAST) { /* described above (no grid types) */
    } else if (id < VKP_MM + VKP_N_TYPES || (id >= VKP_MMV_GLU && id < VKP_MMV_GLU + VKP_N_TYPES)) { /* the i-quant grid types read their grid from one more buffer */
        const int g = vk_iq_grid_index(k_types[(id - (id >= VKP_MMV_GLU ? VKP_MMV_GLU : 0)) % VKP_N_TYPES]);
        if (g >= 0) { d->n_bind = 4; d->grid = g + 1; }
    } else {
        switch (id) {
        case VKP_MMVQ_Q4_0: snprintf(d->name, sizeof d->name, "mul_mat_vecq_q4_0"); d->n_bind = 3; d->pc_size = PC_MAT; d->spec = VKP_SPEC_MV; d->has_sg = true; break;
        case VKP_MMVQ_Q8_0: snprintf(d->name, sizeof d->name, "mul_mat_vecq_q8_0"); d->n_bind = 3; d->pc_size = PC_MAT; d->spec = VKP_SPEC_MV; d->has_sg = true; break;
        case VKP_QUANT_Q8_1: snprintf(d->name, sizeof d->name, "quantize_q8_1"); d->n_bind = 2; d->pc_size = 20; break;
        case VKP_RMS_NORM: snprintf(d->name, sizeof d->name, "rms_norm"); d->n_bind = 3; d->pc_size = 32; d->spec = VKP_SPEC_WG; d->has_sg = true; break;
        case VKP_ADD: snprintf(d->name, sizeof d->name, "add"); d->n_bind = 3; d->pc_size = 32; break;
        case VKP_MUL: snprintf(d->name, sizeof d->name, "mul"); d->n_bind = 3; d->pc_size = 32; break;
        case VKP_SCALE: snprintf(d->name, sizeof d->name, "scale"); d->n_bind = 3; d->pc_size = 32; break;
        case VKP_CLAMP: snprintf(d->name, sizeof d->name, "clamp"); d->n_bind = 3; d->pc_size = 36; break;
        case VKP_GLU_SILU: snprintf(d->name, sizeof d->name, "glu_silu"); d->n_bind = 3; d->pc_size = 20; break;
        case VKP_GLU_GELU: snprintf(d->name, sizeof d->name, "glu_gelu"); d->n_bind = 3; d->pc_size = 20; break;
        case VKP_GLU_OAI: snprintf(d->name, sizeof d->name, "glu_oai"); d->n_bind = 3; d->pc_size = 20; break;
        case VKP_ROPE: snprintf(d->name, sizeof d->name, "rope"); d->n_bind = 2; d->pc_size = 64; break;
        case VKP_GLU_SIGMOID: snprintf(d->name, sizeof d->name, "glu_sigmoid"); d->n_bind = 3; d->pc_size = 20; break;
        case VKP_CONV1D_STATE: snprintf(d->name, sizeof d->name, "conv1d_state"); d->n_bind = 4; d->pc_size = 32; break;
        case VKP_DELTA_NET: snprintf(d->name, sizeof d->name, "delta_net"); d->n_bind = 7; d->pc_size = 48; break;
        case VKP_ROPE_ROWS: snprintf(d->name, sizeof d->name, "rope_rows"); d->n_bind = 2; d->pc_size = 24; break;
        case VKP_STORE_F32: snprintf(d->name, sizeof d->name, "store_f32"); d->n_bind = 2; d->pc_size = 28; break;
        case VKP_STORE_F16: snprintf(d->name, sizeof d->name, "store_f16"); d->n_bind = 2; d->pc_size = 28; break;
        case VKP_STORE_Q8_0: snprintf(d->name, sizeof d->name, "store_q8_0"); d->n_bind = 2; d->pc_size = 28; break;
        case VKP_STORE_Q4_0: snprintf(d->name, sizeof d->name, "store_q4_0"); d->n_bind = 2; d->pc_size = 28; break;
        case VKP_FA_F32: snprintf(d->name, sizeof d->name, "flash_attn_f32"); d->n_bind = 5; d->pc_size = 80; d->spec = VKP_SPEC_WG; d->has_sg = true; break;
        case VKP_FA_F16: snprintf(d->name, sizeof d->name, "flash_attn_f16"); d->n_bind = 5; d->pc_size = 80; d->spec = VKP_SPEC_WG; d->has_sg = true; break;
        case VKP_FA_Q8_0: snprintf(d->name, sizeof d->name, "flash_attn_q8_0"); d->n_bind = 5; d->pc_size = 80; d->spec = VKP_SPEC_WG; d->has_sg = true; break;
        case VKP_FA_Q4_0: snprintf(d->name, sizeof d->name, "flash_attn_q4_0"); d->n_bind = 5; d->pc_size = 80; d->spec = VKP_SPEC_WG; d->has_sg = true; break;
        case VKP_FA_SPLIT_F32: case VKP_FA_SPLIT_F16: case VKP_FA_SPLIT_Q8_0: case VKP_FA_SPLIT_Q4_0: {
            static const char *const kv[4] = { "f32", "f16", "q8_0", "q4_0" };
            snprintf(d->name, sizeof d->name, "flash_attn_split_%s", kv[id - VKP_FA_SPLIT_F32]);
            d->n_bind = 5; d->pc_size = 92; d->spec = VKP_SPEC_WG; d->has_sg = true; break;
        }
        case VKP_FA_MERGE: snprintf(d->name, sizeof d->name, "flash_attn_merge"); d->n_bind = 3; d->pc_size = 36; break;
        case VKP_ROPE_STORE_F32: snprintf(d->name, sizeof d->name, "rope_store_f32"); d->n_bind = 6; d->pc_size = 96; break;
        case VKP_ROPE_STORE_F16: snprintf(d->name, sizeof d->name, "rope_store_f16"); d->n_bind = 6; d->pc_size = 96; break;
        case VKP_ROPE_STORE_Q8_0: snprintf(d->name, sizeof d->name, "rope_store_q8_0"); d->n_bind = 6; d->pc_size = 96; break;
        case VKP_ROPE_STORE_Q4_0: snprintf(d->name, sizeof d->name, "rope_store_q4_0"); d->n_bind = 6; d->pc_size = 96; break;
        default: if (!vk_coopmat_describe(id, d) && !vkq_describe(id, d)) vkw_describe(id, d); break; /* integer-dot (vk_int8.c), repacked-layout kernels */
        }
    }
}

uint32_t vkp_spec_constants(const vkp_desc *d, int variant, bool one_tile, uint32_t spec[VKP_MAX_SPEC]) {
    spec[0] = spec[1] = spec[2] = spec[3] = 0;
    switch (d->spec) {
    case VKP_SPEC_WG: spec[0] = 64; return 1;
    case VKP_SPEC_MV: /* WG, ROWS, NTOK, TILE_ALL */
        spec[0] = 64; spec[1] = 1u << (variant / 4); spec[2] = 1u << (variant % 4); spec[3] = one_tile ? 1u : 0u; return 4;
    case VKP_SPEC_MM: spec[0] = 256; spec[1] = 64; spec[2] = 64; return 3;
    default: return 0;
    }
}

void vkp_variant_name(const vkp_desc *d, bool use_subgroup, bool use_fp16, char *out, size_t n) {
    char base[sizeof d->name]; /* a copy: out may lie in the same struct as d (restrict) */
    memcpy(base, d->name, sizeof base);
    snprintf(out, n, "%s%s%s", base, d->has_sg && use_subgroup ? "_sg" : "", d->has_f16 && use_fp16 ? "_f16" : "");
}

static const anv_spirv_blob *find_blob(const char *name) {
    for (int i = 0; i < anv_spirv_count; i++)
        if (strcmp(anv_spirv_blobs[i].name, name) == 0) return &anv_spirv_blobs[i];
    return NULL;
}

static void mkdirs(char *path) {
    for (char *p = path + 1; *p; p++)
        if (*p == '/') { *p = 0; mkdir(path, 0755); *p = '/'; }
}

bool vk_pipelines_init(vk_ctx *c) {
    for (int i = 0; i < VKP_COUNT; i++) vkp_describe(i, &c->pipes[i].desc);
    void *data = NULL;
    size_t size = 0;
    if (!anv_setting_on("ANVIL_VK_NO_PIPELINE_CACHE")) {
        char cache[400];
        const bool have_cache = anv_user_cache_dir(cache, sizeof cache);
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(c->pdev, &p);
        char uuid[33];
        for (int i = 0; i < 16; i++) snprintf(uuid + 2 * i, 3, "%02x", p.pipelineCacheUUID[i]);
        if (have_cache) snprintf(c->pcache_path, sizeof c->pcache_path, "%s/anvil/vk-pipelines-%04x-%04x-%s.bin", cache, p.vendorID, p.deviceID, uuid);
        FILE *f = c->pcache_path[0] ? fopen(c->pcache_path, "rb") : NULL;
        if (f) {
            if (fseek(f, 0, SEEK_END) == 0) {
                long n = ftell(f);
                if (n > 0 && n < (256l << 20) && fseek(f, 0, SEEK_SET) == 0 && (data = malloc((size_t)n))) {
                    size = fread(data, 1, (size_t)n, f);
                    if (size != (size_t)n) size = 0;
                }
            }
            fclose(f);
        }
    }
    VkPipelineCacheCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO, .initialDataSize = size, .pInitialData = size ? data : NULL };
    VkResult r = c->fn.vkCreatePipelineCache(c->dev, &ci, NULL, &c->pcache);
    if (r != VK_SUCCESS && size) { /* a bad file: start empty */
        ci.initialDataSize = 0; ci.pInitialData = NULL;
        r = c->fn.vkCreatePipelineCache(c->dev, &ci, NULL, &c->pcache);
    }
    free(data);
    if (r != VK_SUCCESS) c->pcache = VK_NULL_HANDLE;
    return true;
}

void vk_pipeline_cache_save(vk_ctx *c) {
    if (!c->pcache || !c->pcache_path[0]) return;
    size_t n = 0;
    if (c->fn.vkGetPipelineCacheData(c->dev, c->pcache, &n, NULL) != VK_SUCCESS || n == 0) return;
    void *data = malloc(n);
    if (!data) return;
    if (c->fn.vkGetPipelineCacheData(c->dev, c->pcache, &n, data) == VK_SUCCESS) {
        char tmp[560];
        snprintf(tmp, sizeof tmp, "%s.%s.tmp", c->pcache_path, anv_process_tag());
        mkdirs(tmp);
        FILE *f = fopen(tmp, "wb");
        if (f) {
            bool ok = fwrite(data, 1, n, f) == n;
            ok = fclose(f) == 0 && ok;
            if (ok) rename(tmp, c->pcache_path);
            else remove(tmp);
        }
    }
    free(data);
}

void vk_pipelines_shutdown(vk_ctx *c) {
    vk_pipeline_cache_save(c);
    for (int i = 0; i < VKP_COUNT; i++) {
        vk_pipeline *p = &c->pipes[i];
        for (int v = 0; v < VKP_N_VARIANTS; v++)
            if (p->pipe[v]) c->fn.vkDestroyPipeline(c->dev, p->pipe[v], NULL);
        if (p->layout) c->fn.vkDestroyPipelineLayout(c->dev, p->layout, NULL);
        if (p->dsl) c->fn.vkDestroyDescriptorSetLayout(c->dev, p->dsl, NULL);
    }
    if (c->pcache) c->fn.vkDestroyPipelineCache(c->dev, c->pcache, NULL);
}

VkPipeline vk_pipeline_get(vk_ctx *c, int id, int variant) {
    vk_pipeline *p = &c->pipes[id];
    if (p->pipe[variant]) return p->pipe[variant];
    if (be_failed(&c->base)) return VK_NULL_HANDLE;
    const vkp_desc *d = &p->desc;
    if (d->spec == VKP_SPEC_CM && !c->use_coopmat) { /* never on a configuration the device does not advertise */
        be_fail(&c->base, "Vulkan: %s requested without a cooperative-matrix configuration", d->name);
        return VK_NULL_HANDLE;
    }
    if (!p->layout_ready) {
        VkDescriptorSetLayoutBinding b[8];
        for (int i = 0; i < d->n_bind; i++)
            b[i] = (VkDescriptorSetLayoutBinding){ .binding = (uint32_t)i, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                   .descriptorCount = i == 0 && d->arr0 ? 2u : 1u, .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT };
        VkDescriptorSetLayoutCreateInfo li = { .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, .bindingCount = (uint32_t)d->n_bind, .pBindings = b };
        if (c->fn.vkCreateDescriptorSetLayout(c->dev, &li, NULL, &p->dsl) != VK_SUCCESS) { be_fail(&c->base, "Vulkan: descriptor set layout for %s failed", d->name); return VK_NULL_HANDLE; }
        VkPushConstantRange pr = { VK_SHADER_STAGE_COMPUTE_BIT, 0, d->pc_size };
        VkPipelineLayoutCreateInfo pi = { .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, .setLayoutCount = 1, .pSetLayouts = &p->dsl,
                                          .pushConstantRangeCount = d->pc_size ? 1u : 0u, .pPushConstantRanges = &pr };
        if (c->fn.vkCreatePipelineLayout(c->dev, &pi, NULL, &p->layout) != VK_SUCCESS) { be_fail(&c->base, "Vulkan: pipeline layout for %s failed", d->name); return VK_NULL_HANDLE; }
        vkp_variant_name(d, c->use_subgroup, c->use_fp16, p->used_name, sizeof p->used_name);
        p->layout_ready = true;
    }
    const anv_spirv_blob *blob = find_blob(p->used_name);
    if (!blob) { be_fail(&c->base, "Vulkan: shader variant %s is not built in", p->used_name); return VK_NULL_HANDLE; }
    uint32_t *code = malloc(blob->size + 4);
    if (!code) { be_fail(&c->base, "out of host memory"); return VK_NULL_HANDLE; }
    memcpy(code, blob->data, blob->size);
    VkShaderModuleCreateInfo smi = { .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = blob->size, .pCode = code };
    VkShaderModule mod;
    VkResult r = c->fn.vkCreateShaderModule(c->dev, &smi, NULL, &mod);
    free(code);
    if (r != VK_SUCCESS) { be_fail(&c->base, "Vulkan: shader module %s failed (%s)", p->used_name, vkl_result_name(r)); return VK_NULL_HANDLE; }

    uint32_t spec[VKP_MAX_SPEC];
    uint32_t n_spec = vkp_spec_constants(d, variant, c->use_onetile, spec);
    if (d->spec == VKP_SPEC_CM) { vk_coopmat_spec(&c->info, spec); n_spec = 7; } /* the device's configuration (vk_coopmat.c) */
    VkSpecializationMapEntry me[VKP_MAX_SPEC];
    for (uint32_t i = 0; i < n_spec; i++) me[i] = (VkSpecializationMapEntry){ i, i * 4, 4 };
    VkSpecializationInfo si = { .mapEntryCount = n_spec, .pMapEntries = me, .dataSize = n_spec * 4, .pData = spec };
    /* Subgroup kernels: the device's widest subgroup, full subgroups (every kernel's
     * workgroup is 64, a multiple of any power-of-two size up to 64). */
    uint32_t sg_size = vkp_required_subgroup_size(d, c->use_subgroup, c->use_sgsize ? c->sg_required : 0);
    if (d->spec == VKP_SPEC_CM && c->info.sg_size_control) sg_size = c->info.coopmat_sg; /* vk_coopmat.c's 4 subgroups */
    const bool sized = sg_size != 0;
    VkPipelineShaderStageRequiredSubgroupSizeCreateInfo rs = { .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO,
                                                               .requiredSubgroupSize = sg_size };
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = { .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                   .pNext = sized ? &rs : NULL, .flags = sized ? VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT : 0,
                   .module = mod, .pName = "main", .pSpecializationInfo = n_spec ? &si : NULL },
        .layout = p->layout };
    r = c->fn.vkCreateComputePipelines(c->dev, c->pcache, 1, &ci, NULL, &p->pipe[variant]);
    c->fn.vkDestroyShaderModule(c->dev, mod, NULL);
    if (r != VK_SUCCESS) { p->pipe[variant] = VK_NULL_HANDLE; be_fail(&c->base, "Vulkan: pipeline %s failed (%s)", p->used_name, vkl_result_name(r)); return VK_NULL_HANDLE; }
    return p->pipe[variant];
}
