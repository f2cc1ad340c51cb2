/* test_server_http: the HTTP layer (tools/server/http.c) on its own, with test routes and
 * libcurl as the client: query/header access, body limits (413), spooled upload bodies
 * (exempt from the limit, the temporary file removed afterwards), a handler that never
 * answers (500), a large stream read whole, a client that hangs up mid-stream (the
 * handler's writes start failing), on_done accounting, bad listen addresses, and
 * http_stop while a stream runs. */
#include <curl/curl.h>
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "http.h"
#include "testutil.h"

#define STREAM_LINES 4000
#define LINE_LEN 1024

static atomic_int stream_write_failed, stream_done, n_done, stream_started;
static char spool_dir[256];

static void h_echo(http_req *r) {
    char buf[256];
    const char *x = http_query(r, "x"), *h = http_header(r, "x-test");
    snprintf(buf, sizeof buf, "%s %s %s", x ? x : "-", h ? h : "-", http_method(r));
    http_reply(r, 200, "text/plain", buf, strlen(buf));
}

static void h_body(http_req *r) {
    size_t n;
    http_body(r, &n);
    char buf[64];
    snprintf(buf, sizeof buf, "%zu", n);
    http_reply(r, 200, "text/plain", buf, strlen(buf));
}

static void h_spool(http_req *r) {
    struct stat st;
    const char *p = http_body_path(r);
    size_t n;
    http_body(r, &n);
    char buf[64];
    snprintf(buf, sizeof buf, "%lld %zu", p && !stat(p, &st) ? (long long)st.st_size : -1LL, n);
    http_reply(r, 201, "text/plain", buf, strlen(buf));
}

static void h_noreply(http_req *r) { (void)r; }

static void h_stream(http_req *r) {
    char line[LINE_LEN];
    memset(line, 'x', sizeof line);
    line[LINE_LEN - 1] = '\n';
    http_stream_begin(r, 200, "application/x-ndjson");
    atomic_store(&stream_started, 1);
    for (int i = 0; i < STREAM_LINES; i++) {
        if (!http_stream_write(r, line, sizeof line) || !http_client_alive(r)) {
            atomic_store(&stream_write_failed, 1);
            break;
        }
        if (http_query(r, "slow")) usleep(2000);
    }
    http_stream_end(r);
    atomic_store(&stream_done, 1);
}

static void on_done(void *app, const char *method, const char *route, int status, double seconds) {
    (void)app; (void)method; (void)route; (void)status; (void)seconds;
    atomic_fetch_add(&n_done, 1);
}

typedef struct { char *data; size_t len; size_t abort_after; } sink;

static size_t on_data(char *p, size_t sz, size_t n, void *user) {
    sink *s = user;
    size_t k = sz * n;
    if (s->abort_after && s->len >= s->abort_after) return 0; /* hang up */
    char *d = realloc(s->data, s->len + k + 1);
    if (!d) return 0;
    memcpy(d + s->len, p, k);
    s->data = d;
    s->len += k;
    s->data[s->len] = 0;
    return k;
}

static long fetch(const char *url, const char *method, const char *body, size_t body_len, sink *out) {
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "X-Test: hello");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
    }
    if (method && !strcmp(method, "HEAD")) curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    else if (method) curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    long status = 0;
    if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return status;
}

/* GET url with "Host: host"; the status. */
static long fetch_host(const char *url, const char *host) {
    CURL *c = curl_easy_init();
    char hh[600];
    snprintf(hh, sizeof hh, "Host: %s", host);
    struct curl_slist *h = curl_slist_append(NULL, hh);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    sink o = {0};
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &o);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    long status = 0;
    if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    free(o.data);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return status;
}

static int count_uploads(void) {
    DIR *d = opendir(spool_dir);
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (!strncmp(e->d_name, ".upload-", 8)) n++;
    closedir(d);
    return n;
}

static void *fetch_stream_thread(void *arg) {
    sink s = {0};
    fetch((const char *)arg, NULL, NULL, 0, &s);
    free(s.data);
    return NULL;
}

int main(void) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    snprintf(spool_dir, sizeof spool_dir, "/tmp/anvil-http-test-%d/spool", (int)getpid());
    static const http_route routes[] = {
        {"GET", "/echo", h_echo, 0},
        {"POST", "/body", h_body, 0},
        {"POST", "/spool/", h_spool, HTTP_ROUTE_SPOOL_BODY},
        {"GET", "/noreply", h_noreply, 0},
        {"GET", "/stream", h_stream, 0},
    };
    http_config cfg = {.host = "127.0.0.1:0", .max_body = 1024, .spool_dir = spool_dir, .on_done = on_done};
    http_server *s = http_start(&cfg, routes, 5, NULL);
    CHECK(s != NULL);
    if (!s) { fprintf(stderr, "%s\n", anv_last_error()); return tu_finish(); }
    char base[128], url[256];
    snprintf(base, sizeof base, "http://%s", http_server_address(s));
    CHECK(strstr(http_server_address(s), ":0") == NULL);

    sink o = {0};
    snprintf(url, sizeof url, "%s/echo?x=42", base);
    CHECK(fetch(url, NULL, NULL, 0, &o) == 200);
    CHECK(o.data && !strcmp(o.data, "42 hello GET"));
    free(o.data); o = (sink){0};
    CHECK(fetch(url, "HEAD", NULL, 0, &o) == 200); /* GET routes answer HEAD */
    free(o.data); o = (sink){0};

    char body[2048];
    memset(body, 'a', sizeof body);
    snprintf(url, sizeof url, "%s/body", base);
    CHECK(fetch(url, NULL, body, 1000, &o) == 200);
    CHECK(o.data && !strcmp(o.data, "1000"));
    free(o.data); o = (sink){0};
    CHECK(fetch(url, NULL, body, sizeof body, &o) == 413);
    CHECK(o.data && strstr(o.data, "too large"));
    free(o.data); o = (sink){0};

    size_t big = 300 * 1000;
    char *upload = malloc(big);
    memset(upload, 'b', big);
    snprintf(url, sizeof url, "%s/spool/sha256:abc", base);
    CHECK(fetch(url, NULL, upload, big, &o) == 201);
    CHECK(o.data && !strcmp(o.data, "300000 0"));
    /* removed once the request has completed (just after the client got its answer) */
    for (int i = 0; i < 500 && count_uploads() != 0; i++) usleep(10000);
    CHECK(count_uploads() == 0);
    free(o.data); o = (sink){0};
    free(upload);

    snprintf(url, sizeof url, "%s/noreply", base);
    CHECK(fetch(url, NULL, NULL, 0, &o) == 500);
    free(o.data); o = (sink){0};
    snprintf(url, sizeof url, "%s/nothing", base);
    CHECK(fetch(url, NULL, NULL, 0, &o) == 404);
    free(o.data); o = (sink){0};
    snprintf(url, sizeof url, "%s/body", base);
    CHECK(fetch(url, NULL, NULL, 0, &o) == 405); /* GET on a POST route */
    free(o.data); o = (sink){0};

    snprintf(url, sizeof url, "%s/stream", base);
    CHECK(fetch(url, NULL, NULL, 0, &o) == 200);
    CHECK(o.len == (size_t)STREAM_LINES * LINE_LEN);
    CHECK(!atomic_load(&stream_write_failed));
    free(o.data); o = (sink){0};

    /* Hang up after the first 64 KiB: the handler's writes must start failing. */
    atomic_store(&stream_done, 0);
    snprintf(url, sizeof url, "%s/stream?slow=1", base);
    o.abort_after = 64 * 1024;
    fetch(url, NULL, NULL, 0, &o);
    free(o.data); o = (sink){0};
    for (int i = 0; i < 600 && !atomic_load(&stream_done); i++) usleep(10000);
    CHECK(atomic_load(&stream_done));
    CHECK(atomic_load(&stream_write_failed));
    for (int i = 0; i < 500 && atomic_load(&n_done) < 10; i++) usleep(10000);
    CHECK(atomic_load(&n_done) == 10); /* every request so far was accounted once */

    /* DNS rebinding: a loopback listener answers only loopback Host values. */
    char echo_url[256];
    snprintf(echo_url, sizeof echo_url, "%s/echo", base);
    CHECK(fetch_host(echo_url, "evil.example") == 403);
    CHECK(fetch_host(echo_url, "evil.example:11434") == 403);
    CHECK(fetch_host(echo_url, "localhost.evil.example") == 403);
    CHECK(fetch_host(echo_url, "127.0.0.1.nip.io:80") == 403);
    CHECK(fetch_host(echo_url, "[::1]x") == 403);
    CHECK(fetch_host(echo_url, "localhost:1:2") == 403);
    char longhost[520];
    memset(longhost, 'a', sizeof longhost - 1);
    longhost[sizeof longhost - 1] = 0;
    CHECK(fetch_host(echo_url, longhost) == 403);
    CHECK(fetch_host(echo_url, "localhost") == 200);
    CHECK(fetch_host(echo_url, "LocalHost:11434") == 200);
    CHECK(fetch_host(echo_url, "ui.localhost:3000") == 200);
    CHECK(fetch_host(echo_url, "127.0.0.1:11434") == 200);
    CHECK(fetch_host(echo_url, "127.9.8.7") == 200);
    CHECK(fetch_host(echo_url, "[::1]:11434") == 200);
    CHECK(fetch_host(echo_url, "[::1]") == 200);
    CHECK(http_server_loopback(s));

    /* http_stop with a stream running: returns, the handler finished. */
    atomic_store(&stream_done, 0);
    atomic_store(&stream_started, 0);
    pthread_t t;
    pthread_create(&t, NULL, fetch_stream_thread, url);
    for (int i = 0; i < 500 && !atomic_load(&stream_started); i++) usleep(10000);
    CHECK(atomic_load(&stream_started));
    http_stop(s);
    CHECK(atomic_load(&stream_done));
    pthread_join(t, NULL);

    http_config bad = {.host = "127.0.0.1:notaport"};
    CHECK(http_start(&bad, routes, 5, NULL) == NULL);
    CHECK(strstr(anv_last_error(), "port") != NULL);
    bad.host = "[::1";
    CHECK(http_start(&bad, routes, 5, NULL) == NULL);

    rmdir(spool_dir);
    char parent[256];
    snprintf(parent, sizeof parent, "/tmp/anvil-http-test-%d", (int)getpid());
    rmdir(parent);
    curl_global_cleanup();
    return tu_finish();
}
