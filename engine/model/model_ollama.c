/* model_ollama: the text side of Ollama's own gemma3 GGUFs (its library's gemma3 blobs, written by
 * its converter, convert/convert_gemma3.go), which leave out keys llama.cpp's converter writes and
 * its gemma3 loader needs: attention.layer_norm_rms_epsilon, rope.freq_base (some files name the
 * bases rope.global.freq_base / rope.local.freq_base), and the 4B/12B/27B's linear rope scaling
 * by 8 over a 131072 context. The defaults are those Ollama's llama.cpp shim gives such a file
 * (llama/compat/llama-ollama-compat.cpp, detect_ollama_gemma3 / handle_gemma3): eps 1e-6, base
 * 1e6, local base 1e4, linear x8 at a context of 131072 or more. Without them the model would load
 * with the generic defaults (eps 1e-5, base 1e4) and answer wrongly without a word. */
#include "model_ollama.h"

#include <string.h>

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
