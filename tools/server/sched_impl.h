/* sched_impl: the scheduler's internal state, shared by sched.c (queue, loading,
 * keep-alive, the public calls) and sched_batch.c (the per-model worker thread that runs
 * the continuous-batching loop). Not a public header. */
#ifndef ANVIL_SCHED_IMPL_H
#define ANVIL_SCHED_IMPL_H
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "gen_step.h"
#include "grammar.h"
#include "model.h"
#include "options.h"
#include "sampler.h"
#include "scheduler.h"
#include "stop_strings.h"
#include "tokenizer.h"
#include "vision.h"
#include "vision_cache.h"
#include "vision_plan.h"

#define SCHED_MAX_SLOTS 64     /* num_parallel limit */

typedef enum { JOB_GEN, JOB_EMBED } job_kind;

/* One request handed to a model's worker. Prepared (tokenized, sampler and grammar
 * built) on the caller's thread; owned by the caller, which waits for done. */
typedef struct job {
    job_kind kind;
    struct job *next;
    bool done;
    int status;
    char error[512];
    int64_t t_start_ns;          /* sched_generate / sched_embed entry */
    /* JOB_GEN */
    const sched_gen_request *gr;
    sched_result *res;
    int32_t *prompt;
    int32_t *forced;             /* ANVIL_TEST_REPLAY tokens (NULL: sample) */
    int n_forced;
    int n_prompt;
    run_options opt;
    sampler *smp;
    grammar *g;
    grammar_matcher *gm;
    stop_matcher *stop;
    /* with images: the rendered prompt with one VISION_MARKER per image, the images in marker
     * order and the projector; prompt / n_prompt are its tokens (image rows as MODEL_TOKEN_EMBD,
     * planned on the caller's thread: vision_plan.h) and vplan's spans say which image each
     * run of rows is; the worker evaluates what the slot does not hold yet (eval_images) */
    char *vision_text;
    vision_plan vplan;           /* tokens moved to prompt; the spans */
    vision_image *vimgs;
    const uint8_t **vkeys;       /* each image's sha256 (the request's anv_image) */
    int n_vimgs;
    char *projector;
    /* JOB_EMBED */
    const sched_embed_request *er;
    int32_t **in_tokens;
    int *in_len;
    int n_in;
    int dimensions;
    bool embd_raw;               /* no normalisation (legacy /api/embeddings) */
    float *embd;                 /* n_in x dim */
    int dim;
} job;

typedef enum { SLOT_FREE, SLOT_PROMPT, SLOT_GEN } slot_state;

typedef struct {
    model_ctx *ctx;
    job *job;
    slot_state state;
    int pos;                     /* SLOT_PROMPT: next prompt token to evaluate */
    gen_seq gen;                 /* sampling and streaming; SLOT_GEN: gen.pending is the
                                    sampled token still to evaluate */
    int n_prompt_eval;
    int64_t t_admit_ns, t_prompt_done_ns;
    uint64_t last_used;          /* lmodel.use_counter at admission (LRU choice) */
    vision_held held;            /* the images in ctx (prefix reuse across requests) */
    bool images_done;            /* SLOT_PROMPT with images: eval_images ran */
} slot;

/* A loaded model: one weights copy, n_slots contexts sharing one scratch. */
typedef struct lmodel {
    struct lmodel *next;
    struct sched *s;
    char name[256];
    char path[4096];
    char digest[DIGEST_STR_LEN + 1];
    int n_ctx;                   /* per slot */
    int req_num_gpu;             /* the num_gpu it was loaded with (-1 auto) */
    model *m;
    model_ctx *parent;
    slot *slots;
    int n_slots;
    job *q_head, *q_tail;        /* generation jobs waiting for a slot */
    job *e_head, *e_tail;        /* embedding jobs */
    int n_refs;                  /* jobs queued or running + callers holding it */
    int n_active;                /* jobs in slots or embedding now */
    int64_t keep_alive_ms;       /* of the latest request */
    int64_t expires_mono_ms;     /* idle deadline (monotonic); -1 = never */
    bool stopping;               /* unload once idle; no new requests */
    bool shutdown;               /* sched_free: fail everything and exit */
    pthread_t thread;
    pthread_cond_t cv;           /* wakes the worker */
    uint64_t size, size_vram;
    float *logits;               /* n_slots x n_vocab */
    float *lp_scratch;           /* n_slots x n_vocab: the raw logits kept for a request's logprobs */
    uint64_t use_counter;
    int64_t abandoned_checked_ms; /* last scan of the queue for requests whose client left */
    vision_model *vision;        /* the projector, loaded by the worker on the first image */
    vision_model *vision_info;   /* its layout only (vision_load_info), for planning on callers' threads */
    vision_cache *vcache;        /* encoded images by digest (worker only; dropped with the model) */
    pthread_mutex_t vocab_mu;    /* guards the lazy creation of vocab and vision_info */
    grammar_vocab *vocab;        /* the grammar index of the vocabulary, built on the first `format` */
} lmodel;

struct sched {
    sched_config cfg;
    store *st;
    pthread_mutex_t mu;
    pthread_cond_t cv;           /* any state change callers wait for */
    lmodel *models;              /* resident and not yet finished unloading */
    lmodel *zombies;             /* worker exited, to join */
    int n_resident;              /* models holding memory (including those unloading) */
    bool loading;                /* one load at a time */
    bool shutting_down;
    int n_callers;               /* threads inside sched_generate / sched_embed */
    int n_waiting;               /* jobs waiting for a slot (max_queue) */
    sched_metrics met;
};

int64_t sched_now_ns(void);
int64_t sched_now_ms(void);
/* Under s->mu: drops a reference; when the model becomes idle its keep-alive starts. */
void sched_release_ref(lmodel *lm);
/* The worker thread (sched_batch.c). */
void *sched_worker(void *arg);
/* Sets a job's error (status + one-line message). */
void sched_job_fail(job *j, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* An embedding job's poll before input i (sched_batch.c): true (and the job failed with 499)
 * once the request's still_wanted says nobody waits. */
bool sched_embed_abandoned(job *j, int i);
#endif
