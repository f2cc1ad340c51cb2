/* http: the HTTP layer of `anvil serve` on libmicrohttpd. Owns the listening socket,
 * routing, body limits, CORS (ANVIL_ORIGINS), bearer-token auth (ANVIL_API_KEY),
 * request logs and latency accounting. Every handler runs on a thread of its own and
 * may block; it answers with exactly one of http_reply_* or a stream. */
#ifndef ANVIL_HTTP_H
#define ANVIL_HTTP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct http_req http_req;

const char *http_method(const http_req *r);           /* "GET", "POST", ... */
const char *http_path(const http_req *r);             /* without the query string */
const char *http_body(const http_req *r, size_t *len); /* NUL-terminated copy of the body */
const char *http_header(const http_req *r, const char *name);   /* NULL if absent */
const char *http_query(const http_req *r, const char *key);     /* NULL if absent */
/* The part of the path after a route's prefix (e.g. "sha256:..." for /api/blobs/). */
const char *http_path_param(const http_req *r);
/* Opaque server-wide state the handlers share (the scheduler, the store). */
void *http_app(const http_req *r);

/* Whole responses. body is copied. */
void http_reply(http_req *r, int status, const char *content_type, const char *body, size_t len);
void http_reply_json(http_req *r, int status, const char *json_text);
/* {"error":"..."} like Ollama (the OpenAI layer uses its own error shape via http_reply_json). */
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
} http_route;

typedef struct {
    const char *host;       /* ANVIL_HOST, "127.0.0.1:11434" default; "0.0.0.0:11434" binds all */
    size_t max_body;        /* bytes, default 8 MiB (blob uploads stream to disk, exempt) */
    const char *origins;    /* ANVIL_ORIGINS, comma separated, added to Ollama's defaults */
    const char *api_key;    /* ANVIL_API_KEY: require "Authorization: Bearer <key>" */
    /* Called after every request (metrics): route path as matched, status, seconds. */
    void (*on_done)(void *app, const char *method, const char *route, int status, double seconds);
} http_config;

typedef struct http_server http_server;
http_server *http_start(const http_config *c, const http_route *routes, int n_routes, void *app);
void http_stop(http_server *s);
#endif
