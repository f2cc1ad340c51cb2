/* model_ollama: whether a file is one of Ollama's own (model_ollama.c): the loader then
 * takes the defaults Ollama gives the keys its converter leaves out. Internal to engine/model. */
#ifndef ANVIL_MODEL_OLLAMA_H
#define ANVIL_MODEL_OLLAMA_H
#include <stdbool.h>

#include "gguf.h"

/* general.architecture gemma3 with one of Ollama's converter's marks: vision metadata or v.* /
 * mm.* tensors inline, rope.global / rope.local base names, or no layer_norm_rms_epsilon. */
bool model_ollama_gemma3(const gguf_file *f);
/* Ollama's qwen25vl files, and qwen3vl files without {arch}.rope.dimension_sections: the M-RoPE
 * sections (4, the last 0) and the deepstack count (qwen3vl) as Ollama gives them; 1 with them
 * set, 0 for a file in llama.cpp's layout (nothing set), -1 + error (a bad or missing key). */
/* Ollama's qwen35 / qwen35moe: {arch}.attention.head_count_kv as an array (0 on the recurrent
 * layers): the largest entry (the shim's collapse) into *out and 1; 0 if not an array (or another
 * arch); -1 + error (all zero, not integers). */
int model_ollama_kv_heads(const gguf_file *f, const char *arch, int *out);
int model_ollama_qwenvl_sections(const gguf_file *f, const char *arch, int sec[4], int *n_deepstack);
#endif
