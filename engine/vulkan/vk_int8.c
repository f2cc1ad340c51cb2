/* vk_int8: the integer-dot mat-vec choice for a matmul weight and the descriptions of the
 * mul_mat_vecq_x pipelines (see vk_int8.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "quant.h"
#include "settings.h"
#include "vk_int8.h"
#include "vk_internal.h"
#include "vk_wide.h"

/* VKP_MMVQ_X + i: the GGUF-layout kernels of the 32-element types, their repacked ("_w")
 * twins, then the K-quants (GGUF layout only). */
static const struct { uint32_t type; const char *name; bool wide; } k_q[VKQ_N_IDS] = {
    { QT_Q4_1, "q4_1", false }, { QT_Q5_0, "q5_0", false }, { QT_Q5_1, "q5_1", false },
    { QT_Q4_1, "q4_1", true },  { QT_Q5_0, "q5_0", true },  { QT_Q5_1, "q5_1", true },
    { QT_Q4_K, "q4_k", false }, { QT_Q5_K, "q5_k", false }, { QT_Q6_K, "q6_k", false },
};

/* Q4_K's and Q5_K's kernels only with ANVIL_VK_INT8_K=1: their q8_1 activations take the
 * whole-model KL past the agreement limits (real Gemma 3 270M Q4_K_M through Q4_K: KL max
 * 0.073 > 0.06; the synthetic qwen2-tinyk-q5_K through Q5_K: 0.0208 > 0.02). */
bool vkq_kquants_requested(void) {
    return anv_setting_on("ANVIL_VK_INT8_K");
}

bool vkq_covers(uint32_t qtype) {
    if (qtype == QT_Q4_0 || qtype == QT_Q8_0) return true;
    if ((qtype == QT_Q4_K || qtype == QT_Q5_K) && !vkq_kquants_requested()) return false;
    for (int i = 0; i < VKQ_N_IDS; i++)
        if (k_q[i].type == qtype) return true;
    return false;
}

int vkq_matmul_pipe(vk_ctx *c, const be_tensor *w, int64_t K) {
    if (!c->use_int8 || K % 32 != 0) return -1;
    if (w->type == QT_Q4_0) return vkw_pick(w, VKP_MMVQ_Q4_0);
    if (w->type == QT_Q8_0) return vkw_pick(w, VKP_MMVQ_Q8_0);
    if ((w->type == QT_Q4_K || w->type == QT_Q5_K) && !c->use_int8_k) return -1;
    const bool wide = vkw_is_wide(w);
    for (int i = 0; i < VKQ_N_IDS; i++) {
        if (k_q[i].type != w->type || k_q[i].wide != wide) continue;
        const bool kq = i >= 6;
        if (kq && (K % 256 != 0 || w->offset % 4 != 0)) return -1; /* the kernels read 4-byte words of whole blocks */
        if (!kq && !wide && w->offset % 2 != 0) return -1;
        return VKP_MMVQ_X + i;
    }
    return -1;
}

bool vkq_describe(int id, vkp_desc *d) {
    if (id < VKP_MMVQ_X || id > VKP_MMVQ_X_LAST) return false;
    const int i = id - VKP_MMVQ_X;
    snprintf(d->name, sizeof d->name, "mul_mat_vecq_%s%s", k_q[i].name, k_q[i].wide ? "_w" : "");
    d->n_bind = 3; d->pc_size = 44; d->spec = VKP_SPEC_MV; d->has_sg = true;
    return true;
}
