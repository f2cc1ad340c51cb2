/* doctor: gathers facts about this machine's GPU stack and explains, in plain words and
 * with the fix, why a GPU is or is not used: no Vulkan loader, a loader without a driver
 * (ICD), only a software device, GPUs skipped by policy, ROCm missing or a gfx target
 * outside the HIP build, /dev/dri or /dev/kfd not accessible, the AMD driver version on
 * Windows and what its versions are known to break. */
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "doctor.h"
#include "error.h"
#include "settings.h"

/* ---------------------------------------------------------------- facts */

static bool file_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

/* library_path from a Vulkan ICD manifest ("" if none). */
static void manifest_library(const char *path, char *out, size_t out_len) {
    out[0] = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return;
    char buf[16384];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *k = strstr(buf, "\"library_path\"");
    if (!k) return;
    k = strchr(k + 14, ':');
    if (!k) return;
    k = strchr(k, '"');
    if (!k) return;
    k++;
    size_t o = 0;
    for (; *k && *k != '"' && o + 1 < out_len; k++) {
        if (*k == '\\' && k[1]) k++;
        out[o++] = *k;
    }
    out[o] = 0;
}

static void icd_add(doctor_facts *f, const char *manifest) {
    if (f->n_icds >= DOCTOR_MAX_ICDS) return;
    doctor_icd *icd = &f->icds[f->n_icds++];
    memset(icd, 0, sizeof *icd);
    dev_fmt(icd->manifest, sizeof icd->manifest, "%s", manifest);
    icd->manifest_exists = file_exists(manifest);
    if (!icd->manifest_exists) return;
    manifest_library(manifest, icd->library, sizeof icd->library);
    if (strchr(icd->library, '/')) {
        char full[1024];
        if (icd->library[0] == '/') dev_fmt(full, sizeof full, "%s", icd->library);
        else { /* relative to the manifest's folder */
            const char *slash = strrchr(manifest, '/');
            int dir_len = slash ? (int)(slash - manifest) : 1;
            dev_fmt(full, sizeof full, "%.*s/%s", dir_len, slash ? manifest : ".", icd->library);
        }
        icd->library_checked = true;
        icd->library_exists = file_exists(full);
    }
}

/* Every *.json in dir (or dir itself when it is a file). */
static void icd_add_path(doctor_facts *f, const char *path) {
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) { icd_add(f, path); return; }
    DIR *d = opendir(path);
    if (!d) return;
    struct dirent *e;
    char names[DOCTOR_MAX_ICDS][256];
    int n = 0;
    while ((e = readdir(d)) && n < DOCTOR_MAX_ICDS) {
        size_t len = strlen(e->d_name);
        if (len > 5 && !strcmp(e->d_name + len - 5, ".json")) dev_fmt(names[n++], sizeof names[0], "%s", e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], (int (*)(const void *, const void *))strcmp);
    for (int i = 0; i < n; i++) {
        char full[1024];
        dev_fmt(full, sizeof full, "%s/%s", path, names[i]);
        icd_add(f, full);
    }
}

static void icd_add_list(doctor_facts *f, const char *list) {
    char buf[2048];
    dev_fmt(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ":", &save); tok; tok = strtok_r(NULL, ":", &save))
        if (*tok) icd_add_path(f, tok);
}

/* The loader's search folders on Linux (XDG config and data dirs, /etc/vulkan). */
static void icd_add_standard(doctor_facts *f) {
    const char *home = anv_setting_raw("HOME");
    const char *xch = anv_setting_raw("XDG_CONFIG_HOME"), *xcd = anv_setting_raw("XDG_CONFIG_DIRS");
    const char *xdh = anv_setting_raw("XDG_DATA_HOME"), *xdd = anv_setting_raw("XDG_DATA_DIRS");
    char p[1024];
    if (xch && *xch) { dev_fmt(p, sizeof p, "%s/vulkan/icd.d", xch); icd_add_path(f, p); }
    else if (home) { dev_fmt(p, sizeof p, "%s/.config/vulkan/icd.d", home); icd_add_path(f, p); }
    char dirs[1024];
    dev_fmt(dirs, sizeof dirs, "%s", xcd && *xcd ? xcd : "/etc/xdg");
    for (char *s = NULL, *t = strtok_r(dirs, ":", &s); t; t = strtok_r(NULL, ":", &s)) { dev_fmt(p, sizeof p, "%s/vulkan/icd.d", t); icd_add_path(f, p); }
    icd_add_path(f, "/etc/vulkan/icd.d");
    if (xdh && *xdh) { dev_fmt(p, sizeof p, "%s/vulkan/icd.d", xdh); icd_add_path(f, p); }
    else if (home) { dev_fmt(p, sizeof p, "%s/.local/share/vulkan/icd.d", home); icd_add_path(f, p); }
    dev_fmt(dirs, sizeof dirs, "%s", xdd && *xdd ? xdd : "/usr/local/share:/usr/share");
    for (char *s = NULL, *t = strtok_r(dirs, ":", &s); t; t = strtok_r(NULL, ":", &s)) { dev_fmt(p, sizeof p, "%s/vulkan/icd.d", t); icd_add_path(f, p); }
    /* Folders that do not exist were added as missing "files": drop them. */
    int k = 0;
    for (int i = 0; i < f->n_icds; i++) if (f->icds[i].manifest_exists) f->icds[k++] = f->icds[i];
    f->n_icds = k;
}

void doctor_scan_icds(doctor_facts *f) {
    f->n_icds = 0;
    f->icd_env_var = NULL;
    f->icd_env_value[0] = 0;
    const char *drv = anv_setting_raw("VK_DRIVER_FILES"), *icd = anv_setting_raw("VK_ICD_FILENAMES");
    /* The standard folders first (for the example in the fix), then what the loader will use. */
    icd_add_standard(f);
    f->n_system_icds = f->n_icds;
    f->system_icd_example[0] = 0;
    for (int i = 0; i < f->n_icds; i++)
        if (f->icds[i].library_exists || !f->icds[i].library_checked) { dev_fmt(f->system_icd_example, sizeof f->system_icd_example, "%s", f->icds[i].manifest); break; }
    if (drv && *drv) f->icd_env_var = "VK_DRIVER_FILES";
    else if (icd && *icd) f->icd_env_var = "VK_ICD_FILENAMES";
    if (f->icd_env_var) {
        dev_fmt(f->icd_env_value, sizeof f->icd_env_value, "%s", f->icd_env_var[3] == 'D' ? drv : icd);
        f->n_icds = 0;
        icd_add_list(f, f->icd_env_value);
    } else {
        const char *add = anv_setting_raw("VK_ADD_DRIVER_FILES");
        if (add && *add) icd_add_list(f, add);
    }
}

static void group_name(gid_t gid, char *out, size_t out_len) {
    struct group *g = getgrgid(gid);
    if (g) dev_fmt(out, out_len, "%s", g->gr_name);
    else dev_fmt(out, out_len, "%u", (unsigned)gid);
}

static void scan_dri(doctor_facts *f) {
    DIR *d = opendir("/dev/dri");
    f->dri_exists = d != NULL;
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "renderD", 7)) continue;
        char p[300];
        dev_fmt(p, sizeof p, "/dev/dri/%s", e->d_name);
        f->n_render_nodes++;
        bool ok = access(p, R_OK | W_OK) == 0;
        f->n_render_ok += ok;
        if (f->n_render_nodes == 1 || (!ok && f->n_render_ok == f->n_render_nodes - 1)) { /* the first, or the first failing */
            dev_fmt(f->render_node, sizeof f->render_node, "%s", p);
            struct stat st;
            if (stat(p, &st) == 0) group_name(st.st_gid, f->render_group, sizeof f->render_group);
        }
    }
    closedir(d);
    f->kfd_exists = file_exists("/dev/kfd");
    if (f->kfd_exists) {
        f->kfd_ok = access("/dev/kfd", R_OK | W_OK) == 0;
        struct stat st;
        if (stat("/dev/kfd", &st) == 0) group_name(st.st_gid, f->kfd_group, sizeof f->kfd_group);
    }
}

static void scan_pci(doctor_facts *f) {
    DIR *d = opendir("/sys/bus/pci/devices");
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char p[512], buf[32];
        unsigned cls = 0, vendor = 0;
        dev_fmt(p, sizeof p, "/sys/bus/pci/devices/%s/class", e->d_name);
        FILE *fp = fopen(p, "r");
        if (!fp) continue;
        if (fgets(buf, sizeof buf, fp)) cls = (unsigned)strtoul(buf, NULL, 16);
        fclose(fp);
        if ((cls >> 16) != 0x03) continue; /* display controllers */
        dev_fmt(p, sizeof p, "/sys/bus/pci/devices/%s/vendor", e->d_name);
        fp = fopen(p, "r");
        if (fp) { if (fgets(buf, sizeof buf, fp)) vendor = (unsigned)strtoul(buf, NULL, 16); fclose(fp); }
        if (vendor == 0x1af4 || vendor == 0x1234 || vendor == 0x15ad) continue; /* virtio, QEMU, VMware display */
        f->n_pci_gpus++;
        f->n_amd_pci_gpus += vendor == 0x1002;
    }
    closedir(d);
}

static void scan_rocm(doctor_facts *f) {
    const char *libs[] = {"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"};
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
        void *h = dlopen(libs[i], RTLD_LAZY | RTLD_LOCAL);
        if (h) { dlclose(h); f->rocm_found = true; dev_fmt(f->rocm_where, sizeof f->rocm_where, "%s", libs[i]); return; }
    }
    const char *rp = anv_setting_raw("ROCM_PATH");
    char p[512];
    dev_fmt(p, sizeof p, "%s/lib/libamdhip64.so", rp && *rp ? rp : "/opt/rocm");
    if (file_exists(p)) { f->rocm_found = true; dev_fmt(f->rocm_where, sizeof f->rocm_where, "%s", p); }
}

void doctor_gather(doctor_facts *f, const device_list *l, int select_rc, const char *select_error) {
    memset(f, 0, sizeof *f);
    device_env env;
    device_env_from_process(&env);
    f->os = env.os;
    f->devices = l;
    f->vulkan_built = l && l->vulkan_built;
    f->select_rc = select_rc;
    dev_fmt(f->select_error, sizeof f->select_error, "%s", select_error ? select_error : "");
    dev_fmt(f->hsa_override, sizeof f->hsa_override, "%s", env.hsa_override ? env.hsa_override : "");
#ifdef _WIN32
    const char *loader = "vulkan-1.dll";   /* what volk opens there (vk_loader.c) */
#else
    const char *loader = "libvulkan.so.1";
#endif
    dev_fmt(f->loader_name, sizeof f->loader_name, "%s", loader);
    void *h = dlopen(loader, RTLD_NOW | RTLD_LOCAL);
    if (h) { f->loader_found = true; dlclose(h); }
    else { const char *e = dlerror(); dev_fmt(f->loader_error, sizeof f->loader_error, "%s", e ? e : "not found"); }
    doctor_scan_icds(f);
    scan_dri(f);
    scan_pci(f);
    scan_rocm(f);
}

/* ---------------------------------------------------------------- findings */

const char *doctor_level_name(doctor_level l) {
    return l == DOC_OK ? "ok" : l == DOC_INFO ? "info" : l == DOC_WARN ? "warn" : "PROBLEM";
}

typedef struct { doctor_finding *out; int n, max; } finding_sink;

static doctor_finding *add(finding_sink *s, doctor_level lvl, const char *fmt, ...) ANV_PRINTF(3, 4);
static doctor_finding *add(finding_sink *s, doctor_level lvl, const char *fmt, ...) {
    static doctor_finding scratch;
    doctor_finding *f = s->n < s->max ? &s->out[s->n++] : &scratch;
    memset(f, 0, sizeof *f);
    f->level = lvl;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->title, sizeof f->title, fmt, ap);
    va_end(ap);
    return f;
}

static const char *const LOADER_FIX_LINUX =
    "Debian/Ubuntu: sudo apt install libvulkan1 mesa-vulkan-drivers\n"
    "Fedora: sudo dnf install vulkan-loader mesa-vulkan-drivers\n"
    "Arch: sudo pacman -S vulkan-icd-loader vulkan-radeon (AMD) / vulkan-intel (Intel) / nvidia-utils (NVIDIA)";
static const char *const LOADER_FIX_WINDOWS =
    "vulkan-1.dll comes with the GPU driver: install or repair AMD Software: Adrenalin Edition, the NVIDIA driver, or the Intel graphics driver";
static const char *const ICD_FIX_LINUX =
    "Debian/Ubuntu: sudo apt install mesa-vulkan-drivers (AMD RADV, Intel ANV); NVIDIA: the driver's Vulkan part (nvidia-vulkan-icd on Debian, libnvidia-gl-<version> on Ubuntu)\n"
    "Fedora: sudo dnf install mesa-vulkan-drivers (NVIDIA: akmod-nvidia from RPM Fusion)\n"
    "Arch: sudo pacman -S vulkan-radeon (AMD) / vulkan-intel (Intel) / nvidia-utils (NVIDIA)";
static const char *const ICD_FIX_WINDOWS =
    "install the GPU vendor's driver (AMD Software: Adrenalin Edition, NVIDIA Game Ready/Studio, Intel Arc/Iris Xe graphics driver); it registers its Vulkan driver";

static void check_loader_and_icds(const doctor_facts *f, finding_sink *s, bool *stop) {
    const char *icd_fix = f->os == DEV_OS_WINDOWS ? ICD_FIX_WINDOWS : ICD_FIX_LINUX;
    *stop = false;
    if (!f->vulkan_built) {
        doctor_finding *d = add(s, DOC_INFO, "This anvil was built without the Vulkan backend");
        dev_fmt(d->explain, sizeof d->explain, "Only the CPU backend is compiled in, so no GPU can be used.");
        dev_fmt(d->fix, sizeof d->fix, "rebuild with -DANVIL_VULKAN=ON (needs libvulkan-dev, libvulkan-volk-dev and glslc)");
    }
    if (!f->loader_found) {
        doctor_finding *d = add(s, DOC_PROBLEM, "No Vulkan loader (%s)", f->loader_name);
        dev_fmt(d->explain, sizeof d->explain,
                "Anvil reaches GPUs through the Vulkan loader library, and it is not installed (%s). Without it no GPU can be used.",
                f->loader_error[0] ? f->loader_error : "not found");
        dev_fmt(d->fix, sizeof d->fix, "%s", f->os == DEV_OS_WINDOWS ? LOADER_FIX_WINDOWS : LOADER_FIX_LINUX);
        *stop = true;
        return;
    }
    doctor_finding *ok = add(s, DOC_OK, "Vulkan loader: %s", f->loader_name);
    (void)ok;
    if (f->icd_env_var) {
        int missing = 0, present = 0;
        char missing_list[400] = "";
        for (int i = 0; i < f->n_icds; i++) {
            if (f->icds[i].manifest_exists) { present++; continue; }
            size_t n = strlen(missing_list);
            if (n < sizeof missing_list - 1) dev_fmt(missing_list + n, sizeof missing_list - n, "%s%s", missing ? ", " : "", f->icds[i].manifest);
            missing++;
        }
        if (missing || !present) {
            doctor_finding *d = add(s, present ? DOC_WARN : DOC_PROBLEM, "%s=%s: %s", f->icd_env_var, f->icd_env_value,
                                    present ? "some driver manifests (ICDs) do not exist" : "no Vulkan driver (ICD): the manifest it names does not exist");
            dev_fmt(d->explain, sizeof d->explain,
                    "%s tells the Vulkan loader to load only the drivers (ICD manifests) it lists, instead of the installed ones. "
                    "Missing: %s.%s", f->icd_env_var, missing ? missing_list : "(empty list)",
                    present ? "" : " So the loader has no driver at all and finds no device.");
            if (f->system_icd_example[0])
                dev_fmt(d->fix, sizeof d->fix, "unset %s (the loader then finds the %d installed driver%s), or point it at an existing manifest such as %s",
                        f->icd_env_var, f->n_system_icds, f->n_system_icds == 1 ? "" : "s", f->system_icd_example);
            else
                dev_fmt(d->fix, sizeof d->fix, "unset %s and install a Vulkan driver:\n%s", f->icd_env_var, icd_fix);
            if (!present) { *stop = true; return; }
        }
    } else if (f->n_icds == 0) {
        doctor_finding *d = add(s, DOC_PROBLEM, "Vulkan loader found, but no Vulkan driver (ICD) is installed");
        dev_fmt(d->explain, sizeof d->explain,
                "The loader looks for driver manifests in /usr/share/vulkan/icd.d, /etc/vulkan/icd.d and the XDG folders, and found none: "
                "it has no driver to talk to your GPU.");
        dev_fmt(d->fix, sizeof d->fix, "%s", icd_fix);
        *stop = true;
        return;
    }
    /* Manifests whose driver library is missing, and the list of drivers for context. */
    char names[512] = "";
    size_t n = 0;
    for (int i = 0; i < f->n_icds; i++) {
        const doctor_icd *icd = &f->icds[i];
        if (!icd->manifest_exists) continue;
        if (icd->library_checked && !icd->library_exists) {
            doctor_finding *d = add(s, DOC_WARN, "Driver manifest %s names a library that is not installed", icd->manifest);
            dev_fmt(d->explain, sizeof d->explain, "It points to %s, which does not exist, so the loader skips this driver.", icd->library);
            dev_fmt(d->fix, sizeof d->fix, "reinstall the package that owns %s, or remove the stale manifest", icd->manifest);
        }
        const char *base = strrchr(icd->manifest, '/');
        base = base ? base + 1 : icd->manifest;
        if (n < sizeof names - 1) n += (size_t)snprintf(names + n, sizeof names - n, "%s%.*s", n ? ", " : "", (int)strcspn(base, "."), base);
    }
    if (names[0]) add(s, DOC_INFO, "Vulkan drivers (ICDs) the loader will try: %s", names);
}

static bool is_hw_gpu(const dev_info *d) {
    return d->backend != DEV_BACKEND_CPU && d->type != DEV_TYPE_SOFTWARE;
}

/* Vulkan built but not working or without devices (unless the loader/ICD findings already
 * said why), and a malformed selection variable. */
static void check_vulkan_and_env(const doctor_facts *f, finding_sink *s, bool vulkan_explained) {
    const device_list *l = f->devices;
    const char *icd_fix = f->os == DEV_OS_WINDOWS ? ICD_FIX_WINDOWS : ICD_FIX_LINUX;
    if (vulkan_explained) {
        /* the loader/ICD finding already says why Vulkan has no device */
    } else if (f->vulkan_built && l->vk_count < 0) {
        doctor_finding *d = add(s, DOC_PROBLEM, "Vulkan does not work: %s", l->vk_why);
        dev_fmt(d->explain, sizeof d->explain, "The loader and a driver are installed, but creating a Vulkan instance or listing devices failed.");
        dev_fmt(d->fix, sizeof d->fix, "run vulkaninfo --summary to see the loader's own messages; reinstall the GPU driver:\n%s", icd_fix);
    } else if (f->vulkan_built && l->vk_count == 0) {
        doctor_finding *d = add(s, DOC_PROBLEM, "Vulkan works but lists no device");
        dev_fmt(d->explain, sizeof d->explain, "The installed drivers found no device they can drive.");
        dev_fmt(d->fix, sizeof d->fix, "%s", icd_fix);
    }
    if (f->select_rc != 0) {
        doctor_finding *d = add(s, DOC_PROBLEM, "Environment variable error: %s", f->select_error);
        dev_fmt(d->explain, sizeof d->explain, "Anvil refuses to guess when a device-selection variable is malformed or names a device that does not exist; every command that loads a model stops with this error.");
        dev_fmt(d->fix, sizeof d->fix, "correct or unset the variable named above (anvil devices lists the valid indices)");
    }
}

/* Only a software rasteriser (n_hw hardware GPUs, n_sw software devices). */
static void check_software_only(const doctor_facts *f, finding_sink *s, int n_hw, int n_sw) {
    const device_list *l = f->devices;
    if (!(n_hw == 0 && n_sw > 0)) return;
    const char *icd_fix = f->os == DEV_OS_WINDOWS ? ICD_FIX_WINDOWS : ICD_FIX_LINUX;
    const dev_info *sw = NULL;
    for (int i = 0; i < l->n && !sw; i++) if (l->dev[i].type == DEV_TYPE_SOFTWARE) sw = &l->dev[i];
    doctor_finding *d = add(s, DOC_WARN, "The only Vulkan device is a software rasteriser: %s (%s)", sw->id, sw->desc);
    size_t n = (size_t)snprintf(d->explain, sizeof d->explain,
        "llvmpipe/lavapipe runs Vulkan on the CPU; it is slower than Anvil's own CPU backend, so Anvil does not use it unless asked. No real GPU driver is active.");
    if (f->os == DEV_OS_LINUX && !f->dri_exists && n < sizeof d->explain)
        snprintf(d->explain + n, sizeof d->explain - n,
                 " There is no /dev/dri: the kernel has no GPU driver loaded, or this is a container or VM without access to a GPU.");
    dev_fmt(d->fix, sizeof d->fix,
            "install the Vulkan driver for your GPU:\n%s\n%s"
            "to use lavapipe anyway (tests, no GPU): ANVIL_VK_VISIBLE_DEVICES=%d",
            icd_fix,
            f->os == DEV_OS_LINUX && !f->dri_exists ? "in a container: docker run --device /dev/dri (and --device /dev/kfd for ROCm); in a VM: pass the GPU through\n" : "",
            sw->backend_index);
}

/* Every GPU not used, and why. */
static void check_unused_gpus(const doctor_facts *f, finding_sink *s) {
    const device_list *l = f->devices;
    for (int i = 0; i < l->n; i++) {
        const dev_info *d = &l->dev[i];
        if (d->used || !is_hw_gpu(d)) continue;
        const char *id = strcmp(d->id, "-") ? d->id : dev_backend_name(d->backend);
        doctor_level lvl = d->skip == DEV_SKIP_DUPLICATE ? DOC_INFO : DOC_WARN;
        if (d->skip == DEV_SKIP_HIP_TARGET && d->duplicate_of >= 0) lvl = DOC_INFO;
        const char *what = d->skip == DEV_SKIP_HIP_TARGET ? "gfx target not in the HIP build"
                         : d->skip == DEV_SKIP_DUPLICATE ? "same GPU seen twice"
                         : d->skip == DEV_SKIP_UNSUPPORTED ? "not supported"
                         : d->skip == DEV_SKIP_ENV ? "skipped by an environment variable"
                         : "skipped by policy";
        doctor_finding *fd = add(s, lvl, "%s (%s) is not used: %s", id, d->desc, what);
        dev_fmt(fd->explain, sizeof fd->explain, "%s.", d->why);
        if (d->skip == DEV_SKIP_HIP_TARGET && f->os == DEV_OS_WINDOWS)
            dev_fmt(fd->fix, sizeof fd->fix, "%s (HSA_OVERRIDE_GFX_VERSION does not work on Windows)", d->fix);
        else
            dev_fmt(fd->fix, sizeof fd->fix, "%s", d->fix[0] ? d->fix : "nothing to do");
    }
}

/* ROCm / HIP. */
static void check_hip(const doctor_facts *f, finding_sink *s) {
    const device_list *l = f->devices;
    bool amd = f->n_amd_pci_gpus > 0;
    for (int i = 0; i < l->n; i++) amd |= l->dev[i].vendor_id == 0x1002;
    if (l->hip_built && l->hip_count < 0) {
        const bool old = strstr(l->hip_why, "too old") != NULL; /* hip/hip_loader.c: version or entry point */
        doctor_finding *d = add(s, amd ? DOC_WARN : DOC_INFO, "ROCm runtime %s: %s", old ? "too old" : "not found", l->hip_why);
        dev_fmt(d->explain, sizeof d->explain, "This anvil has a HIP backend, but the ROCm runtime it needs is %s. The Vulkan backend needs no ROCm and runs AMD GPUs anyway.",
                old ? "older than ROCm 5.2" : f->rocm_found ? "not installed or does not start" : "not installed");
        dev_fmt(d->fix, sizeof d->fix, "nothing, to use Vulkan; for HIP: %s",
                f->os == DEV_OS_WINDOWS ? "install the AMD HIP SDK for Windows"
                : "Ubuntu/Debian: amdgpu-install --usecase=rocm (repo.radeon.com); Fedora: sudo dnf install rocm-hip; Arch: sudo pacman -S rocm-hip-runtime");
    } else if (!l->hip_built && amd) {
        doctor_finding *d = add(s, DOC_INFO, "No HIP backend in this build: AMD GPUs run through Vulkan");
        dev_fmt(d->explain, sizeof d->explain, "Vulkan (RADV on Linux, the AMD driver on Windows) runs every AMD GPU Anvil supports; ROCm is %s.",
                f->rocm_found ? "installed but not used" : "not needed");
    }
    if (f->hsa_override[0] && f->os != DEV_OS_LINUX) {
        doctor_finding *d = add(s, DOC_WARN, "HSA_OVERRIDE_GFX_VERSION=%s has no effect here", f->hsa_override);
        dev_fmt(d->explain, sizeof d->explain, "The override is read by ROCm on Linux only; ROCm on Windows ignores it.");
        dev_fmt(d->fix, sizeof d->fix, "unset it; the Vulkan backend runs GPUs whose gfx target ROCm does not support");
    }
}

/* The AMD driver on Windows (AMD Software: Adrenalin Edition, version YY.M.P in the Vulkan
 * driverInfo): its version, what recent versions broke in other engines, and the self-check
 * that catches a driver that miscompiles a kernel. */
static void check_windows_amd_driver(const doctor_facts *f, finding_sink *s) {
    const device_list *l = f->devices;
    if (f->os != DEV_OS_WINDOWS) return;
    for (int i = 0; i < l->n; i++) {
        const dev_info *d = &l->dev[i];
        if (d->backend != DEV_BACKEND_VULKAN || d->vendor_id != 0x1002 || !is_hw_gpu(d)) continue;
        int major = 0, minor = 0, patch = 0;
        const char *v = d->driver_info;
        while (*v && !(isdigit((unsigned char)*v) && sscanf(v, "%d.%d.%d", &major, &minor, &patch) == 3)) v++;
        const bool known = *v != 0;
        /* llama.cpp#23508: 26.5.1 and later crash at load in cooperative-matrix kernels */
        const bool coopmat_crash = known && (major > 26 || (major == 26 && (minor > 5 || (minor == 5 && patch >= 1))));
        doctor_finding *fd = known ? add(s, DOC_INFO, "%s (%s): AMD Adrenalin driver %d.%d.%d", d->id, d->name, major, minor, patch)
                                   : add(s, DOC_INFO, "%s (%s): AMD driver on Windows, version not reported (\"%s\")", d->id, d->name, d->driver_info);
        dev_fmt(fd->explain, sizeof fd->explain,
                "Adrenalin updates have broken GPU inference before: 26.5.1 and later crash llama.cpp-based apps at load in "
                "cooperative-matrix kernels (llama.cpp#23508; %s), and older drivers computed wrong K-quant matrix products "
                "(koboldcpp#1826). Anvil uses no cooperative-matrix kernels.",
                coopmat_crash ? "this driver is one of those versions" : "not this version");
        dev_fmt(fd->fix, sizeof fd->fix,
                "anvil doctor --verify MODEL checks every kernel the model uses on this driver against the CPU and names the fix if one is wrong");
    }
}

/* Device nodes (Linux). */
static void check_device_nodes(const doctor_facts *f, finding_sink *s) {
    const device_list *l = f->devices;
    if (f->os != DEV_OS_LINUX) return;
    if (f->dri_exists && f->n_render_nodes > 0 && f->n_render_ok < f->n_render_nodes) {
        doctor_finding *d = add(s, DOC_PROBLEM, "Cannot open %s (group %s)", f->render_node, f->render_group[0] ? f->render_group : "render");
        dev_fmt(d->explain, sizeof d->explain, "GPU drivers are reached through /dev/dri/renderD*; your user may not open %s, so that GPU is invisible to Vulkan (only the software device remains).",
                f->render_node);
        dev_fmt(d->fix, sizeof d->fix, "sudo usermod -aG render,video $USER, then log out and back in (check with: groups); in a container, add --group-add %s",
                f->render_group[0] ? f->render_group : "render");
    } else if (!f->dri_exists && f->n_pci_gpus > 0) {
        doctor_finding *d = add(s, DOC_PROBLEM, "The machine has %d GPU%s on PCI but no /dev/dri", f->n_pci_gpus, f->n_pci_gpus == 1 ? "" : "s");
        dev_fmt(d->explain, sizeof d->explain, "No kernel GPU driver (amdgpu, i915/xe, nouveau/nvidia-drm) is bound to it, so neither Vulkan nor ROCm can use it.");
        dev_fmt(d->fix, sizeof d->fix, "check with lspci -k which kernel driver the GPU uses; install/enable amdgpu (AMD), i915/xe (Intel) or the NVIDIA driver");
    }
    if (f->kfd_exists && !f->kfd_ok && l->hip_built) {
        doctor_finding *d = add(s, DOC_PROBLEM, "Cannot open /dev/kfd (group %s): ROCm cannot run", f->kfd_group[0] ? f->kfd_group : "render");
        dev_fmt(d->explain, sizeof d->explain, "ROCm talks to AMD GPUs through /dev/kfd, which your user may not open.");
        dev_fmt(d->fix, sizeof d->fix, "sudo usermod -aG render,video $USER, then log out and back in");
    }
}

/* The outcome: the devices used. */
static void check_outcome(const doctor_facts *f, finding_sink *s, int n_hw, int n_gpu_used) {
    const device_list *l = f->devices;
    char used[400] = "";
    size_t n = 0;
    for (int i = 0; i < l->n && n < sizeof used; i++)
        if (l->dev[i].used) n += (size_t)snprintf(used + n, sizeof used - n, "%s%s (%s)", n ? ", " : "", l->dev[i].id, l->dev[i].desc);
    if (f->select_rc != 0) return;
    if (n_gpu_used > 0) add(s, DOC_OK, "Anvil will run on: %s", used);
    else {
        doctor_finding *d = add(s, n_hw > 0 ? DOC_WARN : DOC_INFO, "Anvil will run on the CPU only: %s", used);
        dev_fmt(d->explain, sizeof d->explain, "%s", n_hw > 0 ? "A GPU exists but none is used; the findings above say why."
                                                               : "No usable GPU was found; the findings above say why.");
    }
}

static void check_devices(const doctor_facts *f, finding_sink *s, bool vulkan_explained) {
    const device_list *l = f->devices;
    if (!l) return;
    check_vulkan_and_env(f, s, vulkan_explained);
    int n_hw = 0, n_sw = 0, n_gpu_used = 0;
    for (int i = 0; i < l->n; i++) {
        const dev_info *d = &l->dev[i];
        n_hw += is_hw_gpu(d);
        n_sw += d->type == DEV_TYPE_SOFTWARE;
        n_gpu_used += d->used && d->backend != DEV_BACKEND_CPU;
    }
    check_software_only(f, s, n_hw, n_sw);
    check_unused_gpus(f, s);
    check_hip(f, s);
    check_windows_amd_driver(f, s);
    check_device_nodes(f, s);
    check_outcome(f, s, n_hw, n_gpu_used);
}

int doctor_check(const doctor_facts *f, doctor_finding *out, int max) {
    finding_sink s = {out, 0, max};
    bool stop;
    check_loader_and_icds(f, &s, &stop);
    check_devices(f, &s, stop);
    return s.n;
}

static void print_indented(FILE *out, const char *label, const char *text) {
    if (!text[0]) return;
    fprintf(out, "          %s ", label);
    for (const char *p = text; *p; p++) {
        fputc(*p, out);
        if (*p == '\n' && p[1]) fprintf(out, "          %*s ", (int)strlen(label), "");
    }
    fputc('\n', out);
}

int doctor_print(FILE *out, const doctor_finding *fnd, int n) {
    int problems = 0, warnings = 0;
    for (int i = 0; i < n; i++) {
        char tag[16];
        dev_fmt(tag, sizeof tag, "[%s]", doctor_level_name(fnd[i].level));
        fprintf(out, "%-9s %s\n", tag, fnd[i].title);
        print_indented(out, "Why:", fnd[i].explain);
        print_indented(out, "Fix:", fnd[i].fix);
        problems += fnd[i].level == DOC_PROBLEM;
        warnings += fnd[i].level == DOC_WARN;
    }
    fprintf(out, "\n%d problem%s, %d warning%s.\n", problems, problems == 1 ? "" : "s", warnings, warnings == 1 ? "" : "s");
    return problems;
}
