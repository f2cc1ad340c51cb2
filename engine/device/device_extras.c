/* device_extras: the backends' optional entries by backend and by kind (device_extras.h). */
#include "device_extras.h"

#include "cpu_backend.h"
#ifdef ANVIL_HAVE_VULKAN
#include "vk_extras.h"
#endif
#ifdef ANVIL_HAVE_HIP
#include "hip_extras.h"
#endif

const backend_extras *device_kind_extras(dev_backend_kind kind) {
    switch (kind) {
    case DEV_BACKEND_CPU: return &cpu_backend_extras;
#ifdef ANVIL_HAVE_VULKAN
    case DEV_BACKEND_VULKAN: return &vk_backend_extras;
#endif
#ifdef ANVIL_HAVE_HIP
    case DEV_BACKEND_HIP: return &hip_backend_extras;
#endif
    default: return NULL;
    }
}

const backend_extras *device_extras(const backend *be) {
    const dev_backend_kind kinds[] = {DEV_BACKEND_CPU, DEV_BACKEND_VULKAN, DEV_BACKEND_HIP};
    for (size_t i = 0; be && i < sizeof kinds / sizeof kinds[0]; i++) {
        const backend_extras *x = device_kind_extras(kinds[i]);
        if (x && x->is(be)) return x;
    }
    return NULL;
}

int device_describe(backend *be, char *out, size_t out_len) {
    const backend_extras *x = device_extras(be);
    if (out_len) out[0] = 0;
    return x && x->describe ? x->describe(be, out, out_len) : 0;
}
