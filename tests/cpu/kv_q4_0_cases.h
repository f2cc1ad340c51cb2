/* kv_q4_0_cases: the Q4_0 KV-cache checks every backend runs (header-only; included by
 * tests/cpu/test_kv_q4_0.c, tests/vulkan/test_vulkan_kv.c and tests/hip/hip_fake_test.c):
 *  - store_rows F32 -> Q4_0 into a view with an offset, against ref_store_rows: byte-exact
 *    (exact_store) or, on GPUs whose 1/d may differ by an ulp, decoded values within one
 *    quantization step of the reference and < 2% of the nibbles moved; blocks of zeros,
 *    of one negative value and of huge/tiny magnitudes included;
 *  - attention over Q4_0 caches the backend itself wrote, against ref_attention on the
 *    downloaded cache bytes (read exactly: rel err < 1e-4, summation order), for head_dim
 *    64/128/256, GQA 1 and 4, odd prefill lengths (1, 7, 37 tokens) at odd positions,
 *    a sliding window, softcap and noncausal; and the Q4_0 result against attention over
 *    the unquantized F32 cache (the 4-bit cost, bounded at 0.25 rel on random data);
 *  - refusals: head_dim 80 (a head not on a 32-element block boundary), a Q4_0 row of 48
 *    columns (not a block multiple). */
#ifndef ANVIL_TEST_KV_Q4_0_CASES_H
#define ANVIL_TEST_KV_Q4_0_CASES_H
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "backend.h"
#include "error.h"
#include "fp16.h"
#include "quant.h"
#include "ref_ops.h"
#include "testutil.h"

static uint64_t kvq_rng = 777;

static float *kvq_rand(int64_t n, float lo, float hi) {
    float *p = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) p[i] = tu_rand_f32(&kvq_rng, lo, hi);
    return p;
}

/* A tensor with pad rows before the view (non-zero offset); the view is *view. */
static be_tensor *kvq_make(backend *be, uint32_t type, int64_t cols, int64_t rows, int64_t pad, be_tensor *view) {
    be_tensor *t = be_tensor_new(be, type, cols, rows + pad);
    if (t) *view = be_view_rows(t, pad, rows);
    return t;
}

static be_tensor *kvq_f32(backend *be, const float *x, int64_t cols, int64_t rows, be_tensor *view) {
    be_tensor *t = kvq_make(be, QT_F32, cols, rows, 2, view);
    if (t) be_upload(view, 0, x, (size_t)(cols * rows) * sizeof(float));
    return t;
}

static void kvq_test_store(backend *be, bool exact_store) {
    const int64_t cols = 96, rows = 11, n = 5, row0 = 4; /* 3 blocks per row */
    float *src = kvq_rand(cols * n, -3, 3);
    for (int c = 0; c < 32; c++) {
        src[c] = 0.0f;                        /* row 0 block 0: zeros (d = 0) */
        src[cols + c] = -1.25f;               /* row 1 block 0: one negative value */
        src[2 * cols + c] = 3e4f * (c % 2 ? 1 : -1) * (float)(c + 1) / 32;  /* large */
        src[3 * cols + 32 + c] = 1e-6f * (float)(c - 15);                   /* tiny */
    }
    const size_t rb = qtype_row_size(QT_Q4_0, cols);
    be_tensor sv, dv;
    be_tensor *st = kvq_f32(be, src, cols, n, &sv), *dt = kvq_make(be, QT_Q4_0, cols, rows, 1, &dv);
    CHECK(st && dt);
    if (!st || !dt) { be_tensor_free(st); be_tensor_free(dt); free(src); return; }
    uint8_t *want = calloc(rows, rb), *got = malloc(rb * rows);
    be_upload(&dv, 0, want, rb * rows);
    be->ops->store_rows(be, &sv, &dv, row0, n);
    ref_store_rows(src, QT_Q4_0, want, cols, row0, n);
    be_download(&dv, 0, got, rb * rows);
    CHECKF(!be_error(be), "store_rows q4_0: %s", be_error(be));
    if (exact_store) {
        CHECKF(memcmp(got, want, rb * rows) == 0, "store_rows q4_0 not byte-exact");
    } else {
        float *a = malloc((size_t)(cols * rows) * sizeof(float)), *b = malloc((size_t)(cols * rows) * sizeof(float));
        for (int64_t r = 0; r < rows; r++) {
            dequantize_row(QT_Q4_0, got + r * rb, a + r * cols, cols);
            dequantize_row(QT_Q4_0, want + r * rb, b + r * cols, cols);
        }
        int64_t moved = 0;
        float worst = 0; /* |difference| in units of the block's step |d| */
        for (int64_t r = 0; r < rows; r++)
            for (int64_t blk = 0; blk < cols / 32; blk++) {
                const block_q4_0 *w = (const block_q4_0 *)(const void *)(want + r * rb) + blk;
                const float step = fabsf(fp16_to_fp32(w->d));
                for (int e = 0; e < 32; e++) {
                    const int64_t i = r * cols + blk * 32 + e;
                    if (a[i] != b[i]) moved++;
                    const float u = step > 0 ? fabsf(a[i] - b[i]) / step : (a[i] != b[i] ? INFINITY : 0);
                    if (u > worst) worst = u;
                }
            }
        CHECKF(worst <= 1.01f, "store_rows q4_0: a value moved by %g steps", worst);
        CHECKF(moved * 50 < cols * n, "store_rows q4_0: %lld of %lld values differ", (long long)moved, (long long)(cols * n));
        free(a); free(b);
    }
    be_tensor_free(dt);
    /* a row that is not a whole number of blocks */
    be_tensor *bad = be_tensor_new(be, QT_Q4_0, 48, 4);
    CHECK(bad == NULL);
    be_tensor_free(bad);
    be_tensor_free(st);
    free(src); free(want); free(got);
}

/* One attention case: Q4_0 caches written by the backend; returns the rel err vs ref. */
static void kvq_attn_case(backend *be, int head_dim, int ratio, int n_tok, int pos0, int window, float softcap, bool noncausal, float *worst_exact, float *worst_q4) {
    be_attn_params p = {.n_tok = n_tok, .pos0 = pos0, .n_head = 2 * ratio, .n_kv_head = 2, .head_dim = head_dim,
                        .scale = 1.0f / sqrtf((float)head_dim), .window = window, .softcap = softcap, .noncausal = noncausal};
    const int64_t q_cols = (int64_t)p.n_head * head_dim, kv_cols = (int64_t)p.n_kv_head * head_dim;
    const int ctx = pos0 + n_tok + 3;
    float *q = kvq_rand(q_cols * n_tok, -1, 1), *kf = kvq_rand(kv_cols * ctx, -2, 2), *vf = kvq_rand(kv_cols * ctx, -2, 2);
    be_tensor qv, ov, kv, vv, ksv, vsv;
    be_tensor *qt = kvq_f32(be, q, q_cols, n_tok, &qv), *ot = kvq_make(be, QT_F32, q_cols, n_tok, 1, &ov);
    be_tensor *kc = kvq_make(be, QT_Q4_0, kv_cols, ctx, 2, &kv), *vc = kvq_make(be, QT_Q4_0, kv_cols, ctx, 2, &vv);
    be_tensor *ks = kvq_f32(be, kf, kv_cols, ctx, &ksv), *vs = kvq_f32(be, vf, kv_cols, ctx, &vsv);
    CHECK(qt && ot && kc && vc && ks && vs);
    if (qt && ot && kc && vc && ks && vs) {
        be->ops->store_rows(be, &ksv, &kv, 0, ctx);
        be->ops->store_rows(be, &vsv, &vv, 0, ctx);
        be->ops->attention(be, &qv, &kv, &vv, &ov, &p);
        const size_t kv_bytes = be_nbytes(&kv);
        uint8_t *kh = malloc(kv_bytes), *vh = malloc(kv_bytes);
        be_download(&kv, 0, kh, kv_bytes);
        be_download(&vv, 0, vh, kv_bytes);
        float *got = malloc((size_t)(q_cols * n_tok) * sizeof(float)), *want = malloc((size_t)(q_cols * n_tok) * sizeof(float));
        float *exact = malloc((size_t)(q_cols * n_tok) * sizeof(float));
        be_download(&ov, 0, got, (size_t)(q_cols * n_tok) * sizeof(float));
        CHECKF(!be_error(be), "attention q4_0 hd %d: %s", head_dim, be_error(be));
        CHECK(ref_attention(q, QT_Q4_0, kh, vh, want, &p) == 0);
        CHECK(ref_attention(q, QT_F32, kf, vf, exact, &p) == 0);
        const float e = tu_rel_err(got, want, q_cols * n_tok), e4 = tu_rel_err(got, exact, q_cols * n_tok);
        CHECKF(e < 1e-4f, "attention q4_0 hd %d gqa %d n_tok %d pos0 %d window %d softcap %g noncausal %d: rel err %g",
               head_dim, ratio, n_tok, pos0, window, softcap, noncausal, e);
        CHECKF(e4 < 0.25f, "attention q4_0 hd %d: %g from the unquantized cache", head_dim, e4);
        if (e > *worst_exact) *worst_exact = e;
        if (e4 > *worst_q4) *worst_q4 = e4;
        free(kh); free(vh); free(got); free(want); free(exact);
    }
    be_tensor_free(qt); be_tensor_free(ot); be_tensor_free(kc); be_tensor_free(vc); be_tensor_free(ks); be_tensor_free(vs);
    free(q); free(kf); free(vf);
}

static void kvq_test_attention(backend *be, int max_head_dim) {
    static const int hds[3] = {64, 128, 256};
    static const int toks[3][2] = {{1, 61}, {7, 0}, {37, 13}}; /* (n_tok, pos0): decode, short and odd prefills */
    float worst = 0, worst_q4 = 0;
    for (int hi = 0; hi < 3; hi++) {
        if (hds[hi] > max_head_dim) continue;
        for (int ri = 0; ri < 2; ri++)
            for (int ti = 0; ti < 3; ti++)
                kvq_attn_case(be, hds[hi], ri ? 4 : 1, toks[ti][0], toks[ti][1], 0, 0.0f, false, &worst, &worst_q4);
        kvq_attn_case(be, hds[hi], 2, 9, 30, 16, 0.0f, false, &worst, &worst_q4);  /* sliding window */
        kvq_attn_case(be, hds[hi], 2, 9, 30, 0, 5.0f, false, &worst, &worst_q4);   /* softcap */
        kvq_attn_case(be, hds[hi], 1, 11, 0, 8, 0.0f, true, &worst, &worst_q4);    /* noncausal, symmetric window */
    }
    printf("q4_0 attention: worst rel err vs ref on the same cache %.2e, vs the unquantized cache %.3f\n", worst, worst_q4);
    /* head_dim 80: the heads do not start on block boundaries */
    be_attn_params p = {.n_tok = 1, .pos0 = 0, .n_head = 2, .n_kv_head = 2, .head_dim = 80, .scale = 0.1f};
    be_tensor qv, ov, kv, vv;
    float qz[160] = {0};
    be_tensor *qt = kvq_f32(be, qz, 160, 1, &qv), *ot = kvq_make(be, QT_F32, 160, 1, 0, &ov);
    be_tensor *kc = kvq_make(be, QT_Q4_0, 160, 4, 0, &kv), *vc = kvq_make(be, QT_Q4_0, 160, 4, 0, &vv);
    CHECK(qt && ot && kc && vc);
    if (qt && ot && kc && vc) {
        anv_set_error("%s", "");
        be->ops->attention(be, &qv, &kv, &vv, &ov, &p);
        const char *err = be_error(be) ? be_error(be) : anv_last_error();
        CHECKF(err && strstr(err, "head_dim"), "head_dim 80 on a q4_0 cache: '%s'", err ? err : "(no error)");
    }
    be_tensor_free(qt); be_tensor_free(ot); be_tensor_free(kc); be_tensor_free(vc);
}
#endif
