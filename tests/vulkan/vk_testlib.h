/* vk_testlib: helpers shared by the Vulkan tests (header-only): open lavapipe explicitly
 * (the CPU-type Vulkan device), move host arrays to/from device tensors, random data. */
#ifndef ANVIL_VK_TESTLIB_H
#define ANVIL_VK_TESTLIB_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend.h"
#include "error.h"
#include "quant.h"
#include "testutil.h"

/* Every weight type the Vulkan matmul kernels take, for the op tests' type loops. */
#define VK_TEST_ALL_TYPES QT_F32, QT_F16, QT_BF16, QT_Q4_0, QT_Q4_1, QT_Q5_0, QT_Q5_1, QT_Q8_0, \
    QT_Q2_K, QT_Q3_K, QT_Q4_K, QT_Q5_K, QT_Q6_K, QT_MXFP4, QT_IQ4_NL, QT_IQ4_XS, QT_IQ3_XXS, QT_IQ3_S, \
    QT_IQ2_XXS, QT_IQ2_XS, QT_IQ2_S, QT_IQ1_S, QT_IQ1_M, QT_TQ1_0, QT_TQ2_0
#include "gguf/iq_rand.h"
#ifdef ANVIL_HAVE_VULKAN
#include "vk_backend.h"

/* lavapipe, or NULL: then the test checks that a reason was given and, if the build
 * expected a device (ANVIL_VK_REQUIRE=1), fails. ANVIL_VK_TEST_DEVICE=N runs the test on
 * Vulkan device N instead (a real GPU: tools/gpu-check.sh). */
static inline int vkt_device_index(void) {
    const char *d = getenv("ANVIL_VK_TEST_DEVICE");
    if (d && *d) return atoi(d);
    return vk_device_find(ANV_VK_DEVICE_CPU);
}

static inline backend *vkt_open_lavapipe(void) {
    char why[256] = "";
    int n = vk_device_count(why, sizeof why);
    int idx = n > 0 ? vkt_device_index() : -1;
    backend *be = idx >= 0 ? vk_backend_new(idx) : NULL;
    if (!be) {
        const char *req = getenv("ANVIL_VK_REQUIRE");
        fprintf(stderr, "no lavapipe device: %s\n", n < 0 || n == 0 ? why : (idx < 0 ? "no CPU-type Vulkan device" : anv_last_error()));
        CHECKF(!(req && strcmp(req, "1") == 0), "lavapipe required (ANVIL_VK_REQUIRE=1) but unavailable");
        CHECK(n > 0 || why[0] != 0); /* no device: a one-line reason */
        return NULL;
    }
    return be;
}
#endif

static inline be_tensor *vkt_upload_new(backend *be, uint32_t type, int64_t cols, int64_t rows, const void *data) {
    be_tensor *t = be->ops->tensor_new(be, type, cols, rows);
    if (t && data) be_upload(t, 0, data, be_nbytes(t));
    return t;
}

static inline void vkt_fill(uint64_t *seed, float *x, int64_t n, float lo, float hi) {
    for (int64_t i = 0; i < n; i++) x[i] = tu_rand_f32(seed, lo, hi);
}

/* rows x cols floats quantized to type (read-only types: random blocks, gguf/iq_rand.h);
 * returns malloc'd bytes. */
static inline void *vkt_quantize(uint32_t type, const float *x, int64_t cols, int64_t rows) {
    static uint64_t rng = 4242;
    size_t rb = qtype_row_size((qtype)type, cols);
    uint8_t *q = calloc(rows, rb);
    for (int64_t r = 0; r < rows; r++) iq_rand_row((qtype)type, x + r * cols, q + (size_t)r * rb, cols, &rng);
    return q;
}

#ifdef ANVIL_HAVE_VULKAN
/* The mat-vec of a type x K x N weight over 3 tokens gives bit-identical results under every
 * rows-per-workgroup variant (ANVIL_VK_MV_ROWS=1,2,4,8, each on a fresh backend); restores
 * ANVIL_VK_MV_ROWS. The autotuner relies on this (engine/vulkan/vk_tune.c). */
static inline void vkt_check_rows_identical(uint64_t *seed, uint32_t type, int64_t K, int64_t N) {
    const char *keep = getenv("ANVIL_VK_MV_ROWS");
    char saved[16] = "";
    if (keep) snprintf(saved, sizeof saved, "%s", keep);
    float *w = malloc(sizeof(float) * K * N), *x = malloc(sizeof(float) * K * 3);
    vkt_fill(seed, w, K * N, -1, 1);
    vkt_fill(seed, x, K * 3, -1, 1);
    uint8_t *q = vkt_quantize(type, w, K, N);
    float *first = malloc(sizeof(float) * N * 3), *g = malloc(sizeof(float) * N * 3);
    const char *rows[4] = { "1", "2", "4", "8" };
    for (int v = 0; v < 4; v++) {
        setenv("ANVIL_VK_MV_ROWS", rows[v], 1);
        backend *be = vkt_open_lavapipe();
        if (!be) break;
        be_tensor *wt = be->ops->weight_new(be, type, K, N, q);
        be_tensor *xt = vkt_upload_new(be, QT_F32, K, 3, x), *ot = be->ops->tensor_new(be, QT_F32, N, 3);
        be->ops->matmul(be, wt, xt, ot, 3, false);
        be_download(ot, 0, v ? g : first, sizeof(float) * N * 3);
        if (v) CHECKF(!memcmp(g, first, sizeof(float) * N * 3), "%s: ROWS=%s differs from ROWS=1", qtype_get(type)->name, rows[v]);
        CHECKF(be_error(be) == NULL, "%s", be_error(be));
        be_tensor_free(wt); be_tensor_free(xt); be_tensor_free(ot);
        be->ops->destroy(be);
    }
    free(w); free(x); free(q); free(first); free(g);
    if (saved[0]) setenv("ANVIL_VK_MV_ROWS", saved, 1);
    else unsetenv("ANVIL_VK_MV_ROWS");
}
#endif
#endif
