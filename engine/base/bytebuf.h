/* bytebuf: a growable byte buffer, always NUL-terminated once anything was added (HTTP
 * bodies and replies, JSON text, Prometheus output). After an allocation failure it
 * stays failed (oom) and ignores further additions, so callers check once at the end. */
#ifndef ANVIL_BYTEBUF_H
#define ANVIL_BYTEBUF_H
#include <stdbool.h>
#include <stddef.h>

typedef struct {
    char *data;   /* NULL until the first addition */
    size_t len, cap;
    bool oom;
} bytebuf;

/* Appends n bytes; false when out of memory (then b->oom stays set). */
bool bytebuf_add(bytebuf *b, const void *p, size_t n);
bool bytebuf_printf(bytebuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The text, "" when nothing was added (never NULL; not owned). */
const char *bytebuf_str(const bytebuf *b);
void bytebuf_free(bytebuf *b);
#endif
