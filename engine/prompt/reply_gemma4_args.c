/* reply_gemma4_args: the arguments of a Gemma 4 tool call ({key:<|"|>text<|"|>,n:2,..}) as
 * JSON (reply_gemma4.h), and the repairs Ollama's gemma4 parser tries when they do not parse,
 * in its order:
 *   1. single-quoted values ('..') become <|"|>..<|"|> (a stray <|"|> right after is dropped),
 *      an odd number of <|"|> gets its last one (before a final } or ]), and when either
 *      changed something a missing final } is added;
 *   2. only with the request's tool schema: the first string parameter whose value is bare
 *      text is wrapped in <|"|> up to the next known key (or the end), then as 1 with the }.
 * Each candidate must then convert and parse as a JSON object. */
#include "reply_gemma4.h"

#include "bytebuf.h"
#include "chat_json.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char Q[] = "<|\"|>";
enum { QN = 5 };

static bool is_space(char c) { return isspace((unsigned char)c) != 0; }
static bool at_q(const char *s, size_t n, size_t i) { return n - i >= QN && !memcmp(s + i, Q, QN); }
static bool key_char(char c) { return isalnum((unsigned char)c) || c == '_' || (unsigned char)c >= 0x80; }
static size_t skip_space(const char *s, size_t n, size_t i) {
    while (i < n && is_space(s[i])) i++;
    return i;
}
static size_t trim_right(const char *s, size_t n) {
    while (n && is_space(s[n - 1])) n--;
    return n;
}

/* The end (one past the closing quote) of a JSON string starting at s[i] == '"'; 0 if unclosed. */
static size_t json_string_end(const char *s, size_t n, size_t i) {
    bool esc = false;
    for (size_t j = i + 1; j < n; j++) {
        if (s[j] == '"' && !esc) return j + 1;
        esc = s[j] == '\\' && !esc;
    }
    return 0;
}

/* Gemma 4's argument text as JSON text: <|"|>..<|"|> strings as JSON strings, bare keys
 * after { or , quoted, JSON strings and everything else as they are. */
static void args_as_json(bytebuf *out, const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        if (at_q(s, n, i)) {
            const char *end = memmem(s + i + QN, n - i - QN, Q, QN);
            if (!end) { bytebuf_add(out, s + i, n - i); return; }
            char *inner = strndup(s + i + QN, (size_t)(end - (s + i + QN)));
            if (!inner) { out->oom = true; return; }
            chat_put_json_string(out, inner);
            free(inner);
            i = (size_t)(end - s) + QN;
            continue;
        }
        if (s[i] == '"') {   /* a JSON string: copied whole */
            size_t e = json_string_end(s, n, i);
            if (e) { bytebuf_add(out, s + i, e - i); i = e; continue; }
        }
        bytebuf_add(out, s + i, 1);
        if (s[i] != '{' && s[i] != ',') { i++; continue; }
        i++;
        size_t k = skip_space(s, n, i);
        bytebuf_add(out, s + i, k - i);
        i = k;
        while (k < n && key_char(s[k])) k++;
        if (k > i && k < n && s[k] == ':') {
            bytebuf_add(out, "\"", 1);
            bytebuf_add(out, s + i, k - i);
            bytebuf_add(out, "\":", 2);
            i = k + 1;
        }
    }
}

static char *object_text(const char *s, size_t n) {
    bytebuf j = {0};
    args_as_json(&j, s, n);
    bytebuf_add(&j, "", 0);
    cJSON *v = j.oom ? NULL : cJSON_ParseWithOpts(j.data, NULL, true);
    bytebuf_free(&j);
    char *out = cJSON_IsObject(v) ? cJSON_PrintUnformatted(v) : NULL;
    cJSON_Delete(v);
    return out;
}

/* A '..' value: its text and the index after the closing quote; false if unclosed. */
static bool single_quoted(const char *s, size_t n, size_t start, bytebuf *val, size_t *end) {
    bool esc = false;
    for (size_t i = start + 1; i < n; i++) {
        if (s[i] == '\'' && !esc) { *end = i + 1; return true; }
        bytebuf_add(val, s + i, 1);
        esc = s[i] == '\\' && !esc;
    }
    return false;
}

/* Repair 1a: single-quoted values after ':' as <|"|> strings. */
static void repair_single_quotes(bytebuf *out, const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        if (at_q(s, n, i)) {
            const char *end = memmem(s + i + QN, n - i - QN, Q, QN);
            if (!end) { bytebuf_add(out, s + i, n - i); return; }
            size_t e = (size_t)(end - s) + QN;
            bytebuf_add(out, s + i, e - i);
            i = e;
            continue;
        }
        if (s[i] == '"') {
            size_t e = json_string_end(s, n, i);
            if (e) { bytebuf_add(out, s + i, e - i); i = e; continue; }
        }
        bytebuf_add(out, s + i, 1);
        if (s[i++] != ':') continue;
        size_t k = skip_space(s, n, i);
        bytebuf_add(out, s + i, k - i);
        i = k;
        if (i >= n || s[i] != '\'') continue;
        bytebuf val = {0};
        size_t end;
        if (single_quoted(s, n, i, &val, &end)) {
            bytebuf_add(out, Q, QN);
            bytebuf_add(out, val.data ? val.data : "", val.len);
            bytebuf_add(out, Q, QN);
            i = end;
            if (at_q(s, n, i)) i += QN;
        }
        if (val.oom) out->oom = true;
        bytebuf_free(&val);
    }
}

/* Repair 1b: an odd number of <|"|> gets one more, before a final } or ]. */
static void repair_delimiter(bytebuf *out, const char *s, size_t n) {
    size_t count = 0;
    for (const char *p = s; (p = memmem(p, (size_t)(s + n - p), Q, QN)); p += QN) count++;
    if (count % 2 == 0) { bytebuf_add(out, s, n); return; }
    size_t at = trim_right(s, n);
    if (at && (s[at - 1] == '}' || s[at - 1] == ']')) at--;
    bytebuf_add(out, s, at);
    bytebuf_add(out, Q, QN);
    bytebuf_add(out, s + at, n - at);
}

/* Repair 1c: an object that opens without closing gets its }. */
static void repair_object_close(bytebuf *out, const char *s, size_t n) {
    size_t start = skip_space(s, n, 0), end = trim_right(s, n);
    if (start >= n || s[start] != '{' || (end && s[end - 1] == '}')) { bytebuf_add(out, s, n); return; }
    bytebuf_add(out, s, end);
    bytebuf_add(out, "}", 1);
    bytebuf_add(out, s + end, n - end);
}

/* One candidate (repair 1 on s) parsed; NULL if it does not parse. */
static char *try_candidate(const char *s, size_t n, bool allow_close) {
    bytebuf a = {0}, b = {0}, c = {0};
    repair_single_quotes(&a, s, n);
    bytebuf_add(&a, "", 0);
    repair_delimiter(&b, a.data, a.len);
    bytebuf_add(&b, "", 0);
    const bool changed = b.len != n || memcmp(b.data, s, n);
    if (allow_close || changed) repair_object_close(&c, b.data, b.len);
    else bytebuf_add(&c, b.data, b.len);
    bytebuf_add(&c, "", 0);
    char *out = a.oom || b.oom || c.oom ? NULL : object_text(c.data, c.len);
    bytebuf_free(&a);
    bytebuf_free(&b);
    bytebuf_free(&c);
    return out;
}

/* The tool's parameters.properties object, NULL if the tools do not name it. */
static const cJSON *tool_properties(const cJSON *tools, const char *name) {
    for (const cJSON *t = cJSON_IsArray(tools) ? tools->child : NULL; t; t = t->next) {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
        const cJSON *fname = cJSON_GetObjectItemCaseSensitive(fn, "name");
        if (!cJSON_IsString(fname) || strcmp(fname->valuestring, name)) continue;
        const cJSON *props = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(fn, "parameters"),
                                                              "properties");
        return cJSON_IsObject(props) ? props : NULL;
    }
    return NULL;
}

static bool accepts_string(const cJSON *prop) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(prop, "type");
    if (cJSON_IsString(t) && !strcasecmp(t->valuestring, "string")) return true;
    for (const cJSON *c = cJSON_IsArray(t) ? t->child : NULL; c; c = c->next)
        if (cJSON_IsString(c) && !strcasecmp(c->valuestring, "string")) return true;
    const cJSON *any = cJSON_GetObjectItemCaseSensitive(prop, "anyOf");
    for (const cJSON *a = cJSON_IsArray(any) ? any->child : NULL; a; a = a->next)
        if (accepts_string(a)) return true;
    return false;
}

/* Where key's value starts (after "key:" following { or ,), from `from`; false if nowhere. */
static bool value_start(const char *s, size_t n, const char *key, size_t from, size_t *at) {
    const size_t kl = strlen(key);
    for (size_t i = from; i < n; i++) {
        if (at_q(s, n, i)) {
            const char *end = memmem(s + i + QN, n - i - QN, Q, QN);
            if (!end) return false;
            i = (size_t)(end - s) + QN - 1;
            continue;
        }
        if (s[i] == '"') {
            size_t e = json_string_end(s, n, i);
            if (e) { i = e - 1; continue; }
        }
        if (s[i] != '{' && s[i] != ',') continue;
        size_t k = skip_space(s, n, i + 1);
        if (n - k < kl || memcmp(s + k, key, kl)) continue;
        size_t colon = skip_space(s, n, k + kl);
        if (colon < n && s[colon] == ':') { *at = colon + 1; return true; }
    }
    return false;
}

static bool starts_structured(const char *s, size_t n, size_t i) {
    if (i >= n) return false;
    if (at_q(s, n, i)) return true;
    char c = s[i];
    return c == '\'' || c == '"' || c == '{' || c == '[' || c == '-' || isdigit((unsigned char)c) || c == 't' ||
           c == 'f' || c == 'n';
}

/* The end of a bare text value: a comma before a key the schema knows, else a final }, else the end. */
static size_t raw_value_end(const char *s, size_t n, size_t start, const cJSON *props) {
    for (size_t i = start; i < n; i++) {
        if (s[i] != ',') continue;
        size_t k = skip_space(s, n, i + 1), e = k;
        while (e < n && key_char(s[e])) e++;
        if (e == k) continue;
        size_t colon = skip_space(s, n, e);
        if (colon < n && s[colon] == ':') {
            char *key = strndup(s + k, e - k);
            bool known = key && cJSON_GetObjectItemCaseSensitive(props, key);
            free(key);
            if (known) return i;
        }
    }
    size_t end = trim_right(s, n);
    return end > start && s[end - 1] == '}' ? end - 1 : n;
}

/* Repair 2: the first string parameter (schema order) with a bare text value, wrapped. */
static bool repair_raw_string(bytebuf *out, const char *s, size_t n, const cJSON *props) {
    for (const cJSON *p = props->child; p; p = p->next) {
        if (!accepts_string(p)) continue;
        for (size_t from = 0; from < n;) {
            size_t v;
            if (!value_start(s, n, p->string, from, &v)) break;
            if (starts_structured(s, n, skip_space(s, n, v))) { from = v; continue; }
            size_t e = raw_value_end(s, n, v, props);
            bytebuf_add(out, s, v);
            bytebuf_add(out, Q, QN);
            bytebuf_add(out, s + v, e - v);
            bytebuf_add(out, Q, QN);
            bytebuf_add(out, s + e, n - e);
            return true;
        }
    }
    return false;
}

char *gemma4_args_to_json(const char *s, size_t n, const char *tool_name, const cJSON *tools) {
    char *out = object_text(s, n);
    if (!out) out = try_candidate(s, n, false);
    const cJSON *props = out || !tool_name ? NULL : tool_properties(tools, tool_name);
    if (props) {
        bytebuf r = {0};
        if (repair_raw_string(&r, s, n, props) && !r.oom) out = try_candidate(r.data, r.len, true);
        bytebuf_free(&r);
    }
    return out;
}
