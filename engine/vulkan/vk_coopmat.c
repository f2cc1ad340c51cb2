/* vk_coopmat: the cooperative-matrix tiled mat-mat path (vk_coopmat.h): the device query
 * that picks an exactly advertised configuration or says why there is none, and the
 * description and specialization of the "mul_mm_<type>[_w]_cm" pipelines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vk_internal.h"
#include "vk_coopmat.h"
#include "vk_spirv.h"

#ifndef ANVIL_COOPMAT_WHY
#define ANVIL_COOPMAT_WHY "built without cooperative-matrix kernels"
#endif

#define CM_BK 32u /* columns per step of mul_mm_cm.comp: the chosen K must divide it */

static bool kernels_built(void) {
    for (int i = 0; i < anv_spirv_count; i++)
        if (strcmp(anv_spirv_blobs[i].name, "mul_mm_f32_cm") == 0) return true;
    return false;
}

/* fp16 x fp16 -> fp32 at subgroup scope, sizes the kernel can tile (M, N <= 32; K divides BK). */
static bool usable(const VkCooperativeMatrixPropertiesKHR *p) {
    return p->AType == VK_COMPONENT_TYPE_FLOAT16_KHR && p->BType == VK_COMPONENT_TYPE_FLOAT16_KHR &&
           p->CType == VK_COMPONENT_TYPE_FLOAT32_KHR && p->ResultType == VK_COMPONENT_TYPE_FLOAT32_KHR &&
           p->scope == VK_SCOPE_SUBGROUP_KHR && !p->saturatingAccumulation && p->MSize >= 1 && p->MSize <= 32 &&
           p->NSize >= 1 && p->NSize <= 32 && p->KSize >= 1 && CM_BK % p->KSize == 0;
}

static void absent(anv_vk_device_info *info, const char *why) {
    info->coopmat = false;
    snprintf(info->coopmat_why, sizeof info->coopmat_why, "%s", why);
}

void vk_coopmat_query(VkInstance inst, VkPhysicalDevice pd, anv_vk_device_info *info) {
    info->coopmat = false;
    info->coopmat_m = info->coopmat_n = info->coopmat_k = info->coopmat_sg = 0;
    if (!kernels_built()) { absent(info, ANVIL_COOPMAT_WHY); return; }
    if (info->api_version < VK_API_VERSION_1_3) { absent(info, "device below Vulkan 1.3"); return; }
    uint32_t n_ext = 0;
    bool has_ext = false;
    if (vkEnumerateDeviceExtensionProperties(pd, NULL, &n_ext, NULL) == VK_SUCCESS && n_ext) {
        VkExtensionProperties *e = calloc(n_ext, sizeof *e);
        if (e && vkEnumerateDeviceExtensionProperties(pd, NULL, &n_ext, e) == VK_SUCCESS)
            for (uint32_t i = 0; i < n_ext && !has_ext; i++) has_ext = !strcmp(e[i].extensionName, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
        free(e);
    }
    if (!has_ext) { absent(info, "the driver does not advertise VK_KHR_cooperative_matrix"); return; }
    VkPhysicalDeviceCooperativeMatrixFeaturesKHR cmf = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR };
    VkPhysicalDeviceVulkan13Features f13 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES, .pNext = &cmf };
    VkPhysicalDeviceVulkan12Features f12 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, .pNext = &f13 };
    VkPhysicalDeviceFeatures2 f2 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f12 };
    vkGetPhysicalDeviceFeatures2(pd, &f2);
    if (!cmf.cooperativeMatrix) { absent(info, "cooperativeMatrix feature off"); return; }
    if (!f12.vulkanMemoryModel) { absent(info, "no vulkanMemoryModel (the coopmat shaders use it)"); return; }
    if (!f12.shaderFloat16) { absent(info, "no shaderFloat16"); return; }
    if (!f13.maintenance4) { absent(info, "no maintenance4 (the SPIR-V 1.6 shaders size workgroups with LocalSizeId)"); return; }
    VkPhysicalDeviceCooperativeMatrixPropertiesKHR cmp = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_KHR };
    VkPhysicalDeviceProperties2 p2 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &cmp };
    vkGetPhysicalDeviceProperties2(pd, &p2);
    if (!(cmp.cooperativeMatrixSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT)) { absent(info, "cooperative matrices not in compute shaders"); return; }
    PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR get =
        (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)vkGetInstanceProcAddr(inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
    uint32_t n = 0;
    if (!get || get(pd, &n, NULL) != VK_SUCCESS || n == 0) { absent(info, "no cooperative-matrix configuration listed"); return; }
    VkCooperativeMatrixPropertiesKHR *cfg = calloc(n, sizeof *cfg);
    if (!cfg) { absent(info, "out of host memory"); return; }
    for (uint32_t i = 0; i < n; i++) cfg[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR;
    int best = -1;
    if (get(pd, &n, cfg) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++) /* the largest usable one (RDNA3: 16x16x16, lavapipe: 8x8x8) */
            if (usable(&cfg[i]) && (best < 0 || cfg[i].MSize * cfg[i].NSize * cfg[i].KSize >
                                                    cfg[best].MSize * cfg[best].NSize * cfg[best].KSize)) best = (int)i;
    if (best < 0) { free(cfg); absent(info, "no fp16 x fp16 -> fp32 subgroup configuration with K dividing 32"); return; }
    uint32_t m = cfg[best].MSize, nn = cfg[best].NSize, k = cfg[best].KSize;
    free(cfg);
    /* 4 subgroups of a size the pipeline can require (wave32 where the device has it: RDNA's
     * WMMA is native there), or the device's only size. */
    uint32_t sg = 0;
    if (info->sg_size_control && info->subgroup_min <= 32 && info->subgroup_max >= 32) sg = 32;
    else if (info->sg_size_control) sg = info->subgroup_max;
    else if (info->subgroup_min == info->subgroup_max) sg = info->subgroup_size;
    if (!sg) { absent(info, "the subgroup size cannot be fixed (no subgroupSizeControl)"); return; }
    const uint32_t shared = (4u * m + 4u * nn) * (CM_BK + 8u) * 2u + 4u * m * nn * 4u;
    if (shared > info->max_shared_memory) { absent(info, "not enough shared memory for the tiles"); return; }
    info->coopmat = true;
    info->coopmat_m = m; info->coopmat_n = nn; info->coopmat_k = k; info->coopmat_sg = sg;
    snprintf(info->coopmat_why, sizeof info->coopmat_why, "%ux%ux%u fp16->fp32, subgroup %u", m, nn, k, sg);
}

int vk_coopmat_pipe(int mm_pipe) {
    if (mm_pipe >= VKP_MM && mm_pipe < VKP_MM + VKP_N_TYPES) return VKP_MM_CM + (mm_pipe - VKP_MM);
    if (mm_pipe >= VKP_MM_W && mm_pipe < VKP_MM_W + VKW_N_TYPES) return VKP_MM_CM_W + (mm_pipe - VKP_MM_W);
    return -1;
}

bool vk_coopmat_describe(int id, vkp_desc *d) {
    int mm;
    if (id >= VKP_MM_CM && id < VKP_MM_CM + VKP_N_TYPES) mm = VKP_MM + (id - VKP_MM_CM);
    else if (id >= VKP_MM_CM_W && id <= VKP_MM_CM_W_LAST) mm = VKP_MM_W + (id - VKP_MM_CM_W);
    else return false;
    vkp_describe(mm, d); /* same bindings (grid included) and push constants */
    const size_t len = strlen(d->name);
    if (len + 3 < sizeof d->name) memcpy(d->name + len, "_cm", 4);
    d->spec = VKP_SPEC_CM;
    d->has_f16 = false;
    d->has_sg = false;
    return true;
}

void vk_coopmat_spec(const anv_vk_device_info *i, uint32_t spec[7]) {
    spec[0] = 4u * i->coopmat_sg; /* WG: 2 x 2 subgroups */
    spec[1] = i->coopmat_m;
    spec[2] = i->coopmat_n;
    spec[3] = i->coopmat_k;
    spec[4] = 2; /* accumulators per subgroup along the rows */
    spec[5] = 2; /* ... along the tokens */
    spec[6] = i->coopmat_sg;
}
