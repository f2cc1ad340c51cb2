/* test_vulkan_int8: the integer-dot mat-vec kernels of shaders/mul_mat_vecq_x.comp
 * (engine/vulkan/vk_int8.c: Q4_1, Q5_0, Q5_1 in the GGUF and the repacked layout, Q4_K, Q5_K,
 * Q6_K) against cpu/ref_ops on lavapipe: K of odd block / super-block counts, rows not a
 * multiple of any ROWS variant, a row view (offset weight), 1..8 tokens, with and without
 * accumulate; the kernel that ran is the int8 one exactly when the path is on; every
 * rows-per-workgroup variant gives bit-identical results. ctest runs it with every path, with
 * ANVIL_VK_DISABLE=int8 / subgroup / wide, and with each ANVIL_VK_MV_ROWS; always under the
 * validation layer with zero messages (Q4_K's and Q5_K's kernels, off by default,
 * enabled with ANVIL_VK_INT8_K=1). Tolerance: Q4_0's for the 8-bit paths (3e-2 relative). */
#include <math.h>
#include "ref_ops.h"
#include "vk_testlib.h"
#ifdef ANVIL_HAVE_VULKAN
#include "vk_int8.h"
#include "vk_wide.h"

static uint64_t seed = 4242;
static anv_vk_paths paths;
static const uint32_t k_types[] = { QT_Q4_1, QT_Q5_0, QT_Q5_1, QT_Q4_K, QT_Q5_K, QT_Q6_K };
#define N_TYPES (int)(sizeof k_types / sizeof k_types[0])
static float worst[N_TYPES];

/* Kernels run since the last call include mul_mat_vecq_<type> (any layout / subgroup variant). */
static bool ran_int8(backend *be, uint32_t type) {
    char k[2048], want[64];
    vk_backend_take_kernels(be, k, sizeof k);
    snprintf(want, sizeof want, "mul_mat_vecq_%s", qtype_get(type)->name);
    for (char *p = want; *p; p++) *p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
    return strstr(k, want) != NULL;
}

static void test_type(backend *be, int ti, int64_t K, int64_t N) {
    const uint32_t type = k_types[ti];
    const char *tn = qtype_get(type)->name;
    const size_t rb = qtype_row_size(type, K);
    float *w = malloc(sizeof(float) * K * (N + 2));
    vkt_fill(&seed, w, K * (N + 2), -1, 1);
    uint8_t *q = vkt_quantize(type, w, K, N + 2);
    be_tensor *wt = be->ops->weight_new(be, type, K, N + 2, q);
    CHECKF(wt != NULL, "weight_new %s: %s", tn, anv_last_error());
    if (!wt) { free(w); free(q); return; }
    be_tensor wv = be_view_rows(wt, 2, N);
    vk_backend_take_kernels(be, NULL, 0);
    for (int nt = 1; nt <= 8; nt++) {
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
            const float err = tu_rel_err(g, r, N * nt), tol = paths.int8 ? 3e-2f : 2e-5f;
            if (err > worst[ti]) worst[ti] = err;
            CHECKF(err < tol, "matmul %s %lldx%lld n_tok %d acc %d rel err %g (tol %g)", tn, (long long)N, (long long)K, nt, acc, err, tol);
            /* a weight repacked (vk_wide.c) for which no "_w" integer-dot kernel exists keeps the float one */
            const bool want = paths.int8 && !(type == QT_Q6_K && paths.wide && vkw_row_stride(type, K) != 0);
            CHECKF(ran_int8(be, type) == want, "matmul %s n_tok %d: int8 kernel %s", tn, nt, want ? "expected" : "not expected");
            be_tensor_free(xt); be_tensor_free(ot);
            free(x); free(o0); free(g); free(r);
        }
    }
    be_tensor_free(wt);
    free(w); free(q);
}

/* Every rows-per-workgroup variant (ANVIL_VK_MV_ROWS) gives bit-identical mat-vec results. */
static void test_rows_identical(void) {
    for (int ti = 0; ti < N_TYPES; ti++)
        vkt_check_rows_identical(&seed, k_types[ti], qtype_get(k_types[ti])->block_size == 256 ? 1280 : 1184, 45);
}
#endif

int main(void) {
#ifdef ANVIL_HAVE_VULKAN
    CHECK((!vkq_covers(QT_Q4_K) && !vkq_covers(QT_Q5_K)) || getenv("ANVIL_VK_INT8_K")); /* off by default (vk_int8.c) */
    setenv("ANVIL_VK_INT8_K", "1", 1);                        /* this test covers their kernels */
    backend *be = vkt_open_lavapipe();
    if (be) {
        paths = vk_backend_paths(be);
        const char *dis = getenv("ANVIL_VK_DISABLE");
        if (dis && (strstr(dis, "int8") || strstr(dis, "all"))) CHECK(!paths.int8);
        for (int ti = 0; ti < N_TYPES; ti++) {
            CHECK(vkq_covers(k_types[ti]));
            if (qtype_get(k_types[ti])->block_size == 256) {
                test_type(be, ti, 768, 37);  /* 3 super-blocks */
                test_type(be, ti, 1280, 53); /* 5 */
                test_type(be, ti, 256, 3);   /* 1, fewer rows than ROWS */
            } else {
                test_type(be, ti, 224, 37);  /* 7 blocks */
                test_type(be, ti, 1184, 53); /* 37 blocks */
            }
            printf("%s: int8 %d worst rel err %g\n", qtype_get(k_types[ti])->name, paths.int8, worst[ti]);
        }
        CHECK(!vkq_covers(QT_Q2_K) && !vkq_covers(QT_F16));
        CHECKF(be_error(be) == NULL, "sticky error: %s", be_error(be));
        be->ops->destroy(be);
        const char *r = getenv("ANVIL_VK_MV_ROWS");
        if (!(r && *r)) test_rows_identical();
        const char *val = getenv("ANVIL_VK_VALIDATE");
        if (val && strcmp(val, "1") == 0) CHECKF(vk_validation_messages() == 0, "%d validation messages", vk_validation_messages());
    }
#else
    CHECK(1); /* built without Vulkan: nothing to test */
#endif
    return tu_finish();
}
