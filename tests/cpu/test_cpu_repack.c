/* test_cpu_repack: the CPU backend's repacked weights (cpu/repack.h) and their interleaved
 * kernels, against cpu/ref_ops.c and against the same backend with ANVIL_CPU_REPACK=0 (the
 * file-layout kernels, same quantized activations), at 1 and 2 threads, on odd shapes:
 * Q4_0, Q8_0, Q4_K, Q5_K, Q6_K, F16, BF16; rows not a multiple of the 16-row group (1, 15, 17, 37,
 * 50), K of 1, 7 and 11 blocks (32 or 256 elements; F16/BF16: 35, 227, 355 columns),
 * batches of 1, 2, 3, 4, 7, 8, 9, 16, 17, 33 tokens (every kernel tile width and remainder),
 * accumulate on and off; plus a view of a packed weight (fewer rows: the file-layout path)
 * and the layout itself unpacked by hand. Passes trivially on a CPU without AVX-512 VNNI. */
#include "cpu_backend.h"
#include "error.h"
#include "fp16.h"
#include "quant.h"
#include "ref_ops.h"
#include "repack.h"
#include "testutil.h"
#include "gguf/iq_rand.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 777;

static float *rand_floats(int64_t n, float lo, float hi) {
    float *p = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) p[i] = tu_rand_f32(&rng, lo, hi);
    return p;
}

static float *run_matmul(backend *be, const be_tensor *w, const float *x, const float *init, int n_tok, bool acc) {
    const int64_t cols = w->cols, rows = w->rows;
    be_tensor *xt = be_tensor_new(be, QT_F32, cols, n_tok);
    be_tensor *ot = be_tensor_new(be, QT_F32, rows, n_tok);
    be_upload(xt, 0, x, (size_t)(cols * n_tok) * sizeof(float));
    be_upload(ot, 0, init, (size_t)(rows * n_tok) * sizeof(float));
    be->ops->matmul(be, w, xt, ot, n_tok, acc);
    float *got = malloc((size_t)(rows * n_tok) * sizeof(float));
    be_download(ot, 0, got, (size_t)(rows * n_tok) * sizeof(float));
    be_tensor_free(xt);
    be_tensor_free(ot);
    return got;
}

/* Max |a - b| over max(max |b|, the typical |dot| of cols random products: sqrt(cols) x
 * rms(w) x rms(x)): a plain relative error is meaningless for the one or two outputs of a
 * 1-row case whose dot cancels to near zero. */
static float scaled_err(const float *a, const float *b, int64_t n, int64_t cols) {
    const float typical = sqrtf((float)cols) * 0.577f * 1.155f; /* w in [-1, 1], x in [-2, 2] */
    float mb = typical;
    for (int64_t i = 0; i < n; i++) if (fabsf(b[i]) > mb) mb = fabsf(b[i]);
    return tu_max_abs_diff(a, b, n) / mb;
}

/* Element (r, e) of the packed copy read back through the documented layout. */
static int packed_quant(uint32_t type, const uint8_t *pk, int64_t cols, int64_t r, int64_t e) {
    const size_t gb = repack_group_bytes(type, cols), pblk = gb / (size_t)(cols / 32);
    const uint8_t *pb = pk + (size_t)(r / PK_ROWS) * gb + (size_t)(e / 32) * pblk + 2 * PK_ROWS;
    const int rr = (int)(r % PK_ROWS), j = (int)(e % 32);
    if (type == QT_Q4_0) {
        const int k = (j % 16) / 4, b = j % 4;
        const uint8_t byte = pb[k * 4 * PK_ROWS + 4 * rr + b];
        return (j < 16 ? byte & 0xF : byte >> 4) - 8;
    }
    return (int8_t)pb[(j / 4) * 4 * PK_ROWS + 4 * rr + j % 4];
}

static void test_layout(uint32_t type) {
    const int64_t cols = 32 * 3, rows = 19;
    const size_t rb = qtype_row_size(type, cols);
    float *wf = rand_floats(cols * rows, -1, 1);
    uint8_t *wq = malloc(rb * (size_t)rows);
    for (int64_t r = 0; r < rows; r++) quantize_row(type, wf + r * cols, wq + rb * (size_t)r, cols);
    uint8_t *pk = calloc(2, repack_group_bytes(type, cols));
    repack_rows(type, wq, cols, rows, pk);
    float *deq = malloc((size_t)cols * sizeof(float));
    int bad = 0;
    for (int64_t r = 0; r < rows; r++) {
        dequantize_row(type, wq + rb * (size_t)r, deq, cols);
        for (int64_t i = 0; i < cols / 32; i++) {
            const uint8_t *blk = wq + rb * (size_t)r + (size_t)i * (type == QT_Q4_0 ? sizeof(block_q4_0) : sizeof(block_q8_0));
            uint16_t d, pd;
            memcpy(&d, blk, 2);
            memcpy(&pd, pk + (size_t)(r / PK_ROWS) * repack_group_bytes(type, cols) + (size_t)i * (repack_group_bytes(type, cols) / (size_t)(cols / 32)) + 2 * (size_t)(r % PK_ROWS), 2);
            if (d != pd) bad++;
            for (int j = 0; j < 32; j++)
                if (fp16_to_fp32(d) * (float)packed_quant(type, pk, cols, r, i * 32 + j) != deq[i * 32 + j]) bad++;
        }
    }
    /* the padding rows of the last group: scale 0 */
    uint16_t pad_d;
    memcpy(&pad_d, pk + repack_group_bytes(type, cols) + 2 * 5, 2);
    CHECKF(bad == 0 && pad_d == 0, "%s packed layout: %d mismatches, padding d %u", qtype_get(type)->name, bad, pad_d);
    free(wf); free(wq); free(pk); free(deq);
}

/* F16 / BF16: value (r, k) at group r / 16, column k, lane r % 16; padding rows 0. */
static void test_layout_f16(uint32_t type) {
    const int64_t cols = 37, rows = 19;
    uint16_t *w = malloc((size_t)(cols * rows) * 2);
    for (int64_t i = 0; i < cols * rows; i++) w[i] = (uint16_t)(0x3c00 + i);
    const size_t gb = repack_group_bytes(type, cols);
    uint16_t *pk = calloc(2, gb);
    memset(pk, 0xff, 2 * gb);
    repack_rows(type, w, cols, rows, (uint8_t *)pk);
    int bad = 0;
    for (int64_t r = 0; r < 2 * PK_ROWS; r++)
        for (int64_t k = 0; k < cols; k++) {
            const uint16_t got = pk[(size_t)(r / PK_ROWS) * (gb / 2) + (size_t)k * PK_ROWS + (size_t)(r % PK_ROWS)];
            if (got != (r < rows ? w[r * cols + k] : 0)) bad++;
        }
    CHECKF(bad == 0 && gb == (size_t)cols * 32, "%s packed layout: %d mismatches, group %zu bytes", qtype_get(type)->name, bad, gb);
    free(w); free(pk);
}

int main(void) {
    anv_log_enabled = 0;
    test_layout(QT_Q4_0);
    test_layout(QT_Q8_0);
    test_layout_f16(QT_F16);
    test_layout_f16(QT_BF16);
    if (strcmp(cpu_backend_simd(), "avx512") != 0) {
        printf("no AVX-512 VNNI here: only the layout is tested\n");
        return tu_finish();
    }
    static const uint32_t types[] = {QT_Q4_0, QT_IQ4_NL, QT_Q8_0, QT_Q4_K, QT_Q5_K, QT_Q6_K, QT_F16, QT_BF16};
    static const int64_t rows_list[] = {1, 15, 16, 17, 37, 50};
    static const int64_t nb_list[] = {1, 7, 11};
    static const int ntoks[] = {1, 2, 3, 4, 7, 8, 9, 16, 17, 33};
    float worst_ref = 0, worst_plain = 0;
    for (int threads = 1; threads <= 2; threads++) {
        setenv("ANVIL_CPU_REPACK", "1", 1);
        backend *be = cpu_backend_new(threads);
        setenv("ANVIL_CPU_REPACK", "0", 1);
        backend *plain = cpu_backend_new(threads);
        unsetenv("ANVIL_CPU_REPACK");
        CHECK(be && plain);
        if (!be || !plain) break;
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
            for (size_t ri = 0; ri < sizeof rows_list / sizeof rows_list[0]; ri++)
                for (size_t bi = 0; bi < sizeof nb_list / sizeof nb_list[0]; bi++) {
                    const uint32_t type = types[ti];
                    const int bs = qtype_get(type)->block_size;
                    /* float types: odd column counts (35, 227, 355: every unroll remainder) */
                    const int64_t rows = rows_list[ri], cols = bs > 1 ? bs * nb_list[bi] : 32 * nb_list[bi] + 3;
                    const size_t rb = qtype_row_size(type, cols);
                    float *wf = rand_floats(cols * rows, -1, 1);
                    uint8_t *wq = malloc(rb * (size_t)rows);
                    for (int64_t r = 0; r < rows; r++) iq_rand_row(type, wf + r * cols, wq + rb * (size_t)r, cols, &rng);
                    be_tensor *w = be->ops->weight_new(be, type, cols, rows, wq);
                    be_tensor *wp = plain->ops->weight_new(plain, type, cols, rows, wq);
                    CHECK(w && wp);
                    for (size_t ni = 0; w && wp && ni < sizeof ntoks / sizeof ntoks[0]; ni++) {
                        const int n_tok = ntoks[ni];
                        float *x = rand_floats(cols * n_tok, -2, 2), *init = rand_floats(rows * n_tok, -1, 1);
                        for (int acc = 0; acc < 2; acc++) {
                            float *got = run_matmul(be, w, x, init, n_tok, acc);
                            float *ref = run_matmul(plain, wp, x, init, n_tok, acc);
                            float *want = malloc((size_t)(rows * n_tok) * sizeof(float));
                            memcpy(want, init, (size_t)(rows * n_tok) * sizeof(float));
                            ref_matmul(type, wq, cols, rows, x, want, n_tok, acc);
                            if (acc) for (int64_t i = 0; i < rows * n_tok; i++) { got[i] -= init[i]; ref[i] -= init[i]; want[i] -= init[i]; }
                            const float e1 = scaled_err(got, want, rows * n_tok, cols), e2 = scaled_err(got, ref, rows * n_tok, cols);
                            if (e1 > worst_ref) worst_ref = e1;
                            if (e2 > worst_plain) worst_plain = e2;
                            /* a handful of outputs (1 row): 8-bit activations' error is not averaged out */
                            const float tol = rows * n_tok >= 32 ? 1.2e-2f : 1e-1f;
                            CHECKF(e1 < tol, "%s %lldx%lld n_tok %d acc %d t%d: vs ref %g", qtype_get(type)->name, (long long)rows, (long long)cols, n_tok, acc, threads, e1);
                            CHECKF(e2 < 1e-5f, "%s %lldx%lld n_tok %d acc %d t%d: vs file layout %g", qtype_get(type)->name, (long long)rows, (long long)cols, n_tok, acc, threads, e2);
                            free(got); free(ref); free(want);
                        }
                        free(x); free(init);
                    }
                    /* a view of fewer rows (not the packed weight): the file-layout kernels */
                    if (w && rows > 1) {
                        be_tensor v = be_view_rows(w, 0, rows - 1);
                        float *x = rand_floats(cols * 3, -2, 2), *zero = calloc((size_t)(rows * 3), sizeof(float));
                        float *got = run_matmul(be, &v, x, zero, 3, false);
                        float *want = calloc((size_t)(rows * 3), sizeof(float));
                        ref_matmul(type, wq, cols, rows - 1, x, want, 3, false);
                        const float e = tu_rel_err(got, want, (rows - 1) * 3);
                        CHECKF(e < ((rows - 1) * 3 >= 32 ? 1.2e-2f : 1e-1f), "%s view of %lld rows: vs ref %g", qtype_get(type)->name, (long long)(rows - 1), e);
                        free(x); free(zero); free(got); free(want);
                    }
                    CHECK(!be_error(be) && !be_error(plain));
                    be_tensor_free(w);
                    be_tensor_free(wp);
                    free(wf);
                    free(wq);
                }
        be->ops->destroy(be);
        plain->ops->destroy(plain);
    }
    printf("packed matmul: worst rel err vs ref %.2e, vs file-layout kernels %.2e\n", worst_ref, worst_plain);
    return tu_finish();
}
