/* model: reads a GGUF model's hyperparameters and weights for the supported families
 * (llama, mistral3, qwen2, qwen3, qwen35: qwen35.c, gemma3, gemma4: gemma4.c, the MoE families), checks every tensor's shape, and places each layer's
 * weights on a backend (the last n_gpu_layers on the GPU backend, the rest on the CPU).
 * The forward pass that uses them is forward.c. */
#include "model.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encoder.h"
#include "error.h"
#include "gemma4.h"
#include "gptoss.h"
#include "model_ollama.h"
#include "moe.h"
#include "quant.h"
#include "qwen35.h"
#include "yarn.h"

typedef struct {
    const char *name;
    model_arch arch;
    be_rope_mode rope_mode;
} arch_desc;

static const arch_desc ARCHS[] = {
    {"llama", ARCH_LLAMA, BE_ROPE_NORMAL},
    {"mistral3", ARCH_LLAMA, BE_ROPE_NORMAL},     /* Ministral 3: the llama body + mistral3_read_hparams */
    {"qwen2", ARCH_QWEN2, BE_ROPE_NEOX},
    {"qwen3", ARCH_QWEN3, BE_ROPE_NEOX},
    {"qwen3vl", ARCH_QWEN3, BE_ROPE_NEOX},       /* qwen3 + IMROPE + deepstack (qwenvl_text.c) */
    {"qwen2vl", ARCH_QWEN2, BE_ROPE_NEOX},       /* qwen2 + MROPE (qwenvl_text.c) */
    {"qwen25vl", ARCH_QWEN2, BE_ROPE_NEOX},      /* Ollama's qwen2.5-vl: qwen2vl's body (model_ollama.c) */
    {"gemma3", ARCH_GEMMA3, BE_ROPE_NEOX},
    {"gemma-embedding", ARCH_GEMMA3, BE_ROPE_NEOX},   /* the gemma3 body, bidirectional, pooled */
    {"qwen2moe", ARCH_QWEN2MOE, BE_ROPE_NEOX},
    {"qwen3moe", ARCH_QWEN3MOE, BE_ROPE_NEOX},
    {"gpt-oss", ARCH_GPTOSS, BE_ROPE_NEOX},      /* gptoss.c */
    {"qwen35", ARCH_QWEN35, BE_ROPE_NEOX},       /* qwen35.c: IMROPE, NEOX for text positions */
    {"qwen35moe", ARCH_QWEN35, BE_ROPE_NEOX},    /* the same body, MoE feed-forward (moe.c) */
    {"gemma4", ARCH_GEMMA4, BE_ROPE_NEOX},       /* gemma4.c */
};

bool model_read_u32(const gguf_file *f, const char *arch, const char *suffix, int *out, bool required) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    uint32_t v;
    if (gguf_get_u32(f, key, &v)) {
        if (v > (1u << 30)) { anv_set_error("%s: metadata %s = %u is out of range", f->path, key, v); return false; }
        *out = (int)v;
        return true;
    }
    if (gguf_find(f, key)) return false; /* wrong type: error already set */
    if (required) { anv_set_error("%s: missing metadata key %s", f->path, key); return false; }
    return true;
}

static bool read_f32(const gguf_file *f, const char *arch, const char *suffix, float *out) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    if (gguf_get_f32(f, key, out)) return true;
    return gguf_find(f, key) == NULL; /* absent is fine (default kept), wrong type is not */
}

/* ---- hyperparameter rules: every value the forward pass divides by, loops over or feeds
 * to exp/pow must be checked here, one line naming the key and the value ---- */

static bool key_present(const gguf_file *f, const char *arch, const char *suffix) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return gguf_find(f, key) != NULL;
}

static bool bad_int(const gguf_file *f, const char *arch, const char *suffix, int v, const char *rule) {
    anv_set_error("%s: metadata %s.%s = %d is invalid (%s)", f->path, arch, suffix, v, rule);
    return false;
}

static bool bad_f32(const gguf_file *f, const char *arch, const char *suffix, float v, const char *rule) {
    anv_set_error("%s: metadata %s.%s = %g is invalid (%s)", f->path, arch, suffix, (double)v, rule);
    return false;
}

/* A value that must be >= 1. */
static bool check_pos(const gguf_file *f, const char *arch, const char *suffix, int v) {
    return v >= 1 || bad_int(f, arch, suffix, v, "must be >= 1");
}

/* A float that must be finite and > 0 (min_zero: >= 0). */
static bool check_f32(const gguf_file *f, const char *arch, const char *suffix, float v, bool min_zero) {
    if (!isfinite(v)) return bad_f32(f, arch, suffix, v, "must be a finite number");
    if (min_zero ? v < 0 : v <= 0) return bad_f32(f, arch, suffix, v, min_zero ? "must be >= 0" : "must be > 0");
    return true;
}

static bool check_counts(const gguf_file *f, const char *arch, const model_hparams *hp, bool has_key_length) {
    if (!check_pos(f, arch, "context_length", hp->n_ctx_train) || !check_pos(f, arch, "embedding_length", hp->n_embd) ||
        !check_pos(f, arch, "block_count", hp->n_layer) || !check_pos(f, arch, "feed_forward_length", hp->n_ff) ||
        !check_pos(f, arch, "attention.head_count", hp->n_head) ||
        !check_pos(f, arch, "attention.head_count_kv", hp->n_kv_head))
        return false;
    if (hp->n_head % hp->n_kv_head != 0) {
        anv_set_error("%s: metadata %s.attention.head_count = %d is not a multiple of %s.attention.head_count_kv = %d",
                      f->path, arch, hp->n_head, arch, hp->n_kv_head);
        return false;
    }
    if (!has_key_length && hp->n_embd % hp->n_head != 0) {
        anv_set_error("%s: metadata %s.embedding_length = %d is not a multiple of %s.attention.head_count = %d "
                      "(and there is no %s.attention.key_length)", f->path, arch, hp->n_embd, arch, hp->n_head, arch);
        return false;
    }
    return true;
}

/* mistral3 (llama.cpp's src/models/mistral3.cpp): the optional llama 4-style query temperature
 * attention.temperature_scale (Ollama's files: rope.scaling_beta; 0 = off), whose floor scale is
 * the YaRN original context (rope.scaling.original_context_length, else context_length). */
static int mistral3_read_hparams(const gguf_file *f, model_hparams *hp) {
    const char *arch = hp->arch_name;
    /* Ollama's converter writes the same value as rope.scaling_beta */
    const char *temp_key = key_present(f, arch, "attention.temperature_scale") ? "attention.temperature_scale"
                                                                                : "rope.scaling_beta";
    if (!read_f32(f, arch, temp_key, &hp->attn_temp_scale)) return -1;
    if (!check_f32(f, arch, temp_key, hp->attn_temp_scale, true)) return -1;
    hp->attn_temp_floor = hp->n_ctx_train;
    if (!model_read_u32(f, arch, "rope.scaling.original_context_length", &hp->attn_temp_floor, false)) return -1;
    if (hp->attn_temp_scale != 0.0f && hp->attn_temp_floor < 1) {
        bad_int(f, arch, "rope.scaling.original_context_length", hp->attn_temp_floor,
                "the attention temperature's floor scale must be >= 1");
        return -1;
    }
    return 0;
}

static int load_hparams(const gguf_file *f, model_hparams *hp) {
    memset(hp, 0, sizeof *hp);
    gguf_str a;
    if (!gguf_get_str(f, "general.architecture", &a)) {
        anv_set_error("%s: missing general.architecture", f->path);
        return -1;
    }
    const arch_desc *ad = NULL;
    for (size_t i = 0; i < sizeof ARCHS / sizeof ARCHS[0]; i++)
        if (gguf_str_eq(a, ARCHS[i].name)) ad = &ARCHS[i];
    if (!ad) {
        anv_set_error("%s: unsupported architecture '%.*s' (supported: llama, mistral3, qwen2, qwen3, qwen2vl, qwen25vl, qwen3vl, qwen35, qwen35moe, gemma3, gemma4, qwen2moe, qwen3moe, gpt-oss, gemma-embedding, bert, nomic-bert)",
                      f->path, (int)(a.len > 64 ? 64 : a.len), a.ptr);
        return -1;
    }
    const char *arch = ad->name;
    hp->arch = ad->arch;
    hp->arch_name = ad->name;
    hp->rope_mode = ad->rope_mode;
    hp->n_ctx_train = 4096;
    if (!model_read_u32(f, arch, "context_length", &hp->n_ctx_train, false)) return -1;
    if (!model_read_u32(f, arch, "embedding_length", &hp->n_embd, true)) return -1;
    if (!model_read_u32(f, arch, "block_count", &hp->n_layer, true)) return -1;
    if (hp->arch == ARCH_GEMMA4) {   /* feed_forward_length and head_count_kv may be per-layer arrays */
        if (!model_read_u32(f, arch, "attention.head_count", &hp->n_head, true)) return -1;
        if (!check_pos(f, arch, "attention.head_count", hp->n_head) || gemma4_read_layer_arrays(f, hp) != 0) return -1;
    } else {
        if (!model_read_u32(f, arch, "feed_forward_length", &hp->n_ff, true)) return -1;
        if (!model_read_u32(f, arch, "attention.head_count", &hp->n_head, true)) return -1;
        hp->n_kv_head = hp->n_head;
        const int kv_array = model_ollama_kv_heads(f, arch, &hp->n_kv_head);   /* Ollama's qwen35: one per layer */
        if (kv_array < 0 || (!kv_array && !model_read_u32(f, arch, "attention.head_count_kv", &hp->n_kv_head, false))) return -1;
    }
    bool has_key_length = key_present(f, arch, "attention.key_length");
    if (!check_counts(f, arch, hp, has_key_length)) return -1;
    hp->head_dim_k = hp->n_embd / hp->n_head;
    if (!model_read_u32(f, arch, "attention.key_length", &hp->head_dim_k, false)) return -1;
    hp->head_dim_v = hp->head_dim_k;
    if (!model_read_u32(f, arch, "attention.value_length", &hp->head_dim_v, false)) return -1;
    if (hp->head_dim_k <= 0 || hp->head_dim_k % 2) {
        bad_int(f, arch, "attention.key_length", hp->head_dim_k, "the head dimension must be even and >= 2");
        return -1;
    }
    if (hp->head_dim_k != hp->head_dim_v) {
        anv_set_error("%s: metadata %s.attention.value_length = %d differs from the key length %d (unsupported)",
                      f->path, arch, hp->head_dim_v, hp->head_dim_k);
        return -1;
    }
    /* Ollama's own gemma3 files leave these out: Ollama's defaults (model_ollama.c) */
    const bool ollama_gemma3 = hp->arch == ARCH_GEMMA3 && model_ollama_gemma3(f);
    hp->norm_eps = ollama_gemma3 ? 1e-6f : 1e-5f;
    if (!read_f32(f, arch, "attention.layer_norm_rms_epsilon", &hp->norm_eps)) return -1;
    if (!check_f32(f, arch, "attention.layer_norm_rms_epsilon", hp->norm_eps, false)) return -1;
    hp->rope_base = ollama_gemma3 ? 1000000.0f : 10000.0f;
    if (ollama_gemma3 && !read_f32(f, arch, "rope.global.freq_base", &hp->rope_base)) return -1;
    if (!read_f32(f, arch, "rope.freq_base", &hp->rope_base)) return -1;
    if (!check_f32(f, arch, "rope.freq_base", hp->rope_base, false)) return -1;
    hp->rope_scale = hp->rope_scale_swa = 1.0f;
    char *scaling = NULL;
    {
        char key[128];
        snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
        scaling = gguf_get_str_dup(f, key);
    }
    float factor = 0;
    bool linear = scaling && strcmp(scaling, "linear") == 0;
    if (!read_f32(f, arch, "rope.scaling.factor", &factor) ||
        !check_f32(f, arch, "rope.scaling.factor", factor, true)) { /* 0 (or absent) = no scaling, as llama.cpp */
        free(scaling);
        return -1;
    }
    if (ollama_gemma3 && !scaling && factor == 0 && hp->n_ctx_train >= 131072) hp->rope_scale = 1.0f / 8.0f;   /* 4B/12B/27B */
    if (linear && factor > 0) hp->rope_scale = 1.0f / factor;
    else if (scaling && strcmp(scaling, "yarn") == 0) {
        if (yarn_read_hparams(f, arch, factor, strcmp(arch, "mistral3") == 0, hp) != 0) { free(scaling); return -1; }
    } else if (scaling && strcmp(scaling, "none") != 0) {
        anv_set_error("%s: unsupported rope scaling type '%s'", f->path, scaling);
        free(scaling);
        return -1;
    }
    free(scaling);
    hp->n_rot = hp->head_dim_k;
    if (!model_read_u32(f, arch, "rope.dimension_count", &hp->n_rot, false)) return -1;
    if (hp->n_rot <= 0 || hp->n_rot > hp->head_dim_k || hp->n_rot % 2) {
        anv_set_error("%s: metadata %s.rope.dimension_count = %d is invalid (must be even, >= 2 and <= the head dimension %d)",
                      f->path, arch, hp->n_rot, hp->head_dim_k);
        return -1;
    }
    hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim_k);
    if (!read_f32(f, arch, "final_logit_softcapping", &hp->final_softcap)) return -1;
    if (!check_f32(f, arch, "final_logit_softcapping", hp->final_softcap, true)) return -1; /* 0 = off */
    if (hp->arch == ARCH_GEMMA3) {   /* llama.cpp's src/models/gemma3.cpp */
        hp->embd_scale = true;
        /* The converter writes no sliding_window for an all-global model (HF pattern 1). */
        if (!model_read_u32(f, arch, "attention.sliding_window", &hp->swa_window, false)) return -1;
        if (hp->swa_window > 0) {
            if (model_read_swa_pattern(f, hp, 6) != 0) return -1;
            hp->rope_base_swa = 10000.0f; /* local layers: base 10k unless the file says, no scaling */
            if (ollama_gemma3 && !read_f32(f, arch, "rope.local.freq_base", &hp->rope_base_swa)) return -1;
            if (!read_f32(f, arch, "rope.freq_base_swa", &hp->rope_base_swa)) return -1;
            if (!check_f32(f, arch, "rope.freq_base_swa", hp->rope_base_swa, false)) return -1;
        }
        /* Gemma 3 27B (62 layers) scales queries by n_embd / n_head, the others by the head
         * size (gemma_pytorch's config; llama.cpp decides by the layer count); an explicit
         * query_pre_attn_scalar (Gemma 2-style files) wins. */
        if (hp->n_layer == 62) hp->attn_scale = 1.0f / sqrtf((float)hp->n_embd / (float)hp->n_head);
        float qpas = 0;
        if (!read_f32(f, arch, "attention.query_pre_attn_scalar", &qpas)) return -1;
        if (key_present(f, arch, "attention.query_pre_attn_scalar")) {
            if (!check_f32(f, arch, "attention.query_pre_attn_scalar", qpas, false)) return -1;
            hp->attn_scale = 1.0f / sqrtf(qpas);
        }
    }
    if (strcmp(arch, "gemma-embedding") == 0) {   /* llama.cpp's gemma-embedding hparams */
        hp->noncausal = hp->embedding_only = true;
        hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim_k);
        /* the rest as gemma3 above, but the sliding window is required */
        if (!model_read_u32(f, arch, "attention.sliding_window", &hp->swa_window, true)) return -1;
        if (!check_pos(f, arch, "attention.sliding_window", hp->swa_window)) return -1;
    }
    {
        int pool = MODEL_POOL_MEAN;
        if (!model_read_u32(f, arch, "pooling_type", &pool, false)) return -1;
        if (pool != MODEL_POOL_MEAN && pool != MODEL_POOL_CLS && pool != MODEL_POOL_LAST) {
            bad_int(f, arch, "pooling_type", pool, "mean 1, cls 2 or last 3");
            return -1;
        }
        hp->pooling = (model_pooling)pool;
    }
    if (strcmp(arch, "mistral3") == 0 && mistral3_read_hparams(f, hp) != 0) return -1;
    if (moe_read_hparams(f, arch, hp) != 0) return -1;
    if (hp->arch == ARCH_GPTOSS && gptoss_read_hparams(f, hp) != 0) return -1;
    if (hp->arch == ARCH_QWEN35 && qwen35_read_hparams(f, hp) != 0) return -1;
    if ((!strcmp(arch, "qwen3vl") || !strcmp(arch, "qwen2vl") || !strcmp(arch, "qwen25vl")) && qwenvl_read_hparams(f, arch, hp) != 0) return -1;
    if (hp->arch == ARCH_GEMMA4 && gemma4_read_hparams(f, hp) != 0) return -1;
    return 0;
}

bool model_layer_is_swa(const model_hparams *hp, int il) {
    if (hp->swa_by_mask) return il >= 0 && il < MODEL_MAX_LAYERS && (hp->swa_mask[il / 64] >> (il % 64) & 1);
    return hp->swa_pattern > 0 && il % hp->swa_pattern < hp->swa_pattern - 1;
}

int model_read_swa_pattern(const gguf_file *f, model_hparams *hp, int default_pattern) {
    char key[128];
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", hp->arch_name);
    const gguf_kv *kv = gguf_find(f, key);
    hp->swa_pattern = default_pattern;
    hp->swa_by_mask = false;
    if (!kv) return 0;
    if (kv->type != GGUF_ARRAY) {
        uint32_t v;
        if (!gguf_get_u32(f, key, &v)) return -1;
        if (v > (1u << 20)) { anv_set_error("%s: metadata %s = %u is out of range", f->path, key, v); return -1; }
        hp->swa_pattern = (int)v;   /* 0: every layer slides, as llama.cpp's set_swa_pattern(0) */
        if (v == 0) {
            hp->swa_by_mask = true;
            memset(hp->swa_mask, 0xff, sizeof hp->swa_mask);
        }
        return 0;
    }
    /* one flag per layer: bool, uint32 or int32 elements (llama.cpp's get_arr), at most
     * MODEL_MAX_LAYERS; layers past the array's end do not slide */
    const size_t esz = kv->arr_type == GGUF_BOOL ? 1 : kv->arr_type == GGUF_UINT32 || kv->arr_type == GGUF_INT32 ? 4 : 0;
    if (!esz) { anv_set_error("%s: metadata %s must be an integer or an array of bools", f->path, key); return -1; }
    if (kv->arr_len > MODEL_MAX_LAYERS) {
        anv_set_error("%s: metadata %s has %llu entries (at most %d)", f->path, key, (unsigned long long)kv->arr_len, MODEL_MAX_LAYERS);
        return -1;
    }
    memset(hp->swa_mask, 0, sizeof hp->swa_mask);
    const uint8_t *d = kv->arr_data;
    for (uint64_t i = 0; i < kv->arr_len; i++) {
        uint32_t v = 0;
        if (esz == 1) v = d[i];
        else memcpy(&v, d + i * 4, 4);   /* little-endian, as GGUF stores it */
        if (v) hp->swa_mask[i / 64] |= 1ull << (i % 64);
    }
    hp->swa_by_mask = true;
    return 0;
}

/* Finds a tensor and checks its shape (ne1 = 1 for vectors); NULL + error if missing
 * (and required) or mis-shaped. */
static const gguf_tensor *find_checked(const gguf_file *f, const char *name, int64_t ne0, int64_t ne1, bool required, bool *failed) {
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (!t) {
        if (required) { anv_set_error("%s: missing tensor '%s'", f->path, name); *failed = true; }
        return NULL;
    }
    if (t->ne[0] != ne0 || t->ne[1] != ne1 || t->ne[2] != 1 || t->ne[3] != 1) {
        anv_set_error("%s: tensor '%s' has shape [%lld, %lld, %lld, %lld], expected [%lld, %lld]", f->path, name,
                      (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3],
                      (long long)ne0, (long long)ne1);
        *failed = true;
        return NULL;
    }
    const qtype_info *qi = qtype_get(t->type);
    if (!qi || !qi->is_weight) { /* e.g. q8_1/q8_K (activation formats) or iq* (no kernels) */
        if (qi) anv_set_error("%s: tensor '%s' has type %s, which is not supported as a weight", f->path, name, qi->name);
        else anv_set_error("%s: tensor '%s' has unsupported type %u", f->path, name, t->type);
        *failed = true;
        return NULL;
    }
    return t;
}

static be_tensor *place(model *m, backend *be, const char *name, int64_t ne0, int64_t ne1, bool required, bool *failed) {
    const gguf_tensor *t = find_checked(m->gguf, name, ne0, ne1, required, failed);
    if (!t) return NULL;
    if ((ne1 > 1 || ne0 > 1) && t->type != QT_F32 && ne1 == 1) {
        /* Vectors (norms, biases) are used as F32 by every op. */
        anv_set_error("%s: vector tensor '%s' must be F32 (is %s)", m->gguf->path, name, qtype_get(t->type)->name);
        *failed = true;
        return NULL;
    }
    be_tensor *bt = be->ops->weight_new(be, t->type, ne0, ne1, t->data);
    if (!bt) { *failed = true; return NULL; }
    m->weight_bytes += t->nbytes;
    return bt;
}

be_tensor *model_place(model *m, backend *be, const char *name, int64_t ne0, int64_t ne1, bool required, bool *failed) {
    return place(m, be, name, ne0, ne1, required, failed);
}

static be_tensor *place_layer(model *m, backend *be, int il, const char *suffix, int64_t ne0, int64_t ne1, bool required, bool *failed) {
    char name[128];
    snprintf(name, sizeof name, "blk.%d.%s", il, suffix);
    return place(m, be, name, ne0, ne1, required, failed);
}

static int load_layer(model *m, int il, backend *be) {
    const model_hparams *hp = &m->hp;
    model_layer *L = &m->layers[il];
    const int64_t e = hp->n_embd, qd = (int64_t)hp->n_head * hp->head_dim_k, kvd = (int64_t)hp->n_kv_head * hp->head_dim_k;
    bool fail = false;
    if (hp->arch == ARCH_QWEN35) return qwen35_load_layer(m, il, be);   /* qwen35.c */
    if (hp->arch == ARCH_GEMMA4) return gemma4_load_layer(m, il, be);   /* per-layer shapes: gemma4.c */
    L->be = be;
    L->attn_norm = place_layer(m, be, il, "attn_norm.weight", e, 1, true, &fail);
    L->wq = place_layer(m, be, il, "attn_q.weight", e, qd, true, &fail);
    L->wk = place_layer(m, be, il, "attn_k.weight", e, kvd, true, &fail);
    L->wv = place_layer(m, be, il, "attn_v.weight", e, kvd, true, &fail);
    L->wo = place_layer(m, be, il, "attn_output.weight", qd, e, true, &fail);
    bool bias = hp->arch == ARCH_QWEN2 || hp->arch == ARCH_QWEN2MOE || hp->arch == ARCH_GPTOSS;
    L->bq = place_layer(m, be, il, "attn_q.bias", qd, 1, bias, &fail);
    L->bk = place_layer(m, be, il, "attn_k.bias", kvd, 1, bias, &fail);
    L->bv = place_layer(m, be, il, "attn_v.bias", kvd, 1, bias, &fail);
    bool qk_norm = hp->arch == ARCH_QWEN3 || hp->arch == ARCH_QWEN3MOE || hp->arch == ARCH_GEMMA3;
    L->q_norm = place_layer(m, be, il, "attn_q_norm.weight", hp->head_dim_k, 1, qk_norm, &fail);
    L->k_norm = place_layer(m, be, il, "attn_k_norm.weight", hp->head_dim_k, 1, qk_norm, &fail);
    bool post = hp->arch == ARCH_GEMMA3;
    /* gemma3's post-norms; gpt-oss's post_attention_norm is its FFN input norm (gptoss.c) */
    L->post_attn_norm = post ? place_layer(m, be, il, "post_attention_norm.weight", e, 1, true, &fail) : NULL;
    L->post_ffn_norm = post ? place_layer(m, be, il, "post_ffw_norm.weight", e, 1, true, &fail) : NULL;
    if (hp->arch == ARCH_GPTOSS) return fail || gptoss_load_layer(m, il, be) != 0 ? -1 : 0; /* gptoss.c */
    if (strcmp(hp->arch_name, "mistral3") == 0) {   /* optional output bias; FFN biases, shared experts: not yet */
        L->bo = place_layer(m, be, il, "attn_output.bias", e, 1, false, &fail);
        static const char *const unsupported[] = {"ffn_gate.bias", "ffn_up.bias", "ffn_down.bias", "ffn_gate_shexp.weight"};
        for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0] && !fail; i++) {
            char name[128];
            snprintf(name, sizeof name, "blk.%d.%s", il, unsupported[i]);
            if (gguf_find_tensor(m->gguf, name)) {
                anv_set_error("%s: tensor '%s' is not supported for mistral3 yet", m->gguf->path, name);
                fail = true;
            }
        }
    }
    L->ffn_norm = place_layer(m, be, il, "ffn_norm.weight", e, 1, true, &fail);
    if (hp->n_expert > 0) return fail || moe_load_layer(m, il, be) != 0 ? -1 : 0; /* moe.c */
    L->w_gate = place_layer(m, be, il, "ffn_gate.weight", e, hp->n_ff, true, &fail);
    L->w_up = place_layer(m, be, il, "ffn_up.weight", e, hp->n_ff, true, &fail);
    L->w_down = place_layer(m, be, il, "ffn_down.weight", hp->n_ff, e, true, &fail);
    return fail ? -1 : 0;
}

model *model_load(const char *path, const model_load_opts *opts) {
    if (!opts || !opts->cpu) { anv_set_error("model_load: no CPU backend given"); return NULL; }
    gguf_file *f = gguf_open(path);
    if (!f) return NULL;
    model *m = calloc(1, sizeof *m);
    if (!m) { gguf_close(f); anv_set_error("out of memory"); return NULL; }
    m->gguf = f;
    backend *cpu = opts->cpu;
    if (cpu->ops->weights_begin) {
        const be_weight_file wf = {.path = f->path, .base = f->base, .size = f->size, .mapped = f->mapped, .fd = gguf_fd(f)};
        cpu->ops->weights_begin(cpu, &wf);
    }
    if (encoder_is_arch(f)) {   /* bert, nomic-bert: encoder.c */
        if (encoder_load(m, opts) != 0) goto fail;
        if (cpu->ops->weights_end && cpu->ops->weights_end(cpu, true) != 0) goto fail;
        return m;
    }
    if (load_hparams(f, &m->hp) != 0) goto fail;
    model_hparams *hp = &m->hp;
    m->tok = tokenizer_load(f);
    if (!m->tok) goto fail;
    m->chat_template = gguf_get_str_dup(f, "tokenizer.chat_template");

    const gguf_tensor *te = gguf_find_tensor(f, "token_embd.weight");
    if (!te) { anv_set_error("%s: missing tensor 'token_embd.weight'", path); goto fail; }
    hp->n_vocab = (int)te->ne[1];
    if (te->ne[0] != hp->n_embd) {
        anv_set_error("%s: token_embd.weight has %lld columns, expected n_embd %d", path, (long long)te->ne[0], hp->n_embd);
        goto fail;
    }
    if (tokenizer_n_vocab(m->tok) > hp->n_vocab) {
        anv_set_error("%s: vocabulary has %d tokens but token_embd.weight only %d rows", path, tokenizer_n_vocab(m->tok), hp->n_vocab);
        goto fail;
    }

    m->cpu = opts->cpu;
    int n_gpu = 0;
    if (opts->gpu) {
        n_gpu = opts->n_gpu_layers < 0 || opts->n_gpu_layers > hp->n_layer ? hp->n_layer : opts->n_gpu_layers;
    }
    /* gemma4: the layers sharing a KV cache run on the backend of the layers they share it with */
    if (n_gpu > 0 && hp->n_layer_kv > 0 && hp->n_layer - n_gpu > hp->n_layer_kv - 2) n_gpu = hp->n_layer - (hp->n_layer_kv - 2);
    bool fail = false;
    m->tok_embd = place(m, m->cpu, "token_embd.weight", hp->n_embd, hp->n_vocab, true, &fail);
    if (fail) goto fail;
    m->layers = calloc((size_t)hp->n_layer, sizeof *m->layers);
    if (!m->layers) { anv_set_error("out of memory"); goto fail; }
    for (int il = 0; il < hp->n_layer; il++) {
        backend *be = il >= hp->n_layer - n_gpu ? opts->gpu : m->cpu;
        if (load_layer(m, il, be) != 0) goto fail;
    }
    m->out_be = n_gpu > 0 ? opts->gpu : m->cpu;
    m->output_norm = place(m, m->out_be, "output_norm.weight", hp->n_embd, 1, true, &fail);
    m->output = place(m, m->out_be, "output.weight", hp->n_embd, hp->n_vocab, false, &fail);
    if (fail) goto fail;
    if (!m->output) { /* tied embeddings */
        m->output = place(m, m->out_be, "token_embd.weight", hp->n_embd, hp->n_vocab, true, &fail);
        if (fail) goto fail;
        if (m->out_be == m->cpu) m->weight_bytes -= te->nbytes; /* the same bytes, counted once */
    }
    if (hp->arch == ARCH_LLAMA && gguf_find_tensor(f, "rope_freqs.weight")) {
        m->rope_freqs = place(m, m->cpu, "rope_freqs.weight", hp->n_rot / 2, 1, true, &fail);
        if (!fail && n_gpu > 0) m->rope_freqs_gpu = place(m, opts->gpu, "rope_freqs.weight", hp->n_rot / 2, 1, true, &fail);
        if (fail) goto fail;
    }
    if (hp->arch == ARCH_GEMMA4 && gemma4_load_globals(m, n_gpu > 0 ? opts->gpu : NULL) != 0) goto fail;
    m->gpu = n_gpu > 0 ? opts->gpu : NULL;
    if (hp->embedding_only && embed_dense_load(m) != 0) goto fail;
    if (cpu->ops->weights_end && cpu->ops->weights_end(cpu, true) != 0) goto fail;
    return m;
fail:
    if (cpu->ops->weights_end) cpu->ops->weights_end(cpu, false); /* a no-op after a failed commit */
    model_free(m);
    return NULL;
}

static void free_layer(model_layer *L) {
    be_tensor *ts[] = {L->attn_norm, L->wq, L->wk, L->wv, L->wo, L->bq, L->bk, L->bv, L->q_norm, L->k_norm,
                       L->post_attn_norm, L->ffn_norm, L->w_gate, L->w_up, L->w_down, L->post_ffn_norm};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) be_tensor_free(ts[i]);
    gptoss_free_layer(L);
    gemma4_free_layer(L);
    moe_free_layer(L);
    qwen35_free_layer(L);
}

static _Atomic uint64_t g_host_reserved;

void model_reserve_host(model *m, uint64_t bytes) {
    m->host_reserved += bytes;
    atomic_fetch_add(&g_host_reserved, bytes);
}

uint64_t model_host_reserved_total(void) { return atomic_load(&g_host_reserved); }

void model_free(model *m) {
    if (!m) return;
    if (m->host_reserved) atomic_fetch_sub(&g_host_reserved, m->host_reserved);
    if (m->layers)
        for (int il = 0; il < m->hp.n_layer; il++) free_layer(&m->layers[il]);
    free(m->layers);
    be_tensor_free(m->tok_embd);
    be_tensor_free(m->output_norm);
    be_tensor_free(m->output);
    be_tensor_free(m->rope_freqs);
    be_tensor_free(m->rope_freqs_gpu);
    encoder_free(m);
    gemma4_free(m);
    if (m->owns_cpu && m->cpu) m->cpu->ops->destroy(m->cpu);
    if (m->owns_gpu && m->gpu) m->gpu->ops->destroy(m->gpu);
    tokenizer_free(m->tok);
    free(m->chat_template);
    gguf_close(m->gguf);
    free(m);
}

uint64_t model_n_params(const model *m) {
    uint64_t n = 0;
    for (uint64_t i = 0; i < m->gguf->n_tensors; i++) {
        const gguf_tensor *t = &m->gguf->tensors[i];
        n += (uint64_t)(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]);
    }
    return n;
}

bool model_file_embeds_only(const gguf_file *f) {
    char *arch = gguf_get_str_dup(f, "general.architecture");
    char key[96];
    snprintf(key, sizeof key, "%s.pooling_type", arch ? arch : "");
    const bool r = arch && gguf_find(f, key) != NULL;
    free(arch);
    return r;
}
