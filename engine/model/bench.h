/* bench: what `anvil bench` measures, kept out of the CLI so tests and other tools can use
 * it: the bytes a loaded model reads per generated token (the bandwidth accounting), and
 * the llama-bench style timing loops for prompt processing (pp) and token generation (tg)
 * with their statistics.
 *
 * Bandwidth accounting, per generated token:
 *  - weights: every tensor of every layer, the output norm and head (read in full once per
 *    token; a tied head is the embedding table), llama3 rope_freqs, and ONE row of the
 *    token embedding table (the lookup), not the whole table;
 *  - KV cache: the token at position p attends to positions [0, p] (a sliding-window layer
 *    to the last `window` of them), so each layer reads that many rows of K and of V.
 * Writes (the new K/V row, activations) are not counted. */
#ifndef ANVIL_BENCH_H
#define ANVIL_BENCH_H
#include <stdbool.h>
#include <stdint.h>

#include "model.h"

typedef struct {
    uint64_t layers;      /* all blk.* tensors */
    uint64_t output;      /* output_norm + output head (the embedding table when tied) */
    uint64_t embd_row;    /* one row of token_embd */
    uint64_t rope_freqs;  /* llama3 rope_freqs (0 if absent) */
    uint64_t total;       /* the sum: weight bytes read per generated token */
} bench_weight_bytes;

/* Weight bytes read per generated token of a loaded model (its tensors as placed). */
void bench_weight_bytes_per_token(const model *m, bench_weight_bytes *out);
/* KV bytes read to generate the token at position pos (0-based: the cache holds pos
 * earlier tokens), for a cache of kv_type (QT_F16 / QT_F32 / QT_Q8_0 / QT_Q4_0). */
uint64_t bench_kv_bytes_at(const model_hparams *hp, uint32_t kv_type, int pos);
/* Mean KV bytes per token over n_gen tokens generated at positions depth .. depth+n_gen-1. */
double bench_kv_bytes_mean(const model_hparams *hp, uint32_t kv_type, int depth, int n_gen);
/* Sum of every tensor in the file (llama-bench's model_size). */
uint64_t bench_model_size(const model *m);

/* One test, as llama-bench runs it: n_prompt > 0 is a pp test (the prompt in calls of
 * n_batch tokens, logits of each call's last token), else a tg test (n_gen calls of one
 * token each, with logits). Tokens are pseudo-random from the vocabulary (seeded), the
 * first one BOS when the model has one. Before the timed repetitions: one warm-up (pp: the
 * whole prompt; tg: one token) unless no_warmup; each repetition clears the cache, fills
 * n_depth tokens untimed, then times the test. */
typedef struct {
    int n_prompt, n_gen, n_depth;
    int n_batch;          /* tokens per model_eval call for pp (<= 0: all in one call) */
    int reps;             /* >= 1 */
    bool no_warmup;
    uint64_t seed;
} bench_test;

/* Context size a test needs: n_prompt + n_gen + n_depth. */
int bench_test_n_ctx(const bench_test *t);
/* Runs the test on c (n_ctx >= bench_test_n_ctx) and writes reps durations in
 * nanoseconds to samples_ns. 0, or -1 with anv_last_error(). */
int bench_run(model_ctx *c, const bench_test *t, uint64_t *samples_ns);

typedef struct { double mean, stddev; } bench_stats;
/* Mean and sample standard deviation (n - 1; 0 for n <= 1) of n values. */
bench_stats bench_stats_of(const double *x, int n);
/* tokens/s of each sample: 1e9 * n_tokens / ns (the way llama-bench derives avg_ts). */
void bench_samples_ts(const uint64_t *samples_ns, int n, int n_tokens, double *ts);
#endif
