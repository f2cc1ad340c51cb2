/* metrics: the server's Prometheus endpoint. Owns the request accounting (a latency
 * histogram and status-class counts per method and route, fed by the HTTP layer after
 * every request) and renders it with the scheduler's counters (tokens, queue, loaded
 * models: memory, placement, load) as Prometheus text exposition format 0.0.4, every
 * series labelled with the replica (replica.h) for a fleet behind one router. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "bytebuf.h"
#include "error.h"

/* Upper bounds (seconds) of the latency buckets, 5 ms .. 60 s; +Inf is the count. */
static const double BUCKET_LE[METRICS_LATENCY_BUCKETS] = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60,
};

void metrics_init(server_metrics *m) {
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->lock, NULL);
}

void metrics_observe(void *app, const char *method, const char *route, int status, double seconds) {
    server_metrics *m = &((server_app *)app)->metrics;
    if (!method) method = "";
    if (!route || !*route) route = "unmatched";   /* 404s of unknown paths share one series */
    if (seconds < 0) seconds = 0;
    pthread_mutex_lock(&m->lock);
    struct route_stats *rs = NULL;
    for (int i = 0; i < m->n_routes && !rs; i++)
        if (!strcmp(m->routes[i].route, route) && !strcmp(m->routes[i].method, method)) rs = &m->routes[i];
    if (!rs && m->n_routes < (int)(sizeof m->routes / sizeof m->routes[0])) {
        rs = &m->routes[m->n_routes++];
        snprintf(rs->route, sizeof rs->route, "%s", route);
        snprintf(rs->method, sizeof rs->method, "%s", method);
    }
    if (rs) {
        int cls = status / 100;
        if (cls >= 1 && cls <= 5) rs->count_by_status[cls]++;
        for (int b = 0; b < METRICS_LATENCY_BUCKETS; b++)
            if (seconds <= BUCKET_LE[b]) rs->buckets[b]++;
        rs->sum_seconds += seconds;
        rs->count++;
    }
    pthread_mutex_unlock(&m->lock);
}

/* A growing text buffer. */
/* A label value with Prometheus escapes (backslash, quote, newline). */
static void label_escape(const char *s, char *out, size_t cap) {
    size_t o = 0;
    for (; *s && o + 3 < cap; s++) {
        if (*s == '\\' || *s == '"') { out[o++] = '\\'; out[o++] = *s; }
        else if (*s == '\n') { out[o++] = '\\'; out[o++] = 'n'; }
        else out[o++] = *s;
    }
    out[o] = 0;
}

static void family(bytebuf *t, const char *name, const char *type, const char *help) {
    bytebuf_printf(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One sample line: name{replica="...",<labels>} value. Every series carries the replica
 * label, so the series of several replicas behind one router stay apart even where the
 * scraper adds no instance label of its own. */
static void sample(bytebuf *t, const char *rl, const char *name, const char *labels, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void sample(bytebuf *t, const char *rl, const char *name, const char *labels, const char *fmt, ...) {
    char val[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(val, sizeof val, fmt, ap);
    va_end(ap);
    bytebuf_printf(t, "%s{%s%s%s} %s\n", name, rl, labels && *labels ? "," : "", labels ? labels : "", val);
}

#define ULL(x) ((unsigned long long)(x))

/* The per-model families (memory, load, placement) from the scheduler's list. */
static void model_families(bytebuf *t, const char *rl, const sched_loaded *L, int n) {
    char lb[2048];
    family(t, "anvil_model_info", "gauge", "A loaded model (always 1): where it runs, its KV cache type.");
    for (int i = 0; i < n; i++) {
        char name[512], backend[80], device[300];
        label_escape(L[i].name, name, sizeof name);
        label_escape(L[i].backend, backend, sizeof backend);
        label_escape(L[i].device, device, sizeof device);
        snprintf(lb, sizeof lb, "model=\"%s\",backend=\"%s\",device=\"%s\",kv_cache_type=\"%s\",kind=\"%s\"", name, backend,
                 device, L[i].kv_type, L[i].embedding_only ? "embedding" : "completion");
        sample(t, rl, "anvil_model_info", lb, "1");
    }
    family(t, "anvil_model_memory_bytes", "gauge", "Memory a loaded model holds (weights, KV caches, scratch) by device kind.");
    for (int i = 0; i < n; i++) {
        char name[512];
        label_escape(L[i].name, name, sizeof name);
        uint64_t gpu = L[i].size_vram, cpu = L[i].size > gpu ? L[i].size - gpu : 0;
        snprintf(lb, sizeof lb, "model=\"%s\",device=\"cpu\"", name);
        sample(t, rl, "anvil_model_memory_bytes", lb, "%llu", ULL(cpu));
        snprintf(lb, sizeof lb, "model=\"%s\",device=\"gpu\"", name);
        sample(t, rl, "anvil_model_memory_bytes", lb, "%llu", ULL(gpu));
    }
    static const struct { const char *name, *help; } per[] = {
        {"anvil_model_layers", "Layers of a loaded model."},
        {"anvil_model_gpu_layers", "Layers of a loaded model on the GPU backend."},
        {"anvil_model_context_length", "Context length per slot of a loaded model."},
        {"anvil_model_parallel", "Parallel slots of a loaded model."},
        {"anvil_model_requests_in_flight", "Requests a loaded model is running now."},
        {"anvil_model_requests_queued", "Requests waiting for a slot of a loaded model."},
    };
    for (size_t f = 0; f < sizeof per / sizeof per[0]; f++) {
        family(t, per[f].name, "gauge", per[f].help);
        for (int i = 0; i < n; i++) {
            char name[512];
            label_escape(L[i].name, name, sizeof name);
            snprintf(lb, sizeof lb, "model=\"%s\"", name);
            const int v[] = {L[i].n_layer, L[i].n_gpu_layers, L[i].context_length, L[i].n_slots, L[i].n_active, L[i].n_queued};
            sample(t, rl, per[f].name, lb, "%d", v[f]);
        }
    }
}

void api_metrics(http_req *r) {
    server_app *app = (server_app *)http_app(r);
    sched_metrics sm;
    memset(&sm, 0, sizeof sm);
    sched_get_metrics(app->sched, &sm);
    sched_loaded *loaded = NULL;
    int n_loaded = 0;
    if (sched_ps(app->sched, &loaded, &n_loaded)) { loaded = NULL; n_loaded = 0; }

    char rep[300], rl[320];
    label_escape(app->replica, rep, sizeof rep);
    snprintf(rl, sizeof rl, "replica=\"%s\"", rep);
    bytebuf t = {0};
    family(&t, "anvil_info", "gauge", "Anvil version (always 1).");
    sample(&t, rl, "anvil_info", "version=\"" ANVIL_VERSION "\"", "1");
    family(&t, "anvil_models_loaded", "gauge", "Models loaded now.");
    sample(&t, rl, "anvil_models_loaded", NULL, "%d", sm.n_loaded);
    model_families(&t, rl, loaded, n_loaded);
    family(&t, "anvil_memory_bytes", "gauge", "Memory all loaded models hold, by device kind.");
    sample(&t, rl, "anvil_memory_bytes", "device=\"cpu\"", "%llu", ULL(sm.bytes_cpu));
    sample(&t, rl, "anvil_memory_bytes", "device=\"gpu\"", "%llu", ULL(sm.bytes_gpu));
    family(&t, "anvil_requests_in_flight", "gauge", "Generation and embedding requests running now, all models.");
    sample(&t, rl, "anvil_requests_in_flight", NULL, "%d", sm.n_active);
    family(&t, "anvil_prompt_tokens_total", "counter", "Prompt tokens evaluated.");
    sample(&t, rl, "anvil_prompt_tokens_total", NULL, "%llu", ULL(sm.prompt_tokens_total));
    family(&t, "anvil_generated_tokens_total", "counter", "Tokens generated.");
    sample(&t, rl, "anvil_generated_tokens_total", NULL, "%llu", ULL(sm.generated_tokens_total));
    family(&t, "anvil_generate_seconds_total", "counter", "Wall time spent in decode steps.");
    sample(&t, rl, "anvil_generate_seconds_total", NULL, "%.6f", sm.generate_seconds_total);
    family(&t, "anvil_tokens_per_second", "gauge", "Generated tokens per second of decoding, since the start.");
    sample(&t, rl, "anvil_tokens_per_second", NULL, "%.3f",
           sm.generate_seconds_total > 0 ? (double)sm.generated_tokens_total / sm.generate_seconds_total : 0.0);
    family(&t, "anvil_queue_length", "gauge", "Requests waiting for a slot.");
    sample(&t, rl, "anvil_queue_length", NULL, "%d", sm.queue_length);
    family(&t, "anvil_generation_requests_total", "counter", "Generation and embedding requests the scheduler took.");
    sample(&t, rl, "anvil_generation_requests_total", NULL, "%llu", ULL(sm.requests_total));
    family(&t, "anvil_generation_requests_failed_total", "counter", "Scheduler requests that failed.");
    sample(&t, rl, "anvil_generation_requests_failed_total", NULL, "%llu", ULL(sm.requests_failed));
    family(&t, "anvil_embed_requests_total", "counter", "Embedding requests answered.");
    sample(&t, rl, "anvil_embed_requests_total", NULL, "%llu", ULL(sm.embed_requests_total));
    family(&t, "anvil_embed_inputs_total", "counter", "Inputs embedded (one vector each).");
    sample(&t, rl, "anvil_embed_inputs_total", NULL, "%llu", ULL(sm.embed_inputs_total));
    family(&t, "anvil_queue_rejected_total", "counter", "Requests rejected because the queue was full (HTTP 503).");
    sample(&t, rl, "anvil_queue_rejected_total", NULL, "%llu", ULL(sm.requests_rejected_queue_full));
    family(&t, "anvil_images_total", "counter",
           "Images of generation requests, by how they got into the context: encoded, from the per-digest cache, or "
           "reused with the prompt prefix a slot already held.");
    sample(&t, rl, "anvil_images_total", "source=\"encoded\"", "%llu", ULL(sm.images_encoded_total));
    sample(&t, rl, "anvil_images_total", "source=\"cache\"", "%llu", ULL(sm.images_cached_total));
    sample(&t, rl, "anvil_images_total", "source=\"prefix\"", "%llu", ULL(sm.images_reused_total));
    family(&t, "anvil_batched_steps_total", "counter", "Forward passes that decoded more than one sequence.");
    sample(&t, rl, "anvil_batched_steps_total", NULL, "%llu", ULL(sm.batched_steps_total));
    family(&t, "anvil_batched_tokens_total", "counter", "Tokens decoded in batched forward passes.");
    sample(&t, rl, "anvil_batched_tokens_total", NULL, "%llu", ULL(sm.batched_tokens_total));

    /* Snapshot the request stats, then format without the lock. */
    server_metrics *m = &app->metrics;
    pthread_mutex_lock(&m->lock);
    int n_routes = m->n_routes;
    struct route_stats *rs = malloc(sizeof *rs * (size_t)(n_routes ? n_routes : 1));
    if (rs) memcpy(rs, m->routes, sizeof *rs * (size_t)n_routes);
    pthread_mutex_unlock(&m->lock);
    if (!rs) n_routes = 0;

    char lb[256];
    family(&t, "anvil_requests_total", "counter", "HTTP requests by method, route and status class.");
    for (int i = 0; i < n_routes; i++) {
        char route[128];
        label_escape(rs[i].route, route, sizeof route);
        for (int c = 1; c <= 5; c++)
            if (rs[i].count_by_status[c]) {
                snprintf(lb, sizeof lb, "method=\"%s\",route=\"%s\",code=\"%dxx\"", rs[i].method, route, c);
                sample(&t, rl, "anvil_requests_total", lb, "%llu", ULL(rs[i].count_by_status[c]));
            }
    }
    family(&t, "anvil_request_duration_seconds", "histogram", "HTTP request latency by method and route.");
    for (int i = 0; i < n_routes; i++) {
        char route[128];
        label_escape(rs[i].route, route, sizeof route);
        for (int b = 0; b < METRICS_LATENCY_BUCKETS; b++) {
            snprintf(lb, sizeof lb, "method=\"%s\",route=\"%s\",le=\"%g\"", rs[i].method, route, BUCKET_LE[b]);
            sample(&t, rl, "anvil_request_duration_seconds_bucket", lb, "%llu", ULL(rs[i].buckets[b]));
        }
        snprintf(lb, sizeof lb, "method=\"%s\",route=\"%s\",le=\"+Inf\"", rs[i].method, route);
        sample(&t, rl, "anvil_request_duration_seconds_bucket", lb, "%llu", ULL(rs[i].count));
        snprintf(lb, sizeof lb, "method=\"%s\",route=\"%s\"", rs[i].method, route);
        sample(&t, rl, "anvil_request_duration_seconds_sum", lb, "%.6f", rs[i].sum_seconds);
        sample(&t, rl, "anvil_request_duration_seconds_count", lb, "%llu", ULL(rs[i].count));
    }
    free(rs);
    free(loaded);
    family(&t, "anvil_uptime_seconds", "gauge", "Seconds since the server started.");
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    sample(&t, rl, "anvil_uptime_seconds", NULL, "%.3f", app->started_ms ? (double)(now_ms - app->started_ms) / 1000.0 : 0.0);

    if (t.oom) http_reply_error(r, 500, "out of memory");
    else http_reply(r, 200, "text/plain; version=0.0.4; charset=utf-8", t.data, t.len);
    bytebuf_free(&t);
}
