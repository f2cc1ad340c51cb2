/* test_cpu_ops: every CPU backend op against ref_ops, on odd shapes and views with a
 * non-zero offset, for each SIMD path this CPU has (forced with ANVIL_CPU_SIMD) at 1 and
 * 2 threads. Matmul covers every weight type at 1, 7 and 64 tokens, accumulate on/off
 * (IQ2_XS also with every one of its 65536 qs words);
 * attention covers F32/F16/Q8_0 caches, GQA ratios 1, 3, 4, 6, 1 and 64 tokens, window, softcap,
 * noncausal (encoders) with and without a symmetric window; the many-rows (tiled) kernel also
 * at head dims 20/40/64/72/80/128 and 97/150 tokens (chunk and tile remainders).
 *
 * Tolerances (max |cpu - ref| / max |ref| over the output):
 *  - float ops (norm, rope, glu, add, ...), F32/F16/BF16 matmul: 1e-5 .. 1e-4 (float vs double sums)
 *  - quantized-weight matmul vs ref (F32 activations, double sums): 1.2e-2 (measured
 *    worst 6e-3 over all types), the cost of quantizing activations to 8 bits, as
 *    llama.cpp does
 *  - SIMD matmul vs the scalar path on the same quantized activations: 1e-5
 *  - attention: 1e-4 (F32/F16/Q8_0 caches are read exactly; differences are summation order). */
#include "cpu_backend.h"
#include "error.h"
#include "fp16.h"
#include "quant.h"
#include "quant_iq.h"
#include "ref_ops.h"
#include "testutil.h"
#include "gguf/iq_rand.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 12345;

static float *rand_floats(int64_t n, float lo, float hi) {
    float *p = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) p[i] = tu_rand_f32(&rng, lo, hi);
    return p;
}

/* A tensor with `pad` rows before the data, and a view of the data rows (offset != 0). */
typedef struct { be_tensor *base; be_tensor view; } vt;

static vt make(backend *be, uint32_t type, int64_t cols, int64_t rows, int64_t pad) {
    vt v;
    v.base = be_tensor_new(be, type, cols, rows + pad);
    v.view = be_view_rows(v.base, pad, rows);
    return v;
}

static vt make_f32(backend *be, const float *data, int64_t cols, int64_t rows) {
    vt v = make(be, QT_F32, cols, rows, 3);
    be_upload(&v.view, 0, data, (size_t)(cols * rows) * sizeof(float));
    return v;
}

static float *read_f32(const be_tensor *t, int64_t n) {
    float *p = malloc((size_t)n * sizeof(float));
    be_download(t, 0, p, (size_t)n * sizeof(float));
    return p;
}

/* ---- matmul ---- */

static const uint32_t mm_types[] = {QT_F32, QT_F16, QT_BF16, QT_Q4_0, QT_Q4_1, QT_Q5_0, QT_Q5_1,
                                    QT_Q8_0, QT_Q2_K, QT_Q3_K, QT_Q4_K, QT_Q5_K, QT_Q6_K,
                                    /* read-only types: random blocks (gguf/iq_rand.h) */
                                    QT_MXFP4, QT_IQ4_NL, QT_IQ4_XS, QT_IQ3_XXS, QT_IQ3_S, QT_IQ2_XXS, QT_IQ2_XS, QT_IQ2_S, QT_IQ1_S, QT_IQ1_M, QT_TQ1_0, QT_TQ2_0};
#define N_MM_TYPES (int)(sizeof mm_types / sizeof mm_types[0])

static int64_t mm_cols(uint32_t type) {
    const int bs = qtype_get(type)->block_size;
    return bs == 1 ? 203 : bs == 32 ? 32 * 11 : 256 * 3;
}

/* Results of the scalar path per (type, n_tok index, accumulate): SIMD paths compare to them.
 * The n_tok values reach every token count of a kernel call (1..8) as a whole batch or as
 * the remainder after full tiles of MM_MAX_TOK (4) or MM_MAX_TOK4 (8) tokens. */
#define N_MM_NTOK 9
static float *scalar_results[N_MM_TYPES][N_MM_NTOK][2];
static const int mm_ntoks[N_MM_NTOK] = {1, 2, 3, 5, 6, 7, 9, 12, 64};
static float worst_vs_ref[N_MM_TYPES], worst_vs_scalar[N_MM_TYPES]; /* printed at the end */

static void test_matmul(backend *be, bool is_scalar) {
    const int64_t rows = 37;
    for (int ti = 0; ti < N_MM_TYPES; ti++) {
        const uint32_t type = mm_types[ti];
        const int64_t cols = mm_cols(type);
        const size_t rb = qtype_row_size(type, cols);
        rng = 1000 + (uint64_t)ti; /* same data on every path, so SIMD can be compared to scalar */
        /* weights: quantized from random floats, aliased with one row of padding before */
        float *wf = rand_floats(cols * rows, -1.0f, 1.0f);
        uint8_t *wq = malloc(rb * (size_t)(rows + 1));
        memset(wq, 0x5a, rb);
        for (int64_t r = 0; r < rows; r++) iq_rand_row(type, wf + r * cols, wq + rb * (size_t)(r + 1), cols, &rng);
        be_tensor *wbase = be->ops->weight_new(be, type, cols, rows + 1, wq);
        CHECK(wbase != NULL);
        if (!wbase) { free(wf); free(wq); continue; }
        be_tensor w = be_view_rows(wbase, 1, rows);
        for (int ni = 0; ni < N_MM_NTOK; ni++) {
            const int n_tok = mm_ntoks[ni];
            float *x = rand_floats(cols * n_tok, -2.0f, 2.0f);
            float *init = rand_floats(rows * n_tok, -1.0f, 1.0f);
            vt xt = make_f32(be, x, cols, n_tok);
            for (int acc = 0; acc < 2; acc++) {
                vt ot = make_f32(be, init, rows, n_tok);
                be->ops->matmul(be, &w, &xt.view, &ot.view, n_tok, acc);
                float *got = read_f32(&ot.view, rows * n_tok);
                float *want = malloc((size_t)(rows * n_tok) * sizeof(float));
                memcpy(want, init, (size_t)(rows * n_tok) * sizeof(float));
                ref_matmul(type, wq + rb, cols, rows, x, want, n_tok, acc);
                /* compare the product only: subtract the accumulated start value */
                if (acc) for (int64_t i = 0; i < rows * n_tok; i++) { got[i] -= init[i]; want[i] -= init[i]; }
                const bool is_float = type == QT_F32 || type == QT_F16 || type == QT_BF16;
                const float tol = is_float ? 1e-5f : 1.2e-2f;
                const float err = tu_rel_err(got, want, rows * n_tok);
                if (err > worst_vs_ref[ti]) worst_vs_ref[ti] = err;
                CHECKF(err < tol, "matmul %s n_tok %d acc %d: rel err %g >= %g", qtype_get(type)->name, n_tok, acc, err, tol);
                if (is_scalar) {
                    free(scalar_results[ti][ni][acc]);
                    scalar_results[ti][ni][acc] = got;
                    got = NULL;
                } else if (scalar_results[ti][ni][acc]) {
                    const float e2 = tu_rel_err(got, scalar_results[ti][ni][acc], rows * n_tok);
                    if (e2 > worst_vs_scalar[ti]) worst_vs_scalar[ti] = e2;
                    CHECKF(e2 < 1e-5f, "matmul %s n_tok %d acc %d: SIMD vs scalar rel err %g", qtype_get(type)->name, n_tok, acc, e2);
                }
                free(got);
                free(want);
                be_tensor_free(ot.base);
            }
            be_tensor_free(xt.base);
            free(x);
            free(init);
        }
        be_tensor_free(wbase);
        free(wf);
        free(wq);
    }
}

/* The prompt-sized i-quant / TQ kernels (gemm: decoded once per slab of 8 blocks and chunk
 * of 128 tokens, 16 or 4 rows per call): 9 blocks per row (a full slab and a ragged one),
 * 133 tokens (a full chunk, then 5: one tile short of 8), 37 rows (two 16-row tiles + 5 rows
 * through the mat-vec kernel), against the reference and the scalar path. */
static const uint32_t big_types[] = {QT_IQ4_XS, QT_IQ3_XXS, QT_IQ3_S, QT_IQ2_XXS, QT_IQ2_XS, QT_IQ2_S, QT_IQ1_S, QT_IQ1_M, QT_TQ1_0, QT_TQ2_0};
#define N_BIG_TYPES (int)(sizeof big_types / sizeof big_types[0])
static float *big_scalar[N_BIG_TYPES];

static void test_matmul_big(backend *be, bool is_scalar) {
    const int64_t rows = 37, cols = 256 * 9;
    const int n_tok = 133;
    for (int ti = 0; ti < N_BIG_TYPES; ti++) {
        const uint32_t type = big_types[ti];
        const size_t rb = qtype_row_size(type, cols);
        rng = 5000 + (uint64_t)ti;
        float *wf = rand_floats(cols * rows, -1.0f, 1.0f), *x = rand_floats(cols * n_tok, -2.0f, 2.0f);
        uint8_t *wq = malloc(rb * (size_t)rows);
        for (int64_t r = 0; r < rows; r++) iq_rand_row(type, wf + r * cols, wq + rb * (size_t)r, cols, &rng);
        be_tensor *w = be->ops->weight_new(be, type, cols, rows, wq);
        CHECK(w != NULL);
        if (w) {
            vt xt = make_f32(be, x, cols, n_tok), ot = make(be, QT_F32, rows, n_tok, 1);
            be->ops->matmul(be, w, &xt.view, &ot.view, n_tok, false);
            float *got = read_f32(&ot.view, rows * n_tok), *want = calloc((size_t)(rows * n_tok), sizeof(float));
            ref_matmul(type, wq, cols, rows, x, want, n_tok, false);
            const float err = tu_rel_err(got, want, rows * n_tok);
            CHECKF(err < 1.2e-2f, "matmul %s %lldx%lld n_tok %d: rel err %g", qtype_get(type)->name, (long long)rows, (long long)cols, n_tok, err);
            if (is_scalar) {
                free(big_scalar[ti]);
                big_scalar[ti] = got;
                got = NULL;
            } else if (big_scalar[ti]) {
                const float e2 = tu_rel_err(got, big_scalar[ti], rows * n_tok);
                CHECKF(e2 < 1e-5f, "matmul %s %lldx%lld n_tok %d: SIMD vs scalar rel err %g", qtype_get(type)->name, (long long)rows, (long long)cols, n_tok, e2);
            }
            free(got);
            free(want);
            be_tensor_free(xt.base);
            be_tensor_free(ot.base);
            be_tensor_free(w);
        }
        free(wf);
        free(x);
        free(wq);
    }
}

/* IQ2_XS's mat-vec looks each 16-bit qs word (grid index, sign index) up in one table:
 * every one of the 65536 words, once, in 64 rows of 32 blocks (random block scales), at 1, 3
 * and 4 tokens against the reference and the scalar path (a wrong table entry moves its row
 * by far more than the 1e-5 SIMD-vs-scalar tolerance). */
#define IQ2XS_ALL_ROWS 64
#define IQ2XS_ALL_COLS (256 * 32)
static const int iq2xs_all_ntoks[3] = {1, 3, 4};
static float *iq2xs_all_scalar[3];

static void test_matmul_iq2xs_all_words(backend *be, bool is_scalar) {
    const int64_t rows = IQ2XS_ALL_ROWS, cols = IQ2XS_ALL_COLS, nb = rows * cols / QK_K;
    block_iq2_xs *wq = malloc((size_t)nb * sizeof *wq);
    rng = 9000;
    for (int64_t b = 0; b < nb; b++) {
        wq[b].d = fp32_to_fp16(tu_rand_f32(&rng, 0.01f, 0.05f));
        for (int k = 0; k < QK_K / 8; k++) wq[b].qs[k] = (uint16_t)(b * (QK_K / 8) + k);
        for (int k = 0; k < QK_K / 32; k++) wq[b].scales[k] = (uint8_t)(tu_rand_f32(&rng, 0.0f, 255.99f));
    }
    be_tensor *w = be->ops->weight_new(be, QT_IQ2_XS, cols, rows, wq);
    CHECK(w != NULL);
    for (int ni = 0; w && ni < 3; ni++) {
        const int n_tok = iq2xs_all_ntoks[ni];
        float *x = rand_floats(cols * n_tok, -2.0f, 2.0f);
        vt xt = make_f32(be, x, cols, n_tok), ot = make(be, QT_F32, rows, n_tok, 1);
        be->ops->matmul(be, w, &xt.view, &ot.view, n_tok, false);
        float *got = read_f32(&ot.view, rows * n_tok), *want = calloc((size_t)(rows * n_tok), sizeof(float));
        ref_matmul(QT_IQ2_XS, wq, cols, rows, x, want, n_tok, false);
        const float err = tu_rel_err(got, want, rows * n_tok);
        CHECKF(err < 1.2e-2f, "matmul iq2_xs every qs word, n_tok %d: rel err %g", n_tok, err);
        if (is_scalar) {
            free(iq2xs_all_scalar[ni]);
            iq2xs_all_scalar[ni] = got;
            got = NULL;
        } else if (iq2xs_all_scalar[ni]) {
            const float e2 = tu_rel_err(got, iq2xs_all_scalar[ni], rows * n_tok);
            CHECKF(e2 < 1e-5f, "matmul iq2_xs every qs word, n_tok %d: SIMD vs scalar rel err %g", n_tok, e2);
        }
        free(got);
        free(want);
        free(x);
        be_tensor_free(xt.base);
        be_tensor_free(ot.base);
    }
    if (w) be_tensor_free(w);
    free(wq);
}

/* ---- element-wise and row ops ---- */

static void test_rms_norm(backend *be) {
    const int64_t n_rows = 9, row_len = 67; /* per-head norm: row_len < x->cols */
    float *x = rand_floats(n_rows * row_len, -3, 3), *w = rand_floats(row_len, 0.5f, 1.5f);
    vt xt = make_f32(be, x, row_len * 3, n_rows / 3), wt = make_f32(be, w, row_len, 1), ot = make(be, QT_F32, row_len, n_rows, 2);
    float want[9 * 67];
    for (int with_w = 0; with_w < 2; with_w++) {
        be->ops->rms_norm(be, &xt.view, with_w ? &wt.view : NULL, &ot.view, n_rows, row_len, 1e-6f);
        float *got = read_f32(&ot.view, n_rows * row_len);
        ref_rms_norm(x, with_w ? w : NULL, want, n_rows, row_len, 1e-6f);
        CHECKF(tu_rel_err(got, want, n_rows * row_len) < 1e-6f, "rms_norm w=%d err %g", with_w, tu_rel_err(got, want, n_rows * row_len));
        free(got);
    }
    be_tensor_free(xt.base); be_tensor_free(wt.base); be_tensor_free(ot.base);
    free(x); free(w);
}

static void test_elementwise(backend *be) {
    const int64_t n = 67 * 1031, b_n = 1031; /* large enough to be split over threads */
    float *a = rand_floats(n, -2, 2), *b = rand_floats(b_n, -2, 2);
    float *want = malloc((size_t)n * sizeof(float));
    vt at = make_f32(be, a, b_n, n / b_n), bt = make_f32(be, b, b_n, 1), ot = make(be, QT_F32, b_n, n / b_n, 1);
    for (int op = 0; op < 3; op++) {
        if (op == 0) { be->ops->add(be, &at.view, &bt.view, &ot.view, n, b_n); ref_add(a, b, want, n, b_n); }
        if (op == 1) { be->ops->mul(be, &at.view, &bt.view, &ot.view, n, b_n); ref_mul(a, b, want, n, b_n); }
        if (op == 2) { /* in place, and out aliasing a for add */
            be->ops->add(be, &at.view, &bt.view, &at.view, n, b_n); ref_add(a, b, want, n, b_n);
            be->ops->scale(be, &at.view, n, -0.37f); ref_scale(want, n, -0.37f);
        }
        float *got = read_f32(op == 2 ? &at.view : &ot.view, n);
        CHECKF(tu_max_abs_diff(got, want, n) == 0, "elementwise op %d: diff %g", op, tu_max_abs_diff(got, want, n));
        free(got);
    }
    /* small sizes take the inline path */
    be->ops->mul(be, &bt.view, &bt.view, &ot.view, 5, 3);
    float *got = read_f32(&ot.view, 5);
    float w5[5];
    ref_mul(b, b, w5, 5, 3);
    CHECK(tu_max_abs_diff(got, w5, 5) == 0);
    free(got);
    be_tensor_free(at.base); be_tensor_free(bt.base); be_tensor_free(ot.base);
    free(a); free(b); free(want);
}

/* clamp (gemma4v's clipped linears): an odd length split over threads, out apart and in place,
 * bounds inside the data's range so both sides bite */
static void test_clamp(backend *be) {
    const int64_t n = 3 * 20011;
    float *x = rand_floats(n, -3, 3), *want = malloc((size_t)n * sizeof(float));
    vt xt = make_f32(be, x, 20011, 3), ot = make(be, QT_F32, 20011, 3, 1);
    ref_clamp(x, want, n, -1.25f, 0.7f);
    for (int in_place = 0; in_place < 2; in_place++) {
        be_tensor *dst = in_place ? &xt.view : &ot.view;
        be->ops->clamp(be, &xt.view, dst, n, -1.25f, 0.7f);
        float *got = read_f32(dst, n);
        CHECKF(tu_max_abs_diff(got, want, n) == 0, "clamp in_place=%d: diff %g", in_place, tu_max_abs_diff(got, want, n));
        free(got);
    }
    be_tensor_free(xt.base); be_tensor_free(ot.base);
    free(x); free(want);
}

static void test_glu(backend *be) {
    const int64_t n = 40001;
    float *g = rand_floats(n, -8, 8), *u = rand_floats(n, -2, 2), *want = malloc((size_t)n * sizeof(float));
    vt gt = make_f32(be, g, n, 1), ut = make_f32(be, u, n, 1), ot = make(be, QT_F32, n, 1, 1);
    for (int k = 0; k < 2; k++) {
        be->ops->glu(be, &gt.view, &ut.view, &ot.view, n, (be_glu_kind)k);
        ref_glu(g, u, want, n, (be_glu_kind)k);
        float *got = read_f32(&ot.view, n);
        CHECKF(tu_rel_err(got, want, n) < 1e-6f, "glu %d err %g", k, tu_rel_err(got, want, n));
        free(got);
    }
    be_tensor_free(gt.base); be_tensor_free(ut.base); be_tensor_free(ot.base);
    free(g); free(u); free(want);
    /* Gates far out in the tails (the SIMD exp clamps its input): finite, and within 1e-6
     * of the reference relative to |gate|. 17 values: a vector of 8 and a scalar tail. */
    const float big[17] = {-1000, -200, -100, -90, -88, -50, -20, -1e-30f, 0, 1e-30f, 20, 50, 88, 90, 100, 200, 1000};
    float ones[17], want2[17];
    for (int i = 0; i < 17; i++) ones[i] = 1.0f;
    vt bt = make_f32(be, big, 17, 1), onet = make_f32(be, ones, 17, 1), ot2 = make(be, QT_F32, 17, 1, 1);
    for (int k = 0; k < 2; k++) {
        be->ops->glu(be, &bt.view, &onet.view, &ot2.view, 17, (be_glu_kind)k);
        ref_glu(big, ones, want2, 17, (be_glu_kind)k);
        float *got = read_f32(&ot2.view, 17);
        for (int i = 0; i < 17; i++)
            CHECKF(isfinite(got[i]) && fabsf(got[i] - want2[i]) <= 1e-6f * fmaxf(1.0f, fabsf(big[i])), "glu %d gate %g: %g vs %g", k, big[i], got[i], want2[i]);
        free(got);
    }
    be_tensor_free(bt.base); be_tensor_free(onet.base); be_tensor_free(ot2.base);
}

static void test_rope(backend *be) {
    const int n_head = 3, head_dim = 40;
    const int n_rots[2] = {40, 24};
    for (int tk = 0; tk < 2; tk++) {
        const int n_tok = tk ? 64 : 1, pos0 = tk ? 3 : 517;
        for (int mode = 0; mode < 2; mode++)
            for (int ri = 0; ri < 2; ri++)
                for (int with_ff = 0; with_ff < 2; with_ff++) {
                    const int n_rot = n_rots[ri];
                    const int64_t n = (int64_t)n_tok * n_head * head_dim;
                    float *x = rand_floats(n, -1, 1), *ff = rand_floats(n_rot / 2, 1, 8);
                    vt xt = make_f32(be, x, n_head * head_dim, n_tok), ft = make_f32(be, ff, n_rot / 2, 1);
                    be_rope_params p = {.n_rot = n_rot, .mode = mode ? BE_ROPE_NEOX : BE_ROPE_NORMAL, .freq_base = 10000.0f,
                                        .freq_scale = 0.5f, .freq_factors = with_ff ? &ft.view : NULL};
                    be->ops->rope(be, &xt.view, n_tok, n_head, head_dim, pos0, &p);
                    ref_rope(x, n_tok, n_head, head_dim, pos0, n_rot, p.mode, 10000.0f, 0.5f, with_ff ? ff : NULL);
                    float *got = read_f32(&xt.view, n);
                    CHECKF(tu_max_abs_diff(got, x, n) < 1e-6f, "rope n_tok %d mode %d n_rot %d ff %d: diff %g", n_tok, mode, n_rot, with_ff, tu_max_abs_diff(got, x, n));
                    free(got);
                    be_tensor_free(xt.base); be_tensor_free(ft.base);
                    free(x); free(ff);
                }
    }
}

/* rope_rows (M-RoPE / the ViT's 2-D rope) against the reference on odd shapes: whole and partial
 * rotation, one token and many. */
static void test_rope_rows(backend *be) {
    const int n_head = 3, head_dim = 22;
    const int n_rots[2] = {22, 10}, n_toks[2] = {1, 37};
    for (int tk = 0; tk < 2; tk++)
        for (int ri = 0; ri < 2; ri++) {
            const int n_tok = n_toks[tk], n_rot = n_rots[ri];
            const int64_t n = (int64_t)n_tok * n_head * head_dim;
            float *x = rand_floats(n, -1, 1), *tab = rand_floats((int64_t)n_tok * n_rot, -1, 1);
            vt xt = make_f32(be, x, n_head * head_dim, n_tok), tt = make_f32(be, tab, n_rot, n_tok);
            be->ops->rope_rows(be, &xt.view, &tt.view, n_tok, n_head, head_dim, n_rot);
            ref_rope_rows(x, tab, n_tok, n_head, head_dim, n_rot);
            float *got = read_f32(&xt.view, n);
            CHECKF(tu_max_abs_diff(got, x, n) < 1e-6f, "rope_rows n_tok %d n_rot %d: diff %g", n_tok, n_rot, tu_max_abs_diff(got, x, n));
            free(got);
            be_tensor_free(xt.base); be_tensor_free(tt.base);
            free(x); free(tab);
        }
}

static void test_get_rows(backend *be) {
    const uint32_t types[] = {QT_F32, QT_F16, QT_Q8_0, QT_Q4_K, QT_Q6_K, QT_MXFP4, QT_IQ4_NL, QT_IQ4_XS, QT_IQ3_XXS, QT_IQ3_S, QT_IQ2_XXS, QT_IQ2_XS, QT_IQ2_S, QT_IQ1_S, QT_IQ1_M, QT_TQ1_0, QT_TQ2_0};
    const int32_t ids[5] = {4, 0, 4, 6, 2};
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        const uint32_t type = types[k];
        const int64_t cols = qtype_get(type)->block_size == 1 ? 13 : 512, rows = 7;
        const size_t rb = qtype_row_size(type, cols);
        float *f = rand_floats(cols * rows, -1, 1);
        uint8_t *q = malloc(rb * (size_t)rows);
        for (int64_t r = 0; r < rows; r++) iq_rand_row(type, f + r * cols, q + rb * (size_t)r, cols, &rng);
        be_tensor *tab = be->ops->weight_new(be, type, cols, rows, q);
        vt ot = make(be, QT_F32, cols, 5, 2);
        be->ops->get_rows(be, tab, ids, 5, &ot.view);
        float *got = read_f32(&ot.view, 5 * cols), *want = malloc((size_t)(5 * cols) * sizeof(float));
        ref_get_rows(type, q, cols, ids, 5, want);
        CHECKF(tu_max_abs_diff(got, want, 5 * cols) == 0, "get_rows %s", qtype_get(type)->name);
        /* out-of-range id: error, no crash */
        const int32_t bad = 7;
        anv_set_error("%s", "");
        be->ops->get_rows(be, tab, &bad, 1, &ot.view);
        CHECK(strstr(anv_last_error(), "out of range") != NULL);
        free(got); free(want); free(f); free(q);
        be_tensor_free(tab); be_tensor_free(ot.base);
    }
}

static void test_store_rows(backend *be) {
    const uint32_t types[] = {QT_F32, QT_F16, QT_Q8_0};
    for (size_t k = 0; k < 3; k++) {
        const uint32_t type = types[k];
        const int64_t cols = type == QT_Q8_0 ? 96 : 45, rows = 11, n = 4, row0 = 5;
        const size_t rb = qtype_row_size(type, cols);
        float *src = rand_floats(cols * n, -3, 3);
        vt st = make_f32(be, src, cols, n);
        vt dt = make(be, type, cols, rows, 1);
        uint8_t *want = calloc(rows, rb), *got = malloc(rb * rows);
        be_upload(&dt.view, 0, want, rb * rows);
        be->ops->store_rows(be, &st.view, &dt.view, row0, n);
        ref_store_rows(src, type, want, cols, row0, n);
        be_download(&dt.view, 0, got, rb * rows);
        CHECKF(memcmp(got, want, rb * rows) == 0, "store_rows %s not byte-exact", qtype_get(type)->name);
        anv_set_error("%s", "");
        be->ops->store_rows(be, &st.view, &dt.view, rows - 1, n); /* past the end */
        CHECK(anv_last_error()[0] != 0);
        free(src); free(want); free(got);
        be_tensor_free(st.base); be_tensor_free(dt.base);
    }
}

static void test_attention(backend *be) {
    const uint32_t kv_types[3] = {QT_F32, QT_F16, QT_Q8_0};
    const int ratios[4] = {1, 3, 4, 6}; /* 3: uneven split of a group over items */
    for (int kt = 0; kt < 3; kt++)
        for (int ri = 0; ri < 4; ri++)
            for (int tk = 0; tk < 2; tk++)
                for (int variant = 0; variant < 5; variant++) { /* plain, window, softcap, noncausal (+ window) */
                    be_attn_params p = {0};
                    p.n_tok = tk ? 64 : 1;
                    p.pos0 = tk ? 5 : 70;
                    p.n_kv_head = 2;
                    p.n_head = 2 * ratios[ri];
                    p.head_dim = kv_types[kt] == QT_Q8_0 ? 64 : 72;
                    p.scale = 1.0f / sqrtf((float)p.head_dim);
                    p.window = variant == 1 || variant == 4 ? 16 : 0;
                    p.noncausal = variant >= 3;
                    p.softcap = variant == 2 ? 5.0f : 0.0f;
                    const int64_t q_cols = (int64_t)p.n_head * p.head_dim, kv_cols = (int64_t)p.n_kv_head * p.head_dim;
                    const int ctx = p.pos0 + p.n_tok + 3;
                    float *q = rand_floats(q_cols * p.n_tok, -2, 2);
                    float *kf = rand_floats(kv_cols * ctx, -2, 2), *vf = rand_floats(kv_cols * ctx, -2, 2);
                    vt qt = make_f32(be, q, q_cols, p.n_tok), ot = make(be, QT_F32, q_cols, p.n_tok, 1);
                    vt kc = make(be, kv_types[kt], kv_cols, ctx, 2), vc = make(be, kv_types[kt], kv_cols, ctx, 2);
                    vt ks = make_f32(be, kf, kv_cols, ctx), vs = make_f32(be, vf, kv_cols, ctx);
                    be->ops->store_rows(be, &ks.view, &kc.view, 0, ctx);
                    be->ops->store_rows(be, &vs.view, &vc.view, 0, ctx);
                    be->ops->attention(be, &qt.view, &kc.view, &vc.view, &ot.view, &p);
                    const size_t kv_bytes = be_nbytes(&kc.view);
                    uint8_t *kh = malloc(kv_bytes), *vh = malloc(kv_bytes);
                    be_download(&kc.view, 0, kh, kv_bytes);
                    be_download(&vc.view, 0, vh, kv_bytes);
                    float *want = malloc((size_t)(q_cols * p.n_tok) * sizeof(float));
                    ref_attention(q, kv_types[kt], kh, vh, want, &p);
                    float *got = read_f32(&ot.view, q_cols * p.n_tok);
                    const float err = tu_rel_err(got, want, q_cols * p.n_tok);
                    CHECKF(err < 1e-4f, "attention %s gqa %d n_tok %d variant %d: rel err %g", qtype_get(kv_types[kt])->name, ratios[ri], p.n_tok, variant, err);
                    free(q); free(kf); free(vf); free(kh); free(vh); free(want); free(got);
                    be_tensor_free(qt.base); be_tensor_free(ot.base); be_tensor_free(kc.base);
                    be_tensor_free(vc.base); be_tensor_free(ks.base); be_tensor_free(vs.base);
                }
}

/* Many query rows: noncausal (+ window) through the tiled kernel (the vision encoders), causal
 * (+ window, softcap) through the per-pair one; head dims 40/64/72/80/128 and 20 (not a multiple
 * of 8), key counts that are not multiples of the 64-key chunk or the 32-token tile, GQA 1 and 3,
 * F32/F16 caches. */
static void test_attention_many_rows(backend *be) {
    const int head_dims[6] = {40, 64, 72, 80, 128, 20};
    for (int hi = 0; hi < 6; hi++)
        for (int variant = 0; variant < 5; variant++) { /* noncausal, noncausal window, causal, causal window, softcap */
            be_attn_params p = {0};
            p.head_dim = head_dims[hi];
            p.n_kv_head = 2;
            p.n_head = variant == 2 || variant == 4 ? 6 : 2;
            p.n_tok = hi % 2 ? 97 : 150;
            p.pos0 = variant >= 2 ? 11 : 0;
            p.scale = 1.0f / sqrtf((float)p.head_dim);
            p.noncausal = variant < 2;
            /* windows narrower than a key chunk, and wider than chunk + tile (chunks fully inside) */
            p.window = variant == 1 ? (hi % 2 ? 40 : 190) : variant == 3 ? (hi % 2 ? 37 : 110) : 0;
            p.softcap = variant == 4 ? 4.0f : 0.0f;
            const uint32_t kvt = hi % 3 == 1 ? QT_F16 : QT_F32;
            const int64_t q_cols = (int64_t)p.n_head * p.head_dim, kv_cols = (int64_t)p.n_kv_head * p.head_dim;
            const int ctx = p.pos0 + p.n_tok;
            float *q = rand_floats(q_cols * p.n_tok, -3, 3);
            float *kf = rand_floats(kv_cols * ctx, -2, 2), *vf = rand_floats(kv_cols * ctx, -2, 2);
            vt qt = make_f32(be, q, q_cols, p.n_tok), ot = make(be, QT_F32, q_cols, p.n_tok, 1);
            vt kc = make(be, kvt, kv_cols, ctx, 2), vc = make(be, kvt, kv_cols, ctx, 2);
            vt ks = make_f32(be, kf, kv_cols, ctx), vs = make_f32(be, vf, kv_cols, ctx);
            be->ops->store_rows(be, &ks.view, &kc.view, 0, ctx);
            be->ops->store_rows(be, &vs.view, &vc.view, 0, ctx);
            be->ops->attention(be, &qt.view, &kc.view, &vc.view, &ot.view, &p);
            const size_t kv_bytes = be_nbytes(&kc.view);
            uint8_t *kh = malloc(kv_bytes), *vh = malloc(kv_bytes);
            be_download(&kc.view, 0, kh, kv_bytes);
            be_download(&vc.view, 0, vh, kv_bytes);
            float *want = malloc((size_t)(q_cols * p.n_tok) * sizeof(float));
            ref_attention(q, kvt, kh, vh, want, &p);
            float *got = read_f32(&ot.view, q_cols * p.n_tok);
            const float err = tu_rel_err(got, want, q_cols * p.n_tok);
            CHECKF(err < 1e-4f, "attention many rows head_dim %d n_tok %d variant %d: rel err %g", p.head_dim, p.n_tok, variant, err);
            free(q); free(kf); free(vf); free(kh); free(vh); free(want); free(got);
            be_tensor_free(qt.base); be_tensor_free(ot.base); be_tensor_free(kc.base);
            be_tensor_free(vc.base); be_tensor_free(ks.base); be_tensor_free(vs.base);
        }
}

static void test_errors(backend *be) {
    CHECK(be_tensor_new(be, QT_Q4_0, 33, 2) == NULL); /* cols not a block multiple */
    CHECK(strstr(anv_last_error(), "bad shape") != NULL);
    CHECK(be_tensor_new(be, 999, 32, 2) == NULL);
    uint8_t raw[292 * 2] = {0};
    be_tensor *w = be->ops->weight_new(be, QT_Q8_K, 256, 2, raw); /* not a weight type */
    vt x = make(be, QT_F32, 256, 1, 0), o = make(be, QT_F32, 2, 1, 0);
    anv_set_error("%s", "");
    if (w) be->ops->matmul(be, w, &x.view, &o.view, 1, false);
    CHECK(w == NULL || strstr(anv_last_error(), "not supported") != NULL);
    be_tensor_free(w);
    be_tensor_free(x.base);
    be_tensor_free(o.base);
}

int main(void) {
    anv_log_enabled = 0;
    const char *paths[3] = {"scalar", "avx2", "avx512"};
    setenv("ANVIL_CPU_SIMD", "avx512", 1);
    const char *best = cpu_backend_simd();
    int n_paths = !strcmp(best, "avx512") ? 3 : !strcmp(best, "avx2") ? 2 : 1;
    for (int pi = 0; pi < n_paths; pi++) {
        setenv("ANVIL_CPU_SIMD", paths[pi], 1);
        CHECK(!strcmp(cpu_backend_simd(), paths[pi]));
        for (int threads = 1; threads <= 2; threads++) {
            backend *be = cpu_backend_new(threads);
            CHECK(be != NULL);
            if (!be) continue;
            CHECK(cpu_backend_threads(be) == threads);
            printf("path %s, %d thread(s): %s\n", paths[pi], threads, be->device_desc);
            test_matmul(be, pi == 0 && threads == 1);
            test_matmul_big(be, pi == 0 && threads == 1);
            test_matmul_iq2xs_all_words(be, pi == 0 && threads == 1);
            test_rms_norm(be);
            test_elementwise(be);
            test_clamp(be);
            test_glu(be);
            test_rope(be);
            test_rope_rows(be);
            test_get_rows(be);
            test_store_rows(be);
            test_attention(be);
            test_attention_many_rows(be);
            test_errors(be);
            be->ops->destroy(be);
        }
    }
    for (int a = 0; a < N_MM_TYPES; a++)
        printf("matmul %-5s worst rel err vs ref %.2e, SIMD vs scalar %.2e\n", qtype_get(mm_types[a])->name, worst_vs_ref[a], worst_vs_scalar[a]);
    for (int a = 0; a < N_MM_TYPES; a++)
        for (int b = 0; b < N_MM_NTOK; b++) for (int c = 0; c < 2; c++) free(scalar_results[a][b][c]);
    for (int a = 0; a < N_BIG_TYPES; a++) free(big_scalar[a]);
    for (int a = 0; a < 3; a++) free(iq2xs_all_scalar[a]);
    return tu_finish();
}
