/* api: the HTTP handlers of `anvil serve` and the state they share. The route table is
 * in serve.c. Ollama's API: api_ollama.c (generate, chat, embed), api_models.c (tags,
 * show, ps, pull, create, copy, delete, blobs, version); OpenAI's: api_openai.c (chat
 * completions, completions, models, embeddings) and api_responses.c (Responses);
 * Anthropic's Messages: api_anthropic.c; Prometheus /metrics: metrics.c. */
#ifndef ANVIL_API_H
#define ANVIL_API_H
#include <pthread.h>
#include <stdint.h>
#include "http.h"
#include "image.h"
#include "scheduler.h"
#include "store.h"

#define ANVIL_VERSION "0.2.0"

#define METRICS_LATENCY_BUCKETS 12
typedef struct {
    pthread_mutex_t lock;
    /* request latency histogram per route (cumulative buckets, Prometheus style) */
    struct route_stats {
        char route[48];
        char method[8];
        uint64_t count_by_status[6];   /* 1xx..5xx, index status/100 */
        uint64_t buckets[METRICS_LATENCY_BUCKETS];
        double sum_seconds;
        uint64_t count;
    } routes[48];
    int n_routes;
} server_metrics;

typedef struct {
    sched *sched;
    store *store;
    int64_t started_ms;
    server_metrics metrics;
    char replica[128];    /* replica.h: ANVIL_REPLICA_ID or the host name */
    image_limits image_limits;   /* a request's images (api_images.h): image_limits_default() */
} server_app;

/* serve.c: `anvil serve` (route table, configuration from the environment). */
int cmd_serve(int argc, char **argv);

/* api_ollama.c */
void api_root(http_req *r);          /* GET/HEAD /: "Ollama is running" */
void api_generate(http_req *r);      /* POST /api/generate */
void api_chat(http_req *r);          /* POST /api/chat */
void api_embed(http_req *r);         /* POST /api/embed */
void api_embeddings(http_req *r);    /* POST /api/embeddings (legacy, one prompt) */

/* api_models.c */
void api_version(http_req *r);       /* GET /api/version */
void api_tags(http_req *r);          /* GET /api/tags */
void api_show(http_req *r);          /* POST /api/show */
void api_ps(http_req *r);            /* GET /api/ps */
void api_pull(http_req *r);          /* POST /api/pull */
void api_create(http_req *r);        /* POST /api/create */
void api_copy(http_req *r);          /* POST /api/copy */
void api_delete(http_req *r);        /* DELETE /api/delete */
void api_blob(http_req *r);          /* HEAD/POST /api/blobs/:digest */

/* api_openai.c */
void oai_chat_completions(http_req *r);  /* POST /v1/chat/completions */
void oai_completions(http_req *r);       /* POST /v1/completions */
void oai_models(http_req *r);            /* GET /v1/models and /v1/models/:id */
void oai_embeddings(http_req *r);        /* POST /v1/embeddings */

/* api_responses.c */
void oai_responses(http_req *r);         /* POST /v1/responses */

/* api_anthropic.c */
void anthropic_messages(http_req *r);     /* POST /v1/messages */
void anthropic_count_tokens(http_req *r); /* POST /v1/messages/count_tokens */

/* metrics.c */
void api_metrics(http_req *r);       /* GET /metrics (Prometheus text format) */
void metrics_init(server_metrics *m);
void metrics_observe(void *app, const char *method, const char *route, int status, double seconds);
#endif
