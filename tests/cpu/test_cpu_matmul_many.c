/* test_cpu_matmul_many: the CPU backend's optional matmul_many (several independent matmuls
 * as one pool job, what a MoE decode step uses) against ref_ops' ref_matmul and against
 * the same matmuls issued one by one through ops->matmul (which must agree bit for bit:
 * the same kernels on the same rows), on odd shapes (rows 15, 16, 17, 37, 45; tokens 1, 2, 3,
 * 5, 9), views with a non-zero offset (weights of 2 tokens: file layout), a mix of weight types (packed F16/Q4_0/Q4_K/Q6_K/
 * Q8_0, Q5_K below and above its packed threshold, unpacked F32/IQ4_NL), for each SIMD path
 * this CPU has and at 1 and 2 threads; plus its refusals (too many items) and a bad input's
 * recorded error. Tolerance vs ref: 1e-5 for float weights, 1.2e-2 for quantized ones (8-bit
 * activations), as test_cpu_ops. */
#include "cpu_backend.h"
#include "error.h"
#include "quant.h"
#include "ref_ops.h"
#include "testutil.h"
#include "gguf/iq_rand.h"

#include <stdlib.h>
#include <string.h>

static uint64_t rng = 777;

typedef struct {
    uint32_t type;
    int64_t cols, rows;
    int n_tok;
    uint8_t *wq;      /* rows + 1 rows: one row of padding before (a view skips it) */
    float *x;
    be_tensor *wbase, w, *xbase, xv, *obase, ov;
} item;

static const struct { uint32_t type; int64_t rows; int n_tok; } cases[] = {
    {QT_Q4_0, 37, 1}, {QT_Q4_K, 45, 1}, {QT_F16, 15, 2}, {QT_Q6_K, 37, 3}, {QT_Q8_0, 17, 1},  {QT_Q5_K, 45, 1},
    {QT_Q5_K, 37, 5}, {QT_F32, 15, 1},  {QT_BF16, 37, 9}, {QT_IQ4_NL, 37, 2}, {QT_Q4_0, 45, 9}, {QT_Q6_K, 16, 1},
};
#define N_CASES (int)(sizeof cases / sizeof cases[0])

static int64_t cols_of(uint32_t type) {
    const int bs = qtype_get(type)->block_size;
    return bs == 1 ? 203 : bs == 32 ? 32 * 11 : 256 * 3;
}

static void make_item(backend *be, item *it, uint32_t type, int64_t rows, int n_tok) {
    memset(it, 0, sizeof *it);
    it->type = type;
    it->cols = cols_of(type);
    it->rows = rows;
    it->n_tok = n_tok;
    const size_t rb = qtype_row_size(type, it->cols);
    it->wq = malloc(rb * (size_t)(rows + 1));
    memset(it->wq, 0x5a, rb);
    float *wf = malloc((size_t)(it->cols * rows) * sizeof(float));
    for (int64_t i = 0; i < it->cols * rows; i++) wf[i] = tu_rand_f32(&rng, -1.0f, 1.0f);
    for (int64_t r = 0; r < rows; r++) iq_rand_row(type, wf + r * it->cols, it->wq + rb * (size_t)(r + 1), it->cols, &rng);
    free(wf);
    /* whole weights get repacked (the types with a packed layout); views keep the file layout */
    const bool view = n_tok == 2;
    it->wbase = view ? be->ops->weight_new(be, type, it->cols, rows + 1, it->wq)
                     : be->ops->weight_new(be, type, it->cols, rows, it->wq + rb);
    CHECK(it->wbase != NULL);
    if (it->wbase) it->w = view ? be_view_rows(it->wbase, 1, rows) : *it->wbase;
    it->x = malloc((size_t)(it->cols * n_tok) * sizeof(float));
    for (int64_t i = 0; i < it->cols * n_tok; i++) it->x[i] = tu_rand_f32(&rng, -2.0f, 2.0f);
    it->xbase = be_tensor_new(be, QT_F32, it->cols, n_tok + 2);
    it->xv = be_view_rows(it->xbase, 2, n_tok);
    be_upload(&it->xv, 0, it->x, (size_t)(it->cols * n_tok) * sizeof(float));
    it->obase = be_tensor_new(be, QT_F32, rows, n_tok + 1);
    it->ov = be_view_rows(it->obase, 1, n_tok);
}

static void free_item(item *it) {
    be_tensor_free(it->wbase);
    be_tensor_free(it->xbase);
    be_tensor_free(it->obase);
    free(it->wq);
    free(it->x);
}

static float *read_out(const item *it) {
    const int64_t n = it->rows * it->n_tok;
    float *p = malloc((size_t)n * sizeof(float));
    be_download(&it->ov, 0, p, (size_t)n * sizeof(float));
    return p;
}

static void test_many(backend *be) {
    item it[N_CASES];
    be_matmul_item mi[N_CASES];
    for (int i = 0; i < N_CASES; i++) {
        make_item(be, &it[i], cases[i].type, cases[i].rows, cases[i].n_tok);
        mi[i] = (be_matmul_item){&it[i].w, &it[i].xv, &it[i].ov, it[i].n_tok};
    }
    /* one by one: the reference for bit-exactness */
    float *single[N_CASES];
    for (int i = 0; i < N_CASES; i++) {
        be->ops->matmul(be, &it[i].w, &it[i].xv, &it[i].ov, it[i].n_tok, false);
        single[i] = read_out(&it[i]);
        const float poison = 1e30f;
        float *junk = malloc((size_t)(it[i].rows * it[i].n_tok) * sizeof(float));
        for (int64_t k = 0; k < it[i].rows * it[i].n_tok; k++) junk[k] = poison;
        be_upload(&it[i].ov, 0, junk, (size_t)(it[i].rows * it[i].n_tok) * sizeof(float));
        free(junk);
    }
    CHECK(be->ops->matmul_many(be, mi, N_CASES));
    CHECK(be_error(be) == NULL);
    for (int i = 0; i < N_CASES; i++) {
        const int64_t n = it[i].rows * it[i].n_tok;
        float *got = read_out(&it[i]);
        float *want = calloc((size_t)n, sizeof(float));
        ref_matmul(it[i].type, it[i].wq + qtype_row_size(it[i].type, it[i].cols), it[i].cols, it[i].rows, it[i].x, want, it[i].n_tok, false);
        const bool fl = it[i].type == QT_F32 || it[i].type == QT_F16 || it[i].type == QT_BF16;
        const float tol = fl ? 1e-5f : 1.2e-2f, err = tu_rel_err(got, want, n);
        CHECKF(err < tol, "matmul_many item %d (%s, %lld rows, %d tok): rel err vs ref %g >= %g", i, qtype_get(it[i].type)->name,
               (long long)it[i].rows, it[i].n_tok, err, tol);
        CHECKF(memcmp(got, single[i], (size_t)n * sizeof(float)) == 0, "matmul_many item %d (%s): differs from ops->matmul", i,
               qtype_get(it[i].type)->name);
        free(got);
        free(want);
        free(single[i]);
    }
    /* a subset, out of order, one item with no tokens */
    be_matmul_item sub[3] = {mi[5], mi[0], mi[2]};
    sub[2].n_tok = 0;
    CHECK(be->ops->matmul_many(be, sub, 3));
    CHECK(be_error(be) == NULL);
    /* more items than one job takes: refused, nothing done */
    be_matmul_item *lots = malloc(65 * sizeof *lots);
    for (int i = 0; i < 65; i++) lots[i] = mi[0];
    CHECK(!be->ops->matmul_many(be, lots, 65));
    free(lots);
    for (int i = 0; i < N_CASES; i++) free_item(&it[i]);
}

/* An x too small for its weight: the op's error is recorded (checked on a fresh backend). */
static void test_bad_input(int threads) {
    backend *be = cpu_backend_new(threads);
    CHECK(be != NULL);
    if (!be) return;
    item a;
    make_item(be, &a, QT_Q4_0, 37, 1);
    be_tensor small = be_view_reshape(&a.xv, 32, 1);
    be_matmul_item mi = {&a.w, &small, &a.ov, 1};
    CHECK(be->ops->matmul_many(be, &mi, 1));
    CHECK(be_error(be) != NULL);
    free_item(&a);
    be->ops->destroy(be);
}

int main(void) {
    anv_log_enabled = 0;
    const char *paths[3] = {"scalar", "avx2", "avx512"};
    setenv("ANVIL_CPU_SIMD", "avx512", 1);
    const char *best = cpu_backend_simd();
    const int n_paths = !strcmp(best, "avx512") ? 3 : !strcmp(best, "avx2") ? 2 : 1;
    for (int pi = 0; pi < n_paths; pi++) {
        setenv("ANVIL_CPU_SIMD", paths[pi], 1);
        for (int threads = 1; threads <= 2; threads++) {
            backend *be = cpu_backend_new(threads);
            CHECK(be != NULL);
            if (!be) continue;
            CHECK(be->ops->matmul_many != NULL);
            if (be->ops->matmul_many) test_many(be);
            be->ops->destroy(be);
            if (pi == 0) test_bad_input(threads);
        }
    }
    return tu_finish();
}
