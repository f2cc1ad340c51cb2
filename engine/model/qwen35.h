/* qwen35: the Qwen3.5 / 3.6 dense family (GGUF arch "qwen35", llama.cpp's LLM_ARCH_QWEN35):
 * its hyperparameters and layer weights. Gated DeltaNet layers (delta_net.c) alternate with
 * gated full-attention layers every full_attention_interval; the forward pass is forward.c
 * plus delta_net.c. The MTP (nextn) layers at the end of the file are not loaded. */
#ifndef ANVIL_QWEN35_H
#define ANVIL_QWEN35_H
#include "model.h"

/* After the shared hparams: the nextn layers off n_layer, ssm.* sizes (checked consistent),
 * the recurrent layers (attention.recurrent_layers, else full_attention_interval), and the
 * rope sections (text input: every rotated pair must use the one text position). -1 + error. */
int qwen35_read_hparams(const gguf_file *f, model_hparams *hp);
/* Layer il (recurrent or attention, then the dense FFN with post_attention_norm as its input
 * norm) onto be; -1 + one-line error (missing or mis-shaped tensor, a backend without the
 * recurrent ops). */
int qwen35_load_layer(model *m, int il, backend *be);
/* Frees what qwen35_load_layer added beyond the shared fields. */
void qwen35_free_layer(model_layer *L);
#endif
