/* vision_ollama: Ollama's single-file vision GGUFs, read by the clip loaders of vision.c and
 * vision_qwen.c. Ollama's library ships some vision models as one file holding the text model and
 * the vision tower, metadata under the text architecture and tensors under its converter's names.
 * Per family (a table: the architecture, the marker key, a tensor every such file has, llama.cpp's
 * projector type):
 *
 * gemma3 (convert/convert_gemma3.go): gemma3.vision.{block_count, embedding_length,
 *   feed_forward_length, image_size, patch_size, num_channels, attention.head_count,
 *   attention.layer_norm_epsilon}, gemma3.mm.tokens_per_image; tensors
 *   v.patch_embedding.{weight,bias}   v.position_embedding.weight   v.post_layernorm.{weight,bias}
 *   v.blk.N.layer_norm{1,2}.{weight,bias}   v.blk.N.attn_{q,k,v,output}.{weight,bias}
 *   v.blk.N.mlp.fc{1,2}.{weight,bias}   mm.mm_soft_emb_norm.weight (+1 baked in, as llama.cpp's
 *   converter does)   mm.mm_input_projection.weight ([text n_embd][vision n_embd], as llama.cpp's).
 *   What Ollama's llama.cpp shim (llama/compat/llama-ollama-compat.cpp, handle_gemma3_clip)
 *   supplies: image mean and std 0.5, GELU, projection_dim = the text embedding_length; the
 *   pooling: tokens_per_image (default 256) rows, (patches per side / sqrt(tokens))^2 average.
 *
 * qwen25vl (convert/convert_qwen25vl.go; the shim's handle_qwen25vl_clip): qwen25vl.vision.
 *   {block_count, embedding_length, attention.head_count, num_channels, patch_size,
 *   spatial_merge_size, window_size, attention.layer_norm_epsilon, fullatt_block_indexes, ...};
 *   llama.cpp's tensor names but v.patch_embd_0 / _1.weight (the temporal pair of the Conv3D),
 *   v.merger.ln_q.weight (v.post_ln), v.merger.mlp.{0,2} (mm.0, mm.2). Supplied: no
 *   feed_forward_length (the ffn_up rows), n_wa_pattern = fullatt_block_indexes[0] + 1 (8 without
 *   it), image_size 560, CLIP's mean / std, SiLU, projection_dim = qwen25vl.embedding_length.
 *
 * qwen3vl (convert/convert_qwen3vl.go as it wrote the library's files, before the two-file split;
 *   the shim's handle_qwen3vl_clip): qwen3vl.vision.{block_count, embedding_length,
 *   attention.head_count, num_channels, patch_size, spatial_merge_size, temporal_patch_size,
 *   attention.layer_norm_epsilon, deepstack_visual_indexes, image_mean, image_std, ...}; tensors
 *   v.patch_embed.weight (the Conv3D as [p, p, 2, n_embd * 3], channel-major: both temporal
 *   kernels, summed here as llama.cpp sums its two), v.patch_embed.bias, v.pos_embed.weight,
 *   v.blk.N.norm{1,2}, attn_{q,k,v} apart (llama.cpp's fused attn_qkv), attn_out,
 *   mlp.linear_fc{1,2} (ffn_up / ffn_down), v.merger.{norm, linear_fc1, linear_fc2} (v.post_ln,
 *   mm.0, mm.2), v.deepstack_merger.X.{norm, linear_fc1, linear_fc2} for the block
 *   deepstack_visual_indexes[X] (llama.cpp's v.deepstack.B.{norm, fc1, fc2}). Supplied: no
 *   feed_forward_length (mlp.linear_fc1's rows), image_size = sqrt(positions) * patch, mean /
 *   std 0.5 unless written, GELU, projection_dim = qwen3vl.embedding_length.
 *
 * qwen35 / qwen35moe (convert/convert_qwen3next.go before the two-file split; the shim's
 *   handle_qwen35_like_clip): qwen3vl's tower under {arch}.vision.* and the same tensor names,
 *   no deepstack (the indexes, if written, are ignored as the shim does).
 *
 * gemma4 (convert/convert_gemma4.go; the shim's handle_gemma4_clip): gemma4.vision.{block_count,
 *   embedding_length, attention.head_count, feed_forward_length, patch_size, num_channels,
 *   projector.scale_factor, attention.layer_norm_epsilon}; llama.cpp's tensor names (its own
 *   renames give them), the audio tower a.* beside; Gemma4ClippableLinear's bounds packed in one
 *   F32 tensor v.clamp_data: per block, per linear (q, k, v, out, gate, up, down), input min, max,
 *   output min, max, then the projector's four (llama.cpp's <linear>.input_min ... scalars).
 *   Supplied: image_size 224, GELU quick (no use_gelu), mean 0 and std 1 (the model's own v.std_bias / v.std_scale),
 *   projection_dim = gemma4.embedding_length.
 *
 * vision.c and vision_qwen.c ask for tensors by llama.cpp's names; vision_ollama_tensor translates. */
#include "vision_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "quant.h"

typedef enum { OLLAMA_NONE = 0, OLLAMA_GEMMA3, OLLAMA_QWEN25VL, OLLAMA_QWEN3VL, OLLAMA_QWEN35, OLLAMA_GEMMA4 } ollama_family;

/* a llama.cpp name (a prefix, or the whole name when exact) -> Ollama's */
typedef struct { const char *clip, *ollama; bool exact; } rename_rule;

static const rename_rule gemma3_renames[] = {
    {"v.patch_embd.", "v.patch_embedding.", false},   {"v.position_embd.", "v.position_embedding.", false},
    {"v.post_ln.", "v.post_layernorm.", false},       {"mm.input_projection.", "mm.mm_input_projection.", false},
    {"mm.soft_emb_norm.", "mm.mm_soft_emb_norm.", false},
};
static const rename_rule gemma3_block[] = {   /* inside v.blk.N. */
    {"ln1.", "layer_norm1.", false}, {"ln2.", "layer_norm2.", false}, {"attn_out.", "attn_output.", false},
    {"ffn_up.", "mlp.fc1.", false}, {"ffn_down.", "mlp.fc2.", false},   /* fc1: n_embd -> n_ff (up), fc2: back (down) */
};
static const rename_rule qwen25vl_renames[] = {
    {"v.patch_embd.weight", "v.patch_embd_0.weight", true}, {"v.patch_embd.weight.1", "v.patch_embd_1.weight", true},
    {"v.post_ln.weight", "v.merger.ln_q.weight", true},     {"mm.0.", "v.merger.mlp.0.", false},
    {"mm.2.", "v.merger.mlp.2.", false},
};
static const rename_rule qwen3vl_renames[] = {
    {"v.patch_embd.bias", "v.patch_embed.bias", true}, {"v.position_embd.weight", "v.pos_embed.weight", true},
    {"v.post_ln.", "v.merger.norm.", false},           {"mm.0.", "v.merger.linear_fc1.", false},
    {"mm.2.", "v.merger.linear_fc2.", false},
};
static const rename_rule qwen3vl_block[] = {
    {"ln1.", "norm1.", false}, {"ln2.", "norm2.", false}, {"ffn_up.", "mlp.linear_fc1.", false}, {"ffn_down.", "mlp.linear_fc2.", false},
};

static const struct family {
    ollama_family id;
    const char *arch, *marker_key, *marker_tensor, *what;
    vision_proj_type proj;
    const rename_rule *renames, *block;
    size_t n_renames, n_block;
} families[] = {
    {OLLAMA_GEMMA3, "gemma3", "gemma3.vision.block_count", "v.patch_embedding.weight", "Ollama's single-file gemma3 layout",
     VISION_PROJ_GEMMA3, gemma3_renames, gemma3_block, sizeof gemma3_renames / sizeof gemma3_renames[0],
     sizeof gemma3_block / sizeof gemma3_block[0]},
    {OLLAMA_QWEN25VL, "qwen25vl", "qwen25vl.vision.block_count", "v.patch_embd_0.weight", "Ollama's single-file qwen2.5-vl layout",
     VISION_PROJ_QWEN25VL, qwen25vl_renames, NULL, sizeof qwen25vl_renames / sizeof qwen25vl_renames[0], 0},
    {OLLAMA_QWEN3VL, "qwen3vl", "qwen3vl.vision.block_count", "v.patch_embed.weight", "Ollama's single-file qwen3-vl layout",
     VISION_PROJ_QWEN3VL, qwen3vl_renames, qwen3vl_block, sizeof qwen3vl_renames / sizeof qwen3vl_renames[0],
     sizeof qwen3vl_block / sizeof qwen3vl_block[0]},
    {OLLAMA_QWEN35, "qwen35", "qwen35.vision.block_count", "v.patch_embed.weight", "Ollama's single-file qwen3.5 layout",
     VISION_PROJ_QWEN3VL, qwen3vl_renames, qwen3vl_block, sizeof qwen3vl_renames / sizeof qwen3vl_renames[0],
     sizeof qwen3vl_block / sizeof qwen3vl_block[0]},
    {OLLAMA_QWEN35, "qwen35moe", "qwen35moe.vision.block_count", "v.patch_embed.weight", "Ollama's single-file qwen3.5 layout",
     VISION_PROJ_QWEN3VL, qwen3vl_renames, qwen3vl_block, sizeof qwen3vl_renames / sizeof qwen3vl_renames[0],
     sizeof qwen3vl_block / sizeof qwen3vl_block[0]},
    {OLLAMA_GEMMA4, "gemma4", "gemma4.vision.block_count", "v.patch_embd.weight", "Ollama's single-file gemma4 layout",
     VISION_PROJ_GEMMA4, NULL, NULL, 0, 0},   /* llama.cpp's tensor names already */
};

static const struct family *family_of(const gguf_file *f) {
    gguf_str arch;
    if (!gguf_get_str(f, "general.architecture", &arch)) return NULL;
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        if (gguf_str_eq(arch, families[i].arch) && gguf_find(f, families[i].marker_key)) return &families[i];
    return NULL;
}

bool vision_ollama_detect(const gguf_file *f) { return family_of(f) != NULL; }

vision_proj_type vision_ollama_proj(const gguf_file *f) {
    const struct family *fam = family_of(f);
    return fam ? fam->proj : VISION_PROJ_GEMMA3;
}

/* {arch}.{suffix} as a u32 into *out (kept when absent and not required); false + error. */
static bool get_u32(const gguf_file *f, const struct family *fam, const char *suffix, int *out, bool required) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", fam->arch, suffix);
    uint32_t v;
    if (gguf_get_u32(f, key, &v)) {
        if (v > (1u << 24)) { anv_set_error("%s: metadata %s = %u is out of range", f->path, key, v); return false; }
        *out = (int)v;
        return true;
    }
    if (gguf_find(f, key)) return false;   /* wrong type: the getter said so */
    if (required) { anv_set_error("%s: missing metadata key %s (%s)", f->path, key, fam->what); return false; }
    return true;
}

static bool get_f32(const gguf_file *f, const struct family *fam, const char *suffix, float *out) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", fam->arch, suffix);
    return !gguf_find(f, key) || gguf_get_f32(f, key, out);
}

/* {arch}.{suffix}: an int array (NULL if absent; NULL + error, *bad, if not one of at most max). */
static const gguf_kv *get_ints(const gguf_file *f, const struct family *fam, const char *suffix, uint64_t max, bool *bad) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", fam->arch, suffix);
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv) return NULL;
    if (kv->type != GGUF_ARRAY || (kv->arr_type != GGUF_INT32 && kv->arr_type != GGUF_UINT32) || kv->arr_len > max) {
        anv_set_error("%s: metadata %s must be an array of at most %llu integers", f->path, key, (unsigned long long)max);
        *bad = true;
        return NULL;
    }
    return kv;
}

static int32_t int_at(const gguf_kv *kv, uint64_t i) {
    int32_t x;
    memcpy(&x, (const uint8_t *)kv->arr_data + i * 4, 4);
    return x;
}

/* The rows (ne[1]) of a tensor by Ollama's name, > 0, or -1 + error. */
static int rows_of(const gguf_file *f, const char *name) {
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (!t || t->ne[1] < 1 || t->ne[1] > (1 << 24)) {
        anv_set_error("%s: tensor '%s' is %s", f->path, name, t ? "misshapen" : "missing");
        return -1;
    }
    return (int)t->ne[1];
}

static int gemma3_hparams(vision_model *v, const struct family *fam) {
    const gguf_file *f = v->gguf;
    int tokens = 256;
    if (!get_u32(f, fam, "vision.feed_forward_length", &v->n_ff, true) || !get_u32(f, fam, "vision.image_size", &v->image_size, true) ||
        !get_u32(f, fam, "mm.tokens_per_image", &tokens, false))
        return -1;
    const int pps = v->patch_size > 0 ? v->image_size / v->patch_size : 0, side = (int)lroundf(sqrtf((float)tokens));
    if (tokens < 1 || side * side != tokens || side > pps || pps % side) {
        anv_set_error("%s: gemma3.mm.tokens_per_image = %d does not pool the %d x %d patch grid evenly", f->path, tokens, pps, pps);
        return -1;
    }
    v->proj = VISION_PROJ_GEMMA3;
    v->merge = pps / side;
    for (int c = 0; c < 3; c++) v->mean[c] = v->std[c] = 0.5f;   /* Ollama's imageproc.ImageNetStandardMean / STD */
    v->resize = VISION_RESIZE_BILINEAR;
    memset(v->pad, 0, 3);
    v->n_layer_run = v->n_layer;
    v->gelu_quick = false;
    return 0;
}

static int gemma4_hparams(vision_model *v, const struct family *fam) {
    const gguf_file *f = v->gguf;
    v->merge = 3;   /* the converter's default pooling */
    if (!get_u32(f, fam, "vision.feed_forward_length", &v->n_ff, true) || !get_u32(f, fam, "vision.projector.scale_factor", &v->merge, false))
        return -1;
    v->image_size = 224;   /* the shim's (unused by gemma4v's variable resolution) */
    v->gelu_quick = true;  /* no clip.use_gelu from the shim: clip.cpp's default, GELU quick (as llama.cpp's files) */
    for (int c = 0; c < 3; c++) v->mean[c] = 0.0f, v->std[c] = 1.0f;   /* the model normalizes itself (v.std_bias / v.std_scale) */
    v->resize = VISION_RESIZE_BICUBIC;
    memset(v->pad, 0, 3);
    v->n_layer_run = v->n_layer;
    return 0;
}

int vision_ollama_clamps(const vision_model *v, int il, int k, int n_lin, float out[4], bool *present) {
    const gguf_file *f = v->gguf;
    *present = false;
    const gguf_tensor *t = gguf_find_tensor(f, "v.clamp_data");
    if (!t) return 0;
    const int64_t n = ((int64_t)v->n_layer * n_lin + 1) * 4;
    if (t->type != QT_F32 || t->ne[0] != n || t->ne[1] != 1 || t->ne[2] != 1 || t->ne[3] != 1) {
        anv_set_error("%s: tensor 'v.clamp_data' must be F32 [%lld] ((blocks x %d linears + the projector) x 4 bounds)", f->path,
                      (long long)n, n_lin);
        return -1;
    }
    const float *d = (const float *)t->data + (il < 0 ? (int64_t)v->n_layer * n_lin * 4 : ((int64_t)il * n_lin + k) * 4);
    for (int i = 0; i < 4; i++) {
        if (!isfinite(d[i])) { anv_set_error("%s: tensor 'v.clamp_data' holds a value that is not finite", f->path); return -1; }
        out[i] = d[i];
    }
    *present = true;
    return 0;
}

static int qwen25vl_hparams(vision_model *v, const struct family *fam) {
    const gguf_file *f = v->gguf;
    int merge = 2, window = 112, wa_pattern = 8;
    bool bad = false;
    const gguf_kv *full = get_ints(f, fam, "vision.fullatt_block_indexes", 4096, &bad);
    if (bad || !get_u32(f, fam, "vision.spatial_merge_size", &merge, false) || !get_u32(f, fam, "vision.window_size", &window, false))
        return -1;
    if (full && full->arr_len > 0) wa_pattern = int_at(full, 0) + 1;   /* the shim: fullatt_block_indexes[0] + 1 */
    if ((v->n_ff = rows_of(f, "v.blk.0.ffn_up.weight")) < 0) return -1;
    v->image_size = 560;   /* Qwen2VLVisionModel's (no image_size in the config) */
    const float mean[3] = {0.48145466f, 0.4578275f, 0.40821073f}, std[3] = {0.26862954f, 0.26130258f, 0.27577711f};
    memcpy(v->mean, mean, sizeof mean);
    memcpy(v->std, std, sizeof std);
    return vision_qwen_setup(v, merge, true, wa_pattern, window);
}

static int qwen3vl_hparams(vision_model *v, const struct family *fam) {
    const gguf_file *f = v->gguf;
    int merge = 2, temporal = 2;
    if (!get_u32(f, fam, "vision.spatial_merge_size", &merge, false) || !get_u32(f, fam, "vision.temporal_patch_size", &temporal, false))
        return -1;
    if (temporal != 2) {
        anv_set_error("%s: %s.vision.temporal_patch_size = %d is not supported (2)", f->path, fam->arch, temporal);
        return -1;
    }
    if ((v->n_ff = rows_of(f, "v.blk.0.mlp.linear_fc1.weight")) < 0) return -1;
    const gguf_tensor *pe = gguf_find_tensor(f, "v.pos_embed.weight");
    const int side = pe ? (int)lround(sqrt((double)pe->ne[1])) : 0;
    if (!pe || side < 1 || (int64_t)side * side != pe->ne[1]) {
        anv_set_error("%s: tensor 'v.pos_embed.weight' is %s (a square grid of positions)", f->path, pe ? "misshapen" : "missing");
        return -1;
    }
    v->image_size = side * v->patch_size;
    for (int c = 0; c < 3; c++) v->mean[c] = v->std[c] = 0.5f;
    for (int k = 0; k < 2; k++) {
        char key[128];
        snprintf(key, sizeof key, "%s.vision.%s", fam->arch, k ? "image_std" : "image_mean");
        const gguf_kv *kv = gguf_find(f, key);
        if (!kv || (kv->type == GGUF_ARRAY && kv->arr_len == 0)) continue;   /* the converter writes [] when the config had none */
        if (kv->type != GGUF_ARRAY || kv->arr_type != GGUF_FLOAT32 || kv->arr_len != 3) {
            anv_set_error("%s: metadata %s must be an array of 3 floats", f->path, key);
            return -1;
        }
        memcpy(k ? v->std : v->mean, kv->arr_data, 3 * sizeof(float));
    }
    return vision_qwen_setup(v, merge, true, 0, 0);
}

int vision_ollama_hparams(vision_model *v) {
    const gguf_file *f = v->gguf;
    const struct family *fam = family_of(f);
    if (!fam) { anv_set_error("%s: not one of Ollama's single-file vision layouts", f->path); return -1; }
    if (!gguf_find_tensor(f, fam->marker_tensor)) {   /* its vision metadata without the tower */
        anv_set_error("%s: tensor '%s' is missing (%s)", f->path, fam->marker_tensor, fam->what);
        return -1;
    }
    int channels = 3;
    v->eps = 1e-6f;   /* Ollama's converters: cmp.Or(layer_norm_eps, 1e-6) */
    v->proj = fam->proj;
    if (!get_u32(f, fam, "vision.block_count", &v->n_layer, true) || !get_u32(f, fam, "vision.embedding_length", &v->n_embd, true) ||
        !get_u32(f, fam, "vision.attention.head_count", &v->n_head, true) || !get_u32(f, fam, "vision.patch_size", &v->patch_size, true) ||
        !get_u32(f, fam, "vision.num_channels", &channels, false) || !get_u32(f, fam, "embedding_length", &v->proj_dim, true) ||
        !get_f32(f, fam, "vision.attention.layer_norm_epsilon", &v->eps))
        return -1;
    if (channels != 3) {
        anv_set_error("%s: %s.vision.num_channels = %d is not supported (RGB: 3)", f->path, fam->arch, channels);
        return -1;
    }
    switch (fam->id) {
    case OLLAMA_QWEN25VL: return qwen25vl_hparams(v, fam);
    case OLLAMA_QWEN3VL:
    case OLLAMA_QWEN35: return qwen3vl_hparams(v, fam);
    case OLLAMA_GEMMA4: return gemma4_hparams(v, fam);
    default: return gemma3_hparams(v, fam);
    }
}

int vision_ollama_deepstack(const vision_model *v, int *ds_of_layer, int *n_deepstack) {
    const gguf_file *f = v->gguf;
    const struct family *fam = family_of(f);
    *n_deepstack = 0;
    if (!fam || fam->id != OLLAMA_QWEN3VL) return 0;   /* qwen3.5: none (the shim's all-false mask) */
    bool bad = false;
    const gguf_kv *ds = get_ints(f, fam, "vision.deepstack_visual_indexes", (uint64_t)v->n_layer, &bad);
    if (bad) return -1;
    for (uint64_t i = 0; ds && i < ds->arr_len; i++) {
        const int32_t b = int_at(ds, i);
        if (b < 0 || b >= v->n_layer || ds_of_layer[b] >= 0) {
            anv_set_error("%s: qwen3vl.vision.deepstack_visual_indexes[%llu] = %d is not a distinct block below %d", f->path,
                          (unsigned long long)i, (int)b, v->n_layer);
            return -1;
        }
        ds_of_layer[b] = (*n_deepstack)++;
    }
    /* the rows are used in block order (llama.cpp's v.deepstack.B): the indexes must be increasing */
    for (uint64_t i = 1; ds && i < ds->arr_len; i++)
        if (int_at(ds, i) <= int_at(ds, i - 1)) {
            anv_set_error("%s: qwen3vl.vision.deepstack_visual_indexes must be increasing", f->path);
            return -1;
        }
    return 0;
}

float *vision_ollama_qwen3vl_patch(const vision_model *v) {
    const gguf_file *f = v->gguf;
    const int64_t p = v->patch_size, e = v->n_embd, hw = p * p;
    const gguf_tensor *t = gguf_find_tensor(f, "v.patch_embed.weight");
    if (!t || t->ne[0] != p || t->ne[1] != p || t->ne[2] != 2 || t->ne[3] != 3 * e ||
        (t->type != QT_F32 && t->type != QT_F16 && t->type != QT_BF16)) {
        anv_set_error("%s: tensor 'v.patch_embed.weight' is %s, expected [%lld, %lld, 2, %lld] F32/F16/BF16", f->path,
                      t ? "misshapen" : "missing", (long long)p, (long long)p, (long long)(3 * e));
        return NULL;
    }
    const int64_t n = hw * 2 * 3 * e;
    float *all = malloc((size_t)n * sizeof(float)), *out = malloc((size_t)(hw * 3 * e) * sizeof(float));
    if (!all || !out) { free(all); free(out); anv_set_error("out of memory"); return NULL; }
    dequantize_row((qtype)t->type, t->data, all, n);
    /* [out * 3 + in][t][y][x] -> the sum over t at [out][in][y][x] (llama.cpp's two kernels over the same frame) */
    for (int64_t oi = 0; oi < 3 * e; oi++)
        for (int64_t i = 0; i < hw; i++) out[oi * hw + i] = all[(oi * 2) * hw + i] + all[(oi * 2 + 1) * hw + i];
    free(all);
    return out;
}

static const char *apply(const rename_rule *r, size_t n, const char *name, const char *prefix, char *buf, size_t cap) {
    for (size_t i = 0; i < n; i++) {
        const size_t len = strlen(r[i].clip);
        if (r[i].exact ? !strcmp(name, r[i].clip) : !strncmp(name, r[i].clip, len)) {
            snprintf(buf, cap, "%s%s%s", prefix, r[i].ollama, r[i].exact ? "" : name + len);
            return buf;
        }
    }
    return NULL;
}

const char *vision_ollama_name(const gguf_file *f, const char *name, char *buf, size_t cap) {
    const struct family *fam = family_of(f);
    if (!fam || !buf || cap == 0) return name;
    const char *r = apply(fam->renames, fam->n_renames, name, "", buf, cap);
    if (r) return r;
    int il = -1, used = 0;
    char prefix[64];
    if (fam->block && sscanf(name, "v.blk.%d.%n", &il, &used) == 1 && used > 0) {
        snprintf(prefix, sizeof prefix, "v.blk.%d.", il);
        if ((r = apply(fam->block, fam->n_block, name + used, prefix, buf, cap))) return r;
    }
    if (fam->id == OLLAMA_QWEN3VL && sscanf(name, "v.deepstack.%d.%n", &il, &used) == 1 && used > 0) {
        /* llama.cpp's block index -> the position X of the block in deepstack_visual_indexes */
        bool bad = false;
        const gguf_kv *ds = get_ints(f, fam, "vision.deepstack_visual_indexes", 4096, &bad);
        static const rename_rule leaves[] = {{"norm.", "norm.", false}, {"fc1.", "linear_fc1.", false}, {"fc2.", "linear_fc2.", false}};
        for (uint64_t i = 0; ds && i < ds->arr_len; i++)
            if (int_at(ds, i) == il) {
                snprintf(prefix, sizeof prefix, "v.deepstack_merger.%llu.", (unsigned long long)i);
                if ((r = apply(leaves, sizeof leaves / sizeof leaves[0], name + used, prefix, buf, cap))) return r;
            }
    }
    return name;   /* the same name (attn_q, ...) or one Ollama's layout has not */
}

const gguf_tensor *vision_ollama_tensor(const gguf_file *f, const char *name) {
    char buf[160];
    return gguf_find_tensor(f, vision_ollama_name(f, name, buf, sizeof buf));
}

const gguf_tensor *vision_tensor(const vision_model *v, const char *name) {
    return v->ollama ? vision_ollama_tensor(v->gguf, name) : gguf_find_tensor(v->gguf, name);
}

const char *vision_tensor_name(const vision_model *v, const char *name, char *buf, size_t cap) {
    return v->ollama ? vision_ollama_name(v->gguf, name, buf, cap) : name;
}
