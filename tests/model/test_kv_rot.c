/* test_kv_rot: the KV-cache Hadamard rotation (engine/model/kv_rot.h): which caches are
 * rotated and in what groups (as llama.cpp: quantized types, head_dim % 64 == 0, K in the
 * largest power-of-two group, V in 64s; ANVIL_KV_ROTATION=0 off), H orthonormal and
 * symmetric, and kv_rot_apply on the CPU backend against H x computed here, applied twice
 * giving x back (the attention output's way back), on rows of several heads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"
#include "kv_rot.h"
#include "quant.h"
#include "testutil.h"

static void test_sizes(void) {
    int k, v;
    kv_rot_sizes(QT_Q4_0, 256, &k, &v); CHECK(k == 256 && v == 64);
    kv_rot_sizes(QT_Q8_0, 128, &k, &v); CHECK(k == 128 && v == 64);
    kv_rot_sizes(QT_Q4_0, 64, &k, &v);  CHECK(k == 64 && v == 64);
    kv_rot_sizes(QT_Q4_0, 192, &k, &v); CHECK(k == 64 && v == 64);
    kv_rot_sizes(QT_Q4_0, 96, &k, &v);  CHECK(k == 0 && v == 0);
    kv_rot_sizes(QT_Q4_0, 32, &k, &v);  CHECK(k == 0 && v == 0);
    kv_rot_sizes(QT_F16, 256, &k, &v);  CHECK(k == 0 && v == 0);
    setenv("ANVIL_KV_ROTATION", "0", 1);
    kv_rot_sizes(QT_Q4_0, 256, &k, &v); CHECK(k == 0 && v == 0);
    unsetenv("ANVIL_KV_ROTATION");
}

static void test_hadamard(int n) {
    float *h = malloc((size_t)n * n * sizeof(float));
    kv_rot_hadamard(h, n);
    double worst = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double d = 0;
            for (int c = 0; c < n; c++) d += (double)h[i * n + c] * h[j * n + c];
            worst = fmax(worst, fabs(d - (i == j)));
            if (h[i * n + j] != h[j * n + i]) worst = 1;
        }
    CHECKF(worst < 1e-6, "H_%d: H H^T - I up to %g (or not symmetric)", n, worst);
    free(h);
}

/* A fake two-layer "model" is not needed: kv_rot_init only reads hp.head_dim_k and layers. */
static void test_apply(void) {
    backend *be = cpu_backend_new(2);
    CHECK(be != NULL);
    if (!be) return;
    model m;
    memset(&m, 0, sizeof m);
    model_layer layers[2];
    memset(layers, 0, sizeof layers);
    layers[0].be = layers[1].be = be;
    m.layers = layers;
    m.hp.n_layer = 2;
    m.hp.head_dim_k = 128;
    kv_rot r;
    CHECK(kv_rot_init(&r, QT_Q4_0, &m) == 0 && r.n_k == 128 && r.n_v == 64 && r.n_be == 1);
    const int rows = 5, cols = 3 * 128; /* 5 tokens of 3 heads */
    uint64_t rng = 99;
    float *x = malloc(sizeof(float) * rows * cols), *want = malloc(sizeof(float) * rows * cols), *got = malloc(sizeof(float) * rows * cols);
    for (int i = 0; i < rows * cols; i++) x[i] = tu_rand_f32(&rng, -2, 2);
    float *h = malloc(sizeof(float) * 128 * 128);
    kv_rot_hadamard(h, 128);
    for (int g = 0; g < rows * cols / 128; g++)
        for (int i = 0; i < 128; i++) {
            double d = 0;
            for (int c = 0; c < 128; c++) d += (double)h[i * 128 + c] * x[g * 128 + c];
            want[g * 128 + i] = (float)d;
        }
    be_tensor *tx = be_tensor_new(be, QT_F32, cols, rows + 1), *to = be_tensor_new(be, QT_F32, cols, rows), *tb = be_tensor_new(be, QT_F32, cols, rows);
    be_tensor xv = be_view_rows(tx, 1, rows); /* a view with an offset */
    be_upload(&xv, 0, x, sizeof(float) * rows * cols);
    kv_rot_apply(&r, be, false, &xv, to, rows);
    be_download(to, 0, got, sizeof(float) * rows * cols);
    CHECKF(tu_rel_err(got, want, rows * cols) < 1e-6f, "H_128 x: rel err %g", tu_rel_err(got, want, rows * cols));
    kv_rot_apply(&r, be, true, &xv, to, rows);   /* H_64 twice: x again */
    kv_rot_apply(&r, be, true, to, tb, rows);
    be_download(tb, 0, got, sizeof(float) * rows * cols);
    CHECKF(tu_rel_err(got, x, rows * cols) < 1e-6f, "H_64 H_64 x != x: rel err %g", tu_rel_err(got, x, rows * cols));
    CHECK(be_error(be) == NULL);
    be_tensor_free(tx); be_tensor_free(to); be_tensor_free(tb);
    kv_rot_free(&r);
    CHECK(kv_rot_init(&r, QT_F16, &m) == 0 && r.n_k == 0 && r.n_be == 0);
    kv_rot_free(&r);
    free(x); free(want); free(got); free(h);
    be->ops->destroy(be);
}

int main(void) {
    test_sizes();
    test_hadamard(64);
    test_hadamard(256);
    test_apply();
    return tu_finish();
}
