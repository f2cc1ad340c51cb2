/* vk_coopmat: the cooperative-matrix (VK_KHR_cooperative_matrix) tiled mat-mat path:
 * which configuration a device advertises (only an exactly advertised fp16 x fp16 -> fp32
 * subgroup-scope one is ever used: ACO aborts the process on a WMMA pipeline for a family
 * without matrix cores), why the path is absent, its pipelines ("mul_mm_<type>[_w]_cm",
 * shaders/mul_mm_cm.comp) and their specialization constants. Off with ANVIL_VK_DISABLE=coopmat.
 * The Vulkan headers of Debian 12 predate the extension: its few definitions are repeated here. */
#ifndef ANVIL_VK_COOPMAT_H
#define ANVIL_VK_COOPMAT_H
#include <stdbool.h>
#include <stdint.h>
#include "vk_backend.h"
#include "vk_pipelines.h"

#ifndef VK_KHR_cooperative_matrix
#define VK_KHR_cooperative_matrix 1
#define VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME "VK_KHR_cooperative_matrix"
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR ((VkStructureType)1000506000)
#define VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR ((VkStructureType)1000506001)
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_KHR ((VkStructureType)1000506002)
typedef enum { VK_COMPONENT_TYPE_FLOAT16_KHR = 0, VK_COMPONENT_TYPE_FLOAT32_KHR = 1, VK_COMPONENT_TYPE_MAX_ENUM_KHR = 0x7FFFFFFF } VkComponentTypeKHR;
typedef enum { VK_SCOPE_SUBGROUP_KHR = 3, VK_SCOPE_MAX_ENUM_KHR = 0x7FFFFFFF } VkScopeKHR;
typedef struct VkCooperativeMatrixPropertiesKHR {
    VkStructureType sType;
    void *pNext;
    uint32_t MSize, NSize, KSize;
    VkComponentTypeKHR AType, BType, CType, ResultType;
    VkBool32 saturatingAccumulation;
    VkScopeKHR scope;
} VkCooperativeMatrixPropertiesKHR;
typedef struct VkPhysicalDeviceCooperativeMatrixFeaturesKHR {
    VkStructureType sType;
    void *pNext;
    VkBool32 cooperativeMatrix, cooperativeMatrixRobustBufferAccess;
} VkPhysicalDeviceCooperativeMatrixFeaturesKHR;
typedef struct VkPhysicalDeviceCooperativeMatrixPropertiesKHR {
    VkStructureType sType;
    void *pNext;
    VkShaderStageFlags cooperativeMatrixSupportedStages;
} VkPhysicalDeviceCooperativeMatrixPropertiesKHR;
typedef VkResult (VKAPI_PTR *PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)(VkPhysicalDevice, uint32_t *, VkCooperativeMatrixPropertiesKHR *);
#endif

/* The device's configuration for mul_mm_cm (info->coopmat, coopmat_m/n/k, coopmat_sg), or
 * info->coopmat false and info->coopmat_why the one-line reason (the build's or the device's).
 * Needs the rest of info filled (API version, fp16, subgroup sizes). */
void vk_coopmat_query(VkInstance inst, VkPhysicalDevice pd, anv_vk_device_info *info);

/* The "_cm" twin of a tiled mat-mat pipeline (VKP_MM + type or VKP_MM_W + wide type), -1 if none. */
int vk_coopmat_pipe(int mm_pipe);
/* Fills d for a VKP_MM_CM / VKP_MM_CM_W id; false for any other id. */
bool vk_coopmat_describe(int id, vkp_desc *d);
/* Output rows and tokens one workgroup of the coopmat kernel covers (2 x 2 subgroups of
 * 2 x 2 accumulators of the device's M x N). */
static inline uint32_t vk_coopmat_rows(const anv_vk_device_info *i) { return 4u * i->coopmat_m; }
static inline uint32_t vk_coopmat_toks(const anv_vk_device_info *i) { return 4u * i->coopmat_n; }
/* Specialization constants of mul_mm_cm.comp (7 values: WG, TM, TN, TK, AM, AN, SG). */
void vk_coopmat_spec(const anv_vk_device_info *i, uint32_t spec[7]);
#endif
