/* qwen35: Qwen3.5 / 3.6 hyperparameters and layer weights, dense (qwen35) and MoE (qwen35moe:
 * the same layers with moe.c's experts and sigmoid-gated shared expert, softmax routing over
 * all experts, top-k weights renormalised). Facts from today's llama.cpp (src/models/qwen35.cpp,
 * qwen35moe.cpp, conversion/qwen.py Qwen3_5TextModel / Qwen3_5MoeTextModel, gguf-py
 * constants.py MODEL_ARCH.QWEN35):
 *  - block_count counts the MTP layers too: n_layer = block_count - nextn_predict_layers;
 *  - ssm.conv_kernel = d_conv, ssm.state_size = head_k_dim, ssm.group_count = key heads,
 *    ssm.time_step_rank = value heads, ssm.inner_size = value heads * head_v_dim, and
 *    llama.cpp requires head_v_dim == head_k_dim;
 *  - layer il is recurrent per attention.recurrent_layers, else iff (il + 1) %
 *    full_attention_interval != 0 (default 4);
 *  - rope is IMROPE with rope.dimension_sections; text tokens carry positions [p, p, p, 0],
 *    so a rotated pair whose section is the fourth ('e') one would not rotate: Anvil
 *    requires every pair to fall in t/h/w (true of the released [11, 11, 10, 0] with 64
 *    rotated dims) and then it is NEOX rope at position p;
 *  - attention layers: attn_q [n_embd, 2 * n_head * head_dim], per head head_dim query rows
 *    then head_dim output-gate rows (de-interleaved here into wq and wq_gate), q/k norms;
 *  - recurrent layers: attn_qkv, attn_gate (z), ssm_conv1d (F32, kept so by the converter
 *    and llama-quantize), ssm_dt.bias, ssm_a (= -exp(A_log), the converter's transform),
 *    ssm_beta, ssm_alpha, ssm_norm [head_v_dim], ssm_out;
 *  - every layer: attn_norm, post_attention_norm (the FFN's input norm), dense SwiGLU FFN. */
#include "qwen35.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "moe.h"
#include "quant.h"
#include "rope_table.h"

/* Reads an integer array key (int32 / uint32 / bool elements) into out[0..n); -1 + error. */
static int get_int_array(const gguf_file *f, const char *key, int *out, int n, uint64_t *len) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv) return 0;
    const size_t esz = kv->type != GGUF_ARRAY ? 0 : kv->arr_type == GGUF_BOOL ? 1
                       : kv->arr_type == GGUF_INT32 || kv->arr_type == GGUF_UINT32 ? 4 : 0;
    if (!esz) { anv_set_error("%s: metadata %s must be an integer or bool array", f->path, key); return -1; }
    if (kv->arr_len > (uint64_t)n) {
        anv_set_error("%s: metadata %s has %llu entries (at most %d)", f->path, key, (unsigned long long)kv->arr_len, n);
        return -1;
    }
    const uint8_t *d = kv->arr_data;
    for (uint64_t i = 0; i < kv->arr_len; i++) {
        int32_t v = 0;
        if (esz == 1) v = d[i];
        else memcpy(&v, d + i * 4, 4);
        out[i] = v;
    }
    *len = kv->arr_len;
    return 0;
}

int qwen35_read_hparams(const gguf_file *f, model_hparams *hp) {
    const char *arch = hp->arch_name;
    char key[160];
    if (!model_read_u32(f, arch, "nextn_predict_layers", &hp->n_layer_nextn, false)) return -1;
    if (hp->n_layer_nextn >= hp->n_layer) {
        anv_set_error("%s: metadata %s.nextn_predict_layers = %d leaves no layers of block_count %d", f->path, arch,
                      hp->n_layer_nextn, hp->n_layer);
        return -1;
    }
    hp->n_layer -= hp->n_layer_nextn;
    /* Ollama's key for the V-head order: both converters tile the value heads over the key heads
     * (what delta_net assumes); a file saying they are still grouped would run wrong silently */
    snprintf(key, sizeof key, "%s.ssm.v_head_reordered", arch);
    bool reordered = true;
    if (gguf_find(f, key) && (!gguf_get_bool(f, key, &reordered) || !reordered)) {
        anv_set_error("%s: metadata %s is not true: value heads grouped by key head are not supported (reconvert "
                      "with today's llama.cpp or Ollama)", f->path, key);
        return -1;
    }
    if (hp->n_layer > MODEL_MAX_LAYERS) {
        anv_set_error("%s: %d layers (at most %d)", f->path, hp->n_layer, MODEL_MAX_LAYERS);
        return -1;
    }
    static const char *const ssm_keys[5] = {"ssm.conv_kernel", "ssm.inner_size", "ssm.state_size", "ssm.time_step_rank", "ssm.group_count"};
    int *ssm_vals[5] = {&hp->ssm_d_conv, &hp->ssm_d_inner, &hp->ssm_d_state, &hp->ssm_n_v_head, &hp->ssm_n_k_head};
    for (int i = 0; i < 5; i++) {
        if (!model_read_u32(f, arch, ssm_keys[i], ssm_vals[i], true)) return -1;
        if (*ssm_vals[i] < 1) { anv_set_error("%s: metadata %s.%s = %d is invalid (must be >= 1)", f->path, arch, ssm_keys[i], *ssm_vals[i]); return -1; }
    }
    if (hp->ssm_d_conv < 2 || hp->ssm_d_conv > 64) {
        anv_set_error("%s: metadata %s.ssm.conv_kernel = %d is invalid (2..64)", f->path, arch, hp->ssm_d_conv);
        return -1;
    }
    if (hp->ssm_d_state > 512) {
        anv_set_error("%s: metadata %s.ssm.state_size = %d is invalid (at most 512)", f->path, arch, hp->ssm_d_state);
        return -1;
    }
    if (hp->ssm_n_v_head % hp->ssm_n_k_head != 0) {
        anv_set_error("%s: inconsistent ssm sizes: %s.ssm.time_step_rank (value heads) %d is not a multiple of %s.ssm.group_count (key heads) %d",
                      f->path, arch, hp->ssm_n_v_head, arch, hp->ssm_n_k_head);
        return -1;
    }
    if ((int64_t)hp->ssm_n_v_head * hp->ssm_d_state != hp->ssm_d_inner) {
        anv_set_error("%s: inconsistent ssm sizes: %s.ssm.inner_size %d != time_step_rank %d x state_size %d (value and key head sizes must match)",
                      f->path, arch, hp->ssm_d_inner, hp->ssm_n_v_head, hp->ssm_d_state);
        return -1;
    }
    /* which layers are recurrent */
    memset(hp->recr_mask, 0, sizeof hp->recr_mask);
    snprintf(key, sizeof key, "%s.attention.recurrent_layers", arch);
    static int flags[MODEL_MAX_LAYERS * 2];
    uint64_t n_flags = 0;
    if (gguf_find(f, key)) {
        if (get_int_array(f, key, flags, MODEL_MAX_LAYERS * 2, &n_flags) != 0) return -1;
        if (n_flags < (uint64_t)hp->n_layer) {
            anv_set_error("%s: metadata %s has %llu entries, fewer than the %d layers", f->path, key, (unsigned long long)n_flags, hp->n_layer);
            return -1;
        }
        for (int il = 0; il < hp->n_layer; il++)
            if (flags[il]) hp->recr_mask[il / 64] |= 1ull << (il % 64);
    } else {
        int interval = 4;
        if (!model_read_u32(f, arch, "full_attention_interval", &interval, false)) return -1;
        if (interval < 1) { anv_set_error("%s: metadata %s.full_attention_interval = %d is invalid (must be >= 1)", f->path, arch, interval); return -1; }
        for (int il = 0; il < hp->n_layer; il++)
            if ((il + 1) % interval != 0) hp->recr_mask[il / 64] |= 1ull << (il % 64);
    }
    /* rope sections: text positions [p, p, p, 0] (llama.cpp's batch), ggml's IMROPE sectors */
    snprintf(key, sizeof key, "%s.rope.dimension_sections", arch);
    int sec[4] = {0, 0, 0, 0};
    uint64_t n_sec = 0;
    if (!gguf_find(f, key)) { anv_set_error("%s: missing metadata key %s", f->path, key); return -1; }
    if (get_int_array(f, key, sec, 4, &n_sec) != 0) return -1;
    const int sect_dims = sec[0] + sec[1] + sec[2] + sec[3];
    hp->rope_sect_mode = 1 + ROPE_SECT_IMROPE;   /* image rows (model_eval_embd_grid): their (t, h, w) */
    memcpy(hp->rope_sections, sec, sizeof sec);
    if (sec[0] < 0 || sec[1] < 0 || sec[2] < 0 || sec[3] < 0 || sect_dims < 1 || sect_dims > hp->n_rot / 2) {
        anv_set_error("%s: metadata %s = [%d, %d, %d, %d] is invalid (sections of at most rope.dimension_count / 2 = %d pairs)",
                      f->path, key, sec[0], sec[1], sec[2], sec[3], hp->n_rot / 2);
        return -1;
    }
    for (int i = 0; i < hp->n_rot / 2; i++) {
        const int s = i % sect_dims;
        const bool text = (s % 3 == 1 && s < 3 * sec[1]) || (s % 3 == 2 && s < 3 * sec[2]) || (s % 3 == 0 && s < 3 * sec[0]);
        if (!text) {
            anv_set_error("%s: metadata %s = [%d, %d, %d, %d] leaves rotated pair %d unrotated for text (not supported)",
                          f->path, key, sec[0], sec[1], sec[2], sec[3], i);
            return -1;
        }
    }
    return 0;   /* qwen35moe's experts: moe_read_hparams (a dense qwen35 with experts is refused there) */
}

static be_tensor *place_blk(model *m, backend *be, int il, const char *suffix, int64_t ne0, int64_t ne1, bool *failed) {
    char name[128];
    snprintf(name, sizeof name, "blk.%d.%s", il, suffix);
    return *failed ? NULL : model_place(m, be, name, ne0, ne1, true, failed);
}

/* attn_q's rows split per head into query rows (wq) and output-gate rows (wq_gate), both
 * backed by one host copy (the CPU backend aliases it; kept until the layer is freed). */
static int place_q_and_gate(model *m, backend *be, int il, model_layer *L) {
    const model_hparams *hp = &m->hp;
    const int hd = hp->head_dim_k;
    const int64_t e = hp->n_embd, qd = (int64_t)hp->n_head * hd;
    char name[128];
    snprintf(name, sizeof name, "blk.%d.attn_q.weight", il);
    const gguf_tensor *t = gguf_find_tensor(m->gguf, name);
    if (!t) { anv_set_error("%s: missing tensor '%s'", m->gguf->path, name); return -1; }
    if (t->ne[0] != e || t->ne[1] != 2 * qd || t->ne[2] != 1 || t->ne[3] != 1) {
        anv_set_error("%s: tensor '%s' has shape [%lld, %lld, %lld, %lld], expected [%lld, %lld] (query + gate per head)", m->gguf->path, name,
                      (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3], (long long)e, (long long)(2 * qd));
        return -1;
    }
    const qtype_info *qi = qtype_get(t->type);
    if (!qi || !qi->is_weight) { anv_set_error("%s: tensor '%s' has an unsupported type", m->gguf->path, name); return -1; }
    const size_t rb = qtype_row_size((qtype)t->type, e), head = rb * (size_t)hd;
    uint8_t *buf = malloc(rb * (size_t)(2 * qd));
    if (!buf) { anv_set_error("out of memory"); return -1; }
    const uint8_t *src = t->data;
    for (int h = 0; h < hp->n_head; h++) {
        memcpy(buf + (size_t)h * head, src + (size_t)(2 * h) * head, head);                    /* query rows */
        memcpy(buf + (size_t)(hp->n_head + h) * head, src + (size_t)(2 * h + 1) * head, head); /* gate rows */
    }
    L->q_host = buf;
    L->wq = be->ops->weight_new(be, t->type, e, qd, buf);
    L->wq_gate = L->wq ? be->ops->weight_new(be, t->type, e, qd, buf + (size_t)hp->n_head * head) : NULL;
    if (!L->wq || !L->wq_gate) return -1;
    m->weight_bytes += t->nbytes;
    return 0;
}

int qwen35_load_layer(model *m, int il, backend *be) {
    const model_hparams *hp = &m->hp;
    model_layer *L = &m->layers[il];
    const int64_t e = hp->n_embd, kvd = (int64_t)hp->n_kv_head * hp->head_dim_k;
    bool fail = false;
    L->be = be;
    if (!be->ops->conv1d_state || !be->ops->delta_net) {
        anv_set_error("%s: layer %d of this qwen35 model cannot run on %s: that backend lacks the recurrent-layer ops "
                      "(conv1d_state, delta_net); run it on the CPU (-ngl 0 or ANVIL_DEVICE=cpu)", m->gguf->path, il, be->name);
        return -1;
    }
    L->attn_norm = place_blk(m, be, il, "attn_norm.weight", e, 1, &fail);
    if (model_layer_is_recurrent(hp, il)) {
        const int64_t S = hp->ssm_d_state, hk = hp->ssm_n_k_head, hv = hp->ssm_n_v_head;
        const int64_t conv_ch = 2 * hk * S + hv * S;
        L->ssm_qkv = place_blk(m, be, il, "attn_qkv.weight", e, conv_ch, &fail);
        L->ssm_z = place_blk(m, be, il, "attn_gate.weight", e, hv * S, &fail);
        L->ssm_conv = place_blk(m, be, il, "ssm_conv1d.weight", hp->ssm_d_conv, conv_ch, &fail);
        if (!fail && L->ssm_conv->type != QT_F32) {
            anv_set_error("%s: tensor 'blk.%d.ssm_conv1d.weight' must be F32 (is %s)", m->gguf->path, il, qtype_get(L->ssm_conv->type)->name);
            fail = true;
        }
        char dt[64];   /* Ollama's files name it blk.N.ssm_dt (the shim renames it) */
        snprintf(dt, sizeof dt, "blk.%d.ssm_dt", il);
        const bool ollama_dt = gguf_find_tensor(m->gguf, dt) != NULL;
        L->ssm_dt_bias = place_blk(m, be, il, ollama_dt ? "ssm_dt" : "ssm_dt.bias", hv, 1, &fail);
        L->ssm_a = place_blk(m, be, il, "ssm_a", hv, 1, &fail);
        L->ssm_beta = place_blk(m, be, il, "ssm_beta.weight", e, hv, &fail);
        L->ssm_alpha = place_blk(m, be, il, "ssm_alpha.weight", e, hv, &fail);
        L->ssm_norm = place_blk(m, be, il, "ssm_norm.weight", S, 1, &fail);
        L->ssm_out = place_blk(m, be, il, "ssm_out.weight", hv * S, e, &fail);
    } else {
        if (!fail && place_q_and_gate(m, be, il, L) != 0) fail = true;
        L->wk = place_blk(m, be, il, "attn_k.weight", e, kvd, &fail);
        L->wv = place_blk(m, be, il, "attn_v.weight", e, kvd, &fail);
        L->wo = place_blk(m, be, il, "attn_output.weight", (int64_t)hp->n_head * hp->head_dim_k, e, &fail);
        L->q_norm = place_blk(m, be, il, "attn_q_norm.weight", hp->head_dim_k, 1, &fail);
        L->k_norm = place_blk(m, be, il, "attn_k_norm.weight", hp->head_dim_k, 1, &fail);
    }
    L->ffn_norm = place_blk(m, be, il, "post_attention_norm.weight", e, 1, &fail);
    if (hp->n_expert > 0) return fail || moe_load_layer(m, il, be) != 0 ? -1 : 0;   /* qwen35moe: moe.c */
    L->w_gate = place_blk(m, be, il, "ffn_gate.weight", e, hp->n_ff, &fail);
    L->w_up = place_blk(m, be, il, "ffn_up.weight", e, hp->n_ff, &fail);
    L->w_down = place_blk(m, be, il, "ffn_down.weight", hp->n_ff, e, &fail);
    return fail ? -1 : 0;
}

void qwen35_free_layer(model_layer *L) {
    be_tensor *ts[] = {L->wq_gate, L->ssm_qkv, L->ssm_z, L->ssm_conv, L->ssm_dt_bias, L->ssm_a, L->ssm_beta, L->ssm_alpha,
                       L->ssm_norm, L->ssm_out};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) be_tensor_free(ts[i]);
    L->wq_gate = L->ssm_qkv = L->ssm_z = L->ssm_conv = L->ssm_dt_bias = L->ssm_a = L->ssm_beta = L->ssm_alpha = NULL;
    L->ssm_norm = L->ssm_out = NULL;
    free(L->q_host);   /* after wq and wq_gate, which alias it */
    L->q_host = NULL;
}
