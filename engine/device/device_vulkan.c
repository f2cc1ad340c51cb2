/* device_vulkan: the Vulkan backend's enumerator for the device layer: turns each
 * vk_device_info_get() record into a dev_info (type, driver, PCI/UUID, memory the device
 * may use, capabilities). Compiled only with the Vulkan backend (ANVIL_HAVE_VULKAN). */
#ifdef ANVIL_HAVE_VULKAN
#include <stdio.h>
#include <string.h>

#include "device.h"
#include "error.h"
#include "vk_backend.h"

static dev_type vk_type(anv_vk_device_type t) {
    switch (t) {
    case ANV_VK_DEVICE_DISCRETE: return DEV_TYPE_DISCRETE;
    case ANV_VK_DEVICE_INTEGRATED: return DEV_TYPE_INTEGRATED;
    case ANV_VK_DEVICE_VIRTUAL: return DEV_TYPE_VIRTUAL;
    case ANV_VK_DEVICE_CPU: return DEV_TYPE_SOFTWARE;
    default: return DEV_TYPE_OTHER;
    }
}

/* Memory the device may use. A discrete GPU: its device-local heaps. An integrated GPU or a
 * software device shares system memory: every heap counts (not only a small device-local
 * carve-out), capped by what the host has. Free = budget - usage when VK_EXT_memory_budget
 * is there. */
static void vk_memory(const anv_vk_device_info *vi, dev_info *d) {
    bool shared = vi->uma || vi->type == ANV_VK_DEVICE_INTEGRATED || vi->type == ANV_VK_DEVICE_CPU;
    uint64_t total = 0, avail = 0;
    for (int h = 0; h < vi->n_heaps && h < ANV_VK_MAX_HEAPS; h++) {
        const anv_vk_heap *hp = &vi->heaps[h];
        if (!shared && !hp->device_local) continue;
        total += hp->size;
        uint64_t budget = vi->has_budget ? hp->budget : hp->size;
        avail += budget > hp->usage ? budget - hp->usage : 0;
    }
    if (shared) {
        uint64_t host_total = dev_host_mem_total(), host_avail = dev_host_mem_available();
        if (host_total && total > host_total) total = host_total;
        if (host_avail && avail > host_avail) avail = host_avail;
    }
    d->mem_total = total;
    d->mem_free = avail;
    d->mem_free_known = vi->has_budget || shared;
    /* the heaps: on an iGPU the device-local heap is the BIOS carve-out (VRAM) and the host
     * heap the GTT (system memory the GPU maps); weights go to host-visible device-local
     * memory, written in place (no staging copy) */
    uint64_t dl = 0, host = 0;
    for (int h = 0; h < vi->n_heaps && h < ANV_VK_MAX_HEAPS; h++) {
        if (vi->heaps[h].device_local) dl += vi->heaps[h].size;
        else host += vi->heaps[h].size;
    }
    char a[24], b[24], f[24];
    dev_format_bytes(dl, a, sizeof a);
    dev_format_bytes(host, b, sizeof b);
    dev_format_bytes(avail, f, sizeof f);
    if (shared)
        dev_fmt(d->mem_detail, sizeof d->mem_detail, "UMA: carve-out (device-local heap) %s, shared GTT (host heap) %s, %s free (%s); "
                "weights in host-visible device-local memory, no staging copy", a, b, f,
                vi->has_budget ? "VK_EXT_memory_budget" : "no budget extension: host MemAvailable");
    else
        dev_fmt(d->mem_detail, sizeof d->mem_detail, "VRAM (device-local heaps) %s, host heaps %s, %s free (%s); weights uploaded through a staging buffer",
                a, b, f, vi->has_budget ? "VK_EXT_memory_budget" : "no budget extension");
}

static int vk_enumerate(void *user, dev_info *out, int max, char *why, size_t why_len) {
    (void)user;
    int n = vk_device_count(why, why_len);
    if (n < 0) return -1;
    if (n > max) n = max;
    for (int i = 0; i < n; i++) {
        dev_info *d = &out[i];
        anv_vk_device_info vi;
        memset(&vi, 0, sizeof vi);
        if (vk_device_info_get(i, &vi) != 0) {
            dev_fmt(d->name, sizeof d->name, "Vulkan device %d", i);
            d->type = DEV_TYPE_OTHER;
            d->supported = false;
            dev_fmt(d->unsupported_why, sizeof d->unsupported_why, "cannot query it: %s", anv_last_error());
            continue;
        }
        dev_fmt(d->name, sizeof d->name, "%s", vi.name);
        d->vendor_id = vi.vendor_id;
        d->device_id = vi.device_id;
        d->type = vk_type(vi.type);
        dev_fmt(d->driver_name, sizeof d->driver_name, "%s", vi.driver_name);
        dev_fmt(d->driver_info, sizeof d->driver_info, "%s", vi.driver_info);
        d->has_pci = vi.has_pci;
        dev_fmt(d->pci_bus_id, sizeof d->pci_bus_id, "%s", vi.pci_bus_id);
        d->has_uuid = true;
        memcpy(d->uuid, vi.uuid, sizeof d->uuid);
        dev_fmt(d->uuid_str, sizeof d->uuid_str, "%s", vi.uuid_str);
        vk_memory(&vi, d);
        d->fp16 = vi.fp16;
        d->int8_dot = vi.int8_dot;
        d->coopmat = vi.coopmat;
        dev_fmt(d->coopmat_info, sizeof d->coopmat_info, "%s", vi.coopmat_why);
        d->subgroup_size = vi.subgroup_size;
        d->max_allocation = vi.max_allocation;
        d->max_storage_range = vi.max_storage_range;
        d->supported = vi.supported;
        dev_fmt(d->unsupported_why, sizeof d->unsupported_why, "%s", vi.unsupported_why);
    }
    return n;
}

static backend *vk_open(void *user, const dev_info *d, int n_threads) {
    (void)user;
    (void)n_threads;
    return vk_backend_new(d->backend_index);
}

const device_enumerator *device_vulkan_enumerator(void) {
    static const device_enumerator e = {
        .kind = DEV_BACKEND_VULKAN, .name = "vulkan", .enumerate = vk_enumerate, .open = vk_open,
    };
    return &e;
}
#else
/* Without the Vulkan backend this file is empty (ISO C needs one declaration). */
typedef int device_vulkan_not_built;
#endif
