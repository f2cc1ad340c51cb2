/* test_backend_errors: errors from the backends reach the caller; none exits the process.
 *  - ANVIL_CPU_SIMD=bogus: cpu_backend_new returns NULL and cpu_backend_simd() NULL, with a
 *    one-line anv_last_error() naming the variable and the allowed values; the device list
 *    marks the CPU, device_list_select fails with the message, doctor reports it as an
 *    environment-variable problem and model loading fails with it (the CLI's exit status and
 *    line: tests/cli/bad_input.py, tests/device/check_devices.py).
 *  - One sticky-error mechanism (backend.h) on the CPU backend and on the Vulkan backend
 *    (lavapipe, validation layer on, zero messages): an op failure surfaces through the
 *    backend's error op as "<name>: <message>", the first failure is kept, and the forward
 *    pass (model_eval) fails with it on either backend.
 * Models from $ANVIL_TEST_MODELS (tests/model/models.cmake). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"
#include "device.h"
#include "doctor.h"
#include "model.h"
#include "model_place.h"
#include "quant.h"
#include "vk_testlib.h"

static const char *or_none(const char *s) { return s ? s : "(none)"; }

/* The message of a bad ANVIL_CPU_SIMD: one line naming the variable, its value and the choices. */
static bool simd_message(const char *m, const char *value) {
    char want[64];
    snprintf(want, sizeof want, "ANVIL_CPU_SIMD=%s ", value);
    return m && strstr(m, want) && strstr(m, "scalar, avx2, avx512") && !strchr(m, '\n');
}

static void test_bad_simd(const char *model_path) {
    setenv("ANVIL_CPU_SIMD", "bogus", 1);
    anv_set_error("(none)");
    CHECK(cpu_backend_new(1) == NULL);
    CHECKF(simd_message(anv_last_error(), "bogus"), "%s", anv_last_error());
    anv_set_error("(none)");
    CHECK(cpu_backend_simd() == NULL);
    CHECKF(simd_message(anv_last_error(), "bogus"), "%s", anv_last_error());

    /* The device layer: the CPU entry says why, the selection fails like a bad selection variable. */
    device_registry_use_builtin(false); /* only the CPU: no Vulkan probe here */
    device_list *l = device_list_probe();
    CHECK(l != NULL);
    if (l) {
        int cpu = device_list_find(l, "cpu");
        CHECK(cpu >= 0);
        if (cpu >= 0) {
            CHECK(!l->dev[cpu].supported);
            CHECKF(simd_message(l->dev[cpu].unsupported_why, "bogus"), "%s", l->dev[cpu].unsupported_why);
        }
        device_env env;
        device_env_from_process(&env);
        int rc = device_list_select(l, &env);
        CHECK(rc == -1);
        CHECKF(simd_message(anv_last_error(), "bogus"), "%s", anv_last_error());
        char err[512];
        snprintf(err, sizeof err, "%s", anv_last_error());
        static doctor_facts facts;
        static doctor_finding found[DOCTOR_MAX_FINDINGS];
        doctor_gather(&facts, l, rc, err);
        int n = doctor_check(&facts, found, DOCTOR_MAX_FINDINGS), hits = 0;
        for (int i = 0; i < n; i++)
            hits += found[i].level == DOC_PROBLEM && strstr(found[i].title, "Environment variable error: ANVIL_CPU_SIMD=bogus") != NULL;
        CHECKF(hits == 1, "%d doctor findings name ANVIL_CPU_SIMD", hits);
        device_list_free(l);
    }
    /* Loading a model: NULL with the message, the process goes on. */
    anv_set_error("(none)");
    model *m = model_load_with(model_path, 1, NULL, 0);
    CHECK(m == NULL);
    CHECKF(simd_message(anv_last_error(), "bogus"), "%s", anv_last_error());
    model_free(m);

    /* Case does not matter; an empty value is unset; the hardware caps the request. */
    setenv("ANVIL_CPU_SIMD", "SCALAR", 1);
    CHECK(cpu_backend_simd() && !strcmp(cpu_backend_simd(), "scalar"));
    backend *be = cpu_backend_new(1);
    CHECK(be && strstr(be->device_desc, "scalar kernels"));
    if (be) be->ops->destroy(be);
    setenv("ANVIL_CPU_SIMD", "", 1);
    const char *best = cpu_backend_simd();
    CHECK(best != NULL);
    setenv("ANVIL_CPU_SIMD", "avx512", 1);
    CHECK(cpu_backend_simd() && best && !strcmp(cpu_backend_simd(), best));
    unsetenv("ANVIL_CPU_SIMD");
    CHECK(cpu_backend_simd() && best && !strcmp(cpu_backend_simd(), best));
    device_registry_use_builtin(true);
}

/* be's sticky error is "<be->name>: ..." and contains what. */
static bool sticky_is(backend *be, const char *what) {
    const char *e = be_error(be);
    size_t n = strlen(be->name);
    return e && !strncmp(e, be->name, n) && !strncmp(e + n, ": ", 2) && strstr(e, what);
}

/* The CPU backend: a download past the end is the first failure, then an upload past the
 * end and an op with a bad id: each becomes anv_last_error(), the first stays sticky. */
static void test_cpu_sticky(void) {
    backend *be = cpu_backend_new(1);
    CHECK(be != NULL);
    if (!be) return;
    CHECK(be->ops->error == be_sticky_error);
    CHECK(be_error(be) == NULL && !be_failed(be));
    float tbl[64] = { 0 }, dst[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
    be_tensor *t = be->ops->tensor_new(be, QT_F32, 16, 4), *o = be->ops->tensor_new(be, QT_F32, 16, 2);
    be_upload(t, 0, tbl, sizeof tbl);
    CHECK(be_error(be) == NULL);
    be_download(o, be_nbytes(o) - 8, dst, sizeof dst);
    CHECKF(sticky_is(be, "cpu download: 32 bytes at 120 overflow a 128-byte tensor"), "%s", or_none(be_error(be)));
    CHECK(be_failed(be) && be_error(be) && strstr(be_error(be), anv_last_error()));
    CHECK(dst[0] == 0 && dst[7] == 0); /* never left unwritten */
    char kept[512];
    snprintf(kept, sizeof kept, "%s", or_none(be_error(be)));
    be_upload(o, 1, tbl, be_nbytes(o));
    CHECKF(strstr(anv_last_error(), "cpu upload"), "%s", anv_last_error());
    int32_t ids[2] = { 1, 7 };
    be->ops->get_rows(be, t, ids, 2, o);
    CHECKF(strstr(anv_last_error(), "cpu get_rows: id 7 out of range"), "%s", anv_last_error());
    CHECKF(be_error(be) && !strcmp(be_error(be), kept), "sticky %s, first %s", or_none(be_error(be)), kept);
    be_tensor_free(t);
    be_tensor_free(o);
    be->ops->destroy(be);

    /* The op failure first: kept over the download after it. */
    be = cpu_backend_new(1);
    if (!be) return;
    t = be->ops->tensor_new(be, QT_F32, 16, 4);
    o = be->ops->tensor_new(be, QT_F32, 16, 2);
    be_upload(t, 0, tbl, sizeof tbl);
    be->ops->get_rows(be, t, ids, 2, o);
    CHECKF(sticky_is(be, "get_rows: id 7 out of range [0, 4)"), "%s", or_none(be_error(be)));
    be_download(o, be_nbytes(o), dst, sizeof dst);
    CHECK(sticky_is(be, "get_rows") && !strstr(be_error(be), "download"));
    be_tensor_free(t);
    be_tensor_free(o);
    be->ops->destroy(be);
}

/* The forward pass checks every backend's sticky error the same way: one good step, then a
 * failure on be (the CPU backend, or the GPU that holds every layer) fails model_eval with it. */
static void test_forward(const char *path, backend *gpu) {
    model *m = model_load_with(path, 1, gpu, -1);
    CHECKF(m != NULL, "%s: %s", path, anv_last_error());
    if (!m) return;
    backend *be = gpu ? gpu : m->cpu;
    printf("forward pass on %s (%s)\n", be->name, be->device_desc);
    model_ctx *c = model_ctx_new(m, 32, QT_F16);
    float *logits = malloc(sizeof(float) * (size_t)m->hp.n_vocab);
    int32_t toks[2] = { 1, 2 };
    CHECK(c && logits);
    if (c && logits) {
        CHECKF(model_eval(c, toks, 2, logits, false) == 0, "%s: %s", be->name, anv_last_error());
        be_tensor *x = be->ops->tensor_new(be, QT_F32, 32, 1);
        float buf[64];
        if (x) be_download(x, 0, buf, sizeof buf); /* past the end: the backend's first failure */
        CHECKF(sticky_is(be, "download"), "%s", or_none(be_error(be)));
        char kept[512];
        snprintf(kept, sizeof kept, "%s", or_none(be_error(be)));
        anv_set_error("(none)");
        CHECK(model_eval(c, toks, 1, logits, false) == -1);
        CHECKF(!strcmp(anv_last_error(), kept), "model_eval: %s, sticky: %s", anv_last_error(), kept);
        CHECK(model_eval(c, toks, 1, logits, false) == -1); /* and stays failed */
        be_tensor_free(x);
    }
    free(logits);
    model_ctx_free(c);
    model_free(m);
}

int main(void) {
    anv_log_enabled = 0;
    const char *dir = getenv("ANVIL_TEST_MODELS");
    char path[1024];
    snprintf(path, sizeof path, "%s/llama-tiny-f32.gguf", dir ? dir : "test-models");
    test_bad_simd(path);
    test_cpu_sticky();
    test_forward(path, NULL);
#ifdef ANVIL_HAVE_VULKAN
    backend *gpu = vkt_open_lavapipe();
    if (gpu) {
        test_forward(path, gpu);
        gpu->ops->destroy(gpu);
        const char *val = getenv("ANVIL_VK_VALIDATE");
        if (val && strcmp(val, "1") == 0) CHECKF(vk_validation_messages() == 0, "%d validation messages", vk_validation_messages());
    }
#endif
    return tu_finish();
}
