/* metrics: the server's Prometheus endpoint. Owns the request accounting (a latency
 * histogram and status-class counts per method and route, fed by the HTTP layer after
 * every request) and renders it with the scheduler's counters (tokens, queue, loaded
 * models and their memory) as Prometheus text exposition format 0.0.4. */
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

void api_metrics(http_req *r) {
    server_app *app = (server_app *)http_app(r);
    sched_metrics sm;
    memset(&sm, 0, sizeof sm);
    sched_get_metrics(app->sched, &sm);
    sched_loaded *loaded = NULL;
    int n_loaded = 0;
    if (sched_ps(app->sched, &loaded, &n_loaded)) { loaded = NULL; n_loaded = 0; }

    bytebuf t = {0};
    family(&t, "anvil_info", "gauge", "Anvil version (always 1).");
    bytebuf_printf(&t, "anvil_info{version=\"%s\"} 1\n", ANVIL_VERSION);
    family(&t, "anvil_models_loaded", "gauge", "Models loaded now.");
    bytebuf_printf(&t, "anvil_models_loaded %d\n", sm.n_loaded);
    family(&t, "anvil_model_memory_bytes", "gauge", "Memory a loaded model holds (weights, KV caches, scratch) by device kind.");
    for (int i = 0; i < n_loaded; i++) {
        char name[512];
        label_escape(loaded[i].name, name, sizeof name);
        uint64_t gpu = loaded[i].size_vram, cpu = loaded[i].size > gpu ? loaded[i].size - gpu : 0;
        bytebuf_printf(&t, "anvil_model_memory_bytes{model=\"%s\",device=\"cpu\"} %llu\n", name, (unsigned long long)cpu);
        bytebuf_printf(&t, "anvil_model_memory_bytes{model=\"%s\",device=\"gpu\"} %llu\n", name, (unsigned long long)gpu);
    }
    family(&t, "anvil_memory_bytes", "gauge", "Memory all loaded models hold, by device kind.");
    bytebuf_printf(&t, "anvil_memory_bytes{device=\"cpu\"} %llu\n", (unsigned long long)sm.bytes_cpu);
    bytebuf_printf(&t, "anvil_memory_bytes{device=\"gpu\"} %llu\n", (unsigned long long)sm.bytes_gpu);
    family(&t, "anvil_prompt_tokens_total", "counter", "Prompt tokens evaluated.");
    bytebuf_printf(&t, "anvil_prompt_tokens_total %llu\n", (unsigned long long)sm.prompt_tokens_total);
    family(&t, "anvil_generated_tokens_total", "counter", "Tokens generated.");
    bytebuf_printf(&t, "anvil_generated_tokens_total %llu\n", (unsigned long long)sm.generated_tokens_total);
    family(&t, "anvil_generate_seconds_total", "counter", "Wall time spent in decode steps.");
    bytebuf_printf(&t, "anvil_generate_seconds_total %.6f\n", sm.generate_seconds_total);
    family(&t, "anvil_tokens_per_second", "gauge", "Generated tokens per second of decoding, since the start.");
    bytebuf_printf(&t, "anvil_tokens_per_second %.3f\n",
              sm.generate_seconds_total > 0 ? (double)sm.generated_tokens_total / sm.generate_seconds_total : 0.0);
    family(&t, "anvil_queue_length", "gauge", "Requests waiting for a slot.");
    bytebuf_printf(&t, "anvil_queue_length %d\n", sm.queue_length);
    family(&t, "anvil_generation_requests_total", "counter", "Generation and embedding requests the scheduler took.");
    bytebuf_printf(&t, "anvil_generation_requests_total %llu\n", (unsigned long long)sm.requests_total);
    family(&t, "anvil_generation_requests_failed_total", "counter", "Scheduler requests that failed.");
    bytebuf_printf(&t, "anvil_generation_requests_failed_total %llu\n", (unsigned long long)sm.requests_failed);
    family(&t, "anvil_queue_rejected_total", "counter", "Requests rejected because the queue was full (HTTP 503).");
    bytebuf_printf(&t, "anvil_queue_rejected_total %llu\n", (unsigned long long)sm.requests_rejected_queue_full);
    family(&t, "anvil_batched_steps_total", "counter", "Forward passes that decoded more than one sequence.");
    bytebuf_printf(&t, "anvil_batched_steps_total %llu\n", (unsigned long long)sm.batched_steps_total);
    family(&t, "anvil_batched_tokens_total", "counter", "Tokens decoded in batched forward passes.");
    bytebuf_printf(&t, "anvil_batched_tokens_total %llu\n", (unsigned long long)sm.batched_tokens_total);

    /* Snapshot the request stats, then format without the lock. */
    server_metrics *m = &app->metrics;
    pthread_mutex_lock(&m->lock);
    int n_routes = m->n_routes;
    struct route_stats *rs = malloc(sizeof *rs * (size_t)(n_routes ? n_routes : 1));
    if (rs) memcpy(rs, m->routes, sizeof *rs * (size_t)n_routes);
    pthread_mutex_unlock(&m->lock);
    if (!rs) n_routes = 0;

    family(&t, "anvil_requests_total", "counter", "HTTP requests by method, route and status class.");
    for (int i = 0; i < n_routes; i++) {
        char route[128];
        label_escape(rs[i].route, route, sizeof route);
        for (int c = 1; c <= 5; c++)
            if (rs[i].count_by_status[c])
                bytebuf_printf(&t, "anvil_requests_total{method=\"%s\",route=\"%s\",code=\"%dxx\"} %llu\n",
                          rs[i].method, route, c, (unsigned long long)rs[i].count_by_status[c]);
    }
    family(&t, "anvil_request_duration_seconds", "histogram", "HTTP request latency by method and route.");
    for (int i = 0; i < n_routes; i++) {
        char route[128];
        label_escape(rs[i].route, route, sizeof route);
        for (int b = 0; b < METRICS_LATENCY_BUCKETS; b++)
            bytebuf_printf(&t, "anvil_request_duration_seconds_bucket{method=\"%s\",route=\"%s\",le=\"%g\"} %llu\n",
                      rs[i].method, route, BUCKET_LE[b], (unsigned long long)rs[i].buckets[b]);
        bytebuf_printf(&t, "anvil_request_duration_seconds_bucket{method=\"%s\",route=\"%s\",le=\"+Inf\"} %llu\n",
                  rs[i].method, route, (unsigned long long)rs[i].count);
        bytebuf_printf(&t, "anvil_request_duration_seconds_sum{method=\"%s\",route=\"%s\"} %.6f\n", rs[i].method, route, rs[i].sum_seconds);
        bytebuf_printf(&t, "anvil_request_duration_seconds_count{method=\"%s\",route=\"%s\"} %llu\n",
                  rs[i].method, route, (unsigned long long)rs[i].count);
    }
    free(rs);
    free(loaded);
    family(&t, "anvil_uptime_seconds", "gauge", "Seconds since the server started.");
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    bytebuf_printf(&t, "anvil_uptime_seconds %.3f\n", app->started_ms ? (double)(now_ms - app->started_ms) / 1000.0 : 0.0);

    if (t.oom) http_reply_error(r, 500, "out of memory");
    else http_reply(r, 200, "text/plain; version=0.0.4; charset=utf-8", t.data, t.len);
    bytebuf_free(&t);
}
