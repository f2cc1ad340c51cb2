/* test_vulkan_coopmat: the cooperative-matrix tiled mat-mat (engine/vulkan/vk_coopmat.c,
 * shaders/mul_mm_cm.comp) against cpu/ref_ops' scalar matmul, every weight type, odd shapes
 * (45 output rows, 33 and 70 tokens, 67 columns for the float types: none a multiple of the
 * tile), offset views of weights, inputs and outputs, with and without accumulate. The
 * kernels that ran must be the "_cm" ones exactly when the path is on. On Debian 12's
 * lavapipe (no VK_KHR_cooperative_matrix) the path is absent and a reason must be given; the
 * ctest label `coopmat` runs it on trixie-backports' lavapipe 26.1 (tools/coopmat/in-root.sh)
 * with ANVIL_VK_REQUIRE_COOPMAT=1, under the validation layer with zero messages, in both
 * weight layouts (wide on and off) and with ANVIL_VK_DISABLE=coopmat, with the autotuner off
 * (ANVIL_VK_TUNE=0: the coopmat kernel always) and re-timing (ANVIL_VK_TUNE=1: it picks coopmat
 * or the tiled kernel per weight, and must say so in vk_backend_tuning). */
#include "ref_ops.h"
#include "vk_testlib.h"

#ifdef ANVIL_HAVE_VULKAN
static uint64_t seed = 2929;

static const uint32_t k_types[] = { VK_TEST_ALL_TYPES };
#define N_TYPES (int)(sizeof k_types / sizeof k_types[0])

static int64_t cols_for(uint32_t type) {
    const qtype_info *qi = qtype_get(type);
    if (qi->block_size == 1) return 67; /* not a multiple of 8 or of the 32-column step */
    if (qi->block_size == 32) return 32 * 7;
    return 256 * 2;
}

/* One matmul of a type on views; the kernels it ran must be coopmat ones iff `on` (unless the
 * autotuner chooses: `tuned`). */
static void check_matmul(backend *be, uint32_t type, int nt, bool acc, bool on, bool tuned) {
    const int64_t K = cols_for(type), N = 45;
    float *w = malloc(sizeof(float) * K * (N + 3)), *x = malloc(sizeof(float) * K * nt), *o0 = malloc(sizeof(float) * N * (nt + 1));
    float *got = malloc(sizeof(float) * N * nt), *ref = malloc(sizeof(float) * N * nt);
    vkt_fill(&seed, w, K * (N + 3), -1, 1);
    vkt_fill(&seed, x, K * nt, -1, 1);
    vkt_fill(&seed, o0, N * (nt + 1), -1, 1);
    void *q = vkt_quantize(type, w, K, N + 3);
    be_tensor *wt = be->ops->weight_new(be, type, K, N + 3, q);
    be_tensor wv = be_view_rows(wt, 3, N);
    be_tensor *xt = be->ops->tensor_new(be, QT_F32, K, nt + 2);
    be_tensor xv = be_view_rows(xt, 2, nt);
    be_upload(&xv, 0, x, sizeof(float) * K * nt);
    be_tensor *ot = vkt_upload_new(be, QT_F32, N, nt + 1, o0);
    be_tensor ov = be_view_rows(ot, 1, nt);
    char kernels[512];
    vk_backend_take_kernels(be, kernels, sizeof kernels);
    be->ops->matmul(be, &wv, &xv, &ov, nt, acc);
    be_download(&ov, 0, got, sizeof(float) * N * nt);
    vk_backend_take_kernels(be, kernels, sizeof kernels);
    memcpy(ref, o0 + N, sizeof(float) * N * nt);
    ref_matmul(type, (uint8_t *)q + 3 * qtype_row_size(type, K), K, N, x, ref, nt, acc);
    const float err = tu_rel_err(got, ref, N * nt);
    CHECKF(err < 4e-3f, "matmul %s n_tok %d acc %d rel err %g (kernels %s)", qtype_get(type)->name, nt, acc, err, kernels);
    if (!tuned || !on)
        CHECKF((strstr(kernels, "_cm") != NULL) == on, "%s n_tok %d: kernels %s with coopmat %s", qtype_get(type)->name, nt, kernels, on ? "on" : "off");
    be_tensor_free(wt); be_tensor_free(xt); be_tensor_free(ot);
    free(q); free(w); free(x); free(o0); free(got); free(ref);
}

static void test_coopmat(void) {
    backend *be = vkt_open_lavapipe();
    if (!be) return;
    anv_vk_device_info info;
    CHECK(vk_device_info_get(vkt_device_index(), &info) == 0);
    const anv_vk_paths paths = vk_backend_paths(be);
    const char *dis = getenv("ANVIL_VK_DISABLE"), *req = getenv("ANVIL_VK_REQUIRE_COOPMAT");
    const bool off = dis && (strstr(dis, "coopmat") || strstr(dis, "all"));
    printf("device: %s\ncoopmat: %s (%s), path %s\n", be->device_desc, info.coopmat ? "advertised" : "absent", info.coopmat_why,
           paths.coopmat ? "on" : "off");
    CHECKF(info.coopmat || info.coopmat_why[0], "no coopmat and no reason");
    CHECK(paths.coopmat == (info.coopmat && !off));
    if (req && !strcmp(req, "1")) {
        CHECKF(info.coopmat, "ANVIL_VK_REQUIRE_COOPMAT=1 but: %s", info.coopmat_why);
        if (info.coopmat) CHECK(info.coopmat_m && info.coopmat_n && info.coopmat_k && 32 % info.coopmat_k == 0 && info.coopmat_sg);
    }
    const char *tune = getenv("ANVIL_VK_TUNE");
    const bool tuned = !(tune && !strcmp(tune, "0"));
    const int toks[] = { 33, 70 };
    for (int ti = 0; ti < N_TYPES; ti++)
        for (int k = 0; k < 2; k++)
            for (int acc = 0; acc < 2; acc++) {
                if (toks[k] <= paths.mv_max_tok) continue; /* the mat-vec kernels serve that batch */
                check_matmul(be, k_types[ti], toks[k], acc != 0, paths.coopmat, tuned);
            }
    char choices[8192];
    vk_backend_tuning(be, choices, sizeof choices);
    if (paths.coopmat && tuned) { /* every weight type's choice was timed and reported */
        int n = 0;
        for (const char *p = strstr(choices, "_cm K~"); p; p = strstr(p + 1, "_cm K~")) n++;
        printf("autotuner: %d coopmat/tiled choices (%.300s...)\n", n, choices);
        CHECKF(n >= N_TYPES, "%d coopmat/tiled choices for %d types: %s", n, N_TYPES, choices);
    }
    CHECKF(be_error(be) == NULL, "sticky error: %s", be_error(be));
    be->ops->destroy(be);
}
#endif

int main(void) {
#ifdef ANVIL_HAVE_VULKAN
    anv_log_enabled = 1;
    test_coopmat();
    const char *v = getenv("ANVIL_VK_VALIDATE");
    if (v && !strcmp(v, "1")) CHECKF(vk_validation_messages() == 0, "%d validation messages", vk_validation_messages());
#else
    CHECK(1); /* built without Vulkan: nothing to test */
#endif
    return tu_finish();
}
