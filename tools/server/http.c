/* http: the HTTP layer of `anvil serve` (implements http.h) on libmicrohttpd with a
 * small pool of event-loop threads (epoll/poll): a connection costs a socket and a
 * little memory, never a thread, until its request is complete. Then the request's
 * handler runs on a thread of its own while the connection is suspended out of the
 * event loop (MHD_suspend_connection); the handler's answer resumes it: a whole reply,
 * or a stream fed through a bounded queue (back-pressure) that MHD drains with a
 * content-reader callback, which suspends the connection again while the queue is
 * empty. So threads are bounded by the pool plus one per complete request, and
 * connections by max_connections / max_per_ip; an idle or half-sent request is closed
 * after idle_timeout seconds without traffic (a suspended connection, waiting on its
 * handler, is exempt). A watcher thread bounds the rest: request headers must be whole
 * within header_timeout of the connection (or of the previous request's end, plus the
 * idle timeout), a body within body_timeout of its headers (an upload, from then on,
 * HTTP_MIN_UPLOAD_RATE on average), so a client trickling one byte per idle period holds
 * nothing for long; and it polls the socket of every suspended connection, so a request
 * waiting in a queue notices its client gone without its handler asking
 * (http_stream_write / http_client_alive poll too). Also owns: body size limits (413 before
 * reading an oversized body), the Host check against DNS rebinding on a loopback
 * listener, CORS with Ollama's default origins, bearer-token auth, one structured log
 * line per request, and graceful stop. */
#include "http.h"

#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#ifndef _WIN32
#include <sys/statvfs.h>
#endif
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "api_error.h"
#include "bytebuf.h"
#include "clock.h"
#include "error.h"
#include "settings.h"

#define STREAM_QUEUE_CAP (1u << 20)     /* bytes buffered per stream before writers block */
#define STREAM_STALL_SECONDS 10         /* a client that reads nothing this long is gone */
#define WATCH_INTERVAL_MS 100           /* how often a waiting connection checks its socket */
#define STREAM_BLOCK_SIZE (32 * 1024)
#define STOP_DRAIN_SECONDS 10           /* how long a stop waits for running answers to end */

typedef struct { char *key, *value; } http_kv;

/* Where a connection is in its current request (the watcher's deadlines). */
enum { CONN_HEADERS, CONN_BODY, CONN_UPLOAD, CONN_ANSWER };

/* One open connection (MHD's socket context), from accept to close; srv->lock guards it. */
typedef struct http_conn {
    int fd;
    int phase;
    double phase_t0;           /* anv_mono_s() when the phase began */
    double deadline;           /* CONN_HEADERS / CONN_BODY: closed past it */
    uint64_t uploaded;         /* CONN_UPLOAD: bytes so far */
    bool shut;                 /* the watcher has shut it down (MHD closes it) */
    struct http_conn *next, *prev;
} http_conn;

struct http_server {
    struct MHD_Daemon *daemon;
    http_config cfg;
    char *host, *api_key, *spool_dir;
    char **origins;          /* patterns with '*' wildcards */
    int n_origins;
    http_route *routes;
    int n_routes;
    void *app;
    atomic_bool stopping;
    pthread_mutex_t lock;
    pthread_cond_t idle;
    int n_answering;         /* requests whose handler started and that have not completed */
    int n_handlers;          /* handler threads still running (http_stop waits for 0) */
    bool loopback;           /* listening on a loopback address: the Host check is on */
    char hostname[256];      /* this machine's name (also a loopback-safe Host) */
    http_req *live;          /* every request not yet freed (http_stop resumes them) */
    http_conn *conns;        /* every open connection (the watcher's deadlines) */
    pthread_t watcher;
    bool watcher_running;
    pthread_cond_t watcher_cv;
    uint64_t n_slow_closed;  /* connections the watcher cut (logged, rate-limited) */
    uint64_t uploads_held;   /* bytes reserved by uploads in progress (cfg.max_upload_total) */
    double slow_logged_at;
};

enum { REQ_PENDING, REQ_REPLIED, REQ_STREAMING };

struct http_req {
    http_server *srv;
    struct MHD_Connection *conn;
    http_conn *hc;                 /* its connection's watcher record */
    int fd;                        /* the client socket (watched, never read) */
    char method[16];
    char *path;
    const http_route *route;
    const char *path_param;
    http_kv *headers, *args;
    int n_headers, n_args;
    const char *bad_header;        /* a header RFC 9112 makes a 400: a NUL in it, a second Host */
    char *cors_origin;             /* echoed in Access-Control-Allow-Origin */
    struct timespec t0;
    char model[160];

    /* body */
    bytebuf body;
    bool body_too_large;
    int spool_fd;
    char *spool_path;
    bool spool_failed;
    uint64_t spooled;       /* bytes written to the spool so far */
    uint64_t upload_held;   /* its share of srv->uploads_held: max(Content-Length, spooled) */
    bool upload_too_large;  /* past max_upload: the rest is discarded */

    /* answer */
    pthread_mutex_t lock;
    pthread_cond_t cv;
    int state;
    int status;
    int sent_status;               /* what MHD was given (logged; 499: client gone first) */
    char content_type[64];
    char *reply;
    size_t reply_len;
    char *queue;                   /* stream bytes not yet taken by MHD */
    size_t q_len, q_off, q_cap;
    bool stream_ended;
    bool gone;
    bool handler_started, handler_done;
    bool suspended;                /* the connection is out of MHD's event loop (ours to resume) */
    bool conn_done;                /* MHD completed the request: conn and fd are no longer ours */
    int refs;                      /* MHD's + the handler's; the last one logs and frees */
    double secs;                   /* request to completion (logged) */
    bool aborted;
    http_req *next, *prev;         /* srv->live */
};

/* ---- small helpers ---- */

static double elapsed_s(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) * 1e-9;
}

static char *dup_str(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d) memcpy(d, s, n + 1);
    return d;
}

static void deadline_in_ms(struct timespec *ts, int ms) {
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_nsec += (long)ms * 1000000L;
    while (ts->tv_nsec >= 1000000000L) { ts->tv_sec++; ts->tv_nsec -= 1000000000L; }
}

/* True when the peer has closed its end (or the socket failed). */
static bool socket_hung_up(int fd) {
    if (fd < 0) return false;
    struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP};
    if (poll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLHUP | POLLERR | POLLNVAL | POLLRDHUP)) return true;
    if (p.revents & POLLIN) {
        char c;
        ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0) return true;
    }
    return false;
}

/* Puts a suspended connection back into MHD's loop (r->lock held): an answer, stream
 * bytes, the end or a gone client are there for it. */
static void wake_conn(http_req *r) {
    if (r->suspended && !r->conn_done) {
        r->suspended = false;
        MHD_resume_connection(r->conn);
    }
}

/* r->lock held: false once the client is known gone; polls the socket (MHD does not
 * watch a suspended connection). */
static bool check_alive_locked(http_req *r) {
    if (r->gone) return false;
    if (!r->conn_done && socket_hung_up(r->fd)) {
        r->gone = true;
        pthread_cond_broadcast(&r->cv);
        wake_conn(r);
    }
    return !r->gone;
}

/* The error body for a path's API (api_error.h): Anthropic's envelope on /v1/messages,
 * OpenAI's on other /v1/ paths, else Ollama's {"error":"..."}. malloc'd; NULL when out of
 * memory. */
__attribute__((format(printf, 3, 0)))
static char *error_json(const char *path, int status, const char *fmt, va_list ap) {
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    cJSON *o = api_error_for(api_family_of_path(path), status, NULL, msg);
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return s;
}

/* ---- request accessors ---- */

const char *http_method(const http_req *r) { return r->method; }
const char *http_path(const http_req *r) { return r->path; }
const char *http_path_param(const http_req *r) { return r->path_param ? r->path_param : ""; }
void *http_app(const http_req *r) { return r->srv->app; }
const char *http_body_path(const http_req *r) { return r->spool_path; }

const char *http_body(const http_req *r, size_t *len) {
    if (len) *len = r->body.len;
    return bytebuf_str(&r->body);
}

static const char *kv_find(const http_kv *kv, int n, const char *key, bool nocase) {
    for (int i = 0; i < n; i++)
        if (nocase ? !strcasecmp(kv[i].key, key) : !strcmp(kv[i].key, key)) return kv[i].value;
    return NULL;
}
const char *http_header(const http_req *r, const char *name) { return kv_find(r->headers, r->n_headers, name, true); }
const char *http_query(const http_req *r, const char *key) { return kv_find(r->args, r->n_args, key, false); }

bool http_client_alive(const http_req *r) {
    http_req *m = (http_req *)r;
    pthread_mutex_lock(&m->lock);
    bool alive = check_alive_locked(m);
    pthread_mutex_unlock(&m->lock);
    return alive && !atomic_load(&r->srv->stopping);
}

void http_set_model(http_req *r, const char *model) {
    pthread_mutex_lock(&r->lock);
    snprintf(r->model, sizeof r->model, "%s", model ? model : "");
    pthread_mutex_unlock(&r->lock);
}

/* ---- answers (called from the handler's thread or a thread it waits on) ---- */

void http_reply(http_req *r, int status, const char *content_type, const char *body, size_t len) {
    pthread_mutex_lock(&r->lock);
    if (r->state == REQ_PENDING) {
        r->reply = malloc(len + 1);
        if (r->reply) {
            if (len) memcpy(r->reply, body, len);
            r->reply[len] = 0;
            r->reply_len = len;
            r->status = status;
        } else {
            r->status = 500;
        }
        snprintf(r->content_type, sizeof r->content_type, "%s", content_type ? content_type : "text/plain");
        r->state = REQ_REPLIED;
        pthread_cond_broadcast(&r->cv);
        wake_conn(r);
    }
    pthread_mutex_unlock(&r->lock);
}

void http_reply_json(http_req *r, int status, const char *json_text) {
    http_reply(r, status, "application/json; charset=utf-8", json_text, strlen(json_text));
}

void http_reply_error(http_req *r, int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *j = error_json(r->path, status, fmt, ap);
    va_end(ap);
    http_reply_json(r, status, j ? j : "{\"error\":\"out of memory\"}");
    free(j);
}

void http_stream_begin(http_req *r, int status, const char *content_type) {
    pthread_mutex_lock(&r->lock);
    if (r->state == REQ_PENDING) {
        r->status = status;
        snprintf(r->content_type, sizeof r->content_type, "%s", content_type);
        r->state = REQ_STREAMING;
        pthread_cond_broadcast(&r->cv);
        wake_conn(r);
    }
    pthread_mutex_unlock(&r->lock);
}

bool http_stream_write(http_req *r, const char *data, size_t len) {
    pthread_mutex_lock(&r->lock);
    bool ok = r->state == REQ_STREAMING && !r->stream_ended && check_alive_locked(r);
    int waited_ms = 0;
    while (ok && !r->gone && r->q_len - r->q_off > 0 &&
           r->q_len - r->q_off + len > STREAM_QUEUE_CAP) {
        if (waited_ms >= STREAM_STALL_SECONDS * 1000) { r->gone = true; wake_conn(r); break; } /* reads nothing */
        wake_conn(r);
        struct timespec ts;
        deadline_in_ms(&ts, WATCH_INTERVAL_MS);
        pthread_cond_timedwait(&r->cv, &r->lock, &ts);
        waited_ms += WATCH_INTERVAL_MS;
    }
    ok = ok && !r->gone;
    if (ok && len) {
        if (r->q_off && r->q_off == r->q_len) r->q_off = r->q_len = 0;
        if (r->q_len + len > r->q_cap) {
            if (r->q_off) { /* compact first */
                memmove(r->queue, r->queue + r->q_off, r->q_len - r->q_off);
                r->q_len -= r->q_off;
                r->q_off = 0;
            }
            size_t cap = r->q_cap ? r->q_cap : 4096;
            while (cap < r->q_len + len) cap *= 2;
            char *q = realloc(r->queue, cap);
            if (!q) { ok = false; goto out; }
            r->queue = q;
            r->q_cap = cap;
        }
        memcpy(r->queue + r->q_len, data, len);
        r->q_len += len;
        pthread_cond_broadcast(&r->cv);
        wake_conn(r);
    }
out:
    pthread_mutex_unlock(&r->lock);
    return ok;
}

void http_stream_end(http_req *r) {
    pthread_mutex_lock(&r->lock);
    r->stream_ended = true;
    pthread_cond_broadcast(&r->cv);
    wake_conn(r);
    pthread_mutex_unlock(&r->lock);
}

/* ---- CORS ---- */

/* Glob match where '*' matches any run of characters (gin-contrib/cors wildcards). */
static bool glob_match(const char *p, const char *s) {
    if (!*p) return !*s;
    if (*p == '*') {
        for (;; s++) {
            if (glob_match(p + 1, s)) return true;
            if (!*s) return false;
        }
    }
    return *s && (*p == *s || (*p >= 'A' && *p <= 'Z' && *p + 32 == *s) ||
                  (*s >= 'A' && *s <= 'Z' && *s + 32 == *p)) && glob_match(p + 1, s + 1);
}

static int add_origin(http_server *s, const char *pattern, size_t n) {
    while (n && (*pattern == ' ' || *pattern == '\t')) { pattern++; n--; }
    while (n && (pattern[n - 1] == ' ' || pattern[n - 1] == '\t')) n--;
    if (!n) return 0;
    char **o = realloc(s->origins, (size_t)(s->n_origins + 1) * sizeof *o);
    if (!o) return -1;
    s->origins = o;
    if (!(o[s->n_origins] = strndup(pattern, n))) return -1;
    s->n_origins++;
    return 0;
}

/* Ollama's defaults (envconfig.AllowedOrigins) after the configured ones. */
static int setup_origins(http_server *s, const char *extra) {
    for (const char *p = extra; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (add_origin(s, p, n)) return -1;
        p += n + (comma ? 1 : 0);
    }
    static const char *const hosts[] = {"localhost", "127.0.0.1", "0.0.0.0"};
    for (int i = 0; i < 3; i++) {
        char buf[64];
        const char *fmts[] = {"http://%s", "https://%s", "http://%s:*", "https://%s:*"};
        for (int k = 0; k < 4; k++) {
            snprintf(buf, sizeof buf, fmts[k], hosts[i]);
            if (add_origin(s, buf, strlen(buf))) return -1;
        }
    }
    static const char *const schemes[] = {"app://*", "file://*", "tauri://*", "vscode-webview://*", "vscode-file://*"};
    for (int i = 0; i < 5; i++)
        if (add_origin(s, schemes[i], strlen(schemes[i]))) return -1;
    return 0;
}

static bool origin_allowed(const http_server *s, const char *origin, const char *host_header) {
    if (host_header) { /* same origin */
        const char *rest = !strncasecmp(origin, "http://", 7) ? origin + 7
                         : !strncasecmp(origin, "https://", 8) ? origin + 8 : NULL;
        if (rest && !strcasecmp(rest, host_header)) return true;
    }
    for (int i = 0; i < s->n_origins; i++)
        if (glob_match(s->origins[i], origin)) return true;
    return false;
}

/* ---- responses through MHD (connection thread) ---- */

static void add_common_headers(http_req *r, struct MHD_Response *resp) {
    if (r->cors_origin) {
        MHD_add_response_header(resp, "Access-Control-Allow-Origin", r->cors_origin);
        MHD_add_response_header(resp, "Vary", "Origin");
    }
}

static enum MHD_Result queue_buffer(http_req *r, int status, const char *ctype, const char *body, size_t len) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!resp) return MHD_NO;
    if (ctype) MHD_add_response_header(resp, "Content-Type", ctype);
    add_common_headers(r, resp);
    if (status == 401) MHD_add_response_header(resp, "WWW-Authenticate", "Bearer");
    r->status = status;
    enum MHD_Result ret = MHD_queue_response(r->conn, (unsigned)status, resp);
    if (ret == MHD_YES) r->sent_status = status;
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result queue_error(http_req *r, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static enum MHD_Result queue_error(http_req *r, int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *j = error_json(r->path, status, fmt, ap);
    va_end(ap);
    enum MHD_Result ret = queue_buffer(r, status, "application/json; charset=utf-8", j ? j : "{}", j ? strlen(j) : 2);
    free(j);
    return ret;
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    http_req *r = cls;
    pthread_mutex_lock(&r->lock);
    ssize_t ret;
    if (r->q_len > r->q_off) {
        size_t n = r->q_len - r->q_off;
        if (n > max) n = max;
        memcpy(buf, r->queue + r->q_off, n);
        r->q_off += n;
        if (r->q_off == r->q_len) r->q_off = r->q_len = 0;
        pthread_cond_broadcast(&r->cv);
        ret = (ssize_t)n;
    } else if (r->stream_ended) {
        ret = MHD_CONTENT_READER_END_OF_STREAM;
    } else if (r->gone) {
        ret = MHD_CONTENT_READER_END_WITH_ERROR;
    } else { /* nothing yet: out of the event loop until the handler writes (wake_conn) */
        r->suspended = true;
        MHD_suspend_connection(r->conn);
        ret = 0;
    }
    pthread_mutex_unlock(&r->lock);
    return ret;
}

/* Hands the handler's answer to MHD (event-loop thread); while there is none yet, the
 * connection is suspended and the answer resumes it, which calls on_access again. */
static enum MHD_Result await_answer(http_req *r) {
    pthread_mutex_lock(&r->lock);
    if (r->state == REQ_PENDING && !r->gone) {
        r->suspended = true;
        MHD_suspend_connection(r->conn);
        pthread_mutex_unlock(&r->lock);
        return MHD_YES;
    }
    int state = r->state;
    bool gone = r->gone;
    pthread_mutex_unlock(&r->lock);
    if (state == REQ_PENDING && gone) return MHD_NO; /* close; the handler sees the client gone */
    if (state == REQ_REPLIED)
        return queue_buffer(r, r->status, r->content_type, r->reply ? r->reply : "", r->reply_len);
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, STREAM_BLOCK_SIZE,
                                                                  stream_reader, r, NULL);
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", r->content_type);
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    add_common_headers(r, resp);
    enum MHD_Result ret = MHD_queue_response(r->conn, (unsigned)r->status, resp);
    if (ret == MHD_YES) r->sent_status = r->status;
    MHD_destroy_response(resp);
    return ret;
}

static void req_unref(http_req *r);

static void *handler_main(void *arg) {
    http_req *r = arg;
    http_server *s = r->srv;
    r->route->fn(r);
    pthread_mutex_lock(&r->lock);
    if (r->state == REQ_PENDING) { /* a handler that forgot to answer: a bug, not a hang */
        pthread_mutex_unlock(&r->lock);
        http_reply_error(r, 500, "internal error: no response from the handler for %s", r->path);
        pthread_mutex_lock(&r->lock);
    }
    r->stream_ended = true;
    r->handler_done = true;
    pthread_cond_broadcast(&r->cv);
    wake_conn(r);
    pthread_mutex_unlock(&r->lock);
    req_unref(r);
    pthread_mutex_lock(&s->lock);
    s->n_handlers--;
    pthread_cond_broadcast(&s->idle);
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* ---- request lifetime ---- */

static enum MHD_Result collect_kv(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                                  const char *value, size_t value_size) {
    http_req *r = cls;
    bool header = kind == MHD_HEADER_KIND;
    if (header && !r->bad_header) {   /* a NUL would cut the value short where it is compared */
        if ((key && strlen(key) != key_size) || (value && strlen(value) != value_size)) r->bad_header = "a NUL byte";
        else if (key && !strcasecmp(key, "Host") && kv_find(r->headers, r->n_headers, "Host", true)) r->bad_header = "a second Host";
    }
    http_kv **arr = header ? &r->headers : &r->args;
    int *n = header ? &r->n_headers : &r->n_args;
    if (*n >= 256) return MHD_YES;
    http_kv *a = realloc(*arr, (size_t)(*n + 1) * sizeof **arr);
    if (!a) return MHD_NO;
    *arr = a;
    a[*n].key = dup_str(key ? key : "");
    a[*n].value = dup_str(value ? value : "");
    if (!a[*n].key || !a[*n].value) { free(a[*n].key); free(a[*n].value); return MHD_NO; }
    (*n)++;
    return MHD_YES;
}

static void req_free(http_req *r) {
    if (!r) return;
    http_server *s = r->srv;
    pthread_mutex_lock(&s->lock);
    if (r->prev) r->prev->next = r->next;
    else if (s->live == r) s->live = r->next;
    if (r->next) r->next->prev = r->prev;
    s->uploads_held -= r->upload_held;
    pthread_mutex_unlock(&s->lock);
    for (int i = 0; i < r->n_headers; i++) { free(r->headers[i].key); free(r->headers[i].value); }
    for (int i = 0; i < r->n_args; i++) { free(r->args[i].key); free(r->args[i].value); }
    free(r->headers);
    free(r->args);
    if (r->spool_fd >= 0) close(r->spool_fd);
    if (r->spool_path) { unlink(r->spool_path); free(r->spool_path); }
    free(r->path);
    free(r->cors_origin);
    bytebuf_free(&r->body);
    free(r->reply);
    free(r->queue);
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->cv);
    free(r);
}

static void log_escaped(FILE *f, const char *s) {
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == 0x7f || c == '"' || c == '\\') fprintf(f, "\\x%02x", c);
        else fputc(c, f);
    }
}

/* The request's log line and metrics, once both MHD and the handler are done with it
 * (so a cancelled generation has ended when its line appears), then frees it. */
static void req_finish(http_req *r) {
    http_server *s = r->srv;
    int status = r->sent_status ? r->sent_status : 499;
    if (r->path) {
        char ts[48];
        anv_rfc3339_utc(anv_wall_ns(), 3, ts);
        flockfile(stderr);
        fprintf(stderr, "time=%s method=%s path=\"", ts, r->method);
        log_escaped(stderr, r->path);
        fprintf(stderr, "\" status=%d duration_ms=%.3f", status, r->secs * 1e3);
        if (r->model[0]) {
            fputs(" model=\"", stderr);
            log_escaped(stderr, r->model);
            fputc('"', stderr);
        }
        if (r->aborted) fputs(" aborted=true", stderr);
        fputc('\n', stderr);
        funlockfile(stderr);
        if (s->cfg.on_done) s->cfg.on_done(s->app, r->method, r->route ? r->route->path : "(unmatched)", status, r->secs);
    }
    req_free(r);
}

/* Drops one reference (MHD's in on_completed, the handler's when it returns). */
static void req_unref(http_req *r) {
    pthread_mutex_lock(&r->lock);
    bool last = --r->refs == 0;
    pthread_mutex_unlock(&r->lock);
    if (last) req_finish(r);
}

/* ---- connection deadlines and the watcher ---- */

/* srv->lock held. */
static void conn_phase_locked(http_server *s, http_conn *hc, int phase, double extra_s) {
    double now = anv_mono_s();
    hc->phase = phase;
    hc->phase_t0 = now;
    hc->deadline = phase == CONN_HEADERS ? now + extra_s + s->cfg.header_timeout
                 : phase == CONN_BODY ? now + s->cfg.body_timeout : 0;
}

static void conn_phase(http_server *s, http_conn *hc, int phase, double extra_s) {
    if (!hc) return;
    pthread_mutex_lock(&s->lock);
    conn_phase_locked(s, hc, phase, extra_s);
    pthread_mutex_unlock(&s->lock);
}

static http_conn *conn_of(struct MHD_Connection *conn) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* MHD's connection start and end (event-loop thread). MHD closes the socket only after
 * the CLOSED call returns, and that call waits for srv->lock, so the watcher (which
 * shuts sockets down under the lock) never touches a descriptor that was reused. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
    http_server *s = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        http_conn *hc = calloc(1, sizeof *hc);
        if (!hc) return; /* untracked: the idle timeout still bounds it */
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        hc->fd = ci ? (int)ci->connect_fd : -1;
        pthread_mutex_lock(&s->lock);
        conn_phase_locked(s, hc, CONN_HEADERS, 0);
        hc->next = s->conns;
        if (s->conns) s->conns->prev = hc;
        s->conns = hc;
        pthread_mutex_unlock(&s->lock);
        *socket_context = hc;
        return;
    }
    http_conn *hc = *socket_context;
    if (!hc) return;
    pthread_mutex_lock(&s->lock);
    if (hc->prev) hc->prev->next = hc->next;
    else if (s->conns == hc) s->conns = hc->next;
    if (hc->next) hc->next->prev = hc->prev;
    pthread_mutex_unlock(&s->lock);
    free(hc);
    *socket_context = NULL;
}

/* srv->lock held: true when the connection is past its phase's bound. */
static bool conn_overdue(const http_server *s, const http_conn *hc, double now) {
    if (hc->shut) return false;
    if (hc->phase == CONN_HEADERS || hc->phase == CONN_BODY) return now > hc->deadline;
    if (hc->phase == CONN_UPLOAD) { /* after body_timeout, at least HTTP_MIN_UPLOAD_RATE on average */
        double t = now - hc->phase_t0, grace = s->cfg.body_timeout;
        return t > grace && (double)hc->uploaded < HTTP_MIN_UPLOAD_RATE * (t - grace);
    }
    return false;
}

static void *watcher_main(void *arg) {
    http_server *s = arg;
    pthread_mutex_lock(&s->lock);
    while (s->watcher_running) {
        double now = anv_mono_s();
        uint64_t cut = 0;
        for (http_conn *hc = s->conns; hc; hc = hc->next)
            if (hc->fd >= 0 && conn_overdue(s, hc, now)) {
                shutdown(hc->fd, SHUT_RDWR); /* MHD sees the socket fail and closes it */
                hc->shut = true;
                cut++;
            }
        for (http_req *r = s->live; r; r = r->next) {
            pthread_mutex_lock(&r->lock);
            if (r->suspended && !r->handler_done) check_alive_locked(r);
            pthread_mutex_unlock(&r->lock);
        }
        s->n_slow_closed += cut;
        if (s->n_slow_closed && now - s->slow_logged_at >= 10) {
            anv_log("http: closed %llu connection(s) too slow to send a request (headers within %us, a body "
                    "within %us; ANVIL_HTTP_HEADER_TIMEOUT, ANVIL_HTTP_BODY_TIMEOUT)",
                    (unsigned long long)s->n_slow_closed, s->cfg.header_timeout, s->cfg.body_timeout);
            s->n_slow_closed = 0;
            s->slow_logged_at = now;
        }
        struct timespec ts;
        deadline_in_ms(&ts, WATCH_INTERVAL_MS * 2);
        pthread_cond_timedwait(&s->watcher_cv, &s->lock, &ts);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* ---- Host check (DNS rebinding) ---- */

static bool ip_is_loopback(const char *h) {
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, h, &a4) == 1) {
        uint32_t a = ntohl(a4.s_addr);
        return (a >> 24) == 127 || a == 0;  /* 127.0.0.0/8; 0.0.0.0 reaches this machine */
    }
    if (inet_pton(AF_INET6, h, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6) || IN6_IS_ADDR_UNSPECIFIED(&a6) ||
               (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
    return false;
}

/* A Host header a loopback listener accepts: absent or empty (HTTP/1.0), "localhost",
 * "*.localhost", this machine's hostname, or a loopback IP literal (127.0.0.0/8, ::1,
 * 0.0.0.0), each with or without ":port". Anything else is a name that resolved to
 * 127.0.0.1 for someone else's web page (DNS rebinding): 403. */
static bool host_allowed(const http_server *s, const char *host) {
    if (!host || !*host) return true;
    size_t n = strlen(host);
    if (n > 255) return false;
    char h[256];
    if (host[0] == '[') {
        const char *close = strchr(host, ']');
        if (!close || (close[1] && close[1] != ':')) return false;
        n = (size_t)(close - host - 1);
        memcpy(h, host + 1, n);
        h[n] = 0;
        return ip_is_loopback(h);
    }
    const char *colon = strchr(host, ':');
    if (colon) {
        if (strchr(colon + 1, ':')) return false;   /* an IPv6 literal needs brackets */
        for (const char *c = colon + 1; *c; c++) if (*c < '0' || *c > '9') return false;
        n = (size_t)(colon - host);
    }
    memcpy(h, host, n);
    h[n] = 0;
    if (n && h[n - 1] == '.') h[--n] = 0;   /* "localhost." */
    if (!n) return false;
    if (!strcasecmp(h, "localhost")) return true;
    if (n > 10 && !strcasecmp(h + n - 10, ".localhost")) return true;
    if (s->hostname[0] && !strcasecmp(h, s->hostname)) return true;
    return ip_is_loopback(h);
}

static const http_route *match_route(const http_server *s, const char *method, const char *path,
                                     bool *path_known) {
    *path_known = false;
    for (int i = 0; i < s->n_routes; i++) {
        const http_route *rt = &s->routes[i];
        size_t n = strlen(rt->path);
        bool prefix = n > 1 && rt->path[n - 1] == '/';
        bool hit = prefix ? !strncmp(path, rt->path, n) && path[n] : !strcmp(path, rt->path);
        if (!hit) continue;
        *path_known = true;
        if (!strcmp(method, rt->method) || (!strcmp(method, "HEAD") && !strcmp(rt->method, "GET"))) return rt;
    }
    return NULL;
}

static int mkdir_p(const char *dir) {
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf) return -1;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0755) && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(buf, 0755) && errno != EEXIST ? -1 : 0;
}

static int open_spool(http_req *r) {
    const char *dir = r->srv->spool_dir;
    if (!dir) dir = anv_setting_get("TMPDIR") ? anv_setting_get("TMPDIR") : "/tmp";
    if (mkdir_p(dir)) return -1;
    size_t n = strlen(dir) + 32;
    r->spool_path = malloc(n);
    if (!r->spool_path) return -1;
    snprintf(r->spool_path, n, "%s/.upload-XXXXXX", dir);
    r->spool_fd = mkstemp(r->spool_path);
    if (r->spool_fd < 0) { free(r->spool_path); r->spool_path = NULL; return -1; }
    flock(r->spool_fd, LOCK_EX);  /* a live upload: the store's clean-up of stale spools skips it */
    return 0;
}

/* Grows r's share of the bytes all uploads in progress hold to at least want; false (nothing
 * changed) when that would pass cfg.max_upload_total. */
static bool hold_upload(http_server *s, http_req *r, uint64_t want) {
    if (want <= r->upload_held) return true;
    pthread_mutex_lock(&s->lock);
    const bool ok = s->uploads_held - r->upload_held + want <= s->cfg.max_upload_total;
    if (ok) { s->uploads_held += want - r->upload_held; r->upload_held = want; }
    pthread_mutex_unlock(&s->lock);
    return ok;
}

/* Free bytes on the spool's file system, less 1 GiB kept for everything else (UINT64_MAX when
 * unknown). */
static uint64_t spool_free_bytes(const http_server *s) {
#ifdef _WIN32
    (void)s;
    return UINT64_MAX;
#else
    struct statvfs v;
    if (!s->spool_dir || statvfs(s->spool_dir, &v) != 0) return UINT64_MAX;
    const uint64_t avail = (uint64_t)v.f_bavail * v.f_frsize, keep = 1ull << 30;
    return avail > keep ? avail - keep : 0;
#endif
}

/* First call for a request: everything that can be decided from the headers alone. */
static enum MHD_Result on_headers(http_server *s, http_req *r) {
    MHD_get_connection_values_n(r->conn, MHD_HEADER_KIND, collect_kv, r);
    MHD_get_connection_values_n(r->conn, MHD_GET_ARGUMENT_KIND, collect_kv, r);
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    r->fd = ci ? (int)ci->connect_fd : -1;

    if (r->bad_header)   /* RFC 9112 3.2: more than one Host is a 400; a NUL in a field value too */
        return queue_error(r, 400, "bad request: the headers hold %s", r->bad_header);
    if (s->loopback && !host_allowed(s, http_header(r, "Host")))
        return queue_error(r, 403, "host '%.200s' is not allowed: this server listens on a loopback address "
                           "and answers only localhost, loopback IPs and its own hostname", http_header(r, "Host"));

    const char *origin = http_header(r, "Origin");
    if (origin && *origin) {
        if (!origin_allowed(s, origin, http_header(r, "Host")))
            return queue_error(r, 403, "origin '%.200s' is not allowed (set ANVIL_ORIGINS)", origin);
        r->cors_origin = dup_str(origin);
    }
    if (!strcmp(r->method, "OPTIONS")) {
        struct MHD_Response *resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        if (!resp) return MHD_NO;
        add_common_headers(r, resp);
        MHD_add_response_header(resp, "Allow", "GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS");
        if (r->cors_origin) {
            MHD_add_response_header(resp, "Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS");
            MHD_add_response_header(resp, "Access-Control-Allow-Headers",
                "Authorization, Content-Type, User-Agent, Accept, X-Requested-With, X-Api-Key, "
                "Anthropic-Version, Anthropic-Beta, Anthropic-Dangerous-Direct-Browser-Access, X-Stainless-Lang, "
                "X-Stainless-Package-Version, X-Stainless-OS, X-Stainless-Arch, X-Stainless-Retry-Count, "
                "X-Stainless-Runtime, X-Stainless-Runtime-Version, X-Stainless-Async, "
                "X-Stainless-Helper-Method, X-Stainless-Timeout");
            MHD_add_response_header(resp, "Access-Control-Max-Age", "43200");
        }
        r->status = r->sent_status = 204;
        enum MHD_Result ret = MHD_queue_response(r->conn, 204, resp);
        MHD_destroy_response(resp);
        return ret;
    }
    /* open with a key set: the health and readiness probes' routes, and /metrics for scrapers
     * (ANVIL_METRICS_AUTH=1 closes it) */
    const bool probe = (!strcmp(r->method, "GET") || !strcmp(r->method, "HEAD")) &&
                       (!strcmp(r->path, "/") || !strcmp(r->path, "/api/version") ||
                        (!strcmp(r->path, "/metrics") && !s->cfg.metrics_auth));
    if (s->api_key && !probe) {
        /* "Authorization: Bearer <key>" (Ollama, OpenAI) or "x-api-key: <key>" (Anthropic) */
        const char *auth = http_header(r, "Authorization");
        const char *tok = auth && !strncasecmp(auth, "Bearer ", 7) ? auth + 7 : http_header(r, "x-api-key");
        bool ok = false;
        if (tok) {
            while (*tok == ' ') tok++;
            size_t a = strlen(tok), b = strlen(s->api_key);
            unsigned diff = a != b;
            for (size_t i = 0; i < a && i < b; i++) diff |= (unsigned char)(tok[i] ^ s->api_key[i]);
            ok = !diff;
        }
        if (!ok) return queue_error(r, 401, "unauthorized: a valid 'Authorization: Bearer <key>' or 'x-api-key: <key>' header is required");
    }
    bool known;
    r->route = match_route(s, r->method, r->path, &known);
    if (!r->route) {
        if (known) return queue_error(r, 405, "method %s not allowed for %.200s", r->method, r->path);
        return queue_error(r, 404, "404 page not found: %.200s", r->path);
    }
    size_t rn = strlen(r->route->path);
    if (rn > 1 && r->route->path[rn - 1] == '/') r->path_param = r->path + rn;
    if (r->route->flags & HTTP_ROUTE_SPOOL_BODY) {
        const char *ucl = http_header(r, "Content-Length");
        unsigned long long un = ucl ? strtoull(ucl, NULL, 10) : 0;
        if (un > s->cfg.max_upload)
            return queue_error(r, 413, "upload too large: %llu bytes, the limit is %llu bytes (ANVIL_MAX_UPLOAD)", un,
                               (unsigned long long)s->cfg.max_upload);
        const uint64_t free_b = spool_free_bytes(s);
        if (un > free_b)
            return queue_error(r, 507, "not enough disk space for the upload: %llu bytes, %llu available (1 GiB is kept free)",
                               un, (unsigned long long)free_b);
        if (!hold_upload(s, r, un))
            return queue_error(r, 507, "too much uploading at once: %llu bytes are in progress, the limit is %llu bytes "
                               "(ANVIL_MAX_UPLOAD_TOTAL)", (unsigned long long)s->uploads_held,
                               (unsigned long long)s->cfg.max_upload_total);
        if (open_spool(r)) return queue_error(r, 500, "cannot create a temporary file for the upload: %s", strerror(errno));
        return MHD_YES;
    }
    const char *cl = http_header(r, "Content-Length");
    if (cl) {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(cl, &end, 10);
        if (errno || *end || n > s->cfg.max_body)
            return queue_error(r, 413, "request body too large: %s bytes, the limit is %zu bytes", cl, s->cfg.max_body);
    }
    return MHD_YES;
}

static void on_body(http_server *s, http_req *r, const char *data, size_t n) {
    if (r->spool_fd >= 0) {
        if (r->upload_too_large) return;
        if (r->spooled + n > s->cfg.max_upload || !hold_upload(s, r, r->spooled + n)) {  /* no Content-Length, or a lying one */
            r->upload_too_large = true;
            if (ftruncate(r->spool_fd, 0) != 0) r->spool_failed = true;
            return;
        }
        r->spooled += n;
        if (r->hc) {
            pthread_mutex_lock(&s->lock);
            r->hc->uploaded = r->spooled;
            pthread_mutex_unlock(&s->lock);
        }
        while (n && !r->spool_failed) {
            ssize_t w = write(r->spool_fd, data, n);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) { r->spool_failed = true; break; }
            data += w;
            n -= (size_t)w;
        }
        return;
    }
    if (r->body_too_large) return; /* discarded, never stored */
    if (r->body.len + n > s->cfg.max_body) {
        r->body_too_large = true;
        bytebuf_free(&r->body);
        return;
    }
    if (!bytebuf_add(&r->body, data, n)) r->body_too_large = true;
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                 const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    (void)version;
    http_server *s = cls;
    http_req *r = *con_cls;
    if (!r) {
        r = calloc(1, sizeof *r);
        if (!r) return MHD_NO;
        pthread_mutex_init(&r->lock, NULL);
        pthread_cond_init(&r->cv, NULL);
        clock_gettime(CLOCK_MONOTONIC, &r->t0);
        r->srv = s;
        r->conn = conn;
        r->spool_fd = -1;
        r->fd = -1;
        r->refs = 1;
        r->hc = conn_of(conn);
        pthread_mutex_lock(&s->lock);
        r->next = s->live;
        if (s->live) s->live->prev = r;
        s->live = r;
        pthread_mutex_unlock(&s->lock);
        snprintf(r->method, sizeof r->method, "%s", method);
        const char *q = strchr(url, '?');
        r->path = q ? strndup(url, (size_t)(q - url)) : dup_str(url);
        *con_cls = r;
        if (!r->path) return MHD_NO;
        enum MHD_Result ret = on_headers(s, r);
        conn_phase(s, r->hc, r->status ? CONN_ANSWER : r->spool_fd >= 0 ? CONN_UPLOAD : CONN_BODY, 0);
        return ret;
    }
    if (*upload_size) {
        on_body(s, r, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    if (r->handler_started) return await_answer(r); /* resumed: the handler answered (or the client went) */
    if (r->status) return MHD_YES; /* answered from the headers already */
    conn_phase(s, r->hc, CONN_ANSWER, 0);
    if (r->body_too_large)
        return queue_error(r, 413, "request body too large: the limit is %zu bytes", s->cfg.max_body);
    if (r->upload_too_large)
        return queue_error(r, 413, "upload too large: the limit is %llu bytes (ANVIL_MAX_UPLOAD), %llu bytes for all "
                           "uploads in progress (ANVIL_MAX_UPLOAD_TOTAL)", (unsigned long long)s->cfg.max_upload,
                           (unsigned long long)s->cfg.max_upload_total);
    if (r->spool_failed) return queue_error(r, 500, "cannot store the upload: %s", strerror(errno));
    if (atomic_load(&s->stopping)) return queue_error(r, 503, "the server is shutting down");
#ifdef _WIN32
    /* Windows cannot rename an open file; elsewhere the spool stays open, its flock held, until
     * the request is freed: the store's sweep of stale temporaries never takes it mid-adoption */
    if (r->spool_fd >= 0) { close(r->spool_fd); r->spool_fd = -1; }
#endif
    r->handler_started = true;
    pthread_mutex_lock(&s->lock);
    s->uploads_held -= r->upload_held;   /* the body is in: no longer an upload in progress */
    r->upload_held = 0;
    s->n_answering++;
    s->n_handlers++;
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_lock(&r->lock);
    r->refs++;
    pthread_mutex_unlock(&r->lock);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 1u << 20);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t tid;
    int rc = pthread_create(&tid, &attr, handler_main, r);
    pthread_attr_destroy(&attr);
    if (rc) {
        r->handler_started = false;
        r->refs--;
        pthread_mutex_lock(&s->lock);
        s->n_answering--;
        s->n_handlers--;
        pthread_mutex_unlock(&s->lock);
        return queue_error(r, 503, "server busy: cannot start a request thread");
    }
    return await_answer(r);
}


static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe) {
    http_server *s = cls;
    http_req *r = *con_cls;
    if (!r) return;
    *con_cls = NULL;
    /* The handler (if it still runs: a client that went) keeps its own reference and
     * sees the client gone; the event loop never waits for it. */
    pthread_mutex_lock(&r->lock);
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK || !r->handler_done) r->gone = true;
    r->conn_done = true;
    r->suspended = false;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->lock);
    if (r->handler_started) {
        pthread_mutex_lock(&s->lock);
        if (--s->n_answering == 0) pthread_cond_broadcast(&s->idle);
        pthread_mutex_unlock(&s->lock);
    }
    r->secs = elapsed_s(&r->t0);
    r->aborted = toe != MHD_REQUEST_TERMINATED_COMPLETED_OK;
    /* a kept-alive connection: the next request's headers within idle + header timeout */
    conn_phase(s, conn_of(conn), CONN_HEADERS, s->cfg.idle_timeout);
    req_unref(r);
}

/* ---- server ---- */

/* "host:port", "host", ":port", "http://host:port/", "[::1]:port" -> host + port. */
static int parse_host(const char *text, char *host, size_t cap, char *port, size_t pcap) {
    const char *p = text && *text ? text : "127.0.0.1:11434";
    const char *scheme = strstr(p, "://");
    bool https = false;
    if (scheme) { https = !strncasecmp(p, "https", 5); p = scheme + 3; }
    size_t n = strcspn(p, "/");
    char hp[256];
    if (n >= sizeof hp) { anv_set_error("ANVIL_HOST '%s' is too long", text); return -1; }
    memcpy(hp, p, n);
    hp[n] = 0;
    const char *def_port = https ? "443" : scheme ? "80" : "11434";
    char *colon;
    if (hp[0] == '[') {
        char *close = strchr(hp, ']');
        if (!close) { anv_set_error("bad ANVIL_HOST '%s': unclosed '['", text); return -1; }
        *close = 0;
        snprintf(host, cap, "%s", hp + 1);
        colon = close[1] == ':' ? close + 1 : NULL;
    } else {
        colon = strrchr(hp, ':');
        if (colon) *colon = 0;
        snprintf(host, cap, "%s", hp[0] ? hp : "127.0.0.1");
    }
    snprintf(port, pcap, "%s", colon && colon[1] ? colon + 1 : def_port);
    for (const char *c = port; *c; c++)
        if (*c < '0' || *c > '9') { anv_set_error("bad port in ANVIL_HOST '%s'", text); return -1; }
    if (atoi(port) > 65535) { anv_set_error("bad port in ANVIL_HOST '%s'", text); return -1; }
    return 0;
}

static void server_free(http_server *s) {
    if (!s) return;
    for (int i = 0; i < s->n_origins; i++) free(s->origins[i]);
    free(s->origins);
    for (int i = 0; i < s->n_routes; i++) { free((char *)s->routes[i].method); free((char *)s->routes[i].path); }
    free(s->routes);
    free(s->host);
    free(s->api_key);
    free(s->spool_dir);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->idle);
    pthread_cond_destroy(&s->watcher_cv);
    free(s);
}

static void mhd_log(void *cls, const char *fmt, va_list ap) {
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) msg[--n] = 0;
    if (anv_setting_value("ANVIL_DEBUG", NULL)) anv_log("http: %s", msg);
}

http_server *http_start(const http_config *c, const http_route *routes, int n_routes, void *app) {
    http_server *s = calloc(1, sizeof *s);
    if (!s) { anv_set_error("out of memory"); return NULL; }
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->idle, NULL);
    pthread_cond_init(&s->watcher_cv, NULL);
    s->cfg = *c;
    if (!s->cfg.max_body) s->cfg.max_body = 8u << 20;
    if (!s->cfg.max_upload) s->cfg.max_upload = 64ull << 30;
    if (!s->cfg.max_upload_total) s->cfg.max_upload_total = s->cfg.max_upload;
    s->app = app;
    s->api_key = c->api_key && *c->api_key ? dup_str(c->api_key) : NULL;
    s->spool_dir = c->spool_dir ? dup_str(c->spool_dir) : NULL;
    s->routes = calloc((size_t)(n_routes > 0 ? n_routes : 1), sizeof *s->routes);
    if (!s->routes || setup_origins(s, c->origins)) { server_free(s); anv_set_error("out of memory"); return NULL; }
    for (int i = 0; i < n_routes; i++) {
        s->routes[i] = routes[i];
        s->routes[i].method = dup_str(routes[i].method);
        s->routes[i].path = dup_str(routes[i].path);
        s->n_routes++;
    }
    char host[256], port[16];
    if (parse_host(c->host, host, sizeof host, port, sizeof port)) { server_free(s); return NULL; }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai = NULL;
    int gai = getaddrinfo(host, port, &hints, &ai);
    if (gai || !ai) {
        anv_set_error("cannot resolve listen address '%s': %s", host, gai_strerror(gai));
        server_free(s);
        return NULL;
    }
    s->loopback = true;
    for (struct addrinfo *a = ai; a; a = a->ai_next) {
        if (a->ai_family == AF_INET) {
            uint32_t v = ntohl(((struct sockaddr_in *)a->ai_addr)->sin_addr.s_addr);
            if ((v >> 24) != 127) s->loopback = false;
        } else if (a->ai_family == AF_INET6) {
            if (!IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)a->ai_addr)->sin6_addr)) s->loopback = false;
        } else {
            s->loopback = false;
        }
    }
    if (gethostname(s->hostname, sizeof s->hostname - 1)) s->hostname[0] = 0;

    unsigned max_conn = c->max_connections ? c->max_connections : HTTP_DEFAULT_MAX_CONNECTIONS;
    unsigned per_ip = c->max_per_ip ? c->max_per_ip : s->loopback ? 0 : HTTP_DEFAULT_MAX_PER_IP;
    unsigned idle = c->idle_timeout ? c->idle_timeout : HTTP_DEFAULT_IDLE_TIMEOUT;
    unsigned pool = c->threads ? c->threads : HTTP_DEFAULT_THREADS;
    /* Every connection is a descriptor: raise the soft limit toward the hard one, and
     * keep the connection cap under it with room for models, blobs and the store. */
    struct rlimit rl;
    if (!getrlimit(RLIMIT_NOFILE, &rl)) {
        rlim_t want = (rlim_t)max_conn + 256;
        if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
            rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
            setrlimit(RLIMIT_NOFILE, &rl);
            getrlimit(RLIMIT_NOFILE, &rl);
        }
        if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (rlim_t)max_conn + 256)
            max_conn = rl.rlim_cur > 320 ? (unsigned)(rl.rlim_cur - 256) : 64;
    }
    s->cfg.max_connections = max_conn;
    s->cfg.max_per_ip = per_ip;
    s->cfg.idle_timeout = idle;
    s->cfg.threads = pool;
    if (!s->cfg.header_timeout) s->cfg.header_timeout = HTTP_DEFAULT_HEADER_TIMEOUT;
    if (!s->cfg.body_timeout) s->cfg.body_timeout = HTTP_DEFAULT_BODY_TIMEOUT;

    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ERROR_LOG | MHD_USE_AUTO;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    s->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_access, s,
                                 MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                                 MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                                 MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
                                 MHD_OPTION_THREAD_POOL_SIZE, pool,
                                 MHD_OPTION_CONNECTION_LIMIT, max_conn,
                                 MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip,
                                 MHD_OPTION_CONNECTION_TIMEOUT, idle,
                                 MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024,
                                 MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(128 * 1024),
                                 MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
                                 MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!s->daemon) {
        anv_set_error("cannot listen on %s:%s (address in use, or no permission?)", host, port);
        server_free(s);
        return NULL;
    }
    s->watcher_running = true;
    if (pthread_create(&s->watcher, NULL, watcher_main, s)) {
        s->watcher_running = false;
        MHD_stop_daemon(s->daemon);
        anv_set_error("cannot start the HTTP connection watcher thread");
        server_free(s);
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    char addr[300];
    bool v6 = strchr(host, ':') != NULL;
    snprintf(addr, sizeof addr, "%s%s%s:%u", v6 ? "[" : "", host, v6 ? "]" : "", di ? di->port : (unsigned)atoi(port));
    s->host = dup_str(addr);
    return s;
}

const char *http_server_address(const http_server *s) { return s->host; }
bool http_server_loopback(const http_server *s) { return s->loopback; }

void http_stop(http_server *s) {
    if (!s) return;
    atomic_store(&s->stopping, true);
    pthread_mutex_lock(&s->lock);
    s->watcher_running = false;
    pthread_cond_broadcast(&s->watcher_cv);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->watcher, NULL);
    MHD_socket lfd = MHD_quiesce_daemon(s->daemon); /* stop accepting */
    if (lfd != MHD_INVALID_SOCKET) close(lfd);
    /* Running handlers see http_client_alive() false, cancel and end their answers; give
     * those answers a moment to reach their clients whole. Then MHD closes every
     * connection and joins its thread, each of which joins its handler (on_completed). */
    pthread_mutex_lock(&s->lock);
    struct timespec until;
    deadline_in_ms(&until, STOP_DRAIN_SECONDS * 1000);
    while (s->n_answering > 0)
        if (pthread_cond_timedwait(&s->idle, &s->lock, &until) == ETIMEDOUT) break;
    /* What is left is cut: every suspended connection goes back to MHD (which refuses
     * to stop with one suspended) as a client gone, so it closes. */
    for (http_req *r = s->live; r; r = r->next) {
        pthread_mutex_lock(&r->lock);
        r->gone = true;
        pthread_cond_broadcast(&r->cv);
        wake_conn(r);
        pthread_mutex_unlock(&r->lock);
    }
    pthread_mutex_unlock(&s->lock);
    MHD_stop_daemon(s->daemon);
    /* Handlers still running (they see their clients gone) hold s: wait for them. */
    pthread_mutex_lock(&s->lock);
    while (s->n_handlers > 0) pthread_cond_wait(&s->idle, &s->lock);
    pthread_mutex_unlock(&s->lock);
    server_free(s);
}
