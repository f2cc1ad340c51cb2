/* test_vulkan_loader: the Vulkan loader library is opened by volk (vk_loader.c), or by us
 * when ANVIL_VK_LOADER names one. Without a usable loader every entry point fails with a
 * one-line reason (and nothing crashes), so the CPU backend can carry on. Modes (one per
 * process: the loader is opened once): no argument: ANVIL_VK_LOADER names a missing file;
 * "nosym": a library that is no Vulkan loader (libm); "custom": ANVIL_VK_LOADER names the
 * real loader (volkInitializeCustom), whose devices and a backend on lavapipe must work
 * with the validation layer silent. */
#include "vk_testlib.h"

#ifdef ANVIL_HAVE_VULKAN
static void expect_unavailable(const char *what) {
    char why[256] = "";
    CHECK(vk_device_count(why, sizeof why) == -1);
    CHECKF(strstr(why, "Vulkan unavailable") && strstr(why, "ANVIL_VK_LOADER=") && strstr(why, what) &&
           !strchr(why, '\n'), "why: %s", why);
    CHECK(vk_backend_new(0) == NULL && strstr(anv_last_error(), "Vulkan unavailable"));
    anv_vk_device_info info;
    CHECK(vk_device_info_get(0, &info) == -1);
    CHECK(vk_device_find(ANV_VK_DEVICE_CPU) == -1);
    printf("reason: %s\n", why);
}
#endif

int main(int argc, char **argv) {
#ifdef ANVIL_HAVE_VULKAN
    const char *mode = argc > 1 ? argv[1] : "missing";
    if (strcmp(mode, "missing") == 0) {
        setenv("ANVIL_VK_LOADER", "/nonexistent/libvulkan-missing.so.1", 1);
        expect_unavailable("not found");
    } else if (strcmp(mode, "nosym") == 0) {
        setenv("ANVIL_VK_LOADER", "libm.so.6", 1);
        expect_unavailable("has no vkGetInstanceProcAddr");
    } else if (strcmp(mode, "custom") == 0) {
        setenv("ANVIL_VK_LOADER", "libvulkan.so.1", 1);
        backend *be = vkt_open_lavapipe();
        if (be) {
            anv_vk_device_info info;
            CHECK(vk_device_info_get(vkt_device_index(), &info) == 0 && info.name[0]);
            printf("device: %s\n", info.name);
            be->ops->destroy(be);
            CHECKF(vk_validation_messages() == 0, "%d validation messages", vk_validation_messages());
        }
    } else {
        CHECKF(0, "unknown mode %s", mode);
    }
#else
    (void)argc; (void)argv;
    CHECK(1);
#endif
    return tu_finish();
}
