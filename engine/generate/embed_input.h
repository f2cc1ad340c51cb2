/* embed_input: what an embedding request does to one text besides the forward pass, the same
 * for the server's /api/embed, /api/embeddings, /v1/embeddings and `anvil run` of an embedding
 * model (Ollama's rules): tokenizing with the tokenizer's start and end tokens, fitting the
 * context (cut to its first n_ctx tokens with the end tokens put back, e.g. BERT's [SEP], or an
 * error), and the normalisation (L2, then cut to the asked dimensions and L2 again). */
#ifndef ANVIL_EMBED_INPUT_H
#define ANVIL_EMBED_INPUT_H
#include <stdbool.h>
#include <stdint.h>
#include "tokenizer.h"

/* The tokens as an embedding input: the tokenizer's BOS/CLS where it adds one, and its end
 * tokens. Returns a malloc'd array (*n tokens), or NULL + error. */
int32_t *embed_tokenize(const tokenizer *tok, const char *text, int *n);
/* Fits tokens[*n] into n_ctx: nothing to do when it fits; with truncate, cut to the first n_ctx
 * tokens and the tokenizer's end tokens (when the input ends with them) put back at the end,
 * so the pooling sees a well-formed input (from_text false: token ids a client gave, cut
 * plainly); without, -1 + "the input length exceeds the context length" (Ollama's words). */
int embed_fit_context(const tokenizer *tok, int32_t *tokens, int *n, int n_ctx, bool truncate, bool from_text);
/* Ollama's output: v[n_embd] L2-normalised; when 0 < dims < n_embd, its first dims values are
 * normalised again (the caller keeps those). Returns the kept dimension count. */
int embed_normalize(float *v, int n_embd, int dims);
#endif
