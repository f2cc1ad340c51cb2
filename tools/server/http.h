/* http: the HTTP layer of `anvil serve` on libmicrohttpd. Owns the listening socket,
 * routing, body limits, CORS (ANVIL_ORIGINS), API-key auth (ANVIL_API_KEY: a bearer token
 * or Anthropic's x-api-key header),
 * the Host check against DNS rebinding (a loopback listener answers 403 to a Host that
 * is not localhost, *.localhost, a loopback IP or this machine's hostname), connection
 * bounds and idle timeouts, request logs and latency accounting. Every handler runs on
 * a thread of its own and may block; it answers with exactly one of http_reply_* or a
 * stream. */
#ifndef ANVIL_HTTP_H
#define ANVIL_HTTP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct http_req http_req;

const char *http_method(const http_req *r);           /* "GET", "POST", ... */
const char *http_path(const http_req *r);             /* without the query string */
const char *http_body(const http_req *r, size_t *len); /* NUL-terminated copy of the body */
/* Routes with HTTP_ROUTE_SPOOL_BODY: the body went to this temporary file instead of
 * memory (http_body is then ""); exempt from max_body. The handler may rename() it away
 * (into the blob store, same filesystem as http_config.spool_dir); whatever is left is
 * deleted after the request. NULL for other routes. */
const char *http_body_path(const http_req *r);
const char *http_header(const http_req *r, const char *name);   /* NULL if absent */
const char *http_query(const http_req *r, const char *key);     /* NULL if absent */
/* The part of the path after a route's prefix (e.g. "sha256:..." for /api/blobs/). */
const char *http_path_param(const http_req *r);
/* Opaque server-wide state the handlers share (the scheduler, the store). */
void *http_app(const http_req *r);
/* False once the client has gone or the server is stopping: long handlers (generation
 * that is not streamed) poll it and cancel. */
bool http_client_alive(const http_req *r);
/* Names the model in this request's log line (copied). */
void http_set_model(http_req *r, const char *model);

/* Whole responses. body is copied. */
void http_reply(http_req *r, int status, const char *content_type, const char *body, size_t len);
void http_reply_json(http_req *r, int status, const char *json_text);
/* An error in the envelope of the path's API (api_error.h): Anthropic's on /v1/messages,
 * OpenAI's on other /v1/ paths, else Ollama's {"error":"..."}. The API handlers answer errors through api_json's aj_fail. */
void http_reply_error(http_req *r, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Streamed responses (chunked): NDJSON for Ollama, SSE for OpenAI. write returns false
 * once the client has gone (the handler should stop and clean up). */
void http_stream_begin(http_req *r, int status, const char *content_type);
bool http_stream_write(http_req *r, const char *data, size_t len);
void http_stream_end(http_req *r);

typedef void (*http_handler_fn)(http_req *r);
typedef struct {
    const char *method;     /* "GET", "POST", "DELETE", "HEAD"; HEAD is also served by GET routes */
    const char *path;       /* exact path, or a prefix when it ends with '/' (path param) */
    http_handler_fn fn;
    unsigned flags;         /* HTTP_ROUTE_*; 0 when left out */
} http_route;
#define HTTP_ROUTE_SPOOL_BODY 1u  /* body streamed to a temporary file (blob uploads) */

typedef struct {
    const char *host;       /* ANVIL_HOST, "127.0.0.1:11434" default; "0.0.0.0:11434" binds all */
    size_t max_body;        /* bytes, default 8 MiB (blob uploads stream to disk, exempt) */
    uint64_t max_upload;    /* largest blob upload in bytes (ANVIL_MAX_UPLOAD), default 64 GiB; larger: 413 */
    uint64_t max_upload_total; /* bytes all uploads in progress may hold together (ANVIL_MAX_UPLOAD_TOTAL),
                                * default max_upload; past it, or past the spool's free disk space
                                * less 1 GiB: 507 */
    const char *origins;    /* ANVIL_ORIGINS, comma separated, added to Ollama's defaults */
    const char *api_key;    /* ANVIL_API_KEY: require "Authorization: Bearer <key>" or "x-api-key: <key>" on
                               every route but GET / and GET /api/version (probes), and /metrics
                               unless metrics_auth (Prometheus scrapes) */
    bool metrics_auth;      /* ANVIL_METRICS_AUTH=1: /metrics needs the key too */
    const char *spool_dir;  /* where HTTP_ROUTE_SPOOL_BODY bodies go (created); NULL = $TMPDIR or /tmp */
    /* Connection bounds (0: the default). A connection holds no thread until its request
     * is complete; its handler then runs on a thread of its own. */
    unsigned max_connections; /* ANVIL_MAX_CONNECTIONS: open connections in all, default 2048
                               * (kept under the descriptor limit, which is raised to fit) */
    unsigned max_per_ip;      /* ANVIL_MAX_CONNECTIONS_PER_IP: default 0 = no per-IP cap on a
                               * loopback listener, 128 on any other */
    unsigned idle_timeout;    /* ANVIL_HTTP_TIMEOUT: seconds without traffic before an idle or
                               * half-sent request is closed, default 30 (a reply being computed
                               * or streamed is exempt while the connection waits on it) */
    unsigned header_timeout;  /* ANVIL_HTTP_HEADER_TIMEOUT: seconds from a connection (or the end of
                               * its previous request plus idle_timeout) to whole request headers,
                               * default 10, however steadily they trickle in */
    unsigned body_timeout;    /* ANVIL_HTTP_BODY_TIMEOUT: seconds from the headers to a whole body,
                               * default 60 (an upload instead: HTTP_MIN_UPLOAD_RATE on average
                               * once it has run that long) */
    unsigned threads;         /* ANVIL_HTTP_THREADS: event-loop threads, default 4 */
    /* Called after every request (metrics): route path as matched, status, seconds. */
    void (*on_done)(void *app, const char *method, const char *route, int status, double seconds);
} http_config;

#define HTTP_DEFAULT_MAX_CONNECTIONS 2048u
#define HTTP_DEFAULT_MAX_PER_IP 128u
#define HTTP_DEFAULT_IDLE_TIMEOUT 30u
#define HTTP_DEFAULT_THREADS 4u
#define HTTP_DEFAULT_HEADER_TIMEOUT 10u
#define HTTP_DEFAULT_BODY_TIMEOUT 60u
#define HTTP_MIN_UPLOAD_RATE (64.0 * 1024)   /* bytes per second */

typedef struct http_server http_server;
http_server *http_start(const http_config *c, const http_route *routes, int n_routes, void *app);
/* The address it listens on, with the real port ("127.0.0.1:41234" for port 0). */
const char *http_server_address(const http_server *s);
/* True when it listens on a loopback address only (the Host check is on). */
bool http_server_loopback(const http_server *s);
/* Stops accepting, makes every running handler see its client gone, waits for them,
 * closes every connection and frees everything. */
void http_stop(http_server *s);
#endif
