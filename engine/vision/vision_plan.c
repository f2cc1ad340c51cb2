/* vision_plan: a text-and-images prompt as tokens and image spans, its reusable prefix in a
 * context, and its evaluation with the per-digest cache (vision_plan.h). */
#include "vision_plan.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

/* Grows an array of elem-sized items to hold need; -1 + error when out of memory. */
static int grow(void **arr, int *cap, int need, size_t elem) {
    if (need <= *cap) return 0;
    int nc = *cap ? *cap : 16;
    while (nc < need) {
        if (nc > (1 << 28)) { anv_set_error("prompt too long"); return -1; }
        nc *= 2;
    }
    void *p = realloc(*arr, (size_t)nc * elem);
    if (!p) { anv_set_error("out of memory"); return -1; }
    *arr = p;
    *cap = nc;
    return 0;
}

static int push_tokens(vision_plan *p, int *cap, const int32_t *ids, int k, int32_t fill) {
    if (grow((void **)&p->tokens, cap, p->n + k, sizeof(int32_t)) != 0) return -1;
    for (int i = 0; i < k; i++) p->tokens[p->n + i] = ids ? ids[i] : fill;
    p->n += k;
    return 0;
}

/* Appends text's tokens (special tokens parsed; BOS first where bos). */
static int push_text(vision_plan *p, int *cap, const model *m, const char *text, size_t len, bool bos) {
    if (!len && !bos) return 0;
    int k = 0;
    int32_t *ids = tokenizer_encode(m->tok, text, len, bos, true, &k);
    if (!ids) return -1;
    const int rc = push_tokens(p, cap, ids, k, 0);
    free(ids);
    return rc;
}

int vision_plan_prompt(const vision_model *v, const model *m, const char *prompt, const char *marker,
                       const vision_image *images, const uint8_t *const *sha256, int n_images, vision_plan *out) {
    memset(out, 0, sizeof *out);
    if (!marker || !marker[0]) marker = VISION_MARKER;
    int n_markers = 0;
    for (const char *q = strstr(prompt, marker); q; q = strstr(q + strlen(marker), marker)) n_markers++;
    if (n_markers != n_images) {
        anv_set_error("the prompt has %d image marker%s but %d image%s were given", n_markers, n_markers == 1 ? "" : "s", n_images,
                      n_images == 1 ? "" : "s");
        return -1;
    }
    const char *beg = vision_image_begin(v), *end = vision_image_end(v);
    const size_t lb = strlen(beg), le = strlen(end), lm = strlen(marker);
    int cap = 0;
    if (n_images > 0 && !(out->spans = calloc((size_t)n_images, sizeof *out->spans))) { anv_set_error("out of memory"); goto fail; }
    const char *q = prompt;
    for (int im = 0; im <= n_images; im++) {
        const char *mk = im < n_images ? strstr(q, marker) : q + strlen(q);
        /* [end of the previous image], the text up to the marker, [begin of this image]: each
         * piece tokenized on its own (mtmd_tokenize's add_text per piece; BOS once, first) */
        if (im > 0 && push_text(out, &cap, m, end, le, false) != 0) goto fail;
        if ((im == 0 || mk > q) && push_text(out, &cap, m, q, (size_t)(mk - q), im == 0) != 0) goto fail;
        if (im < n_images && push_text(out, &cap, m, beg, lb, false) != 0) goto fail;
        if (im == n_images) break;
        vision_span *sp = &out->spans[out->n_spans++];
        if (vision_image_layout(v, images[im].width, images[im].height, &sp->lay) != 0) goto fail;
        sp->pos = out->n;
        sp->image = im;
        sp->keyed = sha256 && sha256[im];
        if (sp->keyed) memcpy(sp->sha256, sha256[im], 32);
        if (push_tokens(out, &cap, NULL, sp->lay.n_tokens, MODEL_TOKEN_EMBD) != 0) goto fail;
        q = mk + lm;
    }
    if (out->n == 0) { anv_set_error("empty prompt"); goto fail; }
    if (out->tokens[out->n - 1] == MODEL_TOKEN_EMBD) {
        anv_set_error("the prompt ends with an image: add text after it");
        goto fail;
    }
    return 0;
fail:
    vision_plan_free(out);
    return -1;
}

void vision_plan_free(vision_plan *p) {
    free(p->tokens);
    free(p->spans);
    memset(p, 0, sizeof *p);
}

void vision_held_free(vision_held *h) {
    free(h->spans);
    memset(h, 0, sizeof *h);
}

void vision_held_truncate(vision_held *h, int n) {
    int k = 0;
    for (int i = 0; i < h->n; i++)
        if (h->spans[i].pos + h->spans[i].lay.n_tokens <= n) h->spans[k++] = h->spans[i];
    h->n = k;
}

static const vision_span *span_at(const vision_span *spans, int n, int pos) {
    for (int i = 0; i < n; i++)
        if (spans[i].pos == pos) return &spans[i];
    return NULL;
}

int vision_plan_prefix(const vision_plan *p, const int32_t *hist, int n_hist, const vision_held *held) {
    const int lim = n_hist < p->n ? n_hist : p->n;
    int i = 0;
    while (i < lim && hist[i] == p->tokens[i]) {
        if (p->tokens[i] != MODEL_TOKEN_EMBD) { i++; continue; }
        /* an image: the whole span, only when the context holds the same image there */
        const vision_span *want = span_at(p->spans, p->n_spans, i);
        const vision_span *have = held ? span_at(held->spans, held->n, i) : NULL;
        if (!want || !have || !want->keyed || !have->keyed || memcmp(want->sha256, have->sha256, 32) != 0 ||
            memcmp(&want->lay, &have->lay, sizeof want->lay) != 0 || i + want->lay.n_tokens > lim)
            break;
        int k = 0;
        while (k < want->lay.n_tokens && hist[i + k] == MODEL_TOKEN_EMBD) k++;
        if (k < want->lay.n_tokens) break;
        i += k;
    }
    return i;
}

static int held_add(vision_held *h, const vision_span *sp) {
    if (grow((void **)&h->spans, &h->cap, h->n + 1, sizeof *h->spans) != 0) return -1;
    h->spans[h->n++] = *sp;
    return 0;
}

int vision_eval_plan(model_ctx *c, vision_model *v, const vision_plan *p, const vision_image *images, vision_cache *cache,
                     vision_held *held, vision_eval_counts *counts) {
    vision_eval_counts cnt = {0};
    float *scratch = NULL;
    size_t scratch_cap = 0;
    if (vision_check_text_model(v, model_ctx_model(c)) != 0) goto fail;
    /* start where the context ends, never inside an image (its rows see each other) */
    if (model_ctx_n_past(c) > p->n - 1) model_ctx_truncate(c, p->n - 1);
    for (bool moved = true; moved;) {
        moved = false;
        const int past = model_ctx_n_past(c);
        for (int s = 0; s < p->n_spans; s++) {
            const vision_span *sp = &p->spans[s];
            if (sp->pos < past && past < sp->pos + sp->lay.n_tokens) {
                model_ctx_truncate(c, sp->pos);   /* a recurrent state may land further back: look again */
                moved = true;
                break;
            }
        }
    }
    int cur = model_ctx_n_past(c);
    cnt.from = cur;
    vision_held_truncate(held, cur);
    for (int s = 0; s < p->n_spans; s++) {
        const vision_span *sp = &p->spans[s];
        if (sp->pos + sp->lay.n_tokens <= cur) { cnt.reused++; continue; }
        if (sp->pos > cur && model_eval(c, p->tokens + cur, sp->pos - cur, NULL, false) != 0) goto fail;
        vision_layout lay;
        int enc = 0;
        const float *rows = vision_cache_encode(cache, v, &images[sp->image], sp->keyed ? sp->sha256 : NULL, &lay, &scratch, &scratch_cap, &enc);
        if (!rows) goto fail;
        if (memcmp(&lay, &sp->lay, sizeof lay) != 0) {
            anv_set_error("image %d: its cached layout differs from the planned one", sp->image);
            goto fail;
        }
        if (enc) cnt.encoded++; else cnt.cached++;
        if (vision_eval_image(c, v, rows, &lay, NULL) != 0) goto fail;
        if (held_add(held, sp) != 0) goto fail;
        cur = sp->pos + sp->lay.n_tokens;
    }
    if (p->n - 1 > cur && model_eval(c, p->tokens + cur, p->n - 1 - cur, NULL, false) != 0) goto fail;
    free(scratch);
    if (counts) *counts = cnt;
    return 0;
fail:
    free(scratch);
    model_ctx_truncate(c, 0);
    held->n = 0;
    if (counts) *counts = cnt;
    return -1;
}
