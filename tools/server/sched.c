/* sched: the scheduler's front half: configuration, the bounded queue, loading models
 * (serialised, max_loaded with eviction of idle models, reload on changed load options),
 * keep-alive, and the public calls that prepare a request (options, prompt, tokens,
 * sampler, grammar) and hand it to the model's worker (sched_batch.c). */
#include "sched_impl.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "api_images.h"
#include "clock.h"
#include "error.h"
#include "embed_input.h"
#include "settings.h"
#include "model_place.h"
#include "prompt.h"
#include "quant.h"

int64_t sched_now_ns(void) { return anv_mono_ns(); }
int64_t sched_now_ms(void) { return anv_mono_ns() / 1000000; }
static int64_t unix_now_ms(void) { return anv_wall_ns() / 1000000; }

void sched_job_fail(job *j, int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->error, sizeof j->error, fmt, ap);
    va_end(ap);
    j->status = status;
}

/* ---------------------------------------------------------------- configuration */

int sched_parse_duration_ms(const char *text, int64_t *out_ms) {
    if (!text) { anv_set_error("empty duration"); return -1; }
    while (isspace((unsigned char)*text)) text++;
    size_t len = strlen(text);
    while (len > 0 && isspace((unsigned char)text[len - 1])) len--;
    if (len == 0 || len > 64) { anv_set_error("invalid duration '%s'", text); return -1; }
    char buf[80];
    memcpy(buf, text, len);
    buf[len] = 0;
    /* A plain number: seconds. */
    char *end;
    errno = 0;
    double secs = strtod(buf, &end);
    if (end != buf && *end == 0 && errno == 0 && isfinite(secs)) {
        if (secs < 0) *out_ms = -1;
        else if (secs > 9e15 / 1000) *out_ms = -1;  /* longer than anyone waits: forever */
        else *out_ms = (int64_t)llround(secs * 1000.0);
        return 0;
    }
    /* A Go duration: [-+]? (number unit)+ with units ns us µs ms s m h. */
    const char *p = buf;
    bool neg = false;
    if (*p == '-' || *p == '+') neg = *p++ == '-';
    double total_ms = 0;
    int n_terms = 0;
    while (*p) {
        if (!isdigit((unsigned char)*p) && *p != '.') goto bad;
        char *e;
        double v = strtod(p, &e);
        if (e == p || *e == 0) goto bad;  /* a number without unit */
        if (*e == 'e' || *e == 'E') goto bad;
        p = e;
        double unit;
        if (strncmp(p, "ns", 2) == 0) { unit = 1e-6; p += 2; }
        else if (strncmp(p, "us", 2) == 0) { unit = 1e-3; p += 2; }
        else if (strncmp(p, "\xc2\xb5s", 3) == 0) { unit = 1e-3; p += 3; }
        else if (strncmp(p, "ms", 2) == 0) { unit = 1; p += 2; }
        else if (*p == 's') { unit = 1000; p++; }
        else if (*p == 'm') { unit = 60000; p++; }
        else if (*p == 'h') { unit = 3600000; p++; }
        else goto bad;
        total_ms += v * unit;
        n_terms++;
    }
    if (n_terms == 0) goto bad;
    if (neg && total_ms > 0) { *out_ms = -1; return 0; }
    *out_ms = total_ms > 9e15 ? -1 : (int64_t)llround(total_ms);
    return 0;
bad:
    anv_set_error("invalid duration '%s' (use seconds or a Go duration like 5m, 1h30m, -1)", buf);
    return -1;
}

/* A whole number in lo..1000000000 (its ANVIL_ or OLLAMA_ name): 0, or -1 + anv_last_error(). */
static int env_int(const char *anvil_name, int lo, int *out) {
    return anv_setting_int(anvil_name, lo, 1000000000, out) < 0 ? -1 : 0;
}

int sched_config_from_env(sched_config *c) {
    /* num_parallel 2: concurrent requests batch (a chat and its title request), while each
     * slot's KV cache costs GPU memory (Ollama defaults to 1) */
    *c = (sched_config){.max_loaded = 3, .max_queue = 512, .num_parallel = 2,
                        .keep_alive_ms = 5 * 60 * 1000, .context_length = 0,
                        .kv_type = QT_F16, .n_threads = 0};
    if (env_int("ANVIL_MAX_LOADED_MODELS", 1, &c->max_loaded) != 0) return -1;
    if (env_int("ANVIL_MAX_QUEUE", 1, &c->max_queue) != 0) return -1;
    if (env_int("ANVIL_NUM_PARALLEL", 1, &c->num_parallel) != 0) return -1;
    if (env_int("ANVIL_CONTEXT_LENGTH", 0, &c->context_length) != 0) return -1;
    if (env_int("ANVIL_NUM_THREADS", 0, &c->n_threads) != 0) return -1;
    if (vision_cache_bytes_setting(&c->vision_cache_bytes) != 0) return -1;
    const char *ap = anv_setting_raw("ANVIL_ALLOW_PATHS");
    c->allow_paths = ap && (!strcmp(ap, "1") || !strcmp(ap, "true"));
    const char *replay = anv_setting_raw("ANVIL_TEST_REPLAY");
    c->test_replay = replay && *replay ? replay : NULL;
    const char *ka_name, *ka = anv_setting_value("ANVIL_KEEP_ALIVE", &ka_name);
    if (ka && *ka && sched_parse_duration_ms(ka, &c->keep_alive_ms) != 0) {
        anv_set_error("%s: '%s' is not a duration (seconds, or like 5m, 1h, -1)", ka_name, ka);
        return -1;
    }
    const char *kv_name, *kv = anv_setting_value("ANVIL_KV_CACHE_TYPE", &kv_name);
    if (kv && *kv) {
        if (strcmp(kv, "f16") == 0) c->kv_type = QT_F16;
        else if (strcmp(kv, "f32") == 0) c->kv_type = QT_F32;
        else if (strcmp(kv, "q8_0") == 0) c->kv_type = QT_Q8_0;
        else if (strcmp(kv, "q4_0") == 0) c->kv_type = QT_Q4_0;  /* Ollama's third type: half of q8_0's memory */
        else { anv_set_error("%s: '%s' is not f16, q8_0, q4_0 or f32", kv_name, kv); return -1; }
    }
    return 0;
}

/* ---------------------------------------------------------------- lifetime */

sched *sched_new(const sched_config *c, store *st) {
    if (!c || c->max_loaded < 1 || c->max_queue < 1 || c->num_parallel < 1 || c->num_parallel > SCHED_MAX_SLOTS) {
        anv_set_error("scheduler: max_loaded and max_queue must be >= 1, num_parallel 1..%d", SCHED_MAX_SLOTS);
        return NULL;
    }
    sched *s = calloc(1, sizeof *s);
    if (!s) { anv_set_error("out of memory"); return NULL; }
    s->cfg = *c;
    s->st = st;
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    return s;
}

/* Under s->mu: joins the workers that have exited. The lock is dropped while joining. */
static void reap_zombies(sched *s) {
    while (s->zombies) {
        lmodel *z = s->zombies;
        s->zombies = z->next;
        pthread_mutex_unlock(&s->mu);
        pthread_join(z->thread, NULL);
        pthread_cond_destroy(&z->cv);
        free(z);
        pthread_mutex_lock(&s->mu);
    }
}

void sched_free(sched *s) {
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    s->shutting_down = true;
    for (lmodel *lm = s->models; lm; lm = lm->next) {
        lm->shutdown = true;
        pthread_cond_signal(&lm->cv);
    }
    pthread_cond_broadcast(&s->cv);
    while (s->n_callers > 0 || s->n_resident > 0 || s->loading) {
        pthread_cond_wait(&s->cv, &s->mu);
        for (lmodel *lm = s->models; lm; lm = lm->next)
            if (!lm->shutdown) { lm->shutdown = true; pthread_cond_signal(&lm->cv); }
    }
    reap_zombies(s);
    pthread_mutex_unlock(&s->mu);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

void sched_release_ref(lmodel *lm) {
    if (--lm->n_refs > 0) return;
    if (lm->keep_alive_ms == 0) lm->stopping = true;
    lm->expires_mono_ms = lm->keep_alive_ms < 0 ? -1 : sched_now_ms() + lm->keep_alive_ms;
    pthread_cond_signal(&lm->cv);
    pthread_cond_broadcast(&lm->s->cv);  /* an idle model can now be evicted */
}

/* ---------------------------------------------------------------- loading */

static uint64_t tensor_bytes(const be_tensor *t) { return t ? be_nbytes(t) : 0; }

/* What ps reports: the memory the model computes with, per side. Each layer's weights and
 * KV caches count where the layer runs, the output head where it runs, and the activation
 * scratch on each backend in use. The token-embedding table is a host lookup table (mmap'd,
 * only looked-up rows are read), counted only when it is also the output head on the CPU:
 * so a model with every layer and its head on the GPU is "100% GPU", like Ollama's. */
static void measure(lmodel *lm) {
    const model *m = lm->m;
    const model_hparams *hp = &m->hp;
    const int64_t kvd = (int64_t)hp->n_kv_head * hp->head_dim_k;
    const uint64_t kv_layer = 2ull * (uint64_t)lm->n_ctx * qtype_row_size(lm->s->cfg.kv_type, kvd) * (uint64_t)lm->n_slots;
    uint64_t cpu = 0, vram = 0;
    bool cpu_used = false, gpu_used = false;
    for (int il = 0; il < hp->n_layer; il++) {
        const model_layer *L = &m->layers[il];
        const be_tensor *ts[] = {L->attn_norm, L->wq, L->wk, L->wv, L->wo, L->bq, L->bk, L->bv, L->q_norm,
                                 L->k_norm, L->post_attn_norm, L->ffn_norm, L->w_gate, L->w_up, L->w_down,
                                 L->post_ffn_norm};
        uint64_t b = kv_layer;
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) b += tensor_bytes(ts[i]);
        if (L->be == m->cpu) { cpu += b; cpu_used = true; }
        else { vram += b; gpu_used = true; }
    }
    const uint64_t head = tensor_bytes(m->output_norm) + tensor_bytes(m->output);
    if (m->out_be == m->cpu) { cpu += head; cpu_used = true; }
    else { vram += head + tensor_bytes(m->rope_freqs_gpu); gpu_used = true; }
    /* Activation scratch: one set shared by the slots, on each backend in use. */
    const int nb = model_ctx_n_batch(lm->parent);
    const uint64_t qd = (uint64_t)hp->n_head * hp->head_dim_k;
    const uint64_t scratch = (uint64_t)nb * 4 * (3 * (uint64_t)hp->n_embd + qd + 2 * (uint64_t)kvd + 2 * (uint64_t)hp->n_ff)
                           + (uint64_t)lm->n_slots * hp->n_vocab * 4;
    if (cpu_used) cpu += scratch;
    if (gpu_used) vram += scratch;
    const uint64_t size = cpu + vram;
    lm->size = size;
    lm->size_vram = vram;
}

/* Frees a loaded model whose worker never started. */
static void discard_model(lmodel *lm) {
    vision_free(lm->vision);
    vision_free(lm->vision_info);
    vision_cache_free(lm->vcache);
    grammar_vocab_free(lm->vocab);
    pthread_mutex_destroy(&lm->vocab_mu);
    for (int i = lm->n_slots - 1; i >= 1; i--) model_ctx_free(lm->slots[i].ctx);
    model_ctx_free(lm->parent);
    model_free(lm->m);
    pthread_cond_destroy(&lm->cv);
    free(lm->slots);
    free(lm->logits);
    free(lm->lp_scratch);
    free(lm);
}

/* An embedding model by its header (Ollama's rule: {arch}.pooling_type is set), before it
 * loads: Ollama gives such a model one slot, as it has no generation to batch. */
static bool file_embeds_only(const char *path) {
    gguf_file *f = gguf_open(path);
    const bool r = f && model_file_embeds_only(f);
    gguf_close(f);
    return r;
}

/* Loads outside the lock. NULL + anv_last_error() on failure. */
static lmodel *load_model(sched *s, const store_entry *e, const run_options *o) {
    lmodel *lm = calloc(1, sizeof *lm);
    if (!lm) { anv_set_error("out of memory"); return NULL; }
    lm->s = s;
    snprintf(lm->name, sizeof lm->name, "%s", e->name ? e->name : e->model_path);
    snprintf(lm->path, sizeof lm->path, "%s", e->model_path);
    snprintf(lm->digest, sizeof lm->digest, "%s", e->manifest_digest ? e->manifest_digest : "");
    lm->req_num_gpu = o->num_gpu;
    lm->n_slots = s->cfg.num_parallel > 1 && file_embeds_only(e->model_path) ? 1 : s->cfg.num_parallel;
    int want_ctx = o->num_ctx > 0 ? o->num_ctx : s->cfg.context_length;
    /* One request must not start more threads than the machine has cores. */
    int n_threads = o->num_thread > 0 ? o->num_thread : s->cfg.n_threads;
    const long n_cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (n_cores > 0 && n_threads > n_cores) {
        anv_log("model %s: num_thread %d capped at the %ld CPU cores", lm->name, n_threads, n_cores);
        n_threads = (int)n_cores;
    }
    /* The placement plans (and admits against free memory) the KV caches of every slot. */
    model_place_opts po = {.n_threads = n_threads, .n_ctx = want_ctx > 0 ? want_ctx : 0, .n_seq = lm->n_slots,
                           .kv_type = s->cfg.kv_type, .n_gpu_layers = o->num_gpu};
    lm->m = model_load_placed(e->model_path, &po);
    if (!lm->m) { free(lm); return NULL; }
    const model_hparams *hp = &lm->m->hp;
    int n_ctx = want_ctx > 0 ? want_ctx : model_ctx_default(lm->m);
    if (hp->n_ctx_train > 0 && n_ctx > hp->n_ctx_train) n_ctx = hp->n_ctx_train;
    if (n_ctx < 4) n_ctx = 4;
    lm->n_ctx = n_ctx;
    lm->slots = calloc((size_t)lm->n_slots, sizeof *lm->slots);
    lm->logits = malloc((size_t)lm->n_slots * hp->n_vocab * sizeof(float));
    lm->lp_scratch = malloc((size_t)lm->n_slots * hp->n_vocab * sizeof(float));   /* logprobs' raw rows */
    if (!lm->slots || !lm->logits || !lm->lp_scratch) { anv_set_error("out of memory"); goto fail; }
    lm->parent = model_ctx_new(lm->m, n_ctx, s->cfg.kv_type);
    if (!lm->parent) goto fail;
    lm->slots[0].ctx = lm->parent;
    for (int i = 1; i < lm->n_slots; i++) {
        lm->slots[i].ctx = model_ctx_new_shared(lm->parent, n_ctx, s->cfg.kv_type);
        if (!lm->slots[i].ctx) goto fail;
    }
    measure(lm);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&lm->cv, &ca);
    pthread_condattr_destroy(&ca);
    lm->expires_mono_ms = -1;
    pthread_mutex_init(&lm->vocab_mu, NULL);
    return lm;
fail:
    if (lm->slots) {
        for (int i = lm->n_slots - 1; i >= 1; i--) model_ctx_free(lm->slots[i].ctx);
    }
    model_ctx_free(lm->parent);
    free(lm->slots);
    free(lm->logits);
    free(lm->lp_scratch);
    model_free(lm->m);
    free(lm);
    return NULL;
}

/* Would a request with these options run on lm without reloading (Ollama's needsReload)? */
static bool options_match(const sched *s, const lmodel *lm, const run_options *o) {
    int want_ctx = o->num_ctx > 0 ? o->num_ctx : s->cfg.context_length;
    if (want_ctx > 0) {
        int eff = want_ctx;
        const model_hparams *hp = &lm->m->hp;
        if (hp->n_ctx_train > 0 && eff > hp->n_ctx_train) eff = hp->n_ctx_train;
        if (eff < 4) eff = 4;
        if (eff != lm->n_ctx) return false;
    } else if (lm->n_ctx != model_ctx_default(lm->m)) {
        return false;
    }
    return o->num_gpu < 0 || o->num_gpu == lm->req_num_gpu;
}

static lmodel *find_loaded(sched *s, const char *path, const run_options *o) {
    for (lmodel *lm = s->models; lm; lm = lm->next)
        if (!lm->stopping && !lm->shutdown && strcmp(lm->path, path) == 0 && (!o || options_match(s, lm, o))) {
            /* Its file truncated in place: touching the lost pages would SIGBUS the server, so no
             * new request uses it; it unloads and the request loads the file afresh (which then
             * fails cleanly if it is still short). README.md: "Truncated model files". */
            if (lm->m && gguf_check_size(lm->m->gguf) != 0) {
                anv_log("%s; unloading it", anv_last_error());
                lm->stopping = true;
                pthread_cond_signal(&lm->cv);
                continue;
            }
            return lm;
        }
    return NULL;
}

/* Under s->mu: marks one resident model for unloading so a new one fits. Idle models
 * go first (longest keep-alive deadline last, then name); if all are busy, the one with
 * the fewest references is stopped and unloads once its requests finish. */
static void evict_one(sched *s) {
    lmodel *best = NULL;
    for (lmodel *lm = s->models; lm; lm = lm->next) {
        if (lm->stopping || lm->shutdown) return;  /* one is on its way out already */
        if (lm->n_refs != 0) continue;
        if (!best || strcmp(lm->name, best->name) < 0) best = lm;
    }
    if (!best)
        for (lmodel *lm = s->models; lm; lm = lm->next)
            if (!best || lm->n_refs < best->n_refs) best = lm;
    if (best) {
        best->stopping = true;
        pthread_cond_signal(&best->cv);
    }
}

/* Under s->mu: marks an idle resident model (no requests) for unloading; false if none. */
static bool evict_idle(sched *s) {
    lmodel *best = NULL;
    for (lmodel *lm = s->models; lm; lm = lm->next) {
        if (lm->stopping || lm->shutdown) return true;   /* one is on its way out already: wait for it */
        if (lm->n_refs == 0 && (!best || strcmp(lm->name, best->name) < 0)) best = lm;
    }
    if (!best) return false;
    best->stopping = true;
    pthread_cond_signal(&best->cv);
    return true;
}

/* Under s->mu: a resident model matching the request (n_refs taken), loading it if
 * needed. NULL with j's status/error set on failure. *load_ns gets the load time. A load
 * refused for memory (the placement counts what the loaded models hold: their host KV
 * caches are touched when made) first unloads idle models, one at a time, as Ollama's
 * scheduler does; with none idle it is a 503 naming the sizes. */
static lmodel *acquire_model(sched *s, const store_entry *e, const run_options *o, job *j, int64_t *load_ns) {
    *load_ns = 0;
    for (;;) {
        reap_zombies(s);
        if (s->shutting_down) { sched_job_fail(j, 503, "server shutting down"); return NULL; }
        lmodel *lm = find_loaded(s, e->model_path, o);
        if (lm) { lm->n_refs++; return lm; }
        if (s->loading) { pthread_cond_wait(&s->cv, &s->mu); continue; }
        /* The same model with other load options goes first (it reloads). */
        bool waiting = false;
        for (lmodel *o2 = s->models; o2; o2 = o2->next)
            if (strcmp(o2->path, e->model_path) == 0) {
                if (!o2->stopping) { o2->stopping = true; pthread_cond_signal(&o2->cv); }
                waiting = true;
            }
        if (!waiting && s->n_resident >= s->cfg.max_loaded) { evict_one(s); waiting = true; }
        if (waiting) { pthread_cond_wait(&s->cv, &s->mu); continue; }
        s->loading = true;
        s->n_resident++;
        pthread_mutex_unlock(&s->mu);
        int64_t t0 = sched_now_ns();
        lm = load_model(s, e, o);
        char err[512] = "";
        if (!lm) {
            snprintf(err, sizeof err, "%s", anv_last_error());
            anv_log("loading %s (%s): %s", e->name ? e->name : "?", e->model_path, err);
            sched_redact_paths(err, sizeof err, e->model_path, e->name);
        }
        *load_ns = sched_now_ns() - t0;
        pthread_mutex_lock(&s->mu);
        s->loading = false;
        pthread_cond_broadcast(&s->cv);
        if (lm && s->shutting_down) {
            discard_model(lm);
            s->n_resident--;
            sched_job_fail(j, 503, "server shutting down");
            return NULL;
        }
        if (lm && pthread_create(&lm->thread, NULL, sched_worker, lm) != 0) {
            snprintf(err, sizeof err, "cannot start the model's worker thread");
            discard_model(lm);
            lm = NULL;
        }
        if (!lm) {
            s->n_resident--;
            const bool memory = strstr(err, "memory") != NULL;
            if (memory && evict_idle(s)) {
                anv_log("loading %s: not enough memory; unloading an idle model first", e->name ? e->name : "the model");
                pthread_cond_wait(&s->cv, &s->mu);
                continue;
            }
            sched_job_fail(j, memory ? 503 : 500, "loading %s: %s", e->name ? e->name : "the model", err);
            return NULL;
        }
        lm->next = s->models;
        s->models = lm;
        lm->n_refs = 1;
        return lm;
    }
}

/* ---------------------------------------------------------------- model names */

bool sched_allow_paths(const sched *s) { return s->cfg.allow_paths; }

/* Does an absolute path start at p (of msg)? At the start, or after a space, quote,
 * parenthesis, '=' or ':'; a '/' then a character of a file name. */
static bool path_starts(const char *msg, const char *p) {
    if (*p != '/' || !p[1] || isspace((unsigned char)p[1])) return false;
    return p == msg || strchr(" \t'\"(=:[", p[-1]);
}

/* Where a path token that starts at p ends: whitespace, a quote, ')' or ']', ',' or ';',
 * or ':' followed by a space or the end (the "PATH: why" form). */
static const char *path_end(const char *p) {
    while (*p && !isspace((unsigned char)*p) && !strchr("'\")],;", *p) && !(*p == ':' && (!p[1] || p[1] == ' '))) p++;
    return p;
}

void sched_redact_paths(char *msg, size_t cap, const char *path, const char *name) {
    if (!msg || cap == 0) return;
    char out[1024];
    size_t n = 0;
    const size_t pl = path ? strlen(path) : 0;
    for (const char *p = msg; *p && n + 1 < sizeof out;) {
        const char *rep = NULL;
        size_t skip = 0;
        if (pl && !strncmp(p, path, pl)) { rep = name && *name ? name : "the model"; skip = pl; }
        else if (path_starts(msg, p)) {
            const char *end = path_end(p);
            skip = (size_t)(end - p);
            if (name && strlen(name) == skip && !strncmp(p, name, skip)) rep = name;
            else rep = "<path>";
        }
        if (rep) {
            for (const char *r = rep; *r && n + 1 < sizeof out; r++) out[n++] = *r;
            p += skip;
        } else {
            out[n++] = *p++;
        }
    }
    out[n] = 0;
    snprintf(msg, cap, "%s", out);
}

static bool has_control(const char *t) {
    for (; *t; t++)
        if ((unsigned char)*t < 0x20 || *t == 0x7f) return true;
    return false;
}

static bool looks_like_path(const char *t) {
    return t[0] == '/' || !strncmp(t, "./", 2) || !strncmp(t, "../", 3) || !strncmp(t, "~/", 2) || !strcmp(t, ".") || !strcmp(t, "..");
}

int sched_lookup(sched *s, const char *name, store_entry *e) {
    memset(e, 0, sizeof *e);
    if (!name || !*name) { anv_set_error("model is required"); return 400; }
    if (has_control(name)) { anv_set_error("invalid model name: it contains a control character"); return 400; }
    int rc;
    if (s->cfg.allow_paths) {
        struct stat sb;
        if (stat(name, &sb) != 0) {
            store_name sn;
            if (store_name_parse(name, &sn) != 0) return 400;
        }
        rc = store_resolve(s->st, name, e);
    } else {
        if (looks_like_path(name)) {
            anv_set_error("invalid model name '%.200s': a file path is not a model name (the server serves store "
                          "models only: anvil create / pull one, or start it with ANVIL_ALLOW_PATHS=1)", name);
            return 400;
        }
        store_name sn;
        if (store_name_parse(name, &sn) != 0) return 400;
        rc = store_lookup(s->st, name, e);
    }
    if (rc == 0) return 0;
    char err[1024];
    snprintf(err, sizeof err, "%s", anv_last_error());
    if (strstr(err, "not found")) {
        sched_redact_paths(err, sizeof err, NULL, name);
        anv_set_error("%s", err);
        return 404;
    }
    anv_log("model %.200s: %s", name, err);
    sched_redact_paths(err, sizeof err, NULL, name);
    anv_set_error("model '%.200s' cannot be read from the store: %s", name, err);
    return 500;
}

/* ---------------------------------------------------------------- requests */

/* Resolves the model and merges its options; status set on j on failure. */
static int resolve(sched *s, const char *name, const void *req_options, store_entry *e, run_options *o, job *j) {
    memset(e, 0, sizeof *e);
    options_default(o);
    if (!name || !*name) { sched_job_fail(j, 400, "model is required"); return -1; }
    int st = sched_lookup(s, name, e);
    if (st) { sched_job_fail(j, st, "%s", anv_last_error()); return -1; }
    if (e->params_json && options_apply_json_text(o, e->params_json, NULL) != 0) {
        sched_job_fail(j, 500, "model parameters of %s: %s", name, anv_last_error());
        return -1;
    }
    if (req_options && options_apply_cjson(o, req_options, NULL) != 0) {
        sched_job_fail(j, 400, "invalid options: %s", anv_last_error());
        return -1;
    }
    return 0;
}

/* Under s->mu: the caller enters / leaves the scheduler. */
static void enter(sched *s) { s->n_callers++; }
static void leave(sched *s) {
    s->n_callers--;
    pthread_cond_broadcast(&s->cv);
}

static int reserve_queue(sched *s, job *j) {
    if (s->n_waiting >= s->cfg.max_queue) {
        s->met.requests_rejected_queue_full++;
        sched_job_fail(j, 503, "server busy, please try again: maximum pending requests exceeded");
        return -1;
    }
    s->n_waiting++;
    return 0;
}

/* Renders and tokenizes a prompt; NULL after failing the job. */
static int32_t *encode_prompt(const model *m, const prompt_spec *ps, bool add_bos, job *j, int *n_out) {
    char *text = prompt_build(m, ps);
    if (!text) { sched_job_fail(j, 400, "prompt: %s", anv_last_error()); return NULL; }
    int32_t *toks = tokenizer_encode(m->tok, text, strlen(text), add_bos, !ps->raw, n_out);
    free(text);
    if (!toks) sched_job_fail(j, 400, "tokenizing the prompt: %s", anv_last_error());
    return toks;
}

/* Ollama's rule (its capabilities): a file with {arch}.pooling_type is an embedding model and
 * nothing else, as are the encoder families. */
static bool embeds_only(const model *m) {
    return m->hp.embedding_only || (m->gguf && model_file_embeds_only(m->gguf));
}

/* The last message's text is longer than the context by itself (after the oldest messages went):
 * its oldest tokens go, the rest of the prompt stays. The prompt rendered with that message empty
 * gives what must stay: the common head (system prompt, tools, earlier turns, the message's header)
 * and tail (its end marker, the generation prompt); from the text between them the newest tokens
 * that fit are kept. keep_total is the prompt length wanted. Returns the new token array (freeing
 * toks) or NULL + the job failed when the head and tail alone do not fit. */
static int32_t *cut_last_message(const model *m, prompt_spec *ps, chat_message *kept, int n_kept, bool add_bos, job *j,
                                 int32_t *toks, int *n_text, int keep_total) {
    const chat_message last = kept[n_kept - 1];
    kept[n_kept - 1].content = "";
    int n_empty = 0;
    int32_t *empty = encode_prompt(m, ps, add_bos, j, &n_empty);
    kept[n_kept - 1] = last;
    if (!empty) { free(toks); return NULL; }
    int head = 0, tail = 0;
    while (head < n_empty && head < *n_text && toks[head] == empty[head]) head++;
    while (tail < n_empty - head && tail < *n_text - head && toks[*n_text - 1 - tail] == empty[n_empty - 1 - tail]) tail++;
    free(empty);
    if (head + tail >= keep_total) {
        free(toks);
        sched_job_fail(j, 400, "the prompt does not fit the context length of %d (num_ctx) even with its last message "
                       "cut: the system prompt, tools and template around it are %d tokens", keep_total, head + tail);
        return NULL;
    }
    const int keep_mid = keep_total - head - tail, cut = *n_text - head - tail - keep_mid;
    memmove(toks + head, toks + head + cut, (size_t)(keep_mid + tail) * sizeof *toks);
    *n_text -= cut;
    j->res->truncated_tokens = cut;
    return toks;
}

/* Ollama's 400 for generation on an embedding model: "\"<model>\" does not support generate|chat". */
static void fail_embed_only(job *j, const sched_gen_request *r) {
    sched_job_fail(j, 400, "\"%.200s\" does not support %s", r->model ? r->model : "",
                   r->messages && r->n_messages > 0 ? "chat" : "generate");
}

static int prepare_sampling(sched *s, lmodel *lm, const sched_gen_request *r, job *j);

/* A request with images: the whole conversation rendered (no shortening), its "[img-N]" markers
 * turned into engine/vision's marker in the order they appear, the projector named, and the
 * prompt planned as tokens with each image's rows (vision_plan.h: the projector's layout only,
 * nothing encoded), so that its length is known (count_tokens, the context check) and a slot
 * holding the same text and images is found; the worker evaluates it (sched_batch.c). */
static int prepare_vision(lmodel *lm, const store_entry *e, const sched_gen_request *r, prompt_spec *ps, job *j) {
    if (r->context && r->n_context > 0) {
        sched_job_fail(j, 400, "'context' cannot be combined with images");
        return -1;
    }
    j->projector = vision_find_projector(e->model_path, e->projector_path);
    if (!j->projector) {
        sched_job_fail(j, 400, "model '%s' does not support image input (it is a text-only model)", e->name ? e->name : lm->name);
        return -1;
    }
    const bool chat = r->messages && r->n_messages > 0;
    chat_message one = {.role = "user", .content = r->prompt ? r->prompt : ""};
    ps->msgs = chat ? r->messages : &one;
    ps->n_msgs = chat ? r->n_messages : 1;
    char *text = prompt_build(lm->m, ps);
    if (!text) { sched_job_fail(j, 400, "%s", anv_last_error()); return -1; }
    int *order = malloc((size_t)r->n_images * sizeof *order);
    j->vimgs = malloc((size_t)r->n_images * sizeof *j->vimgs);
    j->vkeys = malloc((size_t)r->n_images * sizeof *j->vkeys);
    if (!order || !j->vimgs || !j->vkeys) { free(order); free(text); sched_job_fail(j, 500, "out of memory"); return -1; }
    j->vision_text = api_images_to_marker(text, VISION_MARKER, r->n_images, order, &j->n_vimgs);
    free(text);
    if (!j->vision_text) { free(order); sched_job_fail(j, 400, "%s", anv_last_error()); return -1; }
    for (int i = 0; i < j->n_vimgs; i++) {
        const anv_image *im = &r->images[order[i]];
        j->vimgs[i] = (vision_image){im->rgb, im->width, im->height};
        j->vkeys[i] = im->sha256;
    }
    free(order);
    pthread_mutex_lock(&lm->vocab_mu);   /* one layout-only projector per loaded model */
    if (!lm->vision_info) lm->vision_info = vision_load_info(j->projector);
    vision_model *vi = lm->vision_info;
    pthread_mutex_unlock(&lm->vocab_mu);
    if (!vi) { sched_job_fail(j, 500, "%s", anv_last_error()); return -1; }
    if (vision_plan_prompt(vi, lm->m, j->vision_text, NULL, j->vimgs, j->vkeys, j->n_vimgs, &j->vplan) != 0) {
        sched_job_fail(j, 400, "%s", anv_last_error());
        return -1;
    }
    j->prompt = j->vplan.tokens;   /* the job owns them from here */
    j->n_prompt = j->vplan.n;
    j->vplan.tokens = NULL;
    if (j->n_prompt > lm->n_ctx) {
        sched_job_fail(j, 400, "the prompt is %d tokens with its images, more than the context length of %d (num_ctx)", j->n_prompt,
                       lm->n_ctx);
        return -1;
    }
    if (prepare_sampling(lm->s, lm, r, j) != 0) return -1;
    for (int i = 0; i < j->n_prompt; i++)
        if (j->prompt[i] != MODEL_TOKEN_EMBD) sampler_accept(j->smp, j->prompt[i]);
    return 0;
}

/* Builds and tokenizes the prompt, creates the sampler, grammar and stop matcher. A prompt
 * longer than the context is shortened unless the request says "truncate": false (then a 400):
 * a chat loses its oldest messages (system messages and the last message are always kept), as
 * Ollama does; if the last message alone is still too long (or a /api/generate prompt is), its
 * oldest text goes (cut_last_message), keeping the system prompt, the tools and room to answer,
 * where Ollama's runner would cut the start of the prompt with them. Logged, and reported in
 * res->truncated_* (the APIs say so in the response). */
static int prepare_gen(sched *s, lmodel *lm, const store_entry *e, const sched_gen_request *r, job *j) {
    const model *m = lm->m;
    chat_message one = {.role = "user", .content = r->prompt ? r->prompt : ""};
    const bool chat = r->messages && r->n_messages > 0;
    const chat_message *msgs = chat ? r->messages : &one;
    const int n_msgs = chat ? r->n_messages : 1;
    chat_message *kept = malloc(sizeof *kept * (size_t)n_msgs);
    if (!kept) { sched_job_fail(j, 500, "out of memory"); return -1; }
    prompt_spec ps = {.template_go = r->template_go ? r->template_go : e->template_text,
                      .system = r->system ? r->system : e->system,
                      .messages_json = e->messages_json,
                      .raw = r->raw,
                      .chat_format_override = -1,
                      .tools_json = r->tools_json,
                      .think = r->think};
    if (embeds_only(m)) {
        free(kept);
        fail_embed_only(j, r);
        return -1;
    }
    /* Ollama's capability errors: a request for what the model's template cannot do */
    prompt_caps caps = prompt_capabilities(m, ps.template_go, -1);
    if ((CHAT_THINK_IS_ON(r->think) && !caps.thinking) || (r->tools_json && !caps.tools)) {
        free(kept);
        sched_job_fail(j, 400, "%s does not support %s", e->name ? e->name : "the model",
                       r->tools_json && !caps.tools ? "tools" : "thinking");
        return -1;
    }
    if (r->reply_style) prompt_reply_style(m, &ps, r->reply_style);   /* before the first text */
    if (r->n_images > 0) {
        free(kept);
        return prepare_vision(lm, e, r, &ps, j);
    }
    const bool add_bos = tokenizer_add_bos(m->tok) && r->n_context <= 0;
    const int room = lm->n_ctx - (r->context && r->n_context > 0 ? r->n_context : 0);
    int n_text = 0, dropped = 0;
    int32_t *toks = NULL;
    for (int first = 0;; first++) {
        int k = 0;
        for (int i = 0; i < n_msgs; i++)
            if (i >= first || i == n_msgs - 1 || (msgs[i].role && !strcmp(msgs[i].role, "system"))) kept[k++] = msgs[i];
        ps.msgs = kept;
        ps.n_msgs = k;
        free(toks);
        toks = encode_prompt(m, &ps, add_bos, j, &n_text);
        if (!toks) { free(kept); return -1; }
        if (n_text <= room || r->no_truncate || !chat || first >= n_msgs - 1) break;
        if (!(msgs[first].role && !strcmp(msgs[first].role, "system"))) dropped++;
    }
    if (n_text > room && !r->no_truncate && room > 0) {
        /* room to answer: num_predict (at most half the context) or a quarter of it */
        const int np = j->opt.num_predict;
        const int answer = np > 0 ? (np < room / 2 ? np : room / 2) : room / 4;
        toks = cut_last_message(m, &ps, kept, ps.n_msgs, add_bos, j, toks, &n_text, room - answer);
        if (!toks) { free(kept); return -1; }
    }
    free(kept);
    j->res->truncated_messages = dropped;
    if (s->cfg.test_replay) {
        j->forced = tokenizer_encode(m->tok, s->cfg.test_replay, strlen(s->cfg.test_replay), false, true, &j->n_forced);
        if (!j->forced) { free(toks); sched_job_fail(j, 500, "ANVIL_TEST_REPLAY: %s", anv_last_error()); return -1; }
    }
    if (dropped || j->res->truncated_tokens)
        anv_log("model %s: a prompt longer than the context (%d tokens): dropped its %d oldest message(s) and the oldest %d "
                "token(s) of its last message", e->name ? e->name : lm->name, lm->n_ctx, dropped, j->res->truncated_tokens);
    int n_ctx_toks = r->context && r->n_context > 0 ? r->n_context : 0;
    j->n_prompt = n_ctx_toks + n_text;
    j->prompt = malloc((size_t)(j->n_prompt > 0 ? j->n_prompt : 1) * sizeof(int32_t));
    if (!j->prompt) { free(toks); sched_job_fail(j, 500, "out of memory"); return -1; }
    for (int i = 0; i < n_ctx_toks; i++) {
        if (r->context[i] < 0 || r->context[i] >= m->hp.n_vocab) {
            free(toks);
            sched_job_fail(j, 400, "context token %d (%d) is outside the vocabulary of %d", i, (int)r->context[i], m->hp.n_vocab);
            return -1;
        }
        j->prompt[i] = r->context[i];
    }
    if (n_text > 0) memcpy(j->prompt + n_ctx_toks, toks, (size_t)n_text * sizeof(int32_t));
    free(toks);
    if (j->n_prompt == 0) { sched_job_fail(j, 400, "the prompt is empty after templating"); return -1; }
    if (j->n_prompt > lm->n_ctx) {
        sched_job_fail(j, 400, "the prompt is %d tokens, more than the context length of %d (num_ctx)", j->n_prompt, lm->n_ctx);
        return -1;
    }
    if (prepare_sampling(s, lm, r, j) != 0) return -1;
    for (int i = 0; i < j->n_prompt; i++) sampler_accept(j->smp, j->prompt[i]);
    return 0;
}

/* The sampler, stop strings and grammar of a generation job. */
static int prepare_sampling(sched *s, lmodel *lm, const sched_gen_request *r, job *j) {
    const model *m = lm->m;
    if (s->cfg.test_replay && !j->forced) {
        j->forced = tokenizer_encode(m->tok, s->cfg.test_replay, strlen(s->cfg.test_replay), false, true, &j->n_forced);
        if (!j->forced) { sched_job_fail(j, 500, "ANVIL_TEST_REPLAY: %s", anv_last_error()); return -1; }
    }
    j->smp = sampler_new(&j->opt.sp, m->hp.n_vocab);
    if (!j->smp) {   /* a parameter the option table let through, or memory: the sampler says which */
        sched_job_fail(j, strstr(anv_last_error(), "out of memory") ? 500 : 400, "%s", anv_last_error());
        return -1;
    }
    j->stop = stop_matcher_new(j->opt.stop, j->opt.n_stop);
    if (!j->stop) { sched_job_fail(j, 500, "out of memory"); return -1; }
    if (r->format && *r->format) {
        j->g = strcmp(r->format, "json") == 0 ? grammar_json_object() : grammar_json_schema(r->format);
        if (!j->g) { sched_job_fail(j, 400, "format: %s", anv_last_error()); return -1; }
        pthread_mutex_lock(&lm->vocab_mu);   /* one vocabulary index per loaded model */
        if (!lm->vocab) lm->vocab = grammar_vocab_new(m->tok);
        pthread_mutex_unlock(&lm->vocab_mu);
        j->gm = lm->vocab ? grammar_matcher_new_shared(j->g, lm->vocab) : NULL;
        if (!j->gm) { sched_job_fail(j, 500, "format: %s", anv_last_error()); return -1; }
    }
    return 0;
}

static void job_clear(job *j) {
    free(j->prompt);
    free(j->vision_text);
    vision_plan_free(&j->vplan);
    free(j->vimgs);
    free(j->vkeys);
    free(j->projector);
    sampler_free(j->smp);
    grammar_matcher_free(j->gm);
    grammar_free(j->g);
    stop_matcher_free(j->stop);
    options_clear(&j->opt);
    if (j->in_tokens)
        for (int i = 0; i < j->n_in; i++) free(j->in_tokens[i]);
    free(j->in_tokens);
    free(j->in_len);
    free(j->embd);
    free(j->forced);
}

/* Under s->mu: queues j on lm and waits until the worker is done with it. False (j
 * failed, not queued) when the scheduler is shutting down. */
static bool run_job(sched *s, lmodel *lm, job *j) {
    if (lm->shutdown || s->shutting_down) {
        sched_job_fail(j, 503, "server shutting down");
        return false;
    }
    lm->n_refs++;
    if (j->kind == JOB_GEN) {
        if (lm->q_tail) lm->q_tail->next = j; else lm->q_head = j;
        lm->q_tail = j;
    } else {
        if (lm->e_tail) lm->e_tail->next = j; else lm->e_head = j;
        lm->e_tail = j;
    }
    pthread_cond_signal(&lm->cv);
    while (!j->done) pthread_cond_wait(&s->cv, &s->mu);
    return true;
}

/* Unloads lm (keep_alive 0 with no prompt) once it is idle. */
static void unload_when_idle(lmodel *lm) {
    lm->stopping = true;
    pthread_cond_signal(&lm->cv);
}

static void finish_result(sched *s, sched_result *res, const job *j) {
    res->status = j->status;
    if (j->status) snprintf(res->error, sizeof res->error, "%s", j->error);
    res->total_ns = sched_now_ns() - j->t_start_ns;
    s->met.requests_total++;
    if (j->status) s->met.requests_failed++;
}

int sched_generate(sched *s, const sched_gen_request *r, sched_result *res) {
    memset(res, 0, sizeof *res);
    job j = {.kind = JOB_GEN, .gr = r, .res = res, .t_start_ns = sched_now_ns()};
    store_entry e;
    pthread_mutex_lock(&s->mu);
    enter(s);
    pthread_mutex_unlock(&s->mu);

    bool have_prompt = (r->prompt && *r->prompt) || (r->messages && r->n_messages > 0);
    int64_t ka = r->keep_alive_set ? r->keep_alive_ms : s->cfg.keep_alive_ms;
    int rc = resolve(s, r->model, r->options, &e, &j.opt, &j);
    if (rc == 0) snprintf(res->model, sizeof res->model, "%s", e.name ? e.name : r->model);
    pthread_mutex_lock(&s->mu);
    if (rc == 0 && !have_prompt && r->keep_alive_set && r->keep_alive_ms == 0) {
        /* Unload: nothing is loaded for it. */
        for (lmodel *lm = s->models; lm; lm = lm->next)
            if (strcmp(lm->path, e.model_path) == 0) {
                lm->keep_alive_ms = 0;
                unload_when_idle(lm);
            }
        res->done_reason = "unload";
        finish_result(s, res, &j);
        goto out;
    }
    bool queued = false;
    lmodel *lm = NULL;
    if (rc == 0 && have_prompt) { rc = reserve_queue(s, &j); queued = rc == 0; }
    if (rc == 0) {
        lm = acquire_model(s, &e, &j.opt, &j, &res->load_ns);
        if (!lm) rc = -1;
    }
    if (rc == 0) {
        lm->keep_alive_ms = ka;
        snprintf(res->model, sizeof res->model, "%s", e.name ? e.name : lm->name);
        if (!have_prompt) {
            if (embeds_only(lm->m)) fail_embed_only(&j, r);   /* Ollama refuses even the load */
            else res->done_reason = "load";
        } else {
            pthread_mutex_unlock(&s->mu);
            rc = prepare_gen(s, lm, &e, r, &j);
            pthread_mutex_lock(&s->mu);
            if (rc == 0 && r->count_only) {   /* the prompt's length, nothing evaluated */
                res->prompt_eval_count = res->prompt_tokens = j.n_prompt;
                res->done_reason = "count";
            } else if (rc == 0 && run_job(s, lm, &j)) {
                queued = false;   /* once queued, the worker releases the queue position on admission */
            }
        }
        sched_release_ref(lm);
    }
    if (queued) s->n_waiting--;
    finish_result(s, res, &j);
out:
    leave(s);
    pthread_mutex_unlock(&s->mu);
    job_clear(&j);
    store_entry_clear(&e);
    return res->status ? -1 : 0;
}

void sched_result_clear(sched_result *res) {
    if (!res) return;
    free(res->context);
    res->context = NULL;
    res->n_context = 0;
    free(res->stop_sequence);
    res->stop_sequence = NULL;
}

/* The tokens the tokenizer appends to every text (BERT's [SEP], an EOS where the vocabulary
 * adds one): what an empty text encodes to after its BOS. Their count (at most cap). */
int sched_embed(sched *s, const sched_embed_request *r, sched_embed_result *res) {
    memset(res, 0, sizeof *res);
    job j = {.kind = JOB_EMBED, .t_start_ns = sched_now_ns(), .er = r};
    store_entry e;
    pthread_mutex_lock(&s->mu);
    enter(s);
    pthread_mutex_unlock(&s->mu);
    int64_t ka = r->keep_alive_set ? r->keep_alive_ms : s->cfg.keep_alive_ms;
    int rc = resolve(s, r->model, r->options, &e, &j.opt, &j);
    if (rc == 0 && (r->n_inputs < 0 || (r->n_inputs > 0 && !r->inputs && !r->token_inputs))) {
        sched_job_fail(&j, 400, "invalid input list");
        rc = -1;
    }
    if (rc == 0 && r->dimensions < 0) { sched_job_fail(&j, 400, "dimensions must be positive"); rc = -1; }
    pthread_mutex_lock(&s->mu);
    bool queued = false;
    lmodel *lm = NULL;
    if (rc == 0) { rc = reserve_queue(s, &j); queued = rc == 0; }
    if (rc == 0) {
        lm = acquire_model(s, &e, &j.opt, &j, &res->load_ns);
        if (!lm) rc = -1;
    }
    if (rc == 0) {
        lm->keep_alive_ms = ka;
        snprintf(res->model, sizeof res->model, "%s", e.name ? e.name : lm->name);
        pthread_mutex_unlock(&s->mu);
        const model *m = lm->m;
        j.n_in = r->n_inputs;
        j.dimensions = r->dimensions;
        j.embd_raw = r->raw;
        j.in_tokens = calloc((size_t)(r->n_inputs > 0 ? r->n_inputs : 1), sizeof *j.in_tokens);
        j.in_len = calloc((size_t)(r->n_inputs > 0 ? r->n_inputs : 1), sizeof *j.in_len);
        if (!j.in_tokens || !j.in_len) { sched_job_fail(&j, 500, "out of memory"); rc = -1; }
        for (int i = 0; rc == 0 && i < r->n_inputs; i++) {
            if (sched_embed_abandoned(&j, i)) { rc = -1; break; }
            if (r->token_inputs) {   /* token ids as given: checked against the vocabulary */
                int n = r->token_lens ? r->token_lens[i] : 0;
                j.in_tokens[i] = malloc((size_t)(n > 0 ? n : 1) * sizeof(int32_t));
                if (!j.in_tokens[i]) { sched_job_fail(&j, 500, "out of memory"); rc = -1; break; }
                for (int k = 0; k < n && rc == 0; k++) {
                    int32_t t = r->token_inputs[i] ? r->token_inputs[i][k] : -1;
                    if (t < 0 || t >= m->hp.n_vocab) {
                        sched_job_fail(&j, 400, "input %d: token %d (%d) is outside the vocabulary of %d", i, k, (int)t,
                                       m->hp.n_vocab);
                        rc = -1;
                    }
                    j.in_tokens[i][k] = t;
                }
                j.in_len[i] = n;
                if (rc) break;
            } else {
                const char *in = r->inputs[i] ? r->inputs[i] : "";
                j.in_tokens[i] = embed_tokenize(m->tok, in, &j.in_len[i]);
                if (!j.in_tokens[i]) { sched_job_fail(&j, 400, "tokenizing input %d: %s", i, anv_last_error()); rc = -1; break; }
            }
            if (j.in_len[i] == 0) { sched_job_fail(&j, 400, "input %d is empty", i); rc = -1; break; }
            if (embed_fit_context(m->tok, j.in_tokens[i], &j.in_len[i], lm->n_ctx, r->truncate, !r->token_inputs) != 0) {
                sched_job_fail(&j, 400, "%s", anv_last_error());
                rc = -1;
                break;
            }
            res->prompt_eval_count += j.in_len[i];
        }
        pthread_mutex_lock(&s->mu);
        if (rc == 0 && r->n_inputs > 0 && run_job(s, lm, &j)) queued = false;
        if (rc == 0 && j.status == 0) {
            res->embeddings = j.embd;
            j.embd = NULL;
            res->n = r->n_inputs;
            res->dim = j.dim;
            s->met.embed_requests_total++;
            s->met.embed_inputs_total += (uint64_t)r->n_inputs;
        }
        sched_release_ref(lm);
    }
    if (queued) s->n_waiting--;
    res->status = j.status;
    if (j.status) snprintf(res->error, sizeof res->error, "%s", j.error);
    res->total_ns = sched_now_ns() - j.t_start_ns;
    s->met.requests_total++;
    if (j.status) s->met.requests_failed++;
    leave(s);
    pthread_mutex_unlock(&s->mu);
    job_clear(&j);
    store_entry_clear(&e);
    return res->status ? -1 : 0;
}

void sched_embed_result_clear(sched_embed_result *res) {
    if (!res) return;
    free(res->embeddings);
    res->embeddings = NULL;
}

/* ---------------------------------------------------------------- introspection */

int sched_ps(sched *s, sched_loaded **out, int *n_out) {
    pthread_mutex_lock(&s->mu);
    int n = 0;
    for (lmodel *lm = s->models; lm; lm = lm->next) n++;
    sched_loaded *a = calloc((size_t)(n > 0 ? n : 1), sizeof *a);
    if (!a) {
        pthread_mutex_unlock(&s->mu);
        anv_set_error("out of memory");
        return -1;
    }
    int i = 0;
    const int64_t now_mono = sched_now_ms(), now_unix = unix_now_ms();
    for (lmodel *lm = s->models; lm; lm = lm->next, i++) {
        sched_loaded *l = &a[i];
        snprintf(l->name, sizeof l->name, "%s", lm->name);
        snprintf(l->digest, sizeof l->digest, "%s", lm->digest);
        snprintf(l->arch, sizeof l->arch, "%s", lm->m->hp.arch_name ? lm->m->hp.arch_name : "");
        l->size = lm->size;
        l->size_vram = lm->size_vram;
        l->context_length = lm->n_ctx;
        l->n_active = lm->n_active;
        for (const job *q = lm->q_head; q; q = q->next) l->n_queued++;
        for (const job *q = lm->e_head; q; q = q->next) l->n_queued++;
        l->n_slots = lm->n_slots;
        l->n_layer = lm->m->hp.n_layer;
        for (int il = 0; il < l->n_layer; il++) l->n_gpu_layers += lm->m->layers[il].be != lm->m->cpu;
        const backend *gpu = l->n_gpu_layers > 0 ? lm->m->gpu : NULL;
        snprintf(l->backend, sizeof l->backend, "%s", gpu && gpu->name ? gpu->name : "cpu");
        snprintf(l->device, sizeof l->device, "%s", gpu ? (gpu->device_desc ? gpu->device_desc : gpu->name) : "CPU");
        snprintf(l->kv_type, sizeof l->kv_type, "%s", qtype_get(s->cfg.kv_type) ? qtype_get(s->cfg.kv_type)->name : "?");
        l->embedding_only = embeds_only(lm->m);
        if (lm->stopping || lm->shutdown) l->expires_at_ms = -1;
        else if (lm->keep_alive_ms < 0) l->expires_at_ms = 0;
        else if (lm->n_refs > 0) l->expires_at_ms = now_unix + lm->keep_alive_ms;
        else l->expires_at_ms = now_unix + (lm->expires_mono_ms - now_mono);
    }
    pthread_mutex_unlock(&s->mu);
    *out = a;
    *n_out = n;
    return 0;
}

int sched_stop(sched *s, const char *name) {
    store_entry e;
    memset(&e, 0, sizeof e);
    bool resolved = name && sched_lookup(s, name, &e) == 0;
    int found = 0;
    pthread_mutex_lock(&s->mu);
    for (lmodel *lm = s->models; lm; lm = lm->next) {
        if (lm->stopping || lm->shutdown) continue;
        if ((resolved && strcmp(lm->path, e.model_path) == 0) || (name && strcmp(lm->name, name) == 0)) {
            unload_when_idle(lm);
            found++;
        }
    }
    pthread_mutex_unlock(&s->mu);
    store_entry_clear(&e);
    if (!found) {
        anv_set_error("model '%s' not found", name ? name : "");
        return -1;
    }
    return 0;
}

void sched_get_metrics(sched *s, sched_metrics *m) {
    pthread_mutex_lock(&s->mu);
    *m = s->met;
    m->queue_length = s->n_waiting;
    m->n_loaded = 0;
    m->bytes_cpu = m->bytes_gpu = 0;
    m->n_active = 0;
    for (lmodel *lm = s->models; lm; lm = lm->next) {
        m->n_loaded++;
        m->n_active += lm->n_active;
        m->bytes_gpu += lm->size_vram;
        m->bytes_cpu += lm->size - lm->size_vram;
    }
    pthread_mutex_unlock(&s->mu);
}
