/* tokenizer_wpm: BERT's WordPiece ("bert" vocabularies) as llama.cpp's WPM tokenizer does it.
 * The normalizer (tokenizer.ggml.normalizer.lowercase / strip_accents, both on when absent, as
 * in llama.cpp) maps each code point to
 * the first one of its canonical decomposition and drops marks, lowercases, drops controls,
 * U+0000 and U+FFFD; words split on whitespace, and punctuation, ASCII symbols and CJK
 * ideographs are words of their own. Each word, with the U+2581 prefix the converter gives
 * word-initial pieces, is cut greedily into the longest pieces of the vocabulary; a word with
 * no full cut becomes [UNK]. The Unicode facts come from tokenizer_unicode.c (generated). */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "gguf.h"
#include "tokenizer_impl.h"

static bool read_opt(const gguf_file *f, const char *key, bool *v) {
    if (!gguf_find(f, key)) return true;
    if (!gguf_get_bool(f, key, v)) {
        anv_set_error("tokenizer: %s must be a bool", key);
        return false;
    }
    return true;
}

bool tok_wpm_init(struct tokenizer *t, const gguf_file *f) {
    /* llama.cpp's defaults (llama_vocab::normalizer_options): lowercase and strip accents.
     * Its converter never writes the lowercase key, so every real BERT-family file
     * (nomic-embed-text, bge, all-minilm, mxbai) takes the default; strip_accents follows
     * lowercase unless it has a key of its own. */
    t->wpm_lowercase = true;
    if (!read_opt(f, "tokenizer.ggml.normalizer.lowercase", &t->wpm_lowercase)) return false;
    t->wpm_strip_accents = t->wpm_lowercase;
    if (!read_opt(f, "tokenizer.ggml.normalizer.strip_accents", &t->wpm_strip_accents)) return false;
    t->max_token_len = 0;
    for (int32_t id = 0; id < t->n_vocab; id++)
        if ((int32_t)t->text_len[id] > t->max_token_len) t->max_token_len = (int32_t)t->text_len[id];
    return true;
}

static bool is_whitespace(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x2000 && c <= 0x200A) || c == 0x20 || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* BERT's CJK ranges (with the Hugging Face tokenizer's 0x2B920 start of the last extension). */
static bool is_chinese(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* Cuts one normalized word (without the prefix) into pieces; [UNK] if it has no full cut. */
static bool encode_word(const struct tokenizer *t, const char *w, size_t n, char *buf, tok_vec *out) {
    memcpy(buf, "\xE2\x96\x81", 3);
    memcpy(buf + 3, w, n);
    const size_t len = n + 3, first = out->n;
    for (size_t i = 0; i < len;) {
        size_t j = i + (size_t)t->max_token_len + 1 < len ? i + (size_t)t->max_token_len + 1 : len;
        int32_t id = -1;
        for (; j > i; j--)
            if ((id = tok_lookup(t, buf + i, j - i)) >= 0) break;
        if (id < 0) { out->n = first; break; }   /* discard the word's pieces */
        if (!tok_vec_push(out, id)) return false;
        i = j;
    }
    if (out->n == first) {
        if (t->unk < 0 || t->unk >= t->n_vocab) {
            anv_set_error("tokenizer: a word has no WordPiece cut and the vocabulary has no [UNK] token");
            return false;
        }
        if (!tok_vec_push(out, t->unk)) return false;
    }
    return true;
}

bool tok_wpm_encode(const struct tokenizer *t, const char *text, size_t len, tok_vec *out) {
    /* the normalized words, '\0'-separated (a code point grows to at most 4 bytes) */
    char *words = malloc(len * 4 + 8), *buf = malloc(len * 4 + 8);
    if (!words || !buf) { free(words); free(buf); return false; }
    size_t m = 0, word0 = 0;
    bool ok = true;
#define FINISH_WORD() do { \
        if (m > word0) { ok = ok && encode_word(t, words + word0, m - word0, buf, out); } \
        word0 = m; } while (0)
    for (size_t i = 0; i < len && ok;) {
        size_t k;
        uint32_t c = tok_utf8_decode((const unsigned char *)text + i, len - i, &k);
        i += k;
        if (t->wpm_strip_accents) c = tok_ucd_nfd_first(c);
        if (is_whitespace(c)) { FINISH_WORD(); continue; }
        unsigned cls = tok_ucd_class(c);
        if (c == 0 || c == 0xFFFD || (cls & TOK_UCD_CONTROL)) continue;
        if (t->wpm_strip_accents && (cls & TOK_UCD_MARK)) continue;
        uint32_t lc = t->wpm_lowercase ? tok_ucd_lower(c) : c;
        if ((cls & TOK_UCD_PUNCT) || (c < 0x7F && (cls & TOK_UCD_SYMBOL)) || is_chinese(c)) {
            FINISH_WORD();
            m += (size_t)tok_utf8_encode(lc, words + m);
            FINISH_WORD();
        } else {
            m += (size_t)tok_utf8_encode(lc, words + m);
        }
    }
    FINISH_WORD();
#undef FINISH_WORD
    free(words);
    free(buf);
    return ok && !out->oom;
}
