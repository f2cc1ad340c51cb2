/* vk_backend: creating a backend on one Vulkan device (queue, features, the optional
 * paths and ANVIL_VK_* switches) and the memory half of backend_ops: tensors, weights,
 * uploads, downloads, sync, destroy. The ops are in vk_ops.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "quant.h"
#include "vk_internal.h"
#include "vk_coopmat.h"
#include "vk_int8.h"
#include "vk_spirv.h"
#include "vk_wide.h"
#include "settings.h"

extern const backend_ops vk_backend_ops; /* vk_ops.c */

/* The optional paths ANVIL_VK_DISABLE names (vk_backend.h). */
static const char *const k_paths[] = { "fp16", "subgroup", "int8", "sgsize", "fuse", "splitk", "wide", "coopmat", "onetile", NULL };

const char *vk_optional_paths(void) { return "fp16,subgroup,int8,sgsize,fuse,splitk,wide,coopmat,onetile"; }

/* Checks a disable list ("fp16,subgroup", "all", spaces or commas); 0, or -1 with a
 * one-line anv_last_error() naming the unknown entry. */
int vk_disable_check(const char *list) {
    if (!list) return 0;
    const char *p = list;
    while (*p) {
        while (*p == ',' || *p == ' ') p++;
        if (!*p) break;
        size_t n = strcspn(p, ", ");
        bool ok = n == 3 && !strncmp(p, "all", 3);
        for (int i = 0; k_paths[i] && !ok; i++) ok = strlen(k_paths[i]) == n && !strncmp(p, k_paths[i], n);
        if (!ok) {
            anv_set_error("ANVIL_VK_DISABLE: unknown path '%.*s' (known: %s, all)", (int)(n < 40 ? n : 40), p, vk_optional_paths());
            return -1;
        }
        p += n;
    }
    return 0;
}

/* Is feature in the backend's disable list (or "all")? */
static bool disabled(const vk_ctx *c, const char *feature) {
    const char *v = c->disable;
    size_t n = strlen(feature);
    for (const char *p = v; *p;) {
        while (*p == ',' || *p == ' ') p++;
        size_t k = strcspn(p, ", ");
        if ((k == 3 && !strncmp(p, "all", 3)) || (k == n && !strncmp(p, feature, n))) return true;
        p += k;
    }
    return false;
}

void vkb_destroy(backend *be) {
    vk_ctx *c = vk_of(be);
    if (c->dev) {
        vk_flush(c);
        c->fn.vkDeviceWaitIdle(c->dev);
        vk_profile_report(c);
        vk_tune_shutdown(c);
        vk_storage_free(c, c->scratch_q8);
        vk_storage_free(c, c->scratch_fa);
        vk_iq_grids_free(c);
        vk_pipelines_shutdown(c);
        vk_cmd_shutdown(c);
        vk_memory_shutdown(c);
        c->fn.vkDestroyDevice(c->dev, NULL);
    }
    if (c->vi) vk_instance_release();
    free(c);
}

/* Queue: a compute family, preferring one without graphics. false with anv_last_error(). */
static bool pick_queue(vk_ctx *c) {
    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(c->pdev, &nq, NULL);
    VkQueueFamilyProperties *qf = calloc(nq ? nq : 1, sizeof *qf);
    if (!qf) { anv_set_error("out of host memory"); return false; }
    vkGetPhysicalDeviceQueueFamilyProperties(c->pdev, &nq, qf);
    int fam = -1;
    for (uint32_t i = 0; i < nq && fam < 0; i++)
        if ((qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && !(qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) fam = (int)i;
    for (uint32_t i = 0; i < nq && fam < 0; i++)
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) fam = (int)i;
    if (fam >= 0) c->timestamp_valid_bits = qf[fam].timestampValidBits;
    free(qf);
    if (fam < 0) { anv_set_error("Vulkan device %d (%s) has no compute queue", c->index, c->info.name); return false; }
    c->queue_family = (uint32_t)fam;
    return true;
}

/* Optional paths (after ANVIL_VK_DISABLE), kernel shapes, profiling and the allocation and
 * binding limits (ANVIL_VK_MAX_ALLOCATION). */
/* A byte count with an optional K/M/G suffix; false when unset or malformed. */
static bool env_bytes(const char *name, unsigned long long *out) {
    const char *v = anv_setting_get(name);
    if (!v) return false;
    char *end = NULL;
    unsigned long long x = strtoull(v, &end, 10);
    if (end && (*end == 'k' || *end == 'K')) x <<= 10;
    else if (end && (*end == 'm' || *end == 'M')) x <<= 20;
    else if (end && (*end == 'g' || *end == 'G')) x <<= 30;
    *out = x;
    return true;
}

static bool choose_paths(vk_ctx *c) {
    c->use_fp16 = c->info.fp16 && !disabled(c, "fp16");
    c->use_subgroup = c->info.subgroup_arith && c->info.subgroup_size >= 4 && c->info.subgroup_size <= 64 && !disabled(c, "subgroup");
    c->use_int8 = c->info.int8_dot && !disabled(c, "int8");
    c->use_int8_k = vkq_kquants_requested();
    c->use_wide = !disabled(c, "wide"); /* repacked weights + 16-byte-load kernels (vk_wide.c) */
    c->use_fuse = !disabled(c, "fuse"); /* vk_fused.c (create_device checks its feature) */
    /* Vulkan 1.3 subgroupSizeControl + computeFullSubgroups: the subgroup kernels are
     * created with the device's widest subgroup as their required size and full
     * subgroups (wave64 on RDNA where it is the widest, 32 on NVIDIA, 8 on lavapipe);
     * the shaders read the size from gl_SubgroupSize / gl_NumSubgroups, never assume one. */
    c->use_sgsize = c->use_subgroup && c->info.sg_size_control && !disabled(c, "sgsize");
    c->sg_required = c->use_sgsize ? c->info.subgroup_max : 0;
    if (c->sg_required < 4 || c->sg_required > 64 || (c->sg_required & (c->sg_required - 1))) { c->use_sgsize = false; c->sg_required = 0; }
    /* CPU devices (lavapipe) pay per workgroup: give each more rows. */
    c->mv_rows = c->info.type == ANV_VK_DEVICE_CPU ? 8 : 2;
    /* and their tiled kernel is slow on short batches: mat-vec up to 32 tokens there */
    c->mv_max_tok = c->info.type == ANV_VK_DEVICE_CPU ? 32 : 8;
    c->use_splitk = !disabled(c, "splitk");
    c->use_coopmat = c->info.coopmat && !disabled(c, "coopmat"); /* vk_coopmat.c: an advertised configuration */
    /* CPU devices have no register file to fit: their mat-vec kernels take all tokens in one
     * tile (spec constant TILE_ALL); "onetile" off gives them the GPU's token tiles (tests). */
    c->use_onetile = c->info.type == ANV_VK_DEVICE_CPU && !disabled(c, "onetile");
    int rows = (int)c->mv_rows, mt = c->mv_max_tok, tune = 0;
    if (anv_setting_int("ANVIL_VK_MV_ROWS", 1, 8, &rows) < 0 || anv_setting_int("ANVIL_VK_MV_MAX_TOK", 1, 64, &mt) < 0 ||
        anv_setting_int("ANVIL_VK_TUNE", 0, 1, &tune) < 0 || anv_setting_int("ANVIL_VK_SPLITK", 1, 256, &c->splitk_forced) < 0)
        return false;
    if (rows != 1 && rows != 2 && rows != 4 && rows != 8) { anv_set_error("ANVIL_VK_MV_ROWS: %d is not 1, 2, 4 or 8", rows); return false; }
    c->mv_rows = (uint32_t)rows;
    c->mv_rows_forced = anv_setting_get("ANVIL_VK_MV_ROWS") != NULL;
    c->mv_max_tok = mt;
    c->profile = anv_setting_on("ANVIL_VK_PROFILE") && c->timestamp_valid_bits > 0;
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(c->pdev, &props);
    c->timestamp_period = props.limits.timestampPeriod;
    c->max_alloc = c->info.max_allocation;
    unsigned long long v = 0;
    if (env_bytes("ANVIL_VK_MAX_ALLOCATION", &v) && v >= (64u << 10) && v < c->max_alloc) c->max_alloc = v; /* tests go as low as 64 KiB */
    if (env_bytes("ANVIL_VK_MAX_DEVICE_MEMORY", &v)) c->mem_limit = v;
    c->max_binding = c->info.max_storage_range < c->info.max_buffer_size ? c->info.max_storage_range : c->info.max_buffer_size;
    if (c->max_binding > c->max_alloc) c->max_binding = c->max_alloc;
    return true;
}

/* Device: one compute queue, the features of the chosen paths, its function table.
 * false with anv_last_error() (c->dev left VK_NULL_HANDLE). */
static bool create_device(vk_ctx *c) {
    const vk_instance *vi = c->vi;
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qi = { .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, .queueFamilyIndex = c->queue_family,
                                   .queueCount = 1, .pQueuePriorities = &prio };
    bool v13 = c->info.api_version >= VK_API_VERSION_1_3 && vi->api_version >= VK_API_VERSION_1_3;
    if (!v13) { c->use_int8 = false; c->use_sgsize = false; c->sg_required = 0; c->use_coopmat = false; }
    /* the coopmat pipelines require their subgroup size wherever the device can fix it */
    const bool sgctl = c->use_sgsize || (c->use_coopmat && c->info.sg_size_control);
    VkPhysicalDeviceCooperativeMatrixFeaturesKHR cmf = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR,
                                                         .cooperativeMatrix = VK_TRUE };
    VkPhysicalDeviceVulkan13Features f13 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
                                             .shaderIntegerDotProduct = c->use_int8, .pNext = c->use_coopmat ? &cmf : NULL,
                                             .maintenance4 = c->use_coopmat, /* glslang 15's SPIR-V 1.6: LocalSizeId */
                                             .subgroupSizeControl = sgctl, .computeFullSubgroups = sgctl };
    VkPhysicalDeviceVulkan12Features f12 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                             .shaderFloat16 = c->use_fp16 || c->use_coopmat, .vulkanMemoryModel = c->use_coopmat,
                                             .pNext = v13 ? &f13 : NULL };
    VkPhysicalDeviceVulkan11Features f11 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                             .storageBuffer16BitAccess = VK_TRUE, .pNext = &f12 };
    const char *exts[3];
    uint32_t n_ext = 0;
    if (c->info.has_budget) exts[n_ext++] = VK_EXT_MEMORY_BUDGET_EXTENSION_NAME;
    if (c->use_coopmat) exts[n_ext++] = VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME;
    /* vk_fused.c's gate+up mat-vec indexes its 2-buffer array with a dynamically uniform index */
    VkPhysicalDeviceFeatures2 have = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2 };
    vkGetPhysicalDeviceFeatures2(c->pdev, &have);
    if (!have.features.shaderStorageBufferArrayDynamicIndexing) c->use_fuse = false;
    VkPhysicalDeviceFeatures want = { .shaderStorageBufferArrayDynamicIndexing = c->use_fuse };
    VkDeviceCreateInfo di = { .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = &f11, .queueCreateInfoCount = 1,
                              .pQueueCreateInfos = &qi, .enabledExtensionCount = n_ext, .ppEnabledExtensionNames = exts,
                              .pEnabledFeatures = &want };
    VkResult r = vkCreateDevice(c->pdev, &di, NULL, &c->dev);
    if (r != VK_SUCCESS) {
        c->dev = VK_NULL_HANDLE;
        anv_set_error("Vulkan device %d (%s): vkCreateDevice failed (%s)", c->index, c->info.name, vkl_result_name(r));
        return false;
    }
    if (!vkl_load_device(c->dev, &c->fn)) {
        if (c->fn.vkDestroyDevice) c->fn.vkDestroyDevice(c->dev, NULL);
        c->dev = VK_NULL_HANDLE;
        return false;
    }
    c->fn.vkGetDeviceQueue(c->dev, c->queue_family, 0, &c->queue);
    return true;
}

backend *vk_backend_new(int device_index) { return vk_backend_new_opts(device_index, NULL); }

backend *vk_backend_new_opts(int device_index, const char *disable) {
    if (!disable) disable = anv_setting_raw("ANVIL_VK_DISABLE");
    if (!disable) disable = "";
    if (vk_disable_check(disable) != 0) return NULL;
    char why[256];
    vk_instance *vi = vk_instance_acquire(why, sizeof why);
    if (!vi) return NULL;
    if (device_index < 0 || (uint32_t)device_index >= vi->n_pdev) {
        anv_set_error("Vulkan device %d does not exist (%u device(s))", device_index, vi->n_pdev);
        vk_instance_release();
        return NULL;
    }
    vk_ctx *c = calloc(1, sizeof *c);
    if (!c) { vk_instance_release(); anv_set_error("out of host memory"); return NULL; }
    c->vi = vi;
    c->index = device_index;
    snprintf(c->disable, sizeof c->disable, "%s", disable);
    const char *brk = anv_setting_raw("ANVIL_VK_TEST_BREAK");
    snprintf(c->test_break, sizeof c->test_break, "%s", brk ? brk : "");
    c->pdev = vi->pdev[device_index];
    vk_fill_device_info(vi, device_index, &c->info);
    c->base.ops = &vk_backend_ops;
    c->base.impl = c;
    snprintf(c->name, sizeof c->name, "vulkan%d", device_index);
    c->base.name = c->name;
    if (!c->info.supported) {
        anv_set_error("Vulkan device %d (%s) is not supported: %s", device_index, c->info.name, c->info.unsupported_why);
        vkb_destroy(&c->base);
        return NULL;
    }
    if (!pick_queue(c)) { vkb_destroy(&c->base); return NULL; }
    if (!choose_paths(c)) { vkb_destroy(&c->base); return NULL; }
    if (!create_device(c)) { vkb_destroy(&c->base); return NULL; }
    if (vk_memory_init(c) && vk_cmd_init(c) && vk_pipelines_init(c)) vk_tune_init(c);
    else {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", be_failed(&c->base) ? be_sticky_error(&c->base) : anv_last_error());
        vkb_destroy(&c->base);
        anv_set_error("%s", msg);
        return NULL;
    }
    snprintf(c->desc, sizeof c->desc, "%s (%s, %s %s; fp16 %s, subgroup %s(%u%s), int8 dot %s, coopmat %s)", c->info.name,
             vk_device_type_name(c->info.type), c->info.driver_name, c->info.driver_info,
             c->use_fp16 ? "on" : "off", c->use_subgroup ? "on" : "off", c->use_sgsize ? c->sg_required : c->info.subgroup_size,
             c->use_sgsize ? " required" : "", c->use_int8 ? "on" : "off",
             c->use_coopmat ? c->info.coopmat_why : c->info.coopmat ? "off (ANVIL_VK_DISABLE)" : "absent");
    c->base.device_desc = c->desc;
    return &c->base;
}

bool vk_backend_is(const backend *be) { return be && be->ops == &vk_backend_ops; }

anv_vk_paths vk_backend_paths(const backend *be) {
    anv_vk_paths p = { 0 };
    if (!vk_backend_is(be)) return p;
    const vk_ctx *c = (const vk_ctx *)be;
    p.fp16 = c->use_fp16; p.subgroup = c->use_subgroup; p.int8 = c->use_int8;
    p.sgsize = c->use_sgsize; p.sg_required = c->sg_required;
    p.wide = c->use_wide;
    p.fuse = c->use_fuse;
    p.splitk = c->use_splitk; p.splitk_forced = c->splitk_forced;
    p.coopmat = c->use_coopmat;
    p.subgroup_size = c->info.subgroup_size;
    p.max_allocation = c->max_alloc; p.max_binding = c->max_binding;
    p.mv_max_tok = c->mv_max_tok;
    return p;
}

int vk_backend_take_kernels(backend *be, char *out, size_t out_len) {
    if (out_len) out[0] = 0;
    if (!vk_backend_is(be)) return 0;
    vk_ctx *c = vk_of(be);
    int n = 0;
    size_t o = 0;
    for (int p = 0; p < VKP_COUNT; p++) {
        if (!c->used_since[p]) continue;
        c->used_since[p] = false;
        int w = snprintf(out + o, o < out_len ? out_len - o : 0, "%s%s", n ? "," : "", c->pipes[p].used_name);
        if (w > 0) o += (size_t)w;
        if (o >= out_len) o = out_len ? out_len - 1 : 0;
        n++;
    }
    return n;
}

uint32_t vk_kernels_digest(void) {
    uint32_t h = 2166136261u;
    for (int i = 0; i < anv_spirv_count; i++)
        for (size_t k = 0; k < anv_spirv_blobs[i].size; k++) h = (h ^ anv_spirv_blobs[i].data[k]) * 16777619u;
    return h;
}

int vk_tensor_chunks(const be_tensor *t) {
    return t && t->storage ? ((const vk_storage *)t->storage)->n_chunks : 0;
}

/* ---- memory ops ---- */

be_tensor *vkb_tensor_new(backend *be, uint32_t type, int64_t cols, int64_t rows) {
    vk_ctx *c = vk_of(be);
    const qtype_info *qi = qtype_get(type);
    if (!qi) { anv_set_error("vulkan: unknown tensor type %u", type); return NULL; }
    if (cols <= 0 || rows <= 0) { anv_set_error("vulkan: bad tensor shape %lld x %lld", (long long)rows, (long long)cols); return NULL; }
    size_t rb = qtype_row_size((qtype)type, cols);
    if (rb == 0) { anv_set_error("vulkan: %lld columns is not a multiple of the %s block size", (long long)cols, qi->name); return NULL; }
    if ((uint64_t)rows > SIZE_MAX / rb) { anv_set_error("vulkan: tensor too large"); return NULL; }
    be_tensor *t = calloc(1, sizeof *t);
    if (!t) { anv_set_error("out of host memory"); return NULL; }
    t->storage = vk_storage_new(c, rb * (size_t)rows, rb, false);
    if (!t->storage) { free(t); return NULL; }
    t->be = be; t->type = type; t->cols = cols; t->rows = rows; t->owned = true;
    return t;
}

void vkb_upload(backend *be, be_tensor *t, size_t off, const void *src, size_t n) {
    vk_ctx *c = vk_of(be);
    if (vkw_is_wide(t)) { vkw_upload(c, t, off, src, n); return; }
    vk_storage *s = t->storage;
    size_t lo = t->offset + off, hi = lo + n;
    if (hi > s->total) { be_fail(&c->base, "vulkan: upload of %zu bytes at %zu past the end of a %zu-byte tensor", n, lo, s->total); return; }
    for (int i = 0; i < s->n_chunks; i++) {
        vk_chunk *ch = &s->chunk[i];
        size_t a = lo > ch->begin ? lo : ch->begin, b = hi < ch->begin + ch->size ? hi : ch->begin + ch->size;
        if (a < b) vk_record_upload(c, ch, a - ch->begin, (const uint8_t *)src + (a - lo), b - a);
    }
}

void vkb_download(backend *be, const be_tensor *t, size_t off, void *dst, size_t n) {
    vk_ctx *c = vk_of(be);
    if (vkw_is_wide(t)) { vkw_download(c, t, off, dst, n); return; }
    vk_storage *s = t->storage;
    size_t lo = t->offset + off, hi = lo + n;
    if (hi > s->total) { be_fail(&c->base, "vulkan: download of %zu bytes at %zu past the end of a %zu-byte tensor", n, lo, s->total); memset(dst, 0, n); return; }
    for (int i = 0; i < s->n_chunks; i++) {
        vk_chunk *ch = &s->chunk[i];
        size_t a = lo > ch->begin ? lo : ch->begin, b = hi < ch->begin + ch->size ? hi : ch->begin + ch->size;
        if (a < b) vk_record_download(c, ch, a - ch->begin, (uint8_t *)dst + (a - lo), b - a);
    }
    vk_flush(c);
    if (be_failed(&c->base)) memset(dst, 0, n);
}

be_tensor *vkb_weight_new(backend *be, uint32_t type, int64_t cols, int64_t rows, const void *host_data) {
    if (vk_of(be)->use_wide && vkw_row_stride(type, cols)) return vkw_weight_new(vk_of(be), type, cols, rows, host_data);
    be_tensor *t = vkb_tensor_new(be, type, cols, rows);
    if (!t) return NULL;
    vkb_upload(be, t, 0, host_data, be_nbytes(t));
    vk_ctx *c = vk_of(be);
    if (be_failed(&c->base)) { anv_set_error("%s", be_sticky_error(be)); vk_storage_free(c, t->storage); free(t); return NULL; }
    return t;
}

void vkb_tensor_free(backend *be, be_tensor *t) {
    vk_ctx *c = vk_of(be);
    if (!t) return;
    if (t->owned) {
        if (c->recording) vk_flush(c); /* the GPU may still use it */
        vk_storage_free(c, t->storage);
    }
    free(t);
}

void vkb_sync(backend *be) { vk_flush(vk_of(be)); }

