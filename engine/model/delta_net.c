/* delta_net: qwen35's gated DeltaNet layer (llama.cpp's src/models/qwen35.cpp
 * build_layer_attn_linear and delta-net-base.cpp) written against backend.h:
 *   x' = rms_norm(x) * attn_norm
 *   qkv = x' W_qkv^T, z = x' W_z^T, beta = x' W_beta^T, alpha = x' W_alpha^T
 *   c = silu(causal_conv1d(qkv; the sequence's conv state))      (backend conv1d_state)
 *   o = gated delta rule over c's q, k, v heads with the gates     (backend delta_net)
 *   o = rms_norm(o per value head) * ssm_norm * silu(z)
 *   x += o W_out^T
 * and the recurrent state each context keeps for it (rs_*: see delta_net.h). */
#include "delta_net.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "quant.h"

/* ---- scratch ---- */

int delta_net_scratch_new(scratch *s, const model_hparams *hp, int nb) {
    const int64_t S = hp->ssm_d_state, inner = hp->ssm_d_inner;
    const int64_t conv_ch = 2 * (int64_t)hp->ssm_n_k_head * S + inner;
    const int64_t qd = (int64_t)hp->n_head * hp->head_dim_k;
    backend *be = s->be;
    s->dn_qkv = be_tensor_new(be, QT_F32, conv_ch, nb);
    s->dn_conv = be_tensor_new(be, QT_F32, conv_ch, nb);
    s->dn_gate = be_tensor_new(be, QT_F32, inner > qd ? inner : qd, nb);   /* z, or the attention's output gate */
    s->dn_out = be_tensor_new(be, QT_F32, inner, nb);
    s->dn_alpha = be_tensor_new(be, QT_F32, hp->ssm_n_v_head, nb);
    s->dn_beta = be_tensor_new(be, QT_F32, hp->ssm_n_v_head, nb);
    return s->dn_qkv && s->dn_conv && s->dn_gate && s->dn_out && s->dn_alpha && s->dn_beta ? 0 : -1;
}

void delta_net_scratch_free(scratch *s) {
    be_tensor *ts[] = {s->dn_qkv, s->dn_conv, s->dn_gate, s->dn_out, s->dn_alpha, s->dn_beta};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) be_tensor_free(ts[i]);
}

/* ---- recurrent state ---- */

typedef struct {
    int pos;                     /* tokens evaluated when it was taken; -1 = empty slot */
    uint64_t age;                /* larger = newer */
    be_tensor **conv, **delta;   /* per layer (NULL for attention layers), allocated on first use */
} rs_checkpoint_slot;

struct recurrent_state {
    const model *m;
    be_tensor **conv, **delta;   /* per layer: [d_conv - 1][conv channels], [n_v_head * S][S] */
    rs_checkpoint_slot cp[RS_CHECKPOINTS];
    uint64_t clock;
    float *zeros;                /* host zeros of the largest state (reset uploads them) */
    size_t zeros_bytes;
};

static int64_t conv_channels(const model_hparams *hp) {
    return 2 * (int64_t)hp->ssm_n_k_head * hp->ssm_d_state + hp->ssm_d_inner;
}

/* Allocates one set of states (conv, delta per recurrent layer); -1 on error. */
static int alloc_states(const model *m, be_tensor ***conv, be_tensor ***delta) {
    const model_hparams *hp = &m->hp;
    *conv = calloc((size_t)hp->n_layer, sizeof **conv);
    *delta = calloc((size_t)hp->n_layer, sizeof **delta);
    if (!*conv || !*delta) { anv_set_error("out of memory"); return -1; }
    for (int il = 0; il < hp->n_layer; il++) {
        if (!model_layer_is_recurrent(hp, il)) continue;
        backend *be = m->layers[il].be;
        (*conv)[il] = be_tensor_new(be, QT_F32, conv_channels(hp), hp->ssm_d_conv - 1);
        (*delta)[il] = be_tensor_new(be, QT_F32, hp->ssm_d_state, (int64_t)hp->ssm_n_v_head * hp->ssm_d_state);
        if (!(*conv)[il] || !(*delta)[il]) return -1;
    }
    return 0;
}

static void free_states(const model *m, be_tensor **conv, be_tensor **delta) {
    for (int il = 0; il < m->hp.n_layer; il++) {
        if (conv) be_tensor_free(conv[il]);
        if (delta) be_tensor_free(delta[il]);
    }
    free(conv);
    free(delta);
}

recurrent_state *rs_new(const model *m, bool *failed) {
    const model_hparams *hp = &m->hp;
    bool any = false;
    for (int il = 0; il < hp->n_layer; il++) any |= model_layer_is_recurrent(hp, il);
    if (!any) return NULL;
    recurrent_state *rs = calloc(1, sizeof *rs);
    if (!rs) { anv_set_error("out of memory"); *failed = true; return NULL; }
    rs->m = m;
    for (int i = 0; i < RS_CHECKPOINTS; i++) rs->cp[i].pos = -1;
    const int64_t delta_elems = (int64_t)hp->ssm_n_v_head * hp->ssm_d_state * hp->ssm_d_state;
    const int64_t conv_elems = (int64_t)(hp->ssm_d_conv - 1) * conv_channels(hp);
    rs->zeros_bytes = (size_t)(delta_elems > conv_elems ? delta_elems : conv_elems) * sizeof(float);
    rs->zeros = calloc(1, rs->zeros_bytes);
    if (!rs->zeros) { anv_set_error("out of memory"); rs_free(rs); *failed = true; return NULL; }
    if (alloc_states(m, &rs->conv, &rs->delta) != 0) { rs_free(rs); *failed = true; return NULL; }
    rs_reset(rs);
    return rs;
}

void rs_free(recurrent_state *rs) {
    if (!rs) return;
    free_states(rs->m, rs->conv, rs->delta);
    for (int i = 0; i < RS_CHECKPOINTS; i++) free_states(rs->m, rs->cp[i].conv, rs->cp[i].delta);
    free(rs->zeros);
    free(rs);
}

void rs_reset(recurrent_state *rs) {
    if (!rs) return;
    for (int il = 0; il < rs->m->hp.n_layer; il++) {
        if (!rs->conv[il]) continue;
        be_upload(rs->conv[il], 0, rs->zeros, be_nbytes(rs->conv[il]));
        be_upload(rs->delta[il], 0, rs->zeros, be_nbytes(rs->delta[il]));
    }
    for (int i = 0; i < RS_CHECKPOINTS; i++) rs->cp[i].pos = -1;
}

/* dst = src for each recurrent layer (F32 rows copied by store_rows on the layer's backend). */
static void copy_states(const recurrent_state *rs, be_tensor **dst_conv, be_tensor **dst_delta, be_tensor *const *src_conv,
                        be_tensor *const *src_delta) {
    for (int il = 0; il < rs->m->hp.n_layer; il++) {
        if (!src_conv[il]) continue;
        backend *be = src_conv[il]->be;
        be->ops->store_rows(be, src_conv[il], dst_conv[il], 0, src_conv[il]->rows);
        be->ops->store_rows(be, src_delta[il], dst_delta[il], 0, src_delta[il]->rows);
    }
}

void rs_checkpoint(recurrent_state *rs, int pos) {
    if (!rs) return;
    rs_checkpoint_slot *slot = NULL;
    for (int i = 0; i < RS_CHECKPOINTS; i++)   /* the same position again, else an empty or the oldest slot */
        if (rs->cp[i].pos == pos) slot = &rs->cp[i];
    for (int i = 0; i < RS_CHECKPOINTS && !slot; i++)
        if (rs->cp[i].pos < 0) slot = &rs->cp[i];
    if (!slot) {
        slot = &rs->cp[0];
        for (int i = 1; i < RS_CHECKPOINTS; i++)
            if (rs->cp[i].age < slot->age) slot = &rs->cp[i];
    }
    if (!slot->conv && alloc_states(rs->m, &slot->conv, &slot->delta) != 0) {
        /* out of memory: no checkpoint (a later rollback lands earlier, which is still correct) */
        free_states(rs->m, slot->conv, slot->delta);
        slot->conv = slot->delta = NULL;
        slot->pos = -1;
        return;
    }
    copy_states(rs, slot->conv, slot->delta, rs->conv, rs->delta);
    slot->pos = pos;
    slot->age = ++rs->clock;
}

int rs_rollback(recurrent_state *rs, int n) {
    if (!rs) return n;
    rs_checkpoint_slot *best = NULL;
    for (int i = 0; i < RS_CHECKPOINTS; i++)
        if (rs->cp[i].pos >= 0 && rs->cp[i].pos <= n && (!best || rs->cp[i].pos > best->pos)) best = &rs->cp[i];
    const int pos = best ? best->pos : 0;
    if (best) {
        copy_states(rs, rs->conv, rs->delta, best->conv, best->delta);
    } else {
        for (int il = 0; il < rs->m->hp.n_layer; il++) {
            if (!rs->conv[il]) continue;
            be_upload(rs->conv[il], 0, rs->zeros, be_nbytes(rs->conv[il]));
            be_upload(rs->delta[il], 0, rs->zeros, be_nbytes(rs->delta[il]));
        }
    }
    for (int i = 0; i < RS_CHECKPOINTS; i++)
        if (rs->cp[i].pos > pos) rs->cp[i].pos = -1;   /* a history that is about to be rewritten */
    return pos;
}

/* ---- the block ---- */

void delta_net_block(const layer_pass *p) {
    const model_hparams *hp = p->hp;
    const model_layer *L = p->L;
    scratch *s = p->s;
    const backend_ops *op = p->op;
    const int S = hp->ssm_d_state, Hv = hp->ssm_n_v_head;

    be_tensor z = be_view_reshape(s->dn_gate, hp->ssm_d_inner, s->dn_gate->rows);   /* rows of d_inner */
    norm(p, s->x, L->attn_norm, s->xn);
    linear(p, L->ssm_qkv, s->xn, s->dn_qkv);
    linear(p, L->ssm_z, s->xn, &z);
    linear(p, L->ssm_beta, s->xn, s->dn_beta);
    linear(p, L->ssm_alpha, s->xn, s->dn_alpha);
    /* the recurrent part per sequence: its rows with its own context's states */
    for (int si = 0; si < p->n_seq; si++) {
        const seq_span *sq = &p->seqs[si];
        recurrent_state *rs = sq->c->rs;
        be_tensor qkv = be_view_rows(s->dn_qkv, sq->row0, sq->n), conv = be_view_rows(s->dn_conv, sq->row0, sq->n);
        be_tensor alpha = be_view_rows(s->dn_alpha, sq->row0, sq->n), beta = be_view_rows(s->dn_beta, sq->row0, sq->n);
        be_tensor out = be_view_rows(s->dn_out, sq->row0, sq->n);
        op->conv1d_state(p->be, &qkv, rs->conv[p->il], L->ssm_conv, &conv, sq->n);
        const be_delta_params dp = {.n_tok = sq->n, .n_k_head = hp->ssm_n_k_head, .n_v_head = Hv, .head_dim = S, .eps = hp->norm_eps};
        op->delta_net(p->be, &conv, &alpha, &beta, L->ssm_dt_bias, L->ssm_a, rs->delta[p->il], &out, &dp);
    }
    /* gated norm per value head: rms_norm(o) * ssm_norm * silu(z) */
    rms_norm_rows(p, s->dn_out, L->ssm_norm, s->dn_out, (int64_t)p->nt * Hv, S);
    op->glu(p->be, &z, s->dn_out, s->dn_out, (int64_t)p->nt * hp->ssm_d_inner, BE_GLU_SILU);
    linear_add(p, L->ssm_out, s->dn_out, s->x);
}
