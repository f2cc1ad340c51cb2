/* test_vulkan_ops: every Vulkan op against cpu/ref_ops on odd shapes, every weight type,
 * views with non-zero offsets, on lavapipe. ctest runs it twice: with every optional
 * path the device has, with ANVIL_VK_DISABLE=all (the fallbacks) and with each optional
 * path (fp16, subgroup, int8, sgsize, wide) off alone; always with ANVIL_VK_VALIDATE=1, and zero
 * validation messages are required. The paths in use must follow ANVIL_VK_DISABLE. The
 * i-quant/ternary types run every batch size only with all paths on (one_path_run). */
#include <math.h>
#include "ref_ops.h"
#include "vk_testlib.h"

#ifdef ANVIL_HAVE_VULKAN
#include "vk_int8.h"
static uint64_t seed = 12345;
static anv_vk_paths paths;

static const uint32_t k_types[] = { VK_TEST_ALL_TYPES };
#define N_TYPES (int)(sizeof k_types / sizeof k_types[0])

static int64_t cols_for(uint32_t type) {
    const qtype_info *qi = qtype_get(type);
    if (qi->block_size == 1) return 67;          /* ragged: not a multiple of 4 or 8 */
    if (qi->block_size == 32) return 32 * 5;
    return 256 * 2;
}

static void test_device_info(backend *be) {
    anv_vk_device_info info;
    int idx = vkt_device_index();
    const bool on_gpu = getenv("ANVIL_VK_TEST_DEVICE") && *getenv("ANVIL_VK_TEST_DEVICE");
    CHECK(vk_device_info_get(idx, &info) == 0);
    CHECK(info.name[0] != 0);
    CHECK(on_gpu || info.type == ANV_VK_DEVICE_CPU);
    CHECK(info.supported && info.storage16);
    CHECK(info.max_storage_range > 0 && info.max_allocation > 0);
    CHECK(info.n_heaps > 0 && info.heaps[0].size > 0);
    CHECK(info.subgroup_size > 0);
    CHECK(vk_device_info_get(9999, &info) == -1 && strstr(anv_last_error(), "does not exist"));
    CHECK(vk_backend_new(9999) == NULL);
    printf("device: %s | %s | uma %d | max alloc %llu | max range %llu | subgroup %u | fp16 %d | int8 %d (accel %d)\n",
           be->device_desc, info.driver_info, info.uma, (unsigned long long)info.max_allocation,
           (unsigned long long)info.max_storage_range, info.subgroup_size, info.fp16, info.int8_dot, info.int8_dot_accelerated);
    printf("paths: fp16 %d subgroup %d int8 %d sgsize %d (required %u)\n", paths.fp16, paths.subgroup, paths.int8, paths.sgsize, paths.sg_required);
    const char *dis = getenv("ANVIL_VK_DISABLE");
    dis = dis ? dis : "";
    const bool all = strstr(dis, "all") != NULL;
    if (all || strstr(dis, "fp16")) CHECK(!paths.fp16);
    if (all || strstr(dis, "subgroup")) CHECK(!paths.subgroup && !paths.sgsize);
    if (all || strstr(dis, "int8")) CHECK(!paths.int8);
    if (all || strstr(dis, "sgsize")) CHECK(!paths.sgsize);
    CHECK(paths.wide == !(all || strstr(dis, "wide"))); /* weights: the repacked layout unless turned off */
    CHECK(paths.splitk == !(all || strstr(dis, "splitk"))); /* split-K decode attention unless turned off */
    if (!dis[0]) CHECK(paths.fp16 == info.fp16 && paths.int8 == info.int8_dot && paths.sgsize == info.sg_size_control);
    if (paths.sgsize) CHECK(paths.sg_required >= info.subgroup_min && paths.sg_required <= info.subgroup_max);
}

static void test_get_rows(backend *be) {
    for (int ti = 0; ti < N_TYPES; ti++) {
        uint32_t type = k_types[ti];
        int64_t cols = cols_for(type), rows = 37;
        float *w = malloc(sizeof(float) * cols * (rows + 1));
        vkt_fill(&seed, w, cols * (rows + 1), -2, 2);
        void *q = vkt_quantize(type, w, cols, rows + 1);
        be_tensor *t = be->ops->weight_new(be, type, cols, rows + 1, q); /* repacked where the type has a wide layout */
        be_tensor view = be_view_rows(t, 1, rows); /* offset view */
        int32_t ids[9] = { 0, 36, 5, 5, 17, 1, 35, 2, 20 };
        const int n_ids = 9;
        be_tensor *out = be->ops->tensor_new(be, QT_F32, cols, n_ids + 2);
        be_tensor oview = be_view_rows(out, 2, n_ids);
        be->ops->get_rows(be, &view, ids, n_ids, &oview);
        float *got = malloc(sizeof(float) * cols * n_ids), *ref = malloc(sizeof(float) * cols * n_ids);
        be_download(&oview, 0, got, sizeof(float) * cols * n_ids);
        ref_get_rows(type, (uint8_t *)q + qtype_row_size(type, cols), cols, ids, n_ids, ref);
        float err = tu_rel_err(got, ref, cols * n_ids);
        CHECKF(err < 1e-6f, "get_rows %s rel err %g", qtype_get(type)->name, err);
        free(got); free(ref); free(q); free(w);
        be_tensor_free(t); be_tensor_free(out);
    }
}

static float matmul_tol(uint32_t type, int n_tok) {
    const bool vec = n_tok <= paths.mv_max_tok;
    if (vec && paths.int8 && vkq_covers(type)) return 3e-2f; /* activation quantized to 8 bits */
    if (!vec && paths.fp16) return 4e-3f;                                        /* fp16 shared tiles */
    return 2e-5f;
}

/* The i-quant and ternary types have no code of their own on the optional paths (fp16 tiles,
 * subgroup sums, rows per workgroup are the shared kernels'): every batch size in the run
 * with all paths on, only 1 token (mat-vec) and 70 (mat-mat) in the runs that switch a path
 * (ANVIL_VK_DISABLE / ANVIL_VK_MV_ROWS), which keeps lavapipe's compile time to seconds. */
static bool one_path_run(void) {
    const char *d = getenv("ANVIL_VK_DISABLE"), *r = getenv("ANVIL_VK_MV_ROWS");
    return (d && *d) || (r && *r);
}
static bool is_iq_type(uint32_t type) {
    return type == QT_IQ4_NL || type == QT_IQ4_XS || type == QT_IQ3_XXS || type == QT_IQ3_S || type == QT_IQ2_XXS || type == QT_IQ2_XS ||
           type == QT_IQ2_S || type == QT_IQ1_S || type == QT_IQ1_M || type == QT_TQ1_0 || type == QT_TQ2_0;
}

static void test_matmul(backend *be) {
    const int toks[] = { 1, 3, 5, 7, 8, 17, 70 }; /* 5, 7: a last token tile part-filled (mul_mat_vec.comp's TT) */
    for (int ti = 0; ti < N_TYPES; ti++) {
        uint32_t type = k_types[ti];
        const bool few = is_iq_type(type) && one_path_run();
        int64_t K = cols_for(type), N = 37;
        float *w = malloc(sizeof(float) * K * (N + 2));
        vkt_fill(&seed, w, K * (N + 2), -1, 1);
        void *q = vkt_quantize(type, w, K, N + 2);
        be_tensor *wt = be->ops->weight_new(be, type, K, N + 2, q);
        be_tensor wv = be_view_rows(wt, 2, N);
        const void *qv = (uint8_t *)q + 2 * qtype_row_size(type, K);
        for (size_t k = 0; k < sizeof toks / sizeof toks[0]; k++) {
            int nt = toks[k];
            if (few && nt != 1 && nt != 70) continue;
            for (int acc = 0; acc < 2; acc++) {
                float *x = malloc(sizeof(float) * K * nt), *o0 = malloc(sizeof(float) * N * nt);
                float *got = malloc(sizeof(float) * N * nt), *ref = malloc(sizeof(float) * N * nt);
                vkt_fill(&seed, x, K * nt, -1, 1);
                vkt_fill(&seed, o0, N * nt, -1, 1);
                be_tensor *xt = be->ops->tensor_new(be, QT_F32, K, nt + 1);
                be_tensor xv = be_view_rows(xt, 1, nt);
                be_upload(&xv, 0, x, sizeof(float) * K * nt);
                be_tensor *ot = vkt_upload_new(be, QT_F32, N, nt, o0);
                be->ops->matmul(be, &wv, &xv, ot, nt, acc != 0);
                be_download(ot, 0, got, sizeof(float) * N * nt);
                memcpy(ref, o0, sizeof(float) * N * nt);
                ref_matmul(type, qv, K, N, x, ref, nt, acc != 0);
                float err = tu_rel_err(got, ref, N * nt), tol = matmul_tol(type, nt);
                CHECKF(err < tol, "matmul %s n_tok %d acc %d rel err %g (tol %g)", qtype_get(type)->name, nt, acc, err, tol);
                be_tensor_free(xt); be_tensor_free(ot);
                free(x); free(o0); free(got); free(ref);
            }
        }
        be_tensor_free(wt);
        free(q); free(w);
    }
}

static void test_norm_eltwise(backend *be) {
    /* rms_norm: 5 rows of 67 with a weight; per-head 12 rows of 16 without */
    const int64_t n = 5 * 67;
    float *x = malloc(sizeof(float) * n), *w = malloc(sizeof(float) * 67), *b = malloc(sizeof(float) * 67);
    float *got = malloc(sizeof(float) * n), *ref = malloc(sizeof(float) * n);
    vkt_fill(&seed, x, n, -3, 3); vkt_fill(&seed, w, 67, 0.5f, 1.5f); vkt_fill(&seed, b, 67, -1, 1);
    be_tensor *xt = vkt_upload_new(be, QT_F32, 67, 5, x), *wt = vkt_upload_new(be, QT_F32, 67, 1, w);
    be_tensor *bt = vkt_upload_new(be, QT_F32, 67, 1, b), *ot = be->ops->tensor_new(be, QT_F32, 67, 6);
    be_tensor ov = be_view_rows(ot, 1, 5);
    be->ops->rms_norm(be, xt, wt, &ov, 5, 67, 1e-6f);
    be_download(&ov, 0, got, sizeof(float) * n);
    ref_rms_norm(x, w, ref, 5, 67, 1e-6f);
    CHECKF(tu_rel_err(got, ref, n) < 1e-5f, "rms_norm rel err %g", tu_rel_err(got, ref, n));
    be_tensor *x2 = vkt_upload_new(be, QT_F32, 64, 3, x);
    be->ops->rms_norm(be, x2, NULL, &ov, 12, 16, 1e-5f);
    be_download(&ov, 0, got, sizeof(float) * 192);
    ref_rms_norm(x, NULL, ref, 12, 16, 1e-5f);
    CHECKF(tu_rel_err(got, ref, 192) < 1e-5f, "rms_norm per-head rel err %g", tu_rel_err(got, ref, 192));

    {   /* long odd rows: the kernel's 4-way unrolled loop and its tail (3 rows of 4099) */
        const int64_t L = 4099, nl = 3 * L;
        float *xl = malloc(sizeof(float) * nl), *wl = malloc(sizeof(float) * L), *gl = malloc(sizeof(float) * nl), *rl = malloc(sizeof(float) * nl);
        vkt_fill(&seed, xl, nl, -3, 3); vkt_fill(&seed, wl, L, 0.5f, 1.5f);
        be_tensor *xlt = vkt_upload_new(be, QT_F32, L, 3, xl), *wlt = vkt_upload_new(be, QT_F32, L, 1, wl), *olt = be->ops->tensor_new(be, QT_F32, L, 3);
        be->ops->rms_norm(be, xlt, wlt, olt, 3, L, 1e-6f);
        be_download(olt, 0, gl, sizeof(float) * nl);
        ref_rms_norm(xl, wl, rl, 3, L, 1e-6f);
        CHECKF(tu_rel_err(gl, rl, nl) < 1e-5f, "rms_norm 3x4099 rel err %g", tu_rel_err(gl, rl, nl));
        be_tensor_free(xlt); be_tensor_free(wlt); be_tensor_free(olt);
        free(xl); free(wl); free(gl); free(rl);
    }

    /* add / mul with broadcast, out aliasing a; scale in place */
    be->ops->add(be, xt, bt, xt, n, 67);
    be_download(xt, 0, got, sizeof(float) * n);
    ref_add(x, b, ref, n, 67);
    CHECKF(tu_max_abs_diff(got, ref, n) == 0.0f, "add diff %g", tu_max_abs_diff(got, ref, n));
    be->ops->mul(be, xt, bt, &ov, n, 67);
    float *ref2 = malloc(sizeof(float) * n);
    ref_mul(ref, b, ref2, n, 67);
    be_download(&ov, 0, got, sizeof(float) * n);
    CHECKF(tu_max_abs_diff(got, ref2, n) == 0.0f, "mul diff %g", tu_max_abs_diff(got, ref2, n));
    be->ops->scale(be, &ov, n, 0.37f);
    ref_scale(ref2, n, 0.37f);
    be_download(&ov, 0, got, sizeof(float) * n);
    CHECKF(tu_max_abs_diff(got, ref2, n) == 0.0f, "scale diff %g", tu_max_abs_diff(got, ref2, n));
    /* clamp into the view (offset rows), then in place; bounds inside the data's range */
    be->ops->clamp(be, xt, &ov, n, -1.1f, 0.45f);
    ref_clamp(ref, ref2, n, -1.1f, 0.45f);   /* xt holds x + b = ref */
    be_download(&ov, 0, got, sizeof(float) * n);
    CHECKF(tu_max_abs_diff(got, ref2, n) == 0.0f, "clamp diff %g", tu_max_abs_diff(got, ref2, n));
    be->ops->clamp(be, &ov, &ov, n, -0.5f, 0.25f);
    ref_clamp(ref2, ref2, n, -0.5f, 0.25f);
    be_download(&ov, 0, got, sizeof(float) * n);
    CHECKF(tu_max_abs_diff(got, ref2, n) == 0.0f, "clamp in place diff %g", tu_max_abs_diff(got, ref2, n));

    /* glu: SiLU and GELU-tanh, including large |x| */
    float *g = malloc(sizeof(float) * n);
    vkt_fill(&seed, g, n, -12, 12);
    be_tensor *gt = vkt_upload_new(be, QT_F32, 67, 5, g);
    for (int kind = 0; kind < 2; kind++) {
        be_glu_kind k = kind ? BE_GLU_GELU_TANH : BE_GLU_SILU;
        be->ops->glu(be, gt, xt, &ov, n, k);
        be_download(&ov, 0, got, sizeof(float) * n);
        ref_add(x, b, ref2, n, 67); /* xt now holds x + b */
        ref_glu(g, ref2, ref, n, k);
        float err = tu_rel_err(got, ref, n);
        CHECKF(err < 1e-5f, "glu %d rel err %g", kind, err);
    }
    be_tensor_free(xt); be_tensor_free(wt); be_tensor_free(bt); be_tensor_free(ot); be_tensor_free(x2); be_tensor_free(gt);
    free(x); free(w); free(b); free(got); free(ref); free(ref2); free(g);
}

static void test_rope(backend *be) {
    const int n_tok = 5, n_head = 3, head_dim = 24;
    const int64_t n = (int64_t)n_tok * n_head * head_dim;
    float *x = malloc(sizeof(float) * n), *got = malloc(sizeof(float) * n), *ref = malloc(sizeof(float) * n);
    float ff[8];
    vkt_fill(&seed, ff, 8, 1, 8);
    be_tensor *fft = vkt_upload_new(be, QT_F32, 8, 1, ff);
    const int pos0s[] = { 0, 7, 3000 };
    for (int mode = 0; mode < 2; mode++)
        for (int rot = 0; rot < 2; rot++)
            for (int f = 0; f < 2; f++)
                for (int pi = 0; pi < 3; pi++) {
                    int n_rot = rot ? 16 : head_dim;
                    if (f && n_rot != 16) continue;
                    vkt_fill(&seed, x, n, -1, 1);
                    be_tensor *xt = be->ops->tensor_new(be, QT_F32, n_head * head_dim, n_tok + 1);
                    be_tensor xv = be_view_rows(xt, 1, n_tok);
                    be_upload(&xv, 0, x, sizeof(float) * n);
                    be_rope_params p = { .n_rot = n_rot, .mode = mode ? BE_ROPE_NEOX : BE_ROPE_NORMAL, .freq_base = 10000.0f,
                                         .freq_scale = 0.5f, .freq_factors = f ? fft : NULL };
                    be->ops->rope(be, &xv, n_tok, n_head, head_dim, pos0s[pi], &p);
                    be_download(&xv, 0, got, sizeof(float) * n);
                    memcpy(ref, x, sizeof(float) * n);
                    ref_rope(ref, n_tok, n_head, head_dim, pos0s[pi], n_rot, p.mode, 10000.0f, 0.5f, f ? ff : NULL);
                    float err = tu_max_abs_diff(got, ref, n);
                    /* same float angle as the reference; cos/sin of a large angle differ by ~1e-5 between libm and a GPU */
                    float tol = pos0s[pi] > 100 ? 1e-4f : 2e-5f;
                    CHECKF(err < tol, "rope mode %d n_rot %d ff %d pos0 %d max diff %g", mode, n_rot, f, pos0s[pi], err);
                    be_tensor_free(xt);
                }
    be_tensor_free(fft);
    free(x); free(got); free(ref);
}

/* rope_rows against the reference: a row view (offset), odd head size, whole and partial rotation. */
static void test_rope_rows(backend *be) {
    const int n_tok = 7, n_head = 3, head_dim = 22;
    const int64_t n = (int64_t)n_tok * n_head * head_dim;
    float *x = malloc(sizeof(float) * n), *got = malloc(sizeof(float) * n), *ref = malloc(sizeof(float) * n);
    for (int rot = 0; rot < 2; rot++) {
        const int n_rot = rot ? 10 : head_dim;
        float *tab = malloc(sizeof(float) * n_tok * n_rot);
        vkt_fill(&seed, x, n, -1, 1);
        vkt_fill(&seed, tab, (int64_t)n_tok * n_rot, -1, 1);
        be_tensor *xt = be->ops->tensor_new(be, QT_F32, n_head * head_dim, n_tok + 1);
        be_tensor xv = be_view_rows(xt, 1, n_tok);
        be_upload(&xv, 0, x, sizeof(float) * n);
        be_tensor *tt = vkt_upload_new(be, QT_F32, n_rot, n_tok, tab);
        be->ops->rope_rows(be, &xv, tt, n_tok, n_head, head_dim, n_rot);
        be_download(&xv, 0, got, sizeof(float) * n);
        memcpy(ref, x, sizeof(float) * n);
        ref_rope_rows(ref, tab, n_tok, n_head, head_dim, n_rot);
        float err = tu_max_abs_diff(got, ref, n);
        CHECKF(err < 1e-6f, "rope_rows n_rot %d max diff %g", n_rot, err);
        be_tensor_free(xt);
        be_tensor_free(tt);
        free(tab);
    }
    free(x); free(got); free(ref);
}

static void test_store_rows(backend *be) {
    const uint32_t types[] = { QT_F32, QT_F16, QT_Q8_0 };
    const int64_t cols = 96, ctx = 11, n_rows = 4, row0 = 5;
    float *src = malloc(sizeof(float) * cols * n_rows);
    vkt_fill(&seed, src, cols * n_rows, -4, 4);
    src[3] = 0; src[7] = 4.0f; /* exact maxima: a half-way q */
    for (int k = 0; k < 3; k++) {
        uint32_t type = types[k];
        size_t rb = qtype_row_size(type, cols);
        uint8_t *init = calloc(ctx, rb), *got = malloc(rb * ctx), *ref = calloc(ctx, rb);
        be_tensor *st = vkt_upload_new(be, QT_F32, cols, n_rows, src);
        be_tensor *dt = vkt_upload_new(be, type, cols, ctx, init);
        be->ops->store_rows(be, st, dt, row0, n_rows);
        be_download(dt, 0, got, rb * ctx);
        ref_store_rows(src, type, ref, cols, row0, n_rows);
        float *a = malloc(sizeof(float) * cols * ctx), *b = malloc(sizeof(float) * cols * ctx);
        for (int64_t r = 0; r < ctx; r++) {
            dequantize_row(type, got + r * rb, a + r * cols, cols);
            dequantize_row(type, ref + r * rb, b + r * cols, cols);
        }
        float err = tu_max_abs_diff(a, b, cols * ctx);
        /* Q8_0: 1/d on the GPU may differ by an ulp from the CPU's, flipping a tie by one step (d <= 4/127) */
        float tol = type == QT_Q8_0 ? 4.0f / 127.0f + 1e-6f : 0.0f;
        CHECKF(err <= tol, "store_rows %s max diff %g", qtype_get(type)->name, err);
        if (type != QT_Q8_0) CHECK(memcmp(got, ref, rb * ctx) == 0);
        be_tensor_free(st); be_tensor_free(dt);
        free(init); free(got); free(ref); free(a); free(b);
    }
    free(src);
}

static void test_attention(backend *be) {
    struct { int n_tok, pos0, n_head, n_kv, hd, window; float softcap; bool noncausal; } cfg[] = {
        { 1, 20, 4, 4, 64, 0, 0 , false },     /* decode, no GQA */
        { 7, 0, 8, 2, 64, 0, 0 , false },      /* prompt, GQA 4 */
        { 5, 9, 6, 1, 32, 4, 0 , false },      /* GQA 6, sliding window */
        { 3, 70, 4, 1, 256, 0, 30.0f , false },/* head_dim 256 (gemma), softcap, > WG keys */
        { 66, 0, 2, 1, 32, 0, 0 , false },     /* many queries */
        { 9, 0, 4, 2, 64, 0, 0, true },    /* noncausal (encoders) */
        { 5, 3, 4, 4, 64, 0, 0, true },    /* noncausal after a prefix */
        { 70, 0, 2, 1, 32, 6, 0, true },   /* noncausal, symmetric window, > WG keys */
        { 1, 600, 2, 1, 64, 0, 0, false }, /* long decode, 2 heads: split-K (vk_attention.c) unless ANVIL_VK_DISABLE=splitk */
        { 2, 1000, 2, 2, 32, 300, 20.0f, false }, /* the same with a window and softcap */
    };
    const uint32_t types[] = { QT_F32, QT_F16, QT_Q8_0 };
    for (size_t ci = 0; ci < sizeof cfg / sizeof cfg[0]; ci++)
        for (int k = 0; k < 3; k++) {
            uint32_t type = types[k];
            int n_kv = cfg[ci].pos0 + cfg[ci].n_tok, ctx = n_kv + 3;
            int64_t kvc = (int64_t)cfg[ci].n_kv * cfg[ci].hd, qc = (int64_t)cfg[ci].n_head * cfg[ci].hd;
            float *kf = malloc(sizeof(float) * kvc * ctx), *vf = malloc(sizeof(float) * kvc * ctx);
            float *q = malloc(sizeof(float) * qc * cfg[ci].n_tok);
            float *got = malloc(sizeof(float) * qc * cfg[ci].n_tok), *ref = malloc(sizeof(float) * qc * cfg[ci].n_tok);
            vkt_fill(&seed, kf, kvc * ctx, -1, 1); vkt_fill(&seed, vf, kvc * ctx, -1, 1);
            vkt_fill(&seed, q, qc * cfg[ci].n_tok, -1, 1);
            void *kq = vkt_quantize(type, kf, kvc, ctx), *vq = vkt_quantize(type, vf, kvc, ctx);
            be_tensor *kt = vkt_upload_new(be, type, kvc, ctx, kq), *vt = vkt_upload_new(be, type, kvc, ctx, vq);
            be_tensor *qt = vkt_upload_new(be, QT_F32, qc, cfg[ci].n_tok, q);
            be_tensor *ot = be->ops->tensor_new(be, QT_F32, qc, cfg[ci].n_tok + 1);
            be_tensor ov = be_view_rows(ot, 1, cfg[ci].n_tok);
            be_attn_params p = { .n_tok = cfg[ci].n_tok, .pos0 = cfg[ci].pos0, .n_head = cfg[ci].n_head, .n_kv_head = cfg[ci].n_kv,
                                 .head_dim = cfg[ci].hd, .scale = 1.0f / sqrtf((float)cfg[ci].hd), .window = cfg[ci].window,
                                 .softcap = cfg[ci].softcap, .noncausal = cfg[ci].noncausal };
            be->ops->attention(be, qt, kt, vt, &ov, &p);
            be_download(&ov, 0, got, sizeof(float) * qc * cfg[ci].n_tok);
            ref_attention(q, type, kq, vq, ref, &p);
            float err = tu_max_abs_diff(got, ref, qc * cfg[ci].n_tok);
            CHECKF(err < 2e-5f, "attention cfg %zu %s max diff %g", ci, qtype_get(type)->name, err);
            be_tensor_free(kt); be_tensor_free(vt); be_tensor_free(qt); be_tensor_free(ot);
            free(kf); free(vf); free(q); free(got); free(ref); free(kq); free(vq);
        }
}

/* Bad input: a clear sticky error, no crash (on its own backend: the error is sticky).
 * The mechanism is backend.h's, shared with the CPU backend (tests/cpu/test_cpu_errors.c):
 * the text surfaces through the backend's error op as "<name>: <message>", the first
 * failure is kept, the latest one is anv_last_error(). */
static void test_bad_input(void) {
    backend *be = vkt_open_lavapipe();
    if (!be) return;
    CHECK(be->ops->error == be_sticky_error);
    /* Failed allocations are returned (NULL + anv_last_error()), never sticky. */
    CHECK(be->ops->tensor_new(be, 999, 4, 4) == NULL && strstr(anv_last_error(), "unknown"));
    CHECK(be->ops->tensor_new(be, QT_Q4_0, 33, 4) == NULL && strstr(anv_last_error(), "multiple"));
    const anv_vk_paths lim = vk_backend_paths(be);
    const int64_t huge_cols = (int64_t)(lim.max_binding / 4) + 1024; /* one F32 row above maxStorageBufferRange */
    CHECKF(be->ops->tensor_new(be, QT_F32, huge_cols, 1) == NULL && strstr(anv_last_error(), "exceeds the device's buffer limit"),
           "%s", anv_last_error());
    CHECK(be_error(be) == NULL && !be_failed(be));
    float tbl[64] = { 0 };
    be_tensor *t = vkt_upload_new(be, QT_F32, 16, 4, tbl), *o = be->ops->tensor_new(be, QT_F32, 16, 2);
    int32_t ids[2] = { 1, 7 };
    CHECK(be_error(be) == NULL);
    /* 1. A download past the end of a tensor: the first failure. */
    float dst[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
    be_download(o, be_nbytes(o) - 8, dst, sizeof dst);
    const char *e = be_error(be);
    CHECKF(e && strstr(e, "download") && strstr(e, "past the end"), "%s", e ? e : "(none)");
    CHECKF(e && !strncmp(e, be->name, strlen(be->name)) && !strncmp(e + strlen(be->name), ": ", 2), "%s", e ? e : "(none)");
    CHECK(e && strstr(anv_last_error(), "download") && strstr(e, anv_last_error()));
    CHECK(be_failed(be));
    CHECK(dst[0] == 0 && dst[7] == 0); /* the caller's buffer is never left unwritten */
    char kept[512];
    snprintf(kept, sizeof kept, "%s", e ? e : "");
    /* 2. A bad op after it (a GPU backend records nothing more once it failed): the sticky
     * error stays the first, through ops, sync and later downloads. */
    be->ops->get_rows(be, t, ids, 2, o);
    CHECKF(be_error(be) && !strcmp(be_error(be), kept), "sticky %s, first %s", be_error(be) ? be_error(be) : "(none)", kept);
    be->ops->scale(be, o, 32, 2.0f);
    be_sync(be);
    be_download(o, 0, dst, sizeof dst);
    CHECK(be_error(be) && !strcmp(be_error(be), kept));
    be_tensor_free(t); be_tensor_free(o);
    be->ops->destroy(be);

    /* The same on a fresh backend with the op failure first. */
    be = vkt_open_lavapipe();
    if (!be) return;
    t = vkt_upload_new(be, QT_F32, 16, 4, tbl);
    o = be->ops->tensor_new(be, QT_F32, 16, 2);
    be->ops->get_rows(be, t, ids, 2, o);
    e = be_error(be);
    CHECKF(e && strstr(e, "get_rows") && strstr(e, "out of range"), "%s", e ? e : "(none)");
    be_download(o, be_nbytes(o), dst, sizeof dst); /* a second failure: reported, not kept */
    CHECKF(strstr(anv_last_error(), "download"), "%s", anv_last_error());
    CHECK(be_error(be) && strstr(be_error(be), "get_rows") && !strstr(be_error(be), "download"));
    be_tensor_free(t); be_tensor_free(o);
    be->ops->destroy(be);
}
#endif

int main(void) {
#ifdef ANVIL_HAVE_VULKAN
    anv_log_enabled = 1;
    backend *be = vkt_open_lavapipe();
    if (be) {
        paths = vk_backend_paths(be);
        const char *v = getenv("ANVIL_VK_VALIDATE");
        if (v && strcmp(v, "1") == 0) CHECKF(vk_validation_active(), "ANVIL_VK_VALIDATE=1 but no validation messenger");
        test_device_info(be);
        test_get_rows(be);
        test_matmul(be);
        test_norm_eltwise(be);
        test_rope(be);
        test_rope_rows(be);
        test_store_rows(be);
        test_attention(be);
        CHECKF(be_error(be) == NULL, "sticky error: %s", be_error(be));
        be->ops->destroy(be);
        test_bad_input();
        const char *val = getenv("ANVIL_VK_VALIDATE");
        if (val && strcmp(val, "1") == 0) CHECKF(vk_validation_messages() == 0, "%d validation messages", vk_validation_messages());
    }
#else
    CHECK(1); /* built without Vulkan: nothing to test */
#endif
    return tu_finish();
}
