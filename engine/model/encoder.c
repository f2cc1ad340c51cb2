/* encoder: bert and nomic-bert (see encoder.h). Weights keep llama.cpp's tensor names; the
 * matmul weights go into the model's own layer fields (wq, wk, wv, wo, w_up, w_gate,
 * w_down; a fused attn_qkv is split by rows into wq / wk / wv), the LayerNorms into
 * post_attn_norm / post_ffn_norm, and what a decoder lacks (biases of the output, FFN and
 * norms, token types, positions) into struct encoder_weights. LayerNorm is built from the
 * existing ops: centering is a matmul by C = I - 1/n (an F32 [n_embd][n_embd] weight per
 * backend), then rms_norm with the weight, then the bias add. */
#include "encoder.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "quant.h"

typedef struct {
    be_tensor *bo, *b_up, *b_down, *ln1_b, *ln2_b;
} enc_layer;

struct encoder_weights {
    be_tensor *type_embd, *pos_embd, *tok_norm, *tok_norm_b; /* CPU */
    be_tensor *center[2];   /* C on the CPU and on the GPU backend */
    float *center_host;
    enc_layer *layers;
    int n_layer;
};

static bool arch_is(const gguf_file *f, const char *name) {
    gguf_str a;
    return gguf_get_str(f, "general.architecture", &a) && gguf_str_eq(a, name);
}

bool encoder_is_arch(const gguf_file *f) { return arch_is(f, "bert") || arch_is(f, "nomic-bert"); }

static bool get_u32(const gguf_file *f, const char *arch, const char *suffix, int *out, bool required) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    uint32_t v;
    if (gguf_get_u32(f, key, &v)) {
        if (v > (1u << 30)) { anv_set_error("%s: metadata %s = %u is out of range", f->path, key, v); return false; }
        *out = (int)v;
        return true;
    }
    if (gguf_find(f, key)) return false;
    if (required) { anv_set_error("%s: missing metadata key %s", f->path, key); return false; }
    return true;
}

static bool get_f32(const gguf_file *f, const char *arch, const char *suffix, float *out, bool required) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    if (gguf_get_f32(f, key, out)) return true;
    if (gguf_find(f, key)) return false;
    if (required) { anv_set_error("%s: missing metadata key %s", f->path, key); return false; }
    return true;
}

static int load_hparams(const gguf_file *f, model_hparams *hp) {
    memset(hp, 0, sizeof *hp);
    const bool nomic = arch_is(f, "nomic-bert");
    const char *arch = nomic ? "nomic-bert" : "bert";
    hp->arch = nomic ? ARCH_NOMIC_BERT : ARCH_BERT;
    hp->arch_name = arch;
    hp->n_ctx_train = 512;
    int pool = MODEL_POOL_MEAN;
    if (!get_u32(f, arch, "context_length", &hp->n_ctx_train, false) || !get_u32(f, arch, "embedding_length", &hp->n_embd, true) ||
        !get_u32(f, arch, "block_count", &hp->n_layer, true) || !get_u32(f, arch, "feed_forward_length", &hp->n_ff, true) ||
        !get_u32(f, arch, "attention.head_count", &hp->n_head, true) || !get_u32(f, arch, "pooling_type", &pool, false))
        return -1;
    hp->n_kv_head = hp->n_head;
    if (!get_u32(f, arch, "attention.head_count_kv", &hp->n_kv_head, false)) return -1;
    if (hp->n_ctx_train < 1 || hp->n_embd < 1 || hp->n_layer < 1 || hp->n_ff < 1 || hp->n_head < 1 || hp->n_kv_head < 1 ||
        hp->n_embd % hp->n_head || hp->n_head % hp->n_kv_head || (hp->n_embd / hp->n_head) % 2) {
        anv_set_error("%s: invalid %s shape (n_embd %d, n_layer %d, n_ff %d, n_head %d, n_kv_head %d, context %d)", f->path, arch,
                      hp->n_embd, hp->n_layer, hp->n_ff, hp->n_head, hp->n_kv_head, hp->n_ctx_train);
        return -1;
    }
    if (pool != MODEL_POOL_MEAN && pool != MODEL_POOL_CLS && pool != MODEL_POOL_LAST) {
        anv_set_error("%s: metadata %s.pooling_type = %d is unsupported (mean 1, cls 2, last 3)", f->path, arch, pool);
        return -1;
    }
    hp->pooling = (model_pooling)pool;
    hp->head_dim_k = hp->head_dim_v = hp->n_rot = hp->n_embd / hp->n_head;
    hp->norm_eps = 1e-12f;
    if (!get_f32(f, arch, "attention.layer_norm_epsilon", &hp->norm_eps, true)) return -1;
    if (!isfinite(hp->norm_eps) || hp->norm_eps <= 0) {
        anv_set_error("%s: metadata %s.attention.layer_norm_epsilon = %g is invalid (must be > 0)", f->path, arch, (double)hp->norm_eps);
        return -1;
    }
    hp->rope_base = 10000.0f;
    if (!get_f32(f, arch, "rope.freq_base", &hp->rope_base, false)) return -1;
    if (!isfinite(hp->rope_base) || hp->rope_base <= 0) {
        anv_set_error("%s: metadata %s.rope.freq_base = %g is invalid (must be > 0)", f->path, arch, (double)hp->rope_base);
        return -1;
    }
    hp->rope_scale = 1.0f;
    hp->rope_mode = BE_ROPE_NEOX;
    hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim_k);
    hp->noncausal = hp->embedding_only = true;
    return 0;
}

/* A checked tensor placed on be; rows_off/n_rows select rows of a fused tensor (n_rows 0 = all). */
static be_tensor *put(model *m, backend *be, const char *name, int64_t ne0, int64_t ne1, int64_t row0, bool required, bool *failed) {
    const gguf_tensor *t = gguf_find_tensor(m->gguf, name);
    if (!t) {
        if (required) { anv_set_error("%s: missing tensor '%s'", m->gguf->path, name); *failed = true; }
        return NULL;
    }
    const qtype_info *qi = qtype_get(t->type);
    const int64_t want1 = row0 >= 0 ? 3 * ne1 : ne1;
    if (t->ne[0] != ne0 || t->ne[1] != want1 || t->ne[2] != 1 || t->ne[3] != 1 || !qi || !qi->is_weight ||
        (want1 == 1 && t->type != QT_F32)) {
        anv_set_error("%s: tensor '%s' has shape [%lld, %lld] type %s, expected [%lld, %lld]%s", m->gguf->path, name,
                      (long long)t->ne[0], (long long)t->ne[1], qi ? qi->name : "?", (long long)ne0, (long long)want1,
                      want1 == 1 ? " F32" : "");
        *failed = true;
        return NULL;
    }
    const uint8_t *data = (const uint8_t *)t->data + (row0 > 0 ? (size_t)row0 * qtype_row_size((qtype)t->type, ne0) : 0);
    be_tensor *bt = be->ops->weight_new(be, t->type, ne0, ne1, data);
    if (!bt) { *failed = true; return NULL; }
    if (row0 <= 0) m->weight_bytes += t->nbytes;
    return bt;
}

static be_tensor *put_l(model *m, backend *be, int il, const char *suffix, int64_t ne0, int64_t ne1, bool required, bool *failed) {
    char name[128];
    snprintf(name, sizeof name, "blk.%d.%s", il, suffix);
    return put(m, be, name, ne0, ne1, -1, required, failed);
}

static int load_layer(model *m, int il, backend *be) {
    const model_hparams *hp = &m->hp;
    model_layer *L = &m->layers[il];
    enc_layer *E = &m->enc->layers[il];
    const int64_t e = hp->n_embd, kvd = (int64_t)hp->n_kv_head * hp->head_dim_k, f = hp->n_ff;
    bool fail = false;
    L->be = be;
    char name[128];
    snprintf(name, sizeof name, "blk.%d.attn_qkv.weight", il);
    if (gguf_find_tensor(m->gguf, name)) {
        if (hp->n_kv_head != hp->n_head) { anv_set_error("%s: fused attn_qkv with GQA is unsupported", m->gguf->path); return -1; }
        L->wq = put(m, be, name, e, e, 0, true, &fail);
        L->wk = put(m, be, name, e, e, e, true, &fail);
        L->wv = put(m, be, name, e, e, 2 * e, true, &fail);
        snprintf(name, sizeof name, "blk.%d.attn_qkv.bias", il);
        if (gguf_find_tensor(m->gguf, name)) { anv_set_error("%s: '%s' is unsupported", m->gguf->path, name); return -1; }
    } else {
        L->wq = put_l(m, be, il, "attn_q.weight", e, e, true, &fail);
        L->wk = put_l(m, be, il, "attn_k.weight", e, kvd, true, &fail);
        L->wv = put_l(m, be, il, "attn_v.weight", e, kvd, true, &fail);
    }
    L->bq = put_l(m, be, il, "attn_q.bias", e, 1, false, &fail);
    L->bk = put_l(m, be, il, "attn_k.bias", kvd, 1, false, &fail);
    L->bv = put_l(m, be, il, "attn_v.bias", kvd, 1, false, &fail);
    if (!fail && (!L->bq) != (!L->bk || !L->bv)) { anv_set_error("%s: layer %d has some but not all Q/K/V biases", m->gguf->path, il); return -1; }
    L->wo = put_l(m, be, il, "attn_output.weight", e, e, true, &fail);
    E->bo = put_l(m, be, il, "attn_output.bias", e, 1, false, &fail);
    L->post_attn_norm = put_l(m, be, il, "attn_output_norm.weight", e, 1, true, &fail);
    E->ln1_b = put_l(m, be, il, "attn_output_norm.bias", e, 1, true, &fail);
    L->w_up = put_l(m, be, il, "ffn_up.weight", e, f, true, &fail);
    E->b_up = put_l(m, be, il, "ffn_up.bias", f, 1, false, &fail);
    if (hp->arch == ARCH_NOMIC_BERT) L->w_gate = put_l(m, be, il, "ffn_gate.weight", e, f, true, &fail);
    L->w_down = put_l(m, be, il, "ffn_down.weight", f, e, true, &fail);
    E->b_down = put_l(m, be, il, "ffn_down.bias", e, 1, false, &fail);
    L->post_ffn_norm = put_l(m, be, il, "layer_output_norm.weight", e, 1, true, &fail);
    E->ln2_b = put_l(m, be, il, "layer_output_norm.bias", e, 1, true, &fail);
    return fail ? -1 : 0;
}

int encoder_load(model *m, const model_load_opts *opts) {
    const gguf_file *f = m->gguf;
    if (load_hparams(f, &m->hp) != 0) return -1;
    model_hparams *hp = &m->hp;
    m->tok = tokenizer_load(f);
    if (!m->tok) return -1;
    m->chat_template = gguf_get_str_dup(f, "tokenizer.chat_template");
    const gguf_tensor *te = gguf_find_tensor(f, "token_embd.weight");
    if (!te) { anv_set_error("%s: missing tensor 'token_embd.weight'", f->path); return -1; }
    hp->n_vocab = (int)te->ne[1];
    if (tokenizer_n_vocab(m->tok) > hp->n_vocab) {
        anv_set_error("%s: vocabulary has %d tokens but token_embd.weight only %d rows", f->path, tokenizer_n_vocab(m->tok), hp->n_vocab);
        return -1;
    }
    m->enc = calloc(1, sizeof *m->enc);
    m->layers = calloc((size_t)hp->n_layer, sizeof *m->layers);
    if (!m->enc || !m->layers || !(m->enc->layers = calloc((size_t)hp->n_layer, sizeof *m->enc->layers))) {
        anv_set_error("out of memory");
        return -1;
    }
    struct encoder_weights *W = m->enc;
    W->n_layer = hp->n_layer;
    m->cpu = opts->cpu;
    int n_gpu = 0;
    if (opts->gpu) n_gpu = opts->n_gpu_layers < 0 || opts->n_gpu_layers > hp->n_layer ? hp->n_layer : opts->n_gpu_layers;
    bool fail = false;
    const int64_t e = hp->n_embd;
    m->tok_embd = put(m, m->cpu, "token_embd.weight", e, hp->n_vocab, -1, true, &fail);
    const gguf_tensor *tt = gguf_find_tensor(f, "token_types.weight");
    if (tt) W->type_embd = put(m, m->cpu, "token_types.weight", e, tt->ne[1], -1, true, &fail);
    if (hp->arch == ARCH_BERT) W->pos_embd = put(m, m->cpu, "position_embd.weight", e, hp->n_ctx_train, -1, true, &fail);
    W->tok_norm = put(m, m->cpu, "token_embd_norm.weight", e, 1, -1, true, &fail);
    W->tok_norm_b = put(m, m->cpu, "token_embd_norm.bias", e, 1, -1, true, &fail);
    if (fail) return -1;
    W->center_host = malloc((size_t)e * (size_t)e * sizeof(float));
    if (!W->center_host) { anv_set_error("out of memory"); return -1; }
    for (int64_t r = 0; r < e; r++)
        for (int64_t c = 0; c < e; c++) W->center_host[r * e + c] = (r == c ? 1.0f : 0.0f) - 1.0f / (float)e;
    W->center[0] = m->cpu->ops->weight_new(m->cpu, QT_F32, e, e, W->center_host);
    if (!W->center[0]) return -1;
    if (n_gpu > 0) {
        W->center[1] = opts->gpu->ops->weight_new(opts->gpu, QT_F32, e, e, W->center_host);
        if (!W->center[1]) return -1;
    }
    for (int il = 0; il < hp->n_layer; il++)
        if (load_layer(m, il, il >= hp->n_layer - n_gpu ? opts->gpu : m->cpu) != 0) return -1;
    m->out_be = n_gpu > 0 ? opts->gpu : m->cpu;
    m->gpu = n_gpu > 0 ? opts->gpu : NULL;
    return 0;
}

void encoder_free(model *m) {
    struct encoder_weights *W = m->enc;
    be_tensor_free(m->dense2);
    be_tensor_free(m->dense3);
    m->dense2 = m->dense3 = NULL;
    if (!W) return;
    for (int il = 0; W->layers && il < W->n_layer; il++) {
        enc_layer *E = &W->layers[il];
        be_tensor *ts[] = {E->bo, E->b_up, E->b_down, E->ln1_b, E->ln2_b};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) be_tensor_free(ts[i]);
    }
    be_tensor *ts[] = {W->type_embd, W->pos_embd, W->tok_norm, W->tok_norm_b, W->center[0], W->center[1]};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) be_tensor_free(ts[i]);
    free(W->center_host);
    free(W->layers);
    free(W);
    m->enc = NULL;
}

/* ---- the forward pass ---- */

typedef struct {
    backend *be;
    be_tensor *x, *xn, *q, *k, *v, *att, *up, *gate, *ones;
} enc_scratch;

static void scratch_free(enc_scratch *s) {
    be_tensor *ts[] = {s->x, s->xn, s->q, s->k, s->v, s->att, s->up, s->gate, s->ones};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) be_tensor_free(ts[i]);
}

static int scratch_new(enc_scratch *s, const model *m, backend *be, int n) {
    const model_hparams *hp = &m->hp;
    const int64_t e = hp->n_embd, kvd = (int64_t)hp->n_kv_head * hp->head_dim_k;
    memset(s, 0, sizeof *s);
    s->be = be;
    s->x = be_tensor_new(be, QT_F32, e, n);
    s->xn = be_tensor_new(be, QT_F32, e, n);
    s->q = be_tensor_new(be, QT_F32, e, n);
    s->k = be_tensor_new(be, QT_F32, kvd, n);
    s->v = be_tensor_new(be, QT_F32, kvd, n);
    s->att = be_tensor_new(be, QT_F32, e, n);
    s->up = be_tensor_new(be, QT_F32, hp->n_ff, n);
    s->gate = be_tensor_new(be, QT_F32, hp->n_ff, n);
    s->ones = be_tensor_new(be, QT_F32, hp->n_ff, n);
    if (!s->x || !s->xn || !s->q || !s->k || !s->v || !s->att || !s->up || !s->gate || !s->ones) return -1;
    return 0;
}

/* x = LayerNorm(x) * w + b over n rows: center (matmul by C), rms_norm, bias. */
static void layer_norm(const model *m, backend *be, const be_tensor *center, be_tensor *x, be_tensor *tmp, const be_tensor *w,
                       const be_tensor *b, int n) {
    const int64_t e = m->hp.n_embd;
    be->ops->matmul(be, center, x, tmp, n, false);
    be->ops->rms_norm(be, tmp, w, x, n, e, m->hp.norm_eps);
    be->ops->add(be, x, b, x, (int64_t)n * e, e);
}

static void run_layer(const model *m, int il, enc_scratch *s, const be_tensor *center, int n) {
    const model_hparams *hp = &m->hp;
    const model_layer *L = &m->layers[il];
    const enc_layer *E = &m->enc->layers[il];
    backend *be = s->be;
    const backend_ops *op = be->ops;
    const int64_t e = hp->n_embd, kvd = (int64_t)hp->n_kv_head * hp->head_dim_k, nf = (int64_t)n * hp->n_ff;
    op->matmul(be, L->wq, s->x, s->q, n, false);
    op->matmul(be, L->wk, s->x, s->k, n, false);
    op->matmul(be, L->wv, s->x, s->v, n, false);
    if (L->bq) {
        op->add(be, s->q, L->bq, s->q, n * e, e);
        op->add(be, s->k, L->bk, s->k, n * kvd, kvd);
        op->add(be, s->v, L->bv, s->v, n * kvd, kvd);
    }
    if (hp->arch == ARCH_NOMIC_BERT) {
        be_rope_params rp = {.n_rot = hp->n_rot, .mode = hp->rope_mode, .freq_base = hp->rope_base, .freq_scale = hp->rope_scale};
        op->rope(be, s->q, n, hp->n_head, hp->head_dim_k, 0, &rp);
        op->rope(be, s->k, n, hp->n_kv_head, hp->head_dim_k, 0, &rp);
    }
    be_attn_params ap = {.n_tok = n, .pos0 = 0, .n_head = hp->n_head, .n_kv_head = hp->n_kv_head, .head_dim = hp->head_dim_k,
                         .scale = hp->attn_scale, .noncausal = true};
    op->attention(be, s->q, s->k, s->v, s->att, &ap);
    op->matmul(be, L->wo, s->att, s->x, n, true);   /* x += Wo att */
    if (E->bo) op->add(be, s->x, E->bo, s->x, n * e, e);
    layer_norm(m, be, center, s->x, s->xn, L->post_attn_norm, E->ln1_b, n);
    op->matmul(be, L->w_up, s->x, s->up, n, false);
    if (E->b_up) op->add(be, s->up, E->b_up, s->up, nf, hp->n_ff);
    if (L->w_gate) {   /* nomic-bert: silu(gate) * up */
        op->matmul(be, L->w_gate, s->x, s->gate, n, false);
        op->glu(be, s->gate, s->up, s->up, nf, BE_GLU_SILU);
    } else {           /* bert: gelu(up) (times ones: glu with a unit "up") */
        op->glu(be, s->up, s->ones, s->up, nf, BE_GLU_GELU_TANH);
    }
    op->matmul(be, L->w_down, s->up, s->x, n, true);
    if (E->b_down) op->add(be, s->x, E->b_down, s->x, n * e, e);
    layer_norm(m, be, center, s->x, s->xn, L->post_ffn_norm, E->ln2_b, n);
}

int encoder_embed(model *m, const int32_t *tokens, int n, float *out) {
    const model_hparams *hp = &m->hp;
    struct encoder_weights *W = m->enc;
    if (n <= 0) { anv_set_error("nothing to embed"); return -1; }
    if (n > hp->n_ctx_train) {
        anv_set_error("input is %d tokens, more than the %s model's context of %d", n, hp->arch_name, hp->n_ctx_train);
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= hp->n_vocab) {
            anv_set_error("token id %d is out of range (vocabulary has %d tokens)", tokens[i], hp->n_vocab);
            return -1;
        }
    const int64_t e = hp->n_embd;
    enc_scratch sc[2];
    memset(sc, 0, sizeof sc);
    int n_sc = 0, rc = -1;
    float *host = malloc((size_t)n * (size_t)(e > hp->n_ff ? e : hp->n_ff) * sizeof(float));
    int32_t *pos = malloc((size_t)n * sizeof(int32_t));
    if (!host || !pos) { anv_set_error("out of memory"); goto done; }
    if (scratch_new(&sc[0], m, m->cpu, n) != 0) goto done;
    n_sc = 1;
    if (m->gpu) {
        if (scratch_new(&sc[1], m, m->gpu, n) != 0) { n_sc = 2; goto done; }
        n_sc = 2;
    }
    for (int i = 0; i < n_sc; i++) {   /* the unit "up" of bert's GELU */
        for (int64_t j = 0; j < (int64_t)n * hp->n_ff; j++) host[j] = 1.0f;
        be_upload(sc[i].ones, 0, host, (size_t)n * (size_t)hp->n_ff * sizeof(float));
    }
    /* embeddings on the CPU: token + type 0 (+ absolute position), then LayerNorm */
    backend *cpu = m->cpu;
    cpu->ops->get_rows(cpu, m->tok_embd, tokens, n, sc[0].x);
    if (W->type_embd) {
        int32_t zero = 0;
        be_tensor row = be_view_rows(sc[0].xn, 0, 1);
        cpu->ops->get_rows(cpu, W->type_embd, &zero, 1, &row);
        cpu->ops->add(cpu, sc[0].x, &row, sc[0].x, (int64_t)n * e, e);
    }
    if (W->pos_embd) {
        for (int i = 0; i < n; i++) pos[i] = i;
        cpu->ops->get_rows(cpu, W->pos_embd, pos, n, sc[0].xn);
        cpu->ops->add(cpu, sc[0].x, sc[0].xn, sc[0].x, (int64_t)n * e, (int64_t)n * e);
    }
    layer_norm(m, cpu, W->center[0], sc[0].x, sc[0].xn, W->tok_norm, W->tok_norm_b, n);
    enc_scratch *cur = &sc[0];
    for (int il = 0; il < hp->n_layer; il++) {
        enc_scratch *s = m->layers[il].be == m->cpu ? &sc[0] : &sc[1];
        if (s != cur) {
            be_download(cur->x, 0, host, (size_t)n * (size_t)e * sizeof(float));
            be_upload(s->x, 0, host, (size_t)n * (size_t)e * sizeof(float));
            cur = s;
        }
        run_layer(m, il, s, s == &sc[0] ? W->center[0] : W->center[1], n);
    }
    be_download(cur->x, 0, host, (size_t)n * (size_t)e * sizeof(float));
    for (int b = 0; b < n_sc; b++) {
        const char *err = be_error(sc[b].be);
        if (err) { anv_set_error("%s", err); goto done; }
    }
    if (hp->pooling == MODEL_POOL_CLS || hp->pooling == MODEL_POOL_LAST) {
        memcpy(out, host + (hp->pooling == MODEL_POOL_CLS ? 0 : (size_t)(n - 1) * (size_t)e), (size_t)e * sizeof(float));
    } else {
        for (int64_t c = 0; c < e; c++) {
            double sum = 0;
            for (int t = 0; t < n; t++) sum += host[(size_t)t * (size_t)e + (size_t)c];
            out[c] = (float)(sum / n);
        }
    }
    rc = 0;
done:
    for (int i = 0; i < n_sc; i++) scratch_free(&sc[i]);
    free(host);
    free(pos);
    return rc;
}

/* ---- dense projections (gemma-embedding) ---- */

int embed_dense_load(model *m) {
    const gguf_file *f = m->gguf;
    const int64_t e = m->hp.n_embd;
    const gguf_tensor *d2 = gguf_find_tensor(f, "dense_2.weight"), *d3 = gguf_find_tensor(f, "dense_3.weight");
    bool fail = false;
    if (d2) m->dense2 = put(m, m->cpu, "dense_2.weight", e, d2->ne[1], -1, true, &fail);
    if (!fail && d3) {
        const int64_t in = m->dense2 ? m->dense2->rows : e;
        m->dense3 = put(m, m->cpu, "dense_3.weight", in, e, -1, true, &fail);
    }
    return fail ? -1 : 0;
}

int embed_dense_apply(model *m, float *v) {
    if (!m->dense2 && !m->dense3) return 0;
    backend *be = m->cpu;
    const int64_t e = m->hp.n_embd, mid = m->dense2 ? m->dense2->rows : e;
    be_tensor *a = be_tensor_new(be, QT_F32, e, 1), *b = be_tensor_new(be, QT_F32, mid, 1);
    int rc = -1;
    if (!a || !b) goto done;
    be_upload(a, 0, v, (size_t)e * sizeof(float));
    be_tensor *cur = a;
    if (m->dense2) { be->ops->matmul(be, m->dense2, a, b, 1, false); cur = b; }
    if (m->dense3) { be->ops->matmul(be, m->dense3, cur, a, 1, false); cur = a; }
    be_download(cur, 0, v, (size_t)e * sizeof(float));
    if (be_error(be)) { anv_set_error("%s", be_error(be)); goto done; }
    rc = 0;
done:
    be_tensor_free(a);
    be_tensor_free(b);
    return rc;
}
