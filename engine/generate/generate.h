/* generate: the token generation loop shared by the CLI and (later) the server: reuses
 * the cached prefix, evaluates the prompt, samples until end-of-generation, the token
 * limit or a full context, and streams complete UTF-8 text to a callback. */
#ifndef ANVIL_GENERATE_H
#define ANVIL_GENERATE_H
#include <stdbool.h>
#include <stdint.h>
#include "model.h"
#include "sampler.h"

typedef struct {
    int n_prompt;          /* prompt tokens given */
    int n_prompt_eval;     /* of which evaluated (the rest came from the cache) */
    double t_prompt;       /* seconds */
    int n_gen;             /* tokens generated */
    double t_gen;          /* seconds, first sampled token to last */
    const char *done_reason; /* "stop" (end of generation), "length" (limit or context full) */
} gen_stats;

/* Returns false to stop generating. */
typedef bool (*gen_text_fn)(const char *text, int len, void *user);

/* n_predict < 0: until end of generation or a full context. Returns 0 or -1 (anv_last_error). */
int generate(model_ctx *c, sampler *s, const int32_t *prompt, int n_prompt, int n_predict,
             gen_text_fn on_text, void *user, gen_stats *st);
#endif
