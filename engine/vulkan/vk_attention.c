/* vk_attention: the attention op of the Vulkan backend (backend.h): argument checks and
 * the choice between the single-pass flash-attention kernel (shaders/flash_attn.comp, one
 * workgroup per query row and head) and its dispatch. */
#include "quant.h"
#include "vk_internal.h"

void vk_op_attention(backend *be, const be_tensor *q, const be_tensor *k, const be_tensor *v, be_tensor *out, const be_attn_params *p) {
    vk_ctx *c = vk_of(be);
    if (be_failed(&c->base) || p->n_tok <= 0) return;
    if (!vk_f32_tensor(c, q, "attention") || !vk_f32_tensor(c, out, "attention") || !vk_same_be(c, k, "attention") || !vk_same_be(c, v, "attention")) return;
    if (k->type != v->type || k->cols != v->cols) { be_fail(&c->base, "vulkan attention: K and V caches differ in type or shape"); return; }
    int pipe = k->type == QT_F32 ? VKP_FA_F32 : k->type == QT_F16 ? VKP_FA_F16 : k->type == QT_Q8_0 ? VKP_FA_Q8_0
             : k->type == QT_Q4_0 ? VKP_FA_Q4_0 : -1;
    if (pipe < 0) { be_fail(&c->base, "vulkan attention: KV type %u unsupported (F16/F32/Q8_0/Q4_0)", k->type); return; }
    if (p->n_head <= 0 || p->n_kv_head <= 0 || p->n_head % p->n_kv_head || p->head_dim <= 0 || p->head_dim > 512 || p->pos0 < 0 ||
        ((k->type == QT_Q8_0 || k->type == QT_Q4_0) && p->head_dim % 32) || (int64_t)p->n_kv_head * p->head_dim != k->cols ||
        (int64_t)p->n_head * p->head_dim > q->cols || (int64_t)p->n_head * p->head_dim > out->cols) {
        be_fail(&c->base, "vulkan attention: bad parameters (n_head %d, n_kv_head %d, head_dim %d, cache cols %lld)",
                p->n_head, p->n_kv_head, p->head_dim, (long long)k->cols);
        return;
    }
    const int64_t n_kv = (int64_t)p->pos0 + p->n_tok;
    if (n_kv > k->rows) { be_fail(&c->base, "vulkan attention: %lld positions exceed the cache (%lld rows)", (long long)n_kv, (long long)k->rows); return; }
    const size_t kvrb = be_row_bytes(k);
    size_t kl, vl;
    vk_chunk *kc = vk_span(c, k, 0, (size_t)n_kv * kvrb, &kl, "attention");
    vk_chunk *vc = vk_span(c, v, 0, (size_t)n_kv * kvrb, &vl, "attention");
    if (!kc || !vc) return;
    size_t sl = 0;
    vk_chunk *sc = NULL; /* attention sinks [n_head] (gpt-oss) */
    if (p->sinks) {
        if (!vk_f32_tensor(c, p->sinks, "attention") || p->sinks->cols * p->sinks->rows < p->n_head) {
            if (!be_failed(&c->base)) be_fail(&c->base, "vulkan attention: sinks must be f32 with n_head %d elements", p->n_head);
            return;
        }
        sc = vk_span(c, p->sinks, 0, (size_t)p->n_head * 4, &sl, "attention");
        if (!sc) return;
    }
    /* query tokens split where q or out change device buffer */
    int64_t bounds[VK_MAX_RANGES + 1] = { 0, (int64_t)p->n_tok * q->cols };
    int nr = 1;
    if (q->cols == out->cols) {
        const be_tensor *ts[2] = { q, out };
        nr = vk_elem_ranges(c, ts, 2, (int64_t)p->n_tok * q->cols, q->cols, bounds, "attention");
    }
    for (int r = 0; r < nr; r++) {
        const int tb = (int)(bounds[r] / q->cols), te = (int)(bounds[r + 1] / q->cols), nt = te - tb;
        size_t ql, ol;
        vk_chunk *qc = vk_span(c, q, (size_t)tb * (size_t)q->cols * 4, (size_t)nt * (size_t)q->cols * 4, &ql, "attention");
        vk_chunk *oc = vk_span(c, out, (size_t)tb * (size_t)out->cols * 4, (size_t)nt * (size_t)out->cols * 4, &ol, "attention");
        if (!qc || !oc) return;
        uint32_t gx, gy;
        vk_grid2((uint32_t)(nt * p->n_head), &gx, &gy);
        struct { uint32_t n_tok, pos0, n_head, n_kv_head, head_dim, window, q_off, q_stride, k_off, v_off, kv_stride, o_off, o_stride, groups_x; float scale, softcap; uint32_t noncausal, n_kv, has_sinks, s_off; } pc = {
            (uint32_t)nt, (uint32_t)(p->pos0 + tb), (uint32_t)p->n_head, (uint32_t)p->n_kv_head, (uint32_t)p->head_dim,
            (uint32_t)(p->window > 0 ? p->window : 0), (uint32_t)(ql / 4), (uint32_t)q->cols, (uint32_t)kl, (uint32_t)vl, (uint32_t)kvrb,
            (uint32_t)(ol / 4), (uint32_t)out->cols, gx, p->scale, p->softcap, p->noncausal ? 1u : 0u, (uint32_t)n_kv,
            sc ? 1u : 0u, (uint32_t)(sl / 4) };
        vk_binding b[5] = { { qc, false }, { kc, false }, { vc, false }, { oc, true }, { sc ? sc : qc, false } };
        vk_dispatch(c, pipe, 0, b, 5, &pc, gx, gy, 1,
                    (uint64_t)nt * (uint64_t)p->n_head * (uint64_t)p->head_dim * 8 + 2 * (uint64_t)(p->noncausal ? n_kv : p->pos0 + te) * kvrb);
    }
}
