/* tokenizer_spm: SentencePiece-style encoding as llama.cpp's llm_tokenizer_spm: the text
 * (spaces already escaped as U+2581) is split into UTF-8 characters, then the adjacent pair
 * whose concatenation is the highest-scoring vocabulary piece is merged again and again
 * (ties: leftmost first); pieces that are not in the vocabulary fall back to <0xNN> bytes. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer_impl.h"

static bool try_add_bigram(const struct tokenizer *t, const char *text, const tok_symbol *sym, int left, int right, tok_bigram_heap *h) {
    if (left < 0 || right < 0) return true;
    size_t n = sym[left].n + sym[right].n;
    int32_t id = tok_lookup(t, text + sym[left].off, n);
    if (id < 0) return true;
    return tok_heap_push(h, (tok_bigram){left, right, t->score[id], n});
}

/* llama.cpp's byte_to_token for SPM: "<0xNN>", else the byte itself as a piece. */
static int32_t byte_token(const struct tokenizer *t, unsigned char c) {
    static const char hex[] = "0123456789ABCDEF";
    char buf[6] = {'<', '0', 'x', hex[c >> 4], hex[c & 15], '>'};
    int32_t id = tok_lookup(t, buf, 6);
    if (id < 0) id = tok_lookup(t, (const char *)&c, 1);
    if (id < 0) id = t->unk; /* llama.cpp aborts here; a vocabulary without byte pieces */
    return id;
}

static size_t utf8_len(unsigned char c) {
    static const size_t lookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return lookup[c >> 4];
}

bool tok_spm_encode(const struct tokenizer *t, const char *text, size_t len, tok_vec *out) {
    if (len == 0) return true;
    if (len > (size_t)INT32_MAX) return false;
    tok_symbol *sym = malloc(len * sizeof(*sym));
    tok_bigram_heap heap = {0};
    if (!sym) return false;
    int n_sym = 0;
    for (size_t off = 0; off < len;) {
        size_t n = utf8_len((unsigned char)text[off]);
        if (n > len - off) n = len - off;
        sym[n_sym] = (tok_symbol){n_sym - 1, off + n == len ? -1 : n_sym + 1, off, n};
        off += n;
        n_sym++;
    }
    bool ok = true;
    for (int i = 1; i < n_sym && ok; i++) ok = try_add_bigram(t, text, sym, i - 1, i, &heap);
    while (ok && heap.n > 0) {
        tok_bigram b = tok_heap_pop(&heap);
        tok_symbol *l = &sym[b.left], *r = &sym[b.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != b.size) continue; /* stale */
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) sym[r->next].prev = b.left;
        ok = try_add_bigram(t, text, sym, l->prev, b.left, &heap) && try_add_bigram(t, text, sym, b.left, l->next, &heap);
    }
    for (int i = 0; ok && i != -1; i = sym[i].next) {
        int32_t id = tok_lookup(t, text + sym[i].off, sym[i].n);
        if (id >= 0) {
            ok = tok_vec_push(out, id);
            continue;
        }
        /* A piece that formed no token is a single character: emit its bytes. */
        for (size_t j = 0; j < sym[i].n && ok; j++) {
            int32_t bid = byte_token(t, (unsigned char)text[sym[i].off + j]);
            if (bid >= 0) ok = tok_vec_push(out, bid);
        }
    }
    free(heap.v);
    free(sym);
    return ok && !out->oom;
}
