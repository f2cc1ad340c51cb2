/* forward: the one transformer forward pass, written once against backend.h, for every
 * supported decoder family and any split of layers between the CPU and a GPU backend: the
 * contexts (KV caches, activation scratch shared by server slots), the embedding lookup, each
 * layer as its blocks (attention.c, feed_forward.c; pass.h), the output head and pooling, and
 * the eval entry points of model.h. Activations cross between backends once per boundary. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "delta_net.h"
#include "encoder.h"
#include "error.h"
#include "moe.h"
#include "pass.h"
#include "quant.h"
#include "rope_table.h"

#define LOGITS_SCRATCH_BYTES (64u << 20)

static void free_scratch(scratch *s) {
    be_tensor *ts[] = {s->x, s->xn, s->tmp, s->q, s->k, s->v, s->att, s->gate, s->up, s->logits,
                       s->moe_in, s->moe_logits, s->moe_shlog, s->ple, s->moe_acc, s->rope_tab};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) be_tensor_free(ts[i]);
    delta_net_scratch_free(s);
}

static scratch *scratch_for(scratch_set *ss, backend *be) {
    for (int i = 0; i < ss->n_sc; i++)
        if (ss->sc[i].be == be) return &ss->sc[i];
    return NULL;
}

static int add_scratch(scratch_set *ss, const model *m, backend *be, bool with_logits) {
    const model_hparams *hp = &m->hp;
    scratch *s = scratch_for(ss, be);
    if (!s) {
        s = &ss->sc[ss->n_sc++];
        s->be = be;
        const int nb = ss->n_batch;
        int64_t qd = 0, kvd = 0;   /* the widest layer's (gemma4: per-layer head sizes) */
        for (int il = 0; il < hp->n_layer; il++) {
            const int64_t hd = model_layer_head_dim(hp, il), lkv = hd * model_layer_n_kv_head(hp, il);
            if (hd * hp->n_head > qd) qd = hd * hp->n_head;
            if (lkv > kvd) kvd = lkv;
        }
        s->x = be_tensor_new(be, QT_F32, hp->n_embd, nb);
        s->xn = be_tensor_new(be, QT_F32, hp->n_embd, nb);
        s->tmp = be_tensor_new(be, QT_F32, hp->n_embd, nb);
        s->q = be_tensor_new(be, QT_F32, qd, nb);
        s->k = be_tensor_new(be, QT_F32, kvd, nb);
        s->v = be_tensor_new(be, QT_F32, kvd, nb);
        s->att = be_tensor_new(be, QT_F32, qd, nb);
        const int64_t ffw = moe_ff_width(hp) > hp->n_embd_per_layer ? moe_ff_width(hp) : hp->n_embd_per_layer;
        s->gate = be_tensor_new(be, QT_F32, ffw, nb);
        s->up = be_tensor_new(be, QT_F32, ffw, nb);
        if (m->g4 && !(s->ple = be_tensor_new(be, QT_F32, hp->n_embd_per_layer, (int64_t)hp->n_layer * nb))) return -1;
        if (hp->n_expert > 0) {
            s->moe_in = be_tensor_new(be, QT_F32, hp->n_embd, nb);
            s->moe_logits = be_tensor_new(be, QT_F32, hp->n_expert, nb);
            s->moe_shlog = be_tensor_new(be, QT_F32, 1, nb);
            if (!s->moe_in || !s->moe_logits || !s->moe_shlog) return -1;
            if (hp->arch == ARCH_GEMMA4 && !(s->moe_acc = be_tensor_new(be, QT_F32, hp->n_embd, 2 * (int64_t)nb))) return -1;
        }
        if (!s->x || !s->xn || !s->tmp || !s->q || !s->k || !s->v || !s->att || !s->gate || !s->up) return -1;
        if (hp->arch == ARCH_QWEN35 && delta_net_scratch_new(s, hp, nb) != 0) return -1;
    }
    if (with_logits && !s->logits) {
        s->logits = be_tensor_new(be, QT_F32, hp->n_vocab, ss->logit_rows);
        if (!s->logits) return -1;
    }
    return 0;
}

static int scratch_set_init(scratch_set *ss, model *m, int n_batch) {
    const model_hparams *hp = &m->hp;
    ss->n_batch = n_batch;
    int64_t lr = LOGITS_SCRATCH_BYTES / ((int64_t)hp->n_vocab * 4);
    ss->logit_rows = (int)(lr < 1 ? 1 : lr > n_batch ? n_batch : lr);
    ss->host_x = malloc((size_t)n_batch * hp->n_embd * sizeof(float));
    if (!ss->host_x) { anv_set_error("out of memory"); return -1; }
    if (m->g4 && !(ss->host_ple = malloc(2 * (size_t)n_batch * hp->n_layer * hp->n_embd_per_layer * sizeof(float)))) {
        anv_set_error("out of memory");
        return -1;
    }
    for (int il = 0; il < hp->n_layer; il++)
        if (add_scratch(ss, m, m->layers[il].be, false) != 0) return -1;
    if (add_scratch(ss, m, m->cpu, false) != 0) return -1;  /* embeddings are looked up on the CPU */
    if (add_scratch(ss, m, m->out_be, true) != 0) return -1;
    return 0;
}

static void scratch_set_free(scratch_set *ss) {
    for (int i = 0; i < ss->n_sc; i++) free_scratch(&ss->sc[i]);
    free(ss->host_x);
    free(ss->host_ple);
}

static model_ctx *ctx_new(model *m, int n_ctx, uint32_t kv_type, model_ctx *parent) {
    const model_hparams *hp = &m->hp;
    if (n_ctx <= 0) n_ctx = m->default_ctx > 0 ? m->default_ctx : hp->n_ctx_train < 4096 ? hp->n_ctx_train : 4096;
    if (kv_type != QT_F16 && kv_type != QT_F32 && kv_type != QT_Q8_0 && kv_type != QT_Q4_0) {
        anv_set_error("KV cache type must be f16, f32, q8_0 or q4_0");
        return NULL;
    }
    for (int il = 0; il < hp->n_layer; il++) {
        const int hd = model_layer_head_dim(hp, il);
        if ((kv_type == QT_Q8_0 || kv_type == QT_Q4_0) && hd % 32) {
            /* each head must start on a 32-element block (the attention ops read per head) */
            anv_set_error("a %s KV cache needs head_dim (%d) to be a multiple of 32; use --kv-type f16", qtype_get(kv_type)->name, hd);
            return NULL;
        }
        int nk, nv;   /* one Hadamard rotation for all layers, sized for the smallest head (kv_rot.h) */
        kv_rot_sizes(kv_type, kv_rot_head_dim(hp), &nk, &nv);
        if (nk && (hd % nk || hd % nv)) {
            anv_set_error("a %s KV cache for head sizes %d and %d (not one rotation group) is not supported; use --kv-type f16",
                          qtype_get(kv_type)->name, hd, kv_rot_head_dim(hp));
            return NULL;
        }
    }
    model_ctx *c = calloc(1, sizeof *c);
    if (!c) { anv_set_error("out of memory"); return NULL; }
    c->m = m;
    c->n_ctx = n_ctx;
    c->kv_type = kv_type;
    c->k_cache = calloc((size_t)hp->n_layer, sizeof *c->k_cache);
    c->v_cache = calloc((size_t)hp->n_layer, sizeof *c->v_cache);
    c->history = malloc((size_t)n_ctx * sizeof(int32_t));
    if (!c->k_cache || !c->v_cache || !c->history) { anv_set_error("out of memory"); goto fail; }
    if (hp->rope_sect_mode) {
        if (!(c->next_pos = malloc(((size_t)n_ctx + 1) * sizeof(int32_t)))) { anv_set_error("out of memory"); goto fail; }
        c->next_pos[0] = 0;
    }
    for (int il = 0; il < hp->n_layer; il++) {
        backend *be = m->layers[il].be;
        if (model_layer_is_recurrent(hp, il)) continue;   /* its state instead: c->rs */
        const int src = model_layer_kv_source(hp, il);
        if (src != il) {   /* gemma4: attends over an earlier layer's cache (model_load keeps them together) */
            if (m->layers[src].be != be) { anv_set_error("layer %d shares the KV cache of layer %d on another device", il, src); goto fail; }
            c->k_cache[il] = c->k_cache[src];
            c->v_cache[il] = c->v_cache[src];
            continue;
        }
        const int64_t kvd = (int64_t)model_layer_n_kv_head(hp, il) * model_layer_head_dim(hp, il);
        c->k_cache[il] = be_tensor_new(be, kv_type, kvd, n_ctx);
        c->v_cache[il] = be_tensor_new(be, kv_type, kvd, n_ctx);
        if (!c->k_cache[il] || !c->v_cache[il]) goto fail;
    }
    bool rs_failed = false;
    c->rs = rs_new(m, &rs_failed);
    if (rs_failed) goto fail;
    if (kv_rot_init(&c->rot, kv_type, m) != 0) goto fail;
    if (parent) {
        c->ss = parent->ss;
    } else {
        c->ss = &c->own;
        /* noncausal models take a whole input in one pass */
        if (scratch_set_init(&c->own, m, n_ctx < 512 || hp->noncausal ? n_ctx : 512) != 0) goto fail;
    }
    return c;
fail:
    model_ctx_free(c);
    return NULL;
}

model_ctx *model_ctx_new(model *m, int n_ctx, uint32_t kv_type) { return ctx_new(m, n_ctx, kv_type, NULL); }

model_ctx *model_ctx_new_shared(model_ctx *parent, int n_ctx, uint32_t kv_type) {
    return ctx_new(parent->m, n_ctx, kv_type, parent);
}

int model_ctx_n_batch(const model_ctx *c) { return c->ss->n_batch; }

int model_ctx_reserve_batch(model_ctx *c, int n_rows) {
    if (n_rows > c->n_ctx) n_rows = c->n_ctx;   /* no pass holds more rows than the context */
    scratch_set *ss = c->ss;
    if (n_rows <= ss->n_batch) return 0;
    /* the new set first: on failure the context keeps its old one */
    scratch_set grown;
    memset(&grown, 0, sizeof grown);
    if (scratch_set_init(&grown, c->m, n_rows) != 0) {
        scratch_set_free(&grown);
        char why[256];
        snprintf(why, sizeof why, "%s", anv_last_error());
        anv_set_error("cannot make a batch of %d rows: %s", n_rows, why);
        return -1;
    }
    scratch_set_free(ss);
    *ss = grown;
    return 0;
}

void model_ctx_free(model_ctx *c) {
    if (!c) return;
    for (int il = 0; c->k_cache && il < c->m->hp.n_layer; il++) {
        if (model_layer_kv_source(&c->m->hp, il) != il) continue;   /* another layer's cache (gemma4) */
        be_tensor_free(c->k_cache[il]);
        be_tensor_free(c->v_cache[il]);
    }
    free(c->k_cache);
    free(c->v_cache);
    kv_rot_free(&c->rot);
    rs_free(c->rs);
    scratch_set_free(&c->own);
    free(c->history);
    free(c->next_pos);
    free(c);
}

int model_ctx_n_past(const model_ctx *c) { return c->n_past; }
int model_n_embd_inp(const model *m) { return m->hp.n_embd * (1 + m->hp.n_deepstack); }
int model_ctx_next_pos(const model_ctx *c) { return c->next_pos ? c->next_pos[c->n_past] : c->n_past; }
model *model_ctx_model(const model_ctx *c) { return c->m; }
int model_ctx_n_ctx(const model_ctx *c) { return c->n_ctx; }
void model_ctx_reset(model_ctx *c) {
    c->n_past = 0;
    rs_reset(c->rs);
}
const int32_t *model_ctx_history(const model_ctx *c) { return c->history; }
void model_ctx_truncate(model_ctx *c, int n) {
    if (n < 0 || n >= c->n_past) return;
    /* later rows of the KV cache are overwritten; a recurrent state rolls back to a checkpoint */
    c->n_past = c->rs ? rs_rollback(c->rs, n) : n;
}

/* Moves the first n rows of the residual stream from one backend's scratch to another's. */
static void cross(scratch_set *ss, const model *m, scratch *from, scratch *to, int n) {
    size_t bytes = (size_t)n * m->hp.n_embd * sizeof(float);
    be_download(from->x, 0, ss->host_x, bytes);
    be_upload(to->x, 0, ss->host_x, bytes);
}

/* Layer il over the batch: the blocks add into the residual s->x. */
static void run_layer(const model *m, int il, scratch *s, int nt, const seq_span *seqs, int n_seq, bool bidirectional,
                      bool image_rope) {
    const layer_pass p = {
        .m = m, .hp = &m->hp, .L = &m->layers[il], .il = il, .be = s->be, .op = s->be->ops, .s = s,
        .nt = nt, .seqs = seqs, .n_seq = n_seq, .bidirectional = bidirectional, .rope_tab = image_rope ? s->rope_tab : NULL,
    };
    if (m->hp.arch == ARCH_GEMMA4) { gemma4_layer(&p); return; }   /* its own layer shape */
    if (model_layer_is_recurrent(p.hp, il)) delta_net_block(&p);
    else attention_block(&p);
    feed_forward_block(&p);
}

/* Final norm + output head for rows [row0, row0+n) of src; logits to host. */
static void run_output(scratch_set *ss, const model *m, scratch *s, const be_tensor *src, int row0, int n, float *dst) {
    const model_hparams *hp = &m->hp;
    backend *be = s->be;
    for (int r = 0; r < n; r += ss->logit_rows) {
        int nr = n - r < ss->logit_rows ? n - r : ss->logit_rows;
        be_tensor xin = be_view_rows(src, row0 + r, nr);
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

/* What a forward pass returns besides advancing the caches. */
typedef enum { OUT_NONE, OUT_LAST_LOGITS, OUT_ALL_LOGITS, OUT_EMBD_SUM, OUT_EMBD_FIRST, OUT_EMBD_LAST } out_kind;

/* The rows of input embeddings of a pass instead of tokens (model_eval_embd): nt rows of
 * n_embd floats; bidirectional as layer_pass's. */
typedef struct {
    const float *rows;
    bool bidirectional;
    int grid_w, grid_h;   /* an image's grid (M-RoPE positions), 0 = none */
    int row0, p0;         /* an image evaluated in parts: this part's first row in the grid, the image's position */
} embd_input;

/* M-RoPE rows by table (rope_rows): an image's rows (ein with a grid, one sequence) at
 * (t, h, w, e) = (p0, p0 + y, p0 + x, 0) from the context's next text position, or text rows at
 * [p, p, p, 0] where the sections leave a pair to 'e' (hp.rope_text_table). The table is uploaded
 * to every backend of the pass; 1 when made, 0 when the rows rope as plain NEOX text, -1 + error. */
static int rope_tables(scratch_set *ss, const model *m, const seq_span *seqs, int n_seq, const embd_input *ein, int nt) {
    const model_hparams *hp = &m->hp;
    const bool image = ein && ein->grid_w > 0 && ein->grid_h > 0;
    if (!hp->rope_sect_mode || (!image && !hp->rope_text_table)) return 0;
    if (image && (ein->row0 < 0 || (int64_t)ein->grid_w * ein->grid_h < (int64_t)ein->row0 + nt)) {
        anv_set_error("image grid %d x %d does not hold rows %d..%d", ein->grid_w, ein->grid_h, ein->row0, ein->row0 + nt - 1);
        return -1;
    }
    int32_t *pos = malloc((size_t)nt * 4 * sizeof(int32_t));
    float *tab = malloc((size_t)nt * hp->n_rot * sizeof(float));
    if (!pos || !tab) { free(pos); free(tab); anv_set_error("out of memory"); return -1; }
    for (int si = 0; si < n_seq; si++) {
        const int p0 = image ? ein->p0 : model_ctx_next_pos(seqs[si].c);
        for (int t = 0; t < seqs[si].n; t++) {
            const int r = seqs[si].row0 + t, g = image ? ein->row0 + t : 0;   /* g: the row's index in the image grid */
            pos[r] = image ? p0 : p0 + t;
            pos[nt + r] = image ? p0 + g / ein->grid_w : p0 + t;
            pos[2 * nt + r] = image ? p0 + g % ein->grid_w : p0 + t;
            pos[3 * nt + r] = 0;
        }
    }
    rope_table_fill(tab, pos, nt, hp->n_rot, hp->rope_sections, (rope_sect_mode)(hp->rope_sect_mode - 1), hp->rope_base, hp->rope_scale);
    int rc = 1;
    for (int b = 0; b < ss->n_sc; b++) {
        scratch *s = &ss->sc[b];
        if (!s->be->ops->rope_rows) { anv_set_error("%s: M-RoPE positions need the rope_rows op", s->be->name); rc = -1; break; }
        if (!s->rope_tab && !(s->rope_tab = be_tensor_new(s->be, QT_F32, hp->n_rot, ss->n_batch))) { rc = -1; break; }
        be_upload(s->rope_tab, 0, tab, (size_t)nt * hp->n_rot * sizeof(float));
    }
    free(pos);
    free(tab);
    return rc;
}

/* qwen3vl's deepstack: slice k (1..n_deepstack, k = 0 the input) of ein's nt rows into host (nt x n_embd). */
static void deepstack_slice(const model_hparams *hp, const embd_input *ein, int nt, int k, float *host) {
    const size_t w = (size_t)hp->n_embd, stride = w * (size_t)(1 + hp->n_deepstack);
    for (int t = 0; t < nt; t++) memcpy(host + (size_t)t * w, ein->rows + (size_t)t * stride + (size_t)k * w, w * sizeof(float));
}

/* One forward pass over nt tokens split into n_seq sequences (consecutive rows). OUT_LAST_LOGITS
 * gives one row per sequence; OUT_ALL_LOGITS every row (single sequence); OUT_EMBD_SUM adds
 * the final-normed hidden state of every row to out[n_embd]. With ein, its rows replace the
 * token lookups (tokens NULL; a single sequence). */
static int forward_in(scratch_set *ss, model *m, const seq_span *seqs, int n_seq, const int32_t *tokens,
                      const embd_input *ein, int nt, out_kind kind, float *out) {
    const model_hparams *hp = &m->hp;
    if (m->enc) {
        anv_set_error("%s is an embedding model: it has no output head to evaluate (use model_embed)", hp->arch_name);
        return -1;
    }
    for (int i = 0; tokens && i < nt; i++) {
        if (tokens[i] < 0 || tokens[i] >= hp->n_vocab) {
            anv_set_error("token id %d is out of range (vocabulary has %d tokens)", tokens[i], hp->n_vocab);
            return -1;
        }
    }
    const int image_rope = rope_tables(ss, m, seqs, n_seq, ein, nt);
    const bool image_rows = ein && ein->grid_w > 0 && ein->grid_h > 0 && hp->rope_sect_mode;
    if (image_rope < 0) return -1;
    scratch *cur = scratch_for(ss, m->cpu);
    if (ein && hp->n_deepstack) {   /* the input slice of each row */
        deepstack_slice(hp, ein, nt, 0, ss->host_x);
        be_upload(cur->x, 0, ss->host_x, (size_t)nt * hp->n_embd * sizeof(float));
    } else if (ein) {   /* rows of embeddings as they are (no gemma sqrt(n_embd) scale, as llama.cpp) */
        be_upload(cur->x, 0, ein->rows, (size_t)nt * hp->n_embd * sizeof(float));
        /* gemma4: embedding rows take token 0's per-layer row (llama.cpp's TAG_GEMMA4_IMG_PADDING) */
        if (m->g4) {
            int32_t *pad = calloc((size_t)nt, sizeof *pad);
            if (!pad) { anv_set_error("out of memory"); return -1; }
            const int rc = gemma4_per_layer_inputs(ss, m, cur, pad, nt);
            free(pad);
            if (rc != 0) return -1;
        }
    } else {
        m->cpu->ops->get_rows(m->cpu, m->tok_embd, tokens, nt, cur->x);
        if (hp->embd_scale) m->cpu->ops->scale(m->cpu, cur->x, (int64_t)nt * hp->n_embd, sqrtf((float)hp->n_embd));
        if (m->g4 && gemma4_per_layer_inputs(ss, m, cur, tokens, nt) != 0) return -1;
    }
    for (int il = 0; il < hp->n_layer; il++) {
        scratch *s = scratch_for(ss, m->layers[il].be);
        if (s != cur) { cross(ss, m, cur, s, nt); cur = s; }
        run_layer(m, il, s, nt, seqs, n_seq, ein && ein->bidirectional, image_rope == 1);
        if (ein && il < hp->n_deepstack) {   /* qwen3vl: x += the deepstack slice il + 1 (s->tmp is free between layers) */
            deepstack_slice(hp, ein, nt, il + 1, ss->host_x);
            be_upload(s->tmp, 0, ss->host_x, (size_t)nt * hp->n_embd * sizeof(float));
            s->be->ops->add(s->be, s->x, s->tmp, s->x, (int64_t)nt * hp->n_embd, (int64_t)nt * hp->n_embd);
        }
    }
    scratch *so = scratch_for(ss, m->out_be);
    if (so != cur) { cross(ss, m, cur, so, nt); cur = so; }
    backend *be = so->be;
    switch (kind) {
    case OUT_NONE: be_sync(be); break;
    case OUT_ALL_LOGITS: run_output(ss, m, so, so->x, 0, nt, out); break;
    case OUT_LAST_LOGITS:
        if (n_seq == 1 || nt == n_seq) {   /* the last rows are already consecutive */
            run_output(ss, m, so, so->x, nt - n_seq, n_seq, out);
        } else {                           /* gather each sequence's last row */
            for (int i = 0; i < n_seq; i++) {
                be_tensor row = be_view_rows(so->x, seqs[i].row0 + seqs[i].n - 1, 1);
                be->ops->store_rows(be, &row, so->tmp, i, 1);
            }
            run_output(ss, m, so, so->tmp, 0, n_seq, out);
        }
        break;
    case OUT_EMBD_SUM: case OUT_EMBD_FIRST: case OUT_EMBD_LAST: {
        be->ops->rms_norm(be, so->x, m->output_norm, so->xn, nt, hp->n_embd, hp->norm_eps);
        be_download(so->xn, 0, ss->host_x, (size_t)nt * hp->n_embd * sizeof(float));
        if (kind == OUT_EMBD_SUM) {
            for (int t = 0; t < nt; t++)
                for (int e = 0; e < hp->n_embd; e++) out[e] += ss->host_x[(size_t)t * hp->n_embd + e];
        } else {   /* CLS: the first row of the first pass; LAST: the last row of the last */
            memcpy(out, ss->host_x + (kind == OUT_EMBD_FIRST ? 0 : (size_t)(nt - 1) * hp->n_embd), (size_t)hp->n_embd * sizeof(float));
        }
        break;
    }
    }
    for (int i = 0; i < n_seq; i++) {
        model_ctx *c = seqs[i].c;
        if (tokens) memcpy(c->history + c->n_past, tokens + seqs[i].row0, (size_t)seqs[i].n * sizeof(int32_t));
        else for (int t = 0; t < seqs[i].n; t++) c->history[c->n_past + t] = MODEL_TOKEN_EMBD;
        if (c->next_pos) {   /* text: one position per row; an M-RoPE image: max(grid) for all its rows */
            const int p0 = c->next_pos[c->n_past];
            for (int t = 0; t < seqs[i].n; t++)
                c->next_pos[c->n_past + t + 1] = image_rows ? ein->p0 + (ein->grid_w > ein->grid_h ? ein->grid_w : ein->grid_h) : p0 + t + 1;
        }
        c->n_past += seqs[i].n;
        if (c->rs && seqs[i].n >= 2) rs_checkpoint(c->rs, c->n_past);   /* a prompt (chunk): truncate's landing points */
    }
    /* ops cannot return errors: each backend keeps the first one (be_fail, backend.h) */
    for (int b = 0; b < ss->n_sc; b++) {
        const char *err = be_error(ss->sc[b].be);
        if (err) { anv_set_error("%s", err); return -1; }
    }
    return 0;
}

static int forward(scratch_set *ss, model *m, const seq_span *seqs, int n_seq, const int32_t *tokens, int nt, out_kind kind,
                   float *out) {
    return forward_in(ss, m, seqs, n_seq, tokens, NULL, nt, kind, out);
}

static int check_room(const model_ctx *c, int n) {
    if (n <= 0) { anv_set_error("nothing to evaluate"); return -1; }
    if (c->n_past + n > c->n_ctx) {
        anv_set_error("context is full: %d tokens in the cache + %d new > context size %d", c->n_past, n, c->n_ctx);
        return -1;
    }
    return 0;
}

int model_eval(model_ctx *c, const int32_t *tokens, int n, float *logits, bool all_logits) {
    if (check_room(c, n) != 0) return -1;
    const size_t n_vocab = (size_t)c->m->hp.n_vocab;
    for (int i = 0; i < n; i += c->ss->n_batch) {
        int nt = n - i < c->ss->n_batch ? n - i : c->ss->n_batch;
        bool last = i + nt == n;
        seq_span sq = {c, 0, nt};
        out_kind kind = OUT_NONE;
        float *dst = NULL;
        if (all_logits && logits) { kind = OUT_ALL_LOGITS; dst = logits + (size_t)i * n_vocab; }
        else if (last && logits) { kind = OUT_LAST_LOGITS; dst = logits; }
        if (forward(c->ss, c->m, &sq, 1, tokens + i, nt, kind, dst) != 0) return -1;
    }
    return 0;
}

int model_eval_embd(model_ctx *c, const float *embd, int n, bool bidirectional, float *logits, bool all_logits) {
    return model_eval_embd_grid(c, embd, n, 0, 0, bidirectional, logits, all_logits);
}

int model_eval_embd_grid(model_ctx *c, const float *embd, int n, int grid_w, int grid_h, bool bidirectional, float *logits,
                         bool all_logits) {
    model *m = c->m;
    const model_hparams *hp = &m->hp;
    if (check_room(c, n) != 0) return -1;
    if (!embd) { anv_set_error("model_eval_embd: no embeddings"); return -1; }
    /* bidirectional rows go in one pass: a batch of them (model_ctx_reserve_batch; a no-op when it holds them) */
    if (bidirectional && model_ctx_reserve_batch(c, n) != 0) return -1;
    const size_t w = (size_t)model_n_embd_inp(m);
    for (size_t i = 0; i < (size_t)n * w; i++)
        if (!isfinite(embd[i])) { anv_set_error("model_eval_embd: embedding row %zu holds a non-finite value", i / w); return -1; }
    /* causal rows in parts of n_batch (an image of many rows, as mtmd's batches), all at the
     * image's M-RoPE position */
    const int p0 = model_ctx_next_pos(c);
    for (int i = 0; i < n; i += c->ss->n_batch) {
        const int nt = n - i < c->ss->n_batch ? n - i : c->ss->n_batch;
        seq_span sq = {c, 0, nt};
        const embd_input ein = {embd + (size_t)i * w, bidirectional, grid_w, grid_h, i, p0};
        out_kind kind = OUT_NONE;
        float *dst = NULL;
        if (logits && all_logits) { kind = OUT_ALL_LOGITS; dst = logits + (size_t)i * hp->n_vocab; }
        else if (logits && i + nt == n) { kind = OUT_LAST_LOGITS; dst = logits; }
        if (forward_in(c->ss, m, &sq, 1, NULL, &ein, nt, kind, dst) != 0) return -1;
    }
    return 0;
}

int model_eval_multi(model_ctx *const *ctxs, const int32_t *const *tokens, const int *n_tokens,
                     int n_seq, float *logits) {
    if (n_seq <= 0) { anv_set_error("nothing to evaluate"); return -1; }
    scratch_set *ss = ctxs[0]->ss;
    model *m = ctxs[0]->m;
    int total = 0;
    for (int i = 0; i < n_seq; i++) {
        if (ctxs[i]->ss != ss) { anv_set_error("model_eval_multi: contexts do not share one scratch"); return -1; }
        for (int j = 0; j < i; j++)
            if (ctxs[j] == ctxs[i]) { anv_set_error("model_eval_multi: a context appears twice"); return -1; }
        if (check_room(ctxs[i], n_tokens[i]) != 0) return -1;
        total += n_tokens[i];
    }
    if (total > ss->n_batch) {
        anv_set_error("model_eval_multi: %d tokens exceed the batch size %d", total, ss->n_batch);
        return -1;
    }
    seq_span *seqs = malloc((size_t)n_seq * sizeof *seqs);
    int32_t *all = malloc((size_t)total * sizeof *all);
    if (!seqs || !all) { free(seqs); free(all); anv_set_error("out of memory"); return -1; }
    int row = 0;
    for (int i = 0; i < n_seq; i++) {
        seqs[i] = (seq_span){ctxs[i], row, n_tokens[i]};
        memcpy(all + row, tokens[i], (size_t)n_tokens[i] * sizeof *all);
        row += n_tokens[i];
    }
    int rc = forward(ss, m, seqs, n_seq, all, total, logits ? OUT_LAST_LOGITS : OUT_NONE, logits);
    free(seqs);
    free(all);
    return rc;
}

int model_embed(model_ctx *c, const int32_t *tokens, int n, float *out) {
    model *m = c->m;
    if (m->enc) return encoder_embed(m, tokens, n, out);
    if (check_room(c, n) != 0) return -1;
    const model_hparams *hp = &m->hp;
    if (hp->noncausal && (c->n_past > 0 || n > c->ss->n_batch)) {
        anv_set_error("embedding: a bidirectional model takes its input in one pass (%d tokens, batch %d, %d cached)", n,
                      c->ss->n_batch, c->n_past);
        return -1;
    }
    const int n_embd = hp->n_embd;
    memset(out, 0, (size_t)n_embd * sizeof *out);
    for (int i = 0; i < n; i += c->ss->n_batch) {
        int nt = n - i < c->ss->n_batch ? n - i : c->ss->n_batch;
        seq_span sq = {c, 0, nt};
        out_kind kind = hp->pooling == MODEL_POOL_CLS ? (i == 0 ? OUT_EMBD_FIRST : OUT_NONE)
                        : hp->pooling == MODEL_POOL_LAST ? (i + nt == n ? OUT_EMBD_LAST : OUT_NONE) : OUT_EMBD_SUM;
        if (forward(c->ss, m, &sq, 1, tokens + i, nt, kind, out) != 0) return -1;
    }
    if (hp->pooling != MODEL_POOL_CLS && hp->pooling != MODEL_POOL_LAST)
        for (int e = 0; e < n_embd; e++) out[e] /= (float)n;
    return embed_dense_apply(m, out);
}
