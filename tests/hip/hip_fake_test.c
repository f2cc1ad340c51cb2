/* hip_fake_test: the HIP backend's host side end to end against the fake runtime
 * (fake_hip.c, argv[1]; argv[2] is a build of it lacking hipModuleLaunchKernel):
 *  - loading: no runtime, a runtime too old (version, missing entry point), hipInit failing:
 *    HIP unavailable with a one-line reason, the CPU (or Vulkan) used instead;
 *  - enumeration (name, gfx target, PCI bus id, UUID, memory), gfx-target policy with the
 *    HSA_OVERRIDE_GFX_VERSION suggestion, dedup with a synthetic Vulkan list by PCI bus id,
 *    HIP_VISIBLE_DEVICES, the code object chosen by gfx target (and refused when wrong);
 *  - every op against cpu/ref_ops.c (all weight types, views with offsets, odd shapes; the
 *    launch geometry is checked by the fake), sticky op errors, memory accounting (every
 *    byte given back), out-of-memory as a NULL with a one-line error;
 *  - placed model loads (ANVIL_HIP_LIBRARY): layers on hip0 agree with the CPU; a GPU that
 *    runs out of memory mid-load gets fewer layers (never a crash).
 *  - gpt-oss's op extensions (SWIGLU_OAI glu, YaRN rope, attention sinks) reach the kernels;
 *  - the Q4_0 KV cache: the shared cases of tests/cpu/kv_q4_0_cases.h (store, attention on
 *    head_dim 64/128/256, the head_dim-80 refusal);
 *  - doctor --verify on HIP (gpu_verify with gv_hip): passes on the fake, reports a
 *    planted wrong kernel (ANVIL_HIP_TEST_BREAK) with the HIP advice, names its cache file.
 * The kernels' own numerics are tools/hip-nvcc-check.sh's job (real GPU). */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "error.h"
#include "gpu_verify.h"
#include "hip_backend.h"
#include "hip_loader.h"
#include "model.h"
#include "model_place.h"
#include "quant.h"
#include "ref_ops.h"
#include "testutil.h"
#include "cpu/kv_q4_0_cases.h"

static const char *g_fake, *g_fake_old;
static uint64_t g_rng = 12345;

static const char *TWO_GPUS =
    "AMD Radeon RX 7900 XTX (fake),gfx1100,0000:03:00.0,fake-uuid-000001,2048;"
    "AMD Radeon RX 6700 XT (fake),gfx1031,0000:0A:00.0,fake-uuid-000002,1024";

static void set(const char *k, const char *v) { if (v) setenv(k, v, 1); else unsetenv(k); }

/* A fresh runtime: the loader forgets the library, the fake re-reads its variables. */
static void runtime(const char *lib, const char *devices) {
    set("ANVIL_HIP_LIBRARY", lib);
    set("FAKE_HIP_DEVICES", devices);
    set("FAKE_HIP_VERSION", NULL);
    set("FAKE_HIP_INIT_ERROR", NULL);
    set("FAKE_HIP_MALLOC_FAIL_AFTER", NULL);
    set("FAKE_HIP_MAX_ALLOCS", NULL);
    set("HSA_OVERRIDE_GFX_VERSION", NULL);
    set("HIP_VISIBLE_DEVICES", NULL);
    anv_hip_api_reset();
}

static void fake_stats(long *launches, uint64_t *used, long *live) {
    void *h = dlopen(g_fake, RTLD_NOW | RTLD_NOLOAD);
    void (*f)(long *, uint64_t *, long *) = h ? (void (*)(long *, uint64_t *, long *))dlsym(h, "fake_hip_stats") : NULL;
    if (f) f(launches, used, live);
    else { *launches = -1; *used = (uint64_t)-1; *live = -1; }
    if (h) dlclose(h);
}

static bool has_note(const device_list *l, const char *s) {
    for (int i = 0; i < l->n_notes; i++) if (strstr(l->notes[i], s)) return true;
    return false;
}

/* ---- loading ---- */

static void test_unavailable(void) {
    char why[512];
    runtime("/nonexistent/libamdhip64.so", NULL);
    CHECK(hip_device_count(why, sizeof why) == -1);
    CHECKF(strstr(why, "ANVIL_HIP_LIBRARY=/nonexistent/libamdhip64.so cannot be opened") && !strchr(why, '\n'), "%s", why);
    device_registry_reset();
    device_registry_use_builtin(true);
    setenv("ANVIL_VK_VISIBLE_DEVICES", "-1", 1);
    device_list *l = device_list_probe();
    device_env env;
    device_env_from_process(&env);
    CHECK(l && l->hip_built && l->hip_count == -1);
    CHECK(l && device_list_select(l, &env) == 0);
    CHECK(l && l->dev[l->n - 1].backend == DEV_BACKEND_CPU && l->dev[l->n - 1].used);
    CHECKF(l && has_note(l, "hip: ANVIL_HIP_LIBRARY=/nonexistent"), "%s", l && l->n_notes ? l->notes[0] : "(no notes)");
    device_list_free(l);

    runtime(g_fake, NULL);
    setenv("FAKE_HIP_VERSION", "50100000", 1);
    CHECK(hip_device_count(why, sizeof why) == -1);
    CHECKF(strstr(why, "is HIP 5.1, too old: ROCm 5.2 or newer is needed"), "%s", why);

    runtime(g_fake_old, NULL);
    CHECK(hip_device_count(why, sizeof why) == -1);
    CHECKF(strstr(why, "is too old for this anvil: it has no hipModuleLaunchKernel"), "%s", why);

    runtime(g_fake, NULL);
    setenv("FAKE_HIP_INIT_ERROR", "100", 1);
    CHECK(hip_device_count(why, sizeof why) == -1);
    CHECKF(strstr(why, "hipInit failed: hipErrorNoDevice (100)"), "%s", why);

    /* The ROCm runtime of this machine, if any: never a crash; without a GPU, a reason. */
    runtime(NULL, NULL);
    int n = hip_device_count(why, sizeof why);
    printf("system HIP runtime: %d device(s)%s%s\n", n, n < 0 ? ": " : "", n < 0 ? why : "");
    CHECK(n >= 0 || why[0]);
    unsetenv("ANVIL_VK_VISIBLE_DEVICES");
}

/* ---- enumeration, policy, dedup ---- */

static int vk_enum(void *user, dev_info *out, int max, char *why, size_t why_len) {
    (void)user; (void)why; (void)why_len;
    const char *names[] = {"AMD Radeon RX 7900 XTX (RADV NAVI31)", "AMD Radeon RX 6700 XT (RADV NAVI22)"};
    const char *pci[] = {"0000:03:00.0", "0000:0a:00.0"};
    int n = max < 2 ? max : 2;
    for (int i = 0; i < n; i++) {
        dev_info *d = &out[i];
        snprintf(d->name, sizeof d->name, "%s", names[i]);
        d->vendor_id = 0x1002;
        d->type = DEV_TYPE_DISCRETE;
        snprintf(d->driver_name, sizeof d->driver_name, "radv");
        snprintf(d->driver_info, sizeof d->driver_info, "Mesa 24.2.8");
        d->has_pci = true;
        snprintf(d->pci_bus_id, sizeof d->pci_bus_id, "%s", pci[i]);
        d->has_uuid = true;
        d->uuid[0] = (uint8_t)(0x40 + i);
        d->mem_total = d->mem_free = 8ull << 30;
        d->mem_free_known = true;
        d->fp16 = true;
        d->subgroup_size = 64;
        d->max_allocation = d->max_storage_range = 4ull << 30;
        d->supported = true;
    }
    return n;
}

static device_list *probe_select(device_env *env) {
    device_registry_reset();
    device_registry_use_builtin(false);
    device_enumerator vk = {.kind = DEV_BACKEND_VULKAN, .name = "vulkan", .enumerate = vk_enum};
    CHECK(device_register(&vk) == 0);
    CHECK(device_register(device_hip_enumerator()) == 0);
    device_list *l = device_list_probe();
    device_env_from_process(env);
    env->os = DEV_OS_LINUX;
    if (l && device_list_select(l, env) != 0) { printf("select: %s\n", anv_last_error()); device_list_free(l); return NULL; }
    return l;
}

static const dev_info *find(const device_list *l, const char *id) {
    int i = device_list_find(l, id);
    return i >= 0 ? &l->dev[i] : NULL;
}

static void test_enumeration(void) {
    runtime(g_fake, TWO_GPUS);
    device_env env;
    device_list *l = probe_select(&env);
    CHECK(l != NULL);
    if (!l) return;
    CHECK(l->hip_count == 2 && l->vk_count == 2);
    const dev_info *h0 = find(l, "hip0"), *h1 = find(l, "hip1"), *v0 = find(l, "vulkan0"), *v1 = find(l, "vulkan1");
    CHECK(h0 && h1 && v0 && v1);
    if (!h0 || !h1 || !v0 || !v1) { device_list_free(l); return; }
    CHECK(!strcmp(h0->gfx_target, "gfx1100") && !strcmp(h1->gfx_target, "gfx1031"));
    CHECK(!strcmp(h0->pci_bus_id, "0000:03:00.0") && !strcmp(h1->pci_bus_id, "0000:0a:00.0"));
    CHECKF(!strcmp(h0->uuid_str, "GPU-fake-uuid-000001"), "%s", h0->uuid_str);
    CHECK(h0->mem_total == 2048ull << 20 && h0->mem_free == 2048ull << 20 && h0->type == DEV_TYPE_DISCRETE);
    CHECK(strstr(h0->driver_name, "ROCm HIP 6.2") != NULL);
    /* The same card through both: HIP runs it (its target is built), Vulkan is the duplicate. */
    CHECKF(h0->used && !v0->used && v0->skip == DEV_SKIP_DUPLICATE && strstr(v0->why, "same GPU as hip0"), "%s", v0->why);
    CHECKF(strstr(v0->why, "HIP is preferred for gfx1100"), "%s", v0->why);
    /* gfx1031 is not built: Vulkan runs that card; the override is suggested. */
    CHECKF(!h1->used && h1->skip == DEV_SKIP_HIP_TARGET && strstr(h1->fix, "HSA_OVERRIDE_GFX_VERSION=10.3.0"), "%s / %s", h1->why, h1->fix);
    CHECK(v1->used);
    device_list_free(l);

    /* HSA_OVERRIDE_GFX_VERSION=10.3.0: ROCm treats both as gfx1030, which is built. */
    runtime(g_fake, TWO_GPUS);
    setenv("HSA_OVERRIDE_GFX_VERSION", "10.3.0", 1);
    l = probe_select(&env);
    CHECK(l != NULL);
    if (l) {
        h1 = find(l, "hip1");
        v1 = find(l, "vulkan1");
        CHECK(h1 && v1 && h1->used && !strcmp(h1->effective_gfx, "gfx1030") && v1->skip == DEV_SKIP_DUPLICATE);
        int i = device_list_find(l, "hip1");
        backend *be = i >= 0 ? device_open(l, i, 1) : NULL;
        CHECKF(be && !strcmp(hip_backend_target(be), "gfx1030"), "%s", be ? hip_backend_target(be) : anv_last_error());
        if (be) be->ops->destroy(be);
        device_list_free(l);
    }

    /* HIP_VISIBLE_DEVICES=1: the runtime shows only the second card, as hip0. */
    runtime(g_fake, TWO_GPUS);
    setenv("HIP_VISIBLE_DEVICES", "1", 1);
    l = probe_select(&env);
    CHECK(l && l->hip_count == 1);
    if (l) {
        h0 = find(l, "hip0");
        CHECK(h0 && !strcmp(h0->gfx_target, "gfx1031"));
        CHECK(has_note(l, "HIP_VISIBLE_DEVICES applied by the ROCm runtime"));
        device_list_free(l);
    }
    unsetenv("HIP_VISIBLE_DEVICES");

    /* A code object for another target is refused by the runtime; bad indices are errors. */
    runtime(g_fake, NULL);
    backend *be = hip_backend_new(0, "gfx1030");
    CHECKF(!be && strstr(anv_last_error(), "hipModuleLoadData of the gfx1030 code object failed: hipErrorNoBinaryForGpu"), "%s", anv_last_error());
    be = hip_backend_new(0, "gfx90a");
    CHECKF(!be && strstr(anv_last_error(), "no code object for gfx90a in this build"), "%s", anv_last_error());
    be = hip_backend_new(7, "gfx1100");
    CHECKF(!be && strstr(anv_last_error(), "there is no HIP device 7 (1 visible)"), "%s", anv_last_error());
    device_registry_reset();
    device_registry_use_builtin(true);
}

/* ---- ops ---- */

static void rand_fill(float *x, int64_t n) { for (int64_t i = 0; i < n; i++) x[i] = tu_rand_f32(&g_rng, -1.0f, 1.0f); }

/* An F32 device tensor of rows x cols with the host data, as a view at row 1 of a bigger one
 * (every op must honour the offset). *base is the owning tensor. */
static be_tensor view_of(backend *be, const float *host, int64_t cols, int64_t rows, be_tensor **base) {
    *base = be->ops->tensor_new(be, QT_F32, cols, rows + 2);
    be_tensor v = be_view_rows(*base, 1, rows);
    if (host) be_upload(&v, 0, host, (size_t)(cols * rows) * sizeof(float));
    return v;
}

static bool same(const float *a, const float *b, int64_t n) { return tu_max_abs_diff(a, b, n) == 0.0f; }

static void test_matmul(backend *be) {
    const uint32_t types[] = {QT_F32, QT_F16, QT_BF16, QT_Q4_0, QT_Q4_1, QT_Q5_0, QT_Q5_1, QT_Q8_0, QT_Q2_K, QT_Q3_K, QT_Q4_K, QT_Q5_K, QT_Q6_K};
    const int toks[] = {1, 3, 4, 5, 70};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const uint32_t type = types[ti];
        const int64_t cols = type == QT_F32 || type == QT_F16 ? 37 : qtype_get(type)->block_size == 256 ? 512 : 96, rows = 37;
        float *wf = malloc(sizeof(float) * (size_t)(cols * rows));
        rand_fill(wf, cols * rows);
        const size_t rb = qtype_row_size((qtype)type, cols);
        uint8_t *wq = malloc(rb * (size_t)rows);
        for (int64_t r = 0; r < rows; r++) quantize_row((qtype)type, wf + r * cols, wq + (size_t)r * rb, cols);
        be_tensor *w = be->ops->weight_new(be, type, cols, rows, wq);
        CHECKF(w != NULL, "weight_new %s: %s", qtype_get(type)->name, anv_last_error());
        for (size_t k = 0; w && k < sizeof toks / sizeof toks[0]; k++) {
            const int nt = toks[k];
            float *x = malloc(sizeof(float) * (size_t)(cols * nt)), *o0 = malloc(sizeof(float) * (size_t)(rows * nt));
            float *want = malloc(sizeof(float) * (size_t)(rows * nt)), *got = malloc(sizeof(float) * (size_t)(rows * nt));
            rand_fill(x, cols * nt);
            rand_fill(o0, rows * nt);
            const bool acc = k % 2 == 1;
            memcpy(want, o0, sizeof(float) * (size_t)(rows * nt));
            ref_matmul(type, wq, cols, rows, x, want, nt, acc);
            be_tensor *xb, *ob;
            be_tensor xv = view_of(be, x, cols, nt, &xb), ov = view_of(be, o0, rows, nt, &ob);
            be->ops->matmul(be, w, &xv, &ov, nt, acc);
            be_download(&ov, 0, got, sizeof(float) * (size_t)(rows * nt));
            CHECKF(!be_error(be) && same(got, want, rows * nt), "matmul %s n_tok %d: %s", qtype_get(type)->name, nt, be_error(be) ? be_error(be) : "differs");
            be_tensor_free(xb);
            be_tensor_free(ob);
            free(x); free(o0); free(want); free(got);
        }
        /* get_rows from the same table. */
        const int32_t ids[] = {5, 0, 36, 5};
        float *want = malloc(sizeof(float) * (size_t)(cols * 4)), *got = malloc(sizeof(float) * (size_t)(cols * 4));
        ref_get_rows(type, wq, cols, ids, 4, want);
        be_tensor *ob;
        be_tensor ov = view_of(be, NULL, cols, 4, &ob);
        if (w) be->ops->get_rows(be, w, ids, 4, &ov);
        be_download(&ov, 0, got, sizeof(float) * (size_t)(cols * 4));
        CHECKF(w && !be_error(be) && same(got, want, cols * 4), "get_rows %s", qtype_get(type)->name);
        be_tensor_free(ob);
        be_tensor_free(w);
        free(want); free(got); free(wf); free(wq);
    }
}

static void test_small_ops(backend *be) {
    enum { N = 6 * 64 };
    float a[N], b[N], want[N], got[N], wgt[64];
    rand_fill(a, N); rand_fill(b, N); rand_fill(wgt, 64);
    be_tensor *ab, *bb, *ob, *wb;
    be_tensor av = view_of(be, a, 64, 6, &ab), bv = view_of(be, b, 64, 6, &bb), ov = view_of(be, NULL, 64, 6, &ob), wv = view_of(be, wgt, 64, 1, &wb);
    const size_t nb = sizeof a;

    ref_rms_norm(a, wgt, want, 12, 32, 1e-5f); /* per-head: row_len < cols */
    be->ops->rms_norm(be, &av, &wv, &ov, 12, 32, 1e-5f);
    be_download(&ov, 0, got, nb);
    CHECK(same(got, want, N));
    ref_add(a, b, want, N, 64);
    be->ops->add(be, &av, &bv, &ov, N, 64);
    be_download(&ov, 0, got, nb);
    CHECK(same(got, want, N));
    ref_mul(a, b, want, N, N);
    be->ops->mul(be, &av, &bv, &ov, N, N);
    be_download(&ov, 0, got, nb);
    CHECK(same(got, want, N));
    for (int kind = 0; kind < 2; kind++) {
        const be_glu_kind k = kind ? BE_GLU_GELU_TANH : BE_GLU_SILU;
        ref_glu(a, b, want, N, k);
        be->ops->glu(be, &av, &bv, &ov, N, k);
        be_download(&ov, 0, got, nb);
        CHECK(same(got, want, N));
    }
    /* rope: 3 tokens x 2 heads x 64, NEOX with freq factors, then NORMAL, in place. */
    float ff[16];
    for (int i = 0; i < 16; i++) ff[i] = 1.0f + 0.25f * (float)i;
    be_tensor *fb;
    be_tensor fv = view_of(be, ff, 16, 1, &fb);
    memcpy(want, a, nb);
    ref_rope(want, 3, 2, 64, 7, 32, BE_ROPE_NEOX, 10000.0f, 0.5f, ff);
    be_upload(&ov, 0, a, nb);
    be_rope_params rp = {.n_rot = 32, .mode = BE_ROPE_NEOX, .freq_base = 10000.0f, .freq_scale = 0.5f, .freq_factors = &fv};
    be->ops->rope(be, &ov, 3, 2, 64, 7, &rp);
    be_download(&ov, 0, got, nb);
    CHECK(same(got, want, N));
    memcpy(want, a, nb);
    ref_scale(want, N, 0.37f);
    be_upload(&ov, 0, a, nb);
    be->ops->scale(be, &ov, N, 0.37f);
    be_download(&ov, 0, got, nb);
    CHECK(same(got, want, N));
    CHECKF(!be_error(be), "%s", be_error(be));

    /* store_rows into F16 / Q8_0 / Q4_0 caches at row 3, then attention over them (GQA 4/2,
     * window, softcap), and into F32. */
    const uint32_t kvt[] = {QT_F16, QT_Q8_0, QT_Q4_0, QT_F32};
    for (int ki = 0; ki < 4; ki++) {
        const int hd = 64, nkv = 2, nh = 4, ctx = 9, nt = 3, pos0 = 4;
        const int64_t kvc = (int64_t)nkv * hd;
        const size_t rb = qtype_row_size((qtype)kvt[ki], kvc);
        uint8_t *kh = calloc((size_t)ctx, rb), *vh = calloc((size_t)ctx, rb);
        float kf[9 * 128], vf[9 * 128], q[3 * 256], outw[3 * 256], outg[3 * 256];
        rand_fill(kf, 9 * 128); rand_fill(vf, 9 * 128); rand_fill(q, 3 * 256);
        ref_store_rows(kf, kvt[ki], kh, kvc, 0, ctx);
        ref_store_rows(vf, kvt[ki], vh, kvc, 0, ctx);
        be_tensor *kc = be->ops->tensor_new(be, kvt[ki], kvc, ctx), *vc = be->ops->tensor_new(be, kvt[ki], kvc, ctx);
        be_tensor *sb;
        be_tensor sv = view_of(be, kf, kvc, ctx, &sb);
        be->ops->store_rows(be, &sv, kc, 0, ctx);
        be_upload(&sv, 0, vf, sizeof vf);
        be->ops->store_rows(be, &sv, vc, 0, ctx);
        uint8_t *back = malloc(rb * (size_t)ctx);
        be_download(kc, 0, back, rb * (size_t)ctx);
        CHECKF(!memcmp(back, kh, rb * (size_t)ctx), "store_rows %s", qtype_get(kvt[ki])->name);
        be_attn_params ap = {.n_tok = nt, .pos0 = pos0, .n_head = nh, .n_kv_head = nkv, .head_dim = hd, .scale = 0.125f, .window = 5, .softcap = 30.0f};
        ref_attention(q, kvt[ki], kh, vh, outw, &ap);
        be_tensor *qb, *aob;
        be_tensor qv = view_of(be, q, nh * hd, nt, &qb), aov = view_of(be, NULL, nh * hd, nt, &aob);
        be->ops->attention(be, &qv, kc, vc, &aov, &ap);
        be_download(&aov, 0, outg, sizeof outg);
        CHECKF(!be_error(be) && same(outg, outw, nt * nh * hd), "attention %s: %s", qtype_get(kvt[ki])->name, be_error(be) ? be_error(be) : "differs");
        ap.noncausal = true;   /* encoders: the flag reaches the kernel (here: the reference) */
        ref_attention(q, kvt[ki], kh, vh, outw, &ap);
        be->ops->attention(be, &qv, kc, vc, &aov, &ap);
        be_download(&aov, 0, outg, sizeof outg);
        CHECKF(!be_error(be) && same(outg, outw, nt * nh * hd), "noncausal attention %s: %s", qtype_get(kvt[ki])->name, be_error(be) ? be_error(be) : "differs");
        be_tensor_free(kc); be_tensor_free(vc); be_tensor_free(sb); be_tensor_free(qb); be_tensor_free(aob);
        free(kh); free(vh); free(back);
    }
    be_tensor_free(ab); be_tensor_free(bb); be_tensor_free(ob); be_tensor_free(wb); be_tensor_free(fb);
}

/* gpt-oss's op extensions reach the kernels (here: the reference): SWIGLU_OAI glu, YaRN rope,
 * attention sinks; a sinks tensor too short is refused with one line. */
static void test_gptoss_ops(backend *be) {
    enum { N = 3 * 97 };
    float g[N], u[N], want[N], got[N];
    for (int i = 0; i < N; i++) { g[i] = tu_rand_f32(&g_rng, -12, 12); u[i] = tu_rand_f32(&g_rng, -12, 12); }
    be_tensor *gb, *ub, *ob;
    be_tensor gv = view_of(be, g, 97, 3, &gb), uv = view_of(be, u, 97, 3, &ub), ov = view_of(be, NULL, 97, 3, &ob);
    ref_glu(g, u, want, N, BE_GLU_SWIGLU_OAI);
    be->ops->glu(be, &gv, &uv, &ov, N, BE_GLU_SWIGLU_OAI);
    be_download(&ov, 0, got, sizeof got);
    CHECKF(same(got, want, N), "glu swiglu-oai");
    enum { T = 5, H = 3, D = 40 };
    float x[T * H * D], xw[T * H * D];
    rand_fill(x, T * H * D);
    memcpy(xw, x, sizeof x);
    be_rope_params rp = {.n_rot = 24, .mode = BE_ROPE_NEOX, .freq_base = 150000.0f, .freq_scale = 1.0f / 32, .ext_factor = 1.0f,
                         .attn_factor = 0.9f, .corr_lo = 2.0f, .corr_hi = 7.0f};
    be_tensor *xb;
    be_tensor xv = view_of(be, x, H * D, T, &xb);
    ref_rope_ext(xw, T, H, D, 9, &rp, NULL);
    be->ops->rope(be, &xv, T, H, D, 9, &rp);
    be_download(&xv, 0, x, sizeof x);
    CHECKF(same(x, xw, T * H * D), "rope yarn");
    enum { NT = 4, NH = 4, NKV = 2, HD = 32, CTX = 9 };
    float q[NT * NH * HD], kf[CTX * NKV * HD], vf[CTX * NKV * HD], sk[NH] = {40.0f, -3.0f, 0.5f, 1.5f}, ow[NT * NH * HD], og[NT * NH * HD];
    rand_fill(q, NT * NH * HD); rand_fill(kf, CTX * NKV * HD); rand_fill(vf, CTX * NKV * HD);
    be_tensor *qb, *kb, *vb, *sb, *aob;
    be_tensor qv = view_of(be, q, NH * HD, NT, &qb), kv = view_of(be, kf, NKV * HD, CTX, &kb), vv = view_of(be, vf, NKV * HD, CTX, &vb);
    be_tensor sv = view_of(be, sk, NH, 1, &sb), aov = view_of(be, NULL, NH * HD, NT, &aob);
    be_attn_params ap = {.n_tok = NT, .pos0 = CTX - NT, .n_head = NH, .n_kv_head = NKV, .head_dim = HD, .scale = 0.2f, .window = 4, .sinks = &sv};
    ref_attention_sinks(q, QT_F32, kf, vf, sk, ow, &ap);
    be->ops->attention(be, &qv, &kv, &vv, &aov, &ap);
    be_download(&aov, 0, og, sizeof og);
    CHECKF(!be_error(be) && same(og, ow, NT * NH * HD), "attention sinks: %s", be_error(be) ? be_error(be) : "differs");
    ref_attention(q, QT_F32, kf, vf, ow, &ap);
    CHECK(!same(og, ow, NT * NH * HD)); /* the sinks made a difference */
    be_tensor_free(gb); be_tensor_free(ub); be_tensor_free(ob); be_tensor_free(xb);
    be_tensor_free(qb); be_tensor_free(kb); be_tensor_free(vb); be_tensor_free(aob);
    /* too short (3 of 4 heads), on a fresh backend: the sticky error names the sinks */
    backend *b2 = hip_backend_new(0, "gfx1100");
    CHECK(b2 != NULL);
    if (b2) {
        be_tensor *qb2, *kb2, *vb2, *ob2, *sb2;
        be_tensor q2 = view_of(b2, q, NH * HD, NT, &qb2), k2 = view_of(b2, kf, NKV * HD, CTX, &kb2), v2 = view_of(b2, vf, NKV * HD, CTX, &vb2);
        be_tensor o2 = view_of(b2, NULL, NH * HD, NT, &ob2), s2 = view_of(b2, sk, 3, 1, &sb2);
        ap.sinks = &s2;
        b2->ops->attention(b2, &q2, &k2, &v2, &o2, &ap);
        CHECKF(be_error(b2) && strstr(be_error(b2), "sinks has 3 elements, needs 4") && !strchr(be_error(b2), '\n'), "%s",
               be_error(b2) ? be_error(b2) : "(none)");
        be_tensor_free(qb2); be_tensor_free(kb2); be_tensor_free(vb2); be_tensor_free(ob2); be_tensor_free(sb2);
        b2->ops->destroy(b2);
    }
    be_tensor_free(sb);
}

/* The vision ops (issue 32): rope_rows (M-RoPE by table: qwen-vl encoders, qwen3vl / qwen2vl text)
 * on odd shapes with n_rot < head_dim and a view with an offset, glu's sigmoid kind (gemma4v's
 * GELU-quick), and rope_rows' one-line refusal of a table too short. */
static void test_vision_ops(backend *be) {
    enum { N = 5 * 37 };
    float g[N], u[N], want[N], got[N];
    for (int i = 0; i < N; i++) { g[i] = tu_rand_f32(&g_rng, -9, 9); u[i] = tu_rand_f32(&g_rng, -3, 3); }
    be_tensor *gb, *ub, *ob;
    be_tensor gv = view_of(be, g, 37, 5, &gb), uv = view_of(be, u, 37, 5, &ub), ov = view_of(be, NULL, 37, 5, &ob);
    ref_glu(g, u, want, N, BE_GLU_SIGMOID);
    be->ops->glu(be, &gv, &uv, &ov, N, BE_GLU_SIGMOID);
    be_download(&ov, 0, got, sizeof got);
    CHECKF(!be_error(be) && same(got, want, N), "glu sigmoid: %s", be_error(be) ? be_error(be) : "differs");
    enum { T = 29, H = 3, D = 22, R = 14, OFF = 2 };   /* 609 pairs: more than one block of threads */
    float x[(T + OFF) * H * D], xw[(T + OFF) * H * D], tab[T * R];
    rand_fill(x, (T + OFF) * H * D);
    for (int t = 0; t < T; t++)   /* (cos, sin) of assorted angles per row and pair */
        for (int i = 0; i < R / 2; i++) {
            const float ang = 0.37f * (float)(t + 1) * (float)(i + 1);
            tab[t * R + 2 * i] = cosf(ang);
            tab[t * R + 2 * i + 1] = sinf(ang);
        }
    memcpy(xw, x, sizeof x);
    be_tensor *xb, *tb;
    be_tensor xall = view_of(be, x, H * D, T + OFF, &xb), tv = view_of(be, tab, R, T, &tb);
    be_tensor xv = be_view_rows(&xall, OFF, T);   /* rows from OFF: the op must honour the offset */
    ref_rope_rows(xw + OFF * H * D, tab, T, H, D, R);
    be->ops->rope_rows(be, &xv, &tv, T, H, D, R);
    be_download(&xall, 0, x, sizeof x);
    CHECKF(!be_error(be) && same(x, xw, (T + OFF) * H * D), "rope_rows: %s", be_error(be) ? be_error(be) : "differs");
    be_tensor_free(gb); be_tensor_free(ub); be_tensor_free(ob); be_tensor_free(xb); be_tensor_free(tb);
    backend *b2 = hip_backend_new(0, "gfx1100");   /* a fresh backend for the sticky error */
    CHECK(b2 != NULL);
    if (b2) {
        be_tensor *xb2, *tb2;
        be_tensor x2 = view_of(b2, x, H * D, T, &xb2), t2 = view_of(b2, tab, R, T - 1, &tb2);
        b2->ops->rope_rows(b2, &x2, &t2, T, H, D, R);
        CHECKF(be_error(b2) && strstr(be_error(b2), "rope_rows: table has") && !strchr(be_error(b2), '\n'), "%s",
               be_error(b2) ? be_error(b2) : "(none)");
        be_tensor_free(xb2); be_tensor_free(tb2);
        b2->ops->destroy(b2);
    }
}

static void test_backend(void) {
    runtime(g_fake, NULL);
    backend *be = hip_backend_new(0, "gfx1100");
    CHECKF(be != NULL, "%s", anv_last_error());
    if (!be) return;
    CHECK(!strcmp(be->name, "hip0") && strstr(be->device_desc, "gfx1100") && strstr(be->device_desc, "HIP 6.2"));
    long launches0, live;
    uint64_t used;
    fake_stats(&launches0, &used, &live);
    test_matmul(be);
    test_small_ops(be);
    test_gptoss_ops(be);
    test_vision_ops(be);
    long launches;
    fake_stats(&launches, &used, &live);
    printf("fake runtime: %ld kernel launches\n", launches - launches0);
    CHECK(launches - launches0 > 90);
    /* Memory accounting: what the backend counts is what the runtime holds. */
    be_tensor *t = be->ops->tensor_new(be, QT_F32, 1000, 1000);
    fake_stats(&launches, &used, &live);
    CHECKF(t && used == hip_backend_allocated(be) && used >= 4000000, "used %llu, backend %llu", (unsigned long long)used, (unsigned long long)hip_backend_allocated(be));
    be_tensor_free(t);
    /* A tensor larger than the GPU: NULL with one line, nothing leaked. */
    t = be->ops->tensor_new(be, QT_F32, 1 << 20, 1 << 12);
    CHECKF(!t && strstr(anv_last_error(), "hip0 tensor_new: out of device memory for 16384.0 MiB") && !strchr(anv_last_error(), '\n'), "%s", anv_last_error());
    /* Sticky op errors. */
    be_tensor *q = be->ops->tensor_new(be, QT_F16, 64, 2), *o = be->ops->tensor_new(be, QT_F32, 64, 2);
    be->ops->add(be, q, o, o, 128, 128);
    CHECKF(be_error(be) && strstr(be_error(be), "hip0: hip0 add: a must be an f32 tensor"), "%s", be_error(be) ? be_error(be) : "(none)");
    be->ops->scale(be, o, 1 << 30, 2.0f);
    CHECK(strstr(be_error(be), "add") != NULL); /* the first failure is kept */
    be_tensor_free(q);
    be_tensor_free(o);
    be->ops->destroy(be);
    fake_stats(&launches, &used, &live);
    CHECKF(used == 0 && live == 0, "after destroy: %llu bytes in %ld allocations", (unsigned long long)used, live);

    /* hipMalloc failing after two successes. */
    runtime(g_fake, NULL);
    setenv("FAKE_HIP_MALLOC_FAIL_AFTER", "2", 1);
    be = hip_backend_new(0, "gfx1100");
    CHECK(be != NULL);
    if (be) {
        be_tensor *t1 = be->ops->tensor_new(be, QT_F32, 64, 1), *t2 = be->ops->tensor_new(be, QT_F32, 64, 1), *t3 = be->ops->tensor_new(be, QT_F32, 64, 1);
        CHECKF(t1 && t2 && !t3 && strstr(anv_last_error(), "out of device memory") && strstr(anv_last_error(), "hipErrorOutOfMemory"), "%s", anv_last_error());
        be_tensor_free(t1); be_tensor_free(t2);
        be->ops->destroy(be);
    }
}

/* The Q4_0 KV cache on a fresh backend (its refusal case leaves a sticky error). */
static void test_kv_q4_0(void) {
    runtime(g_fake, NULL);
    backend *be = hip_backend_new(0, "gfx1100");
    CHECKF(be != NULL, "%s", anv_last_error());
    if (!be) return;
    kvq_test_store(be, true);
    kvq_test_attention(be, 256); /* ANV_ATT_MAX_HEAD_DIM */
    be->ops->destroy(be);
}

/* ---- doctor --verify on HIP ---- */

static void test_verify(void) {
    runtime(g_fake, NULL);
    backend *be = hip_backend_new(0, "gfx1100");
    CHECKF(be != NULL, "%s", anv_last_error());
    if (!be) return;
    static gv_report r;
    CHECKF(gpu_verify_run(be, gv_hip(0), NULL, &r) == 0 && r.n > 20, "%d of %d failed: %s", r.n_fail, r.n, anv_last_error());
    bool named = false;
    for (int i = 0; i < r.n; i++) named |= strstr(r.c[i].kernels, "rms_norm") != NULL;
    CHECKF(named, "kernels column: %s", r.c[0].kernels);
    be->ops->destroy(be);
    setenv("ANVIL_HIP_TEST_BREAK", "rms_norm", 1);
    be = hip_backend_new(0, "gfx1100");
    unsetenv("ANVIL_HIP_TEST_BREAK");
    CHECK(be != NULL);
    if (!be) return;
    const int nf = gpu_verify_run(be, gv_hip(0), NULL, &r);
    bool only_rms = nf > 0, advice = true;
    for (int i = 0; i < r.n; i++)
        if (!r.c[i].pass) { only_rms &= !strcmp(r.c[i].op, "rms_norm"); advice &= strstr(r.c[i].fix, "ANVIL_BACKEND=vulkan") != NULL; }
    CHECKF(only_rms && advice && !r.fix[0], "planted rms_norm: %d failed, fix '%s'", nf, r.fix);
    gpu_verify_print(stdout, &r, false);
    be->ops->destroy(be);
    char path[600];
    setenv("XDG_CACHE_HOME", "/tmp/anvil-hip-verify-test", 1);
    CHECKF(gpu_verify_cache_path(gv_hip(0), path, sizeof path) && strstr(path, "/tmp/anvil-hip-verify-test/anvil/hip-verify-gfx1100-"), "%s", path);
    CHECK(gpu_verify_cache_write(gv_hip(0), &r) == 0);
    bool pass = true;
    char fix[128];
    CHECK(gpu_verify_cache_read(gv_hip(0), &pass, fix, sizeof fix) && !pass);
    remove(path);
    unsetenv("XDG_CACHE_HOME");
}

/* ---- placed models ---- */

static int gpu_layers(const model *m) {
    int n = 0;
    for (int il = 0; il < m->hp.n_layer; il++) n += m->gpu && m->layers[il].be == m->gpu;
    return n;
}

static void test_model(const char *path) {
    model *cpu = model_load_with(path, 1, NULL, 0);
    CHECKF(cpu != NULL, "%s: %s", path, anv_last_error());
    if (!cpu) return;
    const int nv = cpu->hp.n_vocab;
    const int32_t toks[] = {1, 5, 9, 3, 7, 2, 4, 8};
    float *lc = malloc(sizeof(float) * (size_t)nv * 8), *lg = malloc(sizeof(float) * (size_t)nv * 8);
    model_ctx *cc = model_ctx_new(cpu, 64, QT_F16);
    CHECK(cc && model_eval(cc, toks, 8, lc, true) == 0 && model_eval(cc, toks, 1, lc + nv, false) == 0);

    runtime(g_fake, NULL);
    setenv("ANVIL_VK_VISIBLE_DEVICES", "-1", 1);
    device_registry_reset();
    device_registry_use_builtin(true);
    model_place_opts po = {.n_threads = 1, .n_ctx = 64, .kv_type = QT_F16, .n_gpu_layers = -1};
    model *m = model_load_placed(path, &po);
    CHECKF(m && m->gpu && gpu_layers(m) == m->hp.n_layer, "%s: %s", path, m ? "not all layers on hip0" : anv_last_error());
    long live_full = 0;
    if (m) {
        long l0; uint64_t u0;
        fake_stats(&l0, &u0, &live_full);
        model_ctx *gc = model_ctx_new(m, 64, QT_F16);
        CHECKF(gc && model_eval(gc, toks, 8, lg, true) == 0 && model_eval(gc, toks, 1, lg + nv, false) == 0, "%s", anv_last_error());
        /* The fake runs the exact reference; the CPU backend's quantized kernels round the
         * activations to 8 bits (Q8_K / Q8_0), hence the looser bound for quantized models. */
        const float err = tu_rel_err(lg, lc, (int64_t)nv * 2);
        const bool quantized = strstr(path, "-f32") == NULL;
        printf("%s: hip0 (fake) vs cpu logits rel err %.2e\n", path, (double)err);
        CHECKF(err < (quantized ? 5e-2f : 1e-4f), "%s: rel err %g", path, (double)err);
        model_ctx_free(gc);
        model_free(m);
    }
    /* The GPU runs out of memory mid-load (one layer's tensors fewer than needed): fewer
     * layers, then it works, and the context's own allocations fail cleanly if they must. */
    int per_layer = 0;
    for (uint64_t i = 0; i < cpu->gguf->n_tensors; i++) per_layer += !strncmp(cpu->gguf->tensors[i].name.ptr, "blk.0.", 6);
    if (live_full > per_layer && cpu->hp.n_layer > 1) {
        runtime(g_fake, NULL);
        char cap[32];
        snprintf(cap, sizeof cap, "%ld", live_full - per_layer);
        setenv("FAKE_HIP_MAX_ALLOCS", cap, 1);
        m = model_load_placed(path, &po);
        CHECKF(m && m->gpu && gpu_layers(m) > 0 && gpu_layers(m) < m->hp.n_layer, "%s: %s", path, m ? "layer count" : anv_last_error());
        if (m) {
            printf("%s: out of device memory at %s allocations: %d of %d layers on hip0\n", path, cap, gpu_layers(m), m->hp.n_layer);
            model_ctx *gc = model_ctx_new(m, 64, QT_F16);
            CHECKF(gc || strstr(anv_last_error(), "out of device memory"), "%s", anv_last_error());
            model_ctx_free(gc);
            model_free(m);
        }
        /* No memory at all: the model runs on the CPU. */
        runtime(g_fake, NULL);
        setenv("FAKE_HIP_MAX_ALLOCS", "0", 1);
        m = model_load_placed(path, &po);
        CHECKF(m && !m->gpu, "%s", m ? "still on a GPU" : anv_last_error());
        model_free(m);
    }
    unsetenv("ANVIL_VK_VISIBLE_DEVICES");
    model_ctx_free(cc);
    model_free(cpu);
    free(lc);
    free(lg);
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: hip_fake_test FAKE_HIP.so FAKE_HIP_OLD.so\n"); return 2; }
    g_fake = argv[1];
    g_fake_old = argv[2];
    printf("HIP targets in this build: %s\n", hip_build_targets());
    test_unavailable();
    test_enumeration();
    test_backend();
    test_kv_q4_0();
    test_verify();
    const char *dir = getenv("ANVIL_TEST_MODELS");
    const char *models[] = {"llama-tiny-f32", "llama-tinyk-q4_K"};
    for (int i = 0; i < 2; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.gguf", dir ? dir : "test-models", models[i]);
        FILE *f = fopen(path, "rb");
        if (!f) { printf("skipping %s (not generated)\n", path); continue; }
        fclose(f);
        test_model(path);
    }
    device_registry_reset();
    return tu_finish();
}
