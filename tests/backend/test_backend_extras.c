/* test_backend_extras: the backends' optional entries (backend_extras.h) as the device layer
 * hands them out (device_extras.h): a CPU backend maps to the CPU's entries, whose bandwidth
 * probe measures and whose description names its kernels and threads; each kind maps to the
 * entries of its own backend (or none when not built); an unknown backend has none. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cpu_backend.h"
#include "device_extras.h"
#include "error.h"
#include "testutil.h"

static void test_cpu(void) {
    backend *be = cpu_backend_new(1);
    CHECKF(be != NULL, "cpu backend: %s", anv_last_error());
    if (!be) return;
    const backend_extras *x = device_extras(be);
    CHECK(x == &cpu_backend_extras && x == device_kind_extras(DEV_BACKEND_CPU));
    CHECK(x && !strcmp(x->kind, "cpu") && x->is(be));
    char desc[256];
    CHECK(device_describe(be, desc, sizeof desc) > 0);
    char want[128];
    snprintf(want, sizeof want, "cpu kernels: %s, 1 threads", cpu_backend_simd());
    CHECKF(!strcmp(desc, want), "describe: %s", desc);
    double gbps = NAN;
    char src[128] = "";
    CHECKF(x && x->membw && x->membw(be, 1u << 20, &gbps, src, sizeof src) == 0, "membw: %s", anv_last_error());
    CHECKF(isfinite(gbps) && gbps > 0, "membw %.3f GB/s", gbps);
    CHECKF(!strncmp(src, "cpu membw ", 10), "source: %s", src);
    CHECK(x && !x->take_kernels && !x->fix_setting && !x->reopen_without && !x->verify_key);   /* no self-check on the CPU */
    be->ops->destroy(be);
}

static void test_kinds(void) {
    const dev_backend_kind kinds[] = {DEV_BACKEND_CPU, DEV_BACKEND_VULKAN, DEV_BACKEND_HIP};
    const char *names[] = {"cpu", "vulkan", "hip"};
    for (int i = 0; i < 3; i++) {
        const backend_extras *x = device_kind_extras(kinds[i]);
        if (!x) { CHECKF(i > 0, "the CPU is always built"); continue; }
        CHECKF(!strcmp(x->kind, names[i]) && x->is, "kind %s", names[i]);
        CHECKF(i == 0 || (x->take_kernels && x->verify_key), "%s: the self-check's entries", names[i]);
        CHECKF(!x->fix_setting || (x->fix_candidates && x->reopen_without), "%s: a fix setting comes with its retry", names[i]);
    }
#ifdef ANVIL_HAVE_VULKAN
    const backend_extras *vk = device_kind_extras(DEV_BACKEND_VULKAN);
    CHECK(vk && !strcmp(vk->fix_setting, "ANVIL_VK_DISABLE") && vk->membw && vk->describe);
#endif
    backend fake = {0};
    CHECK(device_extras(&fake) == NULL && device_extras(NULL) == NULL);
}

int main(void) {
    test_cpu();
    test_kinds();
    return tu_finish();
}
