/* tokenizer_bpe: GPT-2-style byte-level BPE as llama.cpp's llm_tokenizer_bpe: the text is
 * split into words by the pre-tokenizer regexes of tokenizer.ggml.pre (run with PCRE2 in
 * UTF+UCP mode, adjusted to llama.cpp's own Unicode tables), each word's bytes are mapped to
 * the GPT-2 byte alphabet, and adjacent symbols are merged by the rank of
 * tokenizer.ggml.merges (lowest rank first, ties leftmost first). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "gguf.h"
#include "hash.h"
#include "tokenizer_impl.h"

/* ---- pre-tokenizer regexes ---- */

/* llama.cpp's whitespace set (Unicode White_Space). PCRE2's \s also matches U+180E, which
 * llama.cpp does not count as whitespace, so the set is spelled out. */
#define WS "\\t\\n\\x0B\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
#define CONTRACTIONS "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
#define WS_TAIL "[" WS "]*[\\r\\n]+|[" WS "]+(?![^" WS "])|[" WS "]+"

static const char *const k_re_llama3 =
    CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^" WS "\\p{L}\\p{N}]+[\\r\\n]*|" WS_TAIL;
static const char *const k_re_qwen2 =
    CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^" WS "\\p{L}\\p{N}]+[\\r\\n]*|" WS_TAIL;
static const char *const k_re_gpt2 =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" WS "\\p{L}\\p{N}]+|[" WS "]+(?![^" WS "])";

typedef struct {
    const char *name;
    tok_pre pre;
    bool ignore_merges, add_bos, keep_clean_spaces;
} pre_info;

/* tokenizer.ggml.pre names and the flags llama.cpp sets for them. */
static const pre_info k_pre[] = {
    {"default", TOK_PRE_DEFAULT, false, false, true},
    {"llama3", TOK_PRE_LLAMA3, true, true, true},
    {"llama-v3", TOK_PRE_LLAMA3, true, true, true},
    {"llama-bpe", TOK_PRE_LLAMA3, true, true, true},
    {"falcon3", TOK_PRE_LLAMA3, true, true, true},
    {"falcon-h1", TOK_PRE_LLAMA3, true, true, true},
    {"pixtral", TOK_PRE_LLAMA3, true, true, true},
    {"midm-2.0", TOK_PRE_LLAMA3, true, true, true},
    {"lfm2", TOK_PRE_LLAMA3, true, true, true},
    {"dbrx", TOK_PRE_LLAMA3, false, false, true},
    {"smaug-bpe", TOK_PRE_LLAMA3, false, false, true},
    {"qwen2", TOK_PRE_QWEN2, false, false, false},
    {"deepseek-r1-qwen", TOK_PRE_QWEN2, false, false, false},
    {"megrez", TOK_PRE_QWEN2, false, false, true},
    {"stablelm2", TOK_PRE_QWEN2, false, false, true},
    {"gpt-2", TOK_PRE_GPT2, false, false, true},
    {"gpt2", TOK_PRE_GPT2, false, false, true}, /* alias; llama.cpp only knows "gpt-2" */
    {"phi-2", TOK_PRE_GPT2, false, false, true},
    {"mpt", TOK_PRE_GPT2, false, false, true},
    {"olmo", TOK_PRE_GPT2, false, false, true},
    {"jais", TOK_PRE_GPT2, false, false, true},
    {"exaone4", TOK_PRE_GPT2, false, false, true},
    {"starcoder", TOK_PRE_STARCODER, false, false, true},
    {"refact", TOK_PRE_STARCODER, false, false, true},
    {"codeshell", TOK_PRE_STARCODER, false, false, true},
    {"exaone", TOK_PRE_STARCODER, false, false, true},
    {"minerva-7b", TOK_PRE_STARCODER, false, false, true},
    {"command-r", TOK_PRE_STARCODER, false, false, false},
    {"smollm", TOK_PRE_STARCODER, false, false, false},
};

/* Code points that are letters (1) or numbers (2) in llama.cpp's Unicode 15.1 tables but
 * unassigned in PCRE2 10.42's Unicode 14: they are matched as a stand-in of their class. */
static const struct { uint32_t lo, hi; int cls; } k_newer_unicode[] = {
    {0x1123F, 0x11240, 1}, {0x11F02, 0x11F02, 1}, {0x11F04, 0x11F10, 1}, {0x11F12, 0x11F33, 1},
    {0x11F50, 0x11F59, 2}, {0x1342F, 0x1342F, 1}, {0x13441, 0x13446, 1}, {0x1B132, 0x1B132, 1},
    {0x1B155, 0x1B155, 1}, {0x1D2C0, 0x1D2D3, 2}, {0x1DF25, 0x1DF2A, 1}, {0x1E030, 0x1E06D, 1},
    {0x1E4D0, 0x1E4EB, 1}, {0x1E4F0, 0x1E4F9, 2}, {0x2B739, 0x2B739, 1}, {0x2EBF0, 0x2EE5D, 1},
    {0x31350, 0x323AF, 1},
};

static int newer_unicode_class(uint32_t cpt) {
    if (cpt < 0x1123F) return 0;
    for (size_t i = 0; i < sizeof(k_newer_unicode) / sizeof(k_newer_unicode[0]); i++)
        if (cpt >= k_newer_unicode[i].lo && cpt <= k_newer_unicode[i].hi) return k_newer_unicode[i].cls;
    return 0;
}

static bool compile_regex(struct tokenizer *t, const char *pattern) {
    int err;
    PCRE2_SIZE err_off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &err, &err_off, NULL);
    if (!re) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(err, msg, sizeof(msg));
        anv_set_error("tokenizer: pre-tokenizer regex error at %zu: %s", (size_t)err_off, (const char *)msg);
        return false;
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* optional: the interpreter is used if JIT fails */
    t->regex[t->n_regex++] = re;
    return true;
}

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
    const pre_info *info = NULL;
    for (size_t i = 0; i < sizeof(k_pre) / sizeof(k_pre[0]); i++)
        if (strcmp(k_pre[i].name, pre_name) == 0) info = &k_pre[i];
    if (!info) {
        anv_set_error("tokenizer: unsupported pre-tokenizer '%s' (tokenizer.ggml.pre)", pre_name);
        return false;
    }
    t->pre = info->pre;
    t->ignore_merges = info->ignore_merges;
    if (info->add_bos) t->add_bos = true;
    if (!info->keep_clean_spaces) t->clean_spaces = false;
    if (!load_merges(t, f)) return false;

    bool ok = true;
    switch (t->pre) {
    case TOK_PRE_LLAMA3: ok = compile_regex(t, k_re_llama3); break;
    case TOK_PRE_QWEN2: ok = compile_regex(t, k_re_qwen2); break;
    case TOK_PRE_GPT2: ok = compile_regex(t, k_re_gpt2); break;
    case TOK_PRE_STARCODER: ok = compile_regex(t, "\\p{N}") && compile_regex(t, k_re_gpt2); break;
    case TOK_PRE_DEFAULT:
        ok = compile_regex(t, "[\\p{P}\\$\\+<=>\\^~\\|]+") && compile_regex(t, k_re_gpt2) &&
             compile_regex(t, "\\p{N}+") && compile_regex(t, "[0-9][0-9][0-9]");
        break;
    }
    if (!ok) return false;

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
    for (int i = 0; i < t->n_regex; i++) pcre2_code_free((pcre2_code *)t->regex[i]);
    t->n_regex = 0;
    free(t->merge_arena);
    free(t->merge_off);
    free(t->merge_len1);
    free(t->merge_len2);
    free(t->merges.slots);
    free(t->merges.hashes);
}

/* ---- splitting ---- */

typedef struct {
    size_t off, len;
} span;

typedef struct {
    span *v;
    size_t n, cap;
} span_list;

static bool span_push(span_list *l, size_t off, size_t len) {
    if (len == 0) return true;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        span *v = realloc(l->v, cap * sizeof(*v));
        if (!v) return false;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (span){off, len};
    return true;
}

/* One regex over every current span: matches and the text between them both become spans
 * (as llama.cpp's unicode_regex_split). */
static bool split_regex(pcre2_code *re, pcre2_match_data *md, const char *subject, const span_list *in, span_list *out) {
    out->n = 0;
    for (size_t s = 0; s < in->n; s++) {
        const char *base = subject + in->v[s].off;
        size_t len = in->v[s].len, gap = 0, pos = 0;
        while (pos < len) {
            int rc = pcre2_match(re, (PCRE2_SPTR)base, len, pos, PCRE2_NO_UTF_CHECK, md, NULL);
            if (rc == PCRE2_ERROR_NOMATCH) break;
            if (rc < 0) {
                PCRE2_UCHAR msg[160];
                pcre2_get_error_message(rc, msg, sizeof(msg));
                anv_set_error("tokenizer: pre-tokenizer regex failed: %s", (const char *)msg);
                return false;
            }
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            size_t m0 = ov[0], m1 = ov[1];
            if (m1 == m0) { /* empty match: step over one character */
                pos = m0 + 1;
                while (pos < len && ((unsigned char)base[pos] & 0xC0) == 0x80) pos++;
                continue;
            }
            if (!span_push(out, in->v[s].off + gap, m0 - gap) || !span_push(out, in->v[s].off + m0, m1 - m0)) return false;
            gap = pos = m1;
        }
        if (!span_push(out, in->v[s].off + gap, len - gap)) return false;
    }
    return true;
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

/* Merges one byte-encoded word and appends its tokens. */
static bool encode_word(const struct tokenizer *t, const char *w, size_t n, tok_symbol *sym, tok_bigram_heap *heap, tok_vec *out) {
    if (t->ignore_merges) {
        int32_t id = tok_lookup(t, w, n);
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
        for (size_t j = 0; j < sym[i].n && ok; j++) { /* single encoded bytes that exist as tokens */
            int32_t bid = tok_lookup(t, w + sym[i].off + j, 1);
            if (bid >= 0) ok = tok_vec_push(out, bid);
        }
    }
    return ok;
}

bool tok_bpe_encode(const struct tokenizer *t, const char *text, size_t len, tok_vec *out) {
    if (len == 0) return true;
    if (len > (size_t)INT32_MAX / 4) {
        anv_set_error("tokenizer: text too long");
        return false;
    }
    /* Decode leniently like llama.cpp (invalid bytes -> U+FFFD), re-encode canonically; the
     * regex subject is the same text with code points PCRE2 cannot class like llama.cpp
     * replaced by a same-length stand-in. */
    char *canon = malloc(len * 3 + 4), *subject = malloc(len * 3 + 4);
    span_list a = {0}, b = {0};
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    char *word = NULL;
    tok_symbol *sym = NULL;
    tok_bigram_heap heap = {0};
    bool ok = canon && subject && md;
    size_t m = 0;
    for (size_t i = 0; ok && i < len;) {
        size_t k;
        uint32_t cpt = tok_utf8_decode((const unsigned char *)text + i, len - i, &k);
        i += k;
        if (cpt > 0x10FFFF) cpt = 0xFFFD;
        int e = tok_utf8_encode(cpt, canon + m);
        memcpy(subject + m, canon + m, (size_t)e);
        if (cpt >= 0xD800 && cpt <= 0xDFFF) memcpy(subject + m, "\xEF\xBF\xBD", 3);
        int cls = newer_unicode_class(cpt);
        if (cls == 1) memcpy(subject + m, "\xF0\x90\x80\x80", 4); /* U+10000, a letter */
        if (cls == 2) memcpy(subject + m, "\xF0\x90\x84\x87", 4); /* U+10107, a number */
        m += (size_t)e;
    }
    ok = ok && span_push(&a, 0, m);
    for (int r = 0; ok && r < t->n_regex; r++) {
        ok = split_regex((pcre2_code *)t->regex[r], md, subject, &a, &b);
        span_list tmp = a;
        a = b;
        b = tmp;
    }
    size_t max_word = 0;
    for (size_t i = 0; ok && i < a.n; i++)
        if (a.v[i].len > max_word) max_word = a.v[i].len;
    if (ok) {
        word = malloc(max_word * 2 + 1);
        sym = malloc((max_word * 2 + 1) * sizeof(*sym));
        ok = word && sym;
    }
    for (size_t i = 0; ok && i < a.n; i++) {
        size_t wn = 0;
        for (size_t j = 0; j < a.v[i].len; j++) {
            unsigned char c = (unsigned char)canon[a.v[i].off + j];
            memcpy(word + wn, t->byte_utf8[c], t->byte_utf8_len[c]);
            wn += t->byte_utf8_len[c];
        }
        ok = encode_word(t, word, wn, sym, &heap, out);
    }
    if (!ok && !anv_last_error()[0]) anv_set_error("tokenizer: out of memory");
    free(heap.v);
    free(sym);
    free(word);
    free(a.v);
    free(b.v);
    pcre2_match_data_free(md);
    free(canon);
    free(subject);
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
