/* gpu_verify_fused: the cases of backend.h's optional fused ops (matmul_glu, rope_store)
 * for gpu_verify.c (gpu_verify_case.h: the case, its inputs, gv_up(), gv_dequant_rows()).
 * Each runs the way the forward pass does: the fused op where the backend has it and takes
 * the arguments, else the unfused sequence; the reference composes cpu/ref_ops.c's matmul,
 * glu, rope and store_rows. */
#include <stdlib.h>
#include <string.h>

#include "gpu_verify_case.h"
#include "quant.h"
#include "ref_ops.h"

/* t: 5 free slots the caller frees. */
int gvf_run_matmul_glu(backend *be, const spec *s, const inputs *in, const float *zeros, float *out, be_tensor **t) {
    const backend_ops *op = be->ops;
    t[0] = op->weight_new(be, s->type, s->a, s->b, s->wdata);
    t[1] = op->weight_new(be, s->type, s->a, s->b, s->wdata2);
    t[2] = gv_up(be, QT_F32, s->a, s->n_tok, in->x);
    t[3] = gv_up(be, QT_F32, s->b, s->n_tok, zeros);
    t[4] = gv_up(be, QT_F32, s->b, s->n_tok, zeros);
    if (!t[0] || !t[1] || !t[2] || !t[3] || !t[4]) return -1;
    if (!op->matmul_glu || !op->matmul_glu(be, t[0], t[1], t[2], t[3], s->n_tok, s->glu)) {
        op->matmul(be, t[0], t[2], t[3], s->n_tok, false);
        op->matmul(be, t[1], t[2], t[4], s->n_tok, false);
        op->glu(be, t[3], t[4], t[3], s->b * s->n_tok, s->glu);
    }
    be_download(t[3], 0, out, sizeof(float) * (size_t)(s->b * s->n_tok));
    return 0;
}

int gvf_ref_matmul_glu(const spec *s, const inputs *in, float *out) {
    const int64_t n = s->b * s->n_tok;
    float *u = malloc(sizeof(float) * (size_t)n);
    int rc = u ? 0 : -1;
    if (!rc) rc = ref_matmul(s->type, s->wdata, s->a, s->b, in->x, out, s->n_tok, false);
    if (!rc) rc = ref_matmul(s->type, s->wdata2, s->a, s->b, in->x, u, s->n_tok, false);
    if (!rc) ref_glu(out, u, out, n, s->glu);
    free(u);
    return rc;
}

/* out: q roped [n_tok][n_head * head_dim], then the K and the V cache rows read back. t: 6 free slots. */
int gvf_run_rope_store(backend *be, const spec *s, const inputs *in, float *out, be_tensor **t) {
    const backend_ops *op = be->ops;
    const int64_t qd = (int64_t)s->n_head * s->head_dim, kvd = (int64_t)s->n_kv_head * s->head_dim, ctx = s->pos0 + s->n_tok;
    const size_t rb = qtype_row_size((qtype)s->type, kvd);
    uint8_t *kb = calloc((size_t)ctx, rb), *vb = calloc((size_t)ctx, rb);
    int rc = -1;
    t[0] = gv_up(be, QT_F32, qd, s->n_tok, in->x);
    t[1] = gv_up(be, QT_F32, kvd, s->n_tok, in->y);
    t[2] = gv_up(be, QT_F32, kvd, s->n_tok, in->y + s->n_tok * kvd);
    t[3] = kb ? gv_up(be, s->type, kvd, ctx, kb) : NULL;
    t[4] = vb ? gv_up(be, s->type, kvd, ctx, vb) : NULL;
    t[5] = s->wdata ? gv_up(be, QT_F32, s->rp.n_rot / 2, 1, s->wdata) : NULL;
    if (t[0] && t[1] && t[2] && t[3] && t[4] && (t[5] || !s->wdata)) {
        be_rope_params rp = s->rp;
        rp.freq_factors = t[5];
        if (!op->rope_store || !op->rope_store(be, t[0], t[1], t[2], t[3], t[4], s->n_tok, s->n_head, s->n_kv_head, s->head_dim, s->pos0, &rp)) {
            op->rope(be, t[0], s->n_tok, s->n_head, s->head_dim, s->pos0, &rp);
            op->rope(be, t[1], s->n_tok, s->n_kv_head, s->head_dim, s->pos0, &rp);
            op->store_rows(be, t[1], t[3], s->pos0, s->n_tok);
            op->store_rows(be, t[2], t[4], s->pos0, s->n_tok);
        }
        be_download(t[0], 0, out, sizeof(float) * (size_t)(qd * s->n_tok));
        be_download(t[3], 0, kb, (size_t)ctx * rb);
        be_download(t[4], 0, vb, (size_t)ctx * rb);
        gv_dequant_rows(s->type, kb, kvd, s->pos0, s->n_tok, out + qd * s->n_tok);
        gv_dequant_rows(s->type, vb, kvd, s->pos0, s->n_tok, out + (qd + kvd) * s->n_tok);
        rc = 0;
    }
    free(kb);
    free(vb);
    return rc;
}

int gvf_ref_rope_store(const spec *s, const inputs *in, float *out) {
    const int64_t qd = (int64_t)s->n_head * s->head_dim, kvd = (int64_t)s->n_kv_head * s->head_dim, ctx = s->pos0 + s->n_tok;
    const size_t rb = qtype_row_size((qtype)s->type, kvd);
    float *k = malloc(sizeof(float) * (size_t)(kvd * s->n_tok));
    uint8_t *kb = calloc((size_t)ctx, rb), *vb = calloc((size_t)ctx, rb);
    int rc = k && kb && vb ? 0 : -1;
    if (!rc) {
        memcpy(out, in->x, sizeof(float) * (size_t)(qd * s->n_tok));
        memcpy(k, in->y, sizeof(float) * (size_t)(kvd * s->n_tok));
        rc = ref_rope(out, s->n_tok, s->n_head, s->head_dim, s->pos0, s->rp.n_rot, s->rp.mode, s->rp.freq_base, s->rp.freq_scale, s->wdata);
        if (!rc) rc = ref_rope(k, s->n_tok, s->n_kv_head, s->head_dim, s->pos0, s->rp.n_rot, s->rp.mode, s->rp.freq_base, s->rp.freq_scale, s->wdata);
    }
    if (!rc) {
        ref_store_rows(k, s->type, kb, kvd, s->pos0, s->n_tok);
        ref_store_rows(in->y + s->n_tok * kvd, s->type, vb, kvd, s->pos0, s->n_tok);
        gv_dequant_rows(s->type, kb, kvd, s->pos0, s->n_tok, out + qd * s->n_tok);
        gv_dequant_rows(s->type, vb, kvd, s->pos0, s->n_tok, out + (qd + kvd) * s->n_tok);
    }
    free(k);
    free(kb);
    free(vb);
    return rc;
}
