/* api_json: strict request-field readers, timestamps and reply helpers shared by the
 * Ollama and OpenAI handlers (see api_json.h). */
#include "api_json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scheduler.h"

void aj_fail(api_req *c, int status, const char *param, const char *fmt, ...) {
    if (c->failed) return;
    c->failed = true;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cJSON *o = cJSON_CreateObject();
    if (c->openai) {
        cJSON *e = cJSON_AddObjectToObject(o, "error");
        cJSON_AddStringToObject(e, "message", msg);
        const char *type = status == 400 || status == 413 ? "invalid_request_error"
                         : status == 401 ? "authentication_error"
                         : status == 404 ? "not_found_error" : "api_error";
        cJSON_AddStringToObject(e, "type", type);
        if (param) cJSON_AddStringToObject(e, "param", param);
        else cJSON_AddNullToObject(e, "param");
        cJSON_AddNullToObject(e, "code");
    } else {
        cJSON_AddStringToObject(o, "error", msg);
    }
    aj_reply(c->r, status, o);
}

cJSON *aj_parse_body(api_req *c) {
    size_t len;
    const char *body = http_body(c->r, &len);
    if (!len) { aj_fail(c, 400, NULL, "missing request body (a JSON object)"); return NULL; }
    const char *end = NULL;
    cJSON *o = cJSON_ParseWithLengthOpts(body, len, &end, 0);
    if (!o) {
        size_t at = end && end >= body ? (size_t)(end - body) : 0;
        aj_fail(c, 400, NULL, "invalid JSON in the request body (near byte %zu)", at);
        return NULL;
    }
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        aj_fail(c, 400, NULL, "the request body must be a JSON object");
        return NULL;
    }
    return o;
}

const cJSON *aj_any(const cJSON *o, const char *key) {
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    return v && !cJSON_IsNull(v) ? v : NULL;
}

static const cJSON *typed(api_req *c, const cJSON *o, const char *key, const char *want, cJSON_bool (*is)(const cJSON *)) {
    if (c->failed) return NULL;
    const cJSON *v = aj_any(o, key);
    if (v && !is(v)) {
        aj_fail(c, 400, key, "invalid value for field '%s': expected %s", key, want);
        return NULL;
    }
    return v;
}

const char *aj_string(api_req *c, const cJSON *o, const char *key) {
    const cJSON *v = typed(c, o, key, "a string", cJSON_IsString);
    return v ? v->valuestring : NULL;
}

bool aj_bool(api_req *c, const cJSON *o, const char *key, bool def) {
    const cJSON *v = typed(c, o, key, "true or false", cJSON_IsBool);
    return v ? cJSON_IsTrue(v) : def;
}

double aj_number(api_req *c, const cJSON *o, const char *key, double def) {
    const cJSON *v = typed(c, o, key, "a number", cJSON_IsNumber);
    return v ? v->valuedouble : def;
}

long long aj_int(api_req *c, const cJSON *o, const char *key, long long def, long long lo, long long hi) {
    const cJSON *v = typed(c, o, key, "an integer", cJSON_IsNumber);
    if (!v) return def;
    double d = v->valuedouble;
    if (d != floor(d) || d < (double)lo || d > (double)hi) {
        aj_fail(c, 400, key, "invalid value for field '%s': expected an integer from %lld to %lld", key, lo, hi);
        return def;
    }
    return (long long)d;
}

const cJSON *aj_object(api_req *c, const cJSON *o, const char *key) {
    return typed(c, o, key, "an object", cJSON_IsObject);
}

const cJSON *aj_array(api_req *c, const cJSON *o, const char *key) {
    return typed(c, o, key, "an array", cJSON_IsArray);
}

bool aj_keep_alive(api_req *c, const cJSON *o, const char *key, int64_t *ms) {
    if (c->failed) return false;
    const cJSON *v = aj_any(o, key);
    if (!v) return false;
    if (cJSON_IsNumber(v)) {
        double s = v->valuedouble;
        if (!isfinite(s) || s > 9.0e15 / 1000) { aj_fail(c, 400, key, "invalid value for field '%s'", key); return false; }
        *ms = s < 0 ? -1 : (int64_t)(s * 1000.0);
        return true;
    }
    if (cJSON_IsString(v)) {
        if (sched_parse_duration_ms(v->valuestring, ms)) {
            aj_fail(c, 400, key, "invalid value for field '%s': '%.100s' is not a duration like \"5m\" or a number of seconds",
                    key, v->valuestring);
            return false;
        }
        return true;
    }
    aj_fail(c, 400, key, "invalid value for field '%s': expected a duration string or a number of seconds", key);
    return false;
}

void aj_now_rfc3339(char buf[40]) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char head[24];
    strftime(head, sizeof head, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, 40, "%s.%09ldZ", head, ts.tv_nsec);
}

void aj_ms_rfc3339(int64_t ms, char buf[48]) {
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    localtime_r(&t, &tm);
    char head[24], zone[8];
    strftime(head, sizeof head, "%Y-%m-%dT%H:%M:%S", &tm);
    strftime(zone, sizeof zone, "%z", &tm); /* +0200 -> +02:00 */
    if (strlen(zone) == 5) snprintf(buf, 48, "%s.%03d%.3s:%.2s", head, (int)(ms % 1000), zone, zone + 3);
    else snprintf(buf, 48, "%s.%03dZ", head, (int)(ms % 1000));
}

int64_t aj_unix_seconds(void) { return (int64_t)time(NULL); }

void aj_reply(http_req *r, int status, cJSON *o) {
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!s) { http_reply_error(r, 500, "out of memory"); return; }
    http_reply_json(r, status, s);
    free(s);
}

static bool stream_framed(http_req *r, cJSON *o, const char *pre, const char *post) {
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!s) return false;
    size_t np = strlen(pre), ns = strlen(s), nq = strlen(post);
    char *line = malloc(np + ns + nq + 1);
    bool ok = false;
    if (line) {
        memcpy(line, pre, np);
        memcpy(line + np, s, ns);
        memcpy(line + np + ns, post, nq + 1);
        ok = http_stream_write(r, line, np + ns + nq);
        free(line);
    }
    free(s);
    return ok;
}

bool aj_stream_ndjson(http_req *r, cJSON *o) { return stream_framed(r, o, "", "\n"); }
bool aj_stream_sse(http_req *r, cJSON *o) { return stream_framed(r, o, "data: ", "\n\n"); }

/* "format": "json", "" (none) or a JSON schema object. malloc'd text or NULL. */
char *api_parse_format(api_req *c, const cJSON *body, const char *key) {
    const cJSON *f = aj_any(body, key);
    if (!f || c->failed) return NULL;
    if (cJSON_IsString(f)) {
        if (!f->valuestring[0]) return NULL;
        if (!strcmp(f->valuestring, "json")) return strdup("json");
        aj_fail(c, 400, key, "invalid value for field '%s': expected \"json\" or a JSON schema object", key);
        return NULL;
    }
    if (cJSON_IsObject(f)) return cJSON_PrintUnformatted(f);
    aj_fail(c, 400, key, "invalid value for field '%s': expected \"json\" or a JSON schema object", key);
    return NULL;
}

/* "[v0,v1,...]" for n floats (shortest text that reads back the same float). */
void api_float_array(bytebuf *b, const float *v, int n) {
    bytebuf_add(b, "[", 1);
    for (int i = 0; i < n; i++) {
        char num[32];
        int k = snprintf(num, sizeof num, "%s%.9g", i ? "," : "", (double)v[i]);
        bytebuf_add(b, num, (size_t)k);
    }
    bytebuf_add(b, "]", 1);
}

/* Reads "input"/"prompt" (a string or an array of strings) into a malloc'd list. */
const char **api_parse_inputs(api_req *c, const cJSON *body, const char *key, int *n_out) {
    const cJSON *in = aj_any(body, key);
    *n_out = 0;
    if (!in) return NULL;
    if (cJSON_IsString(in)) {
        const char **l = malloc(sizeof *l);
        if (!l) { aj_fail(c, 500, NULL, "out of memory"); return NULL; }
        l[0] = in->valuestring;
        *n_out = 1;
        return l;
    }
    if (!cJSON_IsArray(in)) {
        aj_fail(c, 400, key, "invalid value for field '%s': expected a string or an array of strings", key);
        return NULL;
    }
    int n = cJSON_GetArraySize(in);
    const char **l = calloc((size_t)(n ? n : 1), sizeof *l);
    if (!l) { aj_fail(c, 500, NULL, "out of memory"); return NULL; }
    int i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, in) {
        if (!cJSON_IsString(it)) {
            aj_fail(c, 400, key, "invalid value for field '%s[%d]': expected a string (token arrays are not supported)", key, i);
            free(l);
            return NULL;
        }
        l[i++] = it->valuestring;
    }
    *n_out = n;
    return l;
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (!len || len > n) return 0;
    unsigned cp = len == 1 ? c : len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    static const unsigned min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return len;
}

void aj_add_text(cJSON *o, const char *key, const char *text, size_t n) {
    bytebuf b = {0};
    bytebuf_add(&b, "\"", 1);
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        char esc[8];
        if (c < 0x20 || c == '"' || c == '\\') {
            const char *short_esc = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n"
                                  : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
            if (short_esc) bytebuf_add(&b, short_esc, 2);
            else { snprintf(esc, sizeof esc, "\\u%04x", c); bytebuf_add(&b, esc, 6); }
            i++;
            continue;
        }
        size_t len = utf8_len(s + i, n - i);
        if (!len) { bytebuf_add(&b, "\\ufffd", 6); i++; continue; }
        bytebuf_add(&b, text + i, len);
        i += len;
    }
    bytebuf_add(&b, "\"", 1);
    if (b.oom) cJSON_AddStringToObject(o, key, "");
    else cJSON_AddRawToObject(o, key, b.data);
    bytebuf_free(&b);
}
