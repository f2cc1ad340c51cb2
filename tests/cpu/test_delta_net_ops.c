/* test_delta_net_ops: the recurrent-layer ops of qwen35 (backend.h conv1d_state, delta_net,
 * glu BE_GLU_SIGMOID) on the CPU backend (1 and 2 threads) and, where the build has Vulkan, on
 * lavapipe (ANVIL_VK_VALIDATE=1: the validation layer inserted, zero messages required) against
 * ref_ops, on odd shapes
 * (channels 67 and 301, kernel 2..4, head_dim 19 and 64, n_v_head 6 over n_k_head 2 and 3
 * over 3) and on views with a non-zero offset:
 *  - the whole token run in one call, and the same tokens split into calls of 1, 2 and 5
 *    tokens (a prompt chunk and a decode step are the same op): outputs and final states
 *    equal the one-call reference;
 *  - refusals (a kernel that is not f32, a state of the wrong shape, n_v_head not a
 *    multiple of n_k_head) are one-line errors, not crashes.
 * Tolerances: conv 1e-6, delta 2e-5 relative (float vs double sums over head_dim); on Vulkan
 * conv 1e-5, delta 1e-4, glu 1e-5 (GPU exp); states moved by the conv are exact everywhere. */
#include "cpu_backend.h"
#include "error.h"
#include "quant.h"
#include "ref_ops.h"
#include "testutil.h"
#include "vk_testlib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 4242;
static float tol_scale = 1.0f;   /* 10 on Vulkan */

static float *rnd(int64_t n, float lo, float hi) {
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    for (int64_t i = 0; i < n; i++) p[i] = tu_rand_f32(&rng, lo, hi);
    return p;
}

typedef struct { be_tensor *base; be_tensor view; } vt;

static vt mk(backend *be, int64_t cols, int64_t rows, const float *data) {
    vt v;
    v.base = be_tensor_new(be, QT_F32, cols, rows + 2);
    v.view = be_view_rows(v.base, 2, rows);
    if (data) be_upload(&v.view, 0, data, (size_t)(cols * rows) * sizeof(float));
    return v;
}

static float *down(const be_tensor *t, int64_t n) {
    float *p = malloc((size_t)n * sizeof(float));
    be_download(t, 0, p, (size_t)n * sizeof(float));
    return p;
}

static const int splits[3] = {1, 2, 5};

static void test_conv(backend *be, int64_t ch, int k, int n_tok) {
    float *x = rnd(n_tok * ch, -2, 2), *w = rnd(ch * k, -1, 1), *st0 = rnd((k - 1) * ch, -2, 2);
    float *want = malloc((size_t)(n_tok * ch) * sizeof(float)), *wst = malloc((size_t)((k - 1) * ch) * sizeof(float));
    memcpy(wst, st0, (size_t)((k - 1) * ch) * sizeof(float));
    ref_conv1d_state(x, wst, w, want, n_tok, ch, k);
    vt xt = mk(be, ch, n_tok, x), wt = mk(be, k, ch, w), ot = mk(be, ch, n_tok, NULL);
    for (int si = -1; si < 3; si++) {   /* -1: one call */
        vt st = mk(be, ch, k - 1, st0);
        const int step = si < 0 ? n_tok : splits[si];
        for (int t = 0; t < n_tok; t += step) {
            const int n = n_tok - t < step ? n_tok - t : step;
            be_tensor xv = be_view_rows(&xt.view, t, n), ov = be_view_rows(&ot.view, t, n);
            be->ops->conv1d_state(be, &xv, &st.view, &wt.view, &ov, n);
        }
        float *got = down(&ot.view, n_tok * ch), *gst = down(&st.view, (k - 1) * ch);
        CHECKF(be_error(be) == NULL, "conv error: %s", be_error(be));
        CHECKF(tu_rel_err(got, want, n_tok * ch) < 1e-6f * tol_scale, "conv ch %lld k %d n %d step %d: out err %g", (long long)ch, k, n_tok, step,
               tu_rel_err(got, want, n_tok * ch));
        CHECKF(tu_rel_err(gst, wst, (k - 1) * ch) == 0, "conv ch %lld k %d n %d step %d: state err %g", (long long)ch, k, n_tok, step,
               tu_rel_err(gst, wst, (k - 1) * ch));
        free(got); free(gst);
        be_tensor_free(st.base);
    }
    be_tensor_free(xt.base); be_tensor_free(wt.base); be_tensor_free(ot.base);
    free(x); free(w); free(st0); free(want); free(wst);
}

static void test_delta(backend *be, int Hk, int Hv, int S, int n_tok) {
    const be_delta_params p0 = {.n_tok = n_tok, .n_k_head = Hk, .n_v_head = Hv, .head_dim = S, .eps = 1e-6f};
    const int64_t row = (int64_t)(2 * Hk + Hv) * S, sn = (int64_t)Hv * S * S, on = (int64_t)n_tok * Hv * S;
    float *qkv = rnd(n_tok * row, -1, 1), *al = rnd(n_tok * Hv, -3, 2), *bt = rnd(n_tok * Hv, -3, 3);
    float *dtb = rnd(Hv, -1, 1), *a = rnd(Hv, -2, -0.05f), *st0 = rnd(sn, -0.3f, 0.3f);
    float *want = malloc((size_t)on * sizeof(float)), *wst = malloc((size_t)sn * sizeof(float));
    memcpy(wst, st0, (size_t)sn * sizeof(float));
    ref_delta_net(qkv, al, bt, dtb, a, wst, want, &p0);
    vt qt = mk(be, row, n_tok, qkv), alt = mk(be, Hv, n_tok, al), btt = mk(be, Hv, n_tok, bt);
    vt dtt = mk(be, Hv, 1, dtb), at = mk(be, Hv, 1, a), ot = mk(be, (int64_t)Hv * S, n_tok, NULL);
    for (int si = -1; si < 3; si++) {
        vt st = mk(be, S, (int64_t)Hv * S, st0);
        const int step = si < 0 ? n_tok : splits[si];
        for (int t = 0; t < n_tok; t += step) {
            const int n = n_tok - t < step ? n_tok - t : step;
            be_delta_params p = p0;
            p.n_tok = n;
            be_tensor qv = be_view_rows(&qt.view, t, n), av = be_view_rows(&alt.view, t, n), bv = be_view_rows(&btt.view, t, n);
            be_tensor ov = be_view_rows(&ot.view, t, n);
            be->ops->delta_net(be, &qv, &av, &bv, &dtt.view, &at.view, &st.view, &ov, &p);
        }
        float *got = down(&ot.view, on), *gst = down(&st.view, sn);
        CHECKF(be_error(be) == NULL, "delta error: %s", be_error(be));
        CHECKF(tu_rel_err(got, want, on) < (tol_scale > 1 ? 1e-4f : 2e-5f), "delta Hk %d Hv %d S %d n %d step %d: out err %g", Hk, Hv, S, n_tok, step, tu_rel_err(got, want, on));
        CHECKF(tu_rel_err(gst, wst, sn) < (tol_scale > 1 ? 1e-4f : 2e-5f), "delta Hk %d Hv %d S %d n %d step %d: state err %g", Hk, Hv, S, n_tok, step, tu_rel_err(gst, wst, sn));
        free(got); free(gst);
        be_tensor_free(st.base);
    }
    be_tensor_free(qt.base); be_tensor_free(alt.base); be_tensor_free(btt.base);
    be_tensor_free(dtt.base); be_tensor_free(at.base); be_tensor_free(ot.base);
    free(qkv); free(al); free(bt); free(dtb); free(a); free(st0); free(want); free(wst);
}

static void test_glu_sigmoid(backend *be) {
    const int64_t n = 40001;
    float *g = rnd(n, -30, 30), *u = rnd(n, -2, 2), *want = malloc((size_t)n * sizeof(float));
    vt gt = mk(be, n, 1, g), ut = mk(be, n, 1, u), ot = mk(be, n, 1, NULL);
    be->ops->glu(be, &gt.view, &ut.view, &ot.view, n, BE_GLU_SIGMOID);
    ref_glu(g, u, want, n, BE_GLU_SIGMOID);
    float *got = down(&ot.view, n);
    CHECKF(tu_rel_err(got, want, n) < 1e-6f * tol_scale, "glu sigmoid err %g", tu_rel_err(got, want, n));
    free(got); free(g); free(u); free(want);
    be_tensor_free(gt.base); be_tensor_free(ut.base); be_tensor_free(ot.base);
}

/* Each refusal on a fresh backend (the first error sticks). */
static void test_refusals(void) {
    for (int c = 0; c < 3; c++) {
        backend *be = cpu_backend_new(1);
        vt x = mk(be, 8, 2, NULL), st = mk(be, 8, c == 1 ? 2 : 3, NULL), o = mk(be, 8, 2, NULL);
        be_tensor *w16 = be_tensor_new(be, c == 0 ? QT_F16 : QT_F32, 4, 8);
        if (c < 2) {
            be->ops->conv1d_state(be, &x.view, &st.view, w16, &o.view, 2);
        } else {
            be_delta_params p = {.n_tok = 1, .n_k_head = 2, .n_v_head = 3, .head_dim = 2, .eps = 1e-6f};
            be->ops->delta_net(be, &x.view, &x.view, &x.view, &x.view, &x.view, &st.view, &o.view, &p);
        }
        const char *e = be_error(be);
        CHECKF(e && strstr(e, c < 2 ? "conv1d_state" : "delta_net") && !strchr(e, '\n'), "refusal %d: %s", c, e ? e : "(none)");
        be_tensor_free(x.base); be_tensor_free(st.base); be_tensor_free(o.base); be_tensor_free(w16);
        be->ops->destroy(be);
    }
}

int main(void) {
    anv_log_enabled = 0;
    for (int threads = 1; threads <= 2; threads++) {
        backend *be = cpu_backend_new(threads);
        CHECK(be != NULL);
        if (!be) continue;
        test_conv(be, 67, 4, 13);
        test_conv(be, 301, 2, 7);
        test_conv(be, 301, 4, 1);
        test_conv(be, 2048, 4, 9);   /* split over the pool */
        test_delta(be, 2, 6, 19, 11);
        test_delta(be, 3, 3, 64, 7);
        test_delta(be, 1, 4, 32, 1);
        test_glu_sigmoid(be);
        be->ops->destroy(be);
    }
    test_refusals();
#ifdef ANVIL_HAVE_VULKAN
    backend *vk = vkt_open_lavapipe();
    if (vk) {
        const char *v = getenv("ANVIL_VK_VALIDATE");
        if (v && strcmp(v, "1") == 0) CHECKF(vk_validation_active(), "ANVIL_VK_VALIDATE=1 but no validation messenger");
        tol_scale = 10.0f;
        printf("vulkan: %s\n", vk->device_desc);
        test_conv(vk, 67, 4, 13);
        test_conv(vk, 301, 2, 7);
        test_conv(vk, 2048, 4, 9);
        test_delta(vk, 2, 6, 19, 11);
        test_delta(vk, 3, 3, 64, 7);
        test_delta(vk, 1, 4, 32, 1);
        test_delta(vk, 2, 2, 200, 3);   /* head_dim > the workgroup: rows j, j + 128 */
        test_glu_sigmoid(vk);
        vk->ops->destroy(vk);
        if (v && strcmp(v, "1") == 0) CHECKF(vk_validation_messages() == 0, "%d validation messages", vk_validation_messages());
    }
#endif
    return tu_finish();
}
