/* bytebuf: growable NUL-terminated byte buffer. */
#include "bytebuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(bytebuf *b, size_t extra) {
    if (b->oom) return false;
    if (b->len + extra + 1 <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p) { b->oom = true; return false; }
    b->data = p;
    b->cap = cap;
    return true;
}

bool bytebuf_add(bytebuf *b, const void *p, size_t n) {
    if (!reserve(b, n)) return false;
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = 0;
    return true;
}

bool bytebuf_printf(bytebuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) { b->oom = true; return false; }
    if (!reserve(b, (size_t)n)) return false;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return true;
}

const char *bytebuf_str(const bytebuf *b) { return b->data ? b->data : ""; }

void bytebuf_free(bytebuf *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}
