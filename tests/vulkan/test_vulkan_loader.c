/* test_vulkan_loader: without a Vulkan loader library every entry point fails with a
 * one-line reason (and nothing crashes), so the CPU backend can carry on. */
#include "vk_testlib.h"

int main(void) {
#ifdef ANVIL_HAVE_VULKAN
    setenv("ANVIL_VK_LOADER", "/nonexistent/libvulkan-missing.so.1", 1);
    char why[256] = "";
    CHECK(vk_device_count(why, sizeof why) == -1);
    CHECKF(strstr(why, "Vulkan unavailable") && strstr(why, "not found") && !strchr(why, '\n'), "why: %s", why);
    CHECK(vk_backend_new(0) == NULL && strstr(anv_last_error(), "Vulkan unavailable"));
    anv_vk_device_info info;
    CHECK(vk_device_info_get(0, &info) == -1);
    CHECK(vk_device_find(ANV_VK_DEVICE_CPU) == -1);
    printf("reason: %s\n", why);
#else
    CHECK(1);
#endif
    return tu_finish();
}
