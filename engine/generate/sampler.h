/* sampler: turns next-token logits into a token: greedy, temperature, top-k, top-p,
 * min-p, repeat/presence/frequency penalties over the last repeat_last_n tokens, seeded
 * RNG. Defaults are Ollama's. */
#ifndef ANVIL_SAMPLER_H
#define ANVIL_SAMPLER_H
#include <stdint.h>

typedef struct {
    float temperature;       /* 0.8; <= 0 means greedy */
    int top_k;               /* 40; <= 0 disables */
    float top_p;             /* 0.9; >= 1 disables */
    float min_p;             /* 0.0; <= 0 disables */
    float repeat_penalty;    /* 1.0 = off (Ollama's default since api.DefaultOptions changed it from 1.1) */
    int repeat_last_n;       /* 64; 0 disables, -1 = whole context */
    float presence_penalty;  /* 0 */
    float frequency_penalty; /* 0 */
    uint64_t seed;           /* 0 = random (time based) */
} sampler_params;

typedef struct sampler sampler;

void sampler_params_default(sampler_params *p);
sampler *sampler_new(const sampler_params *p, int32_t n_vocab);
void sampler_free(sampler *s);
/* Picks a token from logits[n_vocab] (modified in place). Does not record it. */
int32_t sampler_sample(sampler *s, float *logits);
/* Records a token (prompt or generated) in the penalty history. */
void sampler_accept(sampler *s, int32_t token);
void sampler_reset(sampler *s);
#endif
