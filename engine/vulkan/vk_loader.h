/* vk_loader: Anvil's side of volk (Debian libvulkan-volk-dev), the Vulkan meta-loader.
 * volk opens libvulkan.so.1 (vulkan-1.dll on Windows) at run time, so Anvil has no
 * link-time dependency on Vulkan. Global and instance functions are volk's process-wide
 * pointers (vkCreateInstance, vkEnumeratePhysicalDevices, ...: one VkInstance per process,
 * vk_instance.c); device functions are one struct VolkDeviceTable per VkDevice (vk_ctx.fn:
 * several devices can be open at once). Here: initializing volk once (ANVIL_VK_LOADER
 * names another loader library: tests), the check that every function Anvil calls was
 * found (a clear error, not a call through NULL, on a broken driver), VkResult names. */
#ifndef ANVIL_VK_LOADER_H
#define ANVIL_VK_LOADER_H
#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <stdbool.h>
#include <stddef.h>
#include <volk.h>

/* Loads the Vulkan loader library once per process (thread-safe). false with a one-line
 * reason in why (and anv_last_error()). */
bool vkl_load(char *why, size_t why_len);
/* Points volk's instance functions at inst; false (with anv_set_error) if one Anvil calls is missing. */
bool vkl_load_instance(VkInstance inst);
/* Fills a device table (vkGetDeviceProcAddr); false (with anv_set_error) if one Anvil calls is missing. */
bool vkl_load_device(VkDevice dev, struct VolkDeviceTable *out);
/* "VK_ERROR_OUT_OF_DEVICE_MEMORY" etc. */
const char *vkl_result_name(VkResult r);
#endif
