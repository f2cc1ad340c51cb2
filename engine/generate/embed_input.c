/* embed_input: tokenizing, context fitting and normalisation of an embedding input (embed_input.h). */
#include "embed_input.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

int32_t *embed_tokenize(const tokenizer *tok, const char *text, int *n) {
    return tokenizer_encode(tok, text, strlen(text), tokenizer_add_bos(tok), true, n);
}

/* The tokens the tokenizer appends to every input (BERT's [SEP]; none for most decoders). */
static int end_tokens(const tokenizer *tok, int32_t *out, int cap) {
    int n = 0;
    int32_t *e = tokenizer_encode(tok, "", 0, tokenizer_add_bos(tok), false, &n);
    int skip = e && n > 0 && tokenizer_add_bos(tok) && e[0] == tokenizer_bos(tok) ? 1 : 0;
    int k = e ? n - skip : 0;
    if (k > cap) k = 0;
    if (k > 0) memcpy(out, e + skip, (size_t)k * sizeof *out);
    free(e);
    return k;
}

int embed_fit_context(const tokenizer *tok, int32_t *tokens, int *n, int n_ctx, bool truncate, bool from_text) {
    if (*n <= n_ctx) return 0;
    if (!truncate) {
        anv_set_error("the input length exceeds the context length");
        return -1;
    }
    int32_t end[4];
    int n_end = from_text ? end_tokens(tok, end, 4) : 0;
    if (n_end >= n_ctx || memcmp(tokens + *n - n_end, end, (size_t)n_end * sizeof *end)) n_end = 0;
    memcpy(tokens + n_ctx - n_end, end, (size_t)n_end * sizeof *end);
    *n = n_ctx;
    return 0;
}

static void l2_normalize(float *v, int n) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += (double)v[i] * v[i];
    const float inv = ss > 0 ? (float)(1.0 / sqrt(ss)) : 0.0f;
    for (int i = 0; i < n; i++) v[i] *= inv;
}

int embed_normalize(float *v, int n_embd, int dims) {
    l2_normalize(v, n_embd);
    if (dims <= 0 || dims >= n_embd) return n_embd;
    l2_normalize(v, dims);
    return dims;
}
