/* forward: the one transformer forward pass, written once against backend.h, for every
 * supported family (llama, qwen2, qwen3, gemma3) and any split of layers between the
 * CPU and a GPU backend. Activations cross between backends once per boundary. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "model.h"
#include "quant.h"

#define MAX_BACKENDS 2
#define LOGITS_SCRATCH_BYTES (64u << 20)

/* Per-backend activations for one micro-batch of up to n_batch tokens. */
typedef struct {
    backend *be;
    be_tensor *x;       /* residual stream [n_batch][n_embd] */
    be_tensor *xn;      /* normed input of a block [n_batch][n_embd] */
    be_tensor *tmp;     /* block output before the post-norm (gemma3) [n_batch][n_embd] */
    be_tensor *q, *k, *v, *att;  /* [n_batch][n_head*hd], [n_batch][n_kv*hd] x2, [n_batch][n_head*hd] */
    be_tensor *gate, *up;        /* [n_batch][n_ff] */
    be_tensor *logits;           /* [logit_rows][n_vocab], only on the output backend */
} scratch;

struct model_ctx {
    model *m;
    int n_ctx, n_past, n_batch, logit_rows;
    uint32_t kv_type;
    be_tensor **k_cache, **v_cache;   /* per layer, on the layer's backend */
    scratch sc[MAX_BACKENDS];
    int n_sc;
    float *host_x;                    /* staging for crossing backends [n_batch][n_embd] */
    int32_t *history;                 /* the tokens whose K/V are in the cache [n_ctx] */
};

static void free_scratch(scratch *s) {
    be_tensor *ts[] = {s->x, s->xn, s->tmp, s->q, s->k, s->v, s->att, s->gate, s->up, s->logits};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) be_tensor_free(ts[i]);
}

static scratch *scratch_for(model_ctx *c, backend *be) {
    for (int i = 0; i < c->n_sc; i++)
        if (c->sc[i].be == be) return &c->sc[i];
    return NULL;
}

static int add_scratch(model_ctx *c, backend *be, bool with_logits) {
    const model_hparams *hp = &c->m->hp;
    scratch *s = scratch_for(c, be);
    if (!s) {
        s = &c->sc[c->n_sc++];
        s->be = be;
        const int nb = c->n_batch;
        const int64_t qd = (int64_t)hp->n_head * hp->head_dim_k, kvd = (int64_t)hp->n_head_kv * hp->head_dim_k;
        s->x = be_tensor_new(be, QT_F32, hp->n_embd, nb);
        s->xn = be_tensor_new(be, QT_F32, hp->n_embd, nb);
        s->tmp = be_tensor_new(be, QT_F32, hp->n_embd, nb);
        s->q = be_tensor_new(be, QT_F32, qd, nb);
        s->k = be_tensor_new(be, QT_F32, kvd, nb);
        s->v = be_tensor_new(be, QT_F32, kvd, nb);
        s->att = be_tensor_new(be, QT_F32, qd, nb);
        s->gate = be_tensor_new(be, QT_F32, hp->n_ff, nb);
        s->up = be_tensor_new(be, QT_F32, hp->n_ff, nb);
        if (!s->x || !s->xn || !s->tmp || !s->q || !s->k || !s->v || !s->att || !s->gate || !s->up) return -1;
    }
    if (with_logits && !s->logits) {
        s->logits = be_tensor_new(be, QT_F32, hp->n_vocab, c->logit_rows);
        if (!s->logits) return -1;
    }
    return 0;
}

model_ctx *model_ctx_new(model *m, int n_ctx, uint32_t kv_type) {
    const model_hparams *hp = &m->hp;
    if (n_ctx <= 0) n_ctx = hp->n_ctx_train < 4096 ? hp->n_ctx_train : 4096;
    if (kv_type != QT_F16 && kv_type != QT_F32 && kv_type != QT_Q8_0) {
        anv_set_error("KV cache type must be f16, f32 or q8_0");
        return NULL;
    }
    const int64_t kvd = (int64_t)hp->n_head_kv * hp->head_dim_k;
    if (kv_type == QT_Q8_0 && kvd % QK8_0) {
        anv_set_error("q8_0 KV cache needs n_kv_head*head_dim (%lld) to be a multiple of 32", (long long)kvd);
        return NULL;
    }
    model_ctx *c = calloc(1, sizeof *c);
    if (!c) { anv_set_error("out of memory"); return NULL; }
    c->m = m;
    c->n_ctx = n_ctx;
    c->kv_type = kv_type;
    c->n_batch = n_ctx < 512 ? n_ctx : 512;
    int64_t lr = LOGITS_SCRATCH_BYTES / ((int64_t)hp->n_vocab * 4);
    c->logit_rows = (int)(lr < 1 ? 1 : lr > c->n_batch ? c->n_batch : lr);
    c->k_cache = calloc((size_t)hp->n_layer, sizeof *c->k_cache);
    c->v_cache = calloc((size_t)hp->n_layer, sizeof *c->v_cache);
    c->host_x = malloc((size_t)c->n_batch * hp->n_embd * sizeof(float));
    c->history = malloc((size_t)n_ctx * sizeof(int32_t));
    if (!c->k_cache || !c->v_cache || !c->host_x || !c->history) { anv_set_error("out of memory"); goto fail; }
    for (int il = 0; il < hp->n_layer; il++) {
        backend *be = m->layers[il].be;
        c->k_cache[il] = be_tensor_new(be, kv_type, kvd, n_ctx);
        c->v_cache[il] = be_tensor_new(be, kv_type, kvd, n_ctx);
        if (!c->k_cache[il] || !c->v_cache[il]) goto fail;
        if (add_scratch(c, be, false) != 0) goto fail;
    }
    if (add_scratch(c, m->cpu, false) != 0) goto fail;  /* embeddings are looked up on the CPU */
    if (add_scratch(c, m->out_be, true) != 0) goto fail;
    return c;
fail:
    model_ctx_free(c);
    return NULL;
}

void model_ctx_free(model_ctx *c) {
    if (!c) return;
    for (int il = 0; c->k_cache && il < c->m->hp.n_layer; il++) {
        be_tensor_free(c->k_cache[il]);
        be_tensor_free(c->v_cache[il]);
    }
    free(c->k_cache);
    free(c->v_cache);
    for (int i = 0; i < c->n_sc; i++) free_scratch(&c->sc[i]);
    free(c->host_x);
    free(c->history);
    free(c);
}

int model_ctx_n_past(const model_ctx *c) { return c->n_past; }
model *model_ctx_model(const model_ctx *c) { return c->m; }
int model_ctx_n_ctx(const model_ctx *c) { return c->n_ctx; }
void model_ctx_reset(model_ctx *c) { c->n_past = 0; }
const int32_t *model_ctx_history(const model_ctx *c) { return c->history; }
void model_ctx_truncate(model_ctx *c, int n) {
    if (n >= 0 && n < c->n_past) c->n_past = n;  /* later rows of the cache are overwritten */
}

/* Moves the first n rows of the residual stream from one backend's scratch to another's. */
static void cross(model_ctx *c, scratch *from, scratch *to, int n) {
    size_t bytes = (size_t)n * c->m->hp.n_embd * sizeof(float);
    be_download(from->x, 0, c->host_x, bytes);
    be_upload(to->x, 0, c->host_x, bytes);
}

static void run_layer(model_ctx *c, int il, scratch *s, int nt, int pos0) {
    const model *m = c->m;
    const model_hparams *hp = &m->hp;
    const model_layer *L = &m->layers[il];
    backend *be = s->be;
    const backend_ops *op = be->ops;
    const int hd = hp->head_dim_k;
    const int64_t e = hp->n_embd, qd = (int64_t)hp->n_head * hd, kvd = (int64_t)hp->n_head_kv * hd;
    const bool swa = model_layer_is_swa(hp, il);

    /* attention block */
    op->rms_norm(be, s->x, L->attn_norm, s->xn, nt, e, hp->norm_eps);
    op->matmul(be, L->wq, s->xn, s->q, nt, false);
    op->matmul(be, L->wk, s->xn, s->k, nt, false);
    op->matmul(be, L->wv, s->xn, s->v, nt, false);
    if (L->bq) {
        op->add(be, s->q, L->bq, s->q, nt * qd, qd);
        op->add(be, s->k, L->bk, s->k, nt * kvd, kvd);
        op->add(be, s->v, L->bv, s->v, nt * kvd, kvd);
    }
    if (L->q_norm) {
        op->rms_norm(be, s->q, L->q_norm, s->q, (int64_t)nt * hp->n_head, hd, hp->norm_eps);
        op->rms_norm(be, s->k, L->k_norm, s->k, (int64_t)nt * hp->n_head_kv, hd, hp->norm_eps);
    }
    be_rope_params rp = {
        .n_rot = hp->n_rot,
        .mode = hp->rope_mode,
        .freq_base = swa ? hp->rope_base_swa : hp->rope_base,
        .freq_scale = swa ? 1.0f : hp->rope_scale,
        .freq_factors = be == m->cpu ? m->rope_freqs : m->rope_freqs_gpu,
    };
    op->rope(be, s->q, nt, hp->n_head, hd, pos0, &rp);
    op->rope(be, s->k, nt, hp->n_head_kv, hd, pos0, &rp);
    op->store_rows(be, s->k, c->k_cache[il], pos0, nt);
    op->store_rows(be, s->v, c->v_cache[il], pos0, nt);
    be_attn_params ap = {
        .n_tok = nt, .pos0 = pos0, .n_head = hp->n_head, .n_kv_head = hp->n_head_kv, .head_dim = hd,
        .scale = hp->attn_scale, .window = swa ? hp->swa_window : 0, .softcap = 0,
    };
    op->attention(be, s->q, c->k_cache[il], c->v_cache[il], s->att, &ap);
    if (L->post_attn_norm) {
        op->matmul(be, L->wo, s->att, s->tmp, nt, false);
        op->rms_norm(be, s->tmp, L->post_attn_norm, s->tmp, nt, e, hp->norm_eps);
        op->add(be, s->x, s->tmp, s->x, nt * e, nt * e);
    } else {
        op->matmul(be, L->wo, s->att, s->x, nt, true);   /* residual fused into the matmul */
    }

    /* feed-forward block */
    op->rms_norm(be, s->x, L->ffn_norm, s->xn, nt, e, hp->norm_eps);
    op->matmul(be, L->w_gate, s->xn, s->gate, nt, false);
    op->matmul(be, L->w_up, s->xn, s->up, nt, false);
    op->glu(be, s->gate, s->up, s->gate, (int64_t)nt * hp->n_ff, hp->arch == ARCH_GEMMA3 ? BE_GLU_GELU_TANH : BE_GLU_SILU);
    if (L->post_ffn_norm) {
        op->matmul(be, L->w_down, s->gate, s->tmp, nt, false);
        op->rms_norm(be, s->tmp, L->post_ffn_norm, s->tmp, nt, e, hp->norm_eps);
        op->add(be, s->x, s->tmp, s->x, nt * e, nt * e);
    } else {
        op->matmul(be, L->w_down, s->gate, s->x, nt, true);
    }
}

/* Final norm + output head for rows [row0, row0+n) of the residual stream; logits to host. */
static void run_output(model_ctx *c, scratch *s, int row0, int n, float *dst) {
    const model *m = c->m;
    const model_hparams *hp = &m->hp;
    backend *be = s->be;
    for (int r = 0; r < n; r += c->logit_rows) {
        int nr = n - r < c->logit_rows ? n - r : c->logit_rows;
        be_tensor xin = be_view_rows(s->x, row0 + r, nr);
        be_tensor xn = be_view_rows(s->xn, 0, nr);
        be->ops->rms_norm(be, &xin, m->output_norm, &xn, nr, hp->n_embd, hp->norm_eps);
        be->ops->matmul(be, m->output, &xn, s->logits, nr, false);
        float *out = dst + (size_t)r * hp->n_vocab;
        be_download(s->logits, 0, out, (size_t)nr * hp->n_vocab * sizeof(float));
        if (hp->final_softcap > 0)
            for (size_t i = 0; i < (size_t)nr * hp->n_vocab; i++)
                out[i] = hp->final_softcap * tanhf(out[i] / hp->final_softcap);
    }
}

static int eval_batch(model_ctx *c, const int32_t *tokens, int nt, float *logits, bool all_logits) {
    model *m = c->m;
    const model_hparams *hp = &m->hp;
    for (int i = 0; i < nt; i++) {
        if (tokens[i] < 0 || tokens[i] >= hp->n_vocab) {
            anv_set_error("token id %d is out of range (vocabulary has %d tokens)", tokens[i], hp->n_vocab);
            return -1;
        }
    }
    const int pos0 = c->n_past;
    scratch *cur = scratch_for(c, m->cpu);
    m->cpu->ops->get_rows(m->cpu, m->tok_embd, tokens, nt, cur->x);
    if (hp->embd_scale) m->cpu->ops->scale(m->cpu, cur->x, (int64_t)nt * hp->n_embd, sqrtf((float)hp->n_embd));
    for (int il = 0; il < hp->n_layer; il++) {
        scratch *s = scratch_for(c, m->layers[il].be);
        if (s != cur) { cross(c, cur, s, nt); cur = s; }
        run_layer(c, il, s, nt, pos0);
    }
    scratch *so = scratch_for(c, m->out_be);
    if (so != cur) { cross(c, cur, so, nt); cur = so; }
    if (logits) {
        if (all_logits) run_output(c, so, 0, nt, logits);
        else run_output(c, so, nt - 1, 1, logits);
    } else {
        be_sync(so->be);
    }
    memcpy(c->history + c->n_past, tokens, (size_t)nt * sizeof(int32_t));
    c->n_past += nt;
    return 0;
}

int model_eval(model_ctx *c, const int32_t *tokens, int n, float *logits, bool all_logits) {
    if (n <= 0) { anv_set_error("nothing to evaluate"); return -1; }
    if (c->n_past + n > c->n_ctx) {
        anv_set_error("context is full: %d tokens in the cache + %d new > context size %d", c->n_past, n, c->n_ctx);
        return -1;
    }
    const size_t n_vocab = (size_t)c->m->hp.n_vocab;
    for (int i = 0; i < n; i += c->n_batch) {
        int nt = n - i < c->n_batch ? n - i : c->n_batch;
        bool last = i + nt == n;
        float *dst = NULL;
        if (all_logits) dst = logits + (size_t)i * n_vocab;
        else if (last) dst = logits;
        if (eval_batch(c, tokens + i, nt, dst, all_logits) != 0) return -1;
        /* ops cannot return errors: each backend keeps the first one */
        for (int b = 0; b < c->n_sc; b++) {
            const char *err = c->sc[b].be->ops->error(c->sc[b].be);
            if (err) { anv_set_error("%s", err); return -1; }
        }
    }
    return 0;
}
