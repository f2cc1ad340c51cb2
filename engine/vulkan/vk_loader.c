/* vk_loader: volk's initialization, once per process, and the checks of the function
 * pointers it loaded (see vk_loader.h). Nothing here links against libvulkan. */
#include "vk_loader.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "error.h"
#include "settings.h"
#ifdef _WIN32
#include <windows.h>
#else
#include <dlfcn.h>
#include <pthread.h>
#endif

/* The functions Anvil calls (the ones a conforming 1.2 loader and driver always have;
 * checked so that a broken one gives an error instead of a call through NULL). */
#define VKL_INSTANCE_FUNCS(X) \
    X(vkDestroyInstance) X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties) \
    X(vkGetPhysicalDeviceProperties2) X(vkGetPhysicalDeviceFeatures2) \
    X(vkGetPhysicalDeviceMemoryProperties) X(vkGetPhysicalDeviceMemoryProperties2) \
    X(vkGetPhysicalDeviceQueueFamilyProperties) X(vkEnumerateDeviceExtensionProperties) \
    X(vkCreateDevice) X(vkGetDeviceProcAddr) X(vkGetInstanceProcAddr)

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

static bool g_loaded;
static char g_why[256];

/* ANVIL_VK_LOADER: our own dlopen/LoadLibrary of that file, handed to volk. */
static bool load_override(const char *path) {
#ifdef _WIN32
    HMODULE lib = LoadLibraryA(path);
    void (*sym)(void) = lib ? (void (*)(void))GetProcAddress(lib, "vkGetInstanceProcAddr") : NULL;
#else
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    void *sym = lib ? dlsym(lib, "vkGetInstanceProcAddr") : NULL;
#endif
    if (!lib) {
        snprintf(g_why, sizeof g_why, "Vulkan unavailable: ANVIL_VK_LOADER=%.160s not found", path);
        return false;
    }
    if (!sym) {
        snprintf(g_why, sizeof g_why, "Vulkan unavailable: ANVIL_VK_LOADER=%.160s has no vkGetInstanceProcAddr", path);
        return false;
    }
    PFN_vkGetInstanceProcAddr gipa;
    memcpy(&gipa, &sym, sizeof gipa);
    volkInitializeCustom(gipa);
    return true;
}

static void load_once(void) {
    const char *override = anv_setting_raw("ANVIL_VK_LOADER"); /* tests: point at a missing library */
    if (override && *override) {
        if (!load_override(override)) return;
    } else if (volkInitialize() != VK_SUCCESS) {
#ifdef _WIN32
        snprintf(g_why, sizeof g_why, "Vulkan unavailable: vulkan-1.dll not found (install a GPU driver with Vulkan support)");
#else
        snprintf(g_why, sizeof g_why, "Vulkan unavailable: libvulkan.so.1 not found (install libvulkan1)");
#endif
        return;
    }
    if (!vkCreateInstance || !vkEnumerateInstanceExtensionProperties) {
        snprintf(g_why, sizeof g_why, "Vulkan unavailable: the Vulkan loader is incomplete (no vkCreateInstance)");
        return;
    }
    g_loaded = true;
}

bool vkl_load(char *why, size_t why_len) {
#ifdef _WIN32
    static INIT_ONCE once = INIT_ONCE_STATIC_INIT;
    BOOL pending;
    InitOnceBeginInitialize(&once, 0, &pending, NULL);
    if (pending) { load_once(); InitOnceComplete(&once, 0, NULL); }
#else
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, load_once);
#endif
    if (!g_loaded) {
        if (why && why_len) snprintf(why, why_len, "%s", g_why);
        anv_set_error("%s", g_why);
        return false;
    }
    return true;
}

bool vkl_load_instance(VkInstance inst) {
    volkLoadInstanceOnly(inst);
#define VKL_CHECK_INST(name) \
    if (!name) { anv_set_error("Vulkan: instance function %s missing", #name); return false; }
    VKL_INSTANCE_FUNCS(VKL_CHECK_INST)
#undef VKL_CHECK_INST
    return true;
}

bool vkl_load_device(VkDevice dev, struct VolkDeviceTable *out) {
    volkLoadDeviceTable(out, dev);
#define VKL_CHECK_DEV(name) \
    if (!out->name) { anv_set_error("Vulkan: device function %s missing", #name); return false; }
    VKL_DEVICE_FUNCS(VKL_CHECK_DEV)
#undef VKL_CHECK_DEV
    return true;
}

const char *vkl_result_name(VkResult r) {
    switch (r) {
#define R(x) case x: return #x;
    R(VK_SUCCESS) R(VK_NOT_READY) R(VK_TIMEOUT) R(VK_INCOMPLETE)
    R(VK_ERROR_OUT_OF_HOST_MEMORY) R(VK_ERROR_OUT_OF_DEVICE_MEMORY) R(VK_ERROR_INITIALIZATION_FAILED)
    R(VK_ERROR_DEVICE_LOST) R(VK_ERROR_MEMORY_MAP_FAILED) R(VK_ERROR_LAYER_NOT_PRESENT)
    R(VK_ERROR_EXTENSION_NOT_PRESENT) R(VK_ERROR_FEATURE_NOT_PRESENT) R(VK_ERROR_INCOMPATIBLE_DRIVER)
    R(VK_ERROR_TOO_MANY_OBJECTS) R(VK_ERROR_FORMAT_NOT_SUPPORTED) R(VK_ERROR_FRAGMENTED_POOL)
    R(VK_ERROR_OUT_OF_POOL_MEMORY) R(VK_ERROR_UNKNOWN)
#undef R
    default: return "VK_ERROR_(other)";
    }
}
