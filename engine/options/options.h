/* options: the run-time options of one generation, with Ollama's names and defaults
 * (sampling, num_predict, stop strings, num_ctx, num_gpu, num_thread ...). Options are
 * layered: defaults, then the model's Modelfile PARAMETERs (the store's params layer,
 * JSON), then a request's "options" map; each layer replaces the keys it names. */
#ifndef ANVIL_OPTIONS_H
#define ANVIL_OPTIONS_H
#include <stdbool.h>
#include <stdint.h>
#include "sampling_params.h"

#define OPTIONS_MAX_STOP 16

typedef struct {
    sampler_params sp;   /* temperature, top_k, top_p, min_p, repeat_*, penalties, seed (0 = random) */
    int num_predict;     /* -1 = until the model stops or the context is full */
    int num_ctx;         /* 0 = the model's default */
    int num_batch;       /* 512 */
    int num_gpu;         /* -1 = auto (all that fit), 0 = CPU only, N = the last N layers */
    int num_thread;      /* 0 = all cores */
    int num_keep;        /* 4 (accepted; context shifting is not implemented) */
    int n_stop;
    char *stop[OPTIONS_MAX_STOP]; /* owned copies */
} run_options;

void options_default(run_options *o);
void options_clear(run_options *o);          /* frees the stop strings */
void options_copy(run_options *dst, const run_options *src);
/* Applies one key/value as written in a Modelfile (`PARAMETER temperature 0.7`). A
 * repeated `stop` adds a string. Returns -1 + anv_last_error() naming an unknown key or a
 * bad value. */
int options_set_text(run_options *o, const char *key, const char *value);
/* Applies a JSON object (the store's params layer, an API "options" map) given as text
 * or as a cJSON object (cjson: const cJSON *). "stop" (string or array) replaces the
 * list. Unknown keys are ignored like Ollama does (names collected in *unknown if not
 * NULL, comma separated, malloc'd); a wrong type is an error naming the key. */
int options_apply_json_text(run_options *o, const char *json, char **unknown);
int options_apply_cjson(run_options *o, const void *cjson, char **unknown);
/* The options that differ from the defaults as a JSON object text (Ollama's params
 * layer shape: {"stop":["a"],"temperature":0.7}); malloc'd. */
char *options_to_json(const run_options *o);
#endif
