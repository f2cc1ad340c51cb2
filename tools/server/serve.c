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
#include "envvar.h"
#include "error.h"
#include "quant.h"
#include "replica.h"
#include "serve_signal.h"

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

static const struct { const char *name, *def, *what; } env_vars[] = {
    {"ANVIL_HOST", "127.0.0.1:11434", "address to listen on (host:port; port 0 picks a free one)"},
    {"ANVIL_ORIGINS", "(none)", "extra allowed CORS origins, comma separated, '*' wildcards"},
    {"ANVIL_API_KEY", "(none)", "require 'Authorization: Bearer <key>' (or 'x-api-key: <key>') on every route but GET /, "
     "/api/version (probes) and /metrics"},
    {"ANVIL_METRICS_AUTH", "0", "1: /metrics needs the API key too"},
    {"ANVIL_MAX_BODY", "8388608", "largest request body in bytes (blob uploads exempt); larger: 413"},
    {"ANVIL_MAX_UPLOAD", "68719476736", "largest blob upload (POST /api/blobs) in bytes; larger: 413"},
    {"ANVIL_MAX_UPLOAD_TOTAL", "ANVIL_MAX_UPLOAD", "bytes all blob uploads in progress may hold together; more, or more "
     "than the store's free disk space less 1 GiB: 507"},
    {"ANVIL_NOPRUNE", "(unset)", "1: no pruning of unused blobs at start-up (stale temporary files still go)"},
    {"ANVIL_MAX_EMBED_INPUTS", "100000", "inputs one embedding request may hold; more: 400"},
    {"ANVIL_CLEAN_INTERVAL", "600", "seconds between sweeps of stale temporary files (a killed create, pull or "
     "upload's; 0: only at start-up)"},
#ifdef _WIN32
    {"ANVIL_MODELS", "%USERPROFILE%\\.anvil\\models", "the writable model store"},
    {"OLLAMA_MODELS", "%USERPROFILE%\\.ollama\\models", "Ollama's store, listed and run read-only when present"},
#else
    {"ANVIL_MODELS", "~/.anvil/models", "the writable model store"},
    {"OLLAMA_MODELS", "~/.ollama/models", "Ollama's store, listed and run read-only when present"},
#endif
    {"ANVIL_KEEP_ALIVE", "5m", "how long an idle model stays loaded (0 unloads at once, -1 forever)"},
    {"ANVIL_MAX_LOADED_MODELS", "3", "models kept loaded at once"},
    {"ANVIL_NUM_PARALLEL", "2", "parallel requests per model (each with its own KV cache)"},
    {"ANVIL_MAX_QUEUE", "512", "requests waiting for a slot before 503 'server busy'"},
    {"ANVIL_CONTEXT_LENGTH", "0", "context length per slot (0 = the model's default)"},
    {"ANVIL_KV_CACHE_TYPE", "f16", "KV cache type: f16, q8_0, q4_0 or f32"},
    {"ANVIL_FLASH_ATTENTION", "(always)", "accepted; Anvil's attention is always the fused kernel"},
    {"ANVIL_NUM_THREADS", "0", "CPU threads (0 = all cores)"},
    {"ANVIL_BACKEND", "(auto)", "force a backend: vulkan, hip or cpu"},
    {"ANVIL_DEVICE", "(auto)", "force a device: vulkan0, hip0, cpu ..."},
    {"ANVIL_VK_VISIBLE_DEVICES", "(all)", "Vulkan device indices to use (wins over GGML_VK_VISIBLE_DEVICES)"},
    {"ANVIL_IGPU", "(auto)", "1 uses integrated GPUs, 0 never"},
    {"ANVIL_GPU_OVERHEAD", "268435456", "bytes kept free on each GPU when placing layers"},
    {"ANVIL_VK_DISABLE", "(none)", "Vulkan paths to turn off: fp16,subgroup,int8,sgsize,fuse,splitk,wide,onetile or all"},
    {"ANVIL_VK_NO_PIPELINE_CACHE", "0", "1 disables the on-disk Vulkan pipeline cache"},
    {"ANVIL_VK_MAX_ALLOCATION", "(device)", "largest single Vulkan allocation in bytes"},
    {"ANVIL_VK_MV_ROWS", "(auto)", "rows per workgroup of the Vulkan mat-vec kernels (1-8)"},
#ifdef _WIN32
    {"ANVIL_VK_LOADER", "vulkan-1.dll", "the Vulkan loader library to open"},
#else
    {"ANVIL_VK_LOADER", "libvulkan.so.1", "the Vulkan loader library to open"},
#endif
    {"ANVIL_VK_PROFILE", "0", "1 logs per-kernel GPU timings"},
    {"ANVIL_VK_VALIDATE", "0", "1 enables the Vulkan validation layer"},
    {"ANVIL_CPU_SIMD", "(auto)", "CPU kernels: scalar, avx2 or avx512"},
    {"ANVIL_REGISTRY_INSECURE", "0", "1 pulls over plain http"},
    {"ANVIL_HF_ENDPOINT", "https://hf.co", "registry for hf.co/<user>/<repo> names"},
    {"ANVIL_PULL_PART_SIZE", "(100 MB-1 GB)", "size of the parallel parts of a pull"},
    {"ANVIL_PULL_RETRY_BASE_MS", "(built-in)", "first retry delay of a failed pull part"},
    {"ANVIL_NOPRUNE", "(unset)", "set: a pull that replaces a model keeps its old blobs"},
    {"ANVIL_PULL_STALL_S", "30", "a pull part that receives nothing this long is retried"},
    {"ANVIL_DEBUG", "(unset)", "1 logs libmicrohttpd's messages"},
    {"ANVIL_MAX_CONNECTIONS", "2048", "open client connections in all (more wait in the backlog)"},
    {"ANVIL_MAX_CONNECTIONS_PER_IP", "(none or 128)", "connections per client IP: no cap on loopback, else 128"},
    {"ANVIL_HTTP_TIMEOUT", "30", "seconds an idle or half-sent request may stay open"},
    {"ANVIL_HTTP_HEADER_TIMEOUT", "10", "seconds a client has to send whole request headers"},
    {"ANVIL_HTTP_BODY_TIMEOUT", "60", "seconds a client has to send a whole request body (uploads: 64 KiB/s)"},
    {"ANVIL_HTTP_THREADS", "4", "event-loop threads (handlers run on threads of their own)"},
    {"ANVIL_REPLICA_ID", "(host name)", "this replica's name in /api/ps and /metrics (several behind a router)"},
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
    for (size_t i = 0; i < sizeof env_vars / sizeof env_vars[0]; i++)
        fprintf(out, "  %-27s %-18s %s\n", env_vars[i].name, env_vars[i].def, env_vars[i].what);
}

static int env_uint(const char *name, unsigned *out) {
    const char *v = getenv(name);
    *out = 0;
    if (!v || !*v) return 0;
    char *end;
    errno = 0;
    unsigned long n = strtoul(v, &end, 10);
    if (errno || *end || v[0] == '-' || n > 1000000) {
        anv_set_error("%s='%s' is not a number (0 to 1000000)", name, v);
        return -1;
    }
    *out = (unsigned)n;
    return 0;
}

static int env_size(const char *name, size_t def, size_t *out) {
    const char *v = getenv(name);
    *out = def;
    if (!v || !*v) return 0;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || *end || n == 0 || v[0] == '-') {
        anv_set_error("%s='%s' is not a positive number of bytes", name, v);
        return -1;
    }
    *out = (size_t)n;
    return 0;
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
    const char *host = anv_getenv("ANVIL_HOST", NULL);
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
        .host = host, .max_body = max_body, .origins = anv_getenv("ANVIL_ORIGINS", NULL),
        .api_key = getenv("ANVIL_API_KEY"), .spool_dir = store_root(app.store),
        .metrics_auth = getenv("ANVIL_METRICS_AUTH") && !strcmp(getenv("ANVIL_METRICS_AUTH"), "1"),
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
    if (!getenv("ANVIL_CLEAN_INTERVAL")) clean_interval = 600;
    static sweeper sw = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    sw.st = app.store;
    sw.interval_s = clean_interval;
    bool sweeping = clean_interval > 0 && pthread_create(&sw.thread, NULL, sweep_loop, &sw) == 0;
    const char *fa_name, *fa = anv_getenv("ANVIL_FLASH_ATTENTION", &fa_name);
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
