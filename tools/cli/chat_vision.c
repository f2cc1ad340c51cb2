/* chat_vision: the interactive chat's images in this process (chat_vision.h). */
#include "chat_vision.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_images.h"
#include "error.h"
#include "image.h"
#include "vision_cache.h"

struct chat_vision {
    vision_model *v;       /* loaded on the first image */
    char *projector;       /* its path */
    vision_cache *cache;
    vision_held held;      /* the images the context holds */
};

chat_vision *chat_vision_new(void) { return calloc(1, sizeof(chat_vision)); }

void chat_vision_reset(chat_vision *cv) {
    if (!cv) return;
    vision_free(cv->v);
    free(cv->projector);
    vision_cache_free(cv->cache);
    vision_held_free(&cv->held);
    memset(cv, 0, sizeof *cv);
}

void chat_vision_free(chat_vision *cv) {
    chat_vision_reset(cv);
    free(cv);
}

bool chat_vision_any(const repl_msg_images *images, int n_hist) {
    for (int i = 0; images && i < n_hist; i++)
        if (images[i].n > 0) return true;
    return false;
}

chat_message *chat_vision_tag(const chat_message *hist, const repl_msg_images *images, int n_hist) {
    chat_message *t = calloc((size_t)(n_hist ? n_hist : 1), sizeof *t);
    if (!t) { anv_set_error("out of memory"); return NULL; }
    int first = 0;
    for (int i = 0; i < n_hist; i++) {
        t[i] = hist[i];
        t[i].content = api_image_tag_text(hist[i].content ? hist[i].content : "", first, images[i].n);
        if (!t[i].content) {
            chat_vision_untag(t, i);
            anv_set_error("out of memory");
            return NULL;
        }
        first += images[i].n;
    }
    return t;
}

void chat_vision_untag(chat_message *tagged, int n_hist) {
    if (!tagged) return;
    for (int i = 0; i < n_hist; i++) free((char *)tagged[i].content);
    free(tagged);
}

/* Loads the projector for m unless it is the one loaded; -1 + error. */
static int ensure_projector(chat_vision *cv, model *m, const char *path) {
    if (cv->v && cv->projector && !strcmp(cv->projector, path)) return 0;
    chat_vision_reset(cv);
    size_t bytes = VISION_CACHE_DEFAULT_BYTES;
    if (vision_cache_bytes_setting(&bytes) != 0) return -1;
    vision_load_opts vo = {.cpu = m->cpu, .gpu = m->gpu};
    if (!(cv->v = vision_load(path, &vo)) || vision_check_text_model(cv->v, m) != 0 || !(cv->projector = strdup(path)) ||
        !(cv->cache = vision_cache_new(bytes))) {
        if (cv->v && (!cv->projector || !cv->cache)) anv_set_error("out of memory");
        chat_vision_reset(cv);
        return -1;
    }
    return 0;
}

int32_t *chat_vision_eval(chat_vision *cv, model *m, model_ctx *ctx, const char *projector_path, const char *text,
                          const repl_msg_images *images, int n_hist, int *n_tok, vision_eval_counts *counts) {
    *n_tok = 0;
    memset(counts, 0, sizeof *counts);
    if (ensure_projector(cv, m, projector_path) != 0) return NULL;
    /* the largest bidirectional image in one pass (a no-op once the context's batch holds it) */
    if (model_ctx_reserve_batch(ctx, vision_batch_rows(cv->v)) != 0) return NULL;
    int n_img = 0;
    for (int i = 0; i < n_hist; i++) n_img += images[i].n;
    anv_image *dec = calloc((size_t)n_img, sizeof *dec);
    vision_image *vis = calloc((size_t)n_img, sizeof *vis);
    const uint8_t **keys = calloc((size_t)n_img, sizeof *keys);
    int *order = calloc((size_t)n_img, sizeof *order);
    char *vtext = NULL;
    int32_t *toks = NULL;
    vision_plan p = {0};
    int n_dec = 0, n_order = 0;
    if (!dec || !vis || !keys || !order) { anv_set_error("out of memory"); goto done; }
    for (int i = 0; i < n_hist; i++)   /* numbered as the markers: through the conversation */
        for (int k = 0; k < images[i].n; k++, n_dec++)
            if (image_decode(images[i].files[k].data, images[i].files[k].size, NULL, &dec[n_dec]) != 0) {
                char why[400];
                snprintf(why, sizeof why, "%s", anv_last_error());
                anv_set_error("%s: %s", images[i].files[k].path, why);
                goto done;
            }
    if (!(vtext = api_images_to_marker(text, VISION_MARKER, n_img, order, &n_order))) goto done;
    for (int i = 0; i < n_order; i++) {
        const anv_image *im = &dec[order[i]];
        vis[i] = (vision_image){im->rgb, im->width, im->height};
        keys[i] = im->sha256;
    }
    if (vision_plan_prompt(cv->v, m, vtext, NULL, vis, keys, n_order, &p) != 0) goto done;
    if (p.n > model_ctx_n_ctx(ctx)) {
        anv_set_error("the prompt is %d tokens with its images, more than the context length of %d (num_ctx)", p.n,
                      model_ctx_n_ctx(ctx));
        goto done;
    }
    vision_held_truncate(&cv->held, model_ctx_n_past(ctx));   /* a text-only turn may have cut the context */
    const int keep = vision_plan_prefix(&p, model_ctx_history(ctx), model_ctx_n_past(ctx), &cv->held);
    model_ctx_truncate(ctx, keep < p.n - 1 ? keep : p.n - 1);
    if (vision_eval_plan(ctx, cv->v, &p, vis, cv->cache, &cv->held, counts) != 0) goto done;
    toks = p.tokens;
    *n_tok = p.n;
    p.tokens = NULL;
done:
    vision_plan_free(&p);
    for (int i = 0; i < n_dec; i++) image_free(&dec[i]);
    free(dec);
    free(vis);
    free(keys);
    free(order);
    free(vtext);
    return toks;
}
