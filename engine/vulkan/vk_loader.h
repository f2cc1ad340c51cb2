/* vk_loader: our own Vulkan meta-loader. Opens libvulkan.so.1 (vulkan-1.dll on Windows)
 * at run time, so Anvil has no link-time dependency on Vulkan, and fills the global,
 * instance and device function-pointer tables below (X-macro lists). */
#ifndef ANVIL_VK_LOADER_H
#define ANVIL_VK_LOADER_H
#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <stdbool.h>
#include <stddef.h>
#include <vulkan/vulkan.h>

#define VKL_GLOBAL_FUNCS(X) \
    X(vkCreateInstance) X(vkEnumerateInstanceExtensionProperties) \
    X(vkEnumerateInstanceLayerProperties) X(vkEnumerateInstanceVersion)

#define VKL_INSTANCE_FUNCS(X) \
    X(vkDestroyInstance) X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties) \
    X(vkGetPhysicalDeviceProperties2) X(vkGetPhysicalDeviceFeatures2) \
    X(vkGetPhysicalDeviceMemoryProperties) X(vkGetPhysicalDeviceMemoryProperties2) \
    X(vkGetPhysicalDeviceQueueFamilyProperties) X(vkEnumerateDeviceExtensionProperties) \
    X(vkCreateDevice) X(vkGetDeviceProcAddr)

/* Optional instance functions (extensions): may stay NULL. */
#define VKL_INSTANCE_OPT_FUNCS(X) \
    X(vkCreateDebugUtilsMessengerEXT) X(vkDestroyDebugUtilsMessengerEXT)

#define VKL_DEVICE_FUNCS(X) \
    X(vkDestroyDevice) X(vkGetDeviceQueue) X(vkDeviceWaitIdle) X(vkQueueSubmit) \
    X(vkAllocateMemory) X(vkFreeMemory) X(vkMapMemory) X(vkUnmapMemory) \
    X(vkCreateBuffer) X(vkDestroyBuffer) X(vkGetBufferMemoryRequirements) X(vkBindBufferMemory) \
    X(vkCreateShaderModule) X(vkDestroyShaderModule) \
    X(vkCreatePipelineCache) X(vkDestroyPipelineCache) X(vkGetPipelineCacheData) \
    X(vkCreateComputePipelines) X(vkDestroyPipeline) \
    X(vkCreatePipelineLayout) X(vkDestroyPipelineLayout) \
    X(vkCreateDescriptorSetLayout) X(vkDestroyDescriptorSetLayout) \
    X(vkCreateDescriptorPool) X(vkDestroyDescriptorPool) X(vkResetDescriptorPool) \
    X(vkAllocateDescriptorSets) X(vkUpdateDescriptorSets) \
    X(vkCreateCommandPool) X(vkDestroyCommandPool) X(vkAllocateCommandBuffers) \
    X(vkBeginCommandBuffer) X(vkEndCommandBuffer) X(vkResetCommandBuffer) \
    X(vkCreateFence) X(vkDestroyFence) X(vkWaitForFences) X(vkResetFences) \
    X(vkCmdBindPipeline) X(vkCmdBindDescriptorSets) X(vkCmdPushConstants) X(vkCmdDispatch) \
    X(vkCmdPipelineBarrier) X(vkCmdCopyBuffer) X(vkCmdFillBuffer) \
    X(vkCreateQueryPool) X(vkDestroyQueryPool) X(vkCmdResetQueryPool) X(vkCmdWriteTimestamp) \
    X(vkGetQueryPoolResults)

#define VKL_DECLARE(name) PFN_##name name;

typedef struct {
    PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr;
    VKL_GLOBAL_FUNCS(VKL_DECLARE)
} vkl_global_fns;

typedef struct {
    VKL_INSTANCE_FUNCS(VKL_DECLARE)
    VKL_INSTANCE_OPT_FUNCS(VKL_DECLARE)
} vkl_instance_fns;

typedef struct {
    VKL_DEVICE_FUNCS(VKL_DECLARE)
} vkl_device_fns;

/* Loads the Vulkan loader library once per process (thread-safe). Returns the global
 * table, or NULL with a one-line reason in why (and anv_last_error()). */
const vkl_global_fns *vkl_load(char *why, size_t why_len);
/* Fills the instance table; false (with anv_set_error) if a required entry is missing. */
bool vkl_load_instance(VkInstance inst, vkl_instance_fns *out);
/* Fills the device table through vkGetDeviceProcAddr. */
bool vkl_load_device(const vkl_instance_fns *ifn, VkDevice dev, vkl_device_fns *out);
/* "VK_ERROR_OUT_OF_DEVICE_MEMORY" etc. */
const char *vkl_result_name(VkResult r);
#endif
