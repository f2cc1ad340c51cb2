/* strset: a set of NUL-terminated strings (borrowed pointers) under the keyed hash: add and
 * lookup in expected O(1), so checks of membership and duplicates over request-sized lists
 * (a JSON schema's "required", its "properties") stay linear in the list. */
#ifndef ANVIL_STRSET_H
#define ANVIL_STRSET_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char **slots;   /* NULL = empty; the strings are the caller's and must outlive the set */
    uint64_t *hashes;
    size_t cap, n;        /* cap: a power of two, at least twice n */
} strset;

/* An empty set sized for about n strings; -1 (error set) when out of memory. */
int strset_init(strset *s, size_t n);
void strset_free(strset *s);
/* 1 if added, 0 if already present, -1 (error set) when out of memory. */
int strset_add(strset *s, const char *str);
bool strset_has(const strset *s, const char *str);
#endif
