/* moe: mixture-of-experts hyperparameters, expert weights and the MoE feed-forward block
 * (qwen3moe, qwen2moe and qwen35moe with their gated shared expert, mixtral-style llama MoE; gpt-oss's router
 * and expert biases, softmax over the top-k logits and SWIGLU_OAI, gptoss.c), written once
 * against backend.h. Facts from llama.cpp (src/llama-graph.cpp build_moe_ffn and the
 * families' graphs): probs = softmax (or sigmoid) of the router logits over all experts,
 * the top n_expert_used by prob, weights = their probs, renormalised to sum 1 where the
 * family does (qwen3moe, llama: yes; qwen2moe: no; sum clamped at 6.1e-5), times
 * expert_weights_scale if set; expert out = down(silu(gate x) * up x); qwen2moe adds
 * sigmoid(gate_inp_shexp . x) * shared_ffn(x).
 *
 * Routing runs on the host: the router logits are downloaded (one sync per MoE layer),
 * the top-k is chosen there, and the experts run batched by expert: the rows routed to
 * expert e are gathered (get_rows on the normed activations), go through e's three
 * matmuls as one batch, and are added back into the residual row by row, each scaled by
 * its weight (scale + add on a one-row view). */
#include "moe.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "quant.h"

#define MOE_MAX_EXPERTS 1024

static bool get_u32(const gguf_file *f, const char *arch, const char *suffix, int *out) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    uint32_t v;
    if (gguf_get_u32(f, key, &v)) {
        if (v > (1u << 30)) { anv_set_error("%s: metadata %s = %u is out of range", f->path, key, v); return false; }
        *out = (int)v;
        return true;
    }
    return gguf_find(f, key) == NULL; /* absent: default kept; wrong type: error set by gguf */
}

int moe_read_hparams(const gguf_file *f, const char *arch, model_hparams *hp) {
    hp->n_expert = hp->n_expert_used = hp->n_ff_exp = hp->n_ff_shexp = 0;
    hp->expert_norm = hp->arch != ARCH_QWEN2MOE; /* llama.cpp: qwen3moe, llama true; qwen2moe false */
    hp->expert_scale = 0;
    hp->expert_gating = 1;
    if (!get_u32(f, arch, "expert_count", &hp->n_expert)) return -1;
    const bool qwen35moe = strcmp(arch, "qwen35moe") == 0;   /* qwen35's body, experts + gated shared expert */
    bool is_moe_arch = hp->arch == ARCH_QWEN2MOE || hp->arch == ARCH_QWEN3MOE || hp->arch == ARCH_GPTOSS || qwen35moe;
    const bool optional_moe = hp->arch == ARCH_LLAMA || hp->arch == ARCH_GEMMA4;   /* dense or MoE */
    if (hp->n_expert == 0) {
        if (is_moe_arch) { anv_set_error("%s: metadata %s.expert_count is missing or 0 (a %s model needs experts)", f->path, arch, arch); return -1; }
        return 0;
    }
    if (!optional_moe && !is_moe_arch) {
        anv_set_error("%s: metadata %s.expert_count = %d: mixture of experts is not supported for %s", f->path, arch, hp->n_expert, arch);
        return -1;
    }
    if (hp->n_expert > MOE_MAX_EXPERTS) {
        anv_set_error("%s: metadata %s.expert_count = %d is invalid (must be <= %d)", f->path, arch, hp->n_expert, MOE_MAX_EXPERTS);
        return -1;
    }
    if (!get_u32(f, arch, "expert_used_count", &hp->n_expert_used)) return -1;
    if (hp->n_expert_used < 1 || hp->n_expert_used > hp->n_expert) {
        anv_set_error("%s: metadata %s.expert_used_count = %d is invalid (must be 1..expert_count %d)", f->path, arch,
                      hp->n_expert_used, hp->n_expert);
        return -1;
    }
    hp->n_ff_exp = hp->arch == ARCH_LLAMA ? hp->n_ff : hp->n_ff / hp->n_expert_used;
    /* gemma4: one width per layer possible (gemma4_read_hparams reads it) */
    if (hp->arch != ARCH_GEMMA4 && !get_u32(f, arch, "expert_feed_forward_length", &hp->n_ff_exp)) return -1;
    if (hp->n_ff_exp < 1) {
        anv_set_error("%s: metadata %s.expert_feed_forward_length = %d is invalid (must be >= 1)", f->path, arch, hp->n_ff_exp);
        return -1;
    }
    if (hp->arch == ARCH_QWEN2MOE) {
        if (!get_u32(f, arch, "expert_shared_feed_forward_length", &hp->n_ff_shexp)) return -1;
    }
    if (qwen35moe) {   /* llama.cpp's qwen35moe: the shared expert always, n_ff wide unless the key says */
        hp->n_ff_shexp = hp->n_ff;
        if (!get_u32(f, arch, "expert_shared_feed_forward_length", &hp->n_ff_shexp)) return -1;
        if (hp->n_ff_shexp < 1) {
            anv_set_error("%s: metadata %s.expert_shared_feed_forward_length = %d is invalid (must be >= 1)", f->path, arch, hp->n_ff_shexp);
            return -1;
        }
    }
    char key[128];
    snprintf(key, sizeof key, "%s.expert_weights_scale", arch);
    if (!gguf_get_f32(f, key, &hp->expert_scale) && gguf_find(f, key)) return -1;
    if (!isfinite(hp->expert_scale)) { anv_set_error("%s: metadata %s is not finite", f->path, key); return -1; }
    snprintf(key, sizeof key, "%s.expert_weights_norm", arch);
    bool norm;
    if (gguf_get_bool(f, key, &norm)) hp->expert_norm = norm;
    else if (gguf_find(f, key)) return -1;
    if (!get_u32(f, arch, "expert_gating_func", &hp->expert_gating)) return -1;
    if (hp->expert_gating == 0) hp->expert_gating = 1; /* llama.cpp: none = softmax */
    if (hp->expert_gating != 1 && hp->expert_gating != 2) {
        anv_set_error("%s: metadata %s.expert_gating_func = %d is unsupported (1 softmax, 2 sigmoid)", f->path, arch, hp->expert_gating);
        return -1;
    }
    return 0;
}

int64_t moe_ff_width(const model_hparams *hp) {
    int64_t w = hp->n_ff;
    if (hp->n_ff_exp > w) w = hp->n_ff_exp;
    if (hp->n_ff_shexp > w) w = hp->n_ff_shexp;
    return w;
}

be_tensor **moe_split_experts(model *m, backend *be, const gguf_tensor *t, int64_t cols, int64_t rows, int ne, bool *failed) {
    const size_t eb = qtype_row_size((qtype)t->type, cols) * (size_t)rows;
    be_tensor **w = calloc((size_t)ne, sizeof *w);
    if (!w) { anv_set_error("out of memory"); *failed = true; return NULL; }
    for (int e = 0; e < ne; e++) {
        w[e] = be->ops->weight_new(be, t->type, cols, rows, (const uint8_t *)t->data + (size_t)e * eb);
        if (!w[e]) { *failed = true; break; }
    }
    m->weight_bytes += t->nbytes;
    return w;
}

/* blk.il.<suffix> as n_expert 2-D weights [rows][cols] cut from one [cols, rows, n_expert]
 * tensor; NULL + error if missing, mis-shaped or of a type that is not a weight. */
static be_tensor **place_experts(model *m, backend *be, int il, const char *suffix, int64_t cols, int64_t rows, bool *failed) {
    const gguf_file *f = m->gguf;
    const int ne = m->hp.n_expert;
    char name[128];
    snprintf(name, sizeof name, "blk.%d.%s", il, suffix);
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (!t) { anv_set_error("%s: missing tensor '%s'", f->path, name); *failed = true; return NULL; }
    if (t->ne[0] != cols || t->ne[1] != rows || t->ne[2] != ne || t->ne[3] != 1) {
        anv_set_error("%s: tensor '%s' has shape [%lld, %lld, %lld, %lld], expected [%lld, %lld, %d] (n_expert %d)", f->path, name,
                      (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3],
                      (long long)cols, (long long)rows, ne, ne);
        *failed = true;
        return NULL;
    }
    const qtype_info *qi = qtype_get(t->type);
    if (!qi || !qi->is_weight) {
        anv_set_error("%s: tensor '%s' has type %s, which is not supported as a weight", f->path, name, qi ? qi->name : "(unknown)");
        *failed = true;
        return NULL;
    }
    const size_t eb = qtype_row_size((qtype)t->type, cols) * (size_t)rows;
    if (eb * (size_t)ne != t->nbytes) {
        anv_set_error("%s: tensor '%s' holds %zu bytes, expected %zu", f->path, name, (size_t)t->nbytes, eb * (size_t)ne);
        *failed = true;
        return NULL;
    }
    return moe_split_experts(m, be, t, cols, rows, ne, failed);
}

int moe_load_layer(model *m, int il, backend *be) {
    const model_hparams *hp = &m->hp;
    model_layer *L = &m->layers[il];
    const int64_t e = hp->n_embd, f = hp->n_ff_exp;
    bool fail = false;
    char name[128];
    snprintf(name, sizeof name, "blk.%d.ffn_gate_inp.weight", il);
    L->moe_router = model_place(m, be, name, e, hp->n_expert, true, &fail);
    if (fail) return -1;
    L->exp_gate = place_experts(m, be, il, "ffn_gate_exps.weight", e, f, &fail);
    if (!fail) L->exp_up = place_experts(m, be, il, "ffn_up_exps.weight", e, f, &fail);
    if (!fail) L->exp_down = place_experts(m, be, il, "ffn_down_exps.weight", f, e, &fail);
    if (fail) return -1;
    if (hp->n_ff_shexp > 0) {
        const int64_t fs = hp->n_ff_shexp;
        snprintf(name, sizeof name, "blk.%d.ffn_gate_inp_shexp.weight", il);
        L->sh_router = model_place(m, be, name, e, 1, true, &fail);
        snprintf(name, sizeof name, "blk.%d.ffn_gate_shexp.weight", il);
        if (!fail) L->sh_gate = model_place(m, be, name, e, fs, true, &fail);
        snprintf(name, sizeof name, "blk.%d.ffn_up_shexp.weight", il);
        if (!fail) L->sh_up = model_place(m, be, name, e, fs, true, &fail);
        snprintf(name, sizeof name, "blk.%d.ffn_down_shexp.weight", il);
        if (!fail) L->sh_down = model_place(m, be, name, fs, e, true, &fail);
    }
    return fail ? -1 : 0;
}

static void free_experts(be_tensor **w, int n) {
    if (!w) return;
    for (int e = 0; e < n; e++) be_tensor_free(w[e]);
    free(w);
}

void moe_free_layer(model_layer *L) {
    /* n_expert is not stored per layer: the arrays are NULL-terminated by calloc'ed size, so
     * free them by the count the owner passes through the router's row count */
    int n = L->moe_router ? (int)L->moe_router->rows : 0;
    free_experts(L->exp_gate, n);
    free_experts(L->exp_up, n);
    free_experts(L->exp_down, n);
    be_tensor *ts[] = {L->moe_router, L->sh_router, L->sh_gate, L->sh_up, L->sh_down};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) be_tensor_free(ts[i]);
    L->exp_gate = L->exp_up = L->exp_down = NULL;
    L->moe_router = L->sh_router = L->sh_gate = L->sh_up = L->sh_down = NULL;
}

/* Host routing of one row: the top k expert ids of logits[n] and their weights. */
static void route_row(const model_hparams *hp, const float *logits, int32_t *ids, float *w, float *probs) {
    const int n = hp->n_expert, k = hp->n_expert_used;
    if (hp->expert_gating == 3) { /* gpt-oss: top-k of the logits, softmax over those k */
        for (int i = 0; i < n; i++) probs[i] = logits[i];
    } else if (hp->expert_gating == 2) {
        for (int i = 0; i < n; i++) probs[i] = 1.0f / (1.0f + expf(-logits[i]));
    } else {
        float mx = logits[0];
        for (int i = 1; i < n; i++) mx = logits[i] > mx ? logits[i] : mx;
        double sum = 0;
        for (int i = 0; i < n; i++) { probs[i] = expf(logits[i] - mx); sum += probs[i]; }
        for (int i = 0; i < n; i++) probs[i] = (float)(probs[i] / sum);
    }
    for (int j = 0; j < k; j++) { /* selection: k passes, ties to the lower id */
        int best = -1;
        for (int i = 0; i < n; i++) {
            bool taken = false;
            for (int q = 0; q < j; q++) taken |= ids[q] == i;
            if (!taken && (best < 0 || probs[i] > probs[best])) best = i;
        }
        ids[j] = best;
        w[j] = probs[best];
    }
    if (hp->expert_gating == 3) {
        float mx = w[0], s = 0;
        for (int j = 1; j < k; j++) mx = w[j] > mx ? w[j] : mx;
        for (int j = 0; j < k; j++) { w[j] = expf(w[j] - mx); s += w[j]; }
        for (int j = 0; j < k; j++) w[j] /= s;
    }
    if (hp->expert_norm) {
        float s = 0;
        for (int j = 0; j < k; j++) s += w[j];
        if (s < 6.103515625e-5f) s = 6.103515625e-5f;
        for (int j = 0; j < k; j++) w[j] /= s;
    }
    if (hp->expert_scale != 0.0f && hp->expert_scale != 1.0f)
        for (int j = 0; j < k; j++) w[j] *= hp->expert_scale;
}

/* x[rows[i]] += w[i] * out[i] for i < n (one-row views: scale, then add). */
static void scatter_add(backend *be, const moe_bufs *b, int64_t n_embd, const int32_t *rows, const float *w, int n) {
    for (int i = 0; i < n; i++) {
        be_tensor o = be_view_rows(b->out, i, 1), xr = be_view_rows(b->x, rows[i], 1);
        be->ops->scale(be, &o, n_embd, w[i]);
        be->ops->add(be, &xr, &o, &xr, n_embd, n_embd);
    }
}

/* Optional per-expert biases (gpt-oss) of gate, up and down: NULL = none. */
typedef struct { const be_tensor *g, *u, *d; } expert_bias;

/* down(act(gate in + bg) * (up in + bu)) + bd for n rows of `in` into b->out. */
static void expert_ffn(backend *be, const be_tensor *wg, const be_tensor *wu, const be_tensor *wd, const be_tensor *in,
                       const moe_bufs *b, int64_t n_ff, int n, const expert_bias *eb, be_glu_kind kind) {
    const backend_ops *op = be->ops;
    be_tensor g = be_view_reshape(b->gate, n_ff, b->gate->rows * b->gate->cols / n_ff);
    be_tensor u = be_view_reshape(b->up, n_ff, b->up->rows * b->up->cols / n_ff);
    op->matmul(be, wg, in, &g, n, false);
    op->matmul(be, wu, in, &u, n, false);
    if (eb) {
        op->add(be, &g, eb->g, &g, (int64_t)n * n_ff, n_ff);
        op->add(be, &u, eb->u, &u, (int64_t)n * n_ff, n_ff);
    }
    op->glu(be, &g, &u, &g, (int64_t)n * n_ff, kind);
    op->matmul(be, wd, &g, b->out, n, false);
    if (eb) op->add(be, b->out, eb->d, b->out, (int64_t)n * b->out->cols, b->out->cols);
}

/* The routed experts of a few rows as one pass (backend_ops.matmul_many): every (row,
 * expert) pair gathered into b->in in expert order, all gate and up matmuls as one
 * dispatch, one glu, all down matmuls as one dispatch, then the weighted scatter. The same
 * arithmetic as the per-expert loop (same kernels, same summation order), fewer pool
 * round-trips: a decode step's k small experts would otherwise be 3k dispatches per layer.
 * False (nothing done) where the backend has no matmul_many, there are biases, or the
 * pairs do not fit the buffers. */
static bool experts_at_once(backend *be, const model_layer *L, const moe_bufs *b, int64_t n_ff, int64_t n_embd, const int *count,
                            int ne, const int32_t *rows, const float *rw, int n_pairs, be_glu_kind kind) {
    const backend_ops *op = be->ops;
    if (!op->matmul_many || L->exp_gate_b || n_pairs > b->in->rows || n_pairs > b->out->rows) return false;
    const int64_t cap = b->gate->rows * b->gate->cols / n_ff;
    if (n_pairs > cap || n_pairs > b->up->rows * b->up->cols / n_ff) return false;
    int used = 0;
    for (int x = 0; x < ne; x++) used += count[x] > 0;
    if (2 * used > 64) return false;
    be_matmul_item items[64];
    be_tensor in[32], g[32], u[32], o[32];
    be_tensor gall = be_view_reshape(b->gate, n_ff, cap), uall = be_view_reshape(b->up, n_ff, cap);
    op->get_rows(be, b->xn, rows, n_pairs, b->in);
    int n = 0;
    for (int x = 0, s = 0, i = 0; x < ne; s += count[x], x++) {
        if (count[x] == 0) continue;
        in[i] = be_view_rows(b->in, s, count[x]);
        g[i] = be_view_rows(&gall, s, count[x]);
        u[i] = be_view_rows(&uall, s, count[x]);
        o[i] = be_view_rows(b->out, s, count[x]);
        items[n++] = (be_matmul_item){L->exp_gate[x], &in[i], &g[i], count[x]};
        items[n++] = (be_matmul_item){L->exp_up[x], &in[i], &u[i], count[x]};
        i++;
    }
    if (!op->matmul_many(be, items, n)) {
        for (int i = 0; i < n; i++) op->matmul(be, items[i].w, items[i].x, items[i].out, items[i].n_tok, false);
    }
    op->glu(be, &gall, &uall, &gall, (int64_t)n_pairs * n_ff, kind);
    n = 0;
    for (int x = 0, i = 0; x < ne; x++) {
        if (count[x] == 0) continue;
        items[n++] = (be_matmul_item){L->exp_down[x], &g[i], &o[i], count[x]};
        i++;
    }
    if (!op->matmul_many(be, items, n)) {
        for (int i = 0; i < n; i++) op->matmul(be, items[i].w, items[i].x, items[i].out, items[i].n_tok, false);
    }
    scatter_add(be, b, n_embd, rows, rw, n_pairs);
    return true;
}

void moe_ffn(const model *m, const model_layer *L, const moe_bufs *b, int nt) {
    const model_hparams *hp = &m->hp;
    backend *be = L->be;
    const backend_ops *op = be->ops;
    const int ne = hp->n_expert, k = hp->n_expert_used;
    const int64_t e = hp->n_embd;
    if (be_failed(be) || nt <= 0) return;
    op->matmul(be, L->moe_router, b->rin ? b->rin : b->xn, b->logits, nt, false);
    if (L->moe_router_b) op->add(be, b->logits, L->moe_router_b, b->logits, (int64_t)nt * ne, ne);
    if (L->sh_router) op->matmul(be, L->sh_router, b->xn, b->shlog, nt, false);
    float *logits = malloc((size_t)nt * ne * sizeof(float) + (size_t)nt * sizeof(float) + (size_t)ne * sizeof(float) +
                           (size_t)nt * k * (sizeof(float) + sizeof(int32_t)) + (size_t)ne * sizeof(int) * 2 +
                           (size_t)nt * k * (sizeof(int32_t) + sizeof(float)));
    if (!logits) { be_fail(be, "moe: out of memory"); return; }
    float *shlog = logits + (size_t)nt * ne, *probs = shlog + nt, *tw = probs + ne;
    int32_t *tid = (int32_t *)(tw + (size_t)nt * k);
    int *count = (int *)(tid + (size_t)nt * k), *start = count + ne;
    int32_t *rows = (int32_t *)(start + ne);
    float *rw = (float *)(rows + (size_t)nt * k);
    be_download(b->logits, 0, logits, (size_t)nt * ne * sizeof(float));
    if (L->sh_router) be_download(b->shlog, 0, shlog, (size_t)nt * sizeof(float));
    if (be_failed(be)) { free(logits); return; }
    for (int t = 0; t < nt; t++) route_row(hp, logits + (size_t)t * ne, tid + (size_t)t * k, tw + (size_t)t * k, probs);
    /* group the (row, weight) pairs by expert, rows ascending within each */
    memset(count, 0, (size_t)ne * sizeof(int));
    for (int i = 0; i < nt * k; i++) count[tid[i]]++;
    for (int x = 0, s = 0; x < ne; x++) { start[x] = s; s += count[x]; }
    for (int t = 0; t < nt; t++)
        for (int j = 0; j < k; j++) {
            int x = tid[t * k + j], at = start[x]++;
            rows[at] = t;
            rw[at] = tw[t * k + j] * (L->exp_scale ? L->exp_scale[x] : 1.0f);   /* gemma4's per-expert output scale */
        }
    const be_glu_kind kind = hp->arch == ARCH_GPTOSS ? BE_GLU_SWIGLU_OAI : hp->arch == ARCH_GEMMA4 ? BE_GLU_GELU_TANH : BE_GLU_SILU;
    const int64_t n_ff_exp = L->exp_down[0]->cols;   /* this layer's (gemma4: per layer) */
    const bool done = experts_at_once(be, L, b, n_ff_exp, e, count, ne, rows, rw, nt * k, kind);
    for (int x = 0, s = 0; x < ne && !done; x++) {
        const int n = count[x];
        if (n > 0) {
            op->get_rows(be, b->xn, rows + s, n, b->in);
            const expert_bias eb = {L->exp_gate_b ? L->exp_gate_b[x] : NULL, L->exp_up_b ? L->exp_up_b[x] : NULL,
                                    L->exp_down_b ? L->exp_down_b[x] : NULL};
            expert_ffn(be, L->exp_gate[x], L->exp_up[x], L->exp_down[x], b->in, b, n_ff_exp, n, L->exp_gate_b ? &eb : NULL, kind);
            scatter_add(be, b, e, rows + s, rw + s, n);
        }
        s += n;
    }
    if (L->sh_gate) {
        expert_ffn(be, L->sh_gate, L->sh_up, L->sh_down, b->xn, b, hp->n_ff_shexp, nt, NULL, BE_GLU_SILU);
        for (int t = 0; t < nt; t++) { rows[t] = t; rw[t] = 1.0f / (1.0f + expf(-shlog[t])); }
        scatter_add(be, b, e, rows, rw, nt);
    }
    free(logits);
}
