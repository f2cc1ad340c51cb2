/* chat_vision: the images of `anvil run`'s interactive chat in this process. Each turn the
 * whole conversation is rendered again with every message's images (Ollama's placement: an
 * "[img-N]" marker per image, numbered through the conversation, before the message's text);
 * engine/vision's plan then reuses what the context already holds (the text and images of the
 * earlier turns), takes images it no longer holds from the per-digest cache (vision_cache.h)
 * and encodes only new ones. The projector is loaded on the first image; /load drops it. */
#ifndef ANVIL_CHAT_VISION_H
#define ANVIL_CHAT_VISION_H
#include <stdbool.h>
#include <stdint.h>

#include "chat.h"
#include "model.h"
#include "repl.h"
#include "vision_plan.h"

typedef struct chat_vision chat_vision;

chat_vision *chat_vision_new(void);
/* The model changed (or the session ends): the projector, the cache and the context record go. */
void chat_vision_reset(chat_vision *cv);
void chat_vision_free(chat_vision *cv);

/* Whether any message carries an image. */
bool chat_vision_any(const repl_msg_images *images, int n_hist);
/* hist with each message's image markers placed (contents malloc'd: chat_vision_untag). NULL +
 * error when out of memory. */
chat_message *chat_vision_tag(const chat_message *hist, const repl_msg_images *images, int n_hist);
void chat_vision_untag(chat_message *tagged, int n_hist);

/* The rendered prompt text (with the markers of chat_vision_tag) into ctx: the projector
 * (projector_path) loaded if needed, the images decoded, the prefix ctx holds reused, the rest
 * evaluated but the last token. Returns the prompt's tokens for generate_seq (malloc'd; image
 * rows as MODEL_TOKEN_EMBD) and *counts what happened to the images; NULL + one-line error. */
int32_t *chat_vision_eval(chat_vision *cv, model *m, model_ctx *ctx, const char *projector_path, const char *text,
                          const repl_msg_images *images, int n_hist, int *n_tok, vision_eval_counts *counts);
#endif
