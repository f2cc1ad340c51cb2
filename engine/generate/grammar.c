/* grammar: the matcher of a compiled JSON grammar (grammar_impl.h) against a vocabulary.
 *
 * Automaton. A document is matched byte by byte by a pushdown automaton: a stack of
 * frames (document, object, array, string, number, literal), one per open JSON value,
 * each with its phase (e.g. "after a value, expecting , or }") and counters (items,
 * code points, digits, whitespace run, next property). Choices the bytes have not
 * decided yet (anyOf branches, "is this number finished?", a declared key vs an
 * additional one) are kept as a set of such stacks (deduplicated), like llama.cpp's
 * grammar stacks. Epsilon moves (a number ending, a whitespace run ending) are taken
 * lazily when the next byte arrives. Every state the automaton can reach has a
 * completion (counters are checked before a byte is taken: a comma only if another
 * member may follow, maxLength before a character, etc.), so masking never leads
 * generation into a dead end. Whitespace runs are at most GRAMMAR_MAX_WS bytes and
 * containers nest at most GRAMMAR_MAX_NESTING deep, so a model cannot loop forever on
 * spaces or brackets.
 *
 * Mask. The token texts (tokenizer_token_to_piece, as the output will print them) are
 * sorted once per matcher into a byte trie stored in preorder (each node knows where its
 * subtree ends). Masking walks that trie keeping one stack set per depth: a node whose
 * set is empty skips its whole subtree, so only prefixes that can continue the document
 * are visited. Inside a string body (the common, permissive case where nearly every
 * token is allowed) the walk is replaced by a precomputed table: tokens made only of
 * plain string characters (no quote, backslash or control byte; whole UTF-8 characters)
 * are allowed when their code-point count fits the remaining maxLength; only the other
 * tokens (quotes, escapes, partial UTF-8 bytes) are walked one by one.
 * EOG tokens are allowed only when the document is complete; tokens with no text
 * (control tokens) never. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "grammar_impl.h"

#define NODE_DOC 0xFFFF
#define MAX_DEPTH (GRAMMAR_MAX_NESTING + 2) /* document + containers + one leaf */
#define MAX_STACKS 4096                    /* more live alternatives: "too ambiguous" */
#define MAX_UNION_NEST 64                  /* unions expanding into unions without a byte */

typedef struct {
    uint16_t node; /* grammar node, NODE_DOC for the document frame */
    uint8_t ph;    /* phase, per kind (below) */
    uint8_t x;     /* small counter: digits, UTF-8 bytes left, hex digits, "additional member" */
    int32_t a;     /* items / code points / next property */
    int32_t b;     /* whitespace run / key position / trie node / exclusion trie node */
    uint32_t c;    /* UTF-8 byte range, \u escape value(s) */
} frame;

typedef struct {
    int32_t depth;
    frame f[MAX_DEPTH];
} gstack;

typedef struct {
    int n, cap;
    bool overflow;
    gstack *s;
} gset;

enum { D_WS0, D_WS1 };
enum { S_OPEN, S_BODY, S_U8, S_ESC, S_HEX, S_LOW_BS, S_LOW_U, S_LOW_HEX, S_DONE };
enum { N_START, N_SIGN, N_ZERO, N_INT, N_DOT, N_FRAC, N_EXP, N_EXPSIGN, N_EXPD };
enum { O_OPEN, O_WS1, O_KEY_OR_END, O_KEY, O_KEYREQ, O_KEYTRIE, O_WS_COLON, O_COLON, O_WS_VAL, O_AFTER_VAL,
       O_COMMA_OR_END, O_WS_KEY };
enum { A_OPEN, A_WS1, A_ITEM_OR_END, A_AFTER, A_COMMA_OR_END, A_WS_ITEM };

/* ---- stack sets ---- */

static void stack_copy(gstack *dst, const gstack *src) {
    dst->depth = src->depth;
    memcpy(dst->f, src->f, (size_t)src->depth * sizeof(frame));
}

static void set_add(gset *o, const gstack *s) {
    for (int i = 0; i < o->n; i++)
        if (o->s[i].depth == s->depth && memcmp(o->s[i].f, s->f, (size_t)s->depth * sizeof(frame)) == 0) return;
    if (o->n == o->cap) {
        int nc = o->cap ? o->cap * 2 : 4;
        gstack *q = nc <= MAX_STACKS ? realloc(o->s, (size_t)nc * sizeof(gstack)) : NULL;
        if (!q) { o->overflow = true; return; }
        o->s = q;
        o->cap = nc;
    }
    stack_copy(&o->s[o->n++], s);
}

static void set_free(gset *s) {
    free(s->s);
    memset(s, 0, sizeof *s);
}

static void set_copy(gset *dst, const gset *src) {
    dst->n = 0;
    dst->overflow = src->overflow;
    for (int i = 0; i < src->n; i++) set_add(dst, &src->s[i]);
}

/* ---- one byte ---- */

typedef struct {
    const grammar *g;
    gset *out;
    int unions; /* nested union expansions for the current byte */
} stepper;

static bool is_ws(int c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static void excl_byte(const grammar *g, frame *f, int c) {
    if (f->b >= 0) f->b = grammar_trie_child(g, f->b, (uint8_t)c);
}

static void excl_cp(const grammar *g, frame *f, uint32_t cp) {
    if (f->b < 0) return;
    uint8_t u[4];
    int n;
    if (cp < 0x80) { u[0] = (uint8_t)cp; n = 1; }
    else if (cp < 0x800) { u[0] = (uint8_t)(0xC0 | cp >> 6); u[1] = (uint8_t)(0x80 | (cp & 63)); n = 2; }
    else if (cp < 0x10000) {
        u[0] = (uint8_t)(0xE0 | cp >> 12); u[1] = (uint8_t)(0x80 | ((cp >> 6) & 63)); u[2] = (uint8_t)(0x80 | (cp & 63)); n = 3;
    } else {
        u[0] = (uint8_t)(0xF0 | cp >> 18); u[1] = (uint8_t)(0x80 | ((cp >> 12) & 63));
        u[2] = (uint8_t)(0x80 | ((cp >> 6) & 63)); u[3] = (uint8_t)(0x80 | (cp & 63)); n = 4;
    }
    for (int i = 0; i < n; i++) excl_byte(g, f, u[i]);
}

/* UTF-8 lead byte: continuation bytes that follow and the allowed range of the first one
 * (no overlong forms, no surrogates, nothing above U+10FFFF). 0: not a lead byte. */
static int utf8_lead(int c, int *lo, int *hi) {
    *lo = 0x80;
    *hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) return 1;
    if (c == 0xE0) { *lo = 0xA0; return 2; }
    if (c == 0xED) { *hi = 0x9F; return 2; }
    if (c >= 0xE1 && c <= 0xEF) return 2;
    if (c == 0xF0) { *lo = 0x90; return 3; }
    if (c == 0xF4) { *hi = 0x8F; return 3; }
    if (c >= 0xF1 && c <= 0xF3) return 3;
    return 0;
}

/* String frame takes byte c (deterministic). */
static bool string_byte(const grammar *g, const gnode *n, frame *f, int c) {
    switch (f->ph) {
    case S_OPEN:
        if (c != '"') return false;
        f->ph = S_BODY;
        return true;
    case S_BODY: {
        if (c == '"') {
            if (f->a < n->min) return false;
            if (f->b >= 0 && g->trie[f->b].val >= 0) return false; /* equals an excluded name */
            f->ph = S_DONE;
            return true;
        }
        if (n->max >= 0 && f->a >= n->max) return false;
        if (c == '\\') { f->ph = S_ESC; return true; }
        if (c < 0x20) return false;
        if (c < 0x80) { f->a++; excl_byte(g, f, c); return true; }
        int lo, hi, k = utf8_lead(c, &lo, &hi);
        if (!k) return false;
        f->a++;
        excl_byte(g, f, c);
        f->ph = S_U8;
        f->x = (uint8_t)k;
        f->c = (uint32_t)lo | (uint32_t)hi << 8;
        return true;
    }
    case S_U8:
        if (c < (int)(f->c & 0xFF) || c > (int)(f->c >> 8)) return false;
        excl_byte(g, f, c);
        if (--f->x == 0) { f->ph = S_BODY; f->c = 0; }
        else f->c = 0x80 | 0xBF << 8;
        return true;
    case S_ESC: {
        int d;
        switch (c) {
        case '"': d = '"'; break;
        case '\\': d = '\\'; break;
        case '/': d = '/'; break;
        case 'b': d = 8; break;
        case 'f': d = 12; break;
        case 'n': d = 10; break;
        case 'r': d = 13; break;
        case 't': d = 9; break;
        case 'u': f->ph = S_HEX; f->x = 0; f->c = 0; return true;
        default: return false;
        }
        f->a++;
        excl_byte(g, f, d);
        f->ph = S_BODY;
        return true;
    }
    case S_HEX: {
        int v = hexval(c);
        if (v < 0) return false;
        f->c = f->c * 16 + (uint32_t)v;
        f->x++;
        if (f->x == 2 && (f->c & 0xFC) == 0xDC) return false; /* a low surrogate without a high one */
        if (f->x == 4) {
            if (f->c >= 0xD800 && f->c <= 0xDBFF) { f->ph = S_LOW_BS; return true; }
            f->a++;
            excl_cp(g, f, f->c);
            f->ph = S_BODY;
            f->c = 0;
        }
        return true;
    }
    case S_LOW_BS:
        if (c != '\\') return false;
        f->ph = S_LOW_U;
        return true;
    case S_LOW_U:
        if (c != 'u') return false;
        f->ph = S_LOW_HEX;
        f->x = 0;
        return true;
    case S_LOW_HEX: {
        int v = hexval(c);
        if (v < 0 || (f->x == 0 && v != 0xD) || (f->x == 1 && v < 0xC)) return false;
        uint32_t hi = f->c & 0xFFFF, lo = (f->c >> 16) * 16 + (uint32_t)v;
        f->c = hi | lo << 16;
        if (++f->x == 4) {
            f->a++;
            excl_cp(g, f, 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00));
            f->ph = S_BODY;
            f->c = 0;
        }
        return true;
    }
    default: return false;
    }
}

/* Bounded integers keep their sign (c) and digits so far (a: low 32 bits, b: high). */
static int64_t int_digits(const frame *f) { return (int64_t)((uint64_t)(uint32_t)f->b << 32 | (uint32_t)f->a); }

#define INT_MAXV 9999999999999999LL /* GRAMMAR_MAX_INT_DIGITS nines */

/* Some integer within [lo, hi] starts with the digits typed so far. */
static bool int_feasible(const gnode *n, const frame *f) {
    bool neg = f->c != 0;
    int64_t v = int_digits(f);
    for (int j = 0, k = f->ph == N_INT ? f->x : f->ph == N_ZERO ? GRAMMAR_MAX_INT_DIGITS : 0;
         k + j <= GRAMMAR_MAX_INT_DIGITS; j++) {
        int64_t lo, hi; /* magnitudes reachable with j more digits */
        if (k == 0) { lo = 0; hi = INT_MAXV; j = GRAMMAR_MAX_INT_DIGITS; }
        else {
            int64_t p = 1;
            for (int i = 0; i < j; i++) p *= 10;
            lo = v * p;
            hi = lo + p - 1;
        }
        int64_t a = neg ? -hi : lo, b = neg ? -lo : hi;
        if (a <= n->hi && b >= n->lo) return true;
    }
    return false;
}

static bool number_final(const gnode *n, const frame *f) {
    if (f->ph != N_ZERO && f->ph != N_INT && f->ph != N_FRAC && f->ph != N_EXPD) return false;
    if (!n->bounded) return true;
    int64_t v = f->c ? -int_digits(f) : int_digits(f);
    return v >= n->lo && v <= n->hi;
}

static bool number_byte_raw(const gnode *n, frame *f, int c);

static bool number_byte(const gnode *n, frame *f, int c) {
    if (!number_byte_raw(n, f, c)) return false;
    if (!n->bounded) return true;
    if (c == '-') f->c = 1;
    else if (c >= '0' && c <= '9') {
        int64_t v = int_digits(f) * 10 + (c - '0');
        f->a = (int32_t)(uint32_t)v;
        f->b = (int32_t)(uint32_t)((uint64_t)v >> 32);
    }
    return int_feasible(n, f);
}

static bool number_byte_raw(const gnode *n, frame *f, int c) {
    bool digit = c >= '0' && c <= '9';
    switch (f->ph) {
    case N_START:
    case N_SIGN:
        if (c == '-' && f->ph == N_START) { f->ph = N_SIGN; return true; }
        if (c == '0') { f->ph = N_ZERO; return true; }
        if (digit) { f->ph = N_INT; f->x = 1; return true; }
        return false;
    case N_ZERO:
    case N_INT:
        if (digit && f->ph == N_INT) {
            if (f->x >= GRAMMAR_MAX_INT_DIGITS) return false;
            f->x++;
            return true;
        }
        if (n->integer) return false;
        if (c == '.') { f->ph = N_DOT; return true; }
        if (c == 'e' || c == 'E') { f->ph = N_EXP; return true; }
        return false;
    case N_DOT:
        if (!digit) return false;
        f->ph = N_FRAC;
        f->x = 1;
        return true;
    case N_FRAC:
        if (digit) {
            if (f->x >= GRAMMAR_MAX_FRAC_DIGITS) return false;
            f->x++;
            return true;
        }
        if (c == 'e' || c == 'E') { f->ph = N_EXP; return true; }
        return false;
    case N_EXP:
    case N_EXPSIGN:
        if ((c == '+' || c == '-') && f->ph == N_EXP) { f->ph = N_EXPSIGN; return true; }
        if (!digit) return false;
        f->ph = N_EXPD;
        f->x = 1;
        return true;
    case N_EXPD:
        if (!digit || f->x >= GRAMMAR_MAX_EXP_DIGITS) return false;
        f->x++;
        return true;
    default: return false;
    }
}

static void feed(stepper *st, gstack *s, int c);

/* Pushes node onto s (a scratch copy) and lets it take c; unions fork. */
static void push_feed(stepper *st, gstack *s, int32_t node, int c) {
    const grammar *g = st->g;
    const gnode *n = &g->nodes[node];
    if (n->kind == GN_UNION) {
        if (st->unions >= MAX_UNION_NEST) return;
        st->unions++;
        for (int32_t i = 0; i < n->n_alts; i++) {
            gstack t;
            stack_copy(&t, s);
            push_feed(st, &t, g->alts[n->alt0 + i], c);
        }
        st->unions--;
        return;
    }
    if (s->depth >= MAX_DEPTH) return;
    if ((n->kind == GN_OBJECT || n->kind == GN_ARRAY) && s->depth > GRAMMAR_MAX_NESTING) return;
    frame *f = &s->f[s->depth++];
    *f = (frame){.node = (uint16_t)node};
    if (n->kind == GN_LIT) f->b = n->trie;
    if (n->kind == GN_STRING) f->b = n->excl;
    feed(st, s, c);
}

/* What a frame did with byte c: FEED_DONE (its results are in st->out, or c is rejected)
 * or FEED_AGAIN (an epsilon move: the frame ended or changed phase without taking c, and
 * the new top frame of the stack gets c). */
typedef enum { FEED_DONE, FEED_AGAIN } feed_step;

/* The document frame: no whitespace before the document, a bounded run after. */
static feed_step feed_doc(stepper *st, gstack *s, frame *f, int c) {
    if (f->ph == D_WS0) {
        f->ph = D_WS1;
        f->b = 0;
        push_feed(st, s, st->g->root, c);
    } else if (is_ws(c) && f->b < GRAMMAR_MAX_WS) {
        f->b++;
        set_add(st->out, s);
    }
    return FEED_DONE;
}

static feed_step feed_string(stepper *st, gstack *s, frame *f, const gnode *n, int c) {
    if (string_byte(st->g, n, f, c)) {
        if (f->ph == S_DONE) s->depth--;
        set_add(st->out, s);
    }
    return FEED_DONE;
}

static feed_step feed_number(stepper *st, gstack *s, frame *f, const gnode *n, int c) {
    frame save = *f;
    if (number_byte(n, f, c)) set_add(st->out, s);
    *f = save;
    if (!number_final(n, f)) return FEED_DONE;
    s->depth--; /* the number may end here: its parent takes c */
    return FEED_AGAIN;
}

static feed_step feed_lit(stepper *st, gstack *s, frame *f, int c) {
    const grammar *g = st->g;
    int32_t k = grammar_trie_child(g, f->b, (uint8_t)c);
    bool final = g->trie[f->b].val >= 0;
    if (k >= 0) {
        int32_t old = f->b;
        f->b = k;
        if (g->trie[k].child < 0) { /* a whole literal with nothing longer: done */
            s->depth--;
            set_add(st->out, s);
            s->depth++;
        } else set_add(st->out, s);
        f->b = old;
    }
    if (!final) return FEED_DONE;
    s->depth--;
    return FEED_AGAIN;
}

/* Object: the whitespace phases (before a key, the colon, a value, after a value). */
static feed_step feed_object_ws(stepper *st, gstack *s, frame *f, const gnode *n, int c) {
    const grammar *g = st->g;
    if (is_ws(c)) {
        if (f->b < GRAMMAR_MAX_WS) { f->b++; set_add(st->out, s); }
        return FEED_DONE;
    }
    f->b = 0;
    if (f->ph == O_WS_VAL) {
        int32_t v;
        if (f->x) v = n->additional;
        else v = g->props[n->prop0 + f->a++].node;
        f->ph = O_AFTER_VAL;
        f->x = 0;
        push_feed(st, s, v, c);
        return FEED_DONE;
    }
    f->ph = f->ph == O_WS1 ? O_KEY_OR_END : f->ph == O_WS_KEY ? O_KEY : f->ph == O_WS_COLON ? O_COLON : O_COMMA_OR_END;
    return FEED_AGAIN;
}

/* Object: the key phases (the first byte of a key, a required key, a key from the trie). */
static feed_step feed_object_key(stepper *st, gstack *s, frame *f, const gnode *n, int c) {
    const grammar *g = st->g;
    gset *out = st->out;
    switch (f->ph) {
    case O_KEY:
        if (f->a < n->n_req) { /* the next required property, in order */
            if (c == (uint8_t)g->props[n->prop0 + f->a].key[0]) { f->ph = O_KEYREQ; f->b = 1; set_add(out, s); }
            return FEED_DONE;
        }
        if (n->trie >= 0 && f->a < n->n_props) { /* an optional property at or after a */
            int32_t k = grammar_trie_child(g, n->trie, (uint8_t)c);
            if (k >= 0 && g->trie[k].maxval >= f->a) {
                frame save = *f;
                f->ph = O_KEYTRIE;
                f->b = k;
                set_add(out, s);
                *f = save;
            }
        }
        if (n->additional >= 0) {
            f->ph = O_WS_COLON;
            f->x = 1;
            f->b = 0;
            push_feed(st, s, n->addkey, c);
        }
        return FEED_DONE;
    case O_KEYREQ: {
        const gprop *p = &g->props[n->prop0 + f->a];
        if (c != (uint8_t)p->key[f->b]) return FEED_DONE;
        if (++f->b == p->keylen) { f->ph = O_WS_COLON; f->b = 0; f->x = 0; }
        set_add(out, s);
        return FEED_DONE;
    }
    case O_KEYTRIE: {
        int32_t k = grammar_trie_child(g, f->b, (uint8_t)c);
        if (k < 0 || g->trie[k].maxval < f->a) return FEED_DONE;
        if (g->trie[k].val >= 0) { /* the closing quote of a key */
            f->a = g->trie[k].val;
            f->ph = O_WS_COLON;
            f->b = 0;
            f->x = 0;
        } else f->b = k;
        set_add(out, s);
        return FEED_DONE;
    }
    default: return FEED_DONE;
    }
}

static feed_step feed_object(stepper *st, gstack *s, frame *f, const gnode *n, int c) {
    gset *out = st->out;
    switch (f->ph) {
    case O_OPEN:
        if (c == '{') { f->ph = O_WS1; f->b = 0; set_add(out, s); }
        return FEED_DONE;
    case O_WS1:
    case O_WS_KEY:
    case O_WS_COLON:
    case O_WS_VAL:
    case O_AFTER_VAL:
        return feed_object_ws(st, s, f, n, c);
    case O_KEY_OR_END:
        if (c == '}') {
            if (f->a >= n->n_req) { s->depth--; set_add(out, s); }
            return FEED_DONE;
        }
        f->ph = O_KEY;
        return FEED_AGAIN;
    case O_KEY:
    case O_KEYREQ:
    case O_KEYTRIE:
        return feed_object_key(st, s, f, n, c);
    case O_COLON:
        if (c == ':') { f->ph = O_WS_VAL; f->b = 0; set_add(out, s); }
        return FEED_DONE;
    case O_COMMA_OR_END:
        if (c == ',') {
            if (f->a < n->n_props || n->additional >= 0) { f->ph = O_WS_KEY; f->b = 0; set_add(out, s); }
        } else if (c == '}') {
            if (f->a >= n->n_req) { s->depth--; set_add(out, s); }
        }
        return FEED_DONE;
    default: return FEED_DONE;
    }
}

static feed_step feed_array(stepper *st, gstack *s, frame *f, const gnode *n, int c) {
    gset *out = st->out;
    switch (f->ph) {
    case A_OPEN:
        if (c == '[') { f->ph = A_WS1; f->b = 0; set_add(out, s); }
        return FEED_DONE;
    case A_WS1:
    case A_AFTER:
    case A_WS_ITEM:
        if (is_ws(c)) {
            if (f->b < GRAMMAR_MAX_WS) { f->b++; set_add(out, s); }
            return FEED_DONE;
        }
        f->b = 0;
        if (f->ph == A_WS_ITEM) {
            f->ph = A_AFTER;
            f->a++;
            push_feed(st, s, n->item, c);
            return FEED_DONE;
        }
        f->ph = f->ph == A_WS1 ? A_ITEM_OR_END : A_COMMA_OR_END;
        return FEED_AGAIN;
    case A_ITEM_OR_END:
        if (c == ']') {
            if (n->min == 0) { s->depth--; set_add(out, s); }
            return FEED_DONE;
        }
        if (n->max == 0) return FEED_DONE;
        f->ph = A_AFTER;
        f->a = 1;
        push_feed(st, s, n->item, c);
        return FEED_DONE;
    case A_COMMA_OR_END:
        if (c == ',') {
            if (n->max < 0 || f->a < n->max) { f->ph = A_WS_ITEM; f->b = 0; set_add(out, s); }
        } else if (c == ']') {
            if (f->a >= n->min) { s->depth--; set_add(out, s); }
        }
        return FEED_DONE;
    default: return FEED_DONE;
    }
}

/* The top frame of s takes byte c, directly or after epsilon moves; results go to st->out. */
static void feed(stepper *st, gstack *s, int c) {
    feed_step r = FEED_AGAIN;
    while (r == FEED_AGAIN && s->depth > 0) {
        frame *f = &s->f[s->depth - 1];
        if (f->node == NODE_DOC) { feed_doc(st, s, f, c); return; }
        const gnode *n = &st->g->nodes[f->node];
        switch (n->kind) {
        case GN_STRING: r = feed_string(st, s, f, n, c); break;
        case GN_NUMBER: r = feed_number(st, s, f, n, c); break;
        case GN_LIT: r = feed_lit(st, s, f, c); break;
        case GN_OBJECT: r = feed_object(st, s, f, n, c); break;
        case GN_ARRAY: r = feed_array(st, s, f, n, c); break;
        default: return;
        }
    }
}

static void step_set(const grammar *g, const gset *in, int c, gset *out) {
    out->n = 0;
    out->overflow = in->overflow;
    stepper st = {.g = g, .out = out};
    gstack t;
    for (int i = 0; i < in->n; i++) {
        stack_copy(&t, &in->s[i]);
        feed(&st, &t, c);
    }
}

/* The stack can end here: only completable leaves above a finished document frame. */
static bool stack_done(const grammar *g, const gstack *s) {
    for (int d = s->depth - 1; d >= 0; d--) {
        const frame *f = &s->f[d];
        if (f->node == NODE_DOC) return d == 0 && f->ph == D_WS1;
        const gnode *n = &g->nodes[f->node];
        if (n->kind == GN_NUMBER && number_final(n, f)) continue;
        if (n->kind == GN_LIT && g->trie[f->b].val >= 0) continue;
        return false;
    }
    return false;
}

static bool set_done(const grammar *g, const gset *s) {
    for (int i = 0; i < s->n; i++)
        if (stack_done(g, &s->s[i])) return true;
    return false;
}

static void set_init(gset *s) {
    gstack t = {.depth = 1};
    t.f[0] = (frame){.node = NODE_DOC, .ph = D_WS0};
    s->n = 0;
    s->overflow = false;
    set_add(s, &t);
}

bool grammar_accepts_bytes(const grammar *g, const char *s, size_t n, bool *complete) {
    gset a = {0}, b = {0};
    set_init(&a);
    for (size_t i = 0; i < n && a.n > 0 && !a.overflow; i++) {
        step_set(g, &a, (uint8_t)s[i], &b);
        gset t = a;
        a = b;
        b = t;
    }
    bool ok = a.n > 0 && !a.overflow;
    if (complete) *complete = ok && set_done(g, &a);
    set_free(&a);
    set_free(&b);
    return ok;
}

/* ---- matcher ---- */

enum { TF_EOG = 1, TF_EMPTY = 2, TF_PLAIN = 4 };

/* The vocabulary side of matching, built once per tokenizer (grammar_vocab_new) and
 * shared by every matcher of that tokenizer: token texts, flags and the byte trie. */
struct grammar_vocab {
    const tokenizer *tok;
    int32_t n_vocab;
    uint8_t *text;      /* all token texts */
    uint32_t *off;      /* n_vocab + 1 offsets into text */
    uint8_t *flags;     /* TF_* */
    int32_t *cps;       /* code points of a TF_PLAIN token */
    int32_t *nonplain;  /* tokens that may continue a string body but are not plain */
    int32_t n_nonplain;
    /* preorder trie of the token texts */
    int32_t n_nodes, max_len;
    uint8_t *nbyte;
    uint16_t *ndepth;
    int32_t *nend, *ntok0, *nntok;
    int32_t *sorted; /* token ids in byte order; a node's tokens are sorted[ntok0 .. +nntok) */
};

struct grammar_matcher {
    const grammar *g;
    const tokenizer *tok;
    int32_t n_vocab;
    const grammar_vocab *v;
    grammar_vocab *own_v;  /* built by grammar_matcher_new, NULL when shared */
    gset cur;
    gset *levels;    /* v->max_len + 1 scratch sets for the trie walk */
    gset tmp[2], split[2];
    uint8_t *ok;     /* n_vocab scratch */
    bool finished;
    bool overflowed; /* the last mask met a set with more than MAX_STACKS alternatives */
};

/* Sort entry: the first 8 bytes big-endian decide most comparisons without memcmp. */
typedef struct {
    uint64_t key;
    const uint8_t *text;
    uint32_t len;
    int32_t id;
} sort_ent;

static int cmp_tokens(const void *pa, const void *pb) {
    const sort_ent *x = pa, *y = pb;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    int r = memcmp(x->text, y->text, x->len < y->len ? x->len : y->len);
    if (r) return r;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Plain string content: no quote, backslash or control byte, whole valid UTF-8 characters. */
static int32_t plain_cps(const uint8_t *s, uint32_t n) {
    int32_t cps = 0;
    for (uint32_t i = 0; i < n;) {
        int c = s[i];
        if (c == '"' || c == '\\' || c < 0x20) return -1;
        if (c < 0x80) { i++; cps++; continue; }
        int lo, hi, k = utf8_lead(c, &lo, &hi);
        if (!k || i + (uint32_t)k >= n) return -1; /* needs bytes i+1 .. i+k */
        if (s[i + 1] < lo || s[i + 1] > hi) return -1;
        for (int j = 2; j <= k; j++)
            if (s[i + (uint32_t)j] < 0x80 || s[i + (uint32_t)j] > 0xBF) return -1;
        i += (uint32_t)k + 1;
        cps++;
    }
    return cps;
}

/* A token that is not plain string content can still continue a string body (between
 * characters) only if its first non-plain byte is a quote, a backslash or the start of a
 * UTF-8 character the token leaves unfinished; a control byte or broken UTF-8 first never
 * can. Only those tokens are walked byte by byte in the string fast path. */
static bool string_walk_needed(const uint8_t *s, uint32_t n) {
    for (uint32_t i = 0; i < n;) {
        int c = s[i];
        if (c == '"' || c == '\\') return true;
        if (c < 0x20) return false;
        if (c < 0x80) { i++; continue; }
        int lo, hi, k = utf8_lead(c, &lo, &hi);
        if (!k) return false;
        for (int j = 1; j <= k; j++) {
            if (i + (uint32_t)j >= n) return true; /* unfinished at the end of the token */
            int b = s[i + (uint32_t)j];
            if (j == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return false;
        }
        i += (uint32_t)k + 1;
    }
    return false; /* plain (handled by the table) */
}

/* Every token's piece (bytes) into one text buffer; end-of-generation and empty pieces flagged. */
static int vocab_pieces(grammar_vocab *v) {
    const tokenizer *t = v->tok;
    int32_t nv = v->n_vocab;
    v->off = malloc(((size_t)nv + 1) * sizeof *v->off);
    v->flags = calloc((size_t)nv, 1);
    v->cps = calloc((size_t)nv, sizeof *v->cps);
    if (!v->off || !v->flags || !v->cps) return -1;
    size_t total = 0, cap = (size_t)nv * 8 + 64;
    v->text = malloc(cap);
    if (!v->text) return -1;
    for (int32_t i = 0; i < nv; i++) {
        v->off[i] = (uint32_t)total;
        if (tokenizer_is_eog(t, i)) { v->flags[i] = TF_EOG; continue; }
        if (cap - total < 256) {
            cap *= 2;
            uint8_t *q = cap <= UINT32_MAX ? realloc(v->text, cap) : NULL;
            if (!q) return -1;
            v->text = q;
        }
        int len = tokenizer_token_to_piece(t, i, (char *)v->text + total, 256, false);
        if (len <= 0 || len > 65535) { v->flags[i] = TF_EMPTY; continue; }
        if (len > 256) { /* a long piece: make room and fetch it again */
            while (cap - total < (size_t)len) cap *= 2;
            uint8_t *q = cap <= UINT32_MAX ? realloc(v->text, cap) : NULL;
            if (!q) return -1;
            v->text = q;
            tokenizer_token_to_piece(t, i, (char *)v->text + total, len, false);
        }
        total += (size_t)len;
        if (len > v->max_len) v->max_len = len;
    }
    v->off[nv] = (uint32_t)total;
    return 0;
}

/* The tokens with text in byte order (v->sorted), plain ones marked, the rest that need the
 * string walk listed (v->nonplain). The number of tokens with text, or -1. */
static int32_t vocab_sort(grammar_vocab *v) {
    int32_t nv = v->n_vocab;
    int32_t n_text = 0;
    for (int32_t i = 0; i < nv; i++)
        if (!v->flags[i]) n_text++;
    v->sorted = malloc((size_t)(n_text ? n_text : 1) * sizeof *v->sorted);
    v->nonplain = malloc((size_t)(n_text ? n_text : 1) * sizeof *v->nonplain);
    if (!v->sorted || !v->nonplain) return -1;
    sort_ent *ents = malloc((size_t)(n_text ? n_text : 1) * sizeof *ents);
    if (!ents) return -1;
    int32_t k = 0;
    for (int32_t i = 0; i < nv; i++) {
        if (v->flags[i]) continue;
        const uint8_t *p = v->text + v->off[i];
        uint32_t len = v->off[i + 1] - v->off[i];
        uint64_t key = 0;
        for (uint32_t j = 0; j < 8; j++) key = key << 8 | (j < len ? p[j] : 0);
        ents[k++] = (sort_ent){.key = key, .text = p, .len = len, .id = i};
        int32_t cp = plain_cps(p, len);
        if (cp > 0) { v->flags[i] = TF_PLAIN; v->cps[i] = cp; }
        else if (string_walk_needed(p, len)) v->nonplain[v->n_nonplain++] = i;
    }
    qsort(ents, (size_t)n_text, sizeof *ents, cmp_tokens);
    for (int32_t j = 0; j < n_text; j++) v->sorted[j] = ents[j].id;
    free(ents);
    return n_text;
}

/* The preorder trie of the n_text sorted tokens: a token adds one node per byte past its
 * common prefix with the previous token in sorted order. */
static int vocab_trie(grammar_vocab *v, int32_t n_text) {
    size_t n_nodes = 0, cap_nodes = (size_t)n_text * 4 + 16;
    v->nbyte = malloc(cap_nodes);
    v->ndepth = malloc(cap_nodes * sizeof *v->ndepth);
    v->ntok0 = malloc(cap_nodes * sizeof *v->ntok0);
    v->nntok = malloc(cap_nodes * sizeof *v->nntok);
    if (!v->nbyte || !v->ndepth || !v->ntok0 || !v->nntok) return -1;
    uint32_t prev_len = 0;
    const uint8_t *prev = NULL;
    for (int32_t j = 0; j < n_text; j++) {
        int32_t id = v->sorted[j];
        const uint8_t *s = v->text + v->off[id];
        uint32_t len = v->off[id + 1] - v->off[id], lcp = 0;
        while (prev && lcp < len && lcp < prev_len && s[lcp] == prev[lcp]) lcp++;
        if (prev && lcp == len && len == prev_len) { v->nntok[n_nodes - 1]++; continue; } /* same text */
        if (n_nodes + len - lcp > cap_nodes) {
            while (n_nodes + len - lcp > cap_nodes) cap_nodes *= 2;
            uint8_t *b = realloc(v->nbyte, cap_nodes);
            if (b) v->nbyte = b;
            uint16_t *d = realloc(v->ndepth, cap_nodes * sizeof *d);
            if (d) v->ndepth = d;
            int32_t *t0 = realloc(v->ntok0, cap_nodes * sizeof *t0);
            if (t0) v->ntok0 = t0;
            int32_t *nt = realloc(v->nntok, cap_nodes * sizeof *nt);
            if (nt) v->nntok = nt;
            if (!b || !d || !t0 || !nt) return -1;
        }
        for (uint32_t d = lcp; d < len; d++) {
            v->nbyte[n_nodes] = s[d];
            v->ndepth[n_nodes] = (uint16_t)(d + 1);
            v->ntok0[n_nodes] = j;
            v->nntok[n_nodes] = d + 1 == len ? 1 : 0;
            n_nodes++;
        }
        prev = s;
        prev_len = len;
    }
    v->n_nodes = (int32_t)n_nodes;
    v->nend = malloc((n_nodes ? n_nodes : 1) * sizeof *v->nend);
    int32_t *open = malloc(((size_t)v->max_len + 1) * sizeof *open);
    if (!v->nend || !open) { free(open); return -1; }
    int n_open = 0;
    for (int32_t i = 0; i < (int32_t)n_nodes; i++) {
        while (n_open > 0 && v->ndepth[open[n_open - 1]] >= v->ndepth[i]) v->nend[open[--n_open]] = i;
        open[n_open++] = i;
    }
    while (n_open > 0) v->nend[open[--n_open]] = (int32_t)n_nodes;
    free(open);
    return 0;
}

static int build_vocab(grammar_vocab *v) {
    if (vocab_pieces(v) != 0) return -1;
    int32_t n_text = vocab_sort(v);
    if (n_text < 0) return -1;
    return vocab_trie(v, n_text);
}

void grammar_vocab_free(grammar_vocab *v) {
    if (!v) return;
    free(v->text);
    free(v->off);
    free(v->flags);
    free(v->cps);
    free(v->nonplain);
    free(v->nbyte);
    free(v->ndepth);
    free(v->nend);
    free(v->ntok0);
    free(v->nntok);
    free(v->sorted);
    free(v);
}

grammar_vocab *grammar_vocab_new(const tokenizer *tok) {
    if (!tok) { anv_set_error("grammar_vocab_new: no tokenizer"); return NULL; }
    grammar_vocab *v = calloc(1, sizeof *v);
    if (!v) { anv_set_error("out of memory"); return NULL; }
    v->tok = tok;
    v->n_vocab = tokenizer_n_vocab(tok);
    if (v->n_vocab <= 0 || build_vocab(v) != 0) {
        grammar_vocab_free(v);
        anv_set_error("grammar: out of memory indexing the vocabulary");
        return NULL;
    }
    return v;
}

grammar_matcher *grammar_matcher_new_shared(const grammar *g, const grammar_vocab *v) {
    if (!g || !v) { anv_set_error("grammar_matcher_new: no grammar or vocabulary"); return NULL; }
    grammar_matcher *m = calloc(1, sizeof *m);
    if (!m) { anv_set_error("out of memory"); return NULL; }
    m->g = g;
    m->tok = v->tok;
    m->n_vocab = v->n_vocab;
    m->v = v;
    m->ok = malloc((size_t)m->n_vocab);
    m->levels = calloc((size_t)v->max_len + 1, sizeof *m->levels);
    if (!m->ok || !m->levels) {
        grammar_matcher_free(m);
        anv_set_error("out of memory");
        return NULL;
    }
    grammar_matcher_reset(m);
    return m;
}

grammar_matcher *grammar_matcher_new(const grammar *g, const tokenizer *tok) {
    if (!g || !tok) { anv_set_error("grammar_matcher_new: no grammar or tokenizer"); return NULL; }
    grammar_vocab *v = grammar_vocab_new(tok);
    if (!v) return NULL;
    grammar_matcher *m = grammar_matcher_new_shared(g, v);
    if (!m) { grammar_vocab_free(v); return NULL; }
    m->own_v = v;
    return m;
}

void grammar_matcher_free(grammar_matcher *m) {
    if (!m) return;
    free(m->ok);
    if (m->levels)
        for (int32_t i = 0; i <= m->v->max_len; i++) set_free(&m->levels[i]);
    free(m->levels);
    set_free(&m->cur);
    set_free(&m->tmp[0]);
    set_free(&m->tmp[1]);
    set_free(&m->split[0]);
    set_free(&m->split[1]);
    grammar_vocab_free(m->own_v);
    free(m);
}

void grammar_matcher_reset(grammar_matcher *m) {
    set_init(&m->cur);
    m->finished = false;
}

bool grammar_matcher_done(const grammar_matcher *m) { return m->cur.n > 0 && set_done(m->g, &m->cur); }

/* Steps set `from` over bytes s; returns the resulting set (possibly empty, m->tmp scratch). */
static const gset *walk(grammar_matcher *m, const gset *from, const uint8_t *s, uint32_t n) {
    const gset *in = from;
    int w = 0;
    for (uint32_t i = 0; i < n; i++) {
        step_set(m->g, in, s[i], &m->tmp[w]);
        in = &m->tmp[w];
        w ^= 1;
        if (in->n == 0 || in->overflow) break;
    }
    return in;
}

/* Splits the current set into stacks inside a string body between characters (*str,
 * where the plain-token table applies) and the others (*rest). Returns the most code
 * points any string-body stack may still take (-1 if there is none). */
static int32_t split_string_body(grammar_matcher *m, gset *str, gset *rest) {
    int32_t room = -1;
    str->n = rest->n = 0;
    str->overflow = rest->overflow = false;
    for (int i = 0; i < m->cur.n; i++) {
        const gstack *s = &m->cur.s[i];
        const frame *f = &s->f[s->depth - 1];
        const gnode *n = f->node == NODE_DOC ? NULL : &m->g->nodes[f->node];
        if (n && n->kind == GN_STRING && f->ph == S_BODY) {
            int32_t r = n->max < 0 ? INT32_MAX : n->max - f->a;
            if (r > room) room = r;
            set_add(str, s);
        } else set_add(rest, s);
    }
    return room;
}

/* Marks in m->ok every token the set `from` lets through, walking the vocabulary trie. */
static void trie_walk(grammar_matcher *m, const gset *from) {
    for (int32_t i = 0; i < m->v->n_nodes;) {
        int d = m->v->ndepth[i];
        gset *lv = &m->levels[d];
        step_set(m->g, d == 1 ? from : &m->levels[d - 1], m->v->nbyte[i], lv);
        m->overflowed |= lv->overflow;
        if (lv->n == 0 || lv->overflow) { i = m->v->nend[i]; continue; }
        for (int32_t k = 0; k < m->v->nntok[i]; k++) m->ok[m->v->sorted[m->v->ntok0[i] + k]] = 1;
        i++;
    }
}

int grammar_matcher_mask(grammar_matcher *m, float *logits) {
    const int32_t nv = m->n_vocab;
    uint8_t *ok = m->ok;
    memset(ok, 0, (size_t)nv);
    bool done = grammar_matcher_done(m);
    m->overflowed = m->cur.overflow;
    if (m->cur.n > 0 && !m->cur.overflow && !m->finished) {
        gset *str = &m->split[0], *rest = &m->split[1];
        int32_t room = split_string_body(m, str, rest);
        if (room >= 0) {
            /* Plain tokens by table; the others one by one against the string stacks;
             * whatever the other stacks allow by the trie walk. */
            for (int32_t i = 0; i < nv; i++) ok[i] = (m->v->flags[i] & TF_PLAIN) && m->v->cps[i] <= room;
            for (int32_t j = 0; j < m->v->n_nonplain; j++) {
                int32_t id = m->v->nonplain[j];
                const gset *r = walk(m, str, m->v->text + m->v->off[id], m->v->off[id + 1] - m->v->off[id]);
                ok[id] = r->n > 0 && !r->overflow;
                m->overflowed |= r->overflow;
            }
            if (rest->n > 0) trie_walk(m, rest);
        } else trie_walk(m, &m->cur);
    }
    int32_t n_ok = 0;
    for (int32_t i = 0; i < nv; i++) {
        if (m->v->flags[i] & TF_EOG) ok[i] = done;
        if (!ok[i]) logits[i] = -INFINITY;
        n_ok += ok[i];
    }
    if (n_ok > 0) return 0;
    if (m->overflowed)
        anv_set_error("the JSON schema is too ambiguous: more than %d alternatives (anyOf/oneOf branches) are alive at once",
                      MAX_STACKS);
    else
        anv_set_error("no token of the vocabulary can continue the JSON document the schema allows");
    return -1;
}

int grammar_matcher_accept(grammar_matcher *m, int32_t token) {
    if (token < 0 || token >= m->n_vocab) { anv_set_error("grammar: token %d out of range", token); return -1; }
    if (m->v->flags[token] & TF_EOG) {
        if (!grammar_matcher_done(m)) {
            anv_set_error("grammar: end of generation before the JSON document is complete");
            return -1;
        }
        m->finished = true;
        return 0;
    }
    if (m->v->flags[token] & TF_EMPTY) { anv_set_error("grammar: token %d has no text", token); return -1; }
    if (m->finished) { anv_set_error("grammar: token %d after end of generation", token); return -1; }
    const gset *r = walk(m, &m->cur, m->v->text + m->v->off[token], m->v->off[token + 1] - m->v->off[token]);
    if (r->overflow) { anv_set_error("grammar: too many alternatives alive (schema too ambiguous)"); return -1; }
    if (r->n == 0) { anv_set_error("grammar: token %d does not continue the JSON document", token); return -1; }
    set_copy(&m->cur, r);
    return 0;
}
