/* str_set: a set of NUL-terminated strings (borrowed pointers) under the keyed hash: add and
 * lookup in expected O(1), so checks of membership and duplicates over request-sized lists
 * (a JSON schema's "required", its "properties") stay linear in the list. */
#ifndef ANVIL_STR_SET_H
#define ANVIL_STR_SET_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char **slots;   /* NULL = empty; the strings are the caller's and must outlive the set */
    uint64_t *hashes;
    size_t cap, n;        /* cap: a power of two, at least twice n */
} str_set;

/* An empty set sized for about n strings; -1 (error set) when out of memory. */
int str_set_init(str_set *s, size_t n);
void str_set_free(str_set *s);
/* 1 if added, 0 if already present, -1 (error set) when out of memory. */
int str_set_add(str_set *s, const char *str);
bool str_set_has(const str_set *s, const char *str);
#endif
