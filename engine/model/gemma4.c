/* gemma4: Gemma 4's hyperparameters and weights. Facts from today's llama.cpp
 * (src/models/gemma4.cpp load_arch_hparams / load_arch_tensors, src/llama-hparams.cpp,
 * src/llama-model.cpp's KV reuse for LLM_ARCH_GEMMA4, conversion/gemma.py Gemma4Model):
 *  - attention.sliding_window_pattern is one bool per layer; sliding layers use
 *    attention.key_length_swa (key_length is the full layers' head size),
 *    rope.dimension_count_swa (default rope.dimension_count) and rope.freq_base_swa (default
 *    rope.freq_base); head_count_kv and feed_forward_length may be per-layer arrays;
 *  - the last attention.shared_kv_layers layers have no K/V of their own: layer il reuses the
 *    cache of layer n_layer_kv - 2 (sliding) or n_layer_kv - 1 (full), n_layer_kv = n_layer -
 *    shared (Anvil checks that layer has the same kind and shape);
 *  - the full layers rope with rope_freqs.weight (proportional rope: factors 1e30 past the
 *    rotated quarter), the sliding ones without; attention scale 1 (QK-norm, weightless V-norm);
 *  - embedding_length_per_layer_input > 0: per_layer_token_embd, per_layer_model_proj,
 *    per_layer_proj_norm and per layer inp_gate, proj, post_norm; blk.N.layer_output_scale is
 *    optional; attn_v is optional (V = K);
 *  - MoE (26B-A4B): a layer with ffn_gate_inp runs its dense FFN (ffn_norm, post_ffw_norm_1) and
 *    the experts (pre_ffw_norm_2, post_ffw_norm_2; softmax routing of rms_norm(x) / sqrt(n_embd) *
 *    ffn_gate_inp.scale, top-k weights renormalised, GELU experts, the optional per-expert
 *    ffn_down_exps.scale) and sums them before post_ffw_norm; expert_feed_forward_length may be
 *    one width per layer; gate and up either fused (ffn_gate_up_exps [n_embd, 2 n_ff_exp,
 *    n_expert], gate first) or separate. */
#include "gemma4.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "moe.h"   /* model_place */
#include "quant.h"

int model_layer_head_dim(const model_hparams *hp, int il) {
    return hp->head_dim_swa > 0 && model_layer_is_swa(hp, il) ? hp->head_dim_swa : hp->head_dim_k;
}

int model_layer_n_rot(const model_hparams *hp, int il) {
    return hp->n_rot_swa > 0 && model_layer_is_swa(hp, il) ? hp->n_rot_swa : hp->n_rot;
}

int model_layer_n_kv_head(const model_hparams *hp, int il) {
    return il >= 0 && il < MODEL_MAX_LAYERS && hp->layer_n_kv_head[il] > 0 ? hp->layer_n_kv_head[il] : hp->n_kv_head;
}

int model_layer_n_ff(const model_hparams *hp, int il) {
    return il >= 0 && il < MODEL_MAX_LAYERS && hp->layer_n_ff[il] > 0 ? hp->layer_n_ff[il] : hp->n_ff;
}

int model_layer_kv_source(const model_hparams *hp, int il) {
    if (hp->n_layer_kv <= 0 || il < hp->n_layer_kv) return il;
    return hp->n_layer_kv - (model_layer_is_swa(hp, il) ? 2 : 1);
}

/* {arch}.<suffix>: a u32 (every layer) or an array of n_layer u32/i32 values >= 1 into arr;
 * *max = the largest. Absent: *max and arr untouched (absent_ok) or an error. */
static int read_layer_array(const gguf_file *f, const model_hparams *hp, const char *suffix, int *arr, int *max, bool absent_ok) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", hp->arch_name, suffix);
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv) {
        if (absent_ok) return 0;
        anv_set_error("%s: missing metadata key %s", f->path, key);
        return -1;
    }
    if (kv->type != GGUF_ARRAY) {
        uint32_t v;
        if (!gguf_get_u32(f, key, &v)) return -1;
        if (v < 1 || v > (1u << 30)) { anv_set_error("%s: metadata %s = %u is invalid (must be >= 1)", f->path, key, v); return -1; }
        *max = (int)v;
        for (int il = 0; il < hp->n_layer; il++) arr[il] = (int)v;
        return 0;
    }
    if (kv->arr_type != GGUF_UINT32 && kv->arr_type != GGUF_INT32) {
        anv_set_error("%s: metadata %s must be an integer or an array of integers", f->path, key);
        return -1;
    }
    if (kv->arr_len != (uint64_t)hp->n_layer) {
        anv_set_error("%s: metadata %s has %llu entries, expected one per layer (%d)", f->path, key,
                      (unsigned long long)kv->arr_len, hp->n_layer);
        return -1;
    }
    *max = 0;
    for (int il = 0; il < hp->n_layer; il++) {
        uint32_t v;
        memcpy(&v, (const uint8_t *)kv->arr_data + 4 * (size_t)il, 4);
        if (v < 1 || v > (1u << 30)) {
            anv_set_error("%s: metadata %s[%d] = %d is invalid (must be >= 1)", f->path, key, il, (int32_t)v);
            return -1;
        }
        arr[il] = (int)v;
        if ((int)v > *max) *max = (int)v;
    }
    return 0;
}

int gemma4_read_layer_arrays(const gguf_file *f, model_hparams *hp) {
    if (hp->n_layer < 1 || hp->n_layer > MODEL_MAX_LAYERS) {
        anv_set_error("%s: metadata %s.block_count = %d is invalid (1..%d)", f->path, hp->arch_name, hp->n_layer, MODEL_MAX_LAYERS);
        return -1;
    }
    if (read_layer_array(f, hp, "feed_forward_length", hp->layer_n_ff, &hp->n_ff, false) != 0) return -1;
    for (int il = 0; il < hp->n_layer; il++) hp->layer_n_kv_head[il] = hp->n_head;
    hp->n_kv_head = hp->n_head;
    return read_layer_array(f, hp, "attention.head_count_kv", hp->layer_n_kv_head, &hp->n_kv_head, true);
}

static int bad_key(const gguf_file *f, const char *arch, const char *suffix, int v, const char *rule) {
    anv_set_error("%s: metadata %s.%s = %d is invalid (%s)", f->path, arch, suffix, v, rule);
    return -1;
}

int gemma4_read_hparams(const gguf_file *f, model_hparams *hp) {
    const char *arch = hp->arch_name;
    char key[128];
    hp->embd_scale = true;
    hp->attn_scale = 1.0f;   /* Gemma 4: no query pre-attention scaling */
    if (!model_read_u32(f, arch, "attention.sliding_window", &hp->swa_window, true)) return -1;
    if (hp->swa_window < 1) return bad_key(f, arch, "attention.sliding_window", hp->swa_window, "must be >= 1");
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", arch);
    const gguf_kv *pat = gguf_find(f, key);
    if (!pat) { anv_set_error("%s: missing metadata key %s", f->path, key); return -1; }
    if (pat->type != GGUF_ARRAY || pat->arr_len != (uint64_t)hp->n_layer) {
        anv_set_error("%s: metadata %s must be an array of one bool per layer (%d)", f->path, key, hp->n_layer);
        return -1;
    }
    if (model_read_swa_pattern(f, hp, 0) != 0) return -1;
    int hd_v_swa = 0;
    if (!model_read_u32(f, arch, "attention.key_length_swa", &hp->head_dim_swa, true) ||
        !model_read_u32(f, arch, "attention.value_length_swa", &hd_v_swa, true))
        return -1;
    if (hp->head_dim_swa < 2 || hp->head_dim_swa % 2)
        return bad_key(f, arch, "attention.key_length_swa", hp->head_dim_swa, "the head dimension must be even and >= 2");
    if (hd_v_swa != hp->head_dim_swa)
        return bad_key(f, arch, "attention.value_length_swa", hd_v_swa, "must equal attention.key_length_swa");
    hp->n_rot_swa = hp->n_rot;
    if (!model_read_u32(f, arch, "rope.dimension_count_swa", &hp->n_rot_swa, false)) return -1;
    if (hp->n_rot_swa < 2 || hp->n_rot_swa % 2 || hp->n_rot_swa > hp->head_dim_swa)
        return bad_key(f, arch, "rope.dimension_count_swa", hp->n_rot_swa, "must be even, >= 2 and <= attention.key_length_swa");
    if (hp->n_rot != hp->head_dim_k)   /* rope_freqs.weight has head_dim / 2 factors */
        return bad_key(f, arch, "rope.dimension_count", hp->n_rot, "gemma4's full layers rotate the whole head (proportional rope)");
    hp->rope_base_swa = hp->rope_base;
    snprintf(key, sizeof key, "%s.rope.freq_base_swa", arch);
    if (!gguf_get_f32(f, key, &hp->rope_base_swa) && gguf_find(f, key)) return -1;
    if (!isfinite(hp->rope_base_swa) || hp->rope_base_swa <= 0) {
        anv_set_error("%s: metadata %s = %g is invalid (must be > 0)", f->path, key, (double)hp->rope_base_swa);
        return -1;
    }
    hp->rope_scale_swa = hp->rope_scale;
    if (!model_read_u32(f, arch, "embedding_length_per_layer_input", &hp->n_embd_per_layer, true)) return -1;
    int shared = 0;
    if (!model_read_u32(f, arch, "attention.shared_kv_layers", &shared, false)) return -1;
    if (shared > 0 && shared > hp->n_layer - 2)
        return bad_key(f, arch, "attention.shared_kv_layers", shared, "at least 2 layers must keep their own KV cache");
    hp->n_layer_kv = shared > 0 ? hp->n_layer - shared : 0;
    if (hp->n_expert > 0 &&
        read_layer_array(f, hp, "expert_feed_forward_length", hp->layer_n_ff_exp, &hp->n_ff_exp, false) != 0)
        return -1;
    for (int il = 0; il < hp->n_layer; il++) {
        const int kv = model_layer_n_kv_head(hp, il);
        if (hp->n_head % kv) {
            anv_set_error("%s: metadata %s.attention.head_count = %d is not a multiple of head_count_kv[%d] = %d", f->path,
                          arch, hp->n_head, il, kv);
            return -1;
        }
        const int src = model_layer_kv_source(hp, il);
        if (src != il && (model_layer_is_swa(hp, src) != model_layer_is_swa(hp, il) ||
                          model_layer_n_kv_head(hp, src) != kv)) {
            anv_set_error("%s: layer %d shares the KV cache of layer %d, which is of another kind or shape "
                          "(attention.sliding_window_pattern / head_count_kv vs attention.shared_kv_layers = %d)",
                          f->path, il, src, shared);
            return -1;
        }
    }
    return 0;
}

static be_tensor *place_blk(model *m, backend *be, int il, const char *suffix, int64_t ne0, int64_t ne1, bool required, bool *failed) {
    char name[128];
    snprintf(name, sizeof name, "blk.%d.%s", il, suffix);
    return *failed ? NULL : model_place(m, be, name, ne0, ne1, required, failed);
}

/* The optional one-element F32 blk.il.layer_output_scale.weight as a float (0 = absent). */
static int read_out_scale(model *m, int il, float *out) {
    char name[128];
    snprintf(name, sizeof name, "blk.%d.layer_output_scale.weight", il);
    const gguf_tensor *t = gguf_find_tensor(m->gguf, name);
    *out = 0;
    if (!t) return 0;
    if (t->type != QT_F32 || t->ne[0] != 1 || t->ne[1] != 1 || t->ne[2] != 1 || t->ne[3] != 1) {
        anv_set_error("%s: tensor '%s' must be one F32 value", m->gguf->path, name);
        return -1;
    }
    memcpy(out, t->data, sizeof *out);
    if (!isfinite(*out)) { anv_set_error("%s: tensor '%s' is not a finite number", m->gguf->path, name); return -1; }
    return 0;
}

/* n_expert 2-D weights [rows][cols] at row `row0` of each expert's [rows_total][cols] slab of t
 * (a fused gate_up tensor: gate = rows 0.., up = rows n_ff_exp..). */
static be_tensor **slice_experts(model *m, backend *be, const gguf_tensor *t, int64_t cols, int64_t rows, int64_t rows_total,
                                 int64_t row0, bool *failed) {
    const int ne = m->hp.n_expert;
    const size_t rb = qtype_row_size((qtype)t->type, cols), eb = rb * (size_t)rows_total;
    be_tensor **w = calloc((size_t)ne, sizeof *w);
    if (!w) { anv_set_error("out of memory"); *failed = true; return NULL; }
    for (int e = 0; e < ne && !*failed; e++) {
        w[e] = be->ops->weight_new(be, t->type, cols, rows, (const uint8_t *)t->data + (size_t)e * eb + rb * (size_t)row0);
        if (!w[e]) *failed = true;
    }
    return w;
}

/* blk.il.<suffix>: [cols, rows, n_expert] of a weight type; NULL + error. */
static const gguf_tensor *find_experts(const model *m, int il, const char *suffix, int64_t cols, int64_t rows, bool required) {
    const gguf_file *f = m->gguf;
    char name[128];
    snprintf(name, sizeof name, "blk.%d.%s", il, suffix);
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (!t) {
        if (required) anv_set_error("%s: missing tensor '%s'", f->path, name);
        return NULL;
    }
    const qtype_info *qi = qtype_get(t->type);
    if (t->ne[0] != cols || t->ne[1] != rows || t->ne[2] != m->hp.n_expert || t->ne[3] != 1) {
        anv_set_error("%s: tensor '%s' has shape [%lld, %lld, %lld, %lld], expected [%lld, %lld, %d]", f->path, name,
                      (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3], (long long)cols,
                      (long long)rows, m->hp.n_expert);
        return NULL;
    }
    if (!qi || !qi->is_weight || cols % qi->block_size) {
        anv_set_error("%s: tensor '%s' has a type that is not supported as a weight (%s)", f->path, name, qi ? qi->name : "unknown");
        return NULL;
    }
    return t;
}

/* Layer il's router, its scale, the MoE norms, the experts and their output scales. */
static int gemma4_load_moe(model *m, int il, backend *be) {
    const model_hparams *hp = &m->hp;
    model_layer *L = &m->layers[il];
    const int64_t e = hp->n_embd, ff = hp->layer_n_ff_exp[il], ne = hp->n_expert;
    bool fail = false;
    L->moe_router = place_blk(m, be, il, "ffn_gate_inp.weight", e, ne, true, &fail);
    L->router_scale = place_blk(m, be, il, "ffn_gate_inp.scale", e, 1, true, &fail);
    L->pre_norm_2 = place_blk(m, be, il, "pre_ffw_norm_2.weight", e, 1, true, &fail);
    L->post_norm_1 = place_blk(m, be, il, "post_ffw_norm_1.weight", e, 1, true, &fail);
    L->post_norm_2 = place_blk(m, be, il, "post_ffw_norm_2.weight", e, 1, true, &fail);
    if (fail) return -1;
    char name[128];
    snprintf(name, sizeof name, "blk.%d.ffn_gate_up_exps.weight", il);
    if (gguf_find_tensor(m->gguf, name)) {   /* fused, as the converter writes HF's experts.gate_up_proj */
        const gguf_tensor *gu = find_experts(m, il, "ffn_gate_up_exps.weight", e, 2 * ff, true);
        if (!gu) return -1;
        L->exp_gate = slice_experts(m, be, gu, e, ff, 2 * ff, 0, &fail);
        if (!fail) L->exp_up = slice_experts(m, be, gu, e, ff, 2 * ff, ff, &fail);
        m->weight_bytes += gu->nbytes;
    } else {
        const gguf_tensor *g = find_experts(m, il, "ffn_gate_exps.weight", e, ff, true);
        const gguf_tensor *u = g ? find_experts(m, il, "ffn_up_exps.weight", e, ff, true) : NULL;
        if (!u) return -1;
        L->exp_gate = slice_experts(m, be, g, e, ff, ff, 0, &fail);
        if (!fail) L->exp_up = slice_experts(m, be, u, e, ff, ff, 0, &fail);
        m->weight_bytes += g->nbytes + u->nbytes;
    }
    const gguf_tensor *d = fail ? NULL : find_experts(m, il, "ffn_down_exps.weight", ff, e, true);
    if (!d) return -1;
    L->exp_down = slice_experts(m, be, d, ff, e, e, 0, &fail);
    m->weight_bytes += d->nbytes;
    if (fail) return -1;
    snprintf(name, sizeof name, "blk.%d.ffn_down_exps.scale", il);
    const gguf_tensor *s = gguf_find_tensor(m->gguf, name);
    if (s) {
        if (s->type != QT_F32 || s->ne[0] != ne || s->ne[1] != 1 || s->ne[2] != 1 || s->ne[3] != 1) {
            anv_set_error("%s: tensor '%s' must be F32 [%lld] (one scale per expert)", m->gguf->path, name, (long long)ne);
            return -1;
        }
        if (!(L->exp_scale = malloc((size_t)ne * sizeof(float)))) { anv_set_error("out of memory"); return -1; }
        memcpy(L->exp_scale, s->data, (size_t)ne * sizeof(float));
    }
    return 0;
}

int gemma4_load_layer(model *m, int il, backend *be) {
    const model_hparams *hp = &m->hp;
    model_layer *L = &m->layers[il];
    const int hd = model_layer_head_dim(hp, il), n_ff = model_layer_n_ff(hp, il);
    const int64_t e = hp->n_embd, qd = (int64_t)hp->n_head * hd, kvd = (int64_t)model_layer_n_kv_head(hp, il) * hd;
    const bool own_kv = model_layer_kv_source(hp, il) == il;
    const gguf_file *f = m->gguf;
    bool fail = false;
    L->be = be;
    char name[128];
    snprintf(name, sizeof name, "blk.%d.attn_qkv.weight", il);
    if (gguf_find_tensor(f, name)) { anv_set_error("%s: tensor '%s' is not supported for gemma4 yet (fused QKV)", f->path, name); return -1; }
    snprintf(name, sizeof name, "blk.%d.ffn_gate_inp.weight", il);
    if (hp->n_expert == 0 && gguf_find_tensor(f, name)) {
        anv_set_error("%s: tensor '%s' is there but %s.expert_count is missing or 0", f->path, name, hp->arch_name);
        return -1;
    }
    L->attn_norm = place_blk(m, be, il, "attn_norm.weight", e, 1, true, &fail);
    L->wq = place_blk(m, be, il, "attn_q.weight", e, qd, true, &fail);
    L->q_norm = place_blk(m, be, il, "attn_q_norm.weight", hd, 1, true, &fail);
    if (own_kv) {   /* a layer sharing a cache has no K/V (any in the file are not used) */
        L->wk = place_blk(m, be, il, "attn_k.weight", e, kvd, true, &fail);
        L->wv = place_blk(m, be, il, "attn_v.weight", e, kvd, false, &fail);   /* absent: V = K */
        L->k_norm = place_blk(m, be, il, "attn_k_norm.weight", hd, 1, true, &fail);
    }
    L->wo = place_blk(m, be, il, "attn_output.weight", qd, e, true, &fail);
    L->post_attn_norm = place_blk(m, be, il, "post_attention_norm.weight", e, 1, true, &fail);
    L->ffn_norm = place_blk(m, be, il, "ffn_norm.weight", e, 1, true, &fail);
    L->w_gate = place_blk(m, be, il, "ffn_gate.weight", e, n_ff, true, &fail);
    L->w_up = place_blk(m, be, il, "ffn_up.weight", e, n_ff, true, &fail);
    L->w_down = place_blk(m, be, il, "ffn_down.weight", n_ff, e, true, &fail);
    L->post_ffn_norm = place_blk(m, be, il, "post_ffw_norm.weight", e, 1, true, &fail);
    if (hp->n_embd_per_layer > 0) {
        const int64_t p = hp->n_embd_per_layer;
        L->pl_gate = place_blk(m, be, il, "inp_gate.weight", e, p, true, &fail);
        L->pl_proj = place_blk(m, be, il, "proj.weight", p, e, true, &fail);
        L->pl_post_norm = place_blk(m, be, il, "post_norm.weight", e, 1, true, &fail);
    }
    if (fail) return -1;
    if (hp->n_expert > 0 && gemma4_load_moe(m, il, be) != 0) return -1;
    return read_out_scale(m, il, &L->out_scale);
}

int gemma4_load_globals(model *m, backend *gpu) {
    const model_hparams *hp = &m->hp;
    const gguf_file *f = m->gguf;
    bool fail = false, any_full = false;
    for (int il = 0; il < hp->n_layer; il++) any_full |= !model_layer_is_swa(hp, il);
    if (any_full) {   /* only the full layers rope with it */
        m->rope_freqs = model_place(m, m->cpu, "rope_freqs.weight", hp->head_dim_k / 2, 1, true, &fail);
        if (!fail && gpu) m->rope_freqs_gpu = model_place(m, gpu, "rope_freqs.weight", hp->head_dim_k / 2, 1, true, &fail);
        if (fail) return -1;
    }
    if (hp->n_embd_per_layer <= 0) return 0;
    const int64_t p = hp->n_embd_per_layer, width = p * hp->n_layer;
    const gguf_tensor *t = gguf_find_tensor(f, "per_layer_token_embd.weight");
    if (!t) { anv_set_error("%s: missing tensor 'per_layer_token_embd.weight'", f->path); return -1; }
    const qtype_info *qi = qtype_get(t->type);
    if (t->ne[0] != width || t->ne[1] != hp->n_vocab || t->ne[2] != 1 || t->ne[3] != 1) {
        anv_set_error("%s: tensor 'per_layer_token_embd.weight' has shape [%lld, %lld, %lld, %lld], expected [%lld, %d]",
                      f->path, (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3],
                      (long long)width, hp->n_vocab);
        return -1;
    }
    if (!qi || !qi->can_dequantize || width % qi->block_size) {
        anv_set_error("%s: tensor 'per_layer_token_embd.weight' has a type Anvil cannot look up (%s)", f->path,
                      qi ? qi->name : "unknown");
        return -1;
    }
    gemma4_weights *g = calloc(1, sizeof *g);
    if (!g) { anv_set_error("out of memory"); return -1; }
    m->g4 = g;
    g->ple_data = t->data;
    g->ple_type = t->type;
    g->ple_row_bytes = qtype_row_size((qtype)t->type, width);
    m->weight_bytes += t->nbytes;
    g->ple_proj = model_place(m, m->cpu, "per_layer_model_proj.weight", hp->n_embd, width, true, &fail);
    if (!fail) g->ple_proj_norm = model_place(m, m->cpu, "per_layer_proj_norm.weight", p, 1, true, &fail);
    return fail ? -1 : 0;
}

void gemma4_free_layer(model_layer *L) {
    be_tensor *ts[] = {L->pl_gate, L->pl_proj, L->pl_post_norm, L->router_scale, L->pre_norm_2, L->post_norm_1, L->post_norm_2};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) be_tensor_free(ts[i]);
    L->pl_gate = L->pl_proj = L->pl_post_norm = L->router_scale = L->pre_norm_2 = L->post_norm_1 = L->post_norm_2 = NULL;
    free(L->exp_scale);
    L->exp_scale = NULL;
}

void gemma4_free(model *m) {
    if (!m->g4) return;
    be_tensor_free(m->g4->ple_proj);
    be_tensor_free(m->g4->ple_proj_norm);
    free(m->g4);
    m->g4 = NULL;
}
