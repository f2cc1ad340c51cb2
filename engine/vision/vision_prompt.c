/* vision_prompt: a prompt of text and images evaluated into a fresh context in one call
 * (vision_eval_prompt, vision.h), as llama.cpp's mtmd chunks it. The layout (the text split at
 * each media marker, each image wrapped in the projector's begin / end text, every piece
 * tokenized on its own, BOS once) is vision_plan_prompt's, and the evaluation vision_eval_plan's
 * without a cache: one chunking for the CLI, the server and the tests. */
#include "vision_plan.h"

#include <stddef.h>

int vision_eval_prompt(model_ctx *c, vision_model *v, const char *prompt, const char *marker, const vision_image *images,
                       int n_images, int32_t **tokens_out, int *n_out) {
    *tokens_out = NULL;
    *n_out = 0;
    model *m = model_ctx_model(c);
    if (vision_check_text_model(v, m) != 0) return -1;
    vision_plan plan;
    if (vision_plan_prompt(v, m, prompt, marker, images, NULL, n_images, &plan) != 0) return -1;
    model_ctx_truncate(c, 0);
    vision_held held = {0};
    const int rc = vision_eval_plan(c, v, &plan, images, NULL, &held, NULL);
    vision_held_free(&held);
    if (rc == 0) {
        *tokens_out = plan.tokens;
        *n_out = plan.n;
        plan.tokens = NULL;
    }
    vision_plan_free(&plan);
    return rc;
}
