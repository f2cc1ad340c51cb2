/* vk_recurrent: backend.h's recurrent-layer ops on Vulkan (qwen35's gated DeltaNet):
 * conv1d_state (shaders/conv1d_state.comp, one invocation per channel) and delta_net
 * (shaders/delta_net.comp, one workgroup per value head, the state updated in place).
 * Every tensor an op touches must lie in one device buffer (a sticky error otherwise). */
#include <string.h>

#include "quant.h"
#include "vk_internal.h"

void vk_op_conv1d_state(backend *be, const be_tensor *x, be_tensor *state, const be_tensor *w, be_tensor *out, int n_tok) {
    vk_ctx *c = vk_of(be);
    if (be_failed(&c->base) || n_tok <= 0) return;
    if (!vk_f32_tensor(c, x, "conv1d_state") || !vk_f32_tensor(c, state, "conv1d_state") || !vk_f32_tensor(c, w, "conv1d_state") ||
        !vk_f32_tensor(c, out, "conv1d_state"))
        return;
    const int64_t ch = w->rows;
    const int k = (int)w->cols;
    if (k < 2 || k > 64 || state->cols != ch || state->rows != k - 1) {
        be_fail(&c->base, "vulkan conv1d_state: kernel [%lld][%lld] and state [%lld][%lld] do not match (2..64 taps, state [k - 1][channels])",
                (long long)w->rows, (long long)w->cols, (long long)state->rows, (long long)state->cols);
        return;
    }
    size_t xl, sl, wl, ol;
    vk_chunk *xc = vk_span(c, x, 0, (size_t)n_tok * (size_t)ch * 4, &xl, "conv1d_state");
    vk_chunk *sc = vk_span(c, state, 0, (size_t)(k - 1) * (size_t)ch * 4, &sl, "conv1d_state");
    vk_chunk *wc = vk_span(c, w, 0, (size_t)ch * (size_t)k * 4, &wl, "conv1d_state");
    vk_chunk *oc = vk_span(c, out, 0, (size_t)n_tok * (size_t)ch * 4, &ol, "conv1d_state");
    if (!xc || !sc || !wc || !oc) return;
    uint32_t gx, gy;
    vk_grid2((uint32_t)((ch + 63) / 64), &gx, &gy);
    uint32_t pc[8] = { (uint32_t)n_tok, (uint32_t)ch, (uint32_t)k, (uint32_t)(xl / 4), (uint32_t)(sl / 4), (uint32_t)(wl / 4),
                       (uint32_t)(ol / 4), gx };
    vk_binding b[4] = { { xc, false }, { sc, true }, { wc, false }, { oc, true } };
    vk_dispatch(c, VKP_CONV1D_STATE, 0, b, 4, pc, gx, gy, 1, (uint64_t)n_tok * (uint64_t)ch * 4 * (uint64_t)(k + 2));
}

void vk_op_delta_net(backend *be, const be_tensor *qkv, const be_tensor *alpha, const be_tensor *beta, const be_tensor *dt_bias,
                     const be_tensor *a, be_tensor *state, be_tensor *out, const be_delta_params *p) {
    vk_ctx *c = vk_of(be);
    if (be_failed(&c->base) || p->n_tok <= 0) return;
    const be_tensor *ts[7] = { qkv, alpha, beta, dt_bias, a, state, out };
    for (int i = 0; i < 7; i++)
        if (!vk_f32_tensor(c, ts[i], "delta_net")) return;
    if (p->n_k_head <= 0 || p->n_v_head <= 0 || p->n_v_head % p->n_k_head || p->head_dim <= 0 || p->head_dim > 512) {
        be_fail(&c->base, "vulkan delta_net: bad heads (n_k_head %d, n_v_head %d, head_dim %d)", p->n_k_head, p->n_v_head, p->head_dim);
        return;
    }
    const size_t S = (size_t)p->head_dim, Hv = (size_t)p->n_v_head, nt = (size_t)p->n_tok;
    const size_t bytes[7] = { nt * (2 * (size_t)p->n_k_head + Hv) * S * 4, nt * Hv * 4, nt * Hv * 4, Hv * 4, Hv * 4, Hv * S * S * 4, nt * Hv * S * 4 };
    vk_binding b[7];
    size_t local[7];
    for (int i = 0; i < 7; i++) {
        b[i].ch = vk_span(c, ts[i], 0, bytes[i], &local[i], "delta_net");
        b[i].write = i >= 5;
        if (!b[i].ch) return;
    }
    uint32_t pc[12] = { (uint32_t)nt, (uint32_t)p->n_k_head, (uint32_t)Hv, (uint32_t)S };
    for (int i = 0; i < 7; i++) pc[4 + i] = (uint32_t)(local[i] / 4);
    memcpy(&pc[11], &p->eps, 4);
    vk_dispatch(c, VKP_DELTA_NET, 0, b, 7, pc, (uint32_t)Hv, 1, 1, (uint64_t)nt * Hv * S * S * 8);
}
