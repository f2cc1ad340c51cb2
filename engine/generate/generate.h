/* generate: the token generation loop of `anvil run` (and the reference the server's
 * batched slots are tested against): reuses the cached prefix, evaluates the prompt, then
 * evaluates token after token while gen_seq_step (gen_step.h, the step the server's
 * slots run too) samples, streams and decides the end: end of generation, a stop string,
 * grammar completion, the token limit or a full context. */
#ifndef ANVIL_GENERATE_H
#define ANVIL_GENERATE_H
#include <stdbool.h>
#include <stdint.h>
#include "gen_step.h"
#include "model.h"
#include "sampler.h"

typedef struct {
    int n_prompt;          /* prompt tokens given */
    int n_prompt_eval;     /* of which evaluated (the rest came from the cache) */
    double t_prompt;       /* seconds */
    int n_gen;             /* tokens generated */
    double t_gen;          /* seconds, first sampled token to last */
    const char *done_reason; /* "stop" (end of generation, stop string, grammar complete,
                                callback), "length" (num_predict or context full) */
} gen_stats;

/* cfg: tok may be NULL (the model's); the sampler is reset and given the prompt here; gm
 * and stop, if given, must be at their start (grammar_matcher_reset, a fresh matcher).
 * Returns 0 or -1 (anv_last_error(): "sampling: ...", "format: ..." or the model's). */
int generate_seq(model_ctx *c, const gen_seq_config *cfg, const int32_t *prompt, int n_prompt,
                 gen_stats *st);
/* Without grammar or stop strings. n_predict < 0: until end of generation or a full context. */
int generate(model_ctx *c, sampler *s, const int32_t *prompt, int n_prompt, int n_predict,
             gen_text_fn on_text, void *user, gen_stats *st);
#endif
