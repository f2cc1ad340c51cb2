/* model_ollama: whether a gemma3 file is one of Ollama's own (model_ollama.c): the loader then
 * takes the defaults Ollama gives the keys its converter leaves out. Internal to engine/model. */
#ifndef ANVIL_MODEL_OLLAMA_H
#define ANVIL_MODEL_OLLAMA_H
#include <stdbool.h>

#include "gguf.h"

/* general.architecture gemma3 with one of Ollama's converter's marks: vision metadata or v.* /
 * mm.* tensors inline, rope.global / rope.local base names, or no layer_norm_rms_epsilon. */
bool model_ollama_gemma3(const gguf_file *f);
#endif
