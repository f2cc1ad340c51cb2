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
#endif
