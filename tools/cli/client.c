/* client: requests from the anvil CLI to a running server ($ANVIL_HOST), plain and
 * streamed (NDJSON), with libcurl; replies parsed with cJSON. */
#include "client.h"

#include "bytebuf.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"
#include "settings.h"

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

void client_base_url(char *url, size_t url_cap, char *display, size_t display_cap) {
    const char *env = anv_setting_value("ANVIL_HOST", NULL);   /* or OLLAMA_HOST */
    char buf[512];
    snprintf(buf, sizeof buf, "%s", env && *env ? env : "127.0.0.1:11434");
    const char *scheme = "http";
    char *h = buf;
    const char *default_port = "11434";
    if (!strncmp(h, "http://", 7)) { h += 7; default_port = "80"; }
    else if (!strncmp(h, "https://", 8)) { h += 8; scheme = "https"; default_port = "443"; }
    char *slash = strchr(h, '/');
    if (slash) *slash = 0;   /* a path after the address is ignored */
    char host[512] = "", port[512] = "";
    if (*h == '[') {   /* [v6]:port */
        char *end = strchr(h, ']');
        if (end) {
            snprintf(host, sizeof host, "%.*s", (int)(end - h - 1), h + 1);
            if (end[1] == ':') snprintf(port, sizeof port, "%s", end + 2);
        } else snprintf(host, sizeof host, "%s", h + 1);
    } else {
        char *colon = strrchr(h, ':');
        if (colon && strchr(h, ':') == colon) {   /* host:port (more colons: a bare v6 address) */
            snprintf(port, sizeof port, "%s", colon + 1);
            *colon = 0;
        }
        snprintf(host, sizeof host, "%s", h);
    }
    if (!*host || !strcmp(host, "0.0.0.0")) snprintf(host, sizeof host, "127.0.0.1");
    else if (!strcmp(host, "::")) snprintf(host, sizeof host, "::1");
    if (!*port) snprintf(port, sizeof port, "%s", default_port);
    bool v6 = strchr(host, ':') != NULL;
    if (url) snprintf(url, url_cap, "%s://%s%s%s:%s", scheme, v6 ? "[" : "", host, v6 ? "]" : "", port);
    if (display) snprintf(display, display_cap, "%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port);
}

static void set_connect_error(void) {
    char display[1200];
    client_base_url(NULL, 0, display, sizeof display);
    anv_set_error("could not connect to a running anvil server at %s (start one with 'anvil serve')", display);
}

static size_t collect_cb(char *data, size_t size, size_t nmemb, void *user) {
    return bytebuf_add(user, data, size * nmemb) ? size * nmemb : 0;
}

/* An easy handle for url path with the JSON body and the API key, if any; content_type NULL: JSON. */
static CURL *make_handle(const char *method, const char *path, const char *json_body, const char *content_type,
                         struct curl_slist **headers) {
    pthread_once(&curl_once, curl_init_once);
    CURL *c = curl_easy_init();
    if (!c) { anv_set_error("out of memory (curl)"); return NULL; }
    char base[1200], url[2400];
    client_base_url(base, sizeof base, NULL, 0);
    snprintf(url, sizeof url, "%s%s", base, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 3000L);
    curl_easy_setopt(c, CURLOPT_PROXY, "");   /* the server is local: ignore http_proxy */
    char ctype[128];
    snprintf(ctype, sizeof ctype, "Content-Type: %s", content_type ? content_type : "application/json");
    *headers = curl_slist_append(NULL, ctype);
    *headers = curl_slist_append(*headers, "Accept: application/json, application/x-ndjson");
    const char *key = anv_setting_raw("ANVIL_API_KEY");
    if (key && *key) {
        char auth[600];
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", key);
        *headers = curl_slist_append(*headers, auth);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, *headers);
    if (!strcmp(method, "HEAD")) curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    else if (strcmp(method, "GET")) curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (json_body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, json_body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(json_body));
    }
    return c;
}

/* Runs the transfer, then frees the handle and headers; *status gets the HTTP status (0: none). */
static CURLcode perform(CURL *c, struct curl_slist *headers, long *status) {
    CURLcode rc = curl_easy_perform(c);
    *status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    curl_easy_cleanup(c);
    curl_slist_free_all(headers);
    return rc;
}

static int run_plain(const char *method, const char *path, const char *json_body, char **reply, long timeout_ms) {
    struct curl_slist *headers = NULL;
    CURL *c = make_handle(method, path, json_body, NULL, &headers);
    if (!c) return -1;
    bytebuf b = {0};
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect_cb);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    if (timeout_ms > 0) {
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    }
    long status;
    CURLcode rc = perform(c, headers, &status);
    if (rc != CURLE_OK || b.oom) {
        free(b.data);
        if (b.oom) anv_set_error("out of memory reading the server's reply");
        else set_connect_error();
        return -1;
    }
    if (reply) *reply = b.data ? b.data : strdup("");
    else free(b.data);
    return (int)status;
}

bool client_server_up(void) {
    char *reply = NULL;
    int status = run_plain("GET", "/api/version", NULL, &reply, 1000);
    bool up = false;
    if (status == 200) {
        cJSON *j = cJSON_Parse(reply);
        up = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "version"));
        cJSON_Delete(j);
    }
    free(reply);
    return up;
}

int client_request(const char *method, const char *path, const char *json_body, char **reply) {
    return run_plain(method, path, json_body, reply, 0);
}

char *client_error_message(int status, const char *reply) {
    cJSON *j = reply ? cJSON_Parse(reply) : NULL;
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
    char *msg;
    if (cJSON_IsString(e)) msg = strdup(e->valuestring);
    else if (cJSON_IsObject(e) && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "message")))
        msg = strdup(cJSON_GetObjectItemCaseSensitive(e, "message")->valuestring);   /* OpenAI's shape */
    else {
        size_t n = reply ? strcspn(reply, "\n") : 0;
        msg = malloc(n + 40);
        if (msg) {
            if (n) snprintf(msg, n + 40, "%.*s", (int)n, reply);
            else snprintf(msg, n + 40, "server answered HTTP %d", status);
        }
    }
    cJSON_Delete(j);
    return msg;
}

/* ---------------------------------------------------------------- streamed generation */

typedef struct {
    const client_gen_request *q;
    client_gen_result *res;
    bool chat;
    bytebuf line;        /* the partial NDJSON line */
    bytebuf text;        /* the whole reply */
    bytebuf raw;         /* everything, for a non-2xx reply */
    char error[512];   /* an {"error"} line */
    bool stopped;      /* on_text returned false */
    bool done;
} stream_state;

static int64_t json_i64(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
}

/* One NDJSON object; false stops the transfer. */
static bool handle_line(stream_state *st, const char *line, size_t len) {
    cJSON *j = cJSON_ParseWithLength(line, len);
    if (!cJSON_IsObject(j)) { cJSON_Delete(j); return true; }   /* blank or foreign line */
    bool go_on = true;
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(j, "error");
    if (cJSON_IsString(err)) {
        snprintf(st->error, sizeof st->error, "%s", err->valuestring);
        cJSON_Delete(j);
        return false;
    }
    const char *piece = NULL;
    const cJSON *holder = st->chat ? cJSON_GetObjectItemCaseSensitive(j, "message") : j;
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(holder, st->chat ? "content" : "response");
    if (cJSON_IsString(text)) piece = text->valuestring;
    const char *thinking = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(holder, "thinking"));
    if (thinking && *thinking && st->q->on_thinking) st->q->on_thinking(thinking, strlen(thinking), st->q->user);
    if (piece && *piece) {
        size_t n = strlen(piece);
        bytebuf_add(&st->text, piece, n);
        if (st->q->on_text && !st->q->on_text(piece, n, st->q->user)) { st->stopped = true; go_on = false; }
    }
    const char *model = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "model"));
    if (model) snprintf(st->res->model, sizeof st->res->model, "%s", model);
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "done"))) {
        client_gen_result *r = st->res;
        st->done = true;
        const char *reason = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "done_reason"));
        snprintf(r->done_reason, sizeof r->done_reason, "%s", reason ? reason : "stop");
        r->prompt_eval_count = (int)json_i64(j, "prompt_eval_count");
        r->eval_count = (int)json_i64(j, "eval_count");
        r->total_ns = json_i64(j, "total_duration");
        r->load_ns = json_i64(j, "load_duration");
        r->prompt_eval_ns = json_i64(j, "prompt_eval_duration");
        r->eval_ns = json_i64(j, "eval_duration");
    }
    cJSON_Delete(j);
    return go_on;
}

/* NDJSON framing for curl's write callbacks: keeps the first 64 KiB in raw (a non-2xx reply's
 * body), gathers bytes into line and calls on_line with each complete non-empty line. Returns n,
 * or 0 (curl then stops) when on_line says stop or memory runs out. */
static size_t split_lines(const char *data, size_t n, bytebuf *line, bytebuf *raw,
                          bool (*on_line)(const char *l, size_t len, void *user), void *user) {
    if (raw->len < 65536) bytebuf_add(raw, data, n);
    for (size_t i = 0; i < n; i++) {
        if (data[i] != '\n') {
            if (!bytebuf_add(line, data + i, 1)) return 0;
            continue;
        }
        bool go_on = line->len ? on_line(line->data, line->len, user) : true;
        line->len = 0;
        if (!go_on) return 0;
    }
    return n;
}

static bool gen_line(const char *l, size_t len, void *user) { return handle_line(user, l, len); }

static size_t stream_cb(char *data, size_t size, size_t nmemb, void *user) {
    stream_state *st = user;
    return split_lines(data, size * nmemb, &st->line, &st->raw, gen_line, st);
}

/* Standard base64 with padding (Ollama's "images"); malloc'd, NULL when out of memory. */
static char *base64(const uint8_t *p, size_t n) {
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
    if (!out) return NULL;
    for (size_t i = 0; i < n; i += 3) {
        const uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        *o++ = tab[v >> 18 & 63];
        *o++ = tab[v >> 12 & 63];
        *o++ = i + 1 < n ? tab[v >> 6 & 63] : '=';
        *o++ = i + 2 < n ? tab[v & 63] : '=';
    }
    *o = 0;
    return out;
}

/* The request body: model, prompt or messages, and the optional fields. */
static char *request_json(const client_gen_request *q, bool chat) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", q->model);
    if (chat) {
        cJSON *msgs = cJSON_AddArrayToObject(o, "messages");
        for (int i = 0; i < q->n_messages; i++) {
            cJSON *m = cJSON_CreateObject();
            cJSON_AddStringToObject(m, "role", q->messages[i].role);
            cJSON_AddStringToObject(m, "content", q->messages[i].content ? q->messages[i].content : "");
            if (q->images && q->images[i].n > 0) {
                cJSON *imgs = cJSON_AddArrayToObject(m, "images");
                for (int k = 0; k < q->images[i].n; k++) {
                    char *b = base64(q->images[i].files[k].data, q->images[i].files[k].size);
                    cJSON_AddItemToArray(imgs, b ? cJSON_CreateString(b) : cJSON_CreateNull());
                    free(b);
                }
            }
            cJSON_AddItemToArray(msgs, m);
        }
    } else {
        cJSON_AddStringToObject(o, "prompt", q->prompt ? q->prompt : "");
        if (q->raw) cJSON_AddTrueToObject(o, "raw");
    }
    if (q->system) cJSON_AddStringToObject(o, "system", q->system);
    cJSON_AddTrueToObject(o, "stream");
    if (q->options_json) {
        cJSON *opts = cJSON_Parse(q->options_json);
        if (cJSON_IsObject(opts)) cJSON_AddItemToObject(o, "options", opts);
        else cJSON_Delete(opts);
    }
    if (q->keep_alive) {
        char *end;
        double secs = strtod(q->keep_alive, &end);
        if (*q->keep_alive && !*end) cJSON_AddNumberToObject(o, "keep_alive", secs);
        else cJSON_AddStringToObject(o, "keep_alive", q->keep_alive);
    }
    static const char *const levels[] = {[CHAT_THINK_LOW] = "low", [CHAT_THINK_MEDIUM] = "medium", [CHAT_THINK_HIGH] = "high"};
    if (q->think >= CHAT_THINK_LOW && q->think <= CHAT_THINK_HIGH) cJSON_AddStringToObject(o, "think", levels[q->think]);
    else if (q->think) cJSON_AddBoolToObject(o, "think", q->think == CHAT_THINK_ON);
    if (q->format) {
        cJSON *schema = strcmp(q->format, "json") ? cJSON_Parse(q->format) : NULL;
        if (cJSON_IsObject(schema)) cJSON_AddItemToObject(o, "format", schema);
        else { cJSON_Delete(schema); cJSON_AddStringToObject(o, "format", q->format); }
    }
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return text;
}

static int run_stream(const client_gen_request *q, client_gen_result *res, bool chat) {
    memset(res, 0, sizeof *res);
    if (!q->model || !*q->model) { anv_set_error("no model given"); return -1; }
    char *body = request_json(q, chat);
    if (!body) { anv_set_error("out of memory"); return -1; }
    struct curl_slist *headers = NULL;
    CURL *c = make_handle("POST", chat ? "/api/chat" : "/api/generate", body, NULL, &headers);
    if (!c) { free(body); return -1; }
    stream_state st = {.q = q, .res = res, .chat = chat};
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, stream_cb);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &st);
    long status;
    CURLcode rc = perform(c, headers, &status);
    free(body);
    if (st.line.len && rc == CURLE_OK) handle_line(&st, st.line.data, st.line.len);   /* no final newline */
    res->http_status = (int)status;
    res->text = st.text.data ? st.text.data : strdup("");
    int ret = 0;
    if (st.stopped) {
        snprintf(res->done_reason, sizeof res->done_reason, "cancelled");
    } else if (status != 0 && (status < 200 || status > 299)) {
        char *msg = client_error_message((int)status, st.raw.data);
        anv_set_error("%s", msg ? msg : "server error");
        free(msg);
        ret = -1;
    } else if (st.error[0]) {
        anv_set_error("%s", st.error);
        ret = -1;
    } else if (rc != CURLE_OK) {
        if (status == 0) set_connect_error();
        else anv_set_error("the server closed the stream early (%s)", curl_easy_strerror(rc));
        ret = -1;
    } else if (!st.done) {
        anv_set_error("the server's reply ended without a final 'done' message");
        ret = -1;
    }
    free(st.line.data);
    free(st.raw.data);
    return ret;
}

int client_generate(const client_gen_request *q, client_gen_result *res) { return run_stream(q, res, false); }
int client_chat(const client_gen_request *q, client_gen_result *res) { return run_stream(q, res, true); }

void client_gen_result_clear(client_gen_result *res) {
    free(res->text);
    res->text = NULL;
}

/* ---------------------------------------------------------------- the store commands' requests */

bool client_store_remote(void) { return anv_setting_value("ANVIL_HOST", NULL) != NULL; }

typedef struct {
    client_json_fn fn;
    void *user;
    bytebuf line, raw;
    char error[512];
    bool stopped;
} json_stream;

/* One object line: an {"error"} ends the stream with its message, anything else goes to fn. */
static bool json_line(const char *l, size_t len, void *user) {
    json_stream *st = user;
    cJSON *j = cJSON_ParseWithLength(l, len);
    bool go_on = true;
    if (cJSON_IsObject(j)) {
        const cJSON *err = cJSON_GetObjectItemCaseSensitive(j, "error");
        if (cJSON_IsString(err)) { snprintf(st->error, sizeof st->error, "%s", err->valuestring); go_on = false; }
        else if (!st->fn(j, st->user)) { st->stopped = true; go_on = false; }
    }
    cJSON_Delete(j);
    return go_on;
}

static size_t json_stream_cb(char *data, size_t size, size_t nmemb, void *user) {
    json_stream *st = user;
    return split_lines(data, size * nmemb, &st->line, &st->raw, json_line, st);
}

int client_stream_json(const char *method, const char *path, const char *json_body, client_json_fn fn, void *user) {
    struct curl_slist *headers = NULL;
    CURL *c = make_handle(method, path, json_body, NULL, &headers);
    if (!c) return -1;
    json_stream st = {.fn = fn, .user = user};
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, json_stream_cb);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &st);
    long status;
    CURLcode rc = perform(c, headers, &status);
    if (st.line.len && !st.error[0] && !st.stopped) {   /* a last line without its newline */
        char nl = '\n';
        json_stream_cb(&nl, 1, 1, &st);
    }
    int result = (int)status;
    if (st.error[0]) {
        anv_set_error("%s", st.error);
        result = -1;
    } else if (rc != CURLE_OK && !st.stopped) {
        if (status == 0) set_connect_error();
        else anv_set_error("the connection to the server broke: %s", curl_easy_strerror(rc));
        result = -1;
    } else if (status / 100 != 2) {
        bytebuf_add(&st.raw, "", 1);
        char *msg = client_error_message((int)status, st.raw.data);
        anv_set_error("%s", msg ? msg : "the server refused the request");
        free(msg);
        result = -1;
    }
    free(st.line.data);
    free(st.raw.data);
    return result;
}

static size_t read_file_cb(char *buf, size_t size, size_t nmemb, void *user) {
    return fread(buf, 1, size * nmemb, user);
}

int client_upload_file(const char *path, const char *file, char **reply) {
    FILE *f = fopen(file, "rb");
    if (!f) { anv_set_error("cannot open %s: %s", file, strerror(errno)); return -1; }
    struct stat st;
    if (fstat(fileno(f), &st) != 0) { fclose(f); anv_set_error("cannot stat %s", file); return -1; }
    struct curl_slist *headers = NULL;
    CURL *c = make_handle("POST", path, NULL, "application/octet-stream", &headers);
    if (!c) { fclose(f); return -1; }
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "POST");
    curl_easy_setopt(c, CURLOPT_READFUNCTION, read_file_cb);
    curl_easy_setopt(c, CURLOPT_READDATA, f);
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)st.st_size);
    bytebuf b = {0};
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect_cb);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    long status;
    CURLcode rc = perform(c, headers, &status);
    fclose(f);
    if (rc != CURLE_OK) {
        free(b.data);
        if (status == 0) set_connect_error();
        else anv_set_error("uploading %s: %s", file, curl_easy_strerror(rc));
        return -1;
    }
    if (reply) *reply = b.data ? b.data : strdup("");
    else free(b.data);
    return (int)status;
}
