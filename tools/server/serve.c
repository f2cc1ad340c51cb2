/* serve: `anvil serve`: configuration from flags and the environment, the route table,
 * the shared server state (store, scheduler, metrics), and the life of the process:
 * start, wait for SIGINT/SIGTERM, stop accepting, cancel, free everything. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "error.h"
#include "quant.h"
#include "replica.h"
#include "serve_signal.h"
#include "settings.h"

static const http_route routes[] = {
    {"GET", "/", api_root, 0},
    {"POST", "/api/generate", api_generate, 0},
    {"POST", "/api/chat", api_chat, 0},
    {"POST", "/api/embed", api_embed, 0},
    {"POST", "/api/embeddings", api_embeddings, 0},
    {"GET", "/api/version", api_version, 0},
    {"GET", "/api/tags", api_tags, 0},
    {"POST", "/api/show", api_show, 0},
    {"GET", "/api/ps", api_ps, 0},
    {"POST", "/api/pull", api_pull, 0},
    {"POST", "/api/create", api_create, 0},
    {"POST", "/api/copy", api_copy, 0},
    {"DELETE", "/api/delete", api_delete, 0},
    {"HEAD", "/api/blobs/", api_blob, 0},
    {"POST", "/api/blobs/", api_blob, HTTP_ROUTE_SPOOL_BODY},
    {"POST", "/v1/chat/completions", oai_chat_completions, 0},
    {"POST", "/v1/completions", oai_completions, 0},
    {"GET", "/v1/models", oai_models, 0},
    {"GET", "/v1/models/", oai_models, 0},
    {"POST", "/v1/embeddings", oai_embeddings, 0},
    {"POST", "/v1/responses", oai_responses, 0},
    {"POST", "/v1/messages", anthropic_messages, 0},
    {"POST", "/v1/messages/count_tokens", anthropic_count_tokens, 0},
    {"GET", "/metrics", api_metrics, 0},
};

static void usage(FILE *out) {
    fputs("usage: anvil serve [--host HOST:PORT]\n\n"
          "Serves Ollama's REST API (/api/...), OpenAI's (/v1/...) and Anthropic's Messages\n"
          "(/v1/messages) on HOST:PORT.\n"
          "Logs one line per request to stderr; stops cleanly on SIGINT or SIGTERM.\n\n"
          "options:\n"
          "  --host HOST:PORT   overrides ANVIL_HOST\n\n"
          "environment variables (default; Ollama's OLLAMA_* names of the same settings are read\n"
          "when the ANVIL_* one is unset, and OLLAMA_IGPU_ENABLE, OLLAMA_LLM_LIBRARY, OLLAMA_DEBUG and\n"
          "OLLAMA_GPU_OVERHEAD map to ANVIL_IGPU, ANVIL_BACKEND, ANVIL_DEBUG and ANVIL_GPU_OVERHEAD;\n"
          "any other OLLAMA_* that is set gets a warning at start):\n", out);
    anv_settings_print_text(out, NULL, ANV_SETTING_SERVE, ANV_SETTING_TEST);
    fputs("\n(every variable, tests' and foreign ones too: anvil help env)\n", out);
}

/* A count in 0..1000000 (0 when unset), or -1 + anv_last_error(). */
static int env_uint(const char *name, unsigned *out) {
    int v = 0;
    const int rc = anv_setting_int(name, 0, 1000000, &v);
    *out = (unsigned)v;
    return rc < 0 ? -1 : 0;
}

/* A positive number of bytes (def when unset), or -1 + anv_last_error(). */
static int env_size(const char *name, size_t def, size_t *out) {
    uint64_t v = def;
    const int rc = anv_setting_u64(name, 1, SIZE_MAX, &v);
    *out = (size_t)v;
    return rc < 0 ? -1 : 0;
}

/* The sweep of stale temporaries on a timer (ANVIL_CLEAN_INTERVAL): what a killed create, pull
 * or upload of another process left is gone within one interval, not at the next start. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    unsigned interval_s;
    store *st;
    pthread_t thread;
} sweeper;

static void *sweep_loop(void *arg) {
    sweeper *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += w->interval_s;
        while (!w->stop && pthread_cond_timedwait(&w->cv, &w->mu, &until) == 0) {}
        if (w->stop) break;
        pthread_mutex_unlock(&w->mu);
        const int n = store_clean_stale(w->st);
        if (n > 0) fprintf(stderr, "anvil: removed %d stale temporary file(s) from %s\n", n, store_root(w->st));
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int cmd_serve(int argc, char **argv) {
    const char *host = anv_setting_value("ANVIL_HOST", NULL);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { usage(stdout); return 0; }
        if (!strcmp(argv[i], "--host") && i + 1 < argc) { host = argv[++i]; continue; }
        fprintf(stderr, "anvil: serve: unknown argument '%s' (try 'anvil serve --help')\n", argv[i]);
        return 2;
    }
    /* Stop requests are taken by serve_signal_wait below: block them before any thread starts. */
    serve_signal_block();

    sched_config sc;
    size_t max_body;
    unsigned max_conn, max_per_ip, idle_timeout, http_threads, header_timeout, body_timeout;
    if (sched_config_from_env(&sc) || env_size("ANVIL_MAX_BODY", 8u << 20, &max_body) ||
        env_uint("ANVIL_MAX_CONNECTIONS", &max_conn) || env_uint("ANVIL_MAX_CONNECTIONS_PER_IP", &max_per_ip) ||
        env_uint("ANVIL_HTTP_TIMEOUT", &idle_timeout) || env_uint("ANVIL_HTTP_THREADS", &http_threads) ||
        env_uint("ANVIL_HTTP_HEADER_TIMEOUT", &header_timeout) || env_uint("ANVIL_HTTP_BODY_TIMEOUT", &body_timeout)) {
        fprintf(stderr, "anvil: %s\n", anv_last_error());
        return 1;
    }
    size_t max_upload, max_upload_total;
    unsigned clean_interval;
    if (env_size("ANVIL_MAX_UPLOAD", (size_t)64 << 30, &max_upload) ||
        env_size("ANVIL_MAX_UPLOAD_TOTAL", max_upload, &max_upload_total) || env_uint("ANVIL_CLEAN_INTERVAL", &clean_interval)) {
        fprintf(stderr, "anvil: %s\n", anv_last_error());
        return 1;
    }
    static server_app app; /* the handlers reach it through http_app() */
    memset(&app, 0, sizeof app);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    app.started_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    metrics_init(&app.metrics);
    app.image_limits = image_limits_default();
    uint64_t image_pixels = (uint64_t)app.image_limits.max_pixels;
    if (env_size("ANVIL_MAX_IMAGE_BYTES", app.image_limits.max_bytes, &app.image_limits.max_bytes) ||
        anv_setting_u64("ANVIL_MAX_IMAGE_PIXELS", 1, (uint64_t)1 << 40, &image_pixels) < 0) {
        fprintf(stderr, "anvil: %s\n", anv_last_error());
        return 1;
    }
    app.image_limits.max_pixels = (int64_t)image_pixels;
    if (replica_id_read(app.replica, sizeof app.replica)) { fprintf(stderr, "anvil: %s\n", anv_last_error()); return 1; }
    app.store = store_open();
    if (!app.store) { fprintf(stderr, "anvil: %s\n", anv_last_error()); return 1; }
    /* like Ollama's start-up prune (ANVIL_NOPRUNE/OLLAMA_NOPRUNE skip it), and what a killed
     * upload, pull or create left behind */
    int cleaned = store_startup_clean(app.store);
    if (cleaned > 0)
        fprintf(stderr, "anvil: removed %d unused blob(s) and stale temporary file(s) from %s\n", cleaned,
                store_root(app.store));
    anv_env_warn_ollama(stderr);   /* OLLAMA_* settings that do nothing here: one line each */
    if (sc.test_replay)
        fprintf(stderr, "anvil: warning: ANVIL_TEST_REPLAY is set: every reply replays a fixed text (a test hook)\n");
    app.sched = sched_new(&sc, app.store);
    if (!app.sched) {
        fprintf(stderr, "anvil: %s\n", anv_last_error());
        store_close(app.store);
        return 1;
    }
    http_config hc = {
        .host = host, .max_body = max_body, .origins = anv_setting_value("ANVIL_ORIGINS", NULL),
        .api_key = anv_setting_raw("ANVIL_API_KEY"), .spool_dir = store_root(app.store),
        .metrics_auth = anv_setting_raw("ANVIL_METRICS_AUTH") && !strcmp(anv_setting_raw("ANVIL_METRICS_AUTH"), "1"),
        .on_done = metrics_observe,
        .max_connections = max_conn, .max_per_ip = max_per_ip, .idle_timeout = idle_timeout,
        .threads = http_threads, .header_timeout = header_timeout, .body_timeout = body_timeout,
    };
    hc.max_upload = max_upload;
    hc.max_upload_total = max_upload_total;
    http_server *srv = http_start(&hc, routes, (int)(sizeof routes / sizeof routes[0]), &app);
    if (!srv) {
        fprintf(stderr, "anvil: %s\n", anv_last_error());
        sched_free(app.sched);
        store_close(app.store);
        return 1;
    }
    if (!anv_setting_raw("ANVIL_CLEAN_INTERVAL")) clean_interval = 600;
    static sweeper sw = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    sw.st = app.store;
    sw.interval_s = clean_interval;
    bool sweeping = clean_interval > 0 && pthread_create(&sw.thread, NULL, sweep_loop, &sw) == 0;
    const char *fa_name, *fa = anv_setting_value("ANVIL_FLASH_ATTENTION", &fa_name);
    if (fa && *fa)
        fprintf(stderr, "anvil: %s=%s: accepted; Anvil always uses its fused attention kernel (no separate "
                "flash-attention switch)\n", fa_name, fa);
    fprintf(stderr, "anvil: kv cache type %s, %d parallel slot(s), up to %d model(s) loaded, keep-alive %lld ms, "
            "context length %d%s\n", qtype_get(sc.kv_type)->name, sc.num_parallel, sc.max_loaded,
            (long long)sc.keep_alive_ms, sc.context_length, sc.context_length ? "" : " (the model's)");
    fprintf(stderr, "anvil: listening on %s (version %s, models in %s, replica %s)\n", http_server_address(srv),
            ANVIL_VERSION, store_root(app.store), app.replica);
    if (!http_server_loopback(srv) && !(hc.api_key && *hc.api_key))
        fprintf(stderr, "anvil: warning: listening on %s without ANVIL_API_KEY: the API (model delete, create, pull) "
                "is open to the network\n", http_server_address(srv));
    fprintf(stderr, "anvil: %s: shutting down\n", serve_signal_wait());
    if (sweeping) {
        pthread_mutex_lock(&sw.mu);
        sw.stop = true;
        pthread_cond_signal(&sw.cv);
        pthread_mutex_unlock(&sw.mu);
        pthread_join(sw.thread, NULL);
    }
    http_stop(srv);
    sched_free(app.sched);
    store_close(app.store);
    fprintf(stderr, "anvil: stopped\n");
    return 0;
}
