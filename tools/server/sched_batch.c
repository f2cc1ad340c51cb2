/* sched_batch: the worker thread of one loaded model. It admits queued requests into
 * free slots (the slot whose cached tokens share the longest prefix with the prompt),
 * then runs continuous-batching steps: every decoding slot adds its last sampled token,
 * slots still reading their prompt add a chunk, one model_eval_multi evaluates them all,
 * and each slot takes its generation step (gen_step.h: grammar mask, sampling, stop strings,
 * limits) and streams its text.
 * Embedding requests run between steps. When the model has been idle past its
 * keep-alive (or is told to stop) the worker unloads it and exits. */
#include "sched_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "embed_input.h"
#include "error.h"
#include "prompt.h"

/* ---------------------------------------------------------------- admission */

static int common_prefix(const int32_t *a, int na, const int32_t *b, int nb) {
    int n = na < nb ? na : nb, i = 0;
    while (i < n && a[i] == b[i]) i++;
    return i;
}

/* The reusable prefix of slot sl for job j: equal tokens; with images, an image's rows only
 * where the slot holds the same image there (vision_plan_prefix). */
static int slot_prefix(const slot *sl, const job *j) {
    const int past = model_ctx_n_past(sl->ctx);
    if (!j->vision_text) return common_prefix(model_ctx_history(sl->ctx), past, j->prompt, j->n_prompt);
    const vision_plan p = {.tokens = j->prompt, .n = j->n_prompt, .spans = j->vplan.spans, .n_spans = j->vplan.n_spans};
    return vision_plan_prefix(&p, model_ctx_history(sl->ctx), past, &sl->held);
}

/* The free slot for a prompt: the longest cached prefix if it covers at least half of
 * the prompt or costs no cached tokens (follow-up turns reuse their cache); otherwise
 * the least recently used slot, so one request does not wipe another's cache for a
 * shared BOS. *lcp_out gets the reusable prefix length. */
static int pick_slot(lmodel *lm, const job *j, int *lcp_out) {
    int best = -1, best_lcp = -1, best_loss = 0, lru = -1;
    int lcps[SCHED_MAX_SLOTS];
    for (int i = 0; i < lm->n_slots; i++) {
        slot *sl = &lm->slots[i];
        if (sl->state != SLOT_FREE) continue;
        int past = model_ctx_n_past(sl->ctx);
        int lcp = slot_prefix(sl, j);
        lcps[i] = lcp;
        if (lcp > best_lcp || (lcp == best_lcp && past - lcp < best_loss)) {
            best = i;
            best_lcp = lcp;
            best_loss = past - lcp;
        }
        if (lru < 0 || sl->last_used < lm->slots[lru].last_used) lru = i;
    }
    if (best < 0) return -1;
    if (2 * best_lcp >= j->n_prompt || best_loss == 0) {
        *lcp_out = best_lcp;
        return best;
    }
    *lcp_out = lcps[lru];
    return lru;
}

/* Under s->mu: moves queued jobs into free slots. */
static void complete(lmodel *lm, job *j);

/* Drops queued requests nobody waits for any more (their client left), at most every
 * 100 ms: a queue behind busy slots must not hold, then evaluate, abandoned prompts. */
static void drop_abandoned(lmodel *lm) {
    sched *s = lm->s;
    int64_t now = sched_now_ms();
    if (!lm->q_head || now - lm->abandoned_checked_ms < 100) return;
    lm->abandoned_checked_ms = now;
    int dropped = 0;
    job *prev = NULL;
    for (job *j = lm->q_head; j;) {
        job *next = j->next;
        if (j->gr->still_wanted && !j->gr->still_wanted(j->gr->user)) {
            if (prev) prev->next = next; else lm->q_head = next;
            if (lm->q_tail == j) lm->q_tail = prev;
            j->next = NULL;
            s->n_waiting--;
            sched_job_fail(j, 499, "the client closed the request while it waited in the queue");
            if (j->res) j->res->done_reason = "stop";
            lm->n_active++;   /* complete() counts it off */
            complete(lm, j);
            dropped++;
        } else {
            prev = j;
        }
        j = next;
    }
    if (dropped) pthread_cond_broadcast(&s->cv);
}

static void admit(lmodel *lm) {
    sched *s = lm->s;
    drop_abandoned(lm);
    while (lm->q_head) {
        job *j = lm->q_head;
        int best_lcp = 0;
        int best = pick_slot(lm, j, &best_lcp);
        if (best < 0) return;
        lm->q_head = j->next;
        if (!lm->q_head) lm->q_tail = NULL;
        j->next = NULL;
        s->n_waiting--;
        slot *sl = &lm->slots[best];
        /* Always evaluate at least the last prompt token: its logits start the reply. */
        int keep = best_lcp < j->n_prompt - 1 ? best_lcp : j->n_prompt - 1;   /* images: the rest in step() */
        model_ctx_truncate(sl->ctx, keep);
        keep = model_ctx_n_past(sl->ctx);   /* a recurrent state may roll back further than asked (model.h) */
        vision_held_truncate(&sl->held, keep);
        *sl = (slot){.ctx = sl->ctx, .held = sl->held, .job = j, .state = SLOT_PROMPT, .pos = keep,
                     .t_admit_ns = sched_now_ns(), .last_used = ++lm->use_counter};
        gen_seq_init(&sl->gen, &(gen_seq_config){.tok = lm->m->tok, .smp = j->smp, .gm = j->gm,
                                                 .stop = j->stop, .num_predict = j->opt.num_predict,
                                                 .on_text = j->gr->on_text, .user = j->gr->user,
                                                 .forced = j->forced, .n_forced = j->n_forced,
                                                 .shown_specials = prompt_shown_specials(lm->m),
                                                 .on_logprob = j->gr->on_logprob, .top_logprobs = j->gr->top_logprobs,
                                                 .raw_scratch = lm->lp_scratch + (size_t)best * lm->m->hp.n_vocab,
                                                 .n_logits = lm->m->hp.n_vocab});
        lm->n_active++;
    }
}

/* ---------------------------------------------------------------- one request's end */

typedef struct {
    job *fin[SCHED_MAX_SLOTS];
    int n_fin;
    uint64_t prompt_tokens, gen_tokens;
    vision_eval_counts images;   /* summed over the step's requests with images */
} step_out;

/* Ends the slot's request: flushes held text, fills the result, frees the slot.
 * pending_unevaluated: the last sampled token (gen.pending) belongs to the context. */
static void finish(slot *sl, const char *reason, bool pending_unevaluated, step_out *so) {
    job *j = sl->job;
    const int64_t now = sched_now_ns();
    if (j->status == 0) gen_seq_finish(&sl->gen);
    sched_result *res = j->res;
    res->done_reason = reason;
    const char *hit = sl->gen.stop_hit ? stop_matcher_hit(j->stop) : NULL;
    if (hit && !res->stop_sequence) res->stop_sequence = strdup(hit);   /* NULL when out of memory: no name */
    res->prompt_eval_count = sl->n_prompt_eval;
    res->prompt_tokens = j->n_prompt;
    res->eval_count = sl->gen.n_gen;
    int64_t t_pd = sl->t_prompt_done_ns ? sl->t_prompt_done_ns : now;
    res->prompt_eval_ns = t_pd - sl->t_admit_ns;
    res->eval_ns = now - t_pd;
    if (j->status == 0 && j->gr->want_context && !j->vision_text) {   /* image rows are no tokens to send back */
        int n_past = model_ctx_n_past(sl->ctx);
        int n = n_past + (pending_unevaluated ? 1 : 0);
        res->context = malloc((size_t)(n > 0 ? n : 1) * sizeof(int32_t));
        if (res->context) {
            memcpy(res->context, model_ctx_history(sl->ctx), (size_t)n_past * sizeof(int32_t));
            if (pending_unevaluated) res->context[n_past] = sl->gen.pending;
            res->n_context = n;
        }
    }
    so->prompt_tokens += (uint64_t)sl->n_prompt_eval;
    so->gen_tokens += (uint64_t)sl->gen.n_gen;
    so->fin[so->n_fin++] = j;
    sl->job = NULL;
    sl->state = SLOT_FREE;
}

/* Samples the next token from the slot's logits row (gen_step.h: grammar, stop strings,
 * limits, streaming) and ends the request if that was its last. */
static void sample_next(slot *sl, float *row, step_out *so) {
    gen_status r = gen_seq_step(&sl->gen, row, model_ctx_n_past(sl->ctx), model_ctx_n_ctx(sl->ctx));
    if (r == GEN_CONTINUE) { sl->state = SLOT_GEN; return; }
    if (r == GEN_ERROR) sched_job_fail(sl->job, sl->gen.bad_format ? 400 : 500, "%s", anv_last_error());
    finish(sl, sl->gen.done_reason, sl->gen.has_pending, so);
}

/* ---------------------------------------------------------------- one batched step */

typedef struct {
    uint64_t steps, batched_steps, batched_tokens;
    double seconds;
    unsigned rotate;
} step_stats;

/* A slot whose request has images, before its first step: the projector and the image cache
 * (made once per model, on this thread), then engine/vision evaluates what the slot does not
 * hold yet of the planned prompt (text, and images from the cache or encoded) but the last
 * token, which the batch evaluates as any prompt's. The image rows evaluated count in
 * prompt_eval_count, as Ollama counts them. False when the request failed (finished). */
static bool eval_images(lmodel *lm, slot *sl, step_out *so) {
    job *j = sl->job;
    sl->images_done = true;
    if (!lm->vcache && lm->s->cfg.vision_cache_bytes > 0) lm->vcache = vision_cache_new(lm->s->cfg.vision_cache_bytes);
    if (!lm->vision) {
        vision_load_opts vo = {.cpu = lm->m->cpu, .gpu = lm->m->gpu};
        lm->vision = vision_load(j->projector, &vo);
        /* the slots' shared batch grows to the projector's largest bidirectional image (one pass) */
        if (lm->vision && model_ctx_reserve_batch(lm->parent, vision_batch_rows(lm->vision)) != 0) {
            vision_free(lm->vision);
            lm->vision = NULL;
        }
        if (!lm->vision) {
            sched_job_fail(j, 500, "%s", anv_last_error());
            finish(sl, "stop", false, so);
            return false;
        }
    }
    const vision_plan p = {.tokens = j->prompt, .n = j->n_prompt, .spans = j->vplan.spans, .n_spans = j->vplan.n_spans};
    vision_eval_counts cnt;
    const int rc = vision_eval_plan(sl->ctx, lm->vision, &p, j->vimgs, lm->vcache, &sl->held, &cnt);
    so->images.encoded += cnt.encoded;
    so->images.cached += cnt.cached;
    so->images.reused += cnt.reused;
    if (rc != 0) {
        sched_job_fail(j, 400, "%s", anv_last_error());
        finish(sl, "stop", false, so);
        return false;
    }
    sl->pos = j->n_prompt - 1;
    sl->n_prompt_eval = j->n_prompt - 1 - cnt.from;   /* what ran (never from inside an image) */
    return true;
}

static void step(lmodel *lm, step_out *so, step_stats *st) {
    const int n_slots = lm->n_slots, n_vocab = lm->m->hp.n_vocab;
    for (int i = 0; i < n_slots; i++) {
        slot *sl = &lm->slots[i];
        if (sl->state == SLOT_PROMPT && sl->job->vision_text && !sl->images_done) eval_images(lm, sl, so);
    }
    model_ctx *ctxs[SCHED_MAX_SLOTS];
    const int32_t *toks[SCHED_MAX_SLOTS];
    int ns[SCHED_MAX_SLOTS], which[SCHED_MAX_SLOTS];
    int n_seq = 0, budget = model_ctx_n_batch(lm->parent), total = 0;
    /* Decoding slots first (one token each), then prompt chunks; the start rotates so
     * no slot starves when the batch is smaller than the number of slots. */
    for (int pass = 0; pass < 2; pass++) {
        for (int k = 0; k < n_slots && budget > 0; k++) {
            int i = (int)((st->rotate + (unsigned)k) % (unsigned)n_slots);
            slot *sl = &lm->slots[i];
            int n;
            if (pass == 0 && sl->state == SLOT_GEN) {
                toks[n_seq] = &sl->gen.pending;
                n = 1;
            } else if (pass == 1 && sl->state == SLOT_PROMPT) {
                n = sl->job->n_prompt - sl->pos;
                if (n > budget) n = budget;
                toks[n_seq] = sl->job->prompt + sl->pos;
            } else {
                continue;
            }
            ctxs[n_seq] = sl->ctx;
            ns[n_seq] = n;
            which[n_seq] = i;
            n_seq++;
            budget -= n;
            total += n;
        }
    }
    st->rotate++;
    if (n_seq == 0) return;
    int64_t t0 = sched_now_ns();
    int rc = model_eval_multi(ctxs, toks, ns, n_seq, lm->logits);
    st->seconds += (double)(sched_now_ns() - t0) * 1e-9;
    st->steps++;
    if (n_seq > 1) {
        st->batched_steps++;
        st->batched_tokens += (uint64_t)total;
    }
    if (rc != 0) {
        char err[480];
        snprintf(err, sizeof err, "%s", anv_last_error());
        for (int q = 0; q < n_seq; q++) {
            slot *sl = &lm->slots[which[q]];
            sched_job_fail(sl->job, 500, "evaluation failed: %s", err);
            finish(sl, "stop", false, so);
        }
        return;
    }
    for (int q = 0; q < n_seq; q++) {
        slot *sl = &lm->slots[which[q]];
        if (sl->state == SLOT_PROMPT) {
            sl->pos += ns[q];
            sl->n_prompt_eval += ns[q];
            if (sl->pos < sl->job->n_prompt) continue;
            sl->t_prompt_done_ns = sched_now_ns();
        }
        sample_next(sl, lm->logits + (size_t)q * n_vocab, so);
    }
}

/* ---------------------------------------------------------------- embeddings */

bool sched_embed_abandoned(job *j, int i) {
    /* every 64 inputs (and the first): a poll of the client's socket costs a system call */
    if (i % 64 || !j->er || !j->er->still_wanted || j->er->still_wanted(j->er->user)) return false;
    sched_job_fail(j, 499, "the client closed the request (or the server is stopping) at input %d of %d", i, j->n_in);
    return true;
}

static void run_embed(lmodel *lm, job *j) {
    const int n_embd = lm->m->hp.n_embd;
    int dim = j->dimensions > 0 && j->dimensions < n_embd ? j->dimensions : n_embd;
    int max_len = 1;
    for (int i = 0; i < j->n_in; i++)
        if (j->in_len[i] > max_len) max_len = j->in_len[i];
    model_ctx *c = model_ctx_new_shared(lm->parent, max_len, lm->s->cfg.kv_type);
    float *tmp = malloc((size_t)n_embd * sizeof *tmp);
    j->embd = malloc((size_t)j->n_in * dim * sizeof *j->embd);
    if (!c || !tmp || !j->embd) {
        sched_job_fail(j, 500, "embedding: %s", c ? "out of memory" : anv_last_error());
    } else {
        for (int i = 0; i < j->n_in; i++) {
            if (sched_embed_abandoned(j, i)) break;
            model_ctx_reset(c);
            if (model_embed(c, j->in_tokens[i], j->in_len[i], tmp) != 0) {
                sched_job_fail(j, 500, "embedding input %d: %s", i, anv_last_error());
                break;
            }
            for (int k = 0; k < n_embd; k++)   /* Ollama: "embedding contains NaN or Inf values" */
                if (!isfinite(tmp[k])) { sched_job_fail(j, 500, "embedding input %d contains NaN or Inf values", i); break; }
            if (j->status) break;
            if (!j->embd_raw) embed_normalize(tmp, n_embd, dim);   /* Ollama's L2, cut, L2 */
            memcpy(j->embd + (size_t)i * dim, tmp, (size_t)dim * sizeof *tmp);
        }
    }
    j->dim = dim;
    free(tmp);
    model_ctx_free(c);
}

/* ---------------------------------------------------------------- the worker */

/* Under s->mu: completes a job the worker is done with. */
static void complete(lmodel *lm, job *j) {
    j->done = true;
    lm->n_active--;
    sched_release_ref(lm);
}

/* Under s->mu: fails every job of lm (shutdown). */
static void fail_all(lmodel *lm) {
    sched *s = lm->s;
    for (int i = 0; i < lm->n_slots; i++) {
        slot *sl = &lm->slots[i];
        if (sl->state == SLOT_FREE) continue;
        sched_job_fail(sl->job, 503, "server shutting down");
        sl->job->res->done_reason = "stop";
        complete(lm, sl->job);
        sl->job = NULL;
        sl->state = SLOT_FREE;
    }
    job *lists[2] = {lm->q_head, lm->e_head};
    lm->q_head = lm->q_tail = lm->e_head = lm->e_tail = NULL;
    for (int l = 0; l < 2; l++)
        for (job *j = lists[l]; j;) {
            job *next = j->next;
            s->n_waiting--;
            sched_job_fail(j, 503, "server shutting down");
            if (j->res) j->res->done_reason = "stop";
            lm->n_active++;
            complete(lm, j);
            j = next;
        }
    pthread_cond_broadcast(&s->cv);
}

void *sched_worker(void *arg) {
    lmodel *lm = arg;
    sched *s = lm->s;
    step_stats st = {0};
    pthread_mutex_lock(&s->mu);
    for (;;) {
        if (lm->shutdown) {
            /* Fail what is here, then wait for callers still holding the model (they
             * are failed on their way in) before freeing it under them. */
            fail_all(lm);
            while (lm->n_refs > 0) {
                pthread_cond_wait(&lm->cv, &s->mu);
                fail_all(lm);
            }
            break;
        }
        admit(lm);
        if (lm->e_head) {
            job *j = lm->e_head;
            lm->e_head = j->next;
            if (!lm->e_head) lm->e_tail = NULL;
            s->n_waiting--;
            lm->n_active++;
            pthread_mutex_unlock(&s->mu);
            run_embed(lm, j);
            pthread_mutex_lock(&s->mu);
            complete(lm, j);
            pthread_cond_broadcast(&s->cv);
            continue;
        }
        if (lm->n_active == 0) {
            if (lm->n_refs == 0) {
                if (lm->stopping) break;
                if (lm->expires_mono_ms >= 0 && sched_now_ms() >= lm->expires_mono_ms) break;
            }
            if (lm->n_refs == 0 && lm->expires_mono_ms >= 0) {
                struct timespec ts = {.tv_sec = lm->expires_mono_ms / 1000,
                                      .tv_nsec = (lm->expires_mono_ms % 1000) * 1000000};
                pthread_cond_timedwait(&lm->cv, &s->mu, &ts);
            } else {
                pthread_cond_wait(&lm->cv, &s->mu);
            }
            continue;
        }
        pthread_mutex_unlock(&s->mu);
        step_out so = {.n_fin = 0};
        step_stats before = st;
        step(lm, &so, &st);
        pthread_mutex_lock(&s->mu);
        s->met.prompt_tokens_total += so.prompt_tokens;
        s->met.generated_tokens_total += so.gen_tokens;
        s->met.generate_seconds_total += st.seconds - before.seconds;
        s->met.batched_steps_total += st.batched_steps - before.batched_steps;
        s->met.batched_tokens_total += st.batched_tokens - before.batched_tokens;
        s->met.images_encoded_total += (uint64_t)so.images.encoded;
        s->met.images_cached_total += (uint64_t)so.images.cached;
        s->met.images_reused_total += (uint64_t)so.images.reused;
        for (int i = 0; i < so.n_fin; i++) complete(lm, so.fin[i]);
        if (so.n_fin) pthread_cond_broadcast(&s->cv);
    }
    /* Unload: nobody can find it once it is off the list. */
    lm->stopping = true;
    for (lmodel **pp = &s->models; *pp; pp = &(*pp)->next)
        if (*pp == lm) { *pp = lm->next; break; }
    pthread_mutex_unlock(&s->mu);
    vision_free(lm->vision);   /* before the model: its tensors live on the model's backends */
    lm->vision = NULL;
    vision_free(lm->vision_info);
    lm->vision_info = NULL;
    vision_cache_free(lm->vcache);   /* the encoded images go with the model */
    lm->vcache = NULL;
    for (int i = 0; i < lm->n_slots; i++) vision_held_free(&lm->slots[i].held);
    for (int i = lm->n_slots - 1; i >= 1; i--) model_ctx_free(lm->slots[i].ctx);
    model_ctx_free(lm->parent);
    model_free(lm->m);
    free(lm->slots);
    free(lm->logits);
    free(lm->lp_scratch);   /* logprobs' rows (load_model allocates them beside logits) */
    lm->lp_scratch = NULL;
    grammar_vocab_free(lm->vocab);
    lm->vocab = NULL;
    pthread_mutex_destroy(&lm->vocab_mu);
    lm->m = NULL;
    pthread_mutex_lock(&s->mu);
    s->n_resident--;
    lm->next = s->zombies;
    s->zombies = lm;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}
