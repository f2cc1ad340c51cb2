/* sampling_params: the sampling settings of one generation (temperature, top-k, top-p, min-p,
 * penalties, seed) with Ollama's defaults: plain values that run options (options.h) and
 * Modelfile PARAMETER lines carry, and the sampler (generate/sampler.h) runs. */
#ifndef ANVIL_SAMPLING_PARAMS_H
#define ANVIL_SAMPLING_PARAMS_H
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

void sampler_params_default(sampler_params *p);
#endif
