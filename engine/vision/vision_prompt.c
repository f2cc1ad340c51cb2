/* vision_prompt: a prompt of text and images evaluated into a text model's context, as
 * llama.cpp's mtmd chunks it: the text is split at each media marker, every image is wrapped
 * in the projector's begin / end text, each piece (text, begin, end) tokenized on its own (BOS
 * once at the start, special tokens parsed; mtmd_tokenize's add_text per piece, so a begin
 * marker that is not one special token does not merge with the text before it) and the text
 * evaluated, images encoded and evaluated as rows of embeddings. */
#include "vision_impl.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

/* Appends n ids to the growing token list; -1 + error (out of memory, too long). */
static int push(int32_t **toks, int *n, int *cap, const int32_t *ids, int k) {
    if (*n + k > *cap) {
        int nc = *cap ? *cap : 64;
        while (nc < *n + k) nc *= 2;
        int32_t *p = realloc(*toks, (size_t)nc * sizeof(int32_t));
        if (!p) { anv_set_error("out of memory"); return -1; }
        *toks = p;
        *cap = nc;
    }
    memcpy(*toks + *n, ids, (size_t)k * sizeof(int32_t));
    *n += k;
    return 0;
}

/* Tokenizes text (the first chunk with BOS) and appends it, leaving evaluation to the caller. */
static int add_text(const model *m, const char *text, size_t len, bool first, int32_t **toks, int *n, int *cap) {
    int k = 0;
    int32_t *ids = tokenizer_encode(m->tok, text, len, first, true, &k);
    if (!ids) return -1;
    const int rc = push(toks, n, cap, ids, k);
    free(ids);
    return rc;
}

int vision_eval_prompt(model_ctx *c, vision_model *v, const char *prompt, const char *marker, const vision_image *images,
                       int n_images, int32_t **tokens_out, int *n_out) {
    *tokens_out = NULL;
    *n_out = 0;
    model *m = model_ctx_model(c);
    if (!marker || !marker[0]) marker = VISION_MARKER;
    if (vision_check_text_model(v, m) != 0) return -1;
    int n_markers = 0;
    for (const char *p = strstr(prompt, marker); p; p = strstr(p + strlen(marker), marker)) n_markers++;
    if (n_markers != n_images) {
        anv_set_error("the prompt has %d image marker%s but %d image%s were given", n_markers, n_markers == 1 ? "" : "s", n_images,
                      n_images == 1 ? "" : "s");
        return -1;
    }
    const int n_embd = vision_n_embd(v);
    float *embd = NULL;
    const char *beg = vision_image_begin(v), *end = vision_image_end(v);
    const size_t lb = strlen(beg), le = strlen(end), lm = strlen(marker);
    int32_t *toks = NULL, *img_ids = NULL;
    int n = 0, cap = 0, evaluated = 0, rc = -1, img_cap = 0;
    model_ctx_truncate(c, 0);
    const char *p = prompt;
    size_t pending_end = 0;   /* the previous image's end text opens the next chunk */
    for (int im = 0; im <= n_images; im++) {
        const char *mk = im < n_images ? strstr(p, marker) : p + strlen(p);
        /* chunk text: [end of the previous image], text up to the marker, [begin of this image] */
        if (pending_end && add_text(m, end, le, false, &toks, &n, &cap) != 0) goto done;
        if ((im == 0 || mk > p) && add_text(m, p, (size_t)(mk - p), im == 0, &toks, &n, &cap) != 0) goto done;   /* BOS first */
        if (im < n_images && lb && add_text(m, beg, lb, false, &toks, &n, &cap) != 0) goto done;
        if (im == n_images) break;
        /* evaluate the text so far, then the image */
        if (n > evaluated && model_eval(c, toks + evaluated, n - evaluated, NULL, false) != 0) goto done;
        evaluated = n;
        const vision_image *img = &images[im];
        vision_layout lay;
        if (vision_image_layout(v, img->width, img->height, &lay) != 0) goto done;
        if (lay.n_tokens > img_cap) {   /* dynamic-resolution encoders: a size per image */
            free(embd);
            free(img_ids);
            embd = malloc((size_t)lay.n_tokens * n_embd * sizeof(float));
            img_ids = malloc((size_t)lay.n_tokens * sizeof(int32_t));
            if (!embd || !img_ids) { anv_set_error("out of memory"); goto done; }
            for (int i = 0; i < lay.n_tokens; i++) img_ids[i] = MODEL_TOKEN_EMBD;
            img_cap = lay.n_tokens;
        }
        if (vision_encode(v, img->rgb, img->width, img->height, embd) != 0) goto done;
        if (vision_eval_image(c, v, embd, &lay, NULL) != 0) goto done;
        if (push(&toks, &n, &cap, img_ids, lay.n_tokens) != 0) goto done;
        evaluated = n;
        p = mk + lm;
        pending_end = le;
    }
    /* the text after the last image but its last token (the generation loop evaluates that one
     * for its logits, reusing this prefix) */
    if (n == 0) { anv_set_error("empty prompt"); goto done; }
    if (toks[n - 1] == MODEL_TOKEN_EMBD) {
        anv_set_error("the prompt ends with an image: add text after it");
        goto done;
    }
    if (n - 1 > evaluated && model_eval(c, toks + evaluated, n - 1 - evaluated, NULL, false) != 0) goto done;
    *tokens_out = toks;
    *n_out = n;
    toks = NULL;
    rc = 0;
done:
    free(toks);
    free(embd);
    free(img_ids);
    return rc;
}
