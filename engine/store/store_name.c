/* store_name: model names ([host/][namespace/]model[:tag], Ollama's rules) — parsing,
 * validation (a name can never reach outside the store's manifest tree) and the short
 * display form. */
#include "store.h"

#include <stdio.h>
#include <string.h>

#include "error.h"

#define HOST_MAX 255
#define PART_MAX 80

/* The name as it can be shown in a one-line message: control characters become '?',
 * long names are cut. */
static void printable(const char *text, char *buf, size_t cap) {
    size_t j = 0;
    for (size_t i = 0; text[i] && j + 4 < cap; i++) {
        unsigned char c = (unsigned char)text[i];
        buf[j++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    if (text[0] && j + 4 >= cap && strlen(text) > j) { buf[j++] = '.'; buf[j++] = '.'; buf[j++] = '.'; }
    buf[j] = 0;
}

static int bad(const char *text, const char *why) {
    char shown[96];
    printable(text, shown, sizeof shown);
    anv_set_error("invalid model name '%s': %s", shown, why);
    return -1;
}

static bool part_char_ok(char c, bool host) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == '-' || (host && c == ':');
}

/* Checks one part (s, n bytes) and copies it into dst. */
static int take_part(const char *text, const char *what, const char *s, size_t n, bool host,
                     char *dst, size_t cap) {
    char why[160];
    if (n == 0) { snprintf(why, sizeof why, "the %s is empty", what); return bad(text, why); }
    if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
        return bad(text, "'.' and '..' are not allowed as parts");
    size_t max = host ? HOST_MAX : PART_MAX;
    if (n > max || n >= cap) {
        snprintf(why, sizeof why, "the %s is longer than %zu characters", what, max);
        return bad(text, why);
    }
    if (s[0] == '.' || s[0] == '-') {
        snprintf(why, sizeof why, "the %s starts with '%c'", what, s[0]);
        return bad(text, why);
    }
    for (size_t i = 0; i < n; i++) {
        if (!part_char_ok(s[i], host)) {
            snprintf(why, sizeof why, "the %s contains '%c' (allowed: letters, digits, '.', '_', '-'%s)",
                     what, s[i], host ? ", ':' for a port" : "");
            return bad(text, why);
        }
    }
    memcpy(dst, s, n);
    dst[n] = 0;
    return 0;
}

int store_name_parse(const char *text, store_name *out) {
    memset(out, 0, sizeof *out);
    if (!text || !*text) { anv_set_error("invalid model name: the name is empty"); return -1; }
    size_t len = strlen(text);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c < 0x20 || c == 0x7f) return bad(text, "it contains a control character");
        if (c == '\\') return bad(text, "it contains a backslash");
    }
    if (len > HOST_MAX + 3 * PART_MAX + 4) return bad(text, "it is too long");
    if (text[0] == '/') return bad(text, "an absolute path is not a model name (no such file either)");
    const char *last_slash = strrchr(text, '/');
    const char *tail = last_slash ? last_slash + 1 : text;
    const char *colon = strchr(tail, ':');
    size_t base_len = colon ? (size_t)(colon - text) : len;
    if (colon) {
        if (take_part(text, "tag", colon + 1, strlen(colon + 1), false, out->tag, sizeof out->tag)) return -1;
    } else {
        strcpy(out->tag, STORE_DEFAULT_TAG);
    }
    /* split the part before the tag on '/' */
    const char *parts[4];
    size_t lens[4];
    int n = 0;
    const char *p = text, *end = text + base_len;
    for (;;) {
        const char *slash = memchr(p, '/', (size_t)(end - p));
        const char *stop = slash ? slash : end;
        if (n == 3) return bad(text, "too many '/' (at most host/namespace/model:tag)");
        parts[n] = p;
        lens[n++] = (size_t)(stop - p);
        if (!slash) break;
        p = slash + 1;
    }
    strcpy(out->host, STORE_DEFAULT_HOST);
    strcpy(out->ns, STORE_DEFAULT_NAMESPACE);
    int i = 0;
    if (n == 3 && take_part(text, "host", parts[i], lens[i], true, out->host, sizeof out->host)) return -1;
    if (n == 3) i++;
    if (n >= 2 && take_part(text, "namespace", parts[i], lens[i], false, out->ns, sizeof out->ns)) return -1;
    if (n >= 2) i++;
    if (take_part(text, "model", parts[i], lens[i], false, out->model, sizeof out->model)) return -1;
    return 0;
}

void store_name_display(const store_name *n, char *buf, size_t cap) {
    if (!cap) return;
    if (!strcmp(n->host, STORE_DEFAULT_HOST) && !strcmp(n->ns, STORE_DEFAULT_NAMESPACE))
        snprintf(buf, cap, "%s:%s", n->model, n->tag);
    else if (!strcmp(n->host, STORE_DEFAULT_HOST))
        snprintf(buf, cap, "%s/%s:%s", n->ns, n->model, n->tag);
    else
        snprintf(buf, cap, "%s/%s/%s:%s", n->host, n->ns, n->model, n->tag);
}
