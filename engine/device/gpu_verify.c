/* gpu_verify: the GPU kernels a model would use, run on the device against cpu/ref_ops.c
 * on the model's shapes, with a verdict and a checked fix per case (see gpu_verify.h). */
#include "gpu_verify.h"
#include "gpu_verify_case.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "device_extras.h"
#include "error.h"
#include "quant.h"
#include "ref_ops.h"

#define MV_ROWS_CAP 4096 /* rows of a weight checked at mat-vec batch sizes */
#define MM_ROWS_CAP 256  /* ... at the prefill batch size (the scalar reference is slow) */


static void fmt(char *dst, size_t n, const char *f, ...) ANV_PRINTF(3, 4);
static void fmt(char *dst, size_t n, const char *f, ...) {
    va_list ap;
    va_start(ap, f);
    vsnprintf(dst, n, f, ap);
    va_end(ap);
}

static float rnd(uint64_t *s, float lo, float hi) {
    *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17;
    return lo + (hi - lo) * (float)((*s >> 40) & 0xffffff) / 16777216.0f;
}
static float *rnd_array(uint64_t *s, int64_t n, float lo, float hi) {
    float *x = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    if (x) for (int64_t i = 0; i < n; i++) x[i] = rnd(s, lo, hi);
    return x;
}

static void *quantize_rows(uint32_t type, const float *x, int64_t cols, int64_t rows) {
    size_t rb = qtype_row_size((qtype)type, cols);
    uint8_t *q = calloc((size_t)rows, rb);
    if (q) for (int64_t r = 0; r < rows; r++) quantize_row((qtype)type, x + r * cols, q + (size_t)r * rb, cols);
    return q;
}

/* Elements of a case's output. */
static int64_t out_elems(const spec *s) {
    switch (s->k) {
    case K_MATMUL: return s->b * s->n_tok;
    case K_RMS: return s->a * s->b;
    case K_ROPE: return (int64_t)s->n_tok * s->n_head * s->head_dim;
    case K_ADD: case K_GLU: return s->a;
    case K_STORE: return s->a * s->b;
    case K_ATTN: return (int64_t)s->ap.n_tok * s->ap.n_head * s->ap.head_dim;
    case K_MMGLU: return s->b * s->n_tok;
    case K_ROPESTORE: return (int64_t)s->n_tok * (s->n_head + 2 * s->n_kv_head) * s->head_dim; /* q, then k and v rows */
    }
    return 0;
}


static bool make_inputs(const spec *s, inputs *in) {
    memset(in, 0, sizeof *in);
    uint64_t st = s->seed | 1;
    switch (s->k) {
    case K_MATMUL:
        in->x = rnd_array(&st, s->a * s->n_tok, -1, 1);
        in->o0 = rnd_array(&st, s->b * s->n_tok, -1, 1);
        return in->x && in->o0;
    case K_RMS: in->x = rnd_array(&st, s->a * s->b, -2, 2); return in->x != NULL;
    case K_ROPE: in->x = rnd_array(&st, out_elems(s), -1, 1); return in->x != NULL;
    case K_ADD:
        in->x = rnd_array(&st, s->a, -1, 1); in->y = rnd_array(&st, s->b, -1, 1);
        return in->x && in->y;
    case K_GLU:
        in->x = rnd_array(&st, s->a, -4, 4); in->y = rnd_array(&st, s->a, -2, 2);
        return in->x && in->y;
    case K_STORE: in->x = rnd_array(&st, s->a * s->b, -3, 3); return in->x != NULL;
    case K_MMGLU: in->x = rnd_array(&st, s->a * s->n_tok, -1, 1); return in->x != NULL;
    case K_ROPESTORE: /* x: q; y: k then v */
        in->x = rnd_array(&st, (int64_t)s->n_tok * s->n_head * s->head_dim, -1, 1);
        in->y = rnd_array(&st, 2 * (int64_t)s->n_tok * s->n_kv_head * s->head_dim, -3, 3);
        return in->x && in->y;
    case K_ATTN: {
        in->kvc = (int64_t)s->ap.n_kv_head * s->ap.head_dim;
        in->ctx = s->ap.pos0 + s->ap.n_tok + 1;
        float *kf = rnd_array(&st, in->kvc * in->ctx, -1, 1), *vf = rnd_array(&st, in->kvc * in->ctx, -1, 1);
        in->x = rnd_array(&st, out_elems(s), -1, 1);
        if (kf && vf) { in->kq = quantize_rows(s->type, kf, in->kvc, in->ctx); in->vq = quantize_rows(s->type, vf, in->kvc, in->ctx); }
        free(kf); free(vf);
        return in->x && in->kq && in->vq;
    }
    }
    return false;
}

static void free_inputs(inputs *in) { free(in->x); free(in->y); free(in->o0); free(in->kq); free(in->vq); }

be_tensor *gv_up(backend *be, uint32_t type, int64_t cols, int64_t rows, const void *data) {
    be_tensor *t = be->ops->tensor_new(be, type, cols, rows);
    if (t && data) be_upload(t, 0, data, be_nbytes(t));
    return t;
}

/* Dequantized rows [row0, row0 + n) of a KV-typed buffer. */
void gv_dequant_rows(uint32_t type, const uint8_t *buf, int64_t cols, int64_t row0, int64_t n, float *out) {
    size_t rb = qtype_row_size((qtype)type, cols);
    for (int64_t r = 0; r < n; r++) dequantize_row((qtype)type, buf + (size_t)(row0 + r) * rb, out + r * cols, cols);
}

#include "hash.h"
#include "settings.h"

/* Runs the case on be; out receives out_elems floats. 0, or -1 (backend or memory error). */
static int run_gpu(backend *be, const spec *s, const inputs *in, float *out) {
    const backend_ops *op = be->ops;
    be_tensor *t[8] = { 0 };
    int rc = -1;
    const int64_t n_out = out_elems(s);
    float *zeros = calloc((size_t)n_out + 1, sizeof(float));
    if (!zeros) return -1;
    switch (s->k) {
    case K_MATMUL:
        t[0] = be->ops->weight_new(be, s->type, s->a, s->b, s->wdata);
        t[1] = gv_up(be, QT_F32, s->a, s->n_tok, in->x);
        t[2] = gv_up(be, QT_F32, s->b, s->n_tok, s->accumulate ? in->o0 : zeros);
        if (t[0] && t[1] && t[2]) { op->matmul(be, t[0], t[1], t[2], s->n_tok, s->accumulate); be_download(t[2], 0, out, sizeof(float) * (size_t)n_out); rc = 0; }
        break;
    case K_RMS:
        t[0] = gv_up(be, QT_F32, s->a, s->b, in->x);
        t[1] = s->wdata ? gv_up(be, QT_F32, s->a, 1, s->wdata) : NULL;
        t[2] = gv_up(be, QT_F32, s->a, s->b, zeros);
        if (t[0] && t[2] && (t[1] || !s->wdata)) { op->rms_norm(be, t[0], t[1], t[2], s->b, s->a, s->eps); be_download(t[2], 0, out, sizeof(float) * (size_t)n_out); rc = 0; }
        break;
    case K_ROPE: {
        t[0] = gv_up(be, QT_F32, (int64_t)s->n_head * s->head_dim, s->n_tok, in->x);
        t[1] = s->wdata ? gv_up(be, QT_F32, s->rp.n_rot / 2, 1, s->wdata) : NULL;
        be_rope_params rp = s->rp;
        rp.freq_factors = t[1];
        if (t[0] && (t[1] || !s->wdata)) { op->rope(be, t[0], s->n_tok, s->n_head, s->head_dim, s->pos0, &rp); be_download(t[0], 0, out, sizeof(float) * (size_t)n_out); rc = 0; }
        break;
    }
    case K_ADD:
        t[0] = gv_up(be, QT_F32, s->a, 1, in->x); t[1] = gv_up(be, QT_F32, s->b, 1, in->y); t[2] = gv_up(be, QT_F32, s->a, 1, zeros);
        if (t[0] && t[1] && t[2]) { op->add(be, t[0], t[1], t[2], s->a, s->b); be_download(t[2], 0, out, sizeof(float) * (size_t)n_out); rc = 0; }
        break;
    case K_GLU:
        t[0] = gv_up(be, QT_F32, s->a, 1, in->x); t[1] = gv_up(be, QT_F32, s->a, 1, in->y); t[2] = gv_up(be, QT_F32, s->a, 1, zeros);
        if (t[0] && t[1] && t[2]) { op->glu(be, t[0], t[1], t[2], s->a, s->glu); be_download(t[2], 0, out, sizeof(float) * (size_t)n_out); rc = 0; }
        break;
    case K_STORE: {
        const int64_t rows = s->b + STORE_ROW0 + 1;
        const size_t rb = qtype_row_size((qtype)s->type, s->a);
        uint8_t *dst = calloc((size_t)rows, rb);
        t[0] = gv_up(be, QT_F32, s->a, s->b, in->x);
        t[1] = dst ? gv_up(be, s->type, s->a, rows, dst) : NULL;
        if (t[0] && t[1]) {
            op->store_rows(be, t[0], t[1], STORE_ROW0, s->b);
            be_download(t[1], 0, dst, (size_t)rows * rb);
            gv_dequant_rows(s->type, dst, s->a, STORE_ROW0, s->b, out);
            rc = 0;
        }
        free(dst);
        break;
    }
    case K_ATTN:
        t[0] = gv_up(be, QT_F32, (int64_t)s->ap.n_head * s->ap.head_dim, s->ap.n_tok, in->x);
        t[1] = gv_up(be, s->type, in->kvc, in->ctx, in->kq);
        t[2] = gv_up(be, s->type, in->kvc, in->ctx, in->vq);
        t[3] = gv_up(be, QT_F32, (int64_t)s->ap.n_head * s->ap.head_dim, s->ap.n_tok, zeros);
        if (t[0] && t[1] && t[2] && t[3]) { op->attention(be, t[0], t[1], t[2], t[3], &s->ap); be_download(t[3], 0, out, sizeof(float) * (size_t)n_out); rc = 0; }
        break;
    case K_MMGLU: rc = gvf_run_matmul_glu(be, s, in, zeros, out, t); break;
    case K_ROPESTORE: rc = gvf_run_rope_store(be, s, in, out, t); break;
    }
    for (int i = 0; i < 8; i++) be_tensor_free(t[i]);
    free(zeros);
    if (be_failed(be)) rc = -1;
    return rc;
}

static int run_ref(const spec *s, const inputs *in, float *out) {
    const int64_t n_out = out_elems(s);
    switch (s->k) {
    case K_MATMUL:
        if (s->accumulate) memcpy(out, in->o0, sizeof(float) * (size_t)n_out);
        return ref_matmul(s->type, s->wdata, s->a, s->b, in->x, out, s->n_tok, s->accumulate);
    case K_RMS: ref_rms_norm(in->x, s->wdata, out, s->b, s->a, s->eps); return 0;
    case K_ROPE:
        memcpy(out, in->x, sizeof(float) * (size_t)n_out);
        return ref_rope(out, s->n_tok, s->n_head, s->head_dim, s->pos0, s->rp.n_rot, s->rp.mode, s->rp.freq_base, s->rp.freq_scale, s->wdata);
    case K_ADD: ref_add(in->x, in->y, out, s->a, s->b); return 0;
    case K_GLU: ref_glu(in->x, in->y, out, s->a, s->glu); return 0;
    case K_STORE: {
        const int64_t rows = s->b + STORE_ROW0 + 1;
        uint8_t *dst = calloc((size_t)rows, qtype_row_size((qtype)s->type, s->a));
        if (!dst) return -1;
        ref_store_rows(in->x, s->type, dst, s->a, STORE_ROW0, s->b);
        gv_dequant_rows(s->type, dst, s->a, STORE_ROW0, s->b, out);
        free(dst);
        return 0;
    }
    case K_ATTN: return ref_attention(in->x, s->type, in->kq, in->vq, out, &s->ap);
    case K_MMGLU: return gvf_ref_matmul_glu(s, in, out);
    case K_ROPESTORE: return gvf_ref_rope_store(s, in, out);
    }
    return -1;
}

/* Relative L2 error; a NaN or Inf anywhere is an error of +inf. */
static double rel_err(const float *got, const float *ref, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(got[i])) return INFINITY;
        double d = (double)got[i] - ref[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static double tolerance(const spec *s, const char *kernels) {
    switch (s->k) {
    case K_MATMUL:
        if (strstr(kernels, "vecq")) return 3e-2;  /* activations quantized to 8 bits */
        if (strstr(kernels, "_f16") || strstr(kernels, "_cm")) return 5e-3; /* fp16 shared-memory tiles (the coopmat kernels' too) */
        return 1e-4;
    case K_RMS: return 1e-4;
    case K_ROPE: return 2e-3;   /* GPU sin/cos: absolute 2^-11 allowed by the spec */
    case K_ADD: return 1e-5;
    case K_GLU: return 1e-3;    /* exp/tanh precision */
    case K_STORE: return s->type == QT_Q8_0 || s->type == QT_Q4_0 ? 1e-2 : s->type == QT_F16 ? 1e-3 : 1e-6;
    case K_ATTN: return 2e-3;
    case K_MMGLU: return strstr(kernels, "vecq") ? 3e-2 : 1e-3; /* unfused on the 8-bit path; exp/tanh */
    case K_ROPESTORE: return s->type == QT_Q8_0 || s->type == QT_Q4_0 ? 1e-2 : 2e-3;
    }
    return 0;
}

/* ---------------------------------------------------------------- the cases */

typedef struct { spec *v; int n, cap; uint64_t seed; } spec_list;

static spec *add_spec(spec_list *l, kind k) {
    if (l->n == l->cap || l->n == GV_MAX_CASES) return NULL;
    spec *s = &l->v[l->n++];
    memset(s, 0, sizeof *s);
    s->k = k;
    s->seed = ++l->seed * 0x9e3779b97f4a7c15ull;
    return s;
}

static const char *tname(uint32_t t) { const qtype_info *q = qtype_get(t); return q ? q->name : "?"; }

static void add_matmuls(spec_list *l, uint32_t type, const void *data, int64_t K, int64_t N, int mm_tok) {
    const int toks[3] = { 1, 4, mm_tok };
    for (int i = 0; i < 3; i++) {
        spec *s = add_spec(l, K_MATMUL);
        if (!s) return;
        int64_t rows = N < (i < 2 ? MV_ROWS_CAP : MM_ROWS_CAP) ? N : (i < 2 ? MV_ROWS_CAP : MM_ROWS_CAP);
        s->type = type; s->wdata = data; s->a = K; s->b = rows; s->n_tok = toks[i]; s->accumulate = i == 1;
        fmt(s->shape, sizeof s->shape, "%s %lldx%lld%s n_tok %d%s", tname(type), (long long)N, (long long)K,
            rows < N ? " (rows capped)" : "", toks[i], s->accumulate ? " +residual" : "");
    }
}

static void add_rms(spec_list *l, int64_t row_len, int64_t n_rows, const float *w, float eps, const char *what) {
    spec *s = add_spec(l, K_RMS);
    if (!s) return;
    s->a = row_len; s->b = n_rows; s->wdata = w; s->eps = eps;
    fmt(s->shape, sizeof s->shape, "%s %lld x %lld", what, (long long)n_rows, (long long)row_len);
}

static void add_rope(spec_list *l, int n_tok, int n_head, int hd, int pos0, const be_rope_params *rp, const float *ff) {
    spec *s = add_spec(l, K_ROPE);
    if (!s) return;
    s->n_tok = n_tok; s->n_head = n_head; s->head_dim = hd; s->pos0 = pos0; s->rp = *rp; s->rp.freq_factors = NULL; s->wdata = ff;
    fmt(s->shape, sizeof s->shape, "%s n_head %d head_dim %d n_rot %d base %g pos %d..%d%s", rp->mode == BE_ROPE_NEOX ? "neox" : "normal",
        n_head, hd, rp->n_rot, rp->freq_base, pos0, pos0 + n_tok - 1, ff ? " freq_factors" : "");
}

static void add_simple(spec_list *l, kind k, int64_t n, int64_t b_n, be_glu_kind g, const char *what) {
    spec *s = add_spec(l, k);
    if (!s) return;
    s->a = n; s->b = b_n; s->glu = g;
    fmt(s->shape, sizeof s->shape, "%s n %lld%s", what, (long long)n, k == K_ADD && b_n < n ? " (broadcast row)" : "");
}

/* backend.h's fused ops (gpu_verify_fused.c): the decode gate+up mat-vec with its glu, and rope of
 * q and k with the stores of k and v into a cache of type kv (decode at 256 positions). */
static void add_matmul_glu(spec_list *l, uint32_t type, const void *gate, const void *upw, int64_t K, int64_t N, be_glu_kind g) {
    for (int i = 0; i < 2; i++) {
        spec *s = add_spec(l, K_MMGLU);
        if (!s) return;
        const int64_t rows = N < MV_ROWS_CAP ? N : MV_ROWS_CAP;
        s->type = type; s->wdata = gate; s->wdata2 = upw; s->a = K; s->b = rows; s->n_tok = i ? 3 : 1; s->glu = g;
        fmt(s->shape, sizeof s->shape, "%s gate+up %lldx%lld%s n_tok %d %s", tname(type), (long long)N, (long long)K,
            rows < N ? " (rows capped)" : "", s->n_tok, g == BE_GLU_GELU_TANH ? "gelu_tanh" : g == BE_GLU_SWIGLU_OAI ? "swiglu_oai" : "silu");
    }
}

static void add_rope_store(spec_list *l, int n_head, int n_kv, int hd, const be_rope_params *rp, const float *ff) {
    const uint32_t kvt[4] = { QT_F16, QT_Q8_0, QT_Q4_0, QT_F32 };
    for (int i = 0; i < 4; i++) {
    const uint32_t kv = kvt[i];
    if ((kv == QT_Q8_0 || kv == QT_Q4_0) && hd % 32) continue;
    spec *s = add_spec(l, K_ROPESTORE);
    if (!s) return;
    s->type = kv; s->n_tok = 1; s->pos0 = 255; s->n_head = n_head; s->n_kv_head = n_kv; s->head_dim = hd;
    s->rp = *rp; s->rp.freq_factors = NULL; s->wdata = ff;
    fmt(s->shape, sizeof s->shape, "kv %s n_head %d/%d head_dim %d %s n_rot %d pos 255%s", tname(kv), n_head, n_kv, hd,
        rp->mode == BE_ROPE_NEOX ? "neox" : "normal", rp->n_rot, ff ? " freq_factors" : "");
    }
}

static void add_kv(spec_list *l, int n_head, int n_kv, int hd, float scale, int window) {
    const uint32_t kvt[4] = { QT_F16, QT_Q8_0, QT_Q4_0, QT_F32 };
    for (int i = 0; i < 4; i++) {
        if ((kvt[i] == QT_Q8_0 || kvt[i] == QT_Q4_0) && hd % 32) continue;
        spec *s = add_spec(l, K_STORE);
        if (!s) return;
        s->type = kvt[i]; s->a = (int64_t)n_kv * hd; s->b = 5;
        fmt(s->shape, sizeof s->shape, "kv %s 5 rows x %lld", tname(kvt[i]), (long long)s->a);
        const int cfg[2][2] = { { 1, 255 }, { 16, 0 } }; /* decode at 256 positions, a 16-token prompt */
        for (int c = 0; c < 2; c++) {
            spec *a = add_spec(l, K_ATTN);
            if (!a) return;
            a->type = kvt[i];
            a->ap = (be_attn_params){ .n_tok = cfg[c][0], .pos0 = cfg[c][1], .n_head = n_head, .n_kv_head = n_kv, .head_dim = hd,
                                      .scale = scale, .window = window };
            fmt(a->shape, sizeof a->shape, "kv %s n_head %d/%d head_dim %d n_tok %d pos0 %d%s%.0d", tname(kvt[i]), n_head, n_kv, hd,
                cfg[c][0], cfg[c][1], window ? " window " : "", window);
        }
    }
}

static const void *host_data(const be_tensor *t) { return (const uint8_t *)t->storage + t->offset; }

/* The kernels of model m (CPU-loaded): each distinct weight, the norms, RoPE, GLU, KV. */
static void model_cases(spec_list *l, const model *m, int mm_tok) {
    const model_hparams *hp = &m->hp;
    struct { uint32_t type; int64_t c, r; } seen[64];
    int n_seen = 0;
    for (int il = -1; il < hp->n_layer; il++) {
        const be_tensor *w[7] = { 0 };
        int nw = 0;
        if (il < 0) { if (m->output) w[nw++] = m->output; }
        else {
            const model_layer *L = &m->layers[il];
            const be_tensor *lw[7] = { L->wq, L->wk, L->wv, L->wo, L->w_gate, L->w_up, L->w_down };
            for (int i = 0; i < 7; i++) if (lw[i]) w[nw++] = lw[i];
        }
        for (int i = 0; i < nw; i++) {
            const be_tensor *t = w[i];
            bool dup = false;
            for (int k = 0; k < n_seen && !dup; k++) dup = seen[k].type == t->type && seen[k].c == t->cols && seen[k].r == t->rows;
            if (dup || n_seen == 64) continue;
            seen[n_seen].type = t->type; seen[n_seen].c = t->cols; seen[n_seen].r = t->rows; n_seen++;
            add_matmuls(l, t->type, host_data(t), t->cols, t->rows, mm_tok);
        }
    }
    const model_layer *L0 = &m->layers[0];
    const int hd = hp->head_dim_k, nt = 4;
    const int64_t qd = (int64_t)hp->n_head * hd, kvd = (int64_t)hp->n_kv_head * hd;
    add_rms(l, hp->n_embd, nt, L0->attn_norm ? host_data(L0->attn_norm) : NULL, hp->norm_eps, "rms_norm");
    const int hd0 = model_layer_head_dim(hp, 0);   /* layer 0's own (gemma4: the sliding head size) */
    if (L0->q_norm) add_rms(l, hd0, (int64_t)nt * hp->n_head, host_data(L0->q_norm), hp->norm_eps, "qk-norm");
    if (L0->bq) add_simple(l, K_ADD, nt * qd, qd, BE_GLU_SILU, "bias");
    add_simple(l, K_ADD, nt * hp->n_embd, nt * hp->n_embd, BE_GLU_SILU, "residual");
    const bool gelu = hp->arch == ARCH_GEMMA3 || hp->arch == ARCH_GEMMA4;
    add_simple(l, K_GLU, nt * hp->n_ff, 0, gelu ? BE_GLU_GELU_TANH : BE_GLU_SILU, gelu ? "gelu_tanh" : "silu");
    if (L0->w_gate && L0->w_up && L0->w_gate->type == L0->w_up->type && L0->w_gate->cols == L0->w_up->cols &&
        L0->w_gate->rows == L0->w_up->rows)
        add_matmul_glu(l, L0->w_gate->type, host_data(L0->w_gate), host_data(L0->w_up), L0->w_gate->cols, L0->w_gate->rows,
                       gelu ? BE_GLU_GELU_TANH : BE_GLU_SILU);
    const float *ff = m->rope_freqs ? host_data(m->rope_freqs) : NULL;
    be_rope_params rp = { .n_rot = hp->n_rot, .mode = hp->rope_mode, .freq_base = hp->rope_base, .freq_scale = hp->rope_scale };
    add_rope(l, nt, hp->n_head, hd, 37, &rp, ff);
    add_rope(l, 1, hp->n_kv_head, hd, 1000, &rp, ff);
    add_rope_store(l, hp->n_head, hp->n_kv_head, hd, &rp, ff);
    bool has_swa = false;
    for (int il = 0; il < hp->n_layer; il++) has_swa |= model_layer_is_swa(hp, il);
    if (has_swa && hp->rope_base_swa != hp->rope_base) {
        be_rope_params rs = rp;
        rs.freq_base = hp->rope_base_swa; rs.freq_scale = 1.0f;
        add_rope(l, nt, hp->n_head, hd, 37, &rs, ff);
    }
    (void)kvd;
    add_kv(l, hp->n_head, hp->n_kv_head, hd, hp->attn_scale, 0);
    if (has_swa && hp->swa_window > 0) add_kv(l, hp->n_head, hp->n_kv_head, hd, hp->attn_scale, hp->swa_window < 200 ? hp->swa_window : 200);
}

/* Without a model: every weight type at a 7B-like width, the common head shapes. */
static void standard_cases(spec_list *l, int mm_tok, void **owned, int *n_owned) {
    static const uint32_t types[] = { QT_F32, QT_F16, QT_BF16, QT_Q4_0, QT_Q4_1, QT_Q5_0, QT_Q5_1, QT_Q8_0,
                                      QT_Q2_K, QT_Q3_K, QT_Q4_K, QT_Q5_K, QT_Q6_K };
    const int64_t K = 2048, N = 96;
    uint64_t st = 7;
    float *w = rnd_array(&st, K * N, -0.05f, 0.05f);
    if (!w) return;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        void *q = quantize_rows(types[i], w, K, N);
        if (!q) continue;
        owned[(*n_owned)++] = q;
        add_matmuls(l, types[i], q, K, N, mm_tok);
    }
    free(w);
    add_rms(l, 4096, 4, NULL, 1e-5f, "rms_norm");
    add_rms(l, 128, 4 * 32, NULL, 1e-6f, "qk-norm");
    add_simple(l, K_ADD, 4 * 4096, 4 * 4096, BE_GLU_SILU, "residual");
    add_simple(l, K_ADD, 4 * 4096, 4096, BE_GLU_SILU, "bias");
    add_simple(l, K_GLU, 4 * 11008, 0, BE_GLU_SILU, "silu");
    add_simple(l, K_GLU, 4 * 11008, 0, BE_GLU_GELU_TANH, "gelu_tanh");
    be_rope_params rn = { .n_rot = 128, .mode = BE_ROPE_NORMAL, .freq_base = 10000.0f, .freq_scale = 1.0f };
    be_rope_params rx = { .n_rot = 128, .mode = BE_ROPE_NEOX, .freq_base = 1000000.0f, .freq_scale = 1.0f };
    add_rope(l, 4, 32, 128, 37, &rn, NULL);
    add_rope(l, 4, 32, 128, 37, &rx, NULL);
    add_rope_store(l, 32, 8, 128, &rx, NULL);
    add_kv(l, 32, 8, 128, 1.0f / sqrtf(128.0f), 0);
    add_kv(l, 8, 4, 256, 1.0f / 16.0f, 64);
    { /* the fused gate+up mat-vec on two F16 weights (a type no other path takes over) */
        float *wf = rnd_array(&st, 2 * 2048 * 96, -0.05f, 0.05f);
        void *g = wf ? quantize_rows(QT_F16, wf, 2048, 96) : NULL, *u = wf ? quantize_rows(QT_F16, wf + 2048 * 96, 2048, 96) : NULL;
        if (g) owned[(*n_owned)++] = g;
        if (u) owned[(*n_owned)++] = u;
        if (g && u) add_matmul_glu(l, QT_F16, g, u, 2048, 96, BE_GLU_SILU);
        free(wf);
    }
}

/* ---------------------------------------------------------------- fixes */

typedef struct { char disable[160]; backend *be; bool tried; } retry_be;
#define MAX_RETRY 8

/* The device reopened with `disable` off (x->reopen_without), one backend per list. */
static backend *retry_backend(const backend_extras *x, retry_be *rb, int *n_rb, int index, const char *disable) {
    for (int i = 0; i < *n_rb; i++)
        if (!strcmp(rb[i].disable, disable)) return rb[i].be;
    if (*n_rb == MAX_RETRY) return NULL;
    retry_be *r = &rb[(*n_rb)++];
    fmt(r->disable, sizeof r->disable, "%s", disable);
    r->be = x->reopen_without(index, disable);
    return r->be;
}

/* ---------------------------------------------------------------- run */

/* The kernels gpu ran since the last call (the backend's own names), "" if it cannot say. */
static void take_kernels(const backend_extras *x, backend *gpu, char *out, size_t n) {
    out[0] = 0;
    if (x && x->take_kernels) x->take_kernels(gpu, out, n);
}

/* A failure no optional path can fix: the advice for this backend. */
static const char *no_fix_advice(gv_target t) {
    return t.kind == DEV_BACKEND_HIP
        ? "HIP has no optional paths: run this model with ANVIL_BACKEND=vulkan or on the CPU (-ngl 0) and report the ROCm version"
        : "no optional path to turn off: run this model on the CPU (-ngl 0) and report the driver";
}

int gpu_verify_run(backend *gpu, gv_target t, const model *m, gv_report *r) {
    memset(r, 0, sizeof *r);
    fmt(r->device, sizeof r->device, "%s: %s", gpu->name, gpu->device_desc ? gpu->device_desc : "");
    const backend_extras *x = device_extras(gpu);
    /* optional paths to retry without: only on the device t names, by its own backend */
    const bool can_fix = x && x == device_kind_extras(t.kind) && x->fix_setting && x->fix_candidates && x->reopen_without;
    r->fix_setting = x ? x->fix_setting : NULL;
    const int mm_tok = x && x->matvec_max_tokens ? x->matvec_max_tokens(gpu) + 8 : 16;
    const char *env_disable = can_fix ? anv_setting_get(x->fix_setting) : NULL;
    char scratch[256];
    take_kernels(x, gpu, scratch, sizeof scratch);
    spec_list l = { .v = calloc(GV_MAX_CASES, sizeof(spec)), .cap = GV_MAX_CASES };
    if (!l.v) { anv_set_error("out of memory"); return -1; }
    void *owned[16];
    int n_owned = 0;
    if (m) { model_cases(&l, m, mm_tok); fmt(r->source, sizeof r->source, "the kernels of %s (%s)", m->hp.arch_name, "its shapes and weights"); }
    else { standard_cases(&l, mm_tok, owned, &n_owned); fmt(r->source, sizeof r->source, "standard shapes (no model given)"); }
    retry_be rb[MAX_RETRY];
    int n_rb = 0;
    char fixes[8][16];
    int n_fixes = 0;
    int rc = 0;
    for (int i = 0; i < l.n && rc == 0; i++) {
        const spec *s = &l.v[i];
        gv_case *c = &r->c[r->n++];
        static const char *const names[] = { "matmul", "rms_norm", "rope", "add", "glu", "store_rows", "attention", "matmul_glu", "rope_store" };
        fmt(c->op, sizeof c->op, "%s", names[s->k]);
        fmt(c->shape, sizeof c->shape, "%s", s->shape);
        const int64_t n = out_elems(s);
        inputs in;
        float *got = malloc(sizeof(float) * (size_t)n), *ref = malloc(sizeof(float) * (size_t)n);
        if (!got || !ref || !make_inputs(s, &in)) { free(got); free(ref); anv_set_error("out of memory"); rc = -1; break; }
        if (run_ref(s, &in, ref) != 0) { rc = -1; }
        else if (run_gpu(gpu, s, &in, got) != 0) {
            anv_set_error("%s", be_failed(gpu) ? be_sticky_error(gpu) : "GPU verify: out of memory");
            rc = -1;
        } else {
            take_kernels(x, gpu, c->kernels, sizeof c->kernels);
            c->err = rel_err(got, ref, n);
            c->tol = tolerance(s, c->kernels);
            c->pass = c->err <= c->tol;
            if (!c->pass) {
                r->n_fail++;
                fmt(c->fix, sizeof c->fix, "%s", no_fix_advice(t));
                const char *cand[BE_MAX_FIX_CANDIDATES];
                const int nc = can_fix ? x->fix_candidates(gpu, c->kernels, cand) : 0;
                for (int k = 0; k < nc; k++) {
                    char dis[160];
                    fmt(dis, sizeof dis, "%s%s%s", env_disable ? env_disable : "", env_disable ? "," : "", cand[k]);
                    backend *be2 = retry_backend(x, rb, &n_rb, t.index, dis);
                    if (!be2 || run_gpu(be2, s, &in, got) != 0) continue;
                    char k2[192];
                    take_kernels(x, be2, k2, sizeof k2);
                    if (rel_err(got, ref, n) <= tolerance(s, k2)) {
                        fmt(c->fix, sizeof c->fix, "%s=%s (checked: passes with it, %s)", x->fix_setting, cand[k], k2);
                        bool have = false;
                        for (int f = 0; f < n_fixes; f++) have |= !strcmp(fixes[f], cand[k]);
                        if (!have && n_fixes < 8) fmt(fixes[n_fixes++], sizeof fixes[0], "%s", cand[k]);
                        c->pass = false;
                        break;
                    }
                }
                if (nc && !strncmp(c->fix, "no optional", 11))
                    fmt(c->fix, sizeof c->fix, "turning off %s%s%s did not fix it: run this model on the CPU (-ngl 0) and report the driver",
                        cand[0], nc > 1 ? " or " : "", nc > 1 ? cand[nc - 1] : "");
            }
        }
        free_inputs(&in);
        free(got); free(ref);
    }
    for (int i = 0; i < n_rb; i++) if (rb[i].be) rb[i].be->ops->destroy(rb[i].be);
    for (int i = 0; i < n_owned; i++) free(owned[i]);
    free(l.v);
    if (rc != 0) return -1;
    /* the fix: every verified path, complete when each failure has one */
    bool complete = r->n_fail > 0;
    char fixed_by[48] = "";   /* "ANVIL_VK_DISABLE=": a case's verified fix */
    if (can_fix) fmt(fixed_by, sizeof fixed_by, "%s=", x->fix_setting);
    for (int i = 0; i < r->n; i++) if (!r->c[i].pass && (!fixed_by[0] || strncmp(r->c[i].fix, fixed_by, strlen(fixed_by)))) complete = false;
    size_t o = 0;
    for (int f = 0; f < n_fixes; f++) {
        int w = snprintf(r->fix + o, sizeof r->fix - o, "%s%s", f ? "," : "", fixes[f]);
        if (w > 0 && (size_t)w < sizeof r->fix - o) o += (size_t)w;
    }
    r->fix_complete = complete && n_fixes > 0;
    return r->n_fail;
}

void gpu_verify_print(FILE *f, const gv_report *r, bool all_cases) {
    fprintf(f, "verify %s\n  against cpu/ref_ops.c on %s\n", r->device, r->source);
    for (int i = 0; i < r->n; i++) {
        const gv_case *c = &r->c[i];
        if (!all_cases && c->pass) continue;
        fprintf(f, "  %-4s %-10s %-58s %-34s err %.2e (tol %.0e)\n", c->pass ? "ok" : "FAIL", c->op, c->shape, c->kernels, c->err, c->tol);
        if (!c->pass) fprintf(f, "       fix: %s\n", c->fix);
    }
    fprintf(f, "verify: %d cases, %d passed, %d failed", r->n, r->n - r->n_fail, r->n_fail);
    if (r->n_fail && r->fix[0])
        fprintf(f, "; fix: %s=%s%s", r->fix_setting ? r->fix_setting : "?", r->fix, r->fix_complete ? "" : " (fixes only some)");
    fputc('\n', f);
}

/* ---------------------------------------------------------------- cache */

static bool cache_dir(char *dir, size_t n) {
    char cache[1024];
    if (!anv_user_cache_dir(cache, sizeof cache)) return false;
    fmt(dir, n, "%s/anvil", cache);
    return true;
}

bool gpu_verify_cache_path(gv_target t, char *out, size_t out_len) {
    char dir[512], name[256];
    const backend_extras *x = device_kind_extras(t.kind);
    if (!x || !x->verify_key || !cache_dir(dir, sizeof dir) || !x->verify_key(t.index, name, sizeof name)) return false;
    fmt(out, out_len, "%s/%s", dir, name);
    return true;
}

static void mkdirs(char *path) {
    for (char *p = path + 1; *p; p++)
        if (*p == '/') { *p = 0; mkdir(path, 0755); *p = '/'; }
}

int gpu_verify_cache_write(gv_target t, const gv_report *r) {
    char path[600], tmp[640];
    if (!gpu_verify_cache_path(t, path, sizeof path)) return -1;
    fmt(tmp, sizeof tmp, "%s.%s.tmp", path, anv_process_tag());
    mkdirs(tmp);
    FILE *f = fopen(tmp, "w");
    if (!f) return -1;
    fprintf(f, "result: %s\nfix: %s\n", r->n_fail ? "fail" : "pass", r->fix_complete ? r->fix : "");
    gpu_verify_print(f, r, true);
    bool ok = fclose(f) == 0;
    if (ok && rename(tmp, path) == 0) return 0;
    remove(tmp);
    return -1;
}

bool gpu_verify_cache_read(gv_target t, bool *pass, char *fix, size_t fix_len) {
    char path[600], line[256];
    if (!gpu_verify_cache_path(t, path, sizeof path)) return false;
    FILE *f = fopen(path, "r");
    if (!f) return false;
    bool got_result = false;
    if (fix_len) fix[0] = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!strncmp(line, "result: ", 8)) { *pass = !strcmp(line + 8, "pass"); got_result = true; }
        else if (!strncmp(line, "fix: ", 5)) fmt(fix, fix_len, "%s", line + 5);
    }
    fclose(f);
    return got_result;
}

void gpu_verify_auto(backend *gpu, gv_target t, const model *m_cpu, char *fix, size_t fix_len) {
    if (fix_len) fix[0] = 0;
    if (anv_setting_off("ANVIL_AUTOVERIFY") || (t.kind == DEV_BACKEND_VULKAN && anv_setting_off("ANVIL_VK_AUTOVERIFY"))) return;
    bool pass = true;
    char cached_fix[128];
    const backend_extras *x = device_kind_extras(t.kind);
    const char *fix_setting = x && x->fix_setting ? x->fix_setting : "?";
    if (gpu_verify_cache_read(t, &pass, cached_fix, sizeof cached_fix)) {
        if (!pass)
            anv_log("%s: the kernel self-check of this device + driver failed earlier%s%s%s%s (anvil doctor --verify for details)",
                    gpu->name, cached_fix[0] ? "; applying " : "; no path switch fixes it", cached_fix[0] ? fix_setting : "",
                    cached_fix[0] ? "=" : "", cached_fix);
        fmt(fix, fix_len, "%s", pass ? "" : cached_fix);
        return;
    }
    anv_log("%s: first use of this device + driver: checking its kernels against the CPU reference (once; ANVIL_AUTOVERIFY=0 skips)", gpu->name);
    gv_report *r = malloc(sizeof *r);
    if (!r) return;
    int n_fail = gpu_verify_run(gpu, t, m_cpu, r);
    if (n_fail < 0) { anv_log("%s: kernel self-check could not run: %s", gpu->name, anv_last_error()); free(r); return; }
    gpu_verify_cache_write(t, r);
    if (n_fail == 0) anv_log("%s: kernel self-check passed (%d cases)", gpu->name, r->n);
    else {
        for (int i = 0; i < r->n; i++)
            if (!r->c[i].pass) anv_log("%s: self-check FAILED: %s %s (%s) err %.2e: fix: %s", gpu->name, r->c[i].op, r->c[i].shape,
                                       r->c[i].kernels, r->c[i].err, r->c[i].fix);
        if (r->fix_complete) { anv_log("%s: applying %s=%s", gpu->name, fix_setting, r->fix); fmt(fix, fix_len, "%s", r->fix); }
    }
    free(r);
}
