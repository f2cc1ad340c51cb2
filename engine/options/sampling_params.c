/* sampling_params: Ollama's default sampling settings (sampling_params.h). */
#include "sampling_params.h"

void sampler_params_default(sampler_params *p) {
    p->temperature = 0.8f;
    p->top_k = 40;
    p->top_p = 0.9f;
    p->min_p = 0.0f;
    p->repeat_penalty = 1.0f;
    p->repeat_last_n = 64;
    p->presence_penalty = 0.0f;
    p->frequency_penalty = 0.0f;
    p->seed = 0;
}
