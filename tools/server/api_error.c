/* api_error: Ollama's, OpenAI's and Anthropic's error objects (see api_error.h). */
#include "api_error.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (1..4), 0 if none (overlong forms, surrogates
 * and code points above U+10FFFF are invalid). */
static int utf8_seq(const unsigned char *s) {
    unsigned c = s[0];
    if (c < 0x80) return 1;
    int n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (!n) return 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    if (n == 3 && ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0))) return 0;
    if (n == 4 && ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] >= 0x90))) return 0;
    return n;
}

/* The message with every byte that is not valid UTF-8 replaced by U+FFFD (a request's
 * bytes echoed into an error must not make the JSON reply invalid); malloc'd or NULL. */
static char *utf8_clean(const char *msg) {
    if (!msg) return NULL;
    size_t n = strlen(msg);
    char *out = malloc(3 * n + 1);
    if (!out) return NULL;
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)msg; *p;) {
        int k = utf8_seq(p);
        if (k) { memcpy(out + o, p, (size_t)k); o += (size_t)k; p += k; }
        else { memcpy(out + o, "\xef\xbf\xbd", 3); o += 3; p++; }
    }
    out[o] = 0;
    return out;
}

/* cJSON_AddStringToObject with the text made valid UTF-8 first. */
static void add_text(cJSON *o, const char *key, const char *text) {
    char *t = utf8_clean(text);
    cJSON_AddStringToObject(o, key, t ? t : "");
    free(t);
}

/* OpenAI's error type for an HTTP status. */
static const char *openai_type(int status) {
    switch (status) {
    case 400: case 413: return "invalid_request_error";
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    default: return "api_error";
    }
}

cJSON *api_error_ollama(const char *msg) {
    cJSON *o = cJSON_CreateObject();
    add_text(o, "error", msg);
    return o;
}

cJSON *api_error_openai(int status, const char *param, const char *msg) {
    cJSON *o = cJSON_CreateObject();
    cJSON *e = cJSON_AddObjectToObject(o, "error");
    add_text(e, "message", msg);
    cJSON_AddStringToObject(e, "type", openai_type(status));
    if (param) add_text(e, "param", param);
    else cJSON_AddNullToObject(e, "param");
    cJSON_AddNullToObject(e, "code");
    return o;
}

cJSON *api_error_object(bool openai, int status, const char *param, const char *msg) {
    return openai ? api_error_openai(status, param, msg) : api_error_ollama(msg);
}

/* Anthropic's error type for an HTTP status (its API reference's "Errors" table). */
static const char *anthropic_type(int status) {
    switch (status) {
    case 400: case 405: case 422: return "invalid_request_error";
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503: case 529: return "overloaded_error";
    default: return "api_error";
    }
}

cJSON *api_error_anthropic(int status, const char *msg) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "error");
    cJSON *e = cJSON_AddObjectToObject(o, "error");
    cJSON_AddStringToObject(e, "type", anthropic_type(status));
    add_text(e, "message", msg);
    return o;
}

api_family api_family_of_path(const char *path) {
    if (!strncmp(path, "/v1/messages", 12) && (!path[12] || path[12] == '/')) return API_ANTHROPIC;
    return !strncmp(path, "/v1/", 4) ? API_OPENAI : API_OLLAMA;
}

cJSON *api_error_for(api_family f, int status, const char *param, const char *msg) {
    if (f == API_ANTHROPIC) return api_error_anthropic(status, msg);
    return api_error_object(f == API_OPENAI, status, param, msg);
}
