/* vk_instance: the process-wide VkInstance (reference counted; volk's instance functions
 * point at it), the validation layer and its message counter (ANVIL_VK_VALIDATE=1),
 * physical-device enumeration and the device-info query of vk_backend.h. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "settings.h"
#include "vk_internal.h"
#include "vk_coopmat.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static vk_instance g_vi;
static int g_refs;
static VkDebugUtilsMessengerEXT g_messenger;
static atomic_int g_messages;

static VKAPI_ATTR VkBool32 VKAPI_CALL debug_cb(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
                                               VkDebugUtilsMessageTypeFlagsEXT type,
                                               const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
    (void)type; (void)user;
    atomic_fetch_add(&g_messages, 1);
    fprintf(stderr, "anvil: vulkan validation (%s): %s\n",
            sev >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning",
            data && data->pMessage ? data->pMessage : "(no message)");
    return VK_FALSE;
}

int vk_validation_messages(void) { return atomic_load(&g_messages); }
bool vk_validation_active(void) { return g_messenger != VK_NULL_HANDLE; }

static bool has_instance_ext(const char *name) {
    uint32_t n = 0;
    if (vkEnumerateInstanceExtensionProperties(NULL, &n, NULL) != VK_SUCCESS || !n) return false;
    VkExtensionProperties *p = calloc(n, sizeof *p);
    if (!p) return false;
    bool found = false;
    if (vkEnumerateInstanceExtensionProperties(NULL, &n, p) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++) found = strcmp(p[i].extensionName, name) == 0;
    free(p);
    return found;
}

static bool has_layer(const char *name) {
    uint32_t n = 0;
    if (!vkEnumerateInstanceLayerProperties || vkEnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || !n) return false;
    VkLayerProperties *p = calloc(n, sizeof *p);
    if (!p) return false;
    bool found = false;
    if (vkEnumerateInstanceLayerProperties(&n, p) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++) found = strcmp(p[i].layerName, name) == 0;
    free(p);
    return found;
}

static bool create_instance(char *why, size_t why_len) {
    if (!vkl_load(why, why_len)) return false;
    uint32_t api = volkGetInstanceVersion();
    if (api < VK_API_VERSION_1_2) {
        snprintf(why, why_len, "Vulkan unavailable: the Vulkan loader supports only %u.%u (1.2 needed)",
                 VK_API_VERSION_MAJOR(api), VK_API_VERSION_MINOR(api));
        anv_set_error("%s", why);
        return false;
    }
    const char *layers[1];
    const char *exts[2];
    uint32_t n_layers = 0, n_exts = 0;
    bool validate = anv_setting_on("ANVIL_VK_VALIDATE");
    if (validate) {
        if (has_layer("VK_LAYER_KHRONOS_validation")) layers[n_layers++] = "VK_LAYER_KHRONOS_validation";
        else anv_log("ANVIL_VK_VALIDATE: VK_LAYER_KHRONOS_validation not installed (vulkan-validationlayers)");
        if (has_instance_ext(VK_EXT_DEBUG_UTILS_EXTENSION_NAME) || n_layers) exts[n_exts++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    }
    VkApplicationInfo app = { .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "anvil",
                              .pEngineName = "anvil", .apiVersion = api >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3 : VK_API_VERSION_1_2 };
    VkInstanceCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app,
                                .enabledLayerCount = n_layers, .ppEnabledLayerNames = layers,
                                .enabledExtensionCount = n_exts, .ppEnabledExtensionNames = exts };
    VkResult r = vkCreateInstance(&ci, NULL, &g_vi.instance);
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER) {
        snprintf(why, why_len, "no Vulkan driver (ICD) found: install mesa-vulkan-drivers or your GPU vendor's driver");
        anv_set_error("%s", why);
        return false;
    }
    if (r != VK_SUCCESS) {
        snprintf(why, why_len, "Vulkan unavailable: vkCreateInstance failed (%s)", vkl_result_name(r));
        anv_set_error("%s", why);
        return false;
    }
    if (!vkl_load_instance(g_vi.instance)) {
        snprintf(why, why_len, "%s", anv_last_error());
        return false;
    }
    g_vi.api_version = api >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3 : VK_API_VERSION_1_2;
    if (n_exts && vkCreateDebugUtilsMessengerEXT) {
        VkDebugUtilsMessengerCreateInfoEXT mi = {
            .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
            .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
            .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
            .pfnUserCallback = debug_cb };
        vkCreateDebugUtilsMessengerEXT(g_vi.instance, &mi, NULL, &g_messenger);
    }
    uint32_t n = 0;
    vkEnumeratePhysicalDevices(g_vi.instance, &n, NULL);
    g_vi.pdev = n ? calloc(n, sizeof *g_vi.pdev) : NULL;
    if (n && !g_vi.pdev) n = 0;
    if (n) vkEnumeratePhysicalDevices(g_vi.instance, &n, g_vi.pdev);
    g_vi.n_pdev = n;
    return true;
}

static void destroy_instance(void) {
    if (g_messenger && vkDestroyDebugUtilsMessengerEXT)
        vkDestroyDebugUtilsMessengerEXT(g_vi.instance, g_messenger, NULL);
    g_messenger = VK_NULL_HANDLE;
    if (g_vi.instance && vkDestroyInstance) vkDestroyInstance(g_vi.instance, NULL);
    free(g_vi.pdev);
    memset(&g_vi, 0, sizeof g_vi);
}

vk_instance *vk_instance_acquire(char *why, size_t why_len) {
    char local[256];
    if (!why || !why_len) { why = local; why_len = sizeof local; }
    pthread_mutex_lock(&g_lock);
    if (g_refs == 0 && !create_instance(why, why_len)) {
        destroy_instance();
        pthread_mutex_unlock(&g_lock);
        return NULL;
    }
    g_refs++;
    pthread_mutex_unlock(&g_lock);
    return &g_vi;
}

void vk_instance_release(void) {
    pthread_mutex_lock(&g_lock);
    if (g_refs > 0 && --g_refs == 0) destroy_instance();
    pthread_mutex_unlock(&g_lock);
}

bool vk_has_device_extension(const vk_instance *vi, VkPhysicalDevice pd, const char *name) {
    (void)vi; /* the caller's reference keeps the instance (and volk's instance functions) alive */
    uint32_t n = 0;
    if (vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL) != VK_SUCCESS || !n) return false;
    VkExtensionProperties *p = calloc(n, sizeof *p);
    if (!p) return false;
    bool found = false;
    if (vkEnumerateDeviceExtensionProperties(pd, NULL, &n, p) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++) found = strcmp(p[i].extensionName, name) == 0;
    free(p);
    return found;
}

int vk_device_count(char *why, size_t why_len) {
    vk_instance *vi = vk_instance_acquire(why, why_len);
    if (!vi) return -1;
    int n = (int)vi->n_pdev;
    if (n == 0 && why && why_len) snprintf(why, why_len, "no Vulkan device found (the driver reports none)");
    vk_instance_release();
    return n;
}

const char *vk_device_type_name(anv_vk_device_type t) {
    switch (t) {
    case ANV_VK_DEVICE_DISCRETE: return "discrete";
    case ANV_VK_DEVICE_INTEGRATED: return "integrated";
    case ANV_VK_DEVICE_VIRTUAL: return "virtual";
    case ANV_VK_DEVICE_CPU: return "cpu";
    default: return "other";
    }
}

/* Features: 16-bit storage, fp16 arithmetic, integer dot product (Vulkan 1.2 / 1.3 devices). */
static void fill_features(VkPhysicalDevice pd, bool v12, bool v13, anv_vk_device_info *out) {
    VkPhysicalDeviceVulkan13Features f13 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES };
    VkPhysicalDeviceVulkan12Features f12 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, .pNext = v13 ? &f13 : NULL };
    VkPhysicalDeviceVulkan11Features f11 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, .pNext = &f12 };
    VkPhysicalDeviceFeatures2 f2 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f11 };
    if (v12) {
        vkGetPhysicalDeviceFeatures2(pd, &f2);
        out->storage16 = f11.storageBuffer16BitAccess;
        out->fp16 = f12.shaderFloat16;
        out->int8_dot = v13 && f13.shaderIntegerDotProduct;
        out->sg_size_control = v13 && f13.subgroupSizeControl && f13.computeFullSubgroups;
    }
}

/* Memory heaps (+ budget with VK_EXT_memory_budget); out->uma must be set. */
static void fill_heaps(VkPhysicalDevice pd, bool has_budget, anv_vk_device_info *out) {
    VkPhysicalDeviceMemoryBudgetPropertiesEXT budget = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT };
    VkPhysicalDeviceMemoryProperties2 mp = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2,
                                             .pNext = has_budget ? &budget : NULL };
    vkGetPhysicalDeviceMemoryProperties2(pd, &mp);
    out->has_budget = has_budget;
    out->n_heaps = (int)(mp.memoryProperties.memoryHeapCount < ANV_VK_MAX_HEAPS ? mp.memoryProperties.memoryHeapCount : ANV_VK_MAX_HEAPS);
    for (int i = 0; i < out->n_heaps; i++) {
        const VkMemoryHeap *h = &mp.memoryProperties.memoryHeaps[i];
        anv_vk_heap *o = &out->heaps[i];
        o->size = h->size;
        o->device_local = (h->flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0;
        o->budget = has_budget && budget.heapBudget[i] ? budget.heapBudget[i] : h->size;
        o->usage = has_budget ? budget.heapUsage[i] : 0;
        if (o->device_local || out->uma) {
            out->device_local_bytes += o->size;
            out->device_local_budget += o->budget;
        }
    }
}

void vk_fill_device_info(const vk_instance *vi, int index, anv_vk_device_info *out) {
    VkPhysicalDevice pd = vi->pdev[index];
    memset(out, 0, sizeof *out);
    out->index = index;
    bool has_pci = vk_has_device_extension(vi, pd, VK_EXT_PCI_BUS_INFO_EXTENSION_NAME);
    bool has_budget = vk_has_device_extension(vi, pd, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    bool has_m4 = vk_has_device_extension(vi, pd, VK_KHR_MAINTENANCE_4_EXTENSION_NAME);

    VkPhysicalDeviceProperties base;
    vkGetPhysicalDeviceProperties(pd, &base);
    bool v12 = base.apiVersion >= VK_API_VERSION_1_2;
    bool v13 = base.apiVersion >= VK_API_VERSION_1_3;

    VkPhysicalDevicePCIBusInfoPropertiesEXT pci = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT };
    VkPhysicalDeviceMaintenance4Properties m4 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_PROPERTIES };
    VkPhysicalDeviceShaderIntegerDotProductProperties idp = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES };
    VkPhysicalDeviceVulkan11Properties p11 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_PROPERTIES };
    VkPhysicalDeviceVulkan12Properties p12 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES, .pNext = &p11 };
    VkPhysicalDeviceMaintenance3Properties m3 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES, .pNext = &p12 };
    VkPhysicalDeviceSubgroupSizeControlProperties ssc = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES, .pNext = &m3 };
    void *chain = v12 ? (void *)&ssc : (void *)&m3;
    if (!v12) m3.pNext = NULL;
    if (v13) { idp.pNext = chain; chain = &idp; }
    if (has_pci) { pci.pNext = chain; chain = &pci; }
    if (has_m4 || v13) { m4.pNext = chain; chain = &m4; }
    VkPhysicalDeviceProperties2 props = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = chain };
    vkGetPhysicalDeviceProperties2(pd, &props);
    const VkPhysicalDeviceProperties *p = &props.properties;

    snprintf(out->name, sizeof out->name, "%s", p->deviceName);
    out->vendor_id = p->vendorID;
    out->device_id = p->deviceID;
    out->api_version = p->apiVersion;
    out->driver_version = p->driverVersion;
    switch (p->deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: out->type = ANV_VK_DEVICE_INTEGRATED; break;
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: out->type = ANV_VK_DEVICE_DISCRETE; break;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: out->type = ANV_VK_DEVICE_VIRTUAL; break;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: out->type = ANV_VK_DEVICE_CPU; break;
    default: out->type = ANV_VK_DEVICE_OTHER; break;
    }
    out->uma = out->type == ANV_VK_DEVICE_INTEGRATED || out->type == ANV_VK_DEVICE_CPU;
    if (v12) {
        snprintf(out->driver_name, sizeof out->driver_name, "%s", p12.driverName);
        snprintf(out->driver_info, sizeof out->driver_info, "%s", p12.driverInfo);
        memcpy(out->uuid, p11.deviceUUID, 16);
        const uint8_t *u = out->uuid;
        snprintf(out->uuid_str, sizeof out->uuid_str,
                 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
        out->subgroup_size = p11.subgroupSize;
        out->subgroup_min = ssc.minSubgroupSize ? ssc.minSubgroupSize : p11.subgroupSize;
        out->subgroup_max = ssc.maxSubgroupSize ? ssc.maxSubgroupSize : p11.subgroupSize;
        VkSubgroupFeatureFlags need = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
        out->subgroup_arith = (p11.subgroupSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                              (p11.subgroupSupportedOperations & need) == need;
        out->subgroup_shuffle = (p11.subgroupSupportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT) != 0;
    }
    if (has_pci) {
        out->has_pci = true;
        snprintf(out->pci_bus_id, sizeof out->pci_bus_id, "%04x:%02x:%02x.%x",
                 pci.pciDomain, pci.pciBus, pci.pciDevice, pci.pciFunction);
    }
    out->max_allocation = m3.maxMemoryAllocationSize ? m3.maxMemoryAllocationSize : (1ull << 30);
    out->max_buffer_size = (has_m4 || v13) && m4.maxBufferSize ? m4.maxBufferSize : out->max_allocation;
    out->max_storage_range = p->limits.maxStorageBufferRange;
    out->max_shared_memory = p->limits.maxComputeSharedMemorySize;
    out->min_storage_align = (uint32_t)p->limits.minStorageBufferOffsetAlignment;
    out->int8_dot_accelerated = v13 && idp.integerDotProduct4x8BitPackedSignedAccelerated;

    fill_features(pd, v12, v13, out);
    out->sg_size_control = out->sg_size_control && (ssc.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                           ssc.minSubgroupSize && ssc.maxSubgroupSize;
    fill_heaps(pd, has_budget, out);
    vk_coopmat_query(vi->instance, pd, out);
    if (!v12) snprintf(out->unsupported_why, sizeof out->unsupported_why, "Vulkan %u.%u device (1.2 needed)",
                       VK_API_VERSION_MAJOR(p->apiVersion), VK_API_VERSION_MINOR(p->apiVersion));
    else if (!out->storage16) snprintf(out->unsupported_why, sizeof out->unsupported_why, "no 16-bit storage buffer access");
    out->supported = out->unsupported_why[0] == 0;
}

int vk_device_info_get(int index, anv_vk_device_info *out) {
    char why[256];
    vk_instance *vi = vk_instance_acquire(why, sizeof why);
    if (!vi) return -1;
    if (index < 0 || (uint32_t)index >= vi->n_pdev) {
        anv_set_error("Vulkan device %d does not exist (%u device(s))", index, vi->n_pdev);
        vk_instance_release();
        return -1;
    }
    vk_fill_device_info(vi, index, out);
    vk_instance_release();
    return 0;
}

int vk_device_find(anv_vk_device_type type) {
    int n = vk_device_count(NULL, 0);
    for (int i = 0; i < n; i++) {
        anv_vk_device_info info;
        if (vk_device_info_get(i, &info) == 0 && info.type == type) return i;
    }
    return -1;
}
