/* device: the backend registry, the device list (every device through every backend),
 * and the selection policy: environment variables, dedup of one GPU seen twice, the
 * discrete > integrated > CPU order, with a reason and a fix for every device not used.
 * Placement of layers is in device_plan.c, the HIP target logic in device_hip.c. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cpu_backend.h"
#include "device.h"
#include "error.h"
#include "settings.h"

/* ---------------------------------------------------------------- registry */

static device_enumerator registry[3]; /* by dev_backend_kind; CPU slot unused */
static bool registry_set[3];
static bool registry_builtin = true;
static bool registry_builtin_done;

int device_register(const device_enumerator *e) {
    if (!e || !e->enumerate || (e->kind != DEV_BACKEND_VULKAN && e->kind != DEV_BACKEND_HIP)) {
        anv_set_error("device_register: an enumerator needs kind vulkan or hip and an enumerate function");
        return -1;
    }
    registry[e->kind] = *e;
    registry_set[e->kind] = true;
    return 0;
}

void device_registry_reset(void) {
    memset(registry, 0, sizeof registry);
    memset(registry_set, 0, sizeof registry_set);
    registry_builtin_done = false;
}

void device_registry_use_builtin(bool on) { registry_builtin = on; }

static void device_registry_builtin(void) {
    if (!registry_builtin || registry_builtin_done) return;
    registry_builtin_done = true;
#ifdef ANVIL_HAVE_VULKAN
    if (!registry_set[DEV_BACKEND_VULKAN]) device_register(device_vulkan_enumerator());
#endif
#ifdef ANVIL_HAVE_HIP
    if (!registry_set[DEV_BACKEND_HIP]) device_register(device_hip_enumerator());
#endif
}

/* ---------------------------------------------------------------- small helpers */

void dev_fmt(char *dst, size_t dst_len, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, dst_len, fmt, ap);
    va_end(ap);
}

const char *dev_type_name(dev_type t) {
    switch (t) {
    case DEV_TYPE_DISCRETE: return "discrete";
    case DEV_TYPE_INTEGRATED: return "integrated";
    case DEV_TYPE_VIRTUAL: return "virtual";
    case DEV_TYPE_SOFTWARE: return "software";
    case DEV_TYPE_CPU: return "cpu";
    default: return "other";
    }
}

const char *dev_backend_name(dev_backend_kind k) {
    return k == DEV_BACKEND_VULKAN ? "vulkan" : k == DEV_BACKEND_HIP ? "hip" : "cpu";
}

void dev_format_bytes(uint64_t b, char *out, size_t out_len) {
    if (b >= (10ull << 30)) snprintf(out, out_len, "%.0f GiB", b / 1073741824.0);
    else if (b >= (1ull << 30)) snprintf(out, out_len, "%.1f GiB", b / 1073741824.0);
    else if (b >= (1ull << 20)) snprintf(out, out_len, "%.0f MiB", b / 1048576.0);
    else if (b >= 1024) snprintf(out, out_len, "%.0f KiB", b / 1024.0);
    else snprintf(out, out_len, "%llu B", (unsigned long long)b);
}

void dev_format_features(const dev_info *d, char *out, size_t out_len) {
    size_t n = 0;
    out[0] = 0;
#define FEAT(...) do { if (n < out_len) n += (size_t)snprintf(out + n, out_len - n, __VA_ARGS__); } while (0)
    if (d->backend == DEV_BACKEND_CPU) { FEAT("%s", d->driver_info); return; }
    if (d->fp16) FEAT("%sfp16", n ? " " : "");
    if (d->int8_dot) FEAT("%sint8dot", n ? " " : "");
    if (d->coopmat) FEAT("%scoopmat", n ? " " : "");
    if (d->subgroup_size) FEAT("%ssg%u", n ? " " : "", d->subgroup_size);
    if (d->effective_gfx[0]) FEAT("%s%s", n ? " " : "", d->effective_gfx);
    else if (d->gfx_target[0]) FEAT("%s%s", n ? " " : "", d->gfx_target);
#undef FEAT
}

static uint64_t meminfo_field(const char *key) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    uint64_t v = 0;
    size_t klen = strlen(key);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, klen) && line[klen] == ':') { v = strtoull(line + klen + 1, NULL, 10) * 1024; break; }
    fclose(f);
    return v;
}
uint64_t dev_host_mem_total(void) { return meminfo_field("MemTotal"); }
uint64_t dev_host_mem_available(void) { return meminfo_field("MemAvailable"); }

static bool contains_ci(const char *hay, const char *needle) {
    size_t n = strlen(needle);
    for (; *hay; hay++) if (!strncasecmp(hay, needle, n)) return true;
    return false;
}

/* Driver family, used for the dedup preference and readable descriptions. */
typedef enum { DRV_OTHER, DRV_RADV, DRV_AMDVLK, DRV_AMD_PRO, DRV_MESA_INTEL, DRV_INTEL_PRO, DRV_NVIDIA, DRV_NVK,
               DRV_QCOM, DRV_TURNIP, DRV_LAVAPIPE, DRV_DOZEN } drv_family;

static drv_family driver_family(const char *driver_name) {
    if (contains_ci(driver_name, "radv")) return DRV_RADV;
    if (contains_ci(driver_name, "AMD open-source") || contains_ci(driver_name, "amdvlk")) return DRV_AMDVLK;
    if (contains_ci(driver_name, "AMD proprietary")) return DRV_AMD_PRO;
    if (contains_ci(driver_name, "Intel open-source Mesa") || !strcasecmp(driver_name, "anv")) return DRV_MESA_INTEL;
    if (contains_ci(driver_name, "Intel")) return DRV_INTEL_PRO;
    if (contains_ci(driver_name, "nvk")) return DRV_NVK;
    if (contains_ci(driver_name, "nvidia")) return DRV_NVIDIA;
    if (contains_ci(driver_name, "turnip")) return DRV_TURNIP;
    if (contains_ci(driver_name, "qualcomm")) return DRV_QCOM;
    if (contains_ci(driver_name, "llvmpipe") || contains_ci(driver_name, "lavapipe")) return DRV_LAVAPIPE;
    if (contains_ci(driver_name, "dozen")) return DRV_DOZEN;
    return DRV_OTHER;
}

/* Lower is preferred among Vulkan drivers of one GPU: RADV > AMDVLK > AMD proprietary;
 * Mesa > Intel proprietary; NVIDIA proprietary > NVK; Qualcomm > Turnip; Dozen last. */
static int driver_rank(const dev_info *d) {
    switch (driver_family(d->driver_name)) {
    case DRV_RADV: case DRV_MESA_INTEL: case DRV_NVIDIA: case DRV_QCOM: return 0;
    case DRV_AMDVLK: case DRV_INTEL_PRO: case DRV_NVK: case DRV_TURNIP: return 1;
    case DRV_AMD_PRO: return 2;
    case DRV_DOZEN: return 9;
    default: return 5;
    }
}

static const char *driver_pretty(const dev_info *d) {
    switch (driver_family(d->driver_name)) {
    case DRV_RADV: return "Mesa RADV";
    case DRV_AMDVLK: return "AMDVLK";
    case DRV_AMD_PRO: return "AMD proprietary";
    case DRV_MESA_INTEL: return "Mesa ANV";
    case DRV_INTEL_PRO: return "Intel proprietary";
    case DRV_NVIDIA: return "NVIDIA";
    case DRV_NVK: return "Mesa NVK";
    case DRV_QCOM: return "Qualcomm";
    case DRV_TURNIP: return "Mesa Turnip";
    case DRV_LAVAPIPE: return "Mesa lavapipe";
    case DRV_DOZEN: return "Dozen";
    default: return d->driver_name;
    }
}

/* "llvmpipe / Mesa lavapipe 22.3.6" */
static void device_describe(dev_info *d) {
    char shortname[256];
    dev_fmt(shortname, sizeof shortname, "%s", d->name[0] ? d->name : "unnamed device");
    char *paren = strstr(shortname, " (");
    if (paren && paren != shortname) *paren = 0;
    if (d->backend == DEV_BACKEND_CPU) {
        dev_fmt(d->desc, sizeof d->desc, "%s / %s", shortname, d->driver_info[0] ? d->driver_info : "cpu");
        return;
    }
    char version[64] = "";
    const char *info = d->driver_info;
    const char *mesa = strstr(info, "Mesa ");
    const char *v = mesa ? mesa + 5 : info;
    size_t n = strcspn(v, " (");
    if (n >= sizeof version) n = sizeof version - 1;
    memcpy(version, v, n);
    version[n] = 0;
    const char *drv = driver_pretty(d);
    if (version[0] && !strstr(drv, version))
        dev_fmt(d->desc, sizeof d->desc, "%s / %s %s", shortname, drv[0] ? drv : "driver", version);
    else
        dev_fmt(d->desc, sizeof d->desc, "%s / %s", shortname, drv[0] ? drv : "driver");
}

static void list_note(device_list *l, const char *fmt, ...) ANV_PRINTF(2, 3);
static void list_note(device_list *l, const char *fmt, ...) {
    if (l->n_notes >= DEVICE_MAX_NOTES) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->notes[l->n_notes++], sizeof l->notes[0], fmt, ap);
    va_end(ap);
}

static void skip(dev_info *d, dev_skip why_kind, const char *fix, const char *fmt, ...) ANV_PRINTF(4, 5);
static void skip(dev_info *d, dev_skip why_kind, const char *fix, const char *fmt, ...) {
    d->used = false;
    d->skip = why_kind;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->why, sizeof d->why, fmt, ap);
    va_end(ap);
    snprintf(d->fix, sizeof d->fix, "%s", fix ? fix : "");
}

/* ---------------------------------------------------------------- probe */

static void cpu_device_fill(dev_info *d) {
    memset(d, 0, sizeof *d);
    d->backend = DEV_BACKEND_CPU;
    d->type = DEV_TYPE_CPU;
    snprintf(d->name, sizeof d->name, "CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "model name", 10)) continue;
            const char *c = strchr(line, ':');
            if (!c) break;
            c++;
            while (*c == ' ' || *c == '\t') c++;
            snprintf(d->name, sizeof d->name, "%s", c);
            d->name[strcspn(d->name, "\n")] = 0;
            break;
        }
        fclose(f);
    }
    snprintf(d->driver_name, sizeof d->driver_name, "anvil cpu");
    d->mem_total = dev_host_mem_total();
    d->mem_free = dev_host_mem_available();
    d->mem_free_known = d->mem_free != 0;
    const char *simd = cpu_backend_simd();
    d->supported = simd != NULL;
    if (simd) snprintf(d->driver_info, sizeof d->driver_info, "%s", simd);
    else { /* a bad ANVIL_CPU_SIMD: device_list_select reports it like the other variables */
        snprintf(d->driver_info, sizeof d->driver_info, "invalid ANVIL_CPU_SIMD");
        snprintf(d->unsupported_why, sizeof d->unsupported_why, "%s", anv_last_error());
    }
}

static void probe_backend(device_list *l, dev_backend_kind kind) {
    int *count = kind == DEV_BACKEND_VULKAN ? &l->vk_count : &l->hip_count;
    char *why = kind == DEV_BACKEND_VULKAN ? l->vk_why : l->hip_why;
    size_t why_len = sizeof l->vk_why;
    const char *name = dev_backend_name(kind);
    if (!registry_set[kind]) {
        *count = -1;
        if (kind == DEV_BACKEND_VULKAN) {
            snprintf(why, why_len, "this anvil was built without the Vulkan backend (configure with -DANVIL_VULKAN=ON)");
            list_note(l, "vulkan: %s", why);
        }
        else
            snprintf(why, why_len, "this anvil was built without the HIP backend");
        return;
    }
    if (kind == DEV_BACKEND_VULKAN) l->vulkan_built = true;
    else { l->hip_built = true; snprintf(l->hip_targets, sizeof l->hip_targets, "%s", registry[kind].hip_targets ? registry[kind].hip_targets : ""); }
    const device_enumerator *e = &registry[kind];
    int room = DEVICE_MAX - 1 - l->n; /* keep a slot for the CPU */
    if (room < 0) room = 0;
    memset(&l->dev[l->n], 0, sizeof(dev_info) * (size_t)room);
    why[0] = 0;
    int n = e->enumerate(e->user, &l->dev[l->n], room, why, why_len);
    if (n < 0) {
        *count = -1;
        if (!why[0]) snprintf(why, why_len, "%s unavailable", name);
        list_note(l, "%s: %s", name, why);
        return;
    }
    if (n > room) n = room;
    *count = n;
    if (n == 0) list_note(l, "%s: no devices%s%s", name, why[0] ? ": " : "", why);
    for (int i = 0; i < n; i++) {
        dev_info *d = &l->dev[l->n + i];
        d->backend = kind;
        d->backend_index = i;
        snprintf(d->id, sizeof d->id, "%s%d", name, d->backend_index);
        if (!d->supported && !d->unsupported_why[0]) snprintf(d->unsupported_why, sizeof d->unsupported_why, "not supported by the %s backend", name);
        device_describe(d);
    }
    l->n += n;
}

device_list *device_list_probe(void) {
    device_registry_builtin();
    device_list *l = calloc(1, sizeof *l);
    if (!l) { anv_set_error("out of memory"); return NULL; }
    l->vk_count = l->hip_count = -1;
    probe_backend(l, DEV_BACKEND_VULKAN);
    probe_backend(l, DEV_BACKEND_HIP);
    dev_info *cpu = &l->dev[l->n++];
    cpu_device_fill(cpu);
    snprintf(cpu->id, sizeof cpu->id, "cpu");
    device_describe(cpu);
    for (int i = 0; i < l->n; i++) l->dev[i].duplicate_of = -1;
    l->n_probe_notes = l->n_notes;
    return l;
}

void device_list_free(device_list *l) { free(l); }

int device_list_find(const device_list *l, const char *id) {
    for (int i = 0; i < l->n; i++) if (!strcmp(l->dev[i].id, id)) return i;
    return -1;
}

backend *device_open(const device_list *l, int i, int n_threads) {
    if (i < 0 || i >= l->n) { anv_set_error("device_open: no device %d", i); return NULL; }
    const dev_info *d = &l->dev[i];
    if (d->backend == DEV_BACKEND_CPU) return cpu_backend_new(n_threads);
    const device_enumerator *e = &registry[d->backend];
    if (!registry_set[d->backend] || !e->open) { anv_set_error("%s: the %s backend cannot open devices", d->id, dev_backend_name(d->backend)); return NULL; }
    return e->open(e->user, d, n_threads);
}

/* ---------------------------------------------------------------- environment */

void device_env_from_process(device_env *env) {
    memset(env, 0, sizeof *env);
    env->anvil_vk_visible = anv_setting_get("ANVIL_VK_VISIBLE_DEVICES");
    env->ggml_vk_visible = anv_setting_get("GGML_VK_VISIBLE_DEVICES");
    env->hip_visible = anv_setting_get("HIP_VISIBLE_DEVICES");
    env->rocr_visible = anv_setting_get("ROCR_VISIBLE_DEVICES");
    env->cuda_visible = anv_setting_get("CUDA_VISIBLE_DEVICES");
    env->backend = anv_setting_value("ANVIL_BACKEND", NULL);   /* or OLLAMA_LLM_LIBRARY (settings.h) */
    env->device = anv_setting_get("ANVIL_DEVICE");
    env->igpu = anv_setting_value("ANVIL_IGPU", NULL);         /* or OLLAMA_IGPU_ENABLE */
    env->hsa_override = anv_setting_get("HSA_OVERRIDE_GFX_VERSION");
#if defined(_WIN32)
    env->os = DEV_OS_WINDOWS;
#elif defined(__linux__)
    env->os = DEV_OS_LINUX;
#else
    env->os = DEV_OS_OTHER;
#endif
}

static const char *nonempty(const char *s) {
    if (!s) return NULL;
    for (const char *p = s; *p; p++) if (!isspace((unsigned char)*p)) return s;
    return NULL;
}

/* One token of a visibility list: an index, or (uuid_ok) "GPU-..." text. */
typedef struct { int index; char uuid[48]; } vis_item;

/* Parses "0,2" / "0 2" (and "-1" = none) into items. Returns the count, -2 for "-1",
 * or -1 with an error naming var. */
static int parse_visible(const char *var, const char *value, bool uuid_ok, vis_item *out, int max) {
    const char *p = value;
    int n = 0;
    while (*p) {
        while (*p == ',' || isspace((unsigned char)*p)) p++;
        if (!*p) break;
        const char *e = p;
        while (*e && *e != ',' && !isspace((unsigned char)*e)) e++;
        size_t len = (size_t)(e - p);
        if (n >= max) { anv_set_error("%s=%s: too many entries (at most %d)", var, value, max); return -1; }
        vis_item *it = &out[n];
        memset(it, 0, sizeof *it);
        if (len == 2 && !strncmp(p, "-1", 2)) {
            it->index = -2;
        } else if (uuid_ok && len > 4 && !strncasecmp(p, "GPU-", 4)) {
            if (len >= sizeof it->uuid) { anv_set_error("%s=%s: '%.*s' is too long for a GPU UUID", var, value, (int)len, p); return -1; }
            it->index = -1;
            memcpy(it->uuid, p, len);
        } else {
            long v = 0;
            for (size_t i = 0; i < len; i++) {
                if (!isdigit((unsigned char)p[i]) || v > 100000) {
                    anv_set_error("%s=%s: '%.*s' is not a device index (expected indices like 0,2%s%s)", var, value, (int)len, p,
                                  uuid_ok ? ", GPU-<uuid>" : "", ", or -1 for none");
                    return -1;
                }
                v = v * 10 + (p[i] - '0');
            }
            it->index = (int)v;
        }
        n++;
        p = e;
    }
    if (n == 0) { anv_set_error("%s=%s: no device index in the value", var, value); return -1; }
    for (int i = 0; i < n; i++) {
        if (out[i].index == -2 && n > 1) { anv_set_error("%s=%s: -1 (no devices) cannot be combined with indices", var, value); return -1; }
        for (int j = 0; j < i; j++)
            if (out[i].index == out[j].index && (out[i].index >= 0 || !strcasecmp(out[i].uuid, out[j].uuid))) {
                anv_set_error("%s=%s: device listed twice", var, value);
                return -1;
            }
    }
    return out[0].index == -2 ? -2 : n;
}

static void list_ids(const device_list *l, dev_backend_kind kind, char *out, size_t out_len) {
    size_t n = 0;
    out[0] = 0;
    for (int i = 0; i < l->n && n < out_len; i++)
        if (l->dev[i].backend == kind && strcmp(l->dev[i].id, "-"))
            n += (size_t)snprintf(out + n, out_len - n, "%s%s", n ? ", " : "", l->dev[i].id);
    if (!out[0]) snprintf(out, out_len, "none");
}

/* ---------------------------------------------------------------- selection */

static bool uuid_valid(const dev_info *d) {
    if (!d->has_uuid) return false;
    for (int i = 0; i < 16; i++) if (d->uuid[i]) return true;
    return false;
}

/* The same physical GPU: equal PCI bus ids, or (two Vulkan drivers) equal device UUIDs. */
static bool same_gpu(const dev_info *a, const dev_info *b) {
    if (a->has_pci && b->has_pci && a->pci_bus_id[0] && !strcasecmp(a->pci_bus_id, b->pci_bus_id)) return true;
    if (a->backend == DEV_BACKEND_VULKAN && b->backend == DEV_BACKEND_VULKAN && uuid_valid(a) && uuid_valid(b) &&
        a->vendor_id == b->vendor_id && !memcmp(a->uuid, b->uuid, 16))
        return true;
    return false;
}

static const char *hip_vis_var(const device_env *env) {
    return nonempty(env->hip_visible) ? "HIP_VISIBLE_DEVICES" : nonempty(env->cuda_visible) ? "CUDA_VISIBLE_DEVICES" : NULL;
}

/* ROCR_VISIBLE_DEVICES (indices of all GPUs, or GPU-<uuid>) then HIP/CUDA_VISIBLE_DEVICES
 * (indices into what ROCR left): hidden devices get id "-"; the rest hip0.. in list order. */
static int apply_hip_visibility(device_list *l, const device_env *env, bool runtime_applies) {
    int phys[DEVICE_MAX], n_phys = 0;
    for (int i = 0; i < l->n; i++) if (l->dev[i].backend == DEV_BACKEND_HIP) phys[n_phys++] = i;
    const char *rocr = nonempty(env->rocr_visible);
    const char *hvar = hip_vis_var(env);
    const char *hval = hvar ? (hvar[0] == 'H' ? env->hip_visible : env->cuda_visible) : NULL;
    if (nonempty(env->hip_visible) && nonempty(env->cuda_visible))
        list_note(l, "hip: HIP_VISIBLE_DEVICES is set, so CUDA_VISIBLE_DEVICES is ignored");
    vis_item items[DEVICE_MAX];
    int stage1[DEVICE_MAX], n1 = n_phys;
    for (int i = 0; i < n_phys; i++) stage1[i] = phys[i];
    if (rocr) {
        int n = parse_visible("ROCR_VISIBLE_DEVICES", rocr, true, items, DEVICE_MAX);
        if (n == -1) return -1;
        if (!runtime_applies) {
            n1 = 0;
            for (int k = 0; k < n; k++) {
                int found = -1;
                if (items[k].index >= 0) {
                    if (items[k].index >= n_phys) {
                        anv_set_error("ROCR_VISIBLE_DEVICES=%s: there is no GPU %d (ROCm sees %d)", rocr, items[k].index, n_phys);
                        return -1;
                    }
                    found = phys[items[k].index];
                } else if (items[k].index == -1) {
                    for (int i = 0; i < n_phys; i++) if (!strcasecmp(l->dev[phys[i]].uuid_str, items[k].uuid)) found = phys[i];
                    if (found < 0) { anv_set_error("ROCR_VISIBLE_DEVICES=%s: no GPU has UUID %s", rocr, items[k].uuid); return -1; }
                }
                if (found >= 0) {
                    for (int j = 0; j < n1; j++)
                        if (stage1[j] == found) { anv_set_error("ROCR_VISIBLE_DEVICES=%s: the same GPU is listed twice", rocr); return -1; }
                    stage1[n1++] = found;
                }
            }
        }
    }
    int stage2[DEVICE_MAX], n2 = n1;
    for (int i = 0; i < n1; i++) stage2[i] = stage1[i];
    if (hval) {
        int n = parse_visible(hvar, hval, false, items, DEVICE_MAX);
        if (n == -1) return -1;
        if (!runtime_applies) {
            n2 = 0;
            for (int k = 0; k < n; k++) {
                if (items[k].index < 0) continue; /* -1: none */
                if (items[k].index >= n1) {
                    anv_set_error("%s=%s: there is no HIP device %d (%d visible%s)", hvar, hval, items[k].index, n1,
                                  rocr ? " after ROCR_VISIBLE_DEVICES" : "");
                    return -1;
                }
                stage2[n2++] = stage1[items[k].index];
            }
        }
    }
    if (runtime_applies) { /* the runtime hid and renumbered already: its indices are ordinals */
        for (int i = 0; i < n_phys; i++) snprintf(l->dev[phys[i]].id, sizeof l->dev[0].id, "hip%d", l->dev[phys[i]].backend_index);
        if (rocr || hval) list_note(l, "hip: %s%s%s applied by the ROCm runtime", rocr ? "ROCR_VISIBLE_DEVICES" : "", rocr && hval ? " and " : "", hval ? hvar : "");
        return 0;
    }
    for (int i = 0; i < n_phys; i++) {
        dev_info *d = &l->dev[phys[i]];
        int ord = -1;
        for (int k = 0; k < n2; k++) if (stage2[k] == phys[i]) ord = k;
        if (ord >= 0) { snprintf(d->id, sizeof d->id, "hip%d", ord); continue; }
        bool in1 = false;
        for (int k = 0; k < n1; k++) if (stage1[k] == phys[i]) in1 = true;
        snprintf(d->id, sizeof d->id, "-");
        if (!in1)
            skip(d, DEV_SKIP_ENV, "add its index or UUID to ROCR_VISIBLE_DEVICES, or unset it",
                 "hidden by ROCR_VISIBLE_DEVICES=%s (ROCm GPU %d, %s)", rocr, i, d->uuid_str[0] ? d->uuid_str : "no UUID");
        else
            skip(d, DEV_SKIP_ENV, hvar[0] == 'H' ? "add its index to HIP_VISIBLE_DEVICES, or unset it" : "add its index to CUDA_VISIBLE_DEVICES, or unset it",
                 "hidden by %s=%s", hvar, hval);
    }
    return 0;
}

static int parse_backend(const char *v, int *out) {
    if (!v) { *out = -1; return 0; }
    if (!strcasecmp(v, "vulkan")) *out = DEV_BACKEND_VULKAN;
    else if (!strcasecmp(v, "hip") || !strcasecmp(v, "rocm")) *out = DEV_BACKEND_HIP;
    else if (!strcasecmp(v, "cpu")) *out = DEV_BACKEND_CPU;
    else { anv_set_error("ANVIL_BACKEND=%s: expected vulkan, hip or cpu", v); return -1; }
    return 0;
}

static int parse_device_id(const char *v) {
    if (!v) return 0;
    if (!strcmp(v, "cpu")) return 0;
    const char *digits = !strncmp(v, "vulkan", 6) ? v + 6 : !strncmp(v, "hip", 3) ? v + 3 : NULL;
    bool ok = digits && *digits && strlen(digits) < 6;
    for (const char *p = digits; ok && *p; p++) ok = isdigit((unsigned char)*p);
    if (!ok) { anv_set_error("ANVIL_DEVICE=%s: expected a device id as anvil devices lists it (vulkan0, hip0, cpu)", v); return -1; }
    return 0;
}

static void reset_decisions(device_list *l) {
    for (int i = 0; i < l->n; i++) {
        dev_info *d = &l->dev[i];
        d->used = d->explicit_pick = false;
        d->duplicate_of = -1;
        d->skip = DEV_SKIP_NONE;
        d->why[0] = d->fix[0] = d->effective_gfx[0] = 0;
        if (d->backend == DEV_BACKEND_HIP) snprintf(d->id, sizeof d->id, "hip%d", d->backend_index);
    }
    l->n_notes = l->n_probe_notes; /* drop the notes of an earlier select */
}

static int select_vulkan_visibility(device_list *l, const device_env *env) {
    const char *a = nonempty(env->anvil_vk_visible), *g = nonempty(env->ggml_vk_visible);
    l->vk_var = a ? "ANVIL_VK_VISIBLE_DEVICES" : g ? "GGML_VK_VISIBLE_DEVICES" : NULL;
    if (!l->vk_var) return 0;
    const char *val = a ? a : g;
    if (a && g && strcmp(a, g)) list_note(l, "vulkan: ANVIL_VK_VISIBLE_DEVICES=%s wins over GGML_VK_VISIBLE_DEVICES=%s", a, g);
    vis_item items[DEVICE_MAX];
    int n = parse_visible(l->vk_var, val, false, items, DEVICE_MAX);
    if (n == -1) return -1;
    char fix[160];
    snprintf(fix, sizeof fix, "unset %s", l->vk_var);
    if (n == -2) {
        for (int i = 0; i < l->n; i++)
            if (l->dev[i].backend == DEV_BACKEND_VULKAN && l->dev[i].skip == DEV_SKIP_NONE)
                skip(&l->dev[i], DEV_SKIP_ENV, fix, "Vulkan disabled by %s=-1", l->vk_var);
        return 0;
    }
    if (l->vk_count < 0) { anv_set_error("%s=%s: Vulkan is unavailable: %s", l->vk_var, val, l->vk_why); return -1; }
    bool listed[DEVICE_MAX] = {0};
    for (int k = 0; k < n; k++) {
        if (items[k].index >= l->vk_count) {
            char ids[256];
            list_ids(l, DEV_BACKEND_VULKAN, ids, sizeof ids);
            anv_set_error("%s=%s: there is no Vulkan device %d (Vulkan devices: %s; see anvil devices)", l->vk_var, val, items[k].index, ids);
            return -1;
        }
        listed[items[k].index] = true;
    }
    for (int i = 0; i < l->n; i++) {
        dev_info *d = &l->dev[i];
        if (d->backend != DEV_BACKEND_VULKAN) continue;
        if (listed[d->backend_index]) {
            if (!d->supported) {
                anv_set_error("%s=%s: %s (%s) cannot be used: %s", l->vk_var, val, d->id, d->name, d->unsupported_why);
                return -1;
            }
            d->explicit_pick = true;
        } else if (d->skip == DEV_SKIP_NONE) {
            char f[200];
            snprintf(f, sizeof f, "add %d to %s, or unset it", d->backend_index, l->vk_var);
            skip(d, DEV_SKIP_ENV, f, "not listed in %s=%s", l->vk_var, val);
        }
    }
    return 0;
}

static int select_dedup_winner(const device_list *l, const int *group, int n) {
    int best = group[0];
    for (int k = 1; k < n; k++) {
        const dev_info *c = &l->dev[group[k]], *b = &l->dev[best];
        if (c->explicit_pick != b->explicit_pick) { if (c->explicit_pick) best = group[k]; continue; }
        if (c->backend != b->backend) { if (c->backend == DEV_BACKEND_HIP) best = group[k]; continue; }
        if (driver_rank(c) < driver_rank(b)) best = group[k];
    }
    return best;
}

static void select_dedup(device_list *l) {
    bool done[DEVICE_MAX] = {0};
    for (int i = 0; i < l->n; i++) {
        dev_info *a = &l->dev[i];
        if (done[i] || a->backend == DEV_BACKEND_CPU || a->skip != DEV_SKIP_NONE) continue;
        int group[DEVICE_MAX], n = 0;
        group[n++] = i;
        for (int j = i + 1; j < l->n; j++) {
            dev_info *b = &l->dev[j];
            if (done[j] || b->backend == DEV_BACKEND_CPU || b->skip != DEV_SKIP_NONE) continue;
            for (int k = 0; k < n; k++) if (same_gpu(&l->dev[group[k]], b)) { group[n++] = j; break; }
        }
        for (int k = 0; k < n; k++) done[group[k]] = true;
        if (n == 1) continue;
        int w = select_dedup_winner(l, group, n);
        const dev_info *win = &l->dev[w];
        for (int k = 0; k < n; k++) {
            if (group[k] == w) continue;
            dev_info *d = &l->dev[group[k]];
            char reason[200];
            if (win->explicit_pick && !d->explicit_pick)
                snprintf(reason, sizeof reason, "%s selects that one", l->vk_var ? l->vk_var : "ANVIL_DEVICE");
            else if (win->backend == DEV_BACKEND_HIP)
                snprintf(reason, sizeof reason, "HIP is preferred for %s, which this HIP build supports", win->effective_gfx[0] ? win->effective_gfx : "this GPU");
            else if (d->backend == DEV_BACKEND_HIP)
                snprintf(reason, sizeof reason, "%s selects Vulkan", l->vk_var ? l->vk_var : "the environment");
            else
                snprintf(reason, sizeof reason, "%s is preferred over %s", driver_pretty(win), driver_pretty(d));
            char fix[160];
            snprintf(fix, sizeof fix, "ANVIL_DEVICE=%s to use this copy instead", d->id);
            skip(d, DEV_SKIP_DUPLICATE, fix, "same GPU as %s (%s)", win->id, reason);
            d->duplicate_of = w;
        }
    }
}

static void select_types(device_list *l, const device_env *env) {
    const char *igpu = nonempty(env->igpu);
    int discrete = -1;
    for (int i = 0; i < l->n; i++)
        if (l->dev[i].skip == DEV_SKIP_NONE && l->dev[i].type == DEV_TYPE_DISCRETE) { discrete = i; break; }
    int first_igpu = -1;
    for (int i = 0; i < l->n; i++) {
        dev_info *d = &l->dev[i];
        if (d->backend == DEV_BACKEND_CPU || d->skip != DEV_SKIP_NONE) continue;
        char fix[200];
        const char *var_hint = d->backend == DEV_BACKEND_VULKAN ? "ANVIL_VK_VISIBLE_DEVICES" : "ANVIL_DEVICE";
        if (d->type == DEV_TYPE_SOFTWARE && !d->explicit_pick) {
            if (d->backend == DEV_BACKEND_VULKAN)
                snprintf(fix, sizeof fix, "%s=%d or ANVIL_DEVICE=%s to use it anyway (tests, no GPU)", var_hint, d->backend_index, d->id);
            else
                snprintf(fix, sizeof fix, "ANVIL_DEVICE=%s to use it anyway", d->id);
            skip(d, DEV_SKIP_SOFTWARE, fix, "software rasteriser: runs on the CPU, slower than the CPU backend; used only when asked");
        } else if ((d->type == DEV_TYPE_VIRTUAL || d->type == DEV_TYPE_OTHER) && !d->explicit_pick) {
            snprintf(fix, sizeof fix, "ANVIL_DEVICE=%s to use it", d->id);
            skip(d, DEV_SKIP_VIRTUAL, fix, "%s GPU (e.g. a VM's virtio-gpu): used only when asked", dev_type_name(d->type));
        } else if (d->type == DEV_TYPE_INTEGRATED && !d->explicit_pick) {
            if (igpu && !strcmp(igpu, "0")) {
                skip(d, DEV_SKIP_IGPU, "unset ANVIL_IGPU (or ANVIL_IGPU=1)", "integrated GPU, disabled by ANVIL_IGPU=0");
            } else if (igpu && !strcmp(igpu, "1")) {
                d->used = true;
            } else if (discrete >= 0) {
                snprintf(fix, sizeof fix, "ANVIL_IGPU=1 to use it as well, or ANVIL_DEVICE=%s to use only it", d->id);
                skip(d, DEV_SKIP_IGPU, fix, "integrated GPU while a discrete GPU (%s) is used: it shares system memory and would mostly slow the discrete GPU down", l->dev[discrete].id);
            } else if (first_igpu >= 0) {
                snprintf(fix, sizeof fix, "ANVIL_IGPU=1 to use every integrated GPU, or ANVIL_DEVICE=%s", d->id);
                skip(d, DEV_SKIP_EXTRA_IGPU, fix, "only one integrated GPU is used (%s)", l->dev[first_igpu].id);
            } else {
                first_igpu = i;
                d->used = true;
            }
        } else {
            d->used = true;
        }
    }
}

/* HIP: visibility variables, HSA_OVERRIDE_GFX_VERSION (its gfx target into hsa_gfx). */
static int select_hip_env(device_list *l, const device_env *env, char *hsa_gfx, size_t hsa_gfx_len) {
    const char *hsa = nonempty(env->hsa_override);
    if (l->hip_count >= 0) {
        if (apply_hip_visibility(l, env, registry[DEV_BACKEND_HIP].runtime_applies_visibility)) return -1;
        if (hsa && env->os == DEV_OS_LINUX && hip_gfx_from_version(hsa, hsa_gfx, hsa_gfx_len)) {
            anv_set_error("HSA_OVERRIDE_GFX_VERSION=%s: expected a version like 10.3.0 (gfx1030) or 11.0.0 (gfx1100)", hsa);
            return -1;
        }
        if (hsa && env->os != DEV_OS_LINUX)
            list_note(l, "hip: HSA_OVERRIDE_GFX_VERSION=%s has no effect outside Linux (ROCm on Windows ignores it)", hsa);
    } else if (nonempty(env->hip_visible) || nonempty(env->rocr_visible) || nonempty(env->cuda_visible)) {
        list_note(l, "hip: %s is set, but HIP is not available here (%s), so it has no effect",
                  nonempty(env->rocr_visible) ? "ROCR_VISIBLE_DEVICES" : hip_vis_var(env), l->hip_why);
    }
    return 0;
}

/* Devices the backend cannot run, and HIP devices whose gfx target is not in the build. */
static void select_supported(device_list *l, const device_env *env, const char *hsa_gfx) {
    for (int i = 0; i < l->n; i++) {
        dev_info *d = &l->dev[i];
        if (d->skip != DEV_SKIP_NONE) continue;
        if (!d->supported) {
            skip(d, DEV_SKIP_UNSUPPORTED, d->backend == DEV_BACKEND_VULKAN ? "update the GPU driver (Vulkan 1.2 with 16-bit storage is needed)" : "",
                 "%s", d->unsupported_why);
            continue;
        }
        if (d->backend != DEV_BACKEND_HIP) continue;
        snprintf(d->effective_gfx, sizeof d->effective_gfx, "%s", hsa_gfx[0] ? hsa_gfx : d->gfx_target);
        if (!hip_target_in_build(d->effective_gfx, l->hip_targets)) {
            char fix[256], ver[32];
            int n = snprintf(fix, sizeof fix, "the Vulkan backend runs this GPU without ROCm");
            if (env->os == DEV_OS_LINUX && !hsa_gfx[0] && hip_override_suggestion(d->effective_gfx, l->hip_targets, ver, sizeof ver))
                snprintf(fix + n, sizeof fix - (size_t)n, "; or try HSA_OVERRIDE_GFX_VERSION=%s (not supported by AMD)", ver);
            skip(d, DEV_SKIP_HIP_TARGET, fix, "%s%s is not in this HIP build (targets: %s)", d->effective_gfx,
                 hsa_gfx[0] ? " (from HSA_OVERRIDE_GFX_VERSION)" : "", l->hip_targets[0] ? l->hip_targets : "none");
        }
    }
}

/* ANVIL_BACKEND (forced: a dev_backend_kind, or -1 when unset). */
static int select_forced_backend(device_list *l, const device_env *env, int forced) {
    if (forced == DEV_BACKEND_VULKAN && l->vk_count < 0) { anv_set_error("ANVIL_BACKEND=vulkan: Vulkan is unavailable: %s", l->vk_why); return -1; }
    if (forced == DEV_BACKEND_HIP && l->hip_count < 0) { anv_set_error("ANVIL_BACKEND=hip: HIP is unavailable: %s", l->hip_why); return -1; }
    if (forced >= 0)
        for (int i = 0; i < l->n; i++) {
            dev_info *d = &l->dev[i];
            if (d->backend != DEV_BACKEND_CPU && (int)d->backend != forced && d->skip == DEV_SKIP_NONE)
                skip(d, DEV_SKIP_ENV, "unset ANVIL_BACKEND", "ANVIL_BACKEND=%s", env->backend);
        }
    return 0;
}

/* ANVIL_DEVICE=pin (NULL: unset). */
static int select_pinned(device_list *l, const device_env *env, const char *pin, int forced) {
    if (!pin) return 0;
    int p = device_list_find(l, pin);
    if (p < 0) {
        char v[256], h[256];
        list_ids(l, DEV_BACKEND_VULKAN, v, sizeof v);
        list_ids(l, DEV_BACKEND_HIP, h, sizeof h);
        anv_set_error("ANVIL_DEVICE=%s: no such device (vulkan: %s; hip: %s; cpu; see anvil devices)", pin, v, h);
        return -1;
    }
    dev_info *d = &l->dev[p];
    if (d->backend == DEV_BACKEND_CPU && forced >= 0 && forced != DEV_BACKEND_CPU) {
        anv_set_error("ANVIL_DEVICE=cpu conflicts with ANVIL_BACKEND=%s", env->backend);
        return -1;
    }
    if (d->skip == DEV_SKIP_ENV) { anv_set_error("ANVIL_DEVICE=%s conflicts with another variable: %s", pin, d->why); return -1; }
    if (d->skip != DEV_SKIP_NONE) { anv_set_error("ANVIL_DEVICE=%s: %s (%s) cannot be used: %s", pin, d->id, d->name, d->why); return -1; }
    d->explicit_pick = true;
    for (int i = 0; i < l->n; i++)
        if (i != p && l->dev[i].backend != DEV_BACKEND_CPU && l->dev[i].skip == DEV_SKIP_NONE)
            skip(&l->dev[i], DEV_SKIP_ENV, "unset ANVIL_DEVICE", "ANVIL_DEVICE=%s pins another device", pin);
    return 0;
}

/* HIP devices skipped for their gfx target: say which copy runs the card instead. */
static void select_note_hip_copies(device_list *l) {
    for (int i = 0; i < l->n; i++) {
        dev_info *d = &l->dev[i];
        if (d->skip != DEV_SKIP_HIP_TARGET) continue;
        for (int j = 0; j < l->n; j++)
            if (l->dev[j].used && l->dev[j].backend == DEV_BACKEND_VULKAN && same_gpu(d, &l->dev[j])) {
                char note[64];
                snprintf(note, sizeof note, "; this GPU runs through %s instead", l->dev[j].id);
                strncat(d->why, note, sizeof d->why - strlen(d->why) - 1);
                d->duplicate_of = j;
            }
    }
}

/* A forced GPU backend needs a GPU; the CPU runs everything without one, else it is the fallback. */
static int select_cpu_role(device_list *l, const device_env *env, int forced) {
    int n_gpu = 0;
    for (int i = 0; i < l->n; i++) n_gpu += l->dev[i].used && l->dev[i].backend != DEV_BACKEND_CPU;
    if ((forced == DEV_BACKEND_VULKAN || forced == DEV_BACKEND_HIP) && n_gpu == 0) {
        char reasons[400] = "";
        size_t n = 0;
        for (int i = 0; i < l->n && n < sizeof reasons; i++)
            if ((int)l->dev[i].backend == forced)
                n += (size_t)snprintf(reasons + n, sizeof reasons - n, "%s%s: %s", n ? "; " : "", l->dev[i].id, l->dev[i].why);
        anv_set_error("ANVIL_BACKEND=%s: no %s device can be used (%s)", env->backend, dev_backend_name((dev_backend_kind)forced),
                      n ? reasons : "no devices");
        return -1;
    }
    for (int i = 0; i < l->n; i++) {
        dev_info *d = &l->dev[i];
        if (d->backend != DEV_BACKEND_CPU) continue;
        if (n_gpu == 0) d->used = true;
        else skip(d, DEV_SKIP_CPU_FALLBACK, "", "holds the token embeddings and any layers that do not fit on the GPUs");
    }
    return 0;
}

int device_list_select(device_list *l, const device_env *env) {
    reset_decisions(l);
    l->selected = false;
    int forced;
    if (parse_backend(nonempty(env->backend), &forced)) return -1;
    const char *igpu = nonempty(env->igpu);
    if (igpu && strcmp(igpu, "0") && strcmp(igpu, "1")) { anv_set_error("ANVIL_IGPU=%s: expected 0 or 1", igpu); return -1; }
    const char *pin = nonempty(env->device);
    if (parse_device_id(pin)) return -1;
    /* The CPU backend's own variable (ANVIL_CPU_SIMD, read by the probe): every model needs the CPU. */
    for (int i = 0; i < l->n; i++)
        if (l->dev[i].backend == DEV_BACKEND_CPU && !l->dev[i].supported) { anv_set_error("%s", l->dev[i].unsupported_why); return -1; }

    char hsa_gfx[48] = "";
    if (select_hip_env(l, env, hsa_gfx, sizeof hsa_gfx)) return -1;
    select_supported(l, env, hsa_gfx);
    if (select_vulkan_visibility(l, env)) return -1;
    if (select_forced_backend(l, env, forced)) return -1;
    if (select_pinned(l, env, pin, forced)) return -1;
    select_dedup(l);
    select_types(l, env);
    select_note_hip_copies(l);
    if (select_cpu_role(l, env, forced)) return -1;
    l->selected = true;
    return 0;
}

int device_list_used_gpus(const device_list *l, int *idx, int max) {
    int n = 0;
    for (int i = 0; i < l->n && n < max; i++)
        if (l->dev[i].used && l->dev[i].backend != DEV_BACKEND_CPU) idx[n++] = i;
    return n;
}

int device_parse_split(const char *what, const char *s, float *out, int max) {
    if (!s || !nonempty(s)) { anv_set_error("%s: empty value (expected proportions like 3,1)", what); return -1; }
    int n = 0;
    double sum = 0;
    const char *p = s;
    while (*p) {
        while (*p == ',' || *p == '/' || isspace((unsigned char)*p)) p++;
        if (!*p) break;
        char *end;
        double v = strtod(p, &end);
        if (end == p || !(v >= 0) || v > 1e6 || (*end && *end != ',' && *end != '/' && !isspace((unsigned char)*end))) {
            anv_set_error("%s=%s: '%.*s' is not a non-negative number (expected proportions like 3,1)", what, s, (int)strcspn(p, ", /"), p);
            return -1;
        }
        if (n >= max) { anv_set_error("%s=%s: more than %d values", what, s, max); return -1; }
        out[n++] = (float)v;
        sum += v;
        p = end;
    }
    if (n == 0 || sum <= 0) { anv_set_error("%s=%s: the proportions are all zero", what, s); return -1; }
    return n;
}
