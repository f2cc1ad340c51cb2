/* vision_ollama: Ollama's single-file vision GGUFs, read by the clip loader of vision.c. Ollama's
 * library ships gemma3 as one file holding the text model and the vision tower: metadata under
 * the text architecture (gemma3.vision.block_count, .embedding_length, .feed_forward_length,
 * .image_size, .patch_size, .num_channels, .attention.head_count,
 * .attention.layer_norm_epsilon, gemma3.mm.tokens_per_image) and the tensors under Ollama's
 * converter names (convert/convert_gemma3.go's replacements of the Hugging Face names):
 *   v.patch_embedding.{weight,bias}     v.position_embedding.weight   v.post_layernorm.{weight,bias}
 *   v.blk.N.layer_norm{1,2}.{weight,bias}   v.blk.N.attn_{q,k,v,output}.{weight,bias}
 *   v.blk.N.mlp.fc{1,2}.{weight,bias}   mm.mm_soft_emb_norm.weight (+1 baked in, as llama.cpp's
 *   converter does)   mm.mm_input_projection.weight ([text n_embd][vision n_embd], as llama.cpp's)
 * What Ollama's llama.cpp shim (llama/compat/llama-ollama-compat.cpp, handle_gemma3_clip) supplies
 * for llama.cpp's clip loader is supplied here too: image mean and std 0.5, GELU, projection_dim =
 * the text model's embedding_length. The pooling: tokens_per_image (default 256) rows, i.e.
 * (patches per side / sqrt(tokens_per_image))^2 average pooling, llama.cpp's default 4 for 896 / 14.
 * vision.c asks for tensors by llama.cpp's names; vision_ollama_tensor translates them. */
#include "vision_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "error.h"

bool vision_ollama_detect(const gguf_file *f) {
    gguf_str arch;
    return gguf_get_str(f, "general.architecture", &arch) && gguf_str_eq(arch, "gemma3") &&
           gguf_find(f, "gemma3.vision.block_count") && gguf_find_tensor(f, "v.patch_embedding.weight");
}

static bool get_u32(const gguf_file *f, const char *key, int *out, bool required) {
    uint32_t v;
    if (gguf_get_u32(f, key, &v)) {
        if (v > (1u << 24)) { anv_set_error("%s: metadata %s = %u is out of range", f->path, key, v); return false; }
        *out = (int)v;
        return true;
    }
    if (gguf_find(f, key)) return false;   /* wrong type: the getter said so */
    if (required) { anv_set_error("%s: missing metadata key %s (Ollama's single-file gemma3 layout)", f->path, key); return false; }
    return true;
}

int vision_ollama_hparams(vision_model *v) {
    const gguf_file *f = v->gguf;
    int channels = 3, tokens = 256;
    v->proj = VISION_PROJ_GEMMA3;
    v->eps = 1e-6f;   /* Ollama's converter: cmp.Or(layer_norm_eps, 1e-6) */
    if (!get_u32(f, "gemma3.vision.block_count", &v->n_layer, true) ||
        !get_u32(f, "gemma3.vision.embedding_length", &v->n_embd, true) ||
        !get_u32(f, "gemma3.vision.feed_forward_length", &v->n_ff, true) ||
        !get_u32(f, "gemma3.vision.attention.head_count", &v->n_head, true) ||
        !get_u32(f, "gemma3.vision.image_size", &v->image_size, true) ||
        !get_u32(f, "gemma3.vision.patch_size", &v->patch_size, true) ||
        !get_u32(f, "gemma3.vision.num_channels", &channels, false) ||
        !get_u32(f, "gemma3.embedding_length", &v->proj_dim, true) ||
        !get_u32(f, "gemma3.mm.tokens_per_image", &tokens, false))
        return -1;
    if (gguf_find(f, "gemma3.vision.attention.layer_norm_epsilon") &&
        !gguf_get_f32(f, "gemma3.vision.attention.layer_norm_epsilon", &v->eps))
        return -1;
    if (channels != 3) {
        anv_set_error("%s: gemma3.vision.num_channels = %d is not supported (RGB: 3)", f->path, channels);
        return -1;
    }
    const int pps = v->patch_size > 0 ? v->image_size / v->patch_size : 0, side = (int)lroundf(sqrtf((float)tokens));
    if (tokens < 1 || side * side != tokens || side > pps || pps % side) {
        anv_set_error("%s: gemma3.mm.tokens_per_image = %d does not pool the %d x %d patch grid evenly", f->path, tokens, pps, pps);
        return -1;
    }
    v->merge = pps / side;
    for (int c = 0; c < 3; c++) v->mean[c] = v->std[c] = 0.5f;   /* Ollama's imageproc.ImageNetStandardMean / STD */
    v->resize = VISION_RESIZE_BILINEAR;
    memset(v->pad, 0, 3);
    v->n_layer_run = v->n_layer;
    v->gelu_quick = false;
    return 0;
}

/* llama.cpp's name (prefix, then the rest of the name kept) -> Ollama's. */
static const struct { const char *clip, *ollama; } renames[] = {
    {"v.patch_embd.", "v.patch_embedding."},
    {"v.position_embd.", "v.position_embedding."},
    {"v.post_ln.", "v.post_layernorm."},
    {"mm.input_projection.", "mm.mm_input_projection."},
    {"mm.soft_emb_norm.", "mm.mm_soft_emb_norm."},
};
/* inside v.blk.N. */
static const struct { const char *clip, *ollama; } block_renames[] = {
    {"ln1.", "layer_norm1."}, {"ln2.", "layer_norm2."}, {"attn_out.", "attn_output."},
    {"ffn_up.", "mlp.fc1."}, {"ffn_down.", "mlp.fc2."},   /* fc1: n_embd -> n_ff (up), fc2: back (down) */
};

const char *vision_ollama_name(const char *name, char *buf, size_t cap) {
    for (size_t i = 0; i < sizeof renames / sizeof renames[0]; i++) {
        const size_t n = strlen(renames[i].clip);
        if (!strncmp(name, renames[i].clip, n)) {
            snprintf(buf, cap, "%s%s", renames[i].ollama, name + n);
            return buf;
        }
    }
    int il = -1, used = 0;
    if (sscanf(name, "v.blk.%d.%n", &il, &used) == 1 && used > 0) {
        for (size_t i = 0; i < sizeof block_renames / sizeof block_renames[0]; i++) {
            const size_t n = strlen(block_renames[i].clip);
            if (!strncmp(name + used, block_renames[i].clip, n)) {
                snprintf(buf, cap, "v.blk.%d.%s%s", il, block_renames[i].ollama, name + used + n);
                return buf;
            }
        }
    }
    return name;   /* the same name (attn_q, ...) or one Ollama's layout has not */
}

const gguf_tensor *vision_ollama_tensor(const gguf_file *f, const char *name) {
    char buf[160];
    return gguf_find_tensor(f, vision_ollama_name(name, buf, sizeof buf));
}
