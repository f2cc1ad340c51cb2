/* gen_step: what happens to one sequence between two evaluations, the same for `anvil run`
 * (generate.c) and every slot of the server's batching worker: the grammar mask, sampling,
 * end of generation, grammar and sampler accept, detokenisation (tok_stream), stop strings,
 * the num_predict and context limits, grammar completion, the done reason, cancellation by
 * the text callback, and the final flush of held-back text.
 *
 *     gen_seq g;
 *     gen_seq_init(&g, &(gen_seq_config){.tok = tok, .smp = smp, .gm = gm, .stop = stop,
 *                                         .num_predict = n, .on_text = print, .user = u});
 *     eval(prompt) -> logits
 *     while ((s = gen_seq_step(&g, logits, n_past, n_ctx)) == GEN_CONTINUE)
 *         eval(&g.pending, 1) -> logits
 *     if (s == GEN_DONE) gen_seq_finish(&g);        // g.done_reason: "stop" | "length"
 *     else ... anv_last_error() ("sampling: ..." or "format: ...")
 */
#ifndef ANVIL_GEN_STEP_H
#define ANVIL_GEN_STEP_H
#include <stdbool.h>
#include <stdint.h>
#include "grammar.h"
#include "sampler.h"
#include "stop_strings.h"
#include "tokenizer.h"

/* Gets text that is safe to show (complete UTF-8, no part of a stop string). Returns
 * false to stop generating (done reason "stop"; nothing more is flushed). */
typedef bool (*gen_text_fn)(const char *text, int len, void *user);

/* A generated token's log-probability under the model: the log-softmax of the raw logits, before
 * any sampling setting or format mask (what llama.cpp's server and Ollama report), and the
 * n_top most likely tokens of that step (most likely first). */
#define GEN_MAX_TOP_LOGPROBS 20
typedef struct { int32_t id; float logprob; } gen_token_logprob;
typedef struct {
    gen_token_logprob chosen;
    gen_token_logprob top[GEN_MAX_TOP_LOGPROBS];
    int n_top;
} gen_logprobs;
/* Called for every sampled token that is not an end of generation, before its text is passed on. */
typedef void (*gen_logprob_fn)(const gen_logprobs *lp, const tokenizer *tok, void *user);

typedef struct {
    const tokenizer *tok;
    sampler *smp;              /* the prompt already accepted into its history */
    grammar_matcher *gm;       /* optional: structured output (at its start state) */
    stop_matcher *stop;        /* optional: stop strings (fresh) */
    int num_predict;           /* < 0: until end of generation or a full context */
    gen_text_fn on_text;       /* optional */
    void *user;
    const int32_t *forced;     /* optional (tests): these tokens instead of sampling, then the end */
    const char *const *shown_specials;   /* optional, NULL-terminated: control tokens with these texts
                                            are printed (Ollama's preserved tokens: Ministral's [THINK],
                                            [TOOL_CALLS], [ARGS] that its reply parser needs) */
    int n_forced;
    gen_logprob_fn on_logprob; /* optional: log-probabilities (then raw_scratch is required) */
    int top_logprobs;          /* 0..GEN_MAX_TOP_LOGPROBS alternatives per token */
    float *raw_scratch;        /* n_logits floats the caller owns: the raw logits kept for on_logprob */
    int n_logits;              /* floats in a logits row (the model's n_vocab) */
} gen_seq_config;

typedef enum { GEN_CONTINUE, GEN_DONE, GEN_ERROR } gen_status;

typedef struct {
    gen_seq_config c;
    tok_stream ts;
    int n_gen;                 /* tokens sampled and accepted (eval_count) */
    int32_t pending;           /* the last sampled token */
    bool has_pending;          /* pending is not evaluated yet: on GEN_CONTINUE always (evaluate
                                  it next); on GEN_DONE when the sequence ended after sampling
                                  it (it still belongs to the context) */
    const char *done_reason;   /* NULL while running, then "stop" or "length" */
    bool stop_hit, cancelled, failed, flushed;
    bool bad_format;             /* failed because the request's format allows no token (a 400) */
} gen_seq;

void gen_seq_init(gen_seq *g, const gen_seq_config *c);
/* One step from the logits of the last evaluated token (n_vocab floats, modified in place);
 * n_past/n_ctx: the sequence's cache now. GEN_ERROR: anv_last_error() says
 * "sampling: ..." (every logit NaN/-inf) or "format: ..." (the grammar refused a token). */
gen_status gen_seq_step(gen_seq *g, float *logits, int n_past, int n_ctx);
/* At the end: passes on text still held back (an incomplete UTF-8 tail, a possible start of
 * a stop string), unless a stop string was hit, the callback stopped, or a step failed.
 * Once only. */
void gen_seq_finish(gen_seq *g);
#endif
