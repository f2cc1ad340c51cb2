/* pass: what the one forward pass (forward.c) shares with its blocks (attention.c,
 * feed_forward.c, moe.c): the per-backend activations, a context's caches, one sequence's span
 * of a batch, the layer being run (layer_pass), and thin op helpers over backend.h so that a
 * block reads as the math it computes. Internal to engine/model.
 *
 * Shapes are written [rows][cols] with one row per token; nt is the batch's token count. */
#ifndef ANVIL_PASS_H
#define ANVIL_PASS_H
#include "kv_rot.h"
#include "model.h"

/* Per-backend activations for one micro-batch of up to n_batch tokens. */
typedef struct {
    backend *be;
    be_tensor *x;       /* residual stream [n_batch][n_embd] */
    be_tensor *xn;      /* normed input of a block [n_batch][n_embd] */
    be_tensor *tmp;     /* a block's output before its post-norm (gemma) [n_batch][n_embd] */
    be_tensor *q, *k, *v, *att;  /* [n_batch][n_head*hd], [n_batch][n_kv_head*hd] x2, [n_batch][n_head*hd] */
    be_tensor *gate, *up;        /* [n_batch][n_ff] (MoE: moe_ff_width) */
    be_tensor *logits;           /* [logit_rows][n_vocab], only on the output backend */
    be_tensor *moe_in, *moe_logits, *moe_shlog; /* MoE models (moe.h moe_bufs), else NULL */
    /* hybrid models (delta_net.c), else NULL: [n_batch][conv channels] x2, the z / attention
     * output gate [n_batch][max(d_inner, n_head*hd)], the delta output [n_batch][d_inner],
     * alpha and beta [n_batch][n_v_head] */
    be_tensor *dn_qkv, *dn_conv, *dn_gate, *dn_out, *dn_alpha, *dn_beta;
    be_tensor *ple;              /* gemma4 per-layer inputs [n_layer * n_batch][n_pl], else NULL */
    be_tensor *moe_acc;          /* gemma4 MoE: the experts' sum and output [2 * n_batch][n_embd], else NULL */
    be_tensor *rope_tab;         /* M-RoPE image rows: rope_rows' table [n_batch][n_rot] (made on first use), else NULL */
} scratch;

/* The activations of one forward pass: owned by one context, borrowed by the contexts
 * created with model_ctx_new_shared (server slots batched together). */
typedef struct {
    int n_batch, logit_rows;
    scratch sc[2];                    /* one per backend the model uses (CPU, GPU) */
    int n_sc;
    float *host_x;                    /* staging for crossing backends [n_batch][n_embd] */
    float *host_ple;                  /* gemma4: [2][n_batch][n_layer * n_pl], else NULL */
} scratch_set;

struct model_ctx {
    model *m;
    int n_ctx, n_past;
    uint32_t kv_type;
    be_tensor **k_cache, **v_cache;   /* per layer, on the layer's backend [n_ctx][n_kv_head*hd] */
    kv_rot rot;                       /* quantized caches: the Hadamard rotation (kv_rot.h) */
    scratch_set own;                  /* used unless shared != NULL */
    scratch_set *ss;                  /* &own, or the parent's */
    int32_t *history;                 /* the tokens whose K/V are in the cache [n_ctx] */
    int32_t *next_pos;                /* M-RoPE models: [n_ctx + 1], the rope position of a text row at
                                       * slot s (s itself until an image advances positions by
                                       * max(grid) instead of its rows); NULL: position = slot */
    struct recurrent_state *rs;       /* hybrid models: the recurrent layers' states (delta_net.h), else NULL */
};

/* One sequence of a batch: its context and its rows [row0, row0 + n) of the activations. */
typedef struct {
    model_ctx *c;
    int row0, n;
} seq_span;

/* One layer of one forward pass: what every block receives. */
typedef struct {
    const model *m;
    const model_hparams *hp;
    const model_layer *L;
    int il;                   /* layer index */
    backend *be;              /* the layer's backend; s lives there */
    const backend_ops *op;
    scratch *s;
    int nt;                   /* rows of the batch */
    const seq_span *seqs;     /* the batch's sequences (consecutive rows), n_seq of them */
    int n_seq;
    bool bidirectional;       /* the batch's rows see each other both ways (model_eval_embd) */
    const be_tensor *rope_tab;/* M-RoPE by table (image rows, qwen3vl's text): rope_rows' table [nt][n_rot] on this backend, else NULL */
} layer_pass;

/* The blocks: each adds its output into the residual s->x for the pass's nt rows. */
void attention_block(const layer_pass *p);     /* attention.c */
/* attention.c: llama.cpp's non-causal batch under a sliding window (its KV mask with causal_attn
 * off and is_masked_swa): query p sees every cached key and every later row of the batch, except
 * keys a window or more behind (p - j >= ap->window; window 0: none), which is no symmetric window
 * once the batch is longer than the window. With the one attention op of every backend: the rows
 * whose window reaches back to 0 in one call (no window), those whose window reaches the batch's
 * end in one (the symmetric window of half window - 1), each row between (there are some only
 * when the cache up to the batch's end spans more than two windows) alone over the cache from its
 * window's start. ap: the pass's parameters (its noncausal ignored). */
void attention_noncausal_window(const layer_pass *p, const be_tensor *q, const be_tensor *k_cache, const be_tensor *v_cache,
                                be_tensor *att, const be_attn_params *ap);
void feed_forward_block(const layer_pass *p);  /* feed_forward.c: dense or MoE */
void delta_net_block(const layer_pass *p);     /* delta_net.c: a recurrent layer's token mixing (qwen35) */
void gemma4_layer(const layer_pass *p);        /* gemma4_block.c: a whole Gemma 4 layer */
/* gemma4_block.c: the per-layer inputs of nt tokens into every scratch's ple (cpu->x holds the
 * scaled embeddings); -1 + error. */
int gemma4_per_layer_inputs(scratch_set *ss, const model *m, scratch *cpu, const int32_t *tokens, int nt);

/* ---- op helpers (the pass's backend, its nt rows) ---- */

/* y = rms_norm(x) * w over rows of width cols (rows may be nt * heads for per-head norms). */
static inline void rms_norm_rows(const layer_pass *p, const be_tensor *x, const be_tensor *w, be_tensor *y, int64_t rows,
                                 int64_t cols) {
    p->op->rms_norm(p->be, x, w, y, rows, cols, p->hp->norm_eps);
}
/* y = rms_norm(x) * w, x and y [nt][n_embd]. */
static inline void norm(const layer_pass *p, const be_tensor *x, const be_tensor *w, be_tensor *y) {
    rms_norm_rows(p, x, w, y, p->nt, p->hp->n_embd);
}
/* y = x W^T: x [nt][in], W [out][in], y [nt][out]. */
static inline void linear(const layer_pass *p, const be_tensor *W, const be_tensor *x, be_tensor *y) {
    p->op->matmul(p->be, W, x, y, p->nt, false);
}
/* y += x W^T (the residual add fused into the matmul). */
static inline void linear_add(const layer_pass *p, const be_tensor *W, const be_tensor *x, be_tensor *y) {
    p->op->matmul(p->be, W, x, y, p->nt, true);
}
/* y[t] += b for every row t of width cols (a bias). */
static inline void add_bias(const layer_pass *p, be_tensor *y, const be_tensor *b, int64_t cols) {
    p->op->add(p->be, y, b, y, (int64_t)p->nt * cols, cols);
}
/* y += x, both [nt][cols]. */
static inline void add_into(const layer_pass *p, be_tensor *y, const be_tensor *x, int64_t cols) {
    p->op->add(p->be, y, x, y, (int64_t)p->nt * cols, (int64_t)p->nt * cols);
}
/* x += h W^T (+ bias), or with gemma's sandwich norm x += rms_norm(h W^T) * post_norm: how a
 * block's inner activation h returns to the residual. */
static inline void project_into_residual(const layer_pass *p, const be_tensor *W, const be_tensor *h,
                                         const be_tensor *bias, const be_tensor *post_norm) {
    scratch *s = p->s;
    if (post_norm) {
        linear(p, W, h, s->tmp);
        norm(p, s->tmp, post_norm, s->tmp);
        add_into(p, s->x, s->tmp, p->hp->n_embd);
    } else {
        linear_add(p, W, h, s->x);
        if (bias) add_bias(p, s->x, bias, p->hp->n_embd);
    }
}
#endif
