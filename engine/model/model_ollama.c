/* model_ollama: the text side of Ollama's own GGUFs. gemma3: its library's gemma3 blobs (its library's gemma3 blobs, written by
 * its converter, convert/convert_gemma3.go), which leave out keys llama.cpp's converter writes and
 * its gemma3 loader needs: attention.layer_norm_rms_epsilon, rope.freq_base (some files name the
 * bases rope.global.freq_base / rope.local.freq_base), and the 4B/12B/27B's linear rope scaling
 * by 8 over a 131072 context. The defaults are those Ollama's llama.cpp shim gives such a file
 * (llama/compat/llama-ollama-compat.cpp, detect_ollama_gemma3 / handle_gemma3): eps 1e-6, base
 * 1e6, local base 1e4, linear x8 at a context of 131072 or more. Without them the model would load
 * with the generic defaults (eps 1e-5, base 1e4) and answer wrongly without a word.
 * qwen2.5-vl / qwen3-vl (convert/convert_qwen25vl.go, convert_qwen3vl.go before the two-file
 * split; the shim's handle_qwen25vl / handle_qwen3vl): general.architecture qwen25vl (llama.cpp's
 * qwen2vl body under the qwen25vl.* keys) with the M-RoPE sections as rope.mrope_section (3
 * entries; the 4th is 0), and qwen3vl files without rope.dimension_sections: the sections are
 * rope.mrope_section when the converter wrote it (from the Hugging Face config), else Ollama's
 * [24, 20, 20, 0] (the shim's and its former runtime's default), and n_deepstack_layers, when
 * absent, the length of vision.deepstack_visual_indexes.
 * qwen3.5 (convert/convert_qwen3next.go before the two-file split; the shim's
 * apply_qwen35_text_fixes): attention.head_count_kv per layer (0 on the recurrent ones) taken as
 * its largest entry, blk.N.ssm_dt for llama.cpp's ssm_dt.bias (qwen35.c takes either), 3 rope
 * sections (qwen35.c pads them with a 0). */
#include "model_ollama.h"

#include <stdio.h>
#include <string.h>

#include "error.h"

bool model_ollama_gemma3(const gguf_file *f) {
    gguf_str arch;
    if (!gguf_get_str(f, "general.architecture", &arch) || !gguf_str_eq(arch, "gemma3")) return false;
    if (gguf_find(f, "gemma3.mm.tokens_per_image") || gguf_find(f, "gemma3.vision.block_count") ||
        gguf_find(f, "gemma3.rope.global.freq_base") || gguf_find(f, "gemma3.rope.local.freq_base") ||
        !gguf_find(f, "gemma3.attention.layer_norm_rms_epsilon"))
        return true;
    for (uint64_t i = 0; i < f->n_tensors; i++) {   /* its vision tower inline */
        const gguf_str n = f->tensors[i].name;
        if (n.len > 2 && (!memcmp(n.ptr, "v.", 2) || (n.len > 3 && !memcmp(n.ptr, "mm.", 3)))) return true;
    }
    return false;
}

/* The sections of an int array key (3 or 4 entries, a 4th 0 when absent): 1, 0 absent, -1 + error. */
static int read_sections(const gguf_file *f, const char *key, int sec[4]) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv) return 0;
    if (kv->type != GGUF_ARRAY || (kv->arr_type != GGUF_INT32 && kv->arr_type != GGUF_UINT32) || kv->arr_len < 3 || kv->arr_len > 4) {
        anv_set_error("%s: metadata %s must be an array of 3 or 4 integers", f->path, key);
        return -1;
    }
    sec[3] = 0;
    for (uint64_t i = 0; i < kv->arr_len; i++) memcpy(&sec[i], (const uint8_t *)kv->arr_data + i * 4, 4);
    return 1;
}

int model_ollama_qwenvl_sections(const gguf_file *f, const char *arch, int sec[4], int *n_deepstack) {
    char key[128];
    snprintf(key, sizeof key, "%s.rope.dimension_sections", arch);
    const bool v25 = strcmp(arch, "qwen25vl") == 0;
    if (!v25 && (strcmp(arch, "qwen3vl") || gguf_find(f, key))) return 0;   /* llama.cpp's layout */
    snprintf(key, sizeof key, "%s.rope.mrope_section", arch);
    const int got = read_sections(f, key, sec);
    if (got < 0) return -1;
    if (!got && v25) {   /* llama.cpp's qwen2vl needs the sections: the shim has nothing to give it */
        anv_set_error("%s: missing metadata key %s (Ollama's qwen2.5-vl layout)", f->path, key);
        return -1;
    }
    if (!got) {
        const int dflt[4] = {24, 20, 20, 0};
        memcpy(sec, dflt, sizeof dflt);
    }
    *n_deepstack = 0;
    if (!v25) {
        snprintf(key, sizeof key, "%s.vision.deepstack_visual_indexes", arch);
        const gguf_kv *ds = gguf_find(f, key);
        if (ds && (ds->type != GGUF_ARRAY || ds->arr_len > 4096)) {
            anv_set_error("%s: metadata %s must be an array of block indexes", f->path, key);
            return -1;
        }
        if (ds) *n_deepstack = (int)ds->arr_len;
    }
    return 1;
}

int model_ollama_kv_heads(const gguf_file *f, const char *arch, int *out) {
    if (strcmp(arch, "qwen35") && strcmp(arch, "qwen35moe")) return 0;
    char key[128];
    snprintf(key, sizeof key, "%s.attention.head_count_kv", arch);
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv || kv->type != GGUF_ARRAY) return 0;
    if ((kv->arr_type != GGUF_INT32 && kv->arr_type != GGUF_UINT32) || kv->arr_len > 4096) {
        anv_set_error("%s: metadata %s must be an integer or an array of integers", f->path, key);
        return -1;
    }
    uint32_t best = 0;
    for (uint64_t i = 0; i < kv->arr_len; i++) {
        uint32_t x;
        memcpy(&x, (const uint8_t *)kv->arr_data + i * 4, 4);
        if (x <= (1u << 20) && x > best) best = x;
    }
    if (!best) { anv_set_error("%s: metadata %s has no attention layer (all entries 0)", f->path, key); return -1; }
    *out = (int)best;
    return 1;
}
