/* gptoss: gpt-oss hyperparameters and layer weights. Facts from today's llama.cpp
 * (src/models/openai-moe.cpp, llama-hparams.cpp set_swa_pattern, gguf-py constants.py):
 * attention.sliding_window is required and pattern 2 makes even layers sliding; the SWA
 * layers use rope.freq_base_swa (default freq_base) and the same frequency scale; q/k/v/o
 * carry biases; blk.N.attn_sinks.weight [n_head] joins each head's softmax; the FFN input
 * norm is blk.N.post_attention_norm; the router and the experts carry biases
 * (ffn_gate_inp.bias [n_expert], ffn_{gate,up}_exps.bias [n_ff_exp, n_expert],
 * ffn_down_exps.bias [n_embd, n_expert]); routing is LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX_WEIGHT
 * (top-k of the biased logits, softmax over those k), no weight renormalisation or scale. */
#include "gptoss.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "error.h"
#include "moe.h"
#include "quant.h"

int gptoss_read_hparams(const gguf_file *f, model_hparams *hp) {
    const char *arch = hp->arch_name;
    char key[128];
    uint32_t v;
    snprintf(key, sizeof key, "%s.attention.sliding_window", arch);
    if (!gguf_get_u32(f, key, &v)) {
        if (!gguf_find(f, key)) anv_set_error("%s: missing metadata key %s", f->path, key);
        return -1;
    }
    if (v < 1 || v > (1u << 30)) { anv_set_error("%s: metadata %s = %u is invalid (must be >= 1)", f->path, key, v); return -1; }
    hp->swa_window = (int)v;
    if (model_read_swa_pattern(f, hp, 2) != 0) return -1;
    hp->rope_base_swa = hp->rope_base;
    snprintf(key, sizeof key, "%s.rope.freq_base_swa", arch);
    if (!gguf_get_f32(f, key, &hp->rope_base_swa) && gguf_find(f, key)) return -1;
    if (!isfinite(hp->rope_base_swa) || hp->rope_base_swa <= 1.0f) {
        anv_set_error("%s: metadata %s = %g is invalid (must be > 1)", f->path, key, (double)hp->rope_base_swa);
        return -1;
    }
    hp->rope_scale_swa = hp->rope_scale;
    hp->attn_scale = 1.0f / sqrtf((float)hp->n_rot);
    if (hp->n_expert == 0) { anv_set_error("%s: metadata %s.expert_count is missing or 0 (a gpt-oss model needs experts)", f->path, arch); return -1; }
    hp->expert_gating = 3;
    hp->expert_norm = false;
    hp->expert_scale = 0;
    return 0;
}

/* n_expert one-row F32 weights cut from the 2-D bias blk.il.<suffix> [cols, n_expert]. */
static be_tensor **place_bias_rows(model *m, backend *be, int il, const char *suffix, int64_t cols, bool *failed) {
    const gguf_file *f = m->gguf;
    const int ne = m->hp.n_expert;
    char name[128];
    snprintf(name, sizeof name, "blk.%d.%s", il, suffix);
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (!t) { anv_set_error("%s: missing tensor '%s'", f->path, name); *failed = true; return NULL; }
    if (t->ne[0] != cols || t->ne[1] != ne || t->ne[2] != 1 || t->ne[3] != 1 || t->type != QT_F32) {
        const qtype_info *qi = qtype_get(t->type);
        anv_set_error("%s: tensor '%s' is %s [%lld, %lld, %lld, %lld], expected f32 [%lld, %d] (n_expert %d)", f->path, name,
                      qi ? qi->name : "?", (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3],
                      (long long)cols, ne, ne);
        *failed = true;
        return NULL;
    }
    return moe_split_experts(m, be, t, cols, 1, ne, failed);
}

int gptoss_load_layer(model *m, int il, backend *be) {
    const model_hparams *hp = &m->hp;
    model_layer *L = &m->layers[il];
    const int64_t e = hp->n_embd;
    bool fail = false;
    char name[128];
    snprintf(name, sizeof name, "blk.%d.attn_output.bias", il);
    L->bo = model_place(m, be, name, e, 1, true, &fail);
    snprintf(name, sizeof name, "blk.%d.attn_sinks.weight", il);
    if (!fail) L->attn_sinks = model_place(m, be, name, hp->n_head, 1, true, &fail);
    snprintf(name, sizeof name, "blk.%d.post_attention_norm.weight", il);
    if (!fail) L->ffn_norm = model_place(m, be, name, e, 1, true, &fail);
    if (fail || moe_load_layer(m, il, be) != 0) return -1;
    snprintf(name, sizeof name, "blk.%d.ffn_gate_inp.bias", il);
    L->moe_router_b = model_place(m, be, name, hp->n_expert, 1, true, &fail);
    if (!fail) L->exp_gate_b = place_bias_rows(m, be, il, "ffn_gate_exps.bias", hp->n_ff_exp, &fail);
    if (!fail) L->exp_up_b = place_bias_rows(m, be, il, "ffn_up_exps.bias", hp->n_ff_exp, &fail);
    if (!fail) L->exp_down_b = place_bias_rows(m, be, il, "ffn_down_exps.bias", e, &fail);
    return fail ? -1 : 0;
}

static void free_rows(be_tensor ***w, int n) {
    if (!*w) return;
    for (int e = 0; e < n; e++) be_tensor_free((*w)[e]);
    free(*w);
    *w = NULL;
}

void gptoss_free_layer(model_layer *L) {
    const int n = L->moe_router ? (int)L->moe_router->rows : 0;
    free_rows(&L->exp_gate_b, n);
    free_rows(&L->exp_up_b, n);
    free_rows(&L->exp_down_b, n);
    be_tensor_free(L->bo);
    be_tensor_free(L->attn_sinks);
    be_tensor_free(L->moe_router_b);
    L->bo = L->attn_sinks = L->moe_router_b = NULL;
}
