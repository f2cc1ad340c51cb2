/* hip_extras: the HIP backend's optional entries (backend_extras.h): the kernels a
 * self-check case ran and the cache name of device + runtime + code objects (HIP has no
 * optional paths to retry without, and no bandwidth probe yet). */
#include <stdio.h>
#include <string.h>

#include "hip_backend.h"
#include "hip_extras.h"
#include "settings.h"

static bool hip_verify_key(int device_index, char *out, size_t out_len) {
    anv_hip_device_info info;
    if (hip_device_info_get(device_index, &info) != 0) return false;
    char bus[32];
    snprintf(bus, sizeof bus, "%s", info.pci_bus_id[0] ? info.pci_bus_id : "nobus");
    for (char *p = bus; *p; p++) if (*p == ':' || *p == '.') *p = '_';
    char gfx[48];
    snprintf(gfx, sizeof gfx, "%.*s", (int)strcspn(info.gfx, ":"), info.gfx);
    const char *ovr = anv_setting_get("HSA_OVERRIDE_GFX_VERSION"); /* runs another code object */
    snprintf(out, out_len, "hip-verify-%s%s%s-%d-%s-%08x.txt", gfx, ovr ? "-as-" : "", ovr ? ovr : "", info.runtime_version, bus,
             hip_kernels_digest());
    return true;
}

const backend_extras hip_backend_extras = {
    .kind = "hip",
    .is = hip_backend_is,
    .take_kernels = hip_backend_take_kernels,
    .verify_key = hip_verify_key,
};
