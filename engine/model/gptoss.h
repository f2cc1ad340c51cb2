/* gptoss: the gpt-oss family (GGUF arch "gpt-oss", llama.cpp's LLM_ARCH_OPENAI_MOE): its
 * hyperparameters and the layer weights beyond the shared attention and MoE. The one
 * forward pass runs it: forward.c (YaRN rope, sinks, output bias), moe.c (biases,
 * softmax over the top-k logits, SWIGLU_OAI). */
#ifndef ANVIL_GPTOSS_H
#define ANVIL_GPTOSS_H
#include "model.h"

/* After the shared hparams and moe_read_hparams: sliding window (required) on layers
 * il % pattern < pattern - 1 (pattern 2), the SWA rope base/scale, routing as llama.cpp's
 * SOFTMAX_WEIGHT without renormalisation, attention scale 1/sqrt(n_rot). -1 + error. */
int gptoss_read_hparams(const gguf_file *f, model_hparams *hp);
/* Layer il after its attention weights: attn_output.bias, attn_sinks, post_attention_norm
 * (the feed-forward norm), the experts (moe_load_layer) and ffn_{gate_inp,gate,up,down}
 * biases; -1 + one-line error if one is missing or mis-shaped. */
int gptoss_load_layer(model *m, int il, backend *be);
/* Frees what gptoss_load_layer added (call before moe_free_layer). */
void gptoss_free_layer(model_layer *L);
#endif
