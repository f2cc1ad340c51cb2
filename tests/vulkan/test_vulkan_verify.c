/* test_vulkan_verify: `anvil doctor --verify` (engine/device/gpu_verify.c) on lavapipe.
 * 1. the standard shapes and a synthetic model's kernels all pass on the real device;
 * 2. a planted wrong kernel (ANVIL_VK_TEST_BREAK: its dispatches are skipped) is reported
 *    as failed, with the fix that was checked to work (ANVIL_VK_DISABLE=subgroup for a
 *    subgroup kernel) or, for a kernel without an optional path, the CPU advice;
 * 3. the verdict is cached per device + driver under $XDG_CACHE_HOME (a temp dir here) and
 *    gpu_verify_auto runs only when no entry exists, returning a cached fix;
 * 4. ANVIL_VK_DISABLE with an unknown path is a one-line error, not a crash;
 * 5. the mat-vec autotuner's choices are cached next to it and reused (ANVIL_VK_TUNE=1 re-times).
 * Usage: test_vulkan_verify [MODEL.gguf] (default: $ANVIL_TEST_MODELS/llama-tiny-q4_0.gguf). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gpu_verify.h"
#include "model_place.h"
#include "vk_testlib.h"

#ifdef ANVIL_HAVE_VULKAN
static gv_report rep;

static int find_case(const gv_report *r, const char *kernel) {
    for (int i = 0; i < r->n; i++)
        if (strstr(r->c[i].kernels, kernel)) return i;
    return -1;
}

static backend *open_idx(int idx) {
    backend *be = vk_backend_new(idx);
    CHECKF(be != NULL, "vk_backend_new: %s", anv_last_error());
    return be;
}

int main(int argc, char **argv) {
    anv_log_enabled = 0;
    char tmpl[] = "/tmp/anvil-verify-XXXXXX";
    CHECK(mkdtemp(tmpl) != NULL);
    setenv("XDG_CACHE_HOME", tmpl, 1);
    unsetenv("ANVIL_VK_TEST_BREAK");
    backend *be = vkt_open_lavapipe();
    if (!be) { tu_tmpdir_done(tmpl); return tu_finish(); }
    const int idx = vkt_device_index();
    const anv_vk_paths paths = vk_backend_paths(be);

    /* 1. standard shapes, then the model's own */
    CHECKF(gpu_verify_run(be, gv_vulkan(idx), NULL, &rep) == 0, "standard shapes: %d failed", rep.n_fail);
    gpu_verify_print(stdout, &rep, true);
    CHECK(rep.n > 60);
    CHECK(find_case(&rep, "mul_mm_q4_k") >= 0 && find_case(&rep, "flash_attn_q8_0") >= 0);
    if (paths.fuse) CHECK(find_case(&rep, "mul_mat_vec_glu_f16") >= 0 && find_case(&rep, "rope_store_q4_0") >= 0); /* fused ops */
    char path[1024];
    const char *dir = getenv("ANVIL_TEST_MODELS");
    snprintf(path, sizeof path, "%s/llama-tiny-q4_0.gguf", dir ? dir : ".");
    const char *mpath = argc > 1 ? argv[1] : path;
    model *m = model_load_with(mpath, 1, NULL, 0);
    CHECKF(m != NULL, "%s: %s", mpath, anv_last_error());
    if (m) {
        CHECKF(gpu_verify_run(be, gv_vulkan(idx), m, &rep) == 0, "model kernels: %d failed", rep.n_fail);
        gpu_verify_print(stdout, &rep, true);
        CHECK(rep.n >= 20);
        if (paths.fuse) CHECKF(find_case(&rep, "rope_store_f16") >= 0, "the fused rope_store is not among the model's cases");
    }
    be->ops->destroy(be);

    /* 2. a planted wrong kernel: the decode mat-vec of the model's Q4_0 weights */
    char victim[64]; /* e.g. mul_mat_vecq_q4_0_w_sg: 8-bit dot, repacked weights, subgroup sums */
    snprintf(victim, sizeof victim, "mul_mat_vec%s_q4_0%s%s", paths.int8 ? "q" : "", paths.wide ? "_w" : "", paths.subgroup ? "_sg" : "");
    setenv("ANVIL_VK_TEST_BREAK", victim, 1);
    be = open_idx(idx);
    if (be && m) {
        int nf = gpu_verify_run(be, gv_vulkan(idx), m, &rep);
        gpu_verify_print(stdout, &rep, false);
        CHECKF(nf > 0, "the planted wrong kernel %s was not reported", victim);
        int ci = find_case(&rep, victim);
        CHECK(ci >= 0 && !rep.c[ci].pass && rep.c[ci].err > 0.1);
        if (ci >= 0 && paths.subgroup)
            CHECKF(strstr(rep.c[ci].fix, "ANVIL_VK_DISABLE=") && strstr(rep.c[ci].fix, "checked"), "fix: %s", rep.c[ci].fix);
        if (paths.subgroup) CHECKF(rep.fix_complete && rep.fix[0], "overall fix '%s'", rep.fix);
        /* every case not run by the victim still passes */
        for (int i = 0; i < rep.n; i++)
            if (!strstr(rep.c[i].kernels, victim)) CHECKF(rep.c[i].pass, "%s %s failed too", rep.c[i].op, rep.c[i].shape);
        /* 3. the auto-check at first sight of the device caches the failure and hands back the fix */
        char fix[128], cpath[600];
        CHECK(gpu_verify_cache_path(gv_vulkan(idx), cpath, sizeof cpath));
        CHECK(strncmp(cpath, tmpl, strlen(tmpl)) == 0);
        CHECK(access(cpath, F_OK) != 0);
        gpu_verify_auto(be, gv_vulkan(idx), m, fix, sizeof fix);
        CHECK(access(cpath, F_OK) == 0);
        bool pass = true;
        char cfix[128];
        CHECK(gpu_verify_cache_read(gv_vulkan(idx), &pass, cfix, sizeof cfix));
        CHECK(!pass);
        if (paths.subgroup) CHECKF(fix[0] && !strcmp(fix, cfix), "auto fix '%s' cached '%s'", fix, cfix);
        char fix2[128];
        gpu_verify_auto(be, gv_vulkan(idx), m, fix2, sizeof fix2); /* cached: not run again */
        CHECK(!strcmp(fix, fix2));
        unlink(cpath);
        /* the fix applied: the check passes */
        if (paths.subgroup && fix[0]) {
            backend *fixed = vk_backend_new_opts(idx, fix);
            CHECK(fixed != NULL);
            if (fixed) {
                CHECKF(gpu_verify_run(fixed, gv_vulkan(idx), m, &rep) == 0, "with ANVIL_VK_DISABLE=%s: %d failed", fix, rep.n_fail);
                fixed->ops->destroy(fixed);
            }
        }
    }
    if (be) be->ops->destroy(be);

    /* a planted wrong fused kernel (the model's F16 cache): reported, ANVIL_VK_DISABLE=fuse the checked fix */
    if (paths.fuse && m) {
        setenv("ANVIL_VK_TEST_BREAK", "rope_store_f16", 1);
        be = open_idx(idx);
        if (be) {
            CHECK(gpu_verify_run(be, gv_vulkan(idx), m, &rep) > 0);
            int ci = find_case(&rep, "rope_store_f16");
            CHECK(ci >= 0 && !rep.c[ci].pass && rep.c[ci].err > 0.1);
            if (ci >= 0) CHECKF(strstr(rep.c[ci].fix, "ANVIL_VK_DISABLE=fuse") && strstr(rep.c[ci].fix, "checked"), "fix: %s", rep.c[ci].fix);
            be->ops->destroy(be);
        }
    }

    /* a planted wrong repacked-layout kernel with the subgroup and int8 paths off, so that the
     * layout is its only optional path: reported, ANVIL_VK_DISABLE=wide the checked fix */
    if (paths.wide && m && !getenv("ANVIL_VK_DISABLE")) {
        setenv("ANVIL_VK_TEST_BREAK", "mul_mat_vec_q4_0_w", 1);
        setenv("ANVIL_VK_DISABLE", "subgroup,int8", 1);
        be = open_idx(idx);
        if (be) {
            CHECK(gpu_verify_run(be, gv_vulkan(idx), m, &rep) > 0);
            gpu_verify_print(stdout, &rep, false);
            int ci = find_case(&rep, "mul_mat_vec_q4_0_w");
            CHECK(ci >= 0 && !rep.c[ci].pass && rep.c[ci].err > 0.1);
            if (ci >= 0) CHECKF(strstr(rep.c[ci].fix, "ANVIL_VK_DISABLE=wide") && strstr(rep.c[ci].fix, "checked"), "fix: %s", rep.c[ci].fix);
            be->ops->destroy(be);
        }
        unsetenv("ANVIL_VK_DISABLE");
    }

    /* a kernel without an optional path: the advice, no disable */
    setenv("ANVIL_VK_TEST_BREAK", "add", 1);
    be = open_idx(idx);
    if (be && m) {
        CHECK(gpu_verify_run(be, gv_vulkan(idx), m, &rep) > 0);
        int ci = find_case(&rep, "add");
        CHECK(ci >= 0 && !rep.c[ci].pass && strstr(rep.c[ci].fix, "-ngl 0"));
        CHECK(!rep.fix_complete);
    }
    if (be) be->ops->destroy(be);
    unsetenv("ANVIL_VK_TEST_BREAK");

    /* 5. autotuning: the runs above timed each mat-vec kernel once and cached the choices
     * next to the verdict; a new backend starts from them, ANVIL_VK_TUNE=1 starts over */
    {
        char tpath[700], tuned[2048];
        anv_vk_device_info info;
        CHECK(vk_device_info_get(idx, &info) == 0);
        snprintf(tpath, sizeof tpath, "%s/anvil/vk-tune-%04x-%04x-%08x-%08x.txt", tmpl, info.vendor_id, info.device_id,
                 info.driver_version, vk_kernels_digest());
        CHECKF(access(tpath, F_OK) == 0, "no tuning cache %s", tpath);
        backend *t1 = open_idx(idx);
        if (t1) {
            CHECK(vk_backend_tuning(t1, tuned, sizeof tuned) > 0 && strstr(tuned, "mul_mat_vec"));
            printf("tuned: %s\n", tuned);
            /* timed per batch size as well: decode (1 token) and the batched runs (NTOK 2/4/8) */
            CHECKF(strstr(tuned, " t1:") && (strstr(tuned, " t2:") || strstr(tuned, " t4:") || strstr(tuned, " t8:")),
                   "no batch-size tuning in: %s", tuned);
            t1->ops->destroy(t1);
        }
        setenv("ANVIL_VK_TUNE", "1", 1);
        t1 = open_idx(idx);
        if (t1) { CHECK(vk_backend_tuning(t1, tuned, sizeof tuned) == 0); t1->ops->destroy(t1); }
        unsetenv("ANVIL_VK_TUNE");
        setenv("ANVIL_VK_TUNE", "2", 1);
        CHECK(vk_backend_new(idx) == NULL && strstr(anv_last_error(), "ANVIL_VK_TUNE"));
        unsetenv("ANVIL_VK_TUNE");
        unlink(tpath);
    }

    /* 4. bad ANVIL_VK_DISABLE values */
    CHECK(vk_disable_check("fp16, subgroup,int8,sgsize") == 0 && vk_disable_check("all") == 0 && vk_disable_check("") == 0);
    CHECK(vk_disable_check("int8,bogus") == -1 && strstr(anv_last_error(), "unknown path 'bogus'"));
    setenv("ANVIL_VK_DISABLE", "subgroups", 1);
    CHECK(vk_backend_new(idx) == NULL && strstr(anv_last_error(), "ANVIL_VK_DISABLE: unknown path 'subgroups'"));
    unsetenv("ANVIL_VK_DISABLE");
    if (m) model_free(m);
    CHECKF(vk_validation_messages() == 0 || !vk_validation_active(), "%d validation messages", vk_validation_messages());
    tu_tmpdir_done(tmpl); /* the verdict and pipeline caches, the layer's and Mesa's shader caches */
    return tu_finish();
}
#else
int main(void) { CHECK(1); return tu_finish(); }
#endif
