/* test_gptoss_ops: the backend op extensions of the gpt-oss family against ref_ops on odd
 * shapes, on the CPU backend (1 and 2 threads) and, where the build has Vulkan, on lavapipe
 * (ANVIL_VK_VALIDATE=1: the validation layer inserted, zero messages required):
 *  - glu BE_GLU_SWIGLU_OAI (ggml_swiglu_oai: gate clamped above at 7, up to [-7, 7], (up + 1));
 *  - rope with YaRN (ext_factor, attn_factor, corr_lo/hi), NEOX and NORMAL, n_rot < head_dim;
 *  - attention with sinks (F32/F16/Q8_0 caches, GQA, window, one token and a batch), sinks
 *    both below and far above the scores (the sink as the softmax max), and refusals of a
 *    sinks tensor that is too short.
 * Tolerances: glu 1e-6 relative; rope 2e-5 (1e-4 at position > 100 on Vulkan: GPU cos/sin);
 * attention 1e-4 relative (summation order). */
#include "cpu_backend.h"
#include "error.h"
#include "quant.h"
#include "ref_ops.h"
#include "testutil.h"
#include "vk_testlib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 777;

static float *rnd(int64_t n, float lo, float hi) {
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    for (int64_t i = 0; i < n; i++) p[i] = tu_rand_f32(&rng, lo, hi);
    return p;
}

/* A tensor of rows + 2 rows and a view of rows 2.. (every op must honour the offset). */
typedef struct { be_tensor *base; be_tensor view; } vt;

static vt mk(backend *be, uint32_t type, int64_t cols, int64_t rows, const float *data) {
    vt v;
    v.base = be_tensor_new(be, type, cols, rows + 2);
    v.view = be_view_rows(v.base, 2, rows);
    if (data) be_upload(&v.view, 0, data, (size_t)(cols * rows) * sizeof(float));
    return v;
}

static float *down(const be_tensor *t, int64_t n) {
    float *p = malloc((size_t)n * sizeof(float));
    be_download(t, 0, p, (size_t)n * sizeof(float));
    return p;
}

static void test_glu_oai(backend *be) {
    const int64_t n = 1001;
    float *g = rnd(n, -12, 12), *u = rnd(n, -12, 12), *want = malloc((size_t)n * sizeof(float));
    g[0] = 7.0f; g[1] = -7.0f; u[2] = 7.0f; u[3] = -7.0f; g[4] = 100.0f; u[5] = -100.0f; g[6] = -100.0f;
    vt gt = mk(be, QT_F32, n, 1, g), ut = mk(be, QT_F32, n, 1, u), ot = mk(be, QT_F32, n, 1, NULL);
    be->ops->glu(be, &gt.view, &ut.view, &ot.view, n, BE_GLU_SWIGLU_OAI);
    ref_glu(g, u, want, n, BE_GLU_SWIGLU_OAI);
    float *got = down(&ot.view, n);
    CHECKF(tu_rel_err(got, want, n) < 1e-6f, "%s glu oai rel err %g", be->name, tu_rel_err(got, want, n));
    /* the clamp is there: gate 100 acts as 7, up -100 as -7 (then (up + 1) = -6) */
    CHECKF(fabsf(want[4] - 7.0f / (1.0f + expf(-1.702f * 7.0f)) * (fminf(fmaxf(u[4], -7), 7) + 1)) < 1e-5f, "ref clamp");
    /* in place (out aliases gate) */
    be->ops->glu(be, &gt.view, &ut.view, &gt.view, n, BE_GLU_SWIGLU_OAI);
    float *got2 = down(&gt.view, n);
    CHECKF(tu_rel_err(got2, want, n) < 1e-6f, "%s glu oai in place rel err %g", be->name, tu_rel_err(got2, want, n));
    free(got); free(got2); free(g); free(u); free(want);
    be_tensor_free(gt.base); be_tensor_free(ut.base); be_tensor_free(ot.base);
}

/* ggml_rope_yarn_corr_dims for (n_rot, orig ctx 4096, base, beta 32 / 1). */
static void corr_dims(int n_rot, float base, float *lo, float *hi) {
    const float c0 = n_rot * logf(4096.0f / (32.0f * 2 * 3.14159265358979f)) / (2 * logf(base));
    const float c1 = n_rot * logf(4096.0f / (1.0f * 2 * 3.14159265358979f)) / (2 * logf(base));
    *lo = fmaxf(0.0f, floorf(c0));
    *hi = fminf((float)(n_rot - 1), ceilf(c1));
}

static void test_rope_yarn(backend *be, bool gpu) {
    const int n_head = 3, head_dim = 40;
    const int n_rots[2] = {40, 24};
    for (int tk = 0; tk < 2; tk++) {
        const int n_tok = tk ? 37 : 1, pos0 = tk ? 3 : 517;
        for (int mode = 0; mode < 2; mode++)
            for (int ri = 0; ri < 2; ri++)
                for (int af = 0; af < 2; af++) {
                    const int n_rot = n_rots[ri];
                    const int64_t n = (int64_t)n_tok * n_head * head_dim;
                    float *x = rnd(n, -1, 1);
                    vt xt = mk(be, QT_F32, n_head * head_dim, n_tok, x);
                    be_rope_params p = {.n_rot = n_rot, .mode = mode ? BE_ROPE_NEOX : BE_ROPE_NORMAL, .freq_base = 150000.0f,
                                        .freq_scale = 1.0f / 32, .ext_factor = 1.0f, .attn_factor = af ? 0.8f : 0.0f};
                    corr_dims(n_rot, p.freq_base, &p.corr_lo, &p.corr_hi);
                    be->ops->rope(be, &xt.view, n_tok, n_head, head_dim, pos0, &p);
                    ref_rope_ext(x, n_tok, n_head, head_dim, pos0, &p, NULL);
                    float *got = down(&xt.view, n);
                    const float tol = gpu && pos0 + n_tok > 100 ? 1e-4f : 2e-5f, err = tu_max_abs_diff(got, x, n);
                    CHECKF(err < tol, "%s rope yarn n_tok %d mode %d n_rot %d af %d: diff %g", be->name, n_tok, mode, n_rot, af, err);
                    free(got); free(x);
                    be_tensor_free(xt.base);
                }
    }
    /* YaRN really changes the result (the test can fail): off vs on differ */
    float *x = rnd(40, -1, 1), *y = malloc(40 * sizeof(float));
    memcpy(y, x, 40 * sizeof(float));
    be_rope_params off = {.n_rot = 40, .mode = BE_ROPE_NEOX, .freq_base = 150000.0f, .freq_scale = 1.0f / 32};
    be_rope_params on = off;
    on.ext_factor = 1.0f;
    corr_dims(40, on.freq_base, &on.corr_lo, &on.corr_hi);
    ref_rope_ext(x, 1, 1, 40, 200, &off, NULL);
    ref_rope_ext(y, 1, 1, 40, 200, &on, NULL);
    CHECK(tu_max_abs_diff(x, y, 40) > 1e-2f);
    free(x); free(y);
}

static void test_attention_sinks(backend *be) {
    const uint32_t kv_types[3] = {QT_F32, QT_F16, QT_Q8_0};
    for (int kt = 0; kt < 3; kt++)
        for (int tk = 0; tk < 2; tk++)
            for (int variant = 0; variant < 3; variant++) { /* plain, window, GQA 1 */
                be_attn_params p = {0};
                p.n_tok = tk ? 37 : 1;
                p.pos0 = tk ? 5 : 70;
                p.n_kv_head = variant == 2 ? 3 : 2;
                p.n_head = variant == 2 ? 3 : 6;
                p.head_dim = 64;
                p.scale = 1.0f / 8.0f;
                p.window = variant == 1 ? 16 : 0;
                const int64_t qc = (int64_t)p.n_head * p.head_dim, kc = (int64_t)p.n_kv_head * p.head_dim;
                const int ctx = p.pos0 + p.n_tok + 3;
                float *q = rnd(qc * p.n_tok, -2, 2), *kf = rnd(kc * ctx, -2, 2), *vf = rnd(kc * ctx, -2, 2);
                float *sk = rnd(p.n_head, -3, 3);
                sk[0] = 40.0f;   /* far above every score: the sink is the max */
                sk[1] = -40.0f;  /* negligible */
                vt qt = mk(be, QT_F32, qc, p.n_tok, q), ot = mk(be, QT_F32, qc, p.n_tok, NULL), st = mk(be, QT_F32, p.n_head, 1, sk);
                vt kcache = mk(be, kv_types[kt], kc, ctx, NULL), vcache = mk(be, kv_types[kt], kc, ctx, NULL);
                vt ks = mk(be, QT_F32, kc, ctx, kf), vs = mk(be, QT_F32, kc, ctx, vf);
                be->ops->store_rows(be, &ks.view, &kcache.view, 0, ctx);
                be->ops->store_rows(be, &vs.view, &vcache.view, 0, ctx);
                p.sinks = &st.view;
                be->ops->attention(be, &qt.view, &kcache.view, &vcache.view, &ot.view, &p);
                const size_t nb = be_nbytes(&kcache.view);
                uint8_t *kh = malloc(nb), *vh = malloc(nb);
                be_download(&kcache.view, 0, kh, nb);
                be_download(&vcache.view, 0, vh, nb);
                float *want = malloc((size_t)(qc * p.n_tok) * sizeof(float)), *nosink = malloc((size_t)(qc * p.n_tok) * sizeof(float));
                ref_attention_sinks(q, kv_types[kt], kh, vh, sk, want, &p);
                ref_attention(q, kv_types[kt], kh, vh, nosink, &p);
                float *got = down(&ot.view, qc * p.n_tok);
                const float err = tu_rel_err(got, want, qc * p.n_tok);
                CHECKF(err < 1e-4f, "%s attention sinks %s n_tok %d variant %d: rel err %g", be->name, qtype_get(kv_types[kt])->name,
                       p.n_tok, variant, err);
                /* head 0's sink swamps it; the sinks change the output (the test can fail) */
                CHECKF(fabsf(want[0]) < 1e-6f && tu_max_abs_diff(want, nosink, qc * p.n_tok) > 1e-3f, "ref sinks have no effect");
                free(q); free(kf); free(vf); free(sk); free(kh); free(vh); free(want); free(nosink); free(got);
                vt all[] = {qt, ot, st, kcache, vcache, ks, vs};
                for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) be_tensor_free(all[i].base);
            }
}

/* A sinks tensor shorter than n_head: the op records a one-line error (no crash). */
static void test_sinks_refused(backend *be) {
    be_attn_params p = {.n_tok = 1, .pos0 = 0, .n_head = 4, .n_kv_head = 2, .head_dim = 32, .scale = 0.1f};
    vt q = mk(be, QT_F32, 128, 1, NULL), o = mk(be, QT_F32, 128, 1, NULL), k = mk(be, QT_F32, 64, 2, NULL), v = mk(be, QT_F32, 64, 2, NULL);
    vt s = mk(be, QT_F32, 3, 1, NULL);
    be_tensor s3 = be_view_reshape(&s.view, 3, 1);
    p.sinks = &s3;
    be->ops->attention(be, &q.view, &k.view, &v.view, &o.view, &p);
    be_sync(be);
    const char *e = be_error(be);
    CHECKF(e && strstr(e, "sinks") && !strchr(e, '\n'), "%s: short sinks: %s", be->name, e ? e : "(no error)");
    vt all[] = {q, o, k, v, s};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) be_tensor_free(all[i].base);
}

static void run_all(backend *be, bool gpu) {
    test_glu_oai(be);
    test_rope_yarn(be, gpu);
    test_attention_sinks(be);
    CHECKF(be_error(be) == NULL, "%s sticky error: %s", be->name, be_error(be));
}

int main(void) {
    anv_log_enabled = 0;
    for (int threads = 1; threads <= 2; threads++) {
        backend *be = cpu_backend_new(threads);
        CHECK(be != NULL);
        if (!be) continue;
        run_all(be, false);
        test_sinks_refused(be);
        be->ops->destroy(be);
    }
#ifdef ANVIL_HAVE_VULKAN
    backend *vk = vkt_open_lavapipe();
    if (vk) {
        const char *v = getenv("ANVIL_VK_VALIDATE");
        if (v && strcmp(v, "1") == 0) CHECKF(vk_validation_active(), "ANVIL_VK_VALIDATE=1 but no validation messenger");
        run_all(vk, true);
        vk->ops->destroy(vk);
        vk = vkt_open_lavapipe();
        if (vk) { test_sinks_refused(vk); vk->ops->destroy(vk); }
        const char *val = getenv("ANVIL_VK_VALIDATE");
        if (val && strcmp(val, "1") == 0) CHECKF(vk_validation_messages() == 0, "%d validation messages", vk_validation_messages());
    }
#endif
    return tu_finish();
}
