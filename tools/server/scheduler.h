/* scheduler: the server's scheduler (sched.c, sched_batch.c). Loads models on first use (through the store and the
 * device layer) and keeps them for keep_alive; bounds the queue; runs num_parallel
 * slots per model that share one model copy (each slot has its own KV cache), and
 * batches the decode steps of every active slot into one forward pass per step
 * (continuous batching, model_eval_multi). Requests block their HTTP thread; text is
 * streamed through a callback called from the model's worker thread. */
#ifndef ANVIL_SCHED_H
#define ANVIL_SCHED_H
#include <stdbool.h>
#include <stdint.h>
#include "gen_step.h"
#include "chat.h"
#include "reply_parse.h"
#include "image.h"
#include "store.h"

typedef struct {
    int max_loaded;          /* ANVIL_MAX_LOADED_MODELS, default 3 */
    int max_queue;           /* ANVIL_MAX_QUEUE, default 512: requests waiting for a slot */
    int num_parallel;        /* ANVIL_NUM_PARALLEL, default 2: slots per model */
    int64_t keep_alive_ms;   /* ANVIL_KEEP_ALIVE, default 5m; 0 unloads after each request; < 0 forever */
    int context_length;      /* ANVIL_CONTEXT_LENGTH, per slot; 0 = the model's default (model_default_ctx) */
    uint32_t kv_type;        /* ANVIL_KV_CACHE_TYPE f16|q8_0|q4_0|f32 */
    int n_threads;           /* ANVIL_NUM_THREADS, 0 = all */
    bool allow_paths;        /* ANVIL_ALLOW_PATHS=1: a request's model may be a GGUF path on the
                              * server; otherwise models are store names only */
    size_t vision_cache_bytes; /* ANVIL_VISION_CACHE: each vision model's encoded-image cache (vision_cache.h) */
    const char *test_replay; /* ANVIL_TEST_REPLAY (a test hook, logged at start): every reply is
                              * this text, tokenized with special tokens, instead of sampled */
} sched_config;

/* Defaults overridden by the environment; -1 + anv_last_error() naming a bad variable. */
int sched_config_from_env(sched_config *c);
/* Ollama's keep_alive syntax: a number of seconds, or a Go duration "5m", "1h30m", "-1",
 * "0". -1 + error on anything else. */
int sched_parse_duration_ms(const char *text, int64_t *out_ms);

typedef struct sched sched;
sched *sched_new(const sched_config *c, store *st);   /* st is borrowed */
void sched_free(sched *s);                             /* finishes nothing: cancels and unloads */

/* Called with each complete UTF-8 piece of the reply; return false to cancel (client gone). */
typedef bool (*sched_text_fn)(const char *text, int len, void *user);

typedef struct {
    const char *model;              /* store name or GGUF path */
    const char *prompt;             /* /api/generate, /v1/completions: prompt text */
    const chat_message *messages;   /* /api/chat, /v1/chat/completions (prompt must be NULL) */
    int n_messages;
    const char *system;             /* overrides the model's SYSTEM; NULL = model's */
    const char *template_go;        /* overrides the model's TEMPLATE; NULL = model's */
    bool raw;                       /* prompt as is, no template */
    const int32_t *context;         /* /api/generate "context": tokens before the prompt */
    int n_context;
    const void *options;            /* cJSON object: the request's options map (NULL = none);
                                       the OpenAI layer maps its fields into such a map */
    const char *format;             /* NULL, "json" (any object) or JSON schema text */
    const char *tools_json;         /* the request's tools (JSON array text), NULL = none */
    const anv_image *images;        /* decoded images, numbered as the "[img-N]" markers in the
                                       prompt / messages (api_images.h); evaluated with the
                                       model's projector (engine/vision) */
    int n_images;
    int think;                      /* CHAT_THINK_* (off, on, or a level) */
    reply_parse_opts *reply_style;  /* optional out: set (prompt_reply_style: harmony or not)
                                       before on_text is first called */
    int64_t keep_alive_ms;          /* used when keep_alive_set */
    bool keep_alive_set;
    bool want_context;              /* return the token context (Ollama's "context") */
    bool no_truncate;               /* "truncate": false: a prompt over the context is a 400, never
                                       shortened (default: shortened, prepare_gen in sched.c) */
    bool count_only;                /* only template and tokenize the prompt: its length in
                                       res->prompt_tokens and prompt_eval_count, done_reason "count", nothing
                                       evaluated (Anthropic's count_tokens) */
    sched_text_fn on_text;
    /* optional: each generated token's log-probabilities (the request's logprobs), called on
     * the worker before that token's text reaches on_text, with the same user pointer */
    gen_logprob_fn on_logprob;
    int top_logprobs;               /* 0..20 alternatives per token (with on_logprob) */
    void *user;
    /* NULL or false once nobody waits for the answer (client gone): a request still in
     * the queue is then dropped (status 499) before it costs a prompt evaluation. */
    bool (*still_wanted)(void *user);
} sched_gen_request;

typedef struct {
    int status;                     /* 0 on success, else the HTTP status: 400 404 500 503 */
    char error[512];                /* one line */
    const char *done_reason;        /* "stop", "length", "load", "unload", "count" */
    char *stop_sequence;            /* malloc'd: the stop string that ended the reply, or NULL */
    int prompt_eval_count, eval_count;
    int prompt_tokens;              /* the whole prompt; prompt_eval_count of them were evaluated,
                                       the rest reused from the slot's cache */
    int64_t total_ns, load_ns, prompt_eval_ns, eval_ns;
    int32_t *context;               /* malloc'd (want_context), n_context tokens */
    int n_context;
    /* what shortened a prompt longer than the context (0, 0 when it fit): the oldest messages
     * dropped and the tokens cut from the oldest text of the last message */
    int truncated_messages, truncated_tokens;
    char model[256];                /* the display name */
} sched_result;

/* Blocks until the request is finished, cancelled or failed. A request with neither a
 * prompt nor messages (or an empty prompt) only loads the model (done_reason "load"),
 * or unloads it when keep_alive is 0 ("unload"). Returns 0 or -1 (res->status, error). */
int sched_generate(sched *s, const sched_gen_request *r, sched_result *res);
void sched_result_clear(sched_result *res);

typedef struct {
    const char *model;
    const char *const *inputs;      /* n_inputs texts (NULL when token_inputs is set) */
    const int32_t *const *token_inputs; /* or n_inputs lists of token ids (OpenAI's token arrays),
                                     * token_lens[i] ids each, embedded as given (no BOS/EOS added) */
    const int *token_lens;
    int n_inputs;
    bool truncate;                  /* cut inputs longer than the context (else Ollama's 400) */
    bool raw;                       /* the model's pooled vector as is (legacy /api/embeddings);
                                     * else L2-normalised, as Ollama's /api/embed */
    int dimensions;                 /* 0 = full; else the first N, renormalised */
    const void *options;            /* cJSON options map or NULL */
    int64_t keep_alive_ms;
    bool keep_alive_set;
    /* NULL or false once nobody waits for the answer (client gone, server stopping): polled
     * between inputs while they are tokenized and embedded, the request then ends (499). */
    bool (*still_wanted)(void *user);
    void *user;
} sched_embed_request;

typedef struct {
    int status;
    char error[512];
    float *embeddings;              /* n_inputs x dim (L2-normalised unless raw), malloc'd */
    int n, dim;
    int prompt_eval_count;
    int64_t total_ns, load_ns;
    char model[256];
} sched_embed_result;

/* One vector per input through model_embed: the model's pooling ({arch}.pooling_type: CLS,
 * mean or last; a generation model without the key: the mean of its final-normed hidden
 * states), then Ollama's normalisation. An input longer than the context is cut to its
 * first tokens, keeping a trailing end token (BERT's [SEP]), or is a 400 without truncate. */
int sched_embed(sched *s, const sched_embed_request *r, sched_embed_result *res);
void sched_embed_result_clear(sched_embed_result *res);

typedef struct {
    char name[256];
    char digest[DIGEST_STR_LEN + 1];     /* manifest digest (the ID of anvil list), "" for a path */
    char arch[64];
    uint64_t size;                  /* bytes: weights + KV caches + scratch, all devices */
    uint64_t size_vram;             /* of which on GPUs */
    int64_t expires_at_ms;          /* Unix ms; 0 = never; -1 = stopping */
    int context_length;             /* per slot */
    int n_active;                   /* requests running now (in a slot or embedding) */
    int n_queued;                   /* requests waiting for one of its slots */
    int n_slots;                    /* parallel slots (num_parallel) */
    int n_layer, n_gpu_layers;      /* layers, and of them on the GPU backend */
    char backend[32];               /* "cpu" or the GPU backend's name ("vulkan0", "hip0") */
    char device[128];               /* that device's description, "CPU" for the CPU */
    char kv_type[16];               /* the KV cache type ("f16", "q8_0", "f32") */
    bool embedding_only;            /* an embedding model (no generation) */
} sched_loaded;

int sched_ps(sched *s, sched_loaded **out, int *n_out);   /* malloc'd array */
/* Unloads now (after its running requests finish); -1 + 404 error if not loaded. */
int sched_stop(sched *s, const char *model);

/* The one way the server turns a request's model into a store entry: a store name (a
 * GGUF path only with allow_paths; then the CLI's store_resolve). Names with control
 * characters are refused. Returns 0, or the HTTP status (400 a bad name, 404 not found,
 * 500 a damaged store entry) with anv_last_error() set: an error text that never holds a
 * server path (a damaged manifest or blob is logged in full, answered by name). */
int sched_lookup(sched *s, const char *name, store_entry *e);
bool sched_allow_paths(const sched *s);
/* Rewrites an error text for a client: path (when given: the model's file) becomes name,
 * and every other absolute path becomes "<path>" (the client's own path, when paths are
 * allowed and it equals name, stays). */
void sched_redact_paths(char *msg, size_t cap, const char *path, const char *name);

typedef struct {
    uint64_t requests_total, requests_failed, requests_rejected_queue_full;
    uint64_t prompt_tokens_total, generated_tokens_total;
    double generate_seconds_total;  /* wall time spent in decode steps */
    int queue_length;               /* waiting for a slot now */
    int n_loaded;
    uint64_t bytes_cpu, bytes_gpu;  /* of the loaded models */
    uint64_t batched_steps_total, batched_tokens_total; /* forward passes with >1 sequence */
    uint64_t embed_requests_total, embed_inputs_total;   /* embedding requests that succeeded, their inputs */
    int n_active;                   /* requests running now, all models */
    /* images of requests evaluated: encoded, taken from the per-digest cache, or reused with
     * the prompt prefix already in a slot's KV cache (neither encoded nor evaluated) */
    uint64_t images_encoded_total, images_cached_total, images_reused_total;
} sched_metrics;
void sched_get_metrics(sched *s, sched_metrics *m);
#endif
