/* gemma4: the Gemma 4 family (GGUF arch "gemma4", llama.cpp's src/models/gemma4.cpp): its
 * hyperparameters (per-layer head sizes, KV heads and FFN widths, shared KV caches), its
 * weights (per-layer token embeddings, the per-layer input gate/projection, layer output
 * scales, V = K where a layer has no attn_v) and its forward pieces (gemma4_block.c). */
#ifndef ANVIL_GEMMA4_H
#define ANVIL_GEMMA4_H
#include "model.h"

/* The per-layer token embeddings (E2B/E4B): per_layer_token_embd [n_vocab][n_layer * n_pl]
 * stays in the file's mapping and is looked up row by row on the host (never dequantized
 * whole); the model projection [n_layer * n_pl][n_embd] and its norm [n_pl] on the CPU. */
typedef struct gemma4_weights {
    const void *ple_data;
    uint32_t ple_type;
    size_t ple_row_bytes;
    be_tensor *ple_proj, *ple_proj_norm;
} gemma4_weights;

/* Right after block_count and head_count: feed_forward_length and attention.head_count_kv,
 * each a scalar or one value per layer, into hp (n_ff / n_kv_head = the largest). -1 + error. */
int gemma4_read_layer_arrays(const gguf_file *f, model_hparams *hp);
/* After the shared hparams: sliding window and its per-layer pattern, the sliding layers' head
 * size, rotated dims and rope base, shared KV layers (checked against the layers they reuse),
 * per-layer embedding width, attention scale 1. -1 + one-line error naming the key. */
int gemma4_read_hparams(const gguf_file *f, model_hparams *hp);
/* Layer il's weights onto be (its own shapes; no K/V weights for a layer sharing a cache). */
int gemma4_load_layer(model *m, int il, backend *be);
/* rope_freqs (the full layers' proportional rope) on the CPU and gpu (if not NULL), and the
 * per-layer token embeddings. */
int gemma4_load_globals(model *m, backend *gpu);
void gemma4_free_layer(model_layer *L);
void gemma4_free(model *m);
#endif
