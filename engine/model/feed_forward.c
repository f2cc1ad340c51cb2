/* feed_forward: the feed-forward block of the one forward pass (pass.h): x += down(act(gate h) *
 * up h) with h = norm(x) (SwiGLU; gemma's GELU-tanh and post-norm), or the mixture of experts of
 * moe.c where the layer has a router. */
#include "moe.h"
#include "pass.h"

void feed_forward_block(const layer_pass *p) {
    const model_hparams *hp = p->hp;
    const model_layer *L = p->L;
    scratch *s = p->s;
    norm(p, s->x, L->ffn_norm, s->xn);
    if (L->moe_router) {
        moe_bufs mb = {s->x, s->xn, s->gate, s->up, s->moe_in, s->tmp, s->moe_logits, s->moe_shlog, NULL};
        moe_ffn(p->m, L, &mb, p->nt);
        return;
    }
    const be_glu_kind act = hp->arch == ARCH_GEMMA3 ? BE_GLU_GELU_TANH : BE_GLU_SILU;
    /* gate = act(h W_gate^T) * (h W_up^T): fused where the backend has it */
    if (!p->op->matmul_glu || !p->op->matmul_glu(p->be, L->w_gate, L->w_up, s->xn, s->gate, p->nt, act)) {
        linear(p, L->w_gate, s->xn, s->gate);
        linear(p, L->w_up, s->xn, s->up);
        p->op->glu(p->be, s->gate, s->up, s->gate, (int64_t)p->nt * hp->n_ff, act);
    }
    project_into_residual(p, L->w_down, s->gate, NULL, L->post_ffn_norm);
}
