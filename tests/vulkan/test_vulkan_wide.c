/* test_vulkan_wide: the repacked weight layout (engine/vulkan/vk_wide.c) and the kernels
 * that read it, against cpu/ref_ops on lavapipe: every repacked type (Q4_0, Q4_1, Q5_0,
 * Q5_1, Q8_0, Q6_K) and the uvec4 mat-vec of Q4_K / Q5_K (GGUF layout) on odd shapes (K not a multiple of 256 and rows not 16-byte multiples, so
 * the row padding is exercised; rows not a multiple of any ROWS variant), mat-vec at 1..8
 * tokens and the tiled kernel, with and without accumulate, get_rows, row views, weight
 * downloads (unpacked back to the GGUF bytes), the row stride helper, identical results
 * from every rows-per-workgroup variant, and a reshaped view as a clear error. ctest runs
 * it with every path, with ANVIL_VK_DISABLE=wide (the GGUF layout: no "_w" kernel may run),
 * =all, and with 64 KiB allocations (the tall weights split into row chunks); always under
 * the validation layer with zero messages. */
#include <math.h>
#include "ref_ops.h"
#include "vk_testlib.h"
#ifdef ANVIL_HAVE_VULKAN
#include "vk_int8.h"
#include "vk_wide.h"

static uint64_t seed = 777;
static anv_vk_paths paths;
static const uint32_t k_types[] = { QT_Q4_0, QT_Q4_1, QT_Q5_0, QT_Q5_1, QT_Q8_0 };
#define N_TYPES (int)(sizeof k_types / sizeof k_types[0])

static float tol_for(uint32_t type, int n_tok) {
    const bool vec = n_tok <= paths.mv_max_tok;
    if (vec && paths.int8 && vkq_covers(type)) return 3e-2f;
    if (!vec && paths.fp16) return 4e-3f;
    return 2e-5f;
}

/* Kernels run since the last call contain a "_w" variant. */
static bool ran_wide(backend *be) {
    char k[2048];
    vk_backend_take_kernels(be, k, sizeof k);
    return strstr(k, "_w,") || strstr(k, "_w_") || (strlen(k) > 2 && !strcmp(k + strlen(k) - 2, "_w"));
}

static void test_stride_and_pack(void) {
    for (int ti = 0; ti < N_TYPES; ti++) {
        const uint32_t type = k_types[ti];
        const int64_t cols_list[3] = { 32, 224, 1184 };
        for (int k = 0; k < 3; k++) {
            const int64_t cols = cols_list[k];
            const size_t rb = qtype_row_size(type, cols), st = vkw_row_stride(type, cols);
            CHECKF(st % 16 == 0 && st >= rb && st - rb < 16, "%s cols %lld: stride %zu for rows of %zu", qtype_get(type)->name, (long long)cols, st, rb);
            uint8_t *src = malloc(rb * 3), *packed = malloc(st * 3), *back = malloc(rb * 3);
            for (size_t i = 0; i < rb * 3; i++) src[i] = (uint8_t)(i * 131 + 7);
            memset(packed, 0xee, st * 3);
            vkw_pack_rows(type, cols, src, packed, 3);
            vkw_unpack_rows(type, cols, packed, back, 3);
            CHECKF(!memcmp(src, back, rb * 3), "%s pack/unpack round trip", qtype_get(type)->name);
            for (size_t i = rb; i < st; i++) CHECK(packed[i] == 0); /* padding zeroed */
            /* block 1's quants start at a 16-byte boundary right after block 0's */
            const size_t q = type == QT_Q8_0 ? 32 : 16, blk = qtype_row_size(type, 32);
            if (cols >= 64) CHECK(!memcmp(packed + q, src + blk + (blk - q), q));
            free(src); free(packed); free(back);
        }
    }
    CHECK(vkw_row_stride(QT_Q4_K, 256) == 0 && vkw_row_stride(QT_F16, 64) == 0 && vkw_row_stride(QT_Q4_0, 48) == 0);
    CHECK(vkw_row_stride(QT_Q6_K, 288) == 0 && vkw_row_stride(QT_Q6_K, 256) == 224 && vkw_row_stride(QT_Q6_K, 768) == 640);
    /* Q6_K: per block ql + qh (192 bytes, the start of its GGUF block), then scales + d (18) */
    const int64_t cols = 768, nb = 3;
    const size_t rb = qtype_row_size(QT_Q6_K, cols), st = vkw_row_stride(QT_Q6_K, cols);
    uint8_t *src = malloc(rb * 3), *packed = malloc(st * 3), *back = malloc(rb * 3);
    for (size_t i = 0; i < rb * 3; i++) src[i] = (uint8_t)(i * 131 + 7);
    memset(packed, 0xee, st * 3);
    vkw_pack_rows(QT_Q6_K, cols, src, packed, 3);
    vkw_unpack_rows(QT_Q6_K, cols, packed, back, 3);
    CHECK(!memcmp(src, back, rb * 3));
    for (int64_t r = 0; r < 3; r++) {
        const uint8_t *s = src + r * rb, *d = packed + r * st;
        for (int64_t b = 0; b < nb; b++) {
            CHECKF(!memcmp(d + b * 192, s + b * 210, 192), "q6_k row %lld block %lld quants", (long long)r, (long long)b);
            CHECKF(!memcmp(d + nb * 192 + b * 18, s + b * 210 + 192, 18), "q6_k row %lld block %lld scales", (long long)r, (long long)b);
        }
        for (size_t i = rb; i < st; i++) CHECK(d[i] == 0);
    }
    free(src); free(packed); free(back);
}

static void test_type(backend *be, uint32_t type, int64_t K, int64_t N) {
    const char *tn = qtype_get(type)->name;
    const size_t rb = qtype_row_size(type, K);
    float *w = malloc(sizeof(float) * K * (N + 3));
    vkt_fill(&seed, w, K * (N + 3), -1, 1);
    uint8_t *q = vkt_quantize(type, w, K, N + 3);
    be_tensor *wt = be->ops->weight_new(be, type, K, N + 3, q);
    CHECKF(wt != NULL, "weight_new %s: %s", tn, anv_last_error());
    if (!wt) { free(w); free(q); return; }
    const char *ma = getenv("ANVIL_VK_MAX_ALLOCATION");
    if (ma && *ma && (size_t)(N + 3) * rb > (64u << 10)) CHECKF(vk_tensor_chunks(wt) >= 2, "%s %lldx%lld: %d chunks", tn, (long long)N, (long long)K, vk_tensor_chunks(wt));
    vk_backend_take_kernels(be, NULL, 0);

    /* the weight downloads as its GGUF bytes: whole, and a range starting inside a row */
    uint8_t *dl = malloc(rb * (N + 3));
    be_download(wt, 0, dl, rb * (N + 3));
    CHECKF(!memcmp(dl, q, rb * (N + 3)), "%s download differs from the uploaded bytes", tn);
    const size_t o = rb + 5, n = rb * 2 + 3;
    memset(dl, 0, n);
    be_download(wt, o, dl, n);
    CHECKF(!memcmp(dl, q + o, n), "%s partial download", tn);
    free(dl);

    /* get_rows through a view of rows [1, N + 1) */
    be_tensor view = be_view_rows(wt, 1, N);
    int32_t ids[7] = { 0, (int32_t)N - 1, 3, 3, (int32_t)N / 2, 1, (int32_t)N - 2 };
    be_tensor *go = be->ops->tensor_new(be, QT_F32, K, 7);
    be->ops->get_rows(be, &view, ids, 7, go);
    float *got = malloc(sizeof(float) * K * 7), *ref = malloc(sizeof(float) * K * 7);
    be_download(go, 0, got, sizeof(float) * K * 7);
    ref_get_rows(type, q + rb, K, ids, 7, ref);
    CHECKF(tu_rel_err(got, ref, K * 7) < 1e-6f, "get_rows %s K %lld rel err %g", tn, (long long)K, tu_rel_err(got, ref, K * 7));
    const bool repacked = vkw_row_stride(type, K) != 0; /* Q4_K / Q5_K: GGUF layout, only their mat-vec reads uvec4s */
    CHECKF(ran_wide(be) == (paths.wide && repacked), "get_rows %s: wide kernel %s", tn, paths.wide && repacked ? "expected" : "not expected");
    free(got); free(ref);
    be_tensor_free(go);

    /* matmul on a view of rows [2, N + 2): 1..8 tokens (mat-vec), 17 and 70 (70: tiled) */
    const int toks[] = { 1, 2, 3, 5, 8, 17, 70 };
    be_tensor wv = be_view_rows(wt, 2, N);
    for (size_t k = 0; k < sizeof toks / sizeof toks[0]; k++) {
        const int nt = toks[k];
        for (int acc = 0; acc < 2; acc++) {
            float *x = malloc(sizeof(float) * K * nt), *o0 = malloc(sizeof(float) * N * nt);
            float *g = malloc(sizeof(float) * N * nt), *r = malloc(sizeof(float) * N * nt);
            vkt_fill(&seed, x, K * nt, -1, 1);
            vkt_fill(&seed, o0, N * nt, -1, 1);
            be_tensor *xt = vkt_upload_new(be, QT_F32, K, nt, x), *ot = vkt_upload_new(be, QT_F32, N, nt, o0);
            be->ops->matmul(be, &wv, xt, ot, nt, acc != 0);
            be_download(ot, 0, g, sizeof(float) * N * nt);
            memcpy(r, o0, sizeof(float) * N * nt);
            ref_matmul(type, q + 2 * rb, K, N, x, r, nt, acc != 0);
            const float err = tu_rel_err(g, r, N * nt), tol = tol_for(type, nt);
            CHECKF(err < tol, "matmul %s %lldx%lld n_tok %d acc %d rel err %g (tol %g)", tn, (long long)N, (long long)K, nt, acc, err, tol);
            /* Q4_K / Q5_K mat-vec: the uvec4 float kernel, unless their integer-dot one (GGUF layout, vk_int8.c) runs */
            const bool want = paths.wide && (repacked || (nt <= paths.mv_max_tok && !(paths.int8 && vkq_covers(type))));
            CHECKF(ran_wide(be) == want, "matmul %s n_tok %d: wide kernel %s", tn, nt, want ? "expected" : "not expected");
            be_tensor_free(xt); be_tensor_free(ot);
            free(x); free(o0); free(g); free(r);
        }
    }
    be_tensor_free(wt);
    free(w); free(q);
}

/* Every rows-per-workgroup variant (ANVIL_VK_MV_ROWS) gives bit-identical mat-vec results. */
static void test_rows_identical(void) {
    const uint32_t types[3] = { QT_Q4_0, QT_Q8_0, QT_Q6_K };
    for (int ti = 0; ti < 3; ti++) vkt_check_rows_identical(&seed, types[ti], types[ti] == QT_Q6_K ? 1280 : 1184, 45);
}

/* Rows uploaded into a weight that a recorded (not yet run) matmul reads: the chunk is busy,
 * so the rows are packed into host memory and copied through the staging ring (the discrete
 * GPU path, which lavapipe's mapped memory otherwise skips); both matmuls see their data. */
static void test_upload_busy(backend *be) {
    const uint32_t types[3] = { QT_Q4_0, QT_Q8_0, QT_Q6_K };
    for (int ti = 0; ti < 3; ti++) {
        const uint32_t type = types[ti];
        const int64_t K = type == QT_Q6_K ? 512 : 224, N = 37, r0 = 5, nr = 10;
        const size_t rb = qtype_row_size(type, K);
        float *w = malloc(sizeof(float) * K * N * 2), *x = malloc(sizeof(float) * K);
        vkt_fill(&seed, w, K * N * 2, -1, 1);
        vkt_fill(&seed, x, K, -1, 1);
        uint8_t *q1 = vkt_quantize(type, w, K, N), *q2 = vkt_quantize(type, w + K * N, K, N);
        be_tensor *wt = be->ops->weight_new(be, type, K, N, q1);
        be_tensor *xt = vkt_upload_new(be, QT_F32, K, 1, x);
        be_tensor *o1 = be->ops->tensor_new(be, QT_F32, N, 1), *o2 = be->ops->tensor_new(be, QT_F32, N, 1);
        be->ops->matmul(be, wt, xt, o1, 1, false);
        be_upload(wt, (size_t)r0 * rb, q2 + (size_t)r0 * rb, (size_t)nr * rb);
        be->ops->matmul(be, wt, xt, o2, 1, false);
        float g1[37], g2[37], r1[37], r2[37];
        be_download(o1, 0, g1, sizeof g1);
        be_download(o2, 0, g2, sizeof g2);
        ref_matmul(type, q1, K, N, x, r1, 1, false);                           /* before the upload */
        memcpy(q1 + (size_t)r0 * rb, q2 + (size_t)r0 * rb, (size_t)nr * rb); /* q1 as it is now */
        ref_matmul(type, q1, K, N, x, r2, 1, false);
        const float tol = tol_for(type, 1);
        CHECKF(tu_rel_err(g1, r1, N) < tol, "%s: matmul before a busy upload rel err %g", qtype_get(type)->name, tu_rel_err(g1, r1, N));
        CHECKF(tu_rel_err(g2, r2, N) < tol, "%s: matmul after a busy upload rel err %g", qtype_get(type)->name, tu_rel_err(g2, r2, N));
        CHECKF(memcmp(g1, g2, sizeof g1) != 0, "%s: the upload changed nothing", qtype_get(type)->name);
        uint8_t *dl = malloc(rb * N);
        be_download(wt, 0, dl, rb * N);
        CHECKF(!memcmp(dl, q1, rb * N), "%s: download after the busy upload", qtype_get(type)->name);
        free(dl);
        be_tensor_free(wt); be_tensor_free(xt); be_tensor_free(o1); be_tensor_free(o2);
        free(w); free(x); free(q1); free(q2);
    }
}

/* A reshaped view of a repacked weight (not whole rows): a clear sticky error. */
static void test_bad_view(void) {
    backend *be = vkt_open_lavapipe();
    if (!be) return;
    const int64_t K = 64, N = 4;
    uint8_t q[4 * 72];
    memset(q, 0, sizeof q);
    be_tensor *wt = be->ops->weight_new(be, QT_Q8_0, K, N, q);
    be_tensor *xt = be->ops->tensor_new(be, QT_F32, 32, 1), *ot = be->ops->tensor_new(be, QT_F32, 8, 1);
    CHECK(wt && xt && ot);
    if (wt && xt && ot && vk_backend_paths(be).wide) {
        be_tensor rv = be_view_reshape(wt, 32, 8);
        be->ops->matmul(be, &rv, xt, ot, 1, false);
        const char *e = be_error(be);
        CHECKF(e && strstr(e, "repacked weight"), "%s", e ? e : "(none)");
        be_upload(wt, 3, q, 10); /* part of a row: reported (the first error stays) */
        CHECKF(strstr(anv_last_error(), "whole rows"), "%s", anv_last_error());
    }
    be_tensor_free(wt); be_tensor_free(xt); be_tensor_free(ot);
    be->ops->destroy(be);
}
#endif

int main(void) {
#ifdef ANVIL_HAVE_VULKAN
    test_stride_and_pack();
    backend *be = vkt_open_lavapipe();
    if (be) {
        paths = vk_backend_paths(be);
        const char *dis = getenv("ANVIL_VK_DISABLE");
        const bool off = dis && (strstr(dis, "wide") || strstr(dis, "all"));
        CHECKF(paths.wide == !off, "wide path %d with ANVIL_VK_DISABLE=%s", paths.wide, dis ? dis : "");
        for (int ti = 0; ti < N_TYPES; ti++) {
            test_type(be, k_types[ti], 224, 37);   /* 7 blocks: rows of 126-238 bytes, padded */
            test_type(be, k_types[ti], 1184, 21);  /* 37 blocks */
        }
        test_type(be, QT_Q4_K, 768, 37);           /* the 16-byte K-quant blocks: uvec4 mat-vec */
        test_type(be, QT_Q5_K, 512, 45);
        test_type(be, QT_Q5_K, 1280, 101);         /* 5 blocks: 880-byte rows, 2 chunks under 64 KiB */
        test_type(be, QT_Q6_K, 256, 45);           /* repacked Q6_K: 210-byte rows padded to 224 */
        test_type(be, QT_Q6_K, 768, 37);           /* 3 blocks: 630 -> 640 bytes */
        test_type(be, QT_Q6_K, 1280, 101);         /* 5 blocks: 1050 -> 1056 bytes, 2 chunks under 64 KiB */
        test_type(be, QT_Q8_0, 224, 461);          /* tall: row chunks under 64 KiB allocations */
        test_type(be, QT_Q4_0, 480, 301);
        if (paths.wide) test_upload_busy(be);
        CHECKF(be_error(be) == NULL, "sticky error: %s", be_error(be));
        be->ops->destroy(be);
        test_rows_identical();
        test_bad_view();
        const char *val = getenv("ANVIL_VK_VALIDATE");
        if (val && strcmp(val, "1") == 0) CHECKF(vk_validation_messages() == 0, "%d validation messages", vk_validation_messages());
    }
#else
    CHECK(1); /* built without Vulkan: nothing to test */
#endif
    return tu_finish();
}
