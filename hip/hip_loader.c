/* hip_loader: dlopen of libamdhip64 and its entry-point table (see hip_loader.h). */
#include "hip_loader.h"
#include "settings.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void anv_hip_fmt(char *dst, size_t len, const char *fmt, ...) {
    if (!len) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, len, fmt, ap);
    va_end(ap);
}

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static anv_hip_api g_api;
static bool g_tried, g_ok;
static char g_why[512];

static void *open_lib(char *why, size_t why_len, char *path, size_t path_len) {
    const char *env = anv_setting_raw("ANVIL_HIP_LIBRARY");
    if (env && *env) {
        void *h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
        if (!h) { const char *e = dlerror(); anv_hip_fmt(why, why_len, "ANVIL_HIP_LIBRARY=%s cannot be opened: %s", env, e ? e : "?"); }
        else anv_hip_fmt(path, path_len, "%s", env);
        return h;
    }
    const char *names[] = {"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h) { anv_hip_fmt(path, path_len, "%s", names[i]); return h; }
    }
    const char *rp = anv_setting_raw("ROCM_PATH");
    const char *dirs[] = {rp && *rp ? rp : "/opt/rocm", "/opt/rocm"};
    for (size_t i = 0; i < 2; i++) {
        char p[512];
        anv_hip_fmt(p, sizeof p, "%s/lib/libamdhip64.so", dirs[i]);
        void *h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
        if (h) { anv_hip_fmt(path, path_len, "%s", p); return h; }
    }
    anv_hip_fmt(why, why_len, "ROCm HIP runtime not found (no libamdhip64.so in the library path, $ROCM_PATH/lib or /opt/rocm/lib)");
    return NULL;
}

#define SYM(name, required)                                                                                   \
    do {                                                                                                      \
        *(void **)&a->name = dlsym(a->lib, #name);                                                            \
        if (!a->name && (required)) {                                                                         \
            anv_hip_fmt(why, why_len, "%s is too old for this anvil: it has no %s (ROCm 5.2 or newer is needed)", \
                     a->path, #name);                                                                         \
            return -1;                                                                                        \
        }                                                                                                     \
    } while (0)

static int load_syms(anv_hip_api *a, char *why, size_t why_len) {
    SYM(hipInit, true);
    SYM(hipRuntimeGetVersion, true);
    SYM(hipGetDeviceCount, true);
    SYM(hipSetDevice, true);
    SYM(hipDeviceGetName, true);
    SYM(hipDeviceGetPCIBusId, true);
    SYM(hipDeviceTotalMem, true);
    SYM(hipMemGetInfo, true);
    SYM(hipMalloc, true);
    SYM(hipFree, true);
    SYM(hipMemcpyHtoD, true);
    SYM(hipMemcpyDtoH, true);
    SYM(hipDeviceSynchronize, true);
    SYM(hipModuleLoadData, true);
    SYM(hipModuleUnload, true);
    SYM(hipModuleGetFunction, true);
    SYM(hipModuleLaunchKernel, true);
    SYM(hipGetLastError, true);
    SYM(hipGetErrorString, true);
    SYM(hipDeviceGetUuid, false);
    /* ROCm 6 renamed the properties struct's ABI; the R0600 entry point is the new one. */
    *(void **)&a->hipGetDeviceProperties = dlsym(a->lib, "hipGetDevicePropertiesR0600");
    if (!a->hipGetDeviceProperties) SYM(hipGetDeviceProperties, true);
    return 0;
}

const char *anv_hip_strerror(const anv_hip_api *api, anv_hip_err e) {
    static __thread char buf[160];
    const char *s = api && api->hipGetErrorString ? api->hipGetErrorString(e) : NULL;
    anv_hip_fmt(buf, sizeof buf, "%s (%d)", s ? s : "hip error", e);
    return buf;
}

static bool open_api(char *why, size_t why_len) {
    anv_hip_api *a = &g_api;
    memset(a, 0, sizeof *a);
    a->lib = open_lib(why, why_len, a->path, sizeof a->path);
    if (!a->lib) return false;
    if (load_syms(a, why, why_len) != 0) goto fail;
    int v = 0;
    anv_hip_err e = a->hipRuntimeGetVersion(&v);
    if (e != 0) { anv_hip_fmt(why, why_len, "%s: hipRuntimeGetVersion failed: %s", a->path, anv_hip_strerror(a, e)); goto fail; }
    if (v < ANV_HIP_MIN_VERSION) {
        anv_hip_fmt(why, why_len, "%s is HIP %d.%d, too old: ROCm 5.2 or newer is needed (install a newer ROCm, or use Vulkan)", a->path,
                 v / 10000000, v / 100000 % 100);
        goto fail;
    }
    a->runtime_version = v;
    e = a->hipInit(0);
    if (e != 0) { anv_hip_fmt(why, why_len, "%s: hipInit failed: %s (no usable AMD GPU or /dev/kfd not accessible)", a->path, anv_hip_strerror(a, e)); goto fail; }
    return true;
fail:
    dlclose(a->lib);
    memset(a, 0, sizeof *a);
    return false;
}

const anv_hip_api *anv_hip_api_get(char *why, size_t why_len) {
    pthread_mutex_lock(&g_lock);
    if (!g_tried) {
        g_tried = true;
        g_ok = open_api(g_why, sizeof g_why);
    }
    const bool ok = g_ok;
    if (!ok && why && why_len) anv_hip_fmt(why, why_len, "%s", g_why);
    pthread_mutex_unlock(&g_lock);
    return ok ? &g_api : NULL;
}

void anv_hip_api_reset(void) {
    pthread_mutex_lock(&g_lock);
    if (g_ok && g_api.lib) dlclose(g_api.lib);
    memset(&g_api, 0, sizeof g_api);
    g_tried = g_ok = false;
    g_why[0] = 0;
    pthread_mutex_unlock(&g_lock);
}
