/* vision_plan: a prompt of text and images laid out as tokens before anything is evaluated
 * (image rows as MODEL_TOKEN_EMBD, each image's rows a span with its digest), so that
 *  - its length is known without encoding (count_tokens, prompt_eval_count),
 *  - a context that already holds a prefix of it is reused: text tokens must be equal and an
 *    image's rows count as equal only when the context holds the same image (same sha256, same
 *    layout) at the same position; two different images never match, and no image is split,
 *  - the images it still needs come from the per-digest cache (vision_cache.h) or are encoded.
 * The chunking is vision_eval_prompt's (llama.cpp's mtmd): the text split at each marker, every
 * image wrapped in vision_image_begin / end, BOS on the first chunk only.
 *
 * Use (server slot or REPL conversation, each context with its vision_held record):
 *   vision_plan p; vision_plan_prompt(v, m, text, NULL, images, n, &p);
 *   int keep = vision_plan_prefix(&p, model_ctx_history(c), model_ctx_n_past(c), &held);
 *   model_ctx_truncate(c, keep < p.n - 1 ? keep : p.n - 1);
 *   vision_eval_plan(c, v, &p, images, cache, &held, &counts);   // all but p's last token
 * then the last token is evaluated by the generation loop for the first logits. */
#ifndef ANVIL_VISION_PLAN_H
#define ANVIL_VISION_PLAN_H
#include <stdbool.h>
#include <stdint.h>

#include "vision.h"
#include "vision_cache.h"

typedef struct {
    int pos;               /* first row (index into the tokens / the context) */
    vision_layout lay;     /* lay.n_tokens rows */
    int image;             /* plan: index into the images; held: unused */
    bool keyed;            /* sha256 is set (an image without a digest never matches) */
    uint8_t sha256[32];
} vision_span;

typedef struct {
    int32_t *tokens;       /* n: text token ids, image rows as MODEL_TOKEN_EMBD */
    int n;
    vision_span *spans;    /* one per image, in order */
    int n_spans;
} vision_plan;

/* Tokenizes prompt (one marker per image; NULL or "" marker: VISION_MARKER) and lays out each
 * image (vision_image_layout: no encoding; a model from vision_load_info is enough). sha256:
 * NULL, or n_images digests (anv_image.sha256; an entry may be NULL) naming each image for the
 * cache and prefix reuse. 0, or -1 + error (marker count != n_images, a bad image size, a
 * prompt that ends with an image). */
int vision_plan_prompt(const vision_model *v, const model *m, const char *prompt, const char *marker,
                       const vision_image *images, const uint8_t *const *sha256, int n_images, vision_plan *out);
void vision_plan_free(vision_plan *p);

/* The images one context holds, by position (its rows in model_ctx_history are MODEL_TOKEN_EMBD). */
typedef struct {
    vision_span *spans;
    int n, cap;
} vision_held;
void vision_held_free(vision_held *h);
/* Forgets the images not wholly within the first n rows (after model_ctx_truncate(c, n)). */
void vision_held_truncate(vision_held *h, int n);

/* How many leading tokens of p the context (hist: its history, n_hist rows, and held) already
 * holds: equal text tokens, and images equal by digest and layout at the same position. */
int vision_plan_prefix(const vision_plan *p, const int32_t *hist, int n_hist, const vision_held *held);

typedef struct {
    int reused;    /* images already in the context (no encoding, no evaluation) */
    int cached;    /* images taken from the cache (evaluated, not encoded) */
    int encoded;   /* images encoded */
    int from;      /* the first position evaluated (the context held the tokens before it) */
} vision_eval_counts;

/* Evaluates p's tokens from the context's n_past (moved back to an image's first row if it
 * falls inside one) to all but the last, images from cache (NULL: none) or encoded, and
 * records the images in held. counts may be NULL. 0, or -1 + error (then c and held are
 * cleared). */
int vision_eval_plan(model_ctx *c, vision_model *v, const vision_plan *p, const vision_image *images, vision_cache *cache,
                     vision_held *held, vision_eval_counts *counts);
#endif
