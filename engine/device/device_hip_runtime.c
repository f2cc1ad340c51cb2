/* device_hip_runtime: the HIP backend's enumerator for the device layer: every GPU the
 * run-time loaded ROCm runtime reports (hip/hip_enum.c) as a dev_info (name, gfx target,
 * PCI bus id and UUID for the dedup with Vulkan, memory from hipMemGetInfo), and open()
 * with the code object of the device's effective gfx target. Compiled only with the HIP
 * backend (ANVIL_HAVE_HIP); the HIP policy that needs no runtime is in device_hip.c. */
#ifdef ANVIL_HAVE_HIP
#include <stdio.h>
#include <string.h>

#include "device.h"
#include "error.h"
#include "hip_backend.h"

static int hip_enumerate(void *user, dev_info *out, int max, char *why, size_t why_len) {
    (void)user;
    int n = hip_device_count(why, why_len);
    if (n < 0) return -1;
    if (n > max) n = max;
    for (int i = 0; i < n; i++) {
        dev_info *d = &out[i];
        anv_hip_device_info hi;
        if (hip_device_info_get(i, &hi) != 0) {
            dev_fmt(d->name, sizeof d->name, "HIP device %d", i);
            d->type = DEV_TYPE_OTHER;
            d->supported = false;
            dev_fmt(d->unsupported_why, sizeof d->unsupported_why, "cannot query it: %s", anv_last_error());
            continue;
        }
        dev_fmt(d->name, sizeof d->name, "%s", hi.name);
        d->vendor_id = 0x1002;
        d->type = hi.integrated ? DEV_TYPE_INTEGRATED : DEV_TYPE_DISCRETE;
        dev_fmt(d->driver_name, sizeof d->driver_name, "ROCm HIP %d.%d", hi.runtime_version / 10000000, hi.runtime_version / 100000 % 100);
        const char *lib = hip_runtime_path(), *slash = strrchr(lib, '/');
        dev_fmt(d->driver_info, sizeof d->driver_info, "%s", slash ? slash + 1 : lib);
        d->has_pci = hi.pci_bus_id[0] != 0;
        dev_fmt(d->pci_bus_id, sizeof d->pci_bus_id, "%s", hi.pci_bus_id);
        d->has_uuid = hi.has_uuid;
        if (hi.has_uuid) {
            memcpy(d->uuid, hi.uuid, 16);
            char u[17];
            for (int k = 0; k < 16; k++) u[k] = hi.uuid[k] >= 0x20 && hi.uuid[k] < 0x7f ? (char)hi.uuid[k] : '?';
            u[16] = 0;
            dev_fmt(d->uuid_str, sizeof d->uuid_str, "GPU-%s", u);
        }
        d->mem_total = hi.mem_total;
        d->mem_free = hi.mem_free;
        d->mem_free_known = true;
        if (hi.integrated) { /* an APU may use system memory beyond its carve-out, capped by what the host has */
            uint64_t host_avail = dev_host_mem_available();
            if (host_avail && d->mem_free > host_avail) d->mem_free = host_avail;
        }
        d->fp16 = true;
        d->subgroup_size = 32;
        d->max_allocation = d->max_storage_range = hi.mem_total;
        dev_fmt(d->gfx_target, sizeof d->gfx_target, "%s", hi.gfx);
        d->supported = true;
    }
    return n;
}

static backend *hip_open(void *user, const dev_info *d, int n_threads) {
    (void)user;
    (void)n_threads;
    return hip_backend_new(d->backend_index, d->effective_gfx[0] ? d->effective_gfx : d->gfx_target);
}

const device_enumerator *device_hip_enumerator(void) {
    static device_enumerator e = {
        .kind = DEV_BACKEND_HIP, .name = "hip", .enumerate = hip_enumerate, .open = hip_open,
        .runtime_applies_visibility = true,
    };
    e.hip_targets = hip_build_targets();
    return &e;
}
#else
/* Without the HIP backend this file is empty (ISO C needs one declaration). */
typedef int device_hip_runtime_not_built;
#endif
