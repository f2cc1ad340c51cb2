/* vk_loader: dlopen/LoadLibrary of the system Vulkan loader and function-table filling
 * (see vk_loader.h). Nothing here links against libvulkan. */
#include "vk_loader.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "error.h"
#ifdef _WIN32
#include <windows.h>
#else
#include <dlfcn.h>
#include <pthread.h>
#endif

static vkl_global_fns g_fns;
static bool g_loaded;
static char g_why[256];

static void load_once(void) {
#ifdef _WIN32
    HMODULE lib = LoadLibraryA("vulkan-1.dll");
    if (!lib) {
        snprintf(g_why, sizeof g_why, "Vulkan unavailable: vulkan-1.dll not found (install a GPU driver with Vulkan support)");
        return;
    }
    g_fns.vkGetInstanceProcAddr = (PFN_vkGetInstanceProcAddr)(void (*)(void))GetProcAddress(lib, "vkGetInstanceProcAddr");
#else
    const char *override = getenv("ANVIL_VK_LOADER"); /* tests: point at a missing library */
    const char *names[] = { override ? override : "libvulkan.so.1", override ? NULL : "libvulkan.so" };
    void *lib = NULL;
    for (int i = 0; i < 2 && !lib; i++)
        if (names[i]) lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(g_why, sizeof g_why, "Vulkan unavailable: %s not found (install libvulkan1)", names[0]);
        return;
    }
    void *sym = dlsym(lib, "vkGetInstanceProcAddr");
    memcpy(&g_fns.vkGetInstanceProcAddr, &sym, sizeof sym);
#endif
    if (!g_fns.vkGetInstanceProcAddr) {
        snprintf(g_why, sizeof g_why, "Vulkan unavailable: the Vulkan loader has no vkGetInstanceProcAddr");
        return;
    }
#define VKL_LOAD_GLOBAL(name) g_fns.name = (PFN_##name)g_fns.vkGetInstanceProcAddr(VK_NULL_HANDLE, #name);
    VKL_GLOBAL_FUNCS(VKL_LOAD_GLOBAL)
#undef VKL_LOAD_GLOBAL
    if (!g_fns.vkCreateInstance || !g_fns.vkEnumerateInstanceExtensionProperties) {
        snprintf(g_why, sizeof g_why, "Vulkan unavailable: the Vulkan loader is incomplete (no vkCreateInstance)");
        return;
    }
    g_loaded = true;
}

const vkl_global_fns *vkl_load(char *why, size_t why_len) {
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
        return NULL;
    }
    return &g_fns;
}

bool vkl_load_instance(VkInstance inst, vkl_instance_fns *out) {
    memset(out, 0, sizeof *out);
#define VKL_LOAD_INST(name) \
    out->name = (PFN_##name)g_fns.vkGetInstanceProcAddr(inst, #name); \
    if (!out->name) { anv_set_error("Vulkan: instance function %s missing", #name); return false; }
    VKL_INSTANCE_FUNCS(VKL_LOAD_INST)
#undef VKL_LOAD_INST
#define VKL_LOAD_OPT(name) out->name = (PFN_##name)g_fns.vkGetInstanceProcAddr(inst, #name);
    VKL_INSTANCE_OPT_FUNCS(VKL_LOAD_OPT)
#undef VKL_LOAD_OPT
    return true;
}

bool vkl_load_device(const vkl_instance_fns *ifn, VkDevice dev, vkl_device_fns *out) {
    memset(out, 0, sizeof *out);
#define VKL_LOAD_DEV(name) \
    out->name = (PFN_##name)ifn->vkGetDeviceProcAddr(dev, #name); \
    if (!out->name) { anv_set_error("Vulkan: device function %s missing", #name); return false; }
    VKL_DEVICE_FUNCS(VKL_LOAD_DEV)
#undef VKL_LOAD_DEV
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
