/* fake_hip: a fake ROCm HIP runtime for the tests, a shared object exporting the hip* entry
 * points hip/hip_loader.c uses, backed by host memory. Kernel "launches" run the scalar
 * reference (cpu/ref_ops.c) on the whole op after checking the launch geometry covers it;
 * module loads check that the code object is a clang offload bundle (or ELF) holding the
 * device's gfx target, as the real runtime would refuse a wrong one. Configured by
 * environment variables read at hipInit:
 *   FAKE_HIP_DEVICES   "name,gfx,pci_bus_id,uuid16,MiB;..." (default: one RX 7900 XTX, gfx1100, 2048 MiB)
 *   FAKE_HIP_VERSION   HIP_VERSION the runtime reports (default 60200000 = 6.2)
 *   FAKE_HIP_INIT_ERROR hipInit's return code (default 0)
 *   FAKE_HIP_MALLOC_FAIL_AFTER  hipMalloc fails (out of memory) after this many successes
 *   FAKE_HIP_MAX_ALLOCS hipMalloc fails (out of memory) while this many allocations are live
 * HIP_VISIBLE_DEVICES (indices) and HSA_OVERRIDE_GFX_VERSION are applied as ROCm does.
 * Built with -DFAKE_HIP_OLD it lacks hipModuleLaunchKernel (a runtime "too old" for anvil).
 * fake_hip_stats() lets a test read the counters. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hip_args.h"
#include "quant.h"
#include "ref_ops.h"

#define EXPORT __attribute__((visibility("default")))
#define MAXDEV 8
enum { OK = 0, E_INVALID = 1, E_OOM = 2, E_NOT_INIT = 3, E_NO_DEVICE = 100, E_INVALID_DEVICE = 101, E_NO_BINARY = 209, E_NOT_FOUND = 500 };

typedef struct { char name[256], gfx[48], pci[32], uuid[17]; uint64_t total, used; } fdev;
static fdev devs[MAXDEV];
static int n_dev, cur, inited, malloc_ok_left = -1, max_allocs = -1, version = 60200000, last_err;
static long n_launches, n_live_allocs;

typedef struct alloc { void *p; size_t n; int dev; struct alloc *next; } alloc;
static alloc *allocs;
typedef struct { char target[48]; } fmodule;
typedef struct { char name[64]; } ffunc;

static const char *env(const char *k) { const char *v = getenv(k); return v && *v ? v : NULL; }

static void parse_devices(void) {
    const char *spec = env("FAKE_HIP_DEVICES");
    if (!spec) spec = "AMD Radeon RX 7900 XTX (fake),gfx1100,0000:03:00.0,fake-uuid-000001,2048";
    fdev all[MAXDEV];
    int n = 0;
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *save = NULL, *d = strtok_r(buf, ";", &save); d && n < MAXDEV; d = strtok_r(NULL, ";", &save)) {
        fdev *f = &all[n];
        memset(f, 0, sizeof *f);
        char *fields[5] = {0};
        int k = 0;
        for (char *s2 = NULL, *t = strtok_r(d, ",", &s2); t && k < 5; t = strtok_r(NULL, ",", &s2)) fields[k++] = t;
        if (k < 5) continue;
        snprintf(f->name, sizeof f->name, "%s", fields[0]);
        snprintf(f->gfx, sizeof f->gfx, "%s", fields[1]);
        snprintf(f->pci, sizeof f->pci, "%s", fields[2]);
        snprintf(f->uuid, sizeof f->uuid, "%-16.16s", fields[3]);
        f->total = (uint64_t)strtoull(fields[4], NULL, 10) << 20;
        n++;
    }
    /* HSA_OVERRIDE_GFX_VERSION=11.0.0: every device reports that target. */
    const char *hsa = env("HSA_OVERRIDE_GFX_VERSION");
    int a, b, c;
    if (hsa && sscanf(hsa, "%d.%d.%d", &a, &b, &c) == 3)
        for (int i = 0; i < n; i++) snprintf(all[i].gfx, sizeof all[i].gfx, "gfx%d%x%x", a, b, c);
    const char *vis = env("HIP_VISIBLE_DEVICES");
    n_dev = 0;
    if (!vis) { memcpy(devs, all, sizeof all[0] * (size_t)n); n_dev = n; return; }
    char vb[256];
    snprintf(vb, sizeof vb, "%s", vis);
    for (char *s3 = NULL, *t = strtok_r(vb, ", ", &s3); t; t = strtok_r(NULL, ", ", &s3)) {
        int i = atoi(t);
        if (i < 0) { n_dev = 0; return; }
        if (i < n && n_dev < MAXDEV) devs[n_dev++] = all[i];
    }
}

EXPORT int hipInit(unsigned flags) {
    (void)flags;
    const char *e = env("FAKE_HIP_INIT_ERROR");
    if (e && atoi(e)) return atoi(e);
    if (env("FAKE_HIP_VERSION")) version = atoi(env("FAKE_HIP_VERSION"));
    const char *m = env("FAKE_HIP_MALLOC_FAIL_AFTER");
    malloc_ok_left = m ? atoi(m) : -1;
    max_allocs = env("FAKE_HIP_MAX_ALLOCS") ? atoi(env("FAKE_HIP_MAX_ALLOCS")) : -1;
    parse_devices();
    inited = 1;
    return OK;
}
EXPORT int hipRuntimeGetVersion(int *v) {
    if (env("FAKE_HIP_VERSION")) version = atoi(env("FAKE_HIP_VERSION"));
    *v = version;
    return OK;
}
EXPORT int hipGetDeviceCount(int *n) { if (!inited) return E_NOT_INIT; *n = n_dev; return n_dev ? OK : E_NO_DEVICE; }
EXPORT int hipSetDevice(int d) { if (d < 0 || d >= n_dev) return E_INVALID_DEVICE; cur = d; return OK; }
EXPORT int hipDeviceGetName(char *name, int len, int d) {
    if (d < 0 || d >= n_dev || len <= 0) return E_INVALID_DEVICE;
    snprintf(name, (size_t)len, "%s", devs[d].name);
    return OK;
}
EXPORT int hipDeviceGetPCIBusId(char *bus, int len, int d) {
    if (d < 0 || d >= n_dev || len <= 0) return E_INVALID_DEVICE;
    snprintf(bus, (size_t)len, "%s", devs[d].pci);
    return OK;
}
EXPORT int hipDeviceGetUuid(uint8_t *uuid, int d) {
    if (d < 0 || d >= n_dev) return E_INVALID_DEVICE;
    memcpy(uuid, devs[d].uuid, 16);
    return OK;
}
EXPORT int hipDeviceTotalMem(size_t *b, int d) { if (d < 0 || d >= n_dev) return E_INVALID_DEVICE; *b = devs[d].total; return OK; }
/* Layout as ROCm 5's hipDeviceProp_t begins (name[256]), the arch name at an offset the
 * loader does not know: it must find it by its shape. */
EXPORT int hipGetDeviceProperties(void *props, int d) {
    if (d < 0 || d >= n_dev) return E_INVALID_DEVICE;
    char *p = props;
    snprintf(p, 256, "%s", devs[d].name);
    memcpy(p + 256, "\x01\x02\x03\x04", 4);
    snprintf(p + 1160, 256, "%s", devs[d].gfx);
    return OK;
}
EXPORT int hipMemGetInfo(size_t *fr, size_t *tot) {
    if (cur >= n_dev) return E_INVALID_DEVICE;
    *tot = devs[cur].total;
    *fr = devs[cur].total - devs[cur].used;
    return OK;
}
EXPORT int hipMalloc(void **p, size_t n) {
    *p = NULL;
    if (cur >= n_dev) return E_INVALID_DEVICE;
    if (malloc_ok_left == 0 || devs[cur].used + n > devs[cur].total || (max_allocs >= 0 && n_live_allocs >= max_allocs))
        return last_err = E_OOM;
    alloc *a = malloc(sizeof *a);
    void *m = aligned_alloc(256, (n + 255) / 256 * 256);
    if (!a || !m) { free(a); free(m); return last_err = E_OOM; }
    if (malloc_ok_left > 0) malloc_ok_left--;
    a->p = m; a->n = n; a->dev = cur; a->next = allocs; allocs = a;
    devs[cur].used += n;
    n_live_allocs++;
    *p = m;
    return OK;
}
EXPORT int hipFree(void *p) {
    if (!p) return OK;
    for (alloc **pp = &allocs; *pp; pp = &(*pp)->next)
        if ((*pp)->p == p) {
            alloc *a = *pp;
            *pp = a->next;
            devs[a->dev].used -= a->n;
            free(a->p);
            free(a);
            n_live_allocs--;
            return OK;
        }
    return last_err = E_INVALID;
}
/* Copies must stay inside one allocation. */
static int in_alloc(const void *p, size_t n) {
    for (alloc *a = allocs; a; a = a->next)
        if ((const char *)p >= (const char *)a->p && (const char *)p + n <= (const char *)a->p + a->n) return 1;
    return 0;
}
EXPORT int hipMemcpyHtoD(void *dst, const void *src, size_t n) { if (!in_alloc(dst, n)) return last_err = E_INVALID; memcpy(dst, src, n); return OK; }
EXPORT int hipMemcpyDtoH(void *dst, void *src, size_t n) { if (!in_alloc(src, n)) return last_err = E_INVALID; memcpy(dst, src, n); return OK; }
EXPORT int hipDeviceSynchronize(void) { return OK; }
EXPORT int hipGetLastError(void) { int e = last_err; last_err = 0; return e; }
EXPORT const char *hipGetErrorString(int e) {
    switch (e) {
    case OK: return "hipSuccess";
    case E_OOM: return "hipErrorOutOfMemory";
    case E_NO_DEVICE: return "hipErrorNoDevice";
    case E_NO_BINARY: return "hipErrorNoBinaryForGpu";
    case E_NOT_FOUND: return "hipErrorNotFound";
    case E_INVALID_DEVICE: return "hipErrorInvalidDevice";
    default: return "hipErrorInvalidValue";
    }
}

EXPORT int hipModuleLoadData(void **mod, const void *image) {
    const char *img = image;
    const char *bundle = "__CLANG_OFFLOAD_BUNDLE__";
    if (memcmp(img, bundle, strlen(bundle)) && memcmp(img, "\x7f" "ELF", 4)) return E_INVALID;
    char want[64], base[48];
    snprintf(base, sizeof base, "%.*s", (int)strcspn(devs[cur].gfx, ":"), devs[cur].gfx);
    snprintf(want, sizeof want, "amdhsa--%s", base);
    /* The bundle header (entry ids) is within its first few KiB. */
    int found = 0;
    for (size_t i = 0; i < 8192 && !found; i++)
        if (!memcmp(img + i, want, strlen(want)) && !isalnum((unsigned char)img[i + strlen(want)])) found = 1;
    if (!found) return E_NO_BINARY;
    fmodule *m = calloc(1, sizeof *m);
    if (!m) return E_OOM;
    snprintf(m->target, sizeof m->target, "%s", base);
    *mod = m;
    return OK;
}
EXPORT int hipModuleUnload(void *mod) { free(mod); return OK; }
EXPORT int hipModuleGetFunction(void **f, void *mod, const char *name) {
    (void)mod;
    if (strncmp(name, "anv_", 4)) return E_NOT_FOUND;
    ffunc *fn = calloc(1, sizeof *fn);
    if (!fn) return E_OOM;
    snprintf(fn->name, sizeof fn->name, "%s", name);
    /* Leaked with the module in the real runtime too; a small fixed set per backend. */
    *f = fn;
    return OK;
}

#ifndef FAKE_HIP_OLD
#define PTR(x) ((void *)(uintptr_t)(x))
static int need(int ok) { return ok ? OK : (last_err = E_INVALID); }

EXPORT int hipModuleLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                 unsigned shared, void *stream, void **params, void **extra) {
    (void)gz; (void)by; (void)bz; (void)shared; (void)stream; (void)extra;
    const char *n = ((ffunc *)f)->name;
    const uint64_t gxs = gx, gys = gy;
    n_launches++;
    if (!params || !params[0]) return need(0);
    if (!strncmp(n, "anv_matvec_", 11) || !strncmp(n, "anv_matmul_", 11)) {
        const anv_matmul_args *a = params[0];
        const int mv = n[7] == 'v';
        if (mv ? (gxs * ANV_MV_WAVES * ANV_MV_ROWS_PER_WAVE < (uint64_t)a->rows || a->n_tok > ANV_MV_MAX_TOK || bx != ANV_MV_WAVES * ANV_WARP)
               : (gxs * ANV_MM_TILE < (uint64_t)a->rows || gys * ANV_MM_TILE < (uint64_t)a->n_tok || bx != 256))
            return need(0);
        return ref_matmul((uint32_t)a->type, PTR(a->w), a->cols, a->rows, PTR(a->x), PTR(a->out), a->n_tok, a->accumulate) ? E_OOM : OK;
    }
    if (!strncmp(n, "anv_get_rows_", 13)) {
        const anv_get_rows_args *a = params[0];
        if (gxs * bx < (uint64_t)a->cols || gys < (uint64_t)a->n_ids) return need(0);
        ref_get_rows((uint32_t)a->type, PTR(a->table), a->cols, PTR(a->ids), a->n_ids, PTR(a->out));
        return OK;
    }
    if (!strcmp(n, "anv_rms_norm")) {
        const anv_rms_norm_args *a = params[0];
        if (gxs < (uint64_t)a->n_rows) return need(0);
        ref_rms_norm(PTR(a->x), a->has_w ? PTR(a->w) : NULL, PTR(a->out), a->n_rows, a->row_len, a->eps);
        return OK;
    }
    if (!strcmp(n, "anv_ew")) {
        const anv_ew_args *a = params[0];
        if (gxs * bx < (uint64_t)a->n && gxs < 65535u * 16) return need(0);
        switch (a->op) {
        case 0: ref_add(PTR(a->a), PTR(a->b), PTR(a->out), a->n, a->b_n); break;
        case 1: ref_mul(PTR(a->a), PTR(a->b), PTR(a->out), a->n, a->b_n); break;
        case 2: ref_scale(PTR(a->a), a->n, a->s); break;
        case 6: ref_clamp(PTR(a->a), PTR(a->out), a->n, a->s, a->s2); break;
        default:
            ref_glu(PTR(a->a), PTR(a->b), PTR(a->out), a->n,
                    a->op == 3 ? BE_GLU_SILU : a->op == 5 ? BE_GLU_SWIGLU_OAI : a->op == 7 ? BE_GLU_SIGMOID : BE_GLU_GELU_TANH);
            break;
        }
        return OK;
    }
    if (!strcmp(n, "anv_rope")) {
        const anv_rope_args *a = params[0];
        if (gxs * bx < (uint64_t)a->n_tok * a->n_head * (a->n_rot / 2)) return need(0);
        be_rope_params p = {.n_rot = a->n_rot, .mode = (be_rope_mode)a->mode, .freq_base = a->freq_base, .freq_scale = a->freq_scale,
                            .ext_factor = a->ext_factor, .attn_factor = a->attn_factor, .corr_lo = a->corr_lo, .corr_hi = a->corr_hi};
        return ref_rope_ext(PTR(a->x), a->n_tok, a->n_head, a->head_dim, a->pos0, &p, a->has_ff ? PTR(a->freq_factors) : NULL) ? E_OOM : OK;
    }
    if (!strcmp(n, "anv_rope_rows")) {
        const anv_rope_rows_args *a = params[0];
        if (gxs * bx < (uint64_t)a->n_tok * a->n_head * (a->n_rot / 2)) return need(0);
        ref_rope_rows(PTR(a->x), PTR(a->table), a->n_tok, a->n_head, a->head_dim, a->n_rot);
        return OK;
    }
    if (!strcmp(n, "anv_store_rows")) {
        const anv_store_rows_args *a = params[0];
        const int64_t per_row = a->dst_type == QT_Q8_0 || a->dst_type == QT_Q4_0 ? a->cols / 32 : a->cols;
        if (gxs * bx < (uint64_t)(per_row * a->n_rows)) return need(0);
        ref_store_rows(PTR(a->src), (uint32_t)a->dst_type, PTR(a->dst), a->cols, a->row0, a->n_rows);
        return OK;
    }
    if (!strncmp(n, "anv_attention_", 14)) {
        const anv_attention_args *a = params[0];
        if (gxs < (uint64_t)a->n_tok || gys < (uint64_t)a->n_head || a->head_dim > ANV_ATT_MAX_HEAD_DIM) return need(0);
        be_attn_params p = {.n_tok = a->n_tok, .pos0 = a->pos0, .n_head = a->n_head, .n_kv_head = a->n_kv_head, .head_dim = a->head_dim,
                            .scale = a->scale, .window = a->window, .softcap = a->softcap, .noncausal = a->noncausal != 0};
        return ref_attention_sinks(PTR(a->q), (uint32_t)a->kv_type, PTR(a->k), PTR(a->v), a->has_sinks ? PTR(a->sinks) : NULL, PTR(a->out), &p)
                   ? E_OOM : OK;
    }
    return E_NOT_FOUND;
}
#endif

/* Test hook: launches so far, device bytes in use on device d, live allocations. */
EXPORT void fake_hip_stats(long *launches, uint64_t *used0, long *live) {
    if (launches) *launches = n_launches;
    if (used0) *used0 = n_dev ? devs[0].used : 0;
    if (live) *live = n_live_allocs;
}
