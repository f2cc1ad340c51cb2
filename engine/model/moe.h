/* moe: the mixture-of-experts pieces of the model (qwen3moe, qwen2moe, mixtral-style llama
 * MoE): their hyperparameters, their expert weights (3-D GGUF tensors cut into one 2-D
 * backend weight per expert) and the MoE feed-forward block of the one forward pass. */
#ifndef ANVIL_MOE_H
#define ANVIL_MOE_H
#include "model.h"

/* Reads {arch}.expert_* (n_expert stays 0 for a dense file); -1 + one-line error if invalid. */
int moe_read_hparams(const gguf_file *f, const char *arch, model_hparams *hp);
/* Loads layer il's router, experts and shared expert onto be; -1 + error (missing or
 * mis-shaped tensor, wrong expert count). */
int moe_load_layer(model *m, int il, backend *be);
/* t (already checked: n_expert slices of rows x cols of its type) as ne backend weights, one
 * per expert, counted in m->weight_bytes; NULL (and *failed) on error. */
be_tensor **moe_split_experts(model *m, backend *be, const gguf_tensor *t, int64_t cols, int64_t rows, int ne, bool *failed);
void moe_free_layer(model_layer *L);
/* Widest feed-forward activation the MoE block needs (scratch sizing). */
int64_t moe_ff_width(const model_hparams *hp);

/* The activations the MoE block works in (all F32 on the layer's backend, n_batch rows):
 * x the residual (the block adds into it), xn its normed input, gate/up >= moe_ff_width
 * elements per row, in/out [n_batch][n_embd], logits [n_batch][n_expert], shlog [n_batch][1]. */
typedef struct { be_tensor *x, *xn, *gate, *up, *in, *out, *logits, *shlog, *rin; } moe_bufs;   /* rin: the router's input (NULL = xn; gemma4) */
/* x += MoE(xn) for nt rows: router on the backend, top-k routing on the host, then the
 * experts batched by expert (the rows routed to one expert gathered, run, scattered back
 * weighted), plus the gated shared expert where present. Errors are the backend's sticky
 * error (or recorded on it). */
void moe_ffn(const model *m, const model_layer *L, const moe_bufs *b, int nt);

/* Declared here, defined in model.c: find + shape-check + weight_new (2-D / vector). */
be_tensor *model_place(model *m, backend *be, const char *name, int64_t ne0, int64_t ne1, bool required, bool *failed);
#endif
