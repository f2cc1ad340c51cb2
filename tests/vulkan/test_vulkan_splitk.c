/* test_vulkan_splitk: split-K decode attention (engine/vulkan/vk_attention.c; issue 14)
 * against cpu/ref_ops.c on lavapipe: odd context lengths (1, 2, 31, 33, 255, 1000+), n_tok
 * 1..4, every KV cache type (F32, F16, Q8_0, Q4_0), GQA, softcap, sliding windows (one that
 * leaves most chunks of the forced split empty), attention sinks and noncausal mode, with the
 * split count forced (ANVIL_VK_SPLITK = 1, 2, 3, 7 and 64, more than the chunks there are),
 * chosen by the backend, and with ANVIL_VK_DISABLE=splitk. Each run checks which kernels ran
 * (a split run that silently took the single-pass kernel fails), that n_tok > 4 and short
 * contexts stay single-pass, that a malformed ANVIL_VK_SPLITK is a one-line error, and that
 * doctor --verify (gpu_verify_run on $ANVIL_TEST_MODELS/llama-tiny-q4_0.gguf's kernels, S
 * forced to 2) runs the split kernels at its decode case (256 positions) and reports a planted
 * wrong one with the checked fix ANVIL_VK_DISABLE=splitk. ctest
 * runs it with every path and with ANVIL_VK_DISABLE=subgroup (the non-subgroup variants),
 * under the validation layer: zero messages. */
#include <math.h>
#include <time.h>
#include <unistd.h>
#include "gpu_verify.h"
#include "model_place.h"
#include "ref_ops.h"
#include "vk_testlib.h"

#ifdef ANVIL_HAVE_VULKAN
static uint64_t seed = 777;

typedef struct { int n_tok, pos0, n_head, n_kv, hd, window; float softcap; bool noncausal, sinks; } acfg;

static const acfg k_cfg[] = {
    { 1, 0, 4, 4, 64, 0, 0, false, false },       /* n_kv 1 */
    { 1, 1, 4, 2, 64, 0, 0, false, false },       /* n_kv 2, GQA 2 */
    { 1, 30, 8, 2, 32, 0, 0, false, true },       /* n_kv 31, sinks */
    { 2, 31, 4, 1, 64, 0, 30.0f, false, false },  /* n_kv 33, softcap, GQA 4 */
    { 3, 252, 6, 2, 32, 0, 0, false, true },      /* n_kv 255, GQA 3, sinks */
    { 4, 1025, 8, 2, 64, 0, 0, false, false },    /* n_kv 1029, 4 queries */
    { 1, 1031, 4, 4, 128, 40, 0, false, false },  /* window 40 of 1032 keys: the forced splits' later chunks hold nothing */
    { 4, 700, 2, 1, 256, 300, 50.0f, false, true }, /* head_dim 256, window, softcap, sinks */
    { 2, 600, 4, 2, 64, 6, 0, true, false },      /* noncausal, symmetric window */
    { 3, 40, 4, 4, 32, 0, 0, true, true },        /* noncausal, sinks */
    { 5, 300, 4, 2, 64, 0, 0, false, false },     /* n_tok 5: always the single-pass kernel */
};
#define N_CFG (int)(sizeof k_cfg / sizeof k_cfg[0])

/* Runs cfg on be for cache type; returns the max abs difference to the reference and puts
 * the kernels it ran into kernels. */
static float run_cfg(backend *be, const acfg *cf, uint32_t type, char *kernels, size_t kl) {
    const int n_kv = cf->pos0 + cf->n_tok, ctx = n_kv + 5;
    const int64_t kvc = (int64_t)cf->n_kv * cf->hd, qc = (int64_t)cf->n_head * cf->hd;
    float *kf = malloc(sizeof(float) * kvc * ctx), *vf = malloc(sizeof(float) * kvc * ctx);
    float *q = malloc(sizeof(float) * qc * cf->n_tok), *sk = malloc(sizeof(float) * cf->n_head);
    float *got = malloc(sizeof(float) * qc * cf->n_tok), *ref = malloc(sizeof(float) * qc * cf->n_tok);
    vkt_fill(&seed, kf, kvc * ctx, -1, 1); vkt_fill(&seed, vf, kvc * ctx, -1, 1);
    vkt_fill(&seed, q, qc * cf->n_tok, -1.5f, 1.5f);
    vkt_fill(&seed, sk, cf->n_head, -1, 3);
    void *kq = vkt_quantize(type, kf, kvc, ctx), *vq = vkt_quantize(type, vf, kvc, ctx);
    be_tensor *kt = vkt_upload_new(be, type, kvc, ctx, kq), *vt = vkt_upload_new(be, type, kvc, ctx, vq);
    be_tensor *qt = vkt_upload_new(be, QT_F32, qc + 3, cf->n_tok, NULL); /* q rows wider than the heads */
    for (int t = 0; t < cf->n_tok; t++) be_upload(qt, (size_t)t * (size_t)(qc + 3) * 4, q + (size_t)t * qc, (size_t)qc * 4);
    be_tensor *st = vkt_upload_new(be, QT_F32, cf->n_head + 2, 1, NULL);
    be_upload(st, 8, sk, sizeof(float) * cf->n_head);
    be_tensor sv = *st;
    sv.offset += 8; sv.cols = cf->n_head; sv.owned = false; /* a view: offset 2 */
    be_tensor *ot = be->ops->tensor_new(be, QT_F32, qc, cf->n_tok + 1);
    be_tensor ov = be_view_rows(ot, 1, cf->n_tok);
    be_attn_params p = { .n_tok = cf->n_tok, .pos0 = cf->pos0, .n_head = cf->n_head, .n_kv_head = cf->n_kv, .head_dim = cf->hd,
                         .scale = 1.0f / sqrtf((float)cf->hd), .window = cf->window, .softcap = cf->softcap,
                         .noncausal = cf->noncausal, .sinks = cf->sinks ? &sv : NULL };
    vk_backend_take_kernels(be, kernels, kl);
    be->ops->attention(be, qt, kt, vt, &ov, &p);
    be_download(&ov, 0, got, sizeof(float) * qc * cf->n_tok);
    vk_backend_take_kernels(be, kernels, kl);
    ref_attention_sinks(q, type, kq, vq, cf->sinks ? sk : NULL, ref, &p);
    float err = tu_max_abs_diff(got, ref, qc * cf->n_tok);
    for (int64_t i = 0; i < qc * cf->n_tok; i++) if (!isfinite(got[i])) err = INFINITY;
    be_tensor_free(kt); be_tensor_free(vt); be_tensor_free(qt); be_tensor_free(ot); be_tensor_free(st);
    free(kf); free(vf); free(q); free(sk); free(got); free(ref); free(kq); free(vq);
    return err;
}

/* Every config and cache type on a backend opened with ANVIL_VK_SPLITK=forced ("" = unset)
 * and the disable list; split_expected: -1 = as the backend chooses (checked below), 0 = never,
 * 1 = whenever n_tok <= 4. */
static void run_all(const char *forced, const char *disable, int split_expected) {
    if (forced[0]) setenv("ANVIL_VK_SPLITK", forced, 1);
    else unsetenv("ANVIL_VK_SPLITK");
    backend *be = vk_backend_new_opts(vkt_device_index(), disable);
    CHECKF(be != NULL, "backend (ANVIL_VK_SPLITK=%s, disable %s): %s", forced, disable, anv_last_error());
    if (!be) return;
    const anv_vk_paths pa = vk_backend_paths(be);
    CHECK(pa.splitk == (split_expected != 0));
    CHECK(pa.splitk_forced == (forced[0] ? atoi(forced) : 0));
    const uint32_t types[4] = { QT_F32, QT_F16, QT_Q8_0, QT_Q4_0 };
    for (int ci = 0; ci < N_CFG; ci++)
        for (int k = 0; k < 4; k++) {
            const acfg *cf = &k_cfg[ci];
            char kern[256];
            float err = run_cfg(be, cf, types[k], kern, sizeof kern);
            CHECKF(err < 2e-5f, "splitk=%s disable '%s' cfg %d %s: max diff %g (%s)", forced, disable, ci, qtype_get(types[k])->name, err, kern);
            const bool split = strstr(kern, "flash_attn_split_") && strstr(kern, "flash_attn_merge");
            const bool may = cf->n_tok <= 4;
            if (split_expected == 1) CHECKF(split == may, "splitk=%s cfg %d ran %s", forced, ci, kern);
            if (split_expected == 0) CHECKF(!split && strstr(kern, "flash_attn_"), "splitk off cfg %d ran %s", ci, kern);
            if (split_expected == -1 && !may) CHECKF(!split, "auto cfg %d (n_tok 5) ran %s", ci, kern);
            if (split) {
                char want[64];
                snprintf(want, sizeof want, "flash_attn_split_%s%s", qtype_get(types[k])->name, pa.subgroup ? "_sg" : "");
                for (char *s = want; *s; s++) *s = (char)(*s >= 'A' && *s <= 'Z' ? *s - 'A' + 'a' : *s);
                CHECKF(strstr(kern, want) != NULL, "cfg %d ran %s, wanted %s", ci, kern, want);
            }
        }
    if (split_expected == -1) {
        /* chosen per call: 2 heads x 1 query leave any device's compute units idle at 1029
         * keys (target >= 4 workgroups); 200 keys are below the threshold (256) */
        const acfg lng = { 1, 1028, 2, 1, 64, 0, 0, false, false }, shrt = { 1, 199, 2, 1, 64, 0, 0, false, false };
        char kern[256];
        float err = run_cfg(be, &lng, QT_F16, kern, sizeof kern);
        CHECKF(err < 2e-5f && strstr(kern, "flash_attn_split_f16") && strstr(kern, "flash_attn_merge"), "auto, 1029 keys: %g %s", err, kern);
        err = run_cfg(be, &shrt, QT_F16, kern, sizeof kern);
        CHECKF(err < 2e-5f && !strstr(kern, "flash_attn_split"), "auto, 200 keys: %g %s", err, kern);
    }
    CHECKF(be_error(be) == NULL, "sticky error: %s", be_error(be));
    be->ops->destroy(be);
}

/* doctor --verify with a planted wrong split kernel (ANVIL_VK_TEST_BREAK): the decode case of
 * that cache type fails with the fix ANVIL_VK_DISABLE=splitk, checked; the other types' decode
 * cases ran the split kernels and pass; the overall fix is splitk. */
static gv_report rep;
static void doctor_planted(const char *base) {
    char path[1024];
    const char *dir = getenv("ANVIL_TEST_MODELS");
    snprintf(path, sizeof path, "%s/llama-tiny-q4_0.gguf", dir ? dir : ".");
    model *m = model_load_with(path, 1, NULL, 0);
    CHECKF(m != NULL, "%s: %s", path, anv_last_error());
    if (!m) return;
    char tmpl[] = "/tmp/anvil-splitk-XXXXXX", saved[1024] = "";
    CHECK(mkdtemp(tmpl) != NULL);
    const char *xdg = getenv("XDG_CACHE_HOME");
    if (xdg) snprintf(saved, sizeof saved, "%s", xdg);
    setenv("XDG_CACHE_HOME", tmpl, 1); /* the pipeline and tuning caches of these backends */
    setenv("ANVIL_VK_SPLITK", "2", 1);
    backend *be = vk_backend_new_opts(vkt_device_index(), base);
    CHECKF(be != NULL, "%s", anv_last_error());
    char victim[64] = "";
    if (be) {
        snprintf(victim, sizeof victim, "flash_attn_split_f16%s", vk_backend_paths(be).subgroup ? "_sg" : "");
        be->ops->destroy(be);
        setenv("ANVIL_VK_TEST_BREAK", victim, 1);
        be = vk_backend_new_opts(vkt_device_index(), base);
        CHECKF(be != NULL, "%s", anv_last_error());
    }
    if (be) {
        const int nf = gpu_verify_run(be, gv_vulkan(vkt_device_index()), m, &rep);
        gpu_verify_print(stdout, &rep, false);
        CHECKF(nf > 0, "the planted %s was not reported", victim);
        int n_victim = 0, n_split_ok = 0;
        for (int i = 0; i < rep.n; i++) {
            const gv_case *c = &rep.c[i];
            if (strstr(c->kernels, victim)) {
                n_victim++;
                CHECKF(!c->pass && strstr(c->fix, "ANVIL_VK_DISABLE=splitk") && strstr(c->fix, "checked"), "%s: fix %s", c->shape, c->fix);
            } else {
                CHECKF(c->pass, "%s %s failed too", c->op, c->shape);
                if (strstr(c->kernels, "flash_attn_split_") && strstr(c->kernels, "flash_attn_merge")) n_split_ok++;
            }
        }
        CHECKF(n_victim == 1 && n_split_ok == 3, "%d cases ran %s, %d other split cases", n_victim, victim, n_split_ok);
        CHECKF(rep.fix_complete && !strcmp(rep.fix, "splitk"), "overall fix '%s'", rep.fix);
        be->ops->destroy(be);
    }
    unsetenv("ANVIL_VK_TEST_BREAK");
    unsetenv("ANVIL_VK_SPLITK");
    model_free(m);
    if (saved[0]) setenv("XDG_CACHE_HOME", saved, 1);
    else unsetenv("XDG_CACHE_HOME");
    CHECK(tu_tmpdir_done(tmpl) == 0);
}

/* --bench N_KV SPLITK|off [REPS]: decode attention of a 32-head model (Llama 2 7B: 32/32
 * heads x 128, F16 cache) at N_KV positions, REPS calls (default 20), one sync each; run with
 * ANVIL_VK_PROFILE=1 for the per-kernel us/call at exit. SPLITK: 0 = as the backend chooses,
 * N = ANVIL_VK_SPLITK=N, off = ANVIL_VK_DISABLE=splitk. Prints wall us per call. No checks:
 * a benchmark (README "Profiling and the bandwidth model"). */
static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int bench(int argc, char **argv) {
    const int n_kv = argc > 2 ? atoi(argv[2]) : 0, reps = argc > 4 ? atoi(argv[4]) : 20;
    const char *mode = argc > 3 ? argv[3] : "0";
    if (n_kv < 1 || n_kv > 65536 || reps < 1) { fprintf(stderr, "usage: test_vulkan_splitk --bench N_KV SPLITK|off [REPS]\n"); return 2; }
    const bool off = !strcmp(mode, "off");
    if (!off && strcmp(mode, "0")) setenv("ANVIL_VK_SPLITK", mode, 1);
    backend *be = vk_backend_new_opts(vkt_device_index(), off ? "splitk" : NULL);
    if (!be) { fprintf(stderr, "bench: %s\n", anv_last_error()); return 1; }
    const int nh = 32, hd = 128, kvc = nh * hd;
    float *x = malloc(sizeof(float) * (size_t)kvc * 64);
    vkt_fill(&seed, x, (int64_t)kvc * 64, -1, 1);
    be_tensor *kt = be->ops->tensor_new(be, QT_F16, kvc, n_kv), *vt = be->ops->tensor_new(be, QT_F16, kvc, n_kv);
    be_tensor *xt = vkt_upload_new(be, QT_F32, kvc, 64, x), *qt = vkt_upload_new(be, QT_F32, kvc, 1, x);
    be_tensor *ot = be->ops->tensor_new(be, QT_F32, kvc, 1);
    for (int r0 = 0; r0 < n_kv; r0 += 64) be->ops->store_rows(be, xt, kt, r0, n_kv - r0 < 64 ? n_kv - r0 : 64);
    for (int r0 = 0; r0 < n_kv; r0 += 64) be->ops->store_rows(be, xt, vt, r0, n_kv - r0 < 64 ? n_kv - r0 : 64);
    be_sync(be);
    be_attn_params p = { .n_tok = 1, .pos0 = n_kv - 1, .n_head = nh, .n_kv_head = nh, .head_dim = hd, .scale = 1.0f / sqrtf((float)hd) };
    char kern[256];
    vk_backend_take_kernels(be, kern, sizeof kern);
    const double t0 = now_ms();
    for (int i = 0; i < reps; i++) { be->ops->attention(be, qt, kt, vt, ot, &p); be_sync(be); }
    const double us = (now_ms() - t0) * 1e3 / reps;
    vk_backend_take_kernels(be, kern, sizeof kern);
    printf("bench: n_kv %d splitk %s: %.1f us/call wall (%s)%s%s\n", n_kv, mode, us, kern, be_error(be) ? " error: " : "", be_error(be) ? be_error(be) : "");
    be_tensor_free(kt); be_tensor_free(vt); be_tensor_free(xt); be_tensor_free(qt); be_tensor_free(ot);
    free(x);
    be->ops->destroy(be);
    return 0;
}
#endif

int main(int argc, char **argv) {
#ifdef ANVIL_HAVE_VULKAN
    anv_log_enabled = 1;
    if (argc > 1 && !strcmp(argv[1], "--bench")) return bench(argc, argv);
    backend *probe = vkt_open_lavapipe();
    if (probe) {
        probe->ops->destroy(probe);
        const char *env = getenv("ANVIL_VK_DISABLE");
        char base[128], off[160];
        snprintf(base, sizeof base, "%s", env ? env : "");
        snprintf(off, sizeof off, "%s%ssplitk", base, base[0] ? "," : "");
        const bool all_off = strstr(base, "all") != NULL || strstr(base, "splitk") != NULL;
        static const char *const forced[] = { "1", "2", "3", "7", "64" };
        for (int i = 0; i < 5; i++) run_all(forced[i], base, all_off ? 0 : 1);
        run_all("", base, all_off ? 0 : -1);
        run_all("3", off, 0);
        /* malformed values: one-line errors naming the variable */
        static const char *const bad[] = { "0", "-2", "257", "abc", "4x" };
        for (int i = 0; i < 5; i++) {
            setenv("ANVIL_VK_SPLITK", bad[i], 1);
            backend *be = vk_backend_new_opts(vkt_device_index(), base);
            CHECKF(be == NULL && strstr(anv_last_error(), "ANVIL_VK_SPLITK") && !strchr(anv_last_error(), '\n'),
                   "ANVIL_VK_SPLITK=%s: %s", bad[i], be ? "accepted" : anv_last_error());
            if (be) be->ops->destroy(be);
        }
        unsetenv("ANVIL_VK_SPLITK");
        CHECK(vk_disable_check("splitk") == 0 && strstr(vk_optional_paths(), "splitk"));
        if (!all_off) doctor_planted(base);
        const char *val = getenv("ANVIL_VK_VALIDATE");
        if (val && strcmp(val, "1") == 0) CHECKF(vk_validation_messages() == 0, "%d validation messages", vk_validation_messages());
    }
#else
    (void)argc; (void)argv;
    CHECK(1); /* built without Vulkan: nothing to test */
#endif
    return tu_finish();
}
