/* test_vulkan_fused: the Vulkan backend's fused decode ops (backend.h matmul_glu and
 * rope_store, engine/vulkan/vk_fused.c) on lavapipe, on odd shapes: against cpu/ref_ops.c
 * (the reference composed from ref_matmul + ref_glu, ref_rope_ext + ref_store_rows), and bit
 * for bit against the unfused ops on the same device. matmul_glu: every weight type, rows not
 * a multiple of the workgroup's, K odd multiples of the block, 1..11 tokens, each activation,
 * offset views. rope_store: GQA head counts, NORMAL and NEOX, partial rotation, freq factors,
 * YaRN, long positions, every cache type. The ops must decline (return false, write nothing)
 * with ANVIL_VK_DISABLE=fuse and where they do not apply. ctest runs it with every path, with
 * fuse, subgroup and int8 off; always under the validation layer, zero messages required. */
#include <math.h>
#include "ref_ops.h"
#include "vk_testlib.h"

#ifdef ANVIL_HAVE_VULKAN
static uint64_t seed = 777;
static anv_vk_paths paths;

static const uint32_t k_types[] = { VK_TEST_ALL_TYPES };
#define N_TYPES (int)(sizeof k_types / sizeof k_types[0])

static int64_t cols_for(uint32_t type) {
    const qtype_info *qi = qtype_get(type);
    if (qi->block_size == 1) return 67;          /* ragged: not a multiple of 4 or 8 */
    if (qi->block_size == 32) return 32 * 5;
    return 256 * 3;
}

/* Types the op may decline even with the path on: those of the integer-dot mat-vec (its
 * activations are quantized), Q4_K/Q5_K where their uvec4 mat-vec (vk_wide.c) has no fused twin. */
static bool may_decline(uint32_t type) {
    const bool int8_type = type == QT_Q4_0 || type == QT_Q8_0 || type == QT_Q4_1 || type == QT_Q5_0 || type == QT_Q5_1 ||
                           type == QT_Q4_K || type == QT_Q5_K || type == QT_Q6_K;
    return (paths.int8 && int8_type) || type == QT_Q4_K || type == QT_Q5_K;
}

static void test_matmul_glu(backend *be) {
    const int toks[] = { 1, 3, 6, 11 }; /* 6: NTOK 8 with a part-filled last token tile; 11: a pass of 8 tokens, then 3 */
    int n_fused = 0;
    for (int ti = 0; ti < N_TYPES; ti++) {
        const uint32_t type = k_types[ti];
        const int64_t K = cols_for(type), N = 37;
        const size_t rb = qtype_row_size(type, K);
        float *w = malloc(sizeof(float) * K * (N + 2) * 2);
        vkt_fill(&seed, w, K * (N + 2) * 2, -1, 1);
        void *qg = vkt_quantize(type, w, K, N + 2), *qu = vkt_quantize(type, w + K * (N + 2), K, N + 2);
        be_tensor *gt = be->ops->weight_new(be, type, K, N + 2, qg), *ut = be->ops->weight_new(be, type, K, N + 1, qu);
        be_tensor gv = be_view_rows(gt, 2, N), uv = be_view_rows(ut, 1, N); /* views at different offsets */
        const void *qgv = (uint8_t *)qg + 2 * rb, *quv = (uint8_t *)qu + rb;
        for (size_t k = 0; k < sizeof toks / sizeof toks[0]; k++) {
            const int nt = toks[k];
            const be_glu_kind kind = (be_glu_kind)((ti + (int)k) % 3);
            float *x = malloc(sizeof(float) * K * nt), *got = malloc(sizeof(float) * N * nt), *unf = malloc(sizeof(float) * N * nt);
            float *ref = malloc(sizeof(float) * N * nt), *ru = malloc(sizeof(float) * N * nt);
            vkt_fill(&seed, x, K * nt, -1, 1);
            be_tensor *xt = be->ops->tensor_new(be, QT_F32, K, nt + 1);
            be_tensor xv = be_view_rows(xt, 1, nt);
            be_upload(&xv, 0, x, sizeof(float) * K * nt);
            for (int64_t i = 0; i < N * nt; i++) got[i] = -123.0f;
            be_tensor *ot = vkt_upload_new(be, QT_F32, N, nt, got);
            be_tensor *g2 = be->ops->tensor_new(be, QT_F32, N, nt), *u2 = be->ops->tensor_new(be, QT_F32, N, nt);
            const bool ok = be->ops->matmul_glu(be, &gv, &uv, &xv, ot, nt, kind);
            be_download(ot, 0, got, sizeof(float) * N * nt);
            /* the unfused sequence of the forward pass */
            be->ops->matmul(be, &gv, &xv, g2, nt, false);
            be->ops->matmul(be, &uv, &xv, u2, nt, false);
            be->ops->glu(be, g2, u2, g2, N * nt, kind);
            be_download(g2, 0, unf, sizeof(float) * N * nt);
            ref_matmul(type, qgv, K, N, x, ref, nt, false);
            ref_matmul(type, quv, K, N, x, ru, nt, false);
            ref_glu(ref, ru, ref, N * nt, kind);
            const char *tn = qtype_get(type)->name;
            if (!paths.fuse) CHECKF(!ok, "matmul_glu %s ran with the fuse path off", tn);
            else if (!may_decline(type)) CHECKF(ok, "matmul_glu %s n_tok %d declined", tn, nt);
            if (ok) {
                n_fused++;
                const float err = tu_rel_err(got, ref, N * nt);
                CHECKF(err < 1e-4f, "matmul_glu %s n_tok %d kind %d rel err %g", tn, nt, (int)kind, err);
                CHECKF(memcmp(got, unf, sizeof(float) * N * nt) == 0, "matmul_glu %s n_tok %d kind %d: not bit-identical to matmul+matmul+glu (rel diff %g)",
                       tn, nt, (int)kind, tu_rel_err(got, unf, N * nt));
            } else {
                bool untouched = true;
                for (int64_t i = 0; i < N * nt; i++) untouched &= got[i] == -123.0f;
                CHECKF(untouched, "matmul_glu %s declined but wrote its output", tn);
            }
            be_tensor_free(xt); be_tensor_free(ot); be_tensor_free(g2); be_tensor_free(u2);
            free(x); free(got); free(unf); free(ref); free(ru);
        }
        /* declined: mismatched weights, batches beyond the mat-vec kernels */
        be_tensor *xt = be->ops->tensor_new(be, QT_F32, K, paths.mv_max_tok + 1), *ot = be->ops->tensor_new(be, QT_F32, N + 2, paths.mv_max_tok + 1);
        be_tensor g1 = be_view_rows(gt, 0, N + 1);
        CHECK(!be->ops->matmul_glu(be, &g1, &uv, xt, ot, 1, BE_GLU_SILU));
        CHECK(!be->ops->matmul_glu(be, &gv, &uv, xt, ot, paths.mv_max_tok + 1, BE_GLU_SILU));
        be_tensor_free(xt); be_tensor_free(ot);
        be_tensor_free(gt); be_tensor_free(ut);
        free(qg); free(qu); free(w);
    }
    printf("matmul_glu: %d fused cases\n", n_fused);
    if (paths.fuse) CHECK(n_fused > 30);
}

typedef struct { int n_tok, n_head, n_kv, hd, n_rot; be_rope_mode mode; bool ff, yarn; int pos0; } rs_cfg;

static void test_rope_store(backend *be) {
    const rs_cfg cfg[] = {
        { 1, 4, 2, 64, 64, BE_ROPE_NEOX, false, false, 37 },   /* decode, GQA 2 */
        { 3, 6, 2, 32, 16, BE_ROPE_NORMAL, true, false, 5 },   /* partial rotation, freq factors */
        { 5, 3, 3, 96, 96, BE_ROPE_NORMAL, false, false, 3000 },
        { 2, 8, 1, 128, 64, BE_ROPE_NEOX, true, false, 100 },  /* MQA */
        { 4, 3, 1, 24, 24, BE_ROPE_NEOX, false, false, 7 },    /* head_dim not a block multiple: F32/F16 only */
        { 1, 4, 2, 64, 64, BE_ROPE_NEOX, false, true, 300 },   /* YaRN */
    };
    const uint32_t kvt[] = { QT_F32, QT_F16, QT_Q8_0, QT_Q4_0 };
    float ff[64];
    vkt_fill(&seed, ff, 64, 1, 8);
    be_tensor *fft = vkt_upload_new(be, QT_F32, 64, 1, ff);
    int n_fused = 0;
    for (size_t ci = 0; ci < sizeof cfg / sizeof cfg[0]; ci++) {
        const rs_cfg *c = &cfg[ci];
        const int64_t qd = (int64_t)c->n_head * c->hd, kvd = (int64_t)c->n_kv * c->hd, ctx = c->pos0 + c->n_tok + 2;
        be_rope_params p = { .n_rot = c->n_rot, .mode = c->mode, .freq_base = 10000.0f, .freq_scale = 0.5f, .freq_factors = c->ff ? fft : NULL };
        if (c->yarn) { p.freq_scale = 0.25f; p.ext_factor = 1.0f; p.attn_factor = 1.0f; p.corr_lo = 4.0f; p.corr_hi = 20.0f; }
        for (int ki = 0; ki < 4; ki++) {
            const uint32_t type = kvt[ki];
            const bool quant = type == QT_Q8_0 || type == QT_Q4_0;
            if (quant && c->hd % 32) continue;
            const size_t rb = qtype_row_size(type, kvd);
            float *q = malloc(sizeof(float) * qd * c->n_tok), *kv = malloc(sizeof(float) * kvd * c->n_tok * 2);
            vkt_fill(&seed, q, qd * c->n_tok, -1, 1);
            vkt_fill(&seed, kv, kvd * c->n_tok * 2, -3, 3);
            const float *k = kv, *v = kv + kvd * c->n_tok;
            /* fused: q, k, v as offset views; caches zero */
            uint8_t *zero = calloc((size_t)ctx, rb), *kc1 = malloc(ctx * rb), *vc1 = malloc(ctx * rb), *kc2 = malloc(ctx * rb), *vc2 = malloc(ctx * rb);
            be_tensor *qt = be->ops->tensor_new(be, QT_F32, qd, c->n_tok + 1), *kt = be->ops->tensor_new(be, QT_F32, kvd, c->n_tok * 2 + 1);
            be_tensor qv = be_view_rows(qt, 1, c->n_tok), kv_k = be_view_rows(kt, 1, c->n_tok), kv_v = be_view_rows(kt, 1 + c->n_tok, c->n_tok);
            be_upload(&qv, 0, q, sizeof(float) * qd * c->n_tok);
            be_upload(&kv_k, 0, kv, sizeof(float) * kvd * c->n_tok * 2);
            be_tensor *kct = vkt_upload_new(be, type, kvd, ctx, zero), *vct = vkt_upload_new(be, type, kvd, ctx, zero);
            const bool ok = be->ops->rope_store(be, &qv, &kv_k, &kv_v, kct, vct, c->n_tok, c->n_head, c->n_kv, c->hd, c->pos0, &p);
            float *q1 = malloc(sizeof(float) * qd * c->n_tok), *k1 = malloc(sizeof(float) * kvd * c->n_tok);
            be_download(&qv, 0, q1, sizeof(float) * qd * c->n_tok);
            be_download(&kv_k, 0, k1, sizeof(float) * kvd * c->n_tok);
            be_download(kct, 0, kc1, ctx * rb);
            be_download(vct, 0, vc1, ctx * rb);
            /* unfused, the forward pass's sequence, on fresh copies */
            be_tensor *qt2 = vkt_upload_new(be, QT_F32, qd, c->n_tok, q), *kt2 = vkt_upload_new(be, QT_F32, kvd, c->n_tok, k);
            be_tensor *vt2 = vkt_upload_new(be, QT_F32, kvd, c->n_tok, v);
            be_tensor *kct2 = vkt_upload_new(be, type, kvd, ctx, zero), *vct2 = vkt_upload_new(be, type, kvd, ctx, zero);
            be->ops->rope(be, qt2, c->n_tok, c->n_head, c->hd, c->pos0, &p);
            be->ops->rope(be, kt2, c->n_tok, c->n_kv, c->hd, c->pos0, &p);
            be->ops->store_rows(be, kt2, kct2, c->pos0, c->n_tok);
            be->ops->store_rows(be, vt2, vct2, c->pos0, c->n_tok);
            float *q2 = malloc(sizeof(float) * qd * c->n_tok);
            be_download(qt2, 0, q2, sizeof(float) * qd * c->n_tok);
            be_download(kct2, 0, kc2, ctx * rb);
            be_download(vct2, 0, vc2, ctx * rb);
            const char *tn = qtype_get(type)->name;
            if (!paths.fuse) CHECKF(!ok, "rope_store %s ran with the fuse path off", tn);
            else CHECKF(ok, "rope_store cfg %zu %s declined", ci, tn);
            if (ok) {
                n_fused++;
                CHECKF(memcmp(q1, q2, sizeof(float) * qd * c->n_tok) == 0, "rope_store cfg %zu %s: q differs from rope (max %g)", ci, tn,
                       tu_max_abs_diff(q1, q2, qd * c->n_tok));
                CHECKF(memcmp(kc1, kc2, ctx * rb) == 0, "rope_store cfg %zu %s: K cache differs from rope + store_rows", ci, tn);
                CHECKF(memcmp(vc1, vc2, ctx * rb) == 0, "rope_store cfg %zu %s: V cache differs from store_rows", ci, tn);
                CHECKF(memcmp(k1, k, sizeof(float) * kvd * c->n_tok) == 0, "rope_store cfg %zu %s changed k", ci, tn);
                /* against the reference: q roped, the cache rows of rope(k) and v */
                float *qr = malloc(sizeof(float) * qd * c->n_tok), *kr = malloc(sizeof(float) * kvd * c->n_tok);
                memcpy(qr, q, sizeof(float) * qd * c->n_tok);
                memcpy(kr, k, sizeof(float) * kvd * c->n_tok);
                CHECK(ref_rope_ext(qr, c->n_tok, c->n_head, c->hd, c->pos0, &p, c->ff ? ff : NULL) == 0);
                CHECK(ref_rope_ext(kr, c->n_tok, c->n_kv, c->hd, c->pos0, &p, c->ff ? ff : NULL) == 0);
                const float rtol = c->pos0 > 1000 ? 3e-4f : c->pos0 > 100 ? 1e-4f : 2e-5f; /* cos/sin of large angles: libm vs the device */
                CHECKF(tu_max_abs_diff(q1, qr, qd * c->n_tok) < rtol, "rope_store cfg %zu q vs reference max %g", ci, tu_max_abs_diff(q1, qr, qd * c->n_tok));
                uint8_t *kref = calloc((size_t)ctx, rb), *vref = calloc((size_t)ctx, rb);
                ref_store_rows(kr, type, kref, kvd, c->pos0, c->n_tok);
                ref_store_rows(v, type, vref, kvd, c->pos0, c->n_tok);
                float *a = malloc(sizeof(float) * kvd * ctx), *b = malloc(sizeof(float) * kvd * ctx);
                for (int which = 0; which < 2; which++) {
                    const uint8_t *g = which ? vc1 : kc1, *r = which ? vref : kref;
                    for (int64_t row = 0; row < ctx; row++) {
                        dequantize_row(type, g + row * rb, a + row * kvd, kvd);
                        dequantize_row(type, r + row * rb, b + row * kvd, kvd);
                    }
                    /* quantized: a rounding tie may flip one step; F16: rope's last-bit differences */
                    const float err = tu_rel_err(a, b, kvd * ctx), tol = quant ? 2e-2f : type == QT_F16 ? 1e-3f : 1e-4f;
                    CHECKF(err < tol, "rope_store cfg %zu %s %s cache vs reference rel err %g", ci, tn, which ? "V" : "K", err);
                }
                free(a); free(b); free(kref); free(vref); free(qr); free(kr);
            } else {
                CHECKF(memcmp(kc1, zero, ctx * rb) == 0 && memcmp(vc1, zero, ctx * rb) == 0 && memcmp(q1, q, sizeof(float) * qd * c->n_tok) == 0,
                       "rope_store %s declined but wrote", tn);
            }
            /* declined: positions past the cache, a cache type mismatch */
            CHECK(!be->ops->rope_store(be, &qv, &kv_k, &kv_v, kct, vct, c->n_tok, c->n_head, c->n_kv, c->hd, (int)ctx, &p));
            if (ki > 0) {
                be_tensor *other = be->ops->tensor_new(be, QT_F32, kvd, ctx);
                CHECK(!be->ops->rope_store(be, &qv, &kv_k, &kv_v, kct, other, c->n_tok, c->n_head, c->n_kv, c->hd, c->pos0, &p));
                be_tensor_free(other);
            }
            be_tensor_free(qt); be_tensor_free(kt); be_tensor_free(kct); be_tensor_free(vct);
            be_tensor_free(qt2); be_tensor_free(kt2); be_tensor_free(vt2); be_tensor_free(kct2); be_tensor_free(vct2);
            free(q); free(kv); free(zero); free(kc1); free(vc1); free(kc2); free(vc2); free(q1); free(k1); free(q2);
        }
    }
    be_tensor_free(fft);
    printf("rope_store: %d fused cases\n", n_fused);
    if (paths.fuse) CHECK(n_fused >= 20);
}

int main(void) {
    anv_log_enabled = 0;
    backend *be = vkt_open_lavapipe();
    if (!be) return tu_finish();
    paths = vk_backend_paths(be);
    const char *dis = getenv("ANVIL_VK_DISABLE");
    dis = dis ? dis : "";
    printf("paths: fuse %d subgroup %d int8 %d (ANVIL_VK_DISABLE=%s)\n", paths.fuse, paths.subgroup, paths.int8, dis);
    if (strstr(dis, "fuse") || strstr(dis, "all")) CHECK(!paths.fuse);
    CHECK(be->ops->matmul_glu != NULL && be->ops->rope_store != NULL);
    test_matmul_glu(be);
    test_rope_store(be);
    CHECKF(!be_error(be), "backend error: %s", be_error(be));
    be->ops->destroy(be);
    CHECKF(vk_validation_messages() == 0 || !vk_validation_active(), "%d validation messages", vk_validation_messages());
    return tu_finish();
}
#else
int main(void) { CHECK(1); return tu_finish(); }
#endif
