/* tokenizer_split: splits text (code points) into words the way llama.cpp's unicode_regex_split
 * does, for the regex lists of tokenizer_pre.c. llama.cpp does not give its regexes their
 * textbook Unicode meaning, and this file reproduces what it does instead:
 *  - a regex that names a category (\p{L}, \p{N}, \p{P}, \p{M}, \p{S}, \p{Lu}, \p{Ll}, \p{Lt},
 *    \p{Lm}, \p{Lo}) runs on a "collapsed" text: every code point >= 128 becomes one byte,
 *    0x0B if it is whitespace, else 0xD1..0xD5 for number/letter/punctuation/mark/symbol, else
 *    0xD0; each category in the regex becomes [that byte + its ASCII members]. So all letter
 *    subcategories are one class (any non-ASCII letter is both upper and lower case for
 *    tekken/gpt-4o), and \s, [^a-z] etc. see only ASCII and the stand-in bytes;
 *  - any other regex runs on the code points with non-ASCII whitespace replaced by 0x0B, where
 *    \s, \d, \w are ASCII only (ECMAScript std::wregex);
 *  - a few exact expressions are llama.cpp's hand-written splitters: "[^\n]+|[\n]+" (runs of
 *    newlines and non-newlines), "\p{Han}+" (Kimi K2's whole pattern) and the digit groupers
 *    "\p{AFMoE_digits}" / tiny_aya's "\d{1,3}(?=(?:\d{3})*\b)".
 * Regexes run with PCRE2 (32-bit code units: one unit per code point); matches and the text
 * between them both become words; empty matches split too, and matching resumes after them as
 * std::regex_iterator does. */
#define PCRE2_CODE_UNIT_WIDTH 32
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "tokenizer_impl.h"

enum { STEP_COLLAPSED, STEP_WIDE, STEP_NEWLINES, STEP_KIMI_K2, STEP_DIGIT_GROUPS };

static const char *const k_newlines = "[^\\n]+|[\\n]+";
static const char *const k_kimi_k2 = "\\p{Han}+";
static const char *const k_afmoe_digits = "\\p{AFMoE_digits}";
static const char *const k_tiny_aya_digits = "\\d{1,3}(?=(?:\\d{3})*\\b)";

/* llama.cpp's whitespace (Unicode White_Space). */
static bool is_whitespace(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* The categories a regex may name and the class each collapses to. */
static const struct { const char *name; unsigned cat; } k_named_cats[] = {
    {"\\p{N}", TOK_CAT_NUMBER}, {"\\p{L}", TOK_CAT_LETTER}, {"\\p{P}", TOK_CAT_PUNCT}, {"\\p{M}", TOK_CAT_MARK},
    {"\\p{S}", TOK_CAT_SYMBOL}, {"\\p{Lu}", TOK_CAT_LETTER}, {"\\p{Ll}", TOK_CAT_LETTER}, {"\\p{Lt}", TOK_CAT_LETTER},
    {"\\p{Lm}", TOK_CAT_LETTER}, {"\\p{Lo}", TOK_CAT_LETTER},
};

/* The stand-in byte of a class and the ASCII members that join it in a collapsed class. */
static uint32_t collapsed_byte(unsigned cat) {
    switch (cat) {
    case TOK_CAT_NUMBER: return 0xD1;
    case TOK_CAT_LETTER: return 0xD2;
    case TOK_CAT_PUNCT: return 0xD3;
    case TOK_CAT_MARK: return 0xD4;
    case TOK_CAT_SYMBOL: return 0xD5;
    default: return 0xD0;
    }
}

static const char *ascii_members(unsigned cat) {
    switch (cat) {
    case TOK_CAT_NUMBER: return "0-9";
    case TOK_CAT_LETTER: return "A-Za-z";
    case TOK_CAT_PUNCT: return "!-#%-*,-/:-;?-@\\[-\\]_\\{\\}";
    case TOK_CAT_SYMBOL: return "\\$\\+<->\\^`\\|\\~";
    default: return "";
    }
}

static bool uses_category(const char *re) {
    for (size_t i = 0; i < sizeof(k_named_cats) / sizeof(k_named_cats[0]); i++)
        if (strstr(re, k_named_cats[i].name)) return true;
    return false;
}

/* The category named at re[i] ("\p{..}", brace within 10 chars as llama.cpp requires) and its
 * length; 0 if none. */
static size_t named_category(const char *re, size_t i, size_t n, unsigned *cat) {
    if (re[i] != '\\' || i + 3 >= n || re[i + 1] != 'p' || re[i + 2] != '{') return 0;
    const char *close = memchr(re + i + 3, '}', n - i - 3);
    if (!close || (size_t)(close - re) > i + 10) return 0;
    size_t len = (size_t)(close - re) - i + 1;
    for (size_t k = 0; k < sizeof(k_named_cats) / sizeof(k_named_cats[0]); k++)
        if (strlen(k_named_cats[k].name) == len && memcmp(k_named_cats[k].name, re + i, len) == 0) {
            *cat = k_named_cats[k].cat;
            return len;
        }
    return 0;
}

typedef struct {
    uint32_t *v;
    size_t n, cap;
} u32_buf;

static bool u32_push(u32_buf *b, uint32_t c) {
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        uint32_t *v = realloc(b->v, cap * sizeof(*v));
        if (!v) return false;
        b->v = v;
        b->cap = cap;
    }
    b->v[b->n++] = c;
    return true;
}

static bool u32_push_str(u32_buf *b, const char *s) {
    for (; *s; s++)
        if (!u32_push(b, (unsigned char)*s)) return false;
    return true;
}

/* llama.cpp's rewrite of a category regex for the collapsed text (ASCII regexes only). */
static bool collapse_regex(const char *re, u32_buf *out) {
    size_t n = strlen(re);
    bool inside = false, ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        char c = re[i];
        if (c == '[' && (i == 0 || re[i - 1] != '\\')) {
            inside = true;
            ok = u32_push(out, '[');
            continue;
        }
        if (inside && c == ']' && re[i - 1] != '\\') {
            inside = false;
            ok = u32_push(out, ']');
            continue;
        }
        unsigned cat;
        size_t len = named_category(re, i, n, &cat);
        if (len) {
            ok = (inside || u32_push(out, '[')) && u32_push(out, collapsed_byte(cat)) && u32_push_str(out, ascii_members(cat)) &&
                 (inside || u32_push(out, ']'));
            i += len - 1;
            continue;
        }
        ok = u32_push(out, (unsigned char)c);
    }
    return ok;
}

static bool utf8_to_u32(const char *s, u32_buf *out) {
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        size_t k;
        uint32_t c = tok_utf8_decode((const unsigned char *)s + i, n - i, &k);
        i += k;
        if (!u32_push(out, c)) return false;
    }
    return true;
}

static bool compile_step(tok_split_step *st, const char *re) {
    if (strcmp(re, k_newlines) == 0) return st->kind = STEP_NEWLINES, true;
    if (strcmp(re, k_kimi_k2) == 0) return st->kind = STEP_KIMI_K2, true;
    if (strcmp(re, k_afmoe_digits) == 0 || strcmp(re, k_tiny_aya_digits) == 0) return st->kind = STEP_DIGIT_GROUPS, true;
    u32_buf pat = {0};
    uint32_t opts = PCRE2_DOLLAR_ENDONLY;
    bool ok;
    if (uses_category(re)) {
        st->kind = STEP_COLLAPSED;
        ok = collapse_regex(re, &pat);
    } else {
        st->kind = STEP_WIDE;
        opts |= PCRE2_UTF;
        ok = utf8_to_u32(re, &pat);
    }
    if (!ok) {
        free(pat.v);
        anv_set_error("tokenizer: out of memory");
        return false;
    }
    int err;
    PCRE2_SIZE err_off;
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)pat.v, pat.n, opts, &err, &err_off, NULL);
    free(pat.v);
    if (!code) {
        PCRE2_UCHAR msg[160];
        char text[160];
        pcre2_get_error_message(err, msg, sizeof(msg) / sizeof(msg[0]));
        size_t k = 0;
        for (; k + 1 < sizeof(text) && msg[k]; k++) text[k] = msg[k] < 128 ? (char)msg[k] : '?';
        text[k] = 0;
        anv_set_error("tokenizer: pre-tokenizer regex error at %zu: %s", (size_t)err_off, text);
        return false;
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE); /* optional: the interpreter runs if JIT fails */
    st->code = code;
    return true;
}

bool tok_split_compile(struct tokenizer *t, const tok_pre_family *fam) {
    for (int i = 0; i < TOK_MAX_REGEX && fam->regex[i]; i++) {
        t->split[i] = (tok_split_step){0};
        if (!compile_step(&t->split[i], fam->regex[i])) return false;
        t->n_split = i + 1;
    }
    return true;
}

void tok_split_free(struct tokenizer *t) {
    for (int i = 0; i < t->n_split; i++) pcre2_code_free((pcre2_code *)t->split[i].code);
    t->n_split = 0;
}

/* ---- word lists ---- */

static bool words_push(tok_words *w, size_t len) {
    if (len == 0) return true;
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 64;
        size_t *v = realloc(w->len, cap * sizeof(*v));
        if (!v) return false;
        w->len = v;
        w->cap = cap;
    }
    w->len[w->n++] = len;
    return true;
}

/* ---- regex steps ---- */

/* One regex over one word of the subject: matches and the gaps between them become words. */
static bool regex_word(pcre2_code *code, pcre2_match_data *md, const uint32_t *s, size_t len, tok_words *out) {
    size_t done = 0, pos = 0;
    bool after_empty = false;
    while (pos <= len) {
        int rc = PCRE2_ERROR_NOMATCH;
        if (after_empty) { /* std::regex_iterator: a non-empty match right here, else search on */
            if (pos == len) break;
            rc = pcre2_match(code, (PCRE2_SPTR)s, len, pos, PCRE2_NO_UTF_CHECK | PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED, md, NULL);
            if (rc == PCRE2_ERROR_NOMATCH) rc = pcre2_match(code, (PCRE2_SPTR)s, len, ++pos, PCRE2_NO_UTF_CHECK, md, NULL);
        } else {
            rc = pcre2_match(code, (PCRE2_SPTR)s, len, pos, PCRE2_NO_UTF_CHECK, md, NULL);
        }
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR msg[160];
            char text[160];
            pcre2_get_error_message(rc, msg, sizeof(msg) / sizeof(msg[0]));
            size_t k = 0;
            for (; k + 1 < sizeof(text) && msg[k]; k++) text[k] = msg[k] < 128 ? (char)msg[k] : '?';
            text[k] = 0;
            anv_set_error("tokenizer: pre-tokenizer regex failed: %s", text);
            return false;
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t m0 = ov[0], m1 = ov[1];
        if (!words_push(out, m0 - done) || !words_push(out, m1 - m0)) return false;
        done = pos = m1;
        after_empty = m1 == m0;
    }
    return words_push(out, len - done);
}

/* ---- llama.cpp's hand-written splitters ---- */

static bool newline_runs(const uint32_t *c, size_t len, tok_words *out) {
    size_t i = 0;
    while (i < len) {
        size_t start = i;
        bool nl = c[i] == '\n';
        while (i < len && (c[i] == '\n') == nl) i++;
        if (!words_push(out, i - start)) return false;
    }
    return true;
}

/* Digit runs split into groups of three counted from the right; the text before a run is
 * emitted together with the run's first group (llama.cpp's AFMoE splitter does exactly this). */
static bool digit_groups(const uint32_t *c, size_t len, tok_words *out) {
    size_t emitted = 0, pos = 0;
    while (pos < len) {
        if (tok_ucd_category(c[pos]) != TOK_CAT_NUMBER) {
            pos++;
            continue;
        }
        size_t start = pos;
        while (pos < len && tok_ucd_category(c[pos]) == TOK_CAT_NUMBER) pos++;
        size_t cur = start, rem = (pos - start) % 3;
        if (rem) {
            if (!words_push(out, cur + rem - emitted)) return false;
            cur += rem;
            emitted = cur;
        }
        while (cur < pos) {
            if (!words_push(out, cur + 3 - emitted)) return false;
            cur += 3;
            emitted = cur;
        }
    }
    return words_push(out, len - emitted);
}

static bool is_han(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
           (c >= 0x2CEB0 && c <= 0x2EBEF) || (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* Kimi K2's splitter, position by position as llama.cpp's hand-written code walks it: Han runs;
 * letter runs (no Han) with an optional leading non-letter/non-number/non-newline and an optional
 * English contraction; numbers in threes; symbol runs with an optional leading space and trailing
 * newlines; whitespace ending at the last newline, or all but the last whitespace before text,
 * or the rest. */
typedef struct {
    const uint32_t *c;
    size_t len;
} kimi_text;

static bool k_in(const kimi_text *k, size_t i) { return i < k->len; }
static uint32_t k_cpt(const kimi_text *k, size_t i) { return k_in(k, i) ? k->c[i] : 0xFFFFFFFFu; }
static bool k_letter(const kimi_text *k, size_t i) { return k_in(k, i) && tok_ucd_category(k->c[i]) == TOK_CAT_LETTER; }
static bool k_number(const kimi_text *k, size_t i) { return k_in(k, i) && tok_ucd_category(k->c[i]) == TOK_CAT_NUMBER; }
static bool k_space(const kimi_text *k, size_t i) { return k_in(k, i) && is_whitespace(k->c[i]); }
static bool k_word_letter(const kimi_text *k, size_t i) { return k_letter(k, i) && !is_han(k->c[i]); }

static bool kimi_k2(const uint32_t *c, size_t len, tok_words *out) {
    const kimi_text k = {c, len};
    size_t pos = 0, emitted = 0;
#define EMIT(end) do { if (!words_push(out, (end) - emitted)) return false; emitted = (end); } while (0)
    while (pos < len) {
        uint32_t cpt = c[pos];
        if (is_han(cpt)) {
            while (k_in(&k, pos) && is_han(c[pos])) pos++;
            EMIT(pos);
            continue;
        }
        bool lead_ok = !(cpt == '\r' || cpt == '\n' || k_letter(&k, pos) || k_number(&k, pos));
        if (k_word_letter(&k, pos) || (lead_ok && k_word_letter(&k, pos + 1))) {
            bool lead = false, letters = false;
            if (lead_ok) lead = true, pos++;
            while (k_word_letter(&k, pos)) letters = true, pos++;
            if (letters || (!lead && k_word_letter(&k, pos))) {
                if (!letters) pos++;
                while (k_word_letter(&k, pos)) pos++;
                if (k_cpt(&k, pos) == '\'' && pos + 1 < len) {
                    uint32_t n1 = tok_ucd_lower(c[pos + 1]);
                    if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd') {
                        pos += 2;
                    } else if (pos + 2 < len) {
                        uint32_t n2 = tok_ucd_lower(c[pos + 2]);
                        if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l')) pos += 3;
                    }
                }
                EMIT(pos);
                continue;
            } else if (lead) {
                pos--;
            }
        }
        if (k_number(&k, pos)) {
            size_t ini = pos;
            while (k_number(&k, pos)) {
                if (++pos - ini >= 3) {
                    EMIT(pos);
                    ini = pos;
                }
            }
            EMIT(pos);
            continue;
        }
        size_t p2 = cpt == ' ' ? pos + 1 : pos; /* ' ?[^\s\p{L}\p{N}]+[\r\n]*' */
        if (k_in(&k, p2) && !k_space(&k, p2) && !k_letter(&k, p2) && !k_number(&k, p2)) {
            pos = p2;
            while (k_in(&k, pos) && !k_space(&k, pos) && !k_letter(&k, pos) && !k_number(&k, pos)) pos++;
            while (k_cpt(&k, pos) == '\r' || k_cpt(&k, pos) == '\n') pos++;
            EMIT(pos);
            continue;
        }
        size_t n_ws = 0, last_nl = 0;
        while (k_space(&k, pos + n_ws)) {
            uint32_t w = c[pos + n_ws];
            if (w == '\r' || w == '\n') last_nl = pos + n_ws + 1;
            n_ws++;
        }
        if (last_nl > 0) {
            pos = last_nl;
        } else if (n_ws > 1 && k_in(&k, pos + n_ws)) {
            pos += n_ws - 1;
        } else if (n_ws > 0) {
            pos += n_ws;
        } else {
            pos++;
        }
        EMIT(pos);
    }
#undef EMIT
    return true;
}

/* ---- the whole split ---- */

bool tok_split(const struct tokenizer *t, const uint32_t *cpts, size_t n, tok_words *out) {
    out->n = 0;
    if (n == 0) return true;
    bool need_collapsed = false, need_wide = false;
    for (int i = 0; i < t->n_split; i++) {
        need_collapsed |= t->split[i].kind == STEP_COLLAPSED;
        need_wide |= t->split[i].kind == STEP_WIDE;
    }
    uint32_t *collapsed = need_collapsed ? malloc(n * sizeof(uint32_t)) : NULL;
    uint32_t *wide = need_wide ? malloc(n * sizeof(uint32_t)) : NULL;
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    tok_words a = {0};
    bool ok = md && (!need_collapsed || collapsed) && (!need_wide || wide);
    for (size_t i = 0; ok && i < n; i++) {
        uint32_t c = cpts[i];
        bool ws = c >= 128 && is_whitespace(c);
        if (collapsed) collapsed[i] = c < 128 ? c : ws ? 0x0B : collapsed_byte(tok_ucd_category(c));
        if (wide) wide[i] = ws ? 0x0B : (c >= 0xD800 && c <= 0xDFFF) || c > 0x10FFFF ? 0xFFFD : c;
    }
    ok = ok && words_push(&a, n);
    for (int s = 0; ok && s < t->n_split; s++) {
        const tok_split_step *st = &t->split[s];
        const uint32_t *subject = st->kind == STEP_COLLAPSED ? collapsed : st->kind == STEP_WIDE ? wide : cpts;
        out->n = 0;
        size_t off = 0;
        for (size_t w = 0; ok && w < a.n; off += a.len[w], w++) {
            const uint32_t *c = subject + off;
            size_t len = a.len[w];
            switch (st->kind) {
            case STEP_NEWLINES: ok = newline_runs(c, len, out); break;
            case STEP_DIGIT_GROUPS: ok = digit_groups(c, len, out); break;
            case STEP_KIMI_K2: ok = kimi_k2(c, len, out); break;
            default: ok = regex_word((pcre2_code *)st->code, md, c, len, out); break;
            }
        }
        tok_words tmp = a;
        a = *out;
        *out = tmp;
    }
    if (ok) { /* the result is in a */
        tok_words tmp = a;
        a = *out;
        *out = tmp;
    } else if (!anv_last_error()[0]) {
        anv_set_error("tokenizer: out of memory");
    }
    free(a.len);
    pcre2_match_data_free(md);
    free(collapsed);
    free(wide);
    return ok;
}
