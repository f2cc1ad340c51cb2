/* sampler: turns next-token logits into a token: greedy, temperature, top-k, top-p,
 * min-p, repeat/presence/frequency penalties over the last repeat_last_n tokens, seeded
 * RNG. Defaults are Ollama's. */
#ifndef ANVIL_SAMPLER_H
#define ANVIL_SAMPLER_H
#include <stdint.h>
#include "sampling_params.h"

typedef struct sampler sampler;

sampler *sampler_new(const sampler_params *p, int32_t n_vocab);
void sampler_free(sampler *s);
/* Picks a token from logits[n_vocab] (modified in place). Does not record it. */
int32_t sampler_sample(sampler *s, float *logits);
/* Records a token (prompt or generated) in the penalty history. */
void sampler_accept(sampler *s, int32_t token);
void sampler_reset(sampler *s);
#endif
