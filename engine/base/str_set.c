/* str_set: open addressing (linear probing) over anv_hash of each string; see str_set.h. */
#include "str_set.h"
#include <stdlib.h>
#include <string.h>
#include "error.h"
#include "hash.h"

static int alloc_slots(str_set *s, size_t cap) {
    s->slots = calloc(cap, sizeof *s->slots);
    s->hashes = calloc(cap, sizeof *s->hashes);
    if (!s->slots || !s->hashes) {
        free(s->slots);
        free(s->hashes);
        s->slots = NULL;
        s->hashes = NULL;
        anv_set_error("out of memory");
        return -1;
    }
    s->cap = cap;
    return 0;
}

int str_set_init(str_set *s, size_t n) {
    size_t cap = 16;
    while (cap < 2 * n + 2) cap *= 2;
    s->n = 0;
    return alloc_slots(s, cap);
}

void str_set_free(str_set *s) {
    free(s->slots);
    free(s->hashes);
    memset(s, 0, sizeof *s);
}

/* The slot holding str, or the empty slot where it would go. */
static size_t find_slot(const str_set *s, const char *str, uint64_t h) {
    size_t i = (size_t)h & (s->cap - 1);
    while (s->slots[i] && !(s->hashes[i] == h && strcmp(s->slots[i], str) == 0)) i = (i + 1) & (s->cap - 1);
    return i;
}

bool str_set_has(const str_set *s, const char *str) {
    if (!s->cap) return false;
    return s->slots[find_slot(s, str, anv_hash(str, strlen(str)))] != NULL;
}

int str_set_add(str_set *s, const char *str) {
    if (2 * (s->n + 1) > s->cap) {   /* grow: rehash into twice the slots */
        str_set old = *s;
        if (alloc_slots(s, old.cap ? 2 * old.cap : 16) != 0) { *s = old; return -1; }
        for (size_t i = 0; i < old.cap; i++)
            if (old.slots[i]) {
                const size_t j = find_slot(s, old.slots[i], old.hashes[i]);
                s->slots[j] = old.slots[i];
                s->hashes[j] = old.hashes[i];
            }
        free(old.slots);
        free(old.hashes);
    }
    const uint64_t h = anv_hash(str, strlen(str));
    const size_t i = find_slot(s, str, h);
    if (s->slots[i]) return 0;
    s->slots[i] = str;
    s->hashes[i] = h;
    s->n++;
    return 1;
}
