/* stop_strings: ends generation at a stop string ("PARAMETER stop", the API's "stop")
 * while streaming: text that might be the start of a stop string is held back until
 * it is known not to be one, and the stop string itself is never emitted. */
#ifndef ANVIL_STOP_STRINGS_H
#define ANVIL_STOP_STRINGS_H
#include <stdbool.h>

typedef struct stop_matcher stop_matcher;

/* Copies the n strings (empty ones are ignored). NULL only when out of memory. */
stop_matcher *stop_matcher_new(char *const *stops, int n);
void stop_matcher_free(stop_matcher *m);
/* Feeds newly generated text. *emit (owned by the matcher, valid until the next call)
 * gets *emit_len bytes that are safe to show. Returns true once a stop string has
 * been seen: *emit then holds the text before it, and generation should end. */
bool stop_matcher_feed(stop_matcher *m, const char *text, int len, const char **emit, int *emit_len);
/* The stop string that ended generation (the matcher's copy), NULL while none has. */
const char *stop_matcher_hit(const stop_matcher *m);
/* At the end of generation: the held-back text (no stop string matched). */
void stop_matcher_flush(stop_matcher *m, const char **emit, int *emit_len);
#endif
