/* qwenvl_text: the text archs of the qwen-vl models, qwen3 / qwen2 bodies with M-RoPE
 * (llama.cpp's src/models/qwen3vl.cpp, qwen2vl.cpp; conversion/qwen3vl.py Qwen3VLTextModel,
 * conversion/base.py's rope.dimension_sections from mrope_section, padded to 4):
 *  - qwen3vl: IMROPE (interleaved sections), {arch}.n_deepstack_layers: an image row carries
 *    n_embd * (1 + n_deepstack) floats, the first n_embd its input, slice k + 1 added to the
 *    output of layer k (k < n_deepstack); text rows have zeros there;
 *  - qwen2vl: MROPE (consecutive sections), no deepstack.
 * Text positions are [p, p, p, 0] (llama.cpp's batch): a rotated pair that falls in the fourth
 * section does not rotate for text, so such a model ropes text through rope_rows' table too
 * (rope_text_table). Ollama's own qwen25vl / qwen3vl files (no rope.dimension_sections): the sections
 * and deepstack count as Ollama gives them (model_ollama.c). */
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "model.h"
#include "model_ollama.h"
#include "rope_table.h"

int qwenvl_read_hparams(const gguf_file *f, const char *arch, model_hparams *hp) {
    const bool v3 = strcmp(arch, "qwen3vl") == 0;
    char key[128];
    snprintf(key, sizeof key, "%s.rope.dimension_sections", arch);
    int sec[4] = {0, 0, 0, 0};
    const int ollama = model_ollama_qwenvl_sections(f, arch, sec, &hp->n_deepstack);   /* Ollama's own files */
    if (ollama < 0) return -1;
    const gguf_kv *kv = ollama ? NULL : gguf_find(f, key);
    if (!ollama && !kv) { anv_set_error("%s: missing metadata key %s", f->path, key); return -1; }
    if (kv && (kv->type != GGUF_ARRAY || (kv->arr_type != GGUF_INT32 && kv->arr_type != GGUF_UINT32) || kv->arr_len < 3 || kv->arr_len > 4)) {
        anv_set_error("%s: metadata %s must be an array of 3 or 4 integers", f->path, key);
        return -1;
    }
    for (uint64_t i = 0; kv && i < kv->arr_len; i++) memcpy(&sec[i], (const uint8_t *)kv->arr_data + i * 4, 4);
    const int sect_dims = sec[0] + sec[1] + sec[2] + sec[3];
    if (sec[0] < 0 || sec[1] < 0 || sec[2] < 0 || sec[3] < 0 || sect_dims < 1 || sect_dims > hp->n_rot / 2) {
        anv_set_error("%s: metadata %s = [%d, %d, %d, %d] is invalid (sections of at most rope.dimension_count / 2 = %d pairs)", f->path,
                      key, sec[0], sec[1], sec[2], sec[3], hp->n_rot / 2);
        return -1;
    }
    if (hp->n_rot != hp->head_dim_k) {
        anv_set_error("%s: %s with rope.dimension_count %d != head size %d is not supported", f->path, arch, hp->n_rot, hp->head_dim_k);
        return -1;
    }
    memcpy(hp->rope_sections, sec, sizeof sec);
    hp->rope_sect_mode = 1 + (v3 ? ROPE_SECT_IMROPE : ROPE_SECT_MROPE);
    /* a pair in the 'e' section (position 0 for text) keeps text off the plain NEOX rope */
    hp->rope_text_table = false;
    for (int i = 0; i < hp->n_rot / 2; i++) {
        const int s = i % sect_dims;
        const bool text = v3 ? (s % 3 == 1 && s < 3 * sec[1]) || (s % 3 == 2 && s < 3 * sec[2]) || (s % 3 == 0 && s < 3 * sec[0])
                             : s < sec[0] + sec[1] + sec[2];
        if (!text) hp->rope_text_table = true;
    }
    if (!ollama) hp->n_deepstack = 0;
    if (v3 && !model_read_u32(f, arch, "n_deepstack_layers", &hp->n_deepstack, false)) return -1;
    if (hp->n_deepstack < 0 || hp->n_deepstack > hp->n_layer) {
        anv_set_error("%s: metadata %s.n_deepstack_layers = %d is invalid (at most block_count %d)", f->path, arch, hp->n_deepstack, hp->n_layer);
        return -1;
    }
    return 0;
}
