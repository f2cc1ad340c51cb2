/* encoder: the BERT-style embedding families (bert: absolute positions, token types,
 * post-LayerNorm, GELU FFN, biases; nomic-bert: rotary positions, fused QKV, SwiGLU) loaded
 * into a model and run bidirectionally over a whole input at once, written against backend.h
 * with the same ops as forward.c; and the dense projections after pooling (gemma-embedding).
 * Internal to model/ (model.c and forward.c call it). */
#ifndef ANVIL_ENCODER_H
#define ANVIL_ENCODER_H
#include <stdbool.h>
#include <stdint.h>
#include "model.h"

/* Whether general.architecture is an encoder family this file loads. */
bool encoder_is_arch(const gguf_file *f);
/* Loads hyperparameters, tokenizer and weights into m (m->gguf is open); -1 + error. */
int encoder_load(model *m, const model_load_opts *opts);
/* Frees what encoder_load added beyond the model's own fields (m->enc, dense). */
void encoder_free(model *m);
/* The pooled embedding (n_embd floats, not normalised) of tokens [0, n); -1 + error. */
int encoder_embed(model *m, const int32_t *tokens, int n, float *out);
/* gemma-embedding: loads dense_2 / dense_3 (if present) onto the CPU; -1 + error. */
int embed_dense_load(model *m);
/* Applies the dense projections to one pooled vector v (n_embd floats) in place. */
int embed_dense_apply(model *m, float *v);
#endif
