/* test_server_sched: the server scheduler on tiny F32 models (paths in $ANVIL_SCHED_MODEL
 * and $ANVIL_SCHED_MODEL2, made by tests/server/server_sched.cmake): concurrent requests give
 * exactly the sequential results, steps are really batched, the queue bound, cancel,
 * keep-alive, eviction, load/unload, errors, prompt cache reuse, structured output,
 * stop strings (and which one hit), num_predict, count_only, context, embeddings.
 * `test_server_sched --bench MODEL [n_predict]` only prints tokens/s for 1, 2 and 4
 * streams run concurrently vs one after another. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "error.h"
#include "generate.h"
#include "model.h"
#include "model_place.h"
#include "quant.h"
#include "scheduler.h"
#include "prompt.h"
#include "store.h"
#include "testutil.h"

static const char *model1, *model2;
static store *st;

/* ---------------------------------------------------------------- helpers */

typedef struct {
    char text[8192];
    int len;
    int pieces;
    int cancel_after;        /* > 0: return false at this piece */
    atomic_int *started;     /* set when the first piece arrives */
    atomic_int *release;     /* block in the first piece until set */
} collect;

static bool on_text(const char *t, int n, void *user) {
    collect *c = user;
    if (c->started) atomic_store(c->started, 1);
    if (c->release)
        while (!atomic_load(c->release)) usleep(1000);
    if (c->len + n < (int)sizeof c->text) {
        memcpy(c->text + c->len, t, (size_t)n);
        c->len += n;
        c->text[c->len] = 0;
    }
    c->pieces++;
    return !(c->cancel_after > 0 && c->pieces >= c->cancel_after);
}

static cJSON *greedy_opts(int num_predict) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "temperature", 0);
    cJSON_AddNumberToObject(o, "num_predict", num_predict);
    return o;
}

typedef struct {
    sched *s;
    sched_gen_request req;
    sched_result res;
    collect out;
    int rc;
} gen_call;

static void gen_init(gen_call *g, sched *s, const char *model, const char *prompt, cJSON *opts) {
    memset(g, 0, sizeof *g);
    g->s = s;
    g->req.model = model;
    g->req.prompt = prompt;
    g->req.raw = true;
    g->req.options = opts;
    g->req.on_text = on_text;
    g->req.user = &g->out;
}

static void *gen_thread(void *arg) {
    gen_call *g = arg;
    g->rc = sched_generate(g->s, &g->req, &g->res);
    return NULL;
}

static int n_loaded(sched *s, char *name_out, size_t cap) {
    sched_loaded *l = NULL;
    int n = 0;
    if (sched_ps(s, &l, &n) != 0) return -1;
    if (name_out && n > 0) snprintf(name_out, cap, "%s", l[0].name);
    free(l);
    return n;
}

/* Polls until n models are loaded; false after 10 s. */
static bool wait_loaded(sched *s, int n) {
    for (int i = 0; i < 1000; i++) {
        if (n_loaded(s, NULL, 0) == n) return true;
        usleep(10000);
    }
    return false;
}

static sched_config base_config(void) {
    sched_config c = {.max_loaded = 3, .max_queue = 64, .num_parallel = 4, .keep_alive_ms = -1,
                      .context_length = 256, .kv_type = QT_F16, .n_threads = 2, .allow_paths = true};
    return c;
}

static const char *prompts[] = {
    "The quick brown fox",
    "Hello world! How are you today? I am fine, thank you.",
    "A small language model reads a sequence of tokens and predicts the next one. Every layer has attention",
    "In the beginning",
    "the weather is nice and the sun is shining",
    "We test the arithmetic: matrix products, normalization, rotary position embeddings",
};
#define N_PROMPTS (int)(sizeof prompts / sizeof prompts[0])
static const int predicts[N_PROMPTS] = {12, 20, 7, 30, 16, 25};

/* ---------------------------------------------------------------- tests */

/* The reference: the single-sequence generate() on a fresh context, greedy. */
static int reference_text(const char *prompt, int n_predict, char *out, int cap) {
    model *m = model_load_with(model1, 2, NULL, 0);
    if (!m) return -1;
    model_ctx *c = model_ctx_new(m, 256, QT_F16);
    sampler_params sp;
    sampler_params_default(&sp);
    sp.temperature = 0;
    sampler *smp = sampler_new(&sp, m->hp.n_vocab);
    int n = 0;
    int32_t *toks = tokenizer_encode(m->tok, prompt, strlen(prompt), tokenizer_add_bos(m->tok), false, &n);
    collect col = {0};
    int rc = generate(c, smp, toks, n, n_predict, on_text, &col, NULL);
    snprintf(out, (size_t)cap, "%s", col.text);
    free(toks);
    sampler_free(smp);
    model_ctx_free(c);
    model_free(m);
    return rc;
}

static void test_concurrent_equals_sequential(void) {
    sched_config cfg = base_config();
    sched *s = sched_new(&cfg, st);
    CHECK(s != NULL);
    if (!s) return;
    static gen_call seq[N_PROMPTS], par[N_PROMPTS];
    cJSON *opts[N_PROMPTS];
    for (int i = 0; i < N_PROMPTS; i++) opts[i] = greedy_opts(predicts[i]);
    for (int i = 0; i < N_PROMPTS; i++) {
        gen_init(&seq[i], s, model1, prompts[i], opts[i]);
        gen_thread(&seq[i]);
        CHECKF(seq[i].rc == 0, "%s", seq[i].res.error);
        CHECK(seq[i].res.eval_count > 0);
    }
    /* The scheduler alone matches the single-sequence loop. */
    char ref[8192];
    CHECK(reference_text(prompts[2], predicts[2], ref, sizeof ref) == 0);
    CHECKF(strcmp(ref, seq[2].out.text) == 0, "generate: '%s' sched: '%s'", ref, seq[2].out.text);
    /* Fresh scheduler so no cache is reused, then all at once (more requests than slots). */
    sched_free(s);
    s = sched_new(&cfg, st);
    sched_metrics m0;
    sched_get_metrics(s, &m0);
    pthread_t th[N_PROMPTS];
    for (int i = 0; i < N_PROMPTS; i++) {
        gen_init(&par[i], s, model1, prompts[i], opts[i]);
        pthread_create(&th[i], NULL, gen_thread, &par[i]);
    }
    for (int i = 0; i < N_PROMPTS; i++) pthread_join(th[i], NULL);
    int same = 0;
    for (int i = 0; i < N_PROMPTS; i++) {
        CHECKF(par[i].rc == 0, "%s", par[i].res.error);
        if (strcmp(par[i].out.text, seq[i].out.text) == 0 && par[i].res.eval_count == seq[i].res.eval_count &&
            strcmp(par[i].res.done_reason, seq[i].res.done_reason) == 0)
            same++;
        else
            fprintf(stderr, "prompt %d: sequential '%s' (%d, %s) concurrent '%s' (%d, %s)\n", i, seq[i].out.text,
                    seq[i].res.eval_count, seq[i].res.done_reason, par[i].out.text, par[i].res.eval_count,
                    par[i].res.done_reason);
        CHECK(par[i].res.prompt_eval_count > 0);
    }
    CHECKF(same == N_PROMPTS, "%d of %d identical", same, N_PROMPTS);
    sched_metrics m;
    sched_get_metrics(s, &m);
    CHECKF(m.batched_steps_total > 0, "batched steps %llu", (unsigned long long)m.batched_steps_total);
    CHECK(m.batched_tokens_total > m.batched_steps_total);
    CHECK(m.requests_total == N_PROMPTS && m.requests_failed == 0);
    uint64_t gen = 0;
    for (int i = 0; i < N_PROMPTS; i++) gen += (uint64_t)par[i].res.eval_count;
    CHECK(m.generated_tokens_total == gen);
    CHECK(m.n_loaded == 1 && m.bytes_cpu > 0);
    printf("concurrent: %d requests, %llu batched steps, %llu batched tokens\n", N_PROMPTS,
           (unsigned long long)m.batched_steps_total, (unsigned long long)m.batched_tokens_total);

    /* Prompt caches: with two slots, A then B then A again and B again evaluate only the
     * last prompt token the second time (B does not take A's slot for a shared BOS). */
    sched_free(s);
    cfg.num_parallel = 2;
    s = sched_new(&cfg, st);
    int order[4] = {1, 3, 1, 3};
    for (int k = 0; k < 4; k++) {
        gen_call again;
        gen_init(&again, s, model1, prompts[order[k]], opts[order[k]]);
        gen_thread(&again);
        CHECK(again.rc == 0);
        if (k < 2) CHECK(again.res.prompt_eval_count > 1);
        else CHECKF(again.res.prompt_eval_count == 1, "request %d: prompt_eval_count %d", k, again.res.prompt_eval_count);
        CHECK(strcmp(again.out.text, seq[order[k]].out.text) == 0);
    }
    for (int i = 0; i < N_PROMPTS; i++) cJSON_Delete(opts[i]);
    sched_free(s);
}

static void test_queue_full(void) {
    sched_config cfg = base_config();
    cfg.num_parallel = 1;
    cfg.max_queue = 2;
    sched *s = sched_new(&cfg, st);
    atomic_int started = 0, release = 0;
    cJSON *o = greedy_opts(4);
    gen_call a, b[2], d;
    gen_init(&a, s, model1, prompts[0], o);
    a.out.started = &started;
    a.out.release = &release;
    pthread_t ta, tb[2];
    pthread_create(&ta, NULL, gen_thread, &a);
    for (int i = 0; i < 1000 && !atomic_load(&started); i++) usleep(10000);
    CHECK(atomic_load(&started));
    for (int i = 0; i < 2; i++) {
        gen_init(&b[i], s, model1, prompts[i + 1], o);
        pthread_create(&tb[i], NULL, gen_thread, &b[i]);
    }
    sched_metrics m = {0};
    for (int i = 0; i < 1000; i++) {
        sched_get_metrics(s, &m);
        if (m.queue_length == 2) break;
        usleep(10000);
    }
    CHECK(m.queue_length == 2);
    gen_init(&d, s, model1, prompts[3], o);
    gen_thread(&d);
    CHECK(d.rc == -1 && d.res.status == 503);
    CHECKF(strcmp(d.res.error, "server busy, please try again: maximum pending requests exceeded") == 0, "%s", d.res.error);
    atomic_store(&release, 1);
    pthread_join(ta, NULL);
    for (int i = 0; i < 2; i++) pthread_join(tb[i], NULL);
    CHECK(a.rc == 0 && b[0].rc == 0 && b[1].rc == 0);
    CHECK(a.res.eval_count == 4 && b[0].res.eval_count + b[1].res.eval_count > 0);
    sched_get_metrics(s, &m);
    CHECK(m.requests_rejected_queue_full == 1 && m.queue_length == 0);
    cJSON_Delete(o);
    sched_free(s);
}

static void test_cancel(void) {
    sched_config cfg = base_config();
    cfg.num_parallel = 1;
    sched *s = sched_new(&cfg, st);
    cJSON *o = greedy_opts(60);
    cJSON_AddNumberToObject(o, "num_ctx", 256);
    gen_call a, b;
    gen_init(&a, s, model1, prompts[0], o);
    a.out.cancel_after = 3;
    gen_init(&b, s, model1, prompts[1], o);
    pthread_t ta, tb;
    pthread_create(&ta, NULL, gen_thread, &a);
    pthread_create(&tb, NULL, gen_thread, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK(a.out.pieces == 3);
    CHECKF(a.res.eval_count < 60, "eval_count %d", a.res.eval_count);
    CHECKF(b.rc == 0 && b.res.eval_count > 0, "%s", b.res.error);
    sched_loaded *l = NULL;
    int n = 0;
    CHECK(sched_ps(s, &l, &n) == 0 && n == 1 && l[0].n_active == 0 && l[0].context_length == 256);
    CHECK(n == 1 && l[0].expires_at_ms == 0);  /* keep_alive -1: never */
    free(l);
    cJSON_Delete(o);
    sched_free(s);
}

static void test_keep_alive(void) {
    sched_config cfg = base_config();
    cfg.keep_alive_ms = 300;
    sched *s = sched_new(&cfg, st);
    cJSON *o = greedy_opts(3);
    gen_call a;
    gen_init(&a, s, model1, prompts[0], o);
    gen_thread(&a);
    CHECK(a.rc == 0);
    CHECK(wait_loaded(s, 0));  /* expires after 300 ms */
    gen_init(&a, s, model1, prompts[0], o);
    a.req.keep_alive_set = true;
    a.req.keep_alive_ms = 0;
    gen_thread(&a);
    CHECK(a.rc == 0 && a.res.load_ns > 0);
    CHECK(wait_loaded(s, 0));  /* unloaded right after */
    /* A keep-alive longer than the test: still there, with an expiry in the future. */
    gen_init(&a, s, model1, prompts[0], o);
    a.req.keep_alive_set = true;
    a.req.keep_alive_ms = 3600 * 1000;
    gen_thread(&a);
    sched_loaded *l = NULL;
    int n = 0;
    CHECK(sched_ps(s, &l, &n) == 0 && n == 1);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    CHECK(n == 1 && l[0].expires_at_ms > now_ms + 3000 * 1000);
    CHECK(n == 1 && l[0].size > 0 && l[0].size_vram <= l[0].size && strcmp(l[0].arch, "llama") == 0);
    free(l);
    cJSON_Delete(o);
    sched_free(s);
}

static void test_evict_and_load_unload(void) {
    if (!model2) { fprintf(stderr, "no second model: eviction test skipped\n"); return; }
    sched_config cfg = base_config();
    cfg.max_loaded = 1;
    sched *s = sched_new(&cfg, st);
    gen_call a;
    gen_init(&a, s, model1, NULL, NULL);  /* load only */
    gen_thread(&a);
    CHECK(a.rc == 0 && a.res.done_reason && strcmp(a.res.done_reason, "load") == 0);
    char name[256] = "";
    CHECK(n_loaded(s, name, sizeof name) == 1 && strstr(name, "sched-llama") != NULL);
    cJSON *o = greedy_opts(5);
    gen_init(&a, s, model2, prompts[1], o);
    gen_thread(&a);
    CHECKF(a.rc == 0, "%s", a.res.error);
    CHECK(n_loaded(s, name, sizeof name) == 1 && strstr(name, "sched-qwen2") != NULL);
    /* Different load options reload the model. */
    cJSON *o2 = greedy_opts(5);
    cJSON_AddNumberToObject(o2, "num_ctx", 128);
    gen_init(&a, s, model2, prompts[1], o2);
    gen_thread(&a);
    CHECK(a.rc == 0 && a.res.load_ns > 0);
    sched_loaded *l = NULL;
    int n = 0;
    CHECK(sched_ps(s, &l, &n) == 0 && n == 1 && l[0].context_length == 128);
    free(l);
    /* Unload: an empty prompt with keep_alive 0. */
    gen_init(&a, s, model2, "", NULL);
    a.req.keep_alive_set = true;
    a.req.keep_alive_ms = 0;
    gen_thread(&a);
    CHECK(a.rc == 0 && a.res.done_reason && strcmp(a.res.done_reason, "unload") == 0);
    CHECK(wait_loaded(s, 0));
    /* sched_stop */
    gen_init(&a, s, model1, NULL, NULL);
    gen_thread(&a);
    CHECK(n_loaded(s, NULL, 0) == 1);
    CHECK(sched_stop(s, model1) == 0);
    CHECK(wait_loaded(s, 0));
    CHECK(sched_stop(s, model1) == -1 && strstr(anv_last_error(), "not found") != NULL);
    cJSON_Delete(o);
    cJSON_Delete(o2);
    sched_free(s);
}

static void test_errors(void) {
    sched_config cfg = base_config();
    sched *s = sched_new(&cfg, st);
    gen_call a;
    gen_init(&a, s, "nosuchmodel", "hi", NULL);
    gen_thread(&a);
    CHECK(a.rc == -1 && a.res.status == 404);
    CHECKF(strstr(a.res.error, "model 'nosuchmodel' not found") != NULL, "%s", a.res.error);
    gen_init(&a, s, "../etc/passwd", "hi", NULL);
    gen_thread(&a);
    CHECK(a.rc == -1 && a.res.status == 400);
    /* Prompt longer than the context with "truncate": false: 400 naming both sizes. */
    static char longp[20000];
    longp[0] = 0;
    for (int i = 0; i < 60; i++) strcat(longp, "the quick brown fox jumps over the lazy dog ");
    gen_init(&a, s, model1, longp, NULL);
    a.req.no_truncate = true;
    gen_thread(&a);
    CHECK(a.rc == -1 && a.res.status == 400);
    CHECKF(strstr(a.res.error, "256") != NULL && strstr(a.res.error, "tokens") != NULL, "%s", a.res.error);
    /* By default its oldest tokens go: what is left plus room to answer (num_predict 3) fits, and
     * the result says how many went. */
    cJSON *g3 = greedy_opts(3);
    gen_init(&a, s, model1, longp, g3);
    gen_thread(&a);
    CHECKF(a.rc == 0 && a.res.truncated_messages == 0 && a.res.truncated_tokens > 0 && a.res.prompt_eval_count == 256 - 3, "rc %d: %d tokens kept, %d cut (%s)", a.rc, a.res.prompt_eval_count,
           a.res.truncated_tokens, a.res.error);
    sched_result_clear(&a.res);
    cJSON_Delete(g3);
    /* A chat longer than the context loses its oldest messages, never the system message
     * or the last one (Ollama's truncation); the last message alone too long: 400. On the
     * qwen2 model: it has a chat template (the llama one is a base model: {{ .Prompt }}). */
    chat_message convo[12];
    convo[0] = (chat_message){.role = "system", .content = "You are a terse assistant."};
    for (int i = 1; i < 11; i++)
        convo[i] = (chat_message){.role = i % 2 ? "user" : "assistant", .content = "the quick brown fox jumps over the lazy dog again and again"};
    convo[11] = (chat_message){.role = "user", .content = "and now?"};
    cJSON *g5 = greedy_opts(5);
    gen_init(&a, s, model2, NULL, g5);
    a.req.raw = false;
    a.req.messages = convo;
    a.req.n_messages = 12;
    gen_thread(&a);
    CHECKF(a.rc == 0 && a.res.prompt_eval_count > 0 && a.res.prompt_eval_count <= 256, "%d %s",
           a.res.prompt_eval_count, a.res.error);
    /* the same reply as the conversation that keeps the system message and the longest
     * suffix that fits (its size measured here with the model's own template + tokenizer) */
    model *mm = model_load_with(model2, 2, NULL, 0);
    int kept_from = 12;
    chat_message part[12];
    int n_part = 0;
    for (int from = 1; mm && from <= 11; from++) {
        n_part = 0;
        part[n_part++] = convo[0];
        for (int i = from; i < 12; i++) part[n_part++] = convo[i];
        char *text = prompt_build(mm, &(prompt_spec){.msgs = part, .n_msgs = n_part, .chat_format_override = -1});
        int n_tok = 0;
        int32_t *toks = text ? tokenizer_encode(mm->tok, text, strlen(text), tokenizer_add_bos(mm->tok), true, &n_tok) : NULL;
        free(text);
        free(toks);
        if (toks && n_tok <= 256) { kept_from = from; break; }
    }
    model_free(mm);
    CHECKF(kept_from > 1 && kept_from < 11, "kept from %d", kept_from);
    gen_call b;
    gen_init(&b, s, model2, NULL, g5);
    b.req.raw = false;
    b.req.messages = part;
    b.req.n_messages = n_part;
    gen_thread(&b);
    CHECKF(b.rc == 0 && strcmp(a.out.text, b.out.text) == 0, "kept from %d: '%s' vs '%s'", kept_from, a.out.text, b.out.text);
    sched_result_clear(&b.res);
    sched_result_clear(&a.res);
    convo[11] = (chat_message){.role = "user", .content = longp};
    gen_init(&a, s, model2, NULL, g5);
    a.req.raw = false;
    a.req.messages = convo;
    a.req.n_messages = 12;
    a.req.no_truncate = true;   /* "truncate": false: nothing dropped, a 400 */
    gen_thread(&a);
    CHECKF(a.rc == -1 && a.res.status == 400, "%d %s", a.res.status, a.res.error);
    sched_result_clear(&a.res);
    /* By default the last message alone too long: the ten older turns go, then the oldest text of
     * the last message; the system message stays (the reply equals that of the conversation of the
     * system message and the cut last message, rendered and cut the same way by hand). */
    gen_init(&a, s, model2, NULL, g5);
    a.req.raw = false;
    a.req.messages = convo;
    a.req.n_messages = 12;
    gen_thread(&a);
    CHECKF(a.rc == 0 && a.res.truncated_messages == 10 && a.res.truncated_tokens > 0 && a.res.prompt_eval_count <= 251,
           "rc %d: %d messages, %d tokens cut, %d kept (%s)", a.rc, a.res.truncated_messages, a.res.truncated_tokens,
           a.res.prompt_eval_count, a.res.error);
    {
        model *mq = model_load_with(model2, 2, NULL, 0);
        chat_message two[2] = {convo[0], convo[11]}, empty[2] = {convo[0], {.role = "user", .content = ""}};
        char *full = mq ? prompt_build(mq, &(prompt_spec){.msgs = two, .n_msgs = 2, .chat_format_override = -1}) : NULL;
        char *bare = mq ? prompt_build(mq, &(prompt_spec){.msgs = empty, .n_msgs = 2, .chat_format_override = -1}) : NULL;
        int nf = 0, nb = 0;
        int32_t *tf = full ? tokenizer_encode(mq->tok, full, strlen(full), tokenizer_add_bos(mq->tok), true, &nf) : NULL;
        int32_t *tb = bare ? tokenizer_encode(mq->tok, bare, strlen(bare), tokenizer_add_bos(mq->tok), true, &nb) : NULL;
        int head = 0, tail = 0;
        while (tf && tb && head < nb && tf[head] == tb[head]) head++;
        while (tf && tb && tail < nb - head && tf[nf - 1 - tail] == tb[nb - 1 - tail]) tail++;
        CHECKF(tf && tb && nf - a.res.truncated_tokens == a.res.prompt_eval_count && head > 3,
               "by hand: %d tokens, head %d tail %d; the server kept %d and cut %d", nf, head, tail,
               a.res.prompt_eval_count, a.res.truncated_tokens);
        free(full);
        free(bare);
        free(tf);
        free(tb);
        model_free(mq);
    }
    sched_result_clear(&a.res);
    cJSON_Delete(g5);
    /* Bad options. */
    cJSON *o = cJSON_Parse("{\"temperature\":\"hot\"}");
    gen_init(&a, s, model1, "hi", o);
    gen_thread(&a);
    CHECKF(a.rc == -1 && a.res.status == 400, "%d %s", a.res.status, a.res.error);
    cJSON_Delete(o);
    /* A bad schema. */
    o = greedy_opts(5);
    gen_init(&a, s, model1, "hi", o);
    a.req.format = "{\"type\": 12}";
    gen_thread(&a);
    CHECKF(a.rc == -1 && a.res.status == 400, "%d %s", a.res.status, a.res.error);
    cJSON_Delete(o);
    sched_metrics m;
    sched_get_metrics(s, &m);
    CHECKF(m.requests_failed == 6 && m.requests_total == 6 + 4, "%llu %llu", (unsigned long long)m.requests_failed,
           (unsigned long long)m.requests_total);
    sched_free(s);
}

static void test_stop_and_predict(void) {
    sched_config cfg = base_config();
    sched *s = sched_new(&cfg, st);
    cJSON *o = greedy_opts(5);
    gen_call a;
    gen_init(&a, s, model1, prompts[4], o);
    gen_thread(&a);
    CHECK(a.rc == 0 && a.res.eval_count == 5 && strcmp(a.res.done_reason, "length") == 0);
    cJSON_Delete(o);
    o = greedy_opts(0);
    gen_init(&a, s, model1, prompts[4], o);
    gen_thread(&a);
    CHECK(a.rc == 0 && a.res.eval_count == 0 && a.out.len == 0 && strcmp(a.res.done_reason, "length") == 0);
    cJSON_Delete(o);
    o = greedy_opts(40);
    gen_call full;
    gen_init(&full, s, model1, prompts[5], o);
    gen_thread(&full);
    CHECK(full.rc == 0);
    if (full.out.len >= 12) {
        char stop[5];
        memcpy(stop, full.out.text + 8, 4);
        stop[4] = 0;
        cJSON *arr = cJSON_AddArrayToObject(o, "stop");
        cJSON_AddItemToArray(arr, cJSON_CreateString(stop));
        gen_call st2;
        gen_init(&st2, s, model1, prompts[5], o);
        gen_thread(&st2);
        const char *at = strstr(full.out.text, stop);
        int expect = at ? (int)(at - full.out.text) : -1;
        CHECK(st2.rc == 0 && strcmp(st2.res.done_reason, "stop") == 0);
        CHECKF(st2.out.len == expect && strncmp(st2.out.text, full.out.text, (size_t)expect) == 0,
               "stop '%s' full '%s' got '%s'", stop, full.out.text, st2.out.text);
        CHECK(st2.res.eval_count < full.res.eval_count);
        /* which stop ended it (Anthropic's stop_sequence); none without one */
        CHECKF(st2.res.stop_sequence && strcmp(st2.res.stop_sequence, stop) == 0, "stop_sequence '%s'",
               st2.res.stop_sequence ? st2.res.stop_sequence : "(null)");
        CHECK(full.res.stop_sequence == NULL);
        sched_result_clear(&st2.res);
    } else {
        CHECKF(0, "reply too short for the stop test: '%s'", full.out.text);
    }
    sched_result_clear(&full.res);
    /* count_only: the whole prompt's length, nothing generated or evaluated; a generation of
     * the same prompt reports that length as prompt_tokens (evaluated + reused from the cache) */
    gen_call cnt;
    gen_init(&cnt, s, model1, prompts[2], o);
    cnt.req.count_only = true;
    gen_thread(&cnt);
    CHECKF(cnt.rc == 0 && strcmp(cnt.res.done_reason, "count") == 0 && cnt.out.len == 0 && cnt.res.eval_count == 0,
           "%s", cnt.res.error);
    gen_call same;
    gen_init(&same, s, model1, prompts[2], o);
    gen_thread(&same);
    CHECKF(same.rc == 0 && cnt.res.prompt_tokens > 1 && same.res.prompt_tokens == cnt.res.prompt_tokens &&
           same.res.prompt_eval_count <= same.res.prompt_tokens,
           "count %d, generation %d (%d evaluated)", cnt.res.prompt_tokens, same.res.prompt_tokens,
           same.res.prompt_eval_count);
    gen_init(&same, s, model1, prompts[2], o);
    gen_thread(&same);   /* again: the cached prefix is reused, the prompt's length is the same */
    CHECKF(same.rc == 0 && same.res.prompt_tokens == cnt.res.prompt_tokens &&
           same.res.prompt_eval_count < same.res.prompt_tokens, "%d of %d evaluated", same.res.prompt_eval_count,
           same.res.prompt_tokens);
    cJSON_Delete(o);
    /* Context: the prompt tokens plus the generated ones. */
    o = greedy_opts(6);
    sched_free(s);
    s = sched_new(&cfg, st);
    gen_init(&a, s, model1, prompts[0], o);
    a.req.want_context = true;
    gen_thread(&a);
    CHECK(a.rc == 0 && a.res.n_context == a.res.prompt_eval_count + a.res.eval_count);
    /* Continuing from that context evaluates only the new text. */
    gen_call b;
    gen_init(&b, s, model1, " and then", o);
    b.req.context = a.res.context;
    b.req.n_context = a.res.n_context;
    gen_thread(&b);
    CHECKF(b.rc == 0 && b.res.prompt_eval_count < 8, "%d %s", b.res.prompt_eval_count, b.res.error);
    sched_result_clear(&a.res);
    sched_result_clear(&b.res);
    /* A chat request goes through the prompt template. */
    chat_message msgs[] = {{.role = "user", .content = "Hello"}};
    gen_init(&a, s, model1, NULL, o);
    a.req.messages = msgs;
    a.req.n_messages = 1;
    a.req.raw = false;
    gen_thread(&a);
    CHECKF(a.rc == 0 && a.res.eval_count > 0, "%s", a.res.error);
    cJSON_Delete(o);
    sched_free(s);
}

static void test_format(void) {
    sched_config cfg = base_config();
    sched *s = sched_new(&cfg, st);
    cJSON *o = greedy_opts(120);
    const char *formats[] = {
        "{\"type\":\"object\",\"properties\":{\"ok\":{\"type\":\"boolean\"},\"n\":{\"enum\":[1,2,3]}},"
        "\"required\":[\"ok\",\"n\"],\"additionalProperties\":false}",
        "json",
    };
    for (int f = 0; f < 2; f++) {
        gen_call a;
        gen_init(&a, s, model1, prompts[f], o);
        a.req.format = formats[f];
        gen_thread(&a);
        CHECKF(a.rc == 0, "%s", a.res.error);
        cJSON *doc = cJSON_Parse(a.out.text);
        if (f == 0) {
            CHECKF(doc && cJSON_IsObject(doc) && cJSON_IsBool(cJSON_GetObjectItem(doc, "ok")) &&
                       cJSON_IsNumber(cJSON_GetObjectItem(doc, "n")), "'%s'", a.out.text);
        } else if (strcmp(a.res.done_reason, "stop") == 0) {
            CHECKF(doc && cJSON_IsObject(doc), "'%s'", a.out.text);
        } else {
            /* A random model may ramble inside a string until num_predict. */
            const char *p = a.out.text;
            while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
            CHECKF(*p == '{', "'%s'", a.out.text);
        }
        cJSON_Delete(doc);
    }
    cJSON_Delete(o);
    sched_free(s);
}

static void test_embed(void) {
    sched_config cfg = base_config();
    sched *s = sched_new(&cfg, st);
    const char *in[] = {"The quick brown fox", "Hello world"};
    sched_embed_request r = {.model = model1, .inputs = in, .n_inputs = 2};
    sched_embed_result res;
    CHECKF(sched_embed(s, &r, &res) == 0, "%s", res.error);
    CHECK(res.n == 2 && res.dim == 128 && res.prompt_eval_count > 0);
    for (int i = 0; i < res.n && res.embeddings; i++) {
        double ss = 0;
        for (int d = 0; d < res.dim; d++) ss += (double)res.embeddings[i * res.dim + d] * res.embeddings[i * res.dim + d];
        CHECKF(fabs(ss - 1) < 1e-4, "norm^2 %f", ss);
    }
    /* Same as model_embed on a fresh context. */
    model *m = model_load_with(model1, 2, NULL, 0);
    model_ctx *c = model_ctx_new(m, 64, QT_F16);
    int n = 0;
    int32_t *t = tokenizer_encode(m->tok, in[1], strlen(in[1]), tokenizer_add_bos(m->tok), true, &n);
    float ref[128];
    CHECK(model_embed(c, t, n, ref) == 0);
    double ss = 0, diff = 0;
    for (int d = 0; d < 128; d++) ss += (double)ref[d] * ref[d];
    for (int d = 0; d < 128 && res.embeddings; d++) diff = fmax(diff, fabs(ref[d] / sqrt(ss) - res.embeddings[128 + d]));
    CHECKF(diff < 1e-5, "diff %g", diff);
    free(t);
    model_ctx_free(c);
    model_free(m);
    sched_embed_result_clear(&res);
    /* dimensions: the first N, renormalised. */
    r.dimensions = 16;
    CHECK(sched_embed(s, &r, &res) == 0 && res.dim == 16);
    double s16 = 0;
    for (int d = 0; d < 16 && res.embeddings; d++) s16 += (double)res.embeddings[d] * res.embeddings[d];
    CHECK(fabs(s16 - 1) < 1e-4);
    sched_embed_result_clear(&res);
    /* Too long: an error, or cut with truncate. */
    static char longp[20000];
    longp[0] = 0;
    for (int i = 0; i < 60; i++) strcat(longp, "the quick brown fox jumps over the lazy dog ");
    const char *lin[] = {longp};
    sched_embed_request lr = {.model = model1, .inputs = lin, .n_inputs = 1};
    CHECK(sched_embed(s, &lr, &res) == -1 && res.status == 400);
    sched_embed_result_clear(&res);
    lr.truncate = true;
    CHECK(sched_embed(s, &lr, &res) == 0 && res.prompt_eval_count == 256);
    sched_embed_result_clear(&res);
    sched_free(s);
}

static void *release_later(void *arg) {
    usleep(200000);
    atomic_store((atomic_int *)arg, 1);
    return NULL;
}

/* sched_free while requests run: they end with 503. */
static void test_shutdown(void) {
    sched_config cfg = base_config();
    cfg.num_parallel = 1;
    sched *s = sched_new(&cfg, st);
    atomic_int started = 0, release = 0;
    cJSON *o = greedy_opts(-1);
    gen_call a, b;
    gen_init(&a, s, model1, prompts[0], o);
    a.out.started = &started;
    a.out.release = &release;   /* a holds the only slot until released: b stays queued */
    gen_init(&b, s, model1, prompts[1], o);
    pthread_t ta, tb;
    pthread_create(&ta, NULL, gen_thread, &a);
    for (int i = 0; i < 1000 && !atomic_load(&started); i++) usleep(10000);
    pthread_create(&tb, NULL, gen_thread, &b);
    sched_metrics m = {0};
    for (int i = 0; i < 1000; i++) {
        sched_get_metrics(s, &m);
        if (m.queue_length == 1) break;
        usleep(10000);
    }
    CHECK(m.queue_length == 1);
    pthread_t tr;   /* let a go while sched_free is shutting down */
    pthread_create(&tr, NULL, release_later, &release);
    sched_free(s);
    pthread_join(tr, NULL);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    /* a may have finished on its own (end of generation); b was still queued. */
    CHECK(a.rc == 0 || a.res.status == 503);
    CHECKF(b.rc == -1 && b.res.status == 503 && strcmp(b.res.error, "server shutting down") == 0, "%d %s",
           b.res.status, b.res.error);

    /* Many requests on two models with one allowed loaded (some wait for a load), freed
     * mid-flight: every call returns, either done or 503. */
    cfg.num_parallel = 2;
    cfg.max_loaded = 1;
    s = sched_new(&cfg, st);
    atomic_int first = 0;
    static gen_call g[8];
    pthread_t th[8];
    for (int i = 0; i < 8; i++) {
        gen_init(&g[i], s, (i % 2 && model2) ? model2 : model1, prompts[i % N_PROMPTS], o);
        g[i].out.started = &first;
        if (i == 7) g[i].req.want_context = true;
        pthread_create(&th[i], NULL, gen_thread, &g[i]);
    }
    for (int i = 0; i < 1000 && !atomic_load(&first); i++) usleep(10000);
    sched_free(s);
    int ok = 0;
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        if (g[i].rc == 0 || g[i].res.status == 503) ok++;
        else fprintf(stderr, "request %d: %d %s\n", i, g[i].res.status, g[i].res.error);
        sched_result_clear(&g[i].res);
    }
    CHECK(ok == 8);
    cJSON_Delete(o);
}

static void test_config(void) {
    int64_t ms;
    CHECK(sched_parse_duration_ms("5m", &ms) == 0 && ms == 300000);
    CHECK(sched_parse_duration_ms("1h30m", &ms) == 0 && ms == 5400000);
    CHECK(sched_parse_duration_ms("-1", &ms) == 0 && ms < 0);
    CHECK(sched_parse_duration_ms("-1m", &ms) == 0 && ms < 0);
    CHECK(sched_parse_duration_ms("0", &ms) == 0 && ms == 0);
    CHECK(sched_parse_duration_ms("300", &ms) == 0 && ms == 300000);
    CHECK(sched_parse_duration_ms("1.5s", &ms) == 0 && ms == 1500);
    CHECK(sched_parse_duration_ms("250ms", &ms) == 0 && ms == 250);
    CHECK(sched_parse_duration_ms("5x", &ms) == -1);
    CHECK(sched_parse_duration_ms("m", &ms) == -1);
    CHECK(sched_parse_duration_ms("", &ms) == -1);
    CHECK(sched_parse_duration_ms("5m3", &ms) == -1);
    sched_config c;
    setenv("ANVIL_NUM_PARALLEL", "2", 1);
    setenv("ANVIL_KEEP_ALIVE", "10m", 1);
    setenv("ANVIL_KV_CACHE_TYPE", "q8_0", 1);
    CHECK(sched_config_from_env(&c) == 0 && c.num_parallel == 2 && c.keep_alive_ms == 600000 &&
          c.max_queue == 512 && c.max_loaded == 3 && c.kv_type == QT_Q8_0);
    setenv("ANVIL_MAX_QUEUE", "lots", 1);
    CHECK(sched_config_from_env(&c) == -1 && strstr(anv_last_error(), "ANVIL_MAX_QUEUE") != NULL);
    unsetenv("ANVIL_MAX_QUEUE");
    setenv("ANVIL_KV_CACHE_TYPE", "q4_0", 1);
    CHECK(sched_config_from_env(&c) == 0 && c.kv_type == QT_Q4_0);
    setenv("ANVIL_KV_CACHE_TYPE", "q4", 1);
    CHECK(sched_config_from_env(&c) == -1 && strstr(anv_last_error(), "ANVIL_KV_CACHE_TYPE") != NULL);
    unsetenv("ANVIL_KV_CACHE_TYPE");
    unsetenv("ANVIL_NUM_PARALLEL");
    unsetenv("ANVIL_KEEP_ALIVE");
    CHECK(sched_config_from_env(&c) == 0 && c.num_parallel == 2 && c.keep_alive_ms == 300000);  /* the defaults */
}

/* ---------------------------------------------------------------- bench */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int bench(const char *path, int n_predict) {
    sched_config cfg = base_config();
    cfg.n_threads = 0;
    cfg.context_length = 512;
    sched *s = sched_new(&cfg, st);
    cJSON *o = greedy_opts(n_predict);
    cJSON_AddNumberToObject(o, "repeat_penalty", 1.0);
    gen_call warm;
    gen_init(&warm, s, path, prompts[0], o);
    gen_thread(&warm);
    if (warm.rc != 0) { fprintf(stderr, "bench: %s\n", warm.res.error); return 1; }
    printf("model %s, %d tokens per stream, num_parallel 4\n", path, n_predict);
    for (int c = 1; c <= 4; c *= 2) {
        static gen_call g[4];
        pthread_t th[4];
        /* Different prompts each time so no prefix cache makes one mode cheaper. */
        double t0 = now_s();
        long toks = 0;
        for (int i = 0; i < c; i++) {
            gen_init(&g[i], s, path, prompts[(i + 1) % N_PROMPTS], o);
            gen_thread(&g[i]);
            toks += g[i].res.eval_count;
        }
        double seq = now_s() - t0;
        long seq_toks = toks;
        toks = 0;
        t0 = now_s();
        for (int i = 0; i < c; i++) {
            gen_init(&g[i], s, path, prompts[(i + 1 + c) % N_PROMPTS], o);
            pthread_create(&th[i], NULL, gen_thread, &g[i]);
        }
        for (int i = 0; i < c; i++) {
            pthread_join(th[i], NULL);
            toks += g[i].res.eval_count;
        }
        double par = now_s() - t0;
        printf("%d stream(s): sequential %ld tokens in %.2f s = %.1f tok/s; concurrent %ld tokens in %.2f s = %.1f tok/s\n",
               c, seq_toks, seq, seq_toks / seq, toks, par, toks / par);
    }
    cJSON_Delete(o);
    sched_free(s);
    return 0;
}

int main(int argc, char **argv) {
    anv_log_enabled = 0;
    char root[] = "/tmp/anvil-sched-test-XXXXXX";
    if (!mkdtemp(root)) { perror("mkdtemp"); return 1; }
    st = store_open_at(root, NULL);
    if (!st) { fprintf(stderr, "store: %s\n", anv_last_error()); return 1; }
    if (argc >= 3 && strcmp(argv[1], "--bench") == 0) {
        int rc = bench(argv[2], argc >= 4 ? atoi(argv[3]) : 64);
        store_close(st);
        tu_tmpdir_done(root);
        return rc;
    }
    test_config();
    model1 = getenv("ANVIL_SCHED_MODEL");
    model2 = getenv("ANVIL_SCHED_MODEL2");
    if (!model1 || access(model1, R_OK) != 0) {
        fprintf(stderr, "ANVIL_SCHED_MODEL not set or unreadable: model tests skipped\n");
        store_close(st);
        tu_tmpdir_done(root);
        tu_finish();
        return 77;
    }
    test_concurrent_equals_sequential();
    test_queue_full();
    test_cancel();
    test_keep_alive();
    test_evict_and_load_unload();
    test_errors();
    test_stop_and_predict();
    test_format();
    test_embed();
    test_shutdown();
    store_close(st);
    tu_tmpdir_done(root);
    return tu_finish();
}
