/* vk_extras: the Vulkan backend's optional entries (backend_extras.h): the device bandwidth
 * probe (vk_membw.c), the autotuned rows for `-v` logs, and what the kernel self-check
 * needs: the kernels a case ran, the optional paths (ANVIL_VK_DISABLE) they belong to, the
 * device reopened without one, and the cache name of device + driver + kernels. */
#include <stdio.h>
#include <string.h>

#include "vk_backend.h"
#include "vk_extras.h"
#include "vk_membw.h"

static int vk_membw(backend *be, size_t bytes, double *gbps, char *source, size_t source_len) {
    if (vk_membw_read(be, bytes, gbps) != 0) {
        snprintf(source, source_len, "no probe for %s", be->name);
        return -1;
    }
    snprintf(source, source_len, "vulkan membw shader, %zu MiB", bytes >> 20);
    return 0;
}

static int vk_describe(backend *be, char *out, size_t out_len) {
    char tuned[2048];
    if (vk_backend_tuning(be, tuned, sizeof tuned) <= 0) return 0;
    const int n = snprintf(out, out_len, "%s autotuned: %s", be->name, tuned);
    return n < 0 ? 0 : n;
}

static void vk_take_kernels(backend *be, char *out, size_t out_len) { vk_backend_take_kernels(be, out, out_len); }

static int vk_matvec_max_tokens(const backend *be) { return vk_backend_paths(be).mv_max_tok; }

/* A repacked-layout kernel ("_w" variant: mul_mat_vec_q4_0_w_sg, get_rows_q8_0_w, ...) in the list. */
static bool has_wide_kernel(const char *k) {
    for (const char *p = strstr(k, "_w"); p; p = strstr(p + 1, "_w"))
        if (p[2] == 0 || p[2] == ',' || p[2] == '_') return true;
    return false;
}

/* The optional paths the kernels belong to, most specific first. */
static int vk_fix_candidates(const backend *be, const char *kernels, const char **out) {
    const bool sgsize = vk_backend_paths(be).sgsize;
    int n = 0;
    if (strstr(kernels, "_cm")) out[n++] = "coopmat"; /* the scalar tiled mat-mat instead (vk_coopmat.c) */
    if (strstr(kernels, "_glu_") || strstr(kernels, "rope_store")) out[n++] = "fuse"; /* the unfused ops instead */
    if (strstr(kernels, "flash_attn_split") || strstr(kernels, "flash_attn_merge")) out[n++] = "splitk"; /* the single-pass kernel instead */
    if (strstr(kernels, "_sg")) { if (sgsize) out[n++] = "sgsize"; out[n++] = "subgroup"; }
    if (strstr(kernels, "vecq") || strstr(kernels, "quantize_q8_1")) out[n++] = "int8";
    if (strstr(kernels, "_f16")) out[n++] = "fp16";
    if (has_wide_kernel(kernels)) out[n++] = "wide";
    return n;
}

static bool vk_verify_key(int device_index, char *out, size_t out_len) {
    anv_vk_device_info info;
    if (vk_device_info_get(device_index, &info) != 0) return false;
    snprintf(out, out_len, "vk-verify-%04x-%04x-%08x-%08x.txt", info.vendor_id, info.device_id, info.driver_version,
             vk_kernels_digest());
    return true;
}

const backend_extras vk_backend_extras = {
    .kind = "vulkan",
    .is = vk_backend_is,
    .membw = vk_membw,
    .describe = vk_describe,
    .take_kernels = vk_take_kernels,
    .matvec_max_tokens = vk_matvec_max_tokens,
    .fix_setting = "ANVIL_VK_DISABLE",
    .fix_candidates = vk_fix_candidates,
    .reopen_without = vk_backend_new_opts,
    .verify_key = vk_verify_key,
};
