/* attention: the self-attention block of the one forward pass (pass.h), for every decoder
 * family: x += wo . attention(rope(q), rope(k), v) of norm(x), with the families' variants
 * (QKV biases, per-head QK norms, sliding-window layers and their RoPE base, llama3 rope_freqs,
 * YaRN, mistral3's query temperature, gpt-oss's sinks and output bias, gemma's post-norm, qwen35's
 * sigmoid output gate) and
 * the KV cache of each sequence of the batch (quantized caches through the Hadamard rotation
 * of kv_rot.h). */
#include <math.h>

#include "pass.h"
#include "yarn.h"

/* mistral3's query temperature (llama.cpp's build_inp_attn_scale, applied to the roped q): row t
 * of q (position pos0 + t) times 1 + scale * ln(floor(pos / floor_scale) + 1). The factor is
 * constant over runs of floor_scale positions, so each run is one scale op on a row view. */
static void scale_queries_by_position(const layer_pass *p, be_tensor *q, int pos0, int n) {
    const model_hparams *hp = p->hp;
    const int64_t qd = (int64_t)hp->n_head * hp->head_dim_k;
    const int fl = hp->attn_temp_floor;
    for (int t = 0; t < n;) {
        const int block = (pos0 + t) / fl;
        int64_t next = ((int64_t)block + 1) * fl - pos0;   /* first row of the next block */
        const int end = next > n ? n : (int)next;
        if (block > 0) {
            const float f = (float)(log(floorf((float)(pos0 + t) / (float)fl) + 1.0) * hp->attn_temp_scale + 1.0);
            be_tensor rows = be_view_rows(q, t, end - t);
            p->op->scale(p->be, &rows, (int64_t)(end - t) * qd, f);
        }
        t = end;
    }
}

void attention_noncausal_window(const layer_pass *p, const be_tensor *q, const be_tensor *k_cache, const be_tensor *v_cache,
                                be_tensor *att, const be_attn_params *ap) {
    const backend_ops *op = p->op;
    backend *be = p->be;
    const int n = ap->n_tok, pos0 = ap->pos0, end = pos0 + n, w = ap->window;
    be_attn_params cp = *ap;
    cp.noncausal = true;
    cp.window = 0;
    if (w <= 0) { op->attention(be, q, k_cache, v_cache, att, &cp); return; }
    /* rows [0, a): p <= w - 1, nothing behind them is out of the window: every key of [0, end) */
    int a = w - pos0;
    a = a < 0 ? 0 : a > n ? n : a;
    /* rows [b, n): p + w - 1 >= end - 1, the symmetric window |p - j| <= w - 1 ends at the batch's end */
    int b = end - w - pos0;
    if (b < a) b = a;
    if (w < 2) b = n;   /* a window of 1 has no symmetric form (window 0 is none) */
    if (a > 0) {
        const be_tensor qa = be_view_rows(q, 0, a);
        be_tensor oa = be_view_rows(att, 0, a);
        cp.n_tok = a;
        cp.pos0 = end - a;   /* keys [0, pos0 + n_tok) = [0, end) */
        op->attention(be, &qa, k_cache, v_cache, &oa, &cp);
    }
    /* the rows between: keys [p - w + 1, end) each, as a view of the cache from its window's start */
    for (int t = a; t < b; t++) {
        const int lo = pos0 + t - w + 1;
        const be_tensor qt = be_view_rows(q, t, 1), kt = be_view_rows(k_cache, lo, end - lo), vt = be_view_rows(v_cache, lo, end - lo);
        be_tensor ot = be_view_rows(att, t, 1);
        cp.n_tok = 1;
        cp.pos0 = end - lo - 1;
        op->attention(be, &qt, &kt, &vt, &ot, &cp);
    }
    if (b < n) {
        const be_tensor qb = be_view_rows(q, b, n - b);
        be_tensor ob = be_view_rows(att, b, n - b);
        cp.n_tok = n - b;
        cp.pos0 = pos0 + b;
        cp.window = 2 * (w - 1);
        op->attention(be, &qb, k_cache, v_cache, &ob, &cp);
    }
}

/* The RoPE of layer il (global or sliding-window base, YaRN, llama3 frequency factors). */
static be_rope_params layer_rope(const layer_pass *p, bool swa) {
    const model_hparams *hp = p->hp;
    be_rope_params rp = {
        .n_rot = hp->n_rot,
        .mode = hp->rope_mode,
        .freq_base = swa ? hp->rope_base_swa : hp->rope_base,
        .freq_scale = swa ? hp->rope_scale_swa : hp->rope_scale,
        .freq_factors = p->be == p->m->cpu ? p->m->rope_freqs : p->m->rope_freqs_gpu,
    };
    yarn_rope_params(hp, rp.freq_base, &rp);
    return rp;
}

/* Positions, cache and attention of one sequence: q, k, v, att are its rows of the batch.
 * Ropes q and k at the sequence's positions, appends k, v to its cache (rotated first when
 * the cache is quantized), and writes att = softmax(q k^T * scale) v over the visible cache. */
static void attend_sequence(const layer_pass *p, const seq_span *sq, be_tensor *q, be_tensor *k, be_tensor *v,
                            be_tensor *att, const be_rope_params *rp, bool swa) {
    const model_hparams *hp = p->hp;
    const backend_ops *op = p->op;
    backend *be = p->be;
    const int hd = hp->head_dim_k, pos0 = sq->c->n_past;
    /* the rope position: the KV slot unless M-RoPE images moved positions (pass.h next_pos) */
    const int rpos0 = sq->c->next_pos ? sq->c->next_pos[pos0] : pos0;
    const int64_t kvd = (int64_t)hp->n_kv_head * hd;
    be_tensor *k_cache = sq->c->k_cache[p->il], *v_cache = sq->c->v_cache[p->il];
    const kv_rot *kr = &sq->c->rot;
    /* fused (backend.h rope_store) where the cache is not rotated: rope q, k + both stores */
    const bool fused = !kr->n_k && !p->rope_tab && rpos0 == pos0 && op->rope_store &&
                       op->rope_store(be, q, k, v, k_cache, v_cache, sq->n, hp->n_head, hp->n_kv_head, hd, pos0, rp);
    if (!fused && p->rope_tab) {   /* M-RoPE by table: the sequence's rows of it */
        const be_tensor tab = be_view_rows(p->rope_tab, sq->row0, sq->n);
        op->rope_rows(be, q, &tab, sq->n, hp->n_head, hd, rp->n_rot);
        op->rope_rows(be, k, &tab, sq->n, hp->n_kv_head, hd, rp->n_rot);
    } else if (!fused) {
        op->rope(be, q, sq->n, hp->n_head, hd, rpos0, rp);
        op->rope(be, k, sq->n, hp->n_kv_head, hd, rpos0, rp);
    }
    if (hp->attn_temp_scale != 0.0f) scale_queries_by_position(p, q, pos0, sq->n);
    if (kr->n_k) { /* quantized cache: q, k, v rotated (kv_rot.h), att the temporary */
        be_tensor tk = be_view_reshape(att, kvd, sq->n);
        kv_rot_apply(kr, be, false, q, att, sq->n);
        op->store_rows(be, att, q, 0, sq->n);
        kv_rot_apply(kr, be, false, k, &tk, sq->n);
        op->store_rows(be, &tk, k_cache, pos0, sq->n);
        kv_rot_apply(kr, be, true, v, &tk, sq->n);
        op->store_rows(be, &tk, v_cache, pos0, sq->n);
    } else if (!fused) {
        op->store_rows(be, k, k_cache, pos0, sq->n);
        op->store_rows(be, v, v_cache, pos0, sq->n);
    }
    be_attn_params ap = {
        .n_tok = sq->n, .pos0 = pos0, .n_head = hp->n_head, .n_kv_head = hp->n_kv_head, .head_dim = hd,
        .scale = hp->attn_scale, .window = swa ? hp->swa_window : 0, .softcap = 0, .noncausal = hp->noncausal,
        .sinks = p->L->attn_sinks,
    };
    /* llama.cpp's non-causal batch (an image's rows): every cached key and every row of the
     * batch, except keys a window or more behind */
    if (p->bidirectional && !hp->noncausal) attention_noncausal_window(p, q, k_cache, v_cache, att, &ap);
    else op->attention(be, q, k_cache, v_cache, att, &ap);
    if (kr->n_k) { /* the output back from V's rotation */
        kv_rot_apply(kr, be, true, att, q, sq->n);
        op->store_rows(be, q, att, 0, sq->n);
    }
}

void attention_block(const layer_pass *p) {
    const model_hparams *hp = p->hp;
    const model_layer *L = p->L;
    scratch *s = p->s;
    const int hd = hp->head_dim_k;
    const int64_t qd = (int64_t)hp->n_head * hd, kvd = (int64_t)hp->n_kv_head * hd;
    const bool swa = model_layer_is_swa(hp, p->il);

    norm(p, s->x, L->attn_norm, s->xn);
    linear(p, L->wq, s->xn, s->q);
    linear(p, L->wk, s->xn, s->k);
    linear(p, L->wv, s->xn, s->v);
    if (L->bq) {
        add_bias(p, s->q, L->bq, qd);
        add_bias(p, s->k, L->bk, kvd);
        add_bias(p, s->v, L->bv, kvd);
    }
    if (L->q_norm) {   /* per head */
        rms_norm_rows(p, s->q, L->q_norm, s->q, (int64_t)p->nt * hp->n_head, hd);
        rms_norm_rows(p, s->k, L->k_norm, s->k, (int64_t)p->nt * hp->n_kv_head, hd);
    }
    const be_rope_params rp = layer_rope(p, swa);
    /* the position-dependent part per sequence: each has its own positions and KV cache */
    for (int si = 0; si < p->n_seq; si++) {
        const seq_span *sq = &p->seqs[si];
        be_tensor q = *s->q, k = *s->k, v = *s->v, att = *s->att;
        if (p->n_seq > 1) {
            q = be_view_rows(s->q, sq->row0, sq->n);
            k = be_view_rows(s->k, sq->row0, sq->n);
            v = be_view_rows(s->v, sq->row0, sq->n);
            att = be_view_rows(s->att, sq->row0, sq->n);
        }
        attend_sequence(p, sq, &q, &k, &v, &att, &rp, swa);
    }
    if (L->wq_gate) {   /* qwen35's gated attention: att *= sigmoid(x' W_gate^T) */
        be_tensor g = be_view_reshape(s->dn_gate, qd, s->dn_gate->rows);   /* rows of n_head * hd */
        linear(p, L->wq_gate, s->xn, &g);
        p->op->glu(p->be, &g, s->att, s->att, (int64_t)p->nt * qd, BE_GLU_SIGMOID);
    }
    project_into_residual(p, L->wo, s->att, L->bo, L->post_attn_norm);
}
