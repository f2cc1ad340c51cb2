/* hip_enum: device enumeration through the loaded HIP runtime: count, name, PCI bus id,
 * UUID, memory, and the gfx target (gcnArchName). The properties struct changed ABI across
 * ROCm releases (hipDeviceProp_t vs hipDevicePropertiesR0600), so instead of hard-coding
 * its layout the gcnArchName is found as the first "gfx<hex digits>[:feature...]" string
 * after the 256-byte name at the start of a zeroed, generously sized buffer. */
#include "hip_backend.h"
#include "hip_codeobj.h"
#include "hip_loader.h"
#include "error.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROPS_BYTES 16384

const char *hip_build_targets(void) { return anv_hip_targets; }

const char *hip_runtime_path(void) {
    const anv_hip_api *a = anv_hip_api_get(NULL, 0);
    return a ? a->path : "";
}

int hip_device_count(char *why, size_t why_len) {
    const anv_hip_api *a = anv_hip_api_get(why, why_len);
    if (!a) return -1;
    int n = 0;
    anv_hip_err e = a->hipGetDeviceCount(&n);
    if (e != 0) {
        anv_hip_fmt(why, why_len, "%s: hipGetDeviceCount failed: %s", a->path, anv_hip_strerror(a, e));
        return -1;
    }
    return n < 0 ? 0 : n;
}

/* The first NUL-terminated "gfxNNN..." at or after `from`, copied to out. */
static bool find_gfx(const unsigned char *p, size_t n, size_t from, char *out, size_t out_len) {
    for (size_t i = from; i + 6 < n; i++) {
        if (p[i] != 'g' || p[i + 1] != 'f' || p[i + 2] != 'x' || !isdigit(p[i + 3]) || (i > 0 && p[i - 1] != 0)) continue;
        size_t j = i;
        while (j < n && p[j] && j - i < out_len - 1 && (isalnum(p[j]) || p[j] == ':' || p[j] == '+' || p[j] == '-')) j++;
        if (j < n && p[j] == 0) {
            memcpy(out, p + i, j - i);
            out[j - i] = 0;
            return true;
        }
    }
    return false;
}

/* APUs: integrated GPUs sharing system memory. */
static bool gfx_is_apu(const char *gfx) {
    static const char *const apus[] = {"gfx801", "gfx902", "gfx909", "gfx90c", "gfx1013", "gfx1033", "gfx1035", "gfx1036",
                                       "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153"};
    for (size_t i = 0; i < sizeof apus / sizeof apus[0]; i++) {
        size_t n = strlen(apus[i]);
        if (!strncmp(gfx, apus[i], n) && (gfx[n] == 0 || gfx[n] == ':')) return true;
    }
    return false;
}

int hip_device_info_get(int index, anv_hip_device_info *o) {
    char why[512];
    const anv_hip_api *a = anv_hip_api_get(why, sizeof why);
    if (!a) { anv_set_error("hip: %s", why); return -1; }
    memset(o, 0, sizeof *o);
    o->runtime_version = a->runtime_version;
    anv_hip_err e;
    if ((e = a->hipDeviceGetName(o->name, (int)sizeof o->name, index)) != 0) {
        anv_set_error("hip device %d: hipDeviceGetName failed: %s", index, anv_hip_strerror(a, e));
        return -1;
    }
    o->name[sizeof o->name - 1] = 0;
    if (a->hipDeviceGetPCIBusId(o->pci_bus_id, (int)sizeof o->pci_bus_id, index) != 0) o->pci_bus_id[0] = 0;
    o->pci_bus_id[sizeof o->pci_bus_id - 1] = 0;
    for (char *c = o->pci_bus_id; *c; c++) *c = (char)tolower((unsigned char)*c);
    if (a->hipDeviceGetUuid && a->hipDeviceGetUuid(o->uuid, index) == 0) o->has_uuid = true;
    unsigned char *props = calloc(1, PROPS_BYTES);
    if (!props) { anv_set_error("hip: out of memory"); return -1; }
    e = a->hipGetDeviceProperties(props, index);
    bool got = e == 0 && find_gfx(props, PROPS_BYTES, 256, o->gfx, sizeof o->gfx);
    free(props);
    if (!got) {
        anv_set_error("hip device %d (%s): cannot read its gfx target (hipGetDeviceProperties: %s)", index, o->name,
                      e ? anv_hip_strerror(a, e) : "no gcnArchName");
        return -1;
    }
    o->integrated = gfx_is_apu(o->gfx);
    size_t total = 0, free_b = 0;
    if ((e = a->hipDeviceTotalMem(&total, index)) != 0) {
        anv_set_error("hip device %d: hipDeviceTotalMem failed: %s", index, anv_hip_strerror(a, e));
        return -1;
    }
    o->mem_total = total;
    o->mem_free = total;
    if (a->hipSetDevice(index) == 0 && a->hipMemGetInfo(&free_b, &total) == 0) o->mem_free = free_b;
    return 0;
}
