/* tokenizer_bpe: GPT-2-style byte-level BPE as llama.cpp's llm_tokenizer_bpe: the text is
 * split into words by the pre-tokenizer of tokenizer.ggml.pre (tokenizer_pre.c names the
 * regexes, tokenizer_split.c runs them as llama.cpp does), each word's bytes are mapped to the
 * GPT-2 byte alphabet (or kept as raw UTF-8 for the SentencePiece-style families), and adjacent
 * symbols are merged by the rank of tokenizer.ggml.merges (lowest rank first, ties leftmost
 * first). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "gguf.h"
#include "hash.h"
#include "tokenizer_impl.h"

/* ---- merges: (first, second) -> rank ---- */

/* Both halves under the keyed hash, combined asymmetrically ((a, b) != (b, a)) and mixed
 * (the 64-bit finalizer of SplitMix64) so the low bits depend on both. */
static uint32_t pair_hash(const char *a, size_t an, const char *b, size_t bn) {
    uint64_t h = anv_hash(a, an) ^ (anv_hash(b, bn) * 0x9E3779B97F4A7C15ull);
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)(h ^ (h >> 31));
}

static bool merge_eq(const struct tokenizer *t, int32_t r, const char *a, size_t an, const char *b, size_t bn) {
    const char *m = t->merge_arena + t->merge_off[r];
    return t->merge_len1[r] == an && t->merge_len2[r] == bn && memcmp(m, a, an) == 0 && memcmp(m + an, b, bn) == 0;
}

static int32_t bpe_rank(const struct tokenizer *t, const char *a, size_t an, const char *b, size_t bn) {
    if (!t->merges.slots) return -1; /* no merges (Kimi K2) */
    uint32_t h = pair_hash(a, an, b, bn);
    for (uint32_t i = h & t->merges.mask;; i = (i + 1) & t->merges.mask) {
        int32_t r = t->merges.slots[i];
        if (r < 0) return -1;
        if (t->merges.hashes[i] == h && merge_eq(t, r, a, an, b, bn)) return r;
    }
}

static bool load_merges(struct tokenizer *t, const gguf_file *f) {
    const gguf_kv *kv = gguf_get_arr(f, "tokenizer.ggml.merges", GGUF_STRING);
    if (!kv) {
        if (!gguf_find(f, "tokenizer.ggml.merges")) anv_set_error("tokenizer: BPE model has no tokenizer.ggml.merges");
        return false;
    }
    if (kv->arr_len > (uint64_t)INT32_MAX / 4) {
        anv_set_error("tokenizer: too many merges (%llu)", (unsigned long long)kv->arr_len);
        return false;
    }
    int32_t n = (int32_t)kv->arr_len;
    uint64_t total = 1;
    for (int32_t i = 0; i < n; i++) total += kv->arr_strs[i].len;
    uint32_t cap = 16;
    while (cap < (uint32_t)n * 2u) cap *= 2;
    t->merge_arena = malloc(total);
    t->merge_off = malloc(((size_t)n + 1) * sizeof(uint64_t));
    t->merge_len1 = malloc(((size_t)n + 1) * sizeof(uint32_t));
    t->merge_len2 = malloc(((size_t)n + 1) * sizeof(uint32_t));
    t->merges.slots = malloc(cap * sizeof(int32_t));
    t->merges.hashes = malloc(cap * sizeof(uint32_t));
    if (!t->merge_arena || !t->merge_off || !t->merge_len1 || !t->merge_len2 || !t->merges.slots || !t->merges.hashes) {
        anv_set_error("tokenizer: out of memory");
        return false;
    }
    memset(t->merges.slots, 0xFF, cap * sizeof(int32_t));
    t->merges.mask = cap - 1;
    uint64_t off = 0;
    for (int32_t r = 0; r < n; r++) {
        gguf_str s = kv->arr_strs[r];
        /* "first second", split at the first space after the first byte; no space: both empty */
        const char *sp = s.len > 1 ? memchr(s.ptr + 1, ' ', s.len - 1) : NULL;
        size_t l1 = sp ? (size_t)(sp - s.ptr) : 0, l2 = sp ? s.len - l1 - 1 : 0;
        if (l1 > UINT32_MAX / 2 || l2 > UINT32_MAX / 2) {
            anv_set_error("tokenizer: merge %d is too long", r);
            return false;
        }
        t->merge_off[r] = off;
        t->merge_len1[r] = (uint32_t)l1;
        t->merge_len2[r] = (uint32_t)l2;
        if (sp) {
            memcpy(t->merge_arena + off, s.ptr, l1);
            memcpy(t->merge_arena + off + l1, sp + 1, l2);
        }
        off += l1 + l2;
        const char *m = t->merge_arena + t->merge_off[r];
        uint32_t h = pair_hash(m, l1, m + l1, l2);
        for (uint32_t i = h & t->merges.mask;; i = (i + 1) & t->merges.mask) {
            int32_t o = t->merges.slots[i];
            if (o < 0) {
                t->merges.slots[i] = r;
                t->merges.hashes[i] = h;
                break;
            }
            if (t->merges.hashes[i] == h && merge_eq(t, o, m, l1, m + l1, l2)) break; /* first rank wins */
        }
    }
    t->n_merges = n;
    return true;
}

bool tok_bpe_init(struct tokenizer *t, const gguf_file *f, const char *pre_name) {
    const tok_pre_name *info = tok_pre_find(pre_name);
    if (!info) {
        anv_set_error("tokenizer: unsupported pre-tokenizer '%s' (tokenizer.ggml.pre)", pre_name);
        return false;
    }
    const tok_pre_family *fam = tok_pre_family_of(info->pre);
    t->pre = info->pre;
    t->byte_encode = fam->byte_encode;
    t->ignore_merges = info->flags & TOK_PREF_IGNORE_MERGES;
    t->escape_whitespace = info->flags & TOK_PREF_ESCAPE_WHITESPACE;
    t->add_sep = info->flags & TOK_PREF_ADD_SEP;
    t->force_add_bos = info->flags & TOK_PREF_FORCE_BOS;
    if (info->flags & TOK_PREF_ADD_BOS) t->add_bos = true;
    if (info->flags & TOK_PREF_NO_CLEAN_SPACES) t->clean_spaces = false;
    if (info->flags & TOK_PREF_NO_BOS_ID) t->bos = -1;
    /* Kimi K2's vocabularies may come without merges (llama.cpp then merges nothing) */
    if (!(t->pre == TOK_PRE_KIMI_K2 && !gguf_find(f, "tokenizer.ggml.merges")) && !load_merges(t, f)) return false;
    if (!tok_split_compile(t, fam)) return false;

    /* GPT-2 byte alphabet: printable Latin-1 bytes map to themselves, the rest to U+0100.. */
    int n = 0;
    for (int c = 0; c < 324; c++) t->cpt_byte[c] = -1;
    for (int b = 0; b < 256; b++) {
        bool self = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        uint32_t cpt = self ? (uint32_t)b : 256u + (uint32_t)n++;
        char u[4];
        int k = tok_utf8_encode(cpt, u);
        memcpy(t->byte_utf8[b], u, (size_t)k);
        t->byte_utf8_len[b] = (uint8_t)k;
        t->cpt_byte[cpt] = (int16_t)b;
    }
    return true;
}

void tok_bpe_free(struct tokenizer *t) {
    tok_split_free(t);
    free(t->merge_arena);
    free(t->merge_off);
    free(t->merge_len1);
    free(t->merge_len2);
    free(t->merges.slots);
    free(t->merges.hashes);
}

/* ---- merging ---- */

static bool add_bigram(const struct tokenizer *t, const char *w, const tok_symbol *sym, int left, int right, tok_bigram_heap *h) {
    if (left < 0 || right < 0) return true;
    int32_t rank = bpe_rank(t, w + sym[left].off, sym[left].n, w + sym[right].off, sym[right].n);
    if (rank < 0) return true;
    return tok_heap_push(h, (tok_bigram){left, right, -(float)rank, sym[left].n + sym[right].n} /* ranks < 2^24: exact */);
}

static size_t utf8_len(unsigned char c) {
    static const size_t lookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return lookup[c >> 4];
}

/* Merges one (byte-encoded or raw) word and appends its tokens. */
static bool encode_word(const struct tokenizer *t, const char *w, size_t n, tok_symbol *sym, tok_bigram_heap *heap, tok_vec *out) {
    if (t->ignore_merges) {
        int32_t id = tok_lookup(t, w, n);
        if (id >= 0) return tok_vec_push(out, id);
    }
    if (t->pre == TOK_PRE_GEMMA4 || t->pre == TOK_PRE_MMBERT) { /* a run of newlines that is a token */
        size_t k = 0;
        while (k < n && w[k] == '\n') k++;
        int32_t id = k == n ? tok_lookup(t, w, n) : -1;
        if (id >= 0) return tok_vec_push(out, id);
    }
    int n_sym = 0;
    for (size_t off = 0; off < n;) {
        size_t k = utf8_len((unsigned char)w[off]);
        if (k > n - off) k = n - off;
        sym[n_sym] = (tok_symbol){n_sym - 1, off + k == n ? -1 : n_sym + 1, off, k};
        off += k;
        n_sym++;
    }
    heap->n = 0;
    bool ok = true;
    for (int i = 1; i < n_sym && ok; i++) ok = add_bigram(t, w, sym, i - 1, i, heap);
    while (ok && heap->n > 0) {
        tok_bigram b = tok_heap_pop(heap);
        tok_symbol *l = &sym[b.left], *r = &sym[b.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != b.size) continue; /* outdated */
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) sym[r->next].prev = b.left;
        ok = add_bigram(t, w, sym, l->prev, b.left, heap) && add_bigram(t, w, sym, b.left, l->next, heap);
    }
    for (int i = 0; ok && i < n_sym; i++) {
        if (sym[i].n == 0) continue;
        int32_t id = tok_lookup(t, w + sym[i].off, sym[i].n);
        if (id >= 0) {
            ok = tok_vec_push(out, id);
            continue;
        }
        for (size_t j = 0; j < sym[i].n && ok; j++) { /* byte fallback, tokens that exist only */
            unsigned char c = (unsigned char)w[sym[i].off + j];
            char hex[7];
            int32_t bid;
            if (t->byte_encode) {
                bid = tok_lookup(t, (const char *)&c, 1);
            } else {
                snprintf(hex, sizeof(hex), "<0x%02X>", c);
                bid = tok_lookup(t, hex, 6);
            }
            if (bid >= 0) ok = tok_vec_push(out, bid);
        }
    }
    return ok;
}

/* mmBERT's Metaspace words: each word (but a newline run) starts with U+2581, and every
 * further U+2581 starts a new word. Rewrites the word list of the raw text in place. */
static bool metaspace_words(char **text, size_t *len, size_t **wlen, size_t *nw) {
    static const char sp[3] = {'\xE2', '\x96', '\x81'};
    size_t extra = 0, words = 0;
    const char *s = *text;
    for (size_t i = 0, off = 0; i < *nw; off += (*wlen)[i], i++) {
        extra += 3;
        words += 2 + (*wlen)[i] / 3;
    }
    char *nt = malloc(*len + extra + 1);
    size_t *nl = malloc((words + 1) * sizeof(size_t));
    if (!nt || !nl) {
        free(nt);
        free(nl);
        return false;
    }
    size_t m = 0, k = 0;
    for (size_t i = 0, off = 0; i < *nw; off += (*wlen)[i], i++) {
        const char *w = s + off;
        size_t n = (*wlen)[i], j = 0;
        while (j < n && w[j] == '\n') j++;
        if (j == n) {
            memcpy(nt + m, w, n);
            m += n;
            nl[k++] = n;
            continue;
        }
        size_t start = m;
        if (n < 3 || memcmp(w, sp, 3) != 0) memcpy(nt + m, sp, 3), m += 3;
        memcpy(nt + m, w, n);
        m += n;
        size_t p = start; /* cut before every U+2581 after the first character */
        for (size_t q = start + 3; q + 3 <= m; q++)
            if (memcmp(nt + q, sp, 3) == 0) {
                nl[k++] = q - p;
                p = q;
            }
        nl[k++] = m - p;
    }
    free(*text);
    free(*wlen);
    *text = nt;
    *len = m;
    *wlen = nl;
    *nw = k;
    return true;
}

bool tok_bpe_encode(const struct tokenizer *t, const char *text, size_t len, tok_vec *out) {
    if (len == 0) return true;
    if (len > (size_t)INT32_MAX / 4) {
        anv_set_error("tokenizer: text too long");
        return false;
    }
    /* Spaces escaped as U+2581 first (SentencePiece-style families), then the text is decoded
     * leniently like llama.cpp (invalid bytes -> U+FFFD) and re-encoded per code point. */
    char *escaped = NULL;
    if (t->escape_whitespace) {
        escaped = malloc(len * 3 + 1);
        if (!escaped) {
            anv_set_error("tokenizer: out of memory");
            return false;
        }
        size_t m = 0;
        for (size_t i = 0; i < len; i++) {
            if (text[i] == ' ') memcpy(escaped + m, "\xE2\x96\x81", 3), m += 3;
            else escaped[m++] = text[i];
        }
        text = escaped;
        len = m;
    }
    uint32_t *cpts = malloc(len * sizeof(uint32_t));
    char *canon = malloc(len * 3 + 4);
    tok_words words = {0};
    char *word = NULL;
    tok_symbol *sym = NULL;
    tok_bigram_heap heap = {0};
    bool ok = cpts && canon;
    size_t n = 0, m = 0;
    for (size_t i = 0; ok && i < len;) {
        size_t k;
        uint32_t cpt = tok_utf8_decode((const unsigned char *)text + i, len - i, &k);
        i += k;
        if (cpt > 0x10FFFF) cpt = 0xFFFD;
        cpts[n++] = cpt;
        m += (size_t)tok_utf8_encode(cpt, canon + m);
    }
    ok = ok && tok_split(t, cpts, n, &words);
    /* word lengths: code points -> bytes of canon */
    for (size_t i = 0, c = 0, b = 0; ok && i < words.n; i++) {
        size_t bytes = 0;
        for (size_t j = 0; j < words.len[i]; j++, c++) bytes += utf8_len((unsigned char)canon[b + bytes]);
        words.len[i] = bytes;
        b += bytes;
    }
    if (ok && t->pre == TOK_PRE_MMBERT) ok = metaspace_words(&canon, &m, &words.len, &words.n);
    size_t max_word = 0;
    for (size_t i = 0; ok && i < words.n; i++)
        if (words.len[i] > max_word) max_word = words.len[i];
    if (ok) {
        word = malloc(max_word * 2 + 1);
        sym = malloc((max_word * 2 + 1) * sizeof(*sym));
        ok = word && sym;
    }
    for (size_t i = 0, off = 0; ok && i < words.n; off += words.len[i], i++) {
        size_t wn = 0;
        if (t->byte_encode) {
            for (size_t j = 0; j < words.len[i]; j++) {
                unsigned char c = (unsigned char)canon[off + j];
                memcpy(word + wn, t->byte_utf8[c], t->byte_utf8_len[c]);
                wn += t->byte_utf8_len[c];
            }
        } else {
            memcpy(word, canon + off, words.len[i]);
            wn = words.len[i];
        }
        ok = encode_word(t, word, wn, sym, &heap, out);
    }
    if (!ok && !anv_last_error()[0]) anv_set_error("tokenizer: out of memory");
    free(heap.v);
    free(sym);
    free(word);
    free(words.len);
    free(canon);
    free(cpts);
    free(escaped);
    return ok && !out->oom;
}

/* ---- decoding ---- */

int tok_bpe_decode_text(const struct tokenizer *t, const char *text, size_t len, char *buf, int cap) {
    int n = 0;
#define EMIT(ch) do { if (buf && n < cap) buf[n] = (char)(ch); n++; } while (0)
    for (size_t i = 0; i < len;) {
        size_t k;
        uint32_t cpt = tok_utf8_decode((const unsigned char *)text + i, len - i, &k);
        i += k;
        if (cpt < 324 && t->cpt_byte[cpt] >= 0) {
            EMIT(t->cpt_byte[cpt]);
            continue;
        }
        /* not a byte of the GPT-2 alphabet: llama.cpp writes "[UNK_BYTE_0x<utf8 hex><text>]" */
        char u[4], hex[4];
        int e = tok_utf8_encode(cpt > 0x10FFFF ? 0xFFFD : cpt, u);
        for (const char *p = "[UNK_BYTE_0x"; *p; p++) EMIT(*p);
        for (int j = 0; j < e; j++) {
            snprintf(hex, sizeof(hex), "%02x", (unsigned char)u[j]);
            EMIT(hex[0]);
            EMIT(hex[1]);
        }
        for (size_t j = 0; j < len; j++) EMIT(text[j]);
        EMIT(']');
    }
#undef EMIT
    return n;
}
