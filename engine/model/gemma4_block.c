/* gemma4_block: one Gemma 4 layer of the one forward pass (pass.h), as llama.cpp's
 * src/models/gemma4.cpp builds it, and the per-layer inputs computed once per pass:
 *   x += post_norm(wo . attention(rope(qnorm(q)), rope(knorm(k)), vnorm(v)))   (scale 1)
 *   x += post_ffw_norm(down(gelu(gate h) * up h)), h = ffn_norm(x)
 *        (MoE layers: x += post_ffw_norm(post_ffw_norm_1(that FFN) + post_ffw_norm_2(experts of
 *        pre_ffw_norm_2(x), routed on rms_norm(x) / sqrt(n_embd) * router scale)), moe.c)
 *   x += post_norm(proj(gelu(inp_gate x) * ple[il]))                         (E2B/E4B)
 *   x *= layer_output_scale
 * with the layer's own head size, KV heads and FFN width (the scratch tensors are read as
 * [nt][width] views), V = K where the layer has no attn_v, rope_freqs (proportional rope) on
 * the full layers only, and no K/V of its own where the layer shares an earlier layer's cache
 * (forward.c points its cache at that layer's). */
#include <math.h>
#include <stdlib.h>

#include "gemma4.h"
#include "moe.h"
#include "pass.h"
#include "quant.h"
#include "yarn.h"

/* Rope, cache and attention of one sequence (its rows q, k, v, att of the batch). own: the
 * layer writes k, v into its cache; else it only reads the shared one. */
static void attend(const layer_pass *p, const seq_span *sq, be_tensor *q, be_tensor *k, be_tensor *v, be_tensor *att,
                   const be_rope_params *rp, bool own, int hd, int n_kv, bool swa) {
    const backend_ops *op = p->op;
    backend *be = p->be;
    const int n_head = p->hp->n_head, pos0 = sq->c->n_past;
    const int64_t kvd = (int64_t)n_kv * hd;
    be_tensor *k_cache = sq->c->k_cache[p->il], *v_cache = sq->c->v_cache[p->il];
    const kv_rot *kr = &sq->c->rot;
    const bool fused = own && !kr->n_k && op->rope_store &&
                       op->rope_store(be, q, k, v, k_cache, v_cache, sq->n, n_head, n_kv, hd, pos0, rp);
    if (!fused) {
        op->rope(be, q, sq->n, n_head, hd, pos0, rp);
        if (own) op->rope(be, k, sq->n, n_kv, hd, pos0, rp);
    }
    if (kr->n_k) {   /* quantized cache: q (and k, v) rotated (kv_rot.h), att the temporary */
        be_tensor tk = be_view_reshape(att, kvd, sq->n);
        kv_rot_apply(kr, be, false, q, att, sq->n);
        op->store_rows(be, att, q, 0, sq->n);
        if (own) {
            kv_rot_apply(kr, be, false, k, &tk, sq->n);
            op->store_rows(be, &tk, k_cache, pos0, sq->n);
            kv_rot_apply(kr, be, true, v, &tk, sq->n);
            op->store_rows(be, &tk, v_cache, pos0, sq->n);
        }
    } else if (own && !fused) {
        op->store_rows(be, k, k_cache, pos0, sq->n);
        op->store_rows(be, v, v_cache, pos0, sq->n);
    }
    be_attn_params ap = {
        .n_tok = sq->n, .pos0 = pos0, .n_head = n_head, .n_kv_head = n_kv, .head_dim = hd,
        .scale = p->hp->attn_scale, .window = swa ? p->hp->swa_window : 0,
    };
    /* an image's rows (model_eval_embd): llama.cpp's LLAMA_NON_CAUSAL_TYPE_SWA_ONLY for gemma4, the
     * sliding layers see the batch both ways (as attention.c's non-causal batch), the full layers
     * stay causal */
    if (p->bidirectional && swa) attention_noncausal_window(p, q, k_cache, v_cache, att, &ap);
    else op->attention(be, q, k_cache, v_cache, att, &ap);
    if (kr->n_k) {
        kv_rot_apply(kr, be, true, att, q, sq->n);
        op->store_rows(be, q, att, 0, sq->n);
    }
}

static void gemma4_attention(const layer_pass *p) {
    const model_hparams *hp = p->hp;
    const model_layer *L = p->L;
    scratch *s = p->s;
    const int il = p->il, nt = p->nt, hd = model_layer_head_dim(hp, il), n_kv = model_layer_n_kv_head(hp, il);
    const int64_t qd = (int64_t)hp->n_head * hd, kvd = (int64_t)n_kv * hd;
    const bool swa = model_layer_is_swa(hp, il), own = model_layer_kv_source(hp, il) == il;
    be_tensor q = be_view_reshape(s->q, qd, nt), k = be_view_reshape(s->k, kvd, nt), v = be_view_reshape(s->v, kvd, nt),
              att = be_view_reshape(s->att, qd, nt);

    norm(p, s->x, L->attn_norm, s->xn);
    linear(p, L->wq, s->xn, &q);
    rms_norm_rows(p, &q, L->q_norm, &q, (int64_t)nt * hp->n_head, hd);
    if (own) {
        linear(p, L->wk, s->xn, &k);
        if (L->wv) linear(p, L->wv, s->xn, &v);
        else p->op->store_rows(p->be, &k, &v, 0, nt);   /* V = K (before K's norm) */
        rms_norm_rows(p, &k, L->k_norm, &k, (int64_t)nt * n_kv, hd);
        rms_norm_rows(p, &v, NULL, &v, (int64_t)nt * n_kv, hd);   /* weightless V-norm */
    }
    be_rope_params rp = {
        .n_rot = model_layer_n_rot(hp, il),
        .mode = hp->rope_mode,
        .freq_base = swa ? hp->rope_base_swa : hp->rope_base,
        .freq_scale = swa ? hp->rope_scale_swa : hp->rope_scale,
        .freq_factors = swa ? NULL : p->be == p->m->cpu ? p->m->rope_freqs : p->m->rope_freqs_gpu,
    };
    yarn_rope_params(hp, rp.freq_base, &rp);
    for (int si = 0; si < p->n_seq; si++) {
        const seq_span *sq = &p->seqs[si];
        be_tensor sq_q = q, sq_k = k, sq_v = v, sq_att = att;
        if (p->n_seq > 1) {
            sq_q = be_view_rows(&q, sq->row0, sq->n);
            sq_k = be_view_rows(&k, sq->row0, sq->n);
            sq_v = be_view_rows(&v, sq->row0, sq->n);
            sq_att = be_view_rows(&att, sq->row0, sq->n);
        }
        attend(p, sq, &sq_q, &sq_k, &sq_v, &sq_att, &rp, own, hd, n_kv, swa);
    }
    project_into_residual(p, L->wo, &att, NULL, L->post_attn_norm);
}

static void gemma4_feed_forward(const layer_pass *p) {
    const model_layer *L = p->L;
    scratch *s = p->s;
    const int n_ff = model_layer_n_ff(p->hp, p->il);
    be_tensor gate = be_view_reshape(s->gate, n_ff, p->nt), up = be_view_reshape(s->up, n_ff, p->nt);
    norm(p, s->x, L->ffn_norm, s->xn);
    if (!p->op->matmul_glu || !p->op->matmul_glu(p->be, L->w_gate, L->w_up, s->xn, &gate, p->nt, BE_GLU_GELU_TANH)) {
        linear(p, L->w_gate, s->xn, &gate);
        linear(p, L->w_up, s->xn, &up);
        p->op->glu(p->be, &gate, &up, &gate, (int64_t)p->nt * n_ff, BE_GLU_GELU_TANH);
    }
    if (!L->moe_router) {
        project_into_residual(p, L->w_down, &gate, NULL, L->post_ffn_norm);
        return;
    }
    const int64_t e = p->hp->n_embd, nb = s->moe_acc->rows / 2;
    linear(p, L->w_down, &gate, s->tmp);
    norm(p, s->tmp, L->post_norm_1, s->tmp);
    /* the router's input: rms_norm(x) / sqrt(n_embd) * router_scale */
    rms_norm_rows(p, s->x, NULL, s->moe_in, p->nt, e);
    p->op->scale(p->be, s->moe_in, (int64_t)p->nt * e, 1.0f / sqrtf((float)e));
    p->op->mul(p->be, s->moe_in, L->router_scale, s->moe_in, (int64_t)p->nt * e, e);
    norm(p, s->x, L->pre_norm_2, s->xn);
    /* the experts' weighted sum into acc (zeroed as 0 * x: x is finite), out their scratch */
    be_tensor acc = be_view_rows(s->moe_acc, 0, nb), out = be_view_rows(s->moe_acc, nb, nb);
    p->op->store_rows(p->be, s->x, &acc, 0, p->nt);
    p->op->scale(p->be, &acc, (int64_t)p->nt * e, 0.0f);
    moe_bufs mb = {&acc, s->xn, s->gate, s->up, s->moe_in, &out, s->moe_logits, s->moe_shlog, s->moe_in};
    moe_ffn(p->m, L, &mb, p->nt);
    norm(p, &acc, L->post_norm_2, &acc);
    add_into(p, s->tmp, &acc, e);
    norm(p, s->tmp, L->post_ffn_norm, s->tmp);
    add_into(p, s->x, s->tmp, e);
}

/* x += post_norm(proj(gelu(inp_gate x) * ple[il])): layer il's rows of s->ple are [il * nt, (il + 1) * nt). */
static void gemma4_per_layer_input(const layer_pass *p) {
    const model_layer *L = p->L;
    scratch *s = p->s;
    const int64_t pw = p->hp->n_embd_per_layer;
    be_tensor g = be_view_reshape(s->gate, pw, p->nt);
    be_tensor ple = be_view_reshape(s->ple, pw, (int64_t)p->hp->n_layer * p->nt);
    be_tensor mine = be_view_rows(&ple, (int64_t)p->il * p->nt, p->nt);
    linear(p, L->pl_gate, s->x, &g);
    p->op->glu(p->be, &g, &mine, &g, (int64_t)p->nt * pw, BE_GLU_GELU_TANH);
    project_into_residual(p, L->pl_proj, &g, NULL, L->pl_post_norm);
}

void gemma4_layer(const layer_pass *p) {
    gemma4_attention(p);
    gemma4_feed_forward(p);
    if (p->L->pl_gate) gemma4_per_layer_input(p);
    if (p->L->out_scale != 0.0f) p->op->scale(p->be, p->s->x, (int64_t)p->nt * p->hp->n_embd, p->L->out_scale);
}

/* ple = (rms_norm(x W_proj^T / sqrt(n_embd)) * proj_norm + per_layer_token_embd[token] *
 * sqrt(n_pl)) / sqrt(2) per layer, x the scaled token embeddings (cpu->x): the table rows
 * dequantized on the host from the mapping, the projection on the CPU backend; the result
 * regrouped by layer ([n_layer][nt][n_pl]) and uploaded to every backend's s->ple. */
int gemma4_per_layer_inputs(scratch_set *ss, const model *m, scratch *cpu, const int32_t *tokens, int nt) {
    const model_hparams *hp = &m->hp;
    const gemma4_weights *g = m->g4;
    const int n = hp->n_layer, pw = hp->n_embd_per_layer;
    const int64_t w = (int64_t)n * pw;
    float *look = ss->host_ple, *proj = ss->host_ple + (size_t)nt * w;
    const float emb_scale = sqrtf((float)pw);
    for (int t = 0; t < nt; t++) {
        float *row = look + (size_t)t * w;
        dequantize_row((qtype)g->ple_type, (const uint8_t *)g->ple_data + (size_t)tokens[t] * g->ple_row_bytes, row, w);
        for (int64_t i = 0; i < w; i++) row[i] *= emb_scale;
    }
    backend *be = m->cpu;
    be_tensor pr = be_view_reshape(cpu->ple, w, nt);
    be->ops->matmul(be, g->ple_proj, cpu->x, &pr, nt, false);
    be->ops->scale(be, &pr, (int64_t)nt * w, 1.0f / sqrtf((float)hp->n_embd));
    be->ops->rms_norm(be, &pr, g->ple_proj_norm, &pr, (int64_t)nt * n, pw, hp->norm_eps);
    be_download(&pr, 0, proj, (size_t)nt * w * sizeof(float));
    const char *err = be_error(be);
    if (err) { anv_set_error("%s", err); return -1; }
    /* look becomes the layer-major result: look[il][t][:] */
    const float half = 1.0f / sqrtf(2.0f);
    for (int t = 0; t < nt; t++)
        for (int64_t i = 0; i < w; i++) proj[(size_t)t * w + i] = (proj[(size_t)t * w + i] + look[(size_t)t * w + i]) * half;
    for (int il = 0; il < n; il++)
        for (int t = 0; t < nt; t++)
            for (int c = 0; c < pw; c++) look[((size_t)il * nt + t) * pw + c] = proj[(size_t)t * w + (size_t)il * pw + c];
    for (int i = 0; i < ss->n_sc; i++) be_upload(ss->sc[i].ple, 0, look, (size_t)nt * w * sizeof(float));
    return 0;
}
