/* tokenizer_heap: the priority queue of adjacent-pair merges shared by the SPM and BPE
 * encoders (tokenizer_impl.h). */
#include <stdlib.h>

#include "tokenizer_impl.h"

static bool before(const tok_bigram *a, const tok_bigram *b) {
    return a->priority > b->priority || (a->priority == b->priority && a->left < b->left);
}

bool tok_heap_push(tok_bigram_heap *h, tok_bigram b) {
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        tok_bigram *v = realloc(h->v, cap * sizeof(*v));
        if (!v) return false;
        h->v = v;
        h->cap = cap;
    }
    size_t i = h->n++;
    h->v[i] = b;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!before(&h->v[i], &h->v[p])) break;
        tok_bigram tmp = h->v[i];
        h->v[i] = h->v[p];
        h->v[p] = tmp;
        i = p;
    }
    return true;
}

tok_bigram tok_heap_pop(tok_bigram_heap *h) {
    tok_bigram top = h->v[0];
    h->v[0] = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, best = i;
        if (l < h->n && before(&h->v[l], &h->v[best])) best = l;
        if (r < h->n && before(&h->v[r], &h->v[best])) best = r;
        if (best == i) break;
        tok_bigram tmp = h->v[i];
        h->v[i] = h->v[best];
        h->v[best] = tmp;
        i = best;
    }
    return top;
}
