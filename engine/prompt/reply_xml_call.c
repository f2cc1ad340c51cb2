/* reply_xml_call: Qwen3-Coder's XML tool call to a name and JSON arguments (reply_xml_call.h). */
#include "reply_xml_call.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *find(const char *s, const char *end, const char *m) {
    return memmem(s, (size_t)(end - s), m, strlen(m));
}

/* The schema's types for a parameter (bit set), 0 when it has none. */
enum { T_BOOL = 1, T_INT = 2, T_NUM = 4, T_ARR = 8, T_OBJ = 16, T_STR = 32, T_OTHER = 64 };

static unsigned type_bit(const cJSON *one) {
    if (!cJSON_IsString(one)) return T_OTHER;
    const char *s = one->valuestring;
    return !strcmp(s, "boolean") ? T_BOOL : !strcmp(s, "integer") ? T_INT : !strcmp(s, "number") ? T_NUM
         : !strcmp(s, "array") ? T_ARR : !strcmp(s, "object") ? T_OBJ : !strcmp(s, "string") ? T_STR : T_OTHER;
}

static unsigned type_bits(const cJSON *t) {
    if (cJSON_IsString(t)) return type_bit(t);
    unsigned bits = 0;
    for (const cJSON *c = cJSON_IsArray(t) ? t->child : NULL; c; c = c->next) bits |= type_bit(c);
    return bits;
}

static int count_types(const cJSON *t) {
    if (cJSON_IsString(t)) return 1;
    return cJSON_IsArray(t) ? cJSON_GetArraySize(t) : 0;
}

/* The types of parameter key of function name in the tools, and how many were named. */
static unsigned param_types(const cJSON *tools, const char *name, const char *key, int *n_types) {
    *n_types = 0;
    for (const cJSON *t = cJSON_IsArray(tools) ? tools->child : NULL; t; t = t->next) {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
        const cJSON *fname = cJSON_GetObjectItemCaseSensitive(fn, "name");
        if (!cJSON_IsString(fname) || strcmp(fname->valuestring, name)) continue;
        const cJSON *props = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(fn, "parameters"), "properties");
        const cJSON *p = cJSON_IsObject(props) ? cJSON_GetObjectItemCaseSensitive(props, key) : NULL;
        if (!cJSON_IsObject(p)) return 0;
        const cJSON *any = cJSON_GetObjectItemCaseSensitive(p, "anyOf");
        if (cJSON_IsArray(any) && any->child) {
            unsigned bits = 0;
            for (const cJSON *a = any->child; a; a = a->next) {
                const cJSON *at = cJSON_GetObjectItemCaseSensitive(a, "type");
                bits |= type_bits(at);
                *n_types += count_types(at);
            }
            return bits;
        }
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(p, "type");
        *n_types = count_types(type);
        return type_bits(type);
    }
    return 0;
}

/* Go's strconv.ParseInt(s, 10, 64) succeeds: an optional sign and decimal digits, in range. */
static bool parse_int(const char *s, long long *v) {
    const char *p = s + (*s == '+' || *s == '-');
    if (!*p) return false;
    for (const char *q = p; *q; q++) if (!isdigit((unsigned char)*q)) return false;
    errno = 0;
    *v = strtoll(s, NULL, 10);
    return errno == 0;
}

static bool parse_float(const char *s, double *v) {
    if (!*s || isspace((unsigned char)*s)) return false;
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return !*end && isfinite(*v) && !(s[0] == '0' && (s[1] == 'x' || s[1] == 'X'));
}

/* The value as Ollama's parseValue types it. */
static cJSON *typed_value(const char *raw, unsigned bits, int n_types) {
    if (!strcasecmp(raw, "null")) return cJSON_CreateNull();
    if (!bits && !n_types) return cJSON_CreateString(raw);
    if (bits & T_BOOL) {
        if (!strcasecmp(raw, "true")) return cJSON_CreateTrue();
        if (!strcasecmp(raw, "false")) return cJSON_CreateFalse();
        if (n_types == 1) return cJSON_CreateFalse();
    }
    if (bits & T_INT) {
        long long v;
        if (parse_int(raw, &v)) return cJSON_CreateNumber((double)v);
        if (n_types == 1) return cJSON_CreateString(raw);
    }
    if (bits & T_NUM) {
        double v;
        if (parse_float(raw, &v)) return cJSON_CreateNumber(v);
        if (n_types == 1) return cJSON_CreateString(raw);
    }
    if (bits & T_ARR) {
        cJSON *j = cJSON_ParseWithOpts(raw, NULL, true);
        if (cJSON_IsArray(j)) return j;
        cJSON_Delete(j);
        if (n_types == 1) return cJSON_CreateString(raw);
    }
    if (bits & T_OBJ) {
        cJSON *j = cJSON_ParseWithOpts(raw, NULL, true);
        if (cJSON_IsObject(j)) return j;
        cJSON_Delete(j);
        if (n_types == 1) return cJSON_CreateString(raw);
    }
    return cJSON_CreateString(raw);
}

char *xml_call_parse(const char *text, size_t n, const char *tools_json, char **name, int *oom) {
    static const char FN[] = "<function=", FN_END[] = "</function>", PAR[] = "<parameter=", PAR_END[] = "</parameter>";
    *name = NULL;
    const char *s = text, *end = text + n;
    while (s < end && isspace((unsigned char)*s)) s++;
    if ((size_t)(end - s) < strlen(FN) || memcmp(s, FN, strlen(FN))) return NULL;
    s += strlen(FN);
    const char *gt = memchr(s, '>', (size_t)(end - s));
    const char *fn_end = find(s, end, FN_END);
    if (!gt || gt == s || !fn_end || fn_end < gt) return NULL;
    cJSON *tools = tools_json ? cJSON_Parse(tools_json) : NULL;
    cJSON *args = cJSON_CreateObject();
    char *fname = strndup(s, (size_t)(gt - s));
    bool ok = args && fname, bad = false;
    for (s = gt + 1; ok && !bad;) {
        const char *p = find(s, fn_end, PAR);
        if (!p) break;
        const char *k = p + strlen(PAR), *kgt = memchr(k, '>', (size_t)(fn_end - k));
        const char *close = kgt ? find(kgt, fn_end, PAR_END) : NULL;
        if (!kgt || kgt == k || !close) { bad = true; break; }
        const char *v = kgt + 1, *ve = close;
        if (v < ve && *v == '\n') v++;
        if (ve > v && ve[-1] == '\n') ve--;
        char *key = strndup(k, (size_t)(kgt - k)), *raw = strndup(v, (size_t)(ve - v));
        int n_types = 0;
        unsigned bits = key ? param_types(tools, fname, key, &n_types) : 0;
        cJSON *val = key && raw ? typed_value(raw, bits, n_types) : NULL;
        if (!val) ok = false;
        else if (cJSON_GetObjectItemCaseSensitive(args, key)) cJSON_ReplaceItemInObjectCaseSensitive(args, key, val);
        else cJSON_AddItemToObject(args, key, val);
        free(key);
        free(raw);
        s = close + strlen(PAR_END);
    }
    char *out = ok && !bad ? cJSON_PrintUnformatted(args) : NULL;
    if (!ok || (!bad && !out)) *oom = 1;
    cJSON_Delete(args);
    cJSON_Delete(tools);
    if (!out) { free(fname); return NULL; }
    *name = fname;
    return out;
}
