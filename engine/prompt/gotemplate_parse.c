/* gotemplate_parse: lexer and parser for the Go text/template subset (gotemplate.h),
 * building the tree of gotemplate_impl.h with Go's rules: {{- / -}} trim the adjacent
 * whitespace (space, \t, \r, \n), comment actions must touch their delimiters, operands
 * are separated by spaces, `.A.B` / `$x.A` / `(pipe).A` chain fields, variables must be
 * declared before use and live until the end of the enclosing if/range/with, {{else if}}
 * and {{else with}} are sugar for a nested block sharing the {{end}}, {{break}} and
 * {{continue}} only inside {{range}}, functions must exist. Also Ollama's touches done at
 * parse time: its Vars() scan (does the template use .Messages / .Response?), the
 * {{ .Response }} it appends to templates that use neither, and the copy of the tree
 * cut after the first .Response field (Ollama's deleteNode, template/template.go) that
 * renders the last turn of a per-turn template. Errors name line, column and offset. */
#include "gotemplate_impl.h"

#include "error.h"

#include <ctype.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- arena ---------------------------------------------------------------------------- */

struct gt_arena_block {
    gt_arena_block *next;
    size_t used, cap;
    max_align_t data[];
};

void *gt_alloc(gotmpl *t, size_t n) {
    n = (n + 15) & ~(size_t)15;
    gt_arena_block *b = t->arena;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        b = calloc(1, sizeof(*b) + cap);
        if (!b) return NULL;
        b->cap = cap;
        b->next = t->arena;
        t->arena = b;
    }
    void *p = (char *)b->data + b->used;
    b->used += n;
    return p;
}

static void arena_free(gt_arena_block *b) {
    while (b) {
        gt_arena_block *next = b->next;
        free(b);
        b = next;
    }
}

void gt_error_at(const char *src, size_t src_len, int pos, const char *fmt, ...) {
    int line = 1, col = 1;
    for (int i = 0; i < pos && (size_t)i < src_len; i++) {
        if (src[i] == '\n') line++, col = 1;
        else col++;
    }
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    anv_set_error("gotemplate: line %d col %d (offset %d): %s", line, col, pos, msg);
}

/* ---- tokens --------------------------------------------------------------------------- */

typedef enum {
    T_RDELIM, T_IDENT, T_KEYWORD, T_BOOL, T_NIL, T_FIELD, T_DOT, T_VAR, T_STRING, T_RAWSTRING,
    T_NUMBER, T_LPAREN, T_RPAREN, T_PIPE, T_DECLARE, T_ASSIGN, T_COMMA,
} tok_kind;

typedef struct {
    tok_kind kind;
    int pos;
    int len;
    bool space_before;
    bool trim;  /* T_RDELIM: -}} */
} tok;

typedef struct {
    gotmpl *t;
    const char *s;
    size_t n;
    size_t pos;
    tok *toks;      /* the current action's tokens, ending with T_RDELIM */
    int n_toks, cap_toks, ti;
    gt_str *vars;   /* declared variables in scope */
    int n_vars, cap_vars;
    int depth, range_depth;
    bool trim_next; /* the last action ended with -}} */
    jmp_buf fail;
} parser;

static _Noreturn void perr(parser *p, int pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static _Noreturn void perr(parser *p, int pos, const char *fmt, ...) {
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    gt_error_at(p->s, p->n, pos, "%s", msg);
    longjmp(p->fail, 1);
}

static void *palloc(parser *p, size_t n) {
    void *m = gt_alloc(p->t, n);
    if (!m) perr(p, (int)p->pos, "out of memory");
    return m;
}

/* Growable arrays live in the arena too (a longjmp out of the parser leaks nothing). */
static void *grow(parser *p, void *arr, int n, int *cap, size_t elem) {
    if (n < *cap) return arr;
    int nc = *cap ? *cap * 2 : 8;
    void *na = palloc(p, (size_t)nc * elem);
    if (n) memcpy(na, arr, (size_t)n * elem);
    *cap = nc;
    return na;
}

static bool is_space(int c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
static bool is_alnum(int c) { return c == '_' || isalnum(c) || c >= 0x80; }

static bool at(const parser *p, size_t i, const char *lit) {
    size_t l = strlen(lit);
    return i + l <= p->n && memcmp(p->s + i, lit, l) == 0;
}

/* Go's atTerminator: what may follow a field, variable or identifier. */
static bool at_terminator(const parser *p, size_t i) {
    if (i >= p->n) return true;
    int c = (unsigned char)p->s[i];
    return is_space(c) || c == '.' || c == ',' || c == '|' || c == ':' || c == ')' || c == '(' || at(p, i, "}}");
}

static const char *char_name(int c, char buf[16]) {
    if (c >= 0x20 && c < 0x7f) snprintf(buf, 16, "'%c'", c);
    else snprintf(buf, 16, "byte 0x%02x", c);
    return buf;
}

static void add_tok(parser *p, tok_kind k, size_t start, size_t end, bool space) {
    p->toks = grow(p, p->toks, p->n_toks, &p->cap_toks, sizeof(tok));
    p->toks[p->n_toks++] = (tok){k, (int)start, (int)(end - start), space, false};
}

static const char *const KEYWORDS[] = {"if", "else", "end", "range", "with", "define", "template", "block",
                                       "break", "continue", NULL};

/* Lexes one action (p->pos just after "{{" and its trim marker) into p->toks, through the
 * closing delimiter; p->pos ends after it. */
static void lex_action(parser *p) {
    p->n_toks = 0;
    p->ti = 0;
    for (;;) {
        bool space = false;
        while (p->pos < p->n && is_space((unsigned char)p->s[p->pos])) p->pos++, space = true;
        size_t st = p->pos;
        if (st >= p->n) perr(p, (int)st, "unclosed action");
        int c = (unsigned char)p->s[st];
        if (c == '-' && space && at(p, st + 1, "}}")) {
            add_tok(p, T_RDELIM, st, st + 3, space);
            p->toks[p->n_toks - 1].trim = true;
            p->pos = st + 3;
            return;
        }
        if (at(p, st, "}}")) {
            add_tok(p, T_RDELIM, st, st + 2, space);
            p->pos = st + 2;
            return;
        }
        char cb[16];
        switch (c) {
        case '|': add_tok(p, T_PIPE, st, st + 1, space); p->pos++; continue;
        case '(': add_tok(p, T_LPAREN, st, st + 1, space); p->pos++; continue;
        case ')': add_tok(p, T_RPAREN, st, st + 1, space); p->pos++; continue;
        case ',': add_tok(p, T_COMMA, st, st + 1, space); p->pos++; continue;
        case '=': add_tok(p, T_ASSIGN, st, st + 1, space); p->pos++; continue;
        case ':':
            if (!at(p, st + 1, "=")) perr(p, (int)st, "expected :=");
            add_tok(p, T_DECLARE, st, st + 2, space);
            p->pos += 2;
            continue;
        case '"': {
            size_t i = st + 1;
            for (;; i++) {
                if (i >= p->n || p->s[i] == '\n') perr(p, (int)st, "unterminated quoted string");
                if (p->s[i] == '\\') { i++; if (i >= p->n || p->s[i] == '\n') perr(p, (int)st, "unterminated quoted string"); continue; }
                if (p->s[i] == '"') break;
            }
            add_tok(p, T_STRING, st, i + 1, space);
            p->pos = i + 1;
            continue;
        }
        case '`': {
            const char *e = memchr(p->s + st + 1, '`', p->n - st - 1);
            if (!e) perr(p, (int)st, "unterminated raw quoted string");
            size_t end = (size_t)(e - p->s) + 1;
            add_tok(p, T_RAWSTRING, st, end, space);
            p->pos = end;
            continue;
        }
        case '\'': perr(p, (int)st, "character constants are not supported");
        case '$': {
            size_t i = st + 1;
            while (i < p->n && is_alnum((unsigned char)p->s[i])) i++;
            if (!at_terminator(p, i)) perr(p, (int)i, "bad character %s", char_name((unsigned char)p->s[i], cb));
            add_tok(p, T_VAR, st, i, space);
            p->pos = i;
            continue;
        }
        default: break;
        }
        if (c == '.' && !(st + 1 < p->n && isdigit((unsigned char)p->s[st + 1]))) {
            size_t i = st + 1;
            while (i < p->n && is_alnum((unsigned char)p->s[i])) i++;
            if (!at_terminator(p, i)) perr(p, (int)i, "bad character %s", char_name((unsigned char)p->s[i], cb));
            add_tok(p, i == st + 1 ? T_DOT : T_FIELD, st, i, space);
            p->pos = i;
            continue;
        }
        if (c == '+' || c == '-' || c == '.' || isdigit(c)) {
            size_t i = st + 1;
            while (i < p->n) {
                int d = (unsigned char)p->s[i];
                if (is_alnum(d) || d == '.') i++;
                else if ((d == '+' || d == '-') && strchr("eEpP", p->s[i - 1])) i++;
                else break;
            }
            add_tok(p, T_NUMBER, st, i, space);
            p->pos = i;
            continue;
        }
        if (is_alnum(c)) {
            size_t i = st;
            while (i < p->n && is_alnum((unsigned char)p->s[i])) i++;
            if (!at_terminator(p, i)) perr(p, (int)i, "bad character %s", char_name((unsigned char)p->s[i], cb));
            tok_kind k = T_IDENT;
            size_t l = i - st;
            for (int j = 0; KEYWORDS[j]; j++) {
                if (strlen(KEYWORDS[j]) == l && memcmp(KEYWORDS[j], p->s + st, l) == 0) k = T_KEYWORD;
            }
            if ((l == 4 && memcmp(p->s + st, "true", 4) == 0) || (l == 5 && memcmp(p->s + st, "false", 5) == 0)) k = T_BOOL;
            if (l == 3 && memcmp(p->s + st, "nil", 3) == 0) k = T_NIL;
            add_tok(p, k, st, i, space);
            p->pos = i;
            continue;
        }
        perr(p, (int)st, "unrecognized character in action: %s", char_name(c, cb));
    }
}

/* The closing delimiter is the last token; reading stops there. */
static tok *peek(parser *p) { return &p->toks[p->ti]; }
static tok *next(parser *p) {
    tok *t = &p->toks[p->ti];
    if (t->kind != T_RDELIM) p->ti++;
    else p->trim_next = t->trim;
    return t;
}
static bool tok_is(const parser *p, const tok *t, const char *word) {
    return (int)strlen(word) == t->len && memcmp(p->s + t->pos, word, (size_t)t->len) == 0;
}
static gt_str tok_str(const parser *p, const tok *t) { return (gt_str){p->s + t->pos, (size_t)t->len}; }

/* A short description of a token for messages. */
static const char *tok_desc(const parser *p, const tok *t, char *buf, size_t cap) {
    if (t->kind == T_RDELIM) return "}}";
    int l = t->len > 40 ? 40 : t->len;
    snprintf(buf, cap, "\"%.*s\"", l, p->s + t->pos);
    return buf;
}

/* ---- literals ------------------------------------------------------------------------- */

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static size_t put_utf8(char *o, uint32_t r) {
    if (r < 0x80) { o[0] = (char)r; return 1; }
    if (r < 0x800) { o[0] = (char)(0xC0 | (r >> 6)); o[1] = (char)(0x80 | (r & 0x3F)); return 2; }
    if (r < 0x10000) {
        o[0] = (char)(0xE0 | (r >> 12)); o[1] = (char)(0x80 | ((r >> 6) & 0x3F)); o[2] = (char)(0x80 | (r & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (r >> 18)); o[1] = (char)(0x80 | ((r >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((r >> 6) & 0x3F)); o[3] = (char)(0x80 | (r & 0x3F));
    return 4;
}

/* Go's strconv.Unquote for "..." and `...` literals. */
static gt_str decode_string(parser *p, const tok *t) {
    const char *s = p->s + t->pos + 1;
    size_t n = (size_t)t->len - 2;
    char *o = palloc(p, n + 1);
    size_t k = 0;
    if (t->kind == T_RAWSTRING) { /* raw strings drop carriage returns */
        for (size_t i = 0; i < n; i++) if (s[i] != '\r') o[k++] = s[i];
        return (gt_str){o, k};
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\') { o[k++] = s[i]; continue; }
        int epos = t->pos + 1 + (int)i;
        char c = s[++i];
        switch (c) {
        case 'a': o[k++] = '\a'; break;
        case 'b': o[k++] = '\b'; break;
        case 'f': o[k++] = '\f'; break;
        case 'n': o[k++] = '\n'; break;
        case 'r': o[k++] = '\r'; break;
        case 't': o[k++] = '\t'; break;
        case 'v': o[k++] = '\v'; break;
        case '\\': o[k++] = '\\'; break;
        case '"': o[k++] = '"'; break;
        case 'x': case 'u': case 'U': {
            int nd = c == 'x' ? 2 : c == 'u' ? 4 : 8;
            uint32_t v = 0;
            for (int j = 0; j < nd; j++) {
                int h = i + 1 + (size_t)j < n ? hexval((unsigned char)s[i + 1 + (size_t)j]) : -1;
                if (h < 0) perr(p, epos, "invalid syntax in string literal (bad \\%c escape)", c);
                v = v * 16 + (uint32_t)h;
            }
            i += (size_t)nd;
            if (c == 'x') o[k++] = (char)v;
            else {
                if (v > 0x10FFFF || (v >= 0xD800 && v < 0xE000)) perr(p, epos, "invalid syntax in string literal (bad code point)");
                k += put_utf8(o + k, v);
            }
            break;
        }
        case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': {
            uint32_t v = 0;
            for (int j = 0; j < 3; j++) {
                int d = i + (size_t)j < n ? s[i + (size_t)j] : 0;
                if (d < '0' || d > '7') perr(p, epos, "invalid syntax in string literal (bad octal escape)");
                v = v * 8 + (uint32_t)(d - '0');
            }
            if (v > 255) perr(p, epos, "invalid syntax in string literal (octal escape > 255)");
            i += 2;
            o[k++] = (char)v;
            break;
        }
        default: perr(p, epos, "invalid syntax in string literal (unknown escape)");
        }
    }
    return (gt_str){o, k};
}

/* Integers as Go writes them (decimal, 0x, 0o, 0b, leading-0 octal, '_' separators). */
static int64_t parse_int(parser *p, const tok *t) {
    char buf[80];
    int l = 0;
    const char *s = p->s + t->pos;
    int n = t->len;
    bool neg = false;
    int i = 0;
    if (i < n && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    for (int j = i; j < n; j++) {
        char c = s[j];
        if (c == '.' || c == 'i' || ((c == 'e' || c == 'E') && !(n - i > 1 && (s[i + 1] == 'x' || s[i + 1] == 'X'))) ||
            c == 'p' || c == 'P') {
            bool hex = n - i > 1 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X');
            if (!(hex && (c == 'e' || c == 'E')))
                perr(p, t->pos, "floating-point and complex constants are not supported: %.*s", n, s);
        }
    }
    int base = 10;
    if (n - i > 1 && s[i] == '0') {
        char b = (char)tolower((unsigned char)s[i + 1]);
        if (b == 'x') base = 16, i += 2;
        else if (b == 'o') base = 8, i += 2;
        else if (b == 'b') base = 2, i += 2;
        else base = 8, i += 1;
    }
    for (; i < n && l < (int)sizeof(buf) - 1; i++) {
        if (s[i] == '_') continue;
        buf[l++] = s[i];
    }
    buf[l] = 0;
    if (l == 0 && base != 8) perr(p, t->pos, "bad number syntax: %.*s", n, s);
    if (l == 0) return 0; /* "0" */
    char *end;
    unsigned long long v = strtoull(buf, &end, base);
    if (*end || buf[0] == '-' || buf[0] == '+') perr(p, t->pos, "bad number syntax: %.*s", n, s);
    if (v > (unsigned long long)INT64_MAX + (neg ? 1u : 0u) || (v == ULLONG_MAX))
        perr(p, t->pos, "number out of range: %.*s", n, s);
    return neg ? (int64_t)(0 - v) : (int64_t)v;
}

/* ---- pipelines ------------------------------------------------------------------------ */

static const struct { const char *name; gt_func f; } FUNCS[] = {
    {"and", GT_F_AND}, {"or", GT_F_OR},   {"not", GT_F_NOT},     {"eq", GT_F_EQ},       {"ne", GT_F_NE},
    {"lt", GT_F_LT},   {"le", GT_F_LE},   {"gt", GT_F_GT},       {"ge", GT_F_GE},       {"len", GT_F_LEN},
    {"index", GT_F_INDEX}, {"slice", GT_F_SLICE}, {"print", GT_F_PRINT}, {"println", GT_F_PRINTLN},
    {"json", GT_F_JSON},
};
/* Go builtins a template may legally use that this engine does not implement. */
static const char *const UNSUPPORTED_FUNCS[] = {"printf", "html", "js", "urlquery", "call", NULL};

static void declare_var(parser *p, gt_str name) {
    p->vars = grow(p, p->vars, p->n_vars, &p->cap_vars, sizeof(gt_str));
    p->vars[p->n_vars++] = name;
}

static void use_var(parser *p, const tok *t) {
    gt_str v = tok_str(p, t);
    if (v.n == 1) return; /* $ */
    for (int i = p->n_vars - 1; i >= 0; i--) {
        if (p->vars[i].n == v.n && memcmp(p->vars[i].s, v.s, v.n) == 0) return;
    }
    perr(p, t->pos, "undefined variable \"%.*s\"", (int)v.n, v.s);
}

static gt_pipe *parse_pipeline(parser *p, const char *context, tok_kind end);

static gt_arg *new_arg(parser *p, gt_arg_kind k, int pos) {
    gt_arg *a = palloc(p, sizeof(*a));
    a->kind = k;
    a->pos = pos;
    return a;
}

static gt_arg *parse_term(parser *p) {
    tok *t = peek(p);
    gt_arg *a;
    switch (t->kind) {
    case T_IDENT: {
        next(p);
        for (size_t i = 0; i < sizeof(FUNCS) / sizeof(FUNCS[0]); i++) {
            if (tok_is(p, t, FUNCS[i].name)) {
                a = new_arg(p, GT_ARG_FUNC, t->pos);
                a->name = tok_str(p, t);
                a->func = FUNCS[i].f;
                return a;
            }
        }
        for (int i = 0; UNSUPPORTED_FUNCS[i]; i++) {
            if (tok_is(p, t, UNSUPPORTED_FUNCS[i]))
                perr(p, t->pos, "function \"%s\" is not supported", UNSUPPORTED_FUNCS[i]);
        }
        perr(p, t->pos, "function \"%.*s\" not defined", t->len > 60 ? 60 : t->len, p->s + t->pos);
    }
    case T_DOT: next(p); return new_arg(p, GT_ARG_DOT, t->pos);
    case T_NIL: next(p); return new_arg(p, GT_ARG_NIL, t->pos);
    case T_BOOL:
        next(p);
        a = new_arg(p, GT_ARG_BOOL, t->pos);
        a->bval = tok_is(p, t, "true");
        return a;
    case T_VAR:
        next(p);
        use_var(p, t);
        a = new_arg(p, GT_ARG_VAR, t->pos);
        a->name = tok_str(p, t);
        return a;
    case T_FIELD:
        next(p);
        a = new_arg(p, GT_ARG_FIELD, t->pos);
        a->fields = palloc(p, sizeof(gt_str));
        a->fields[0] = (gt_str){p->s + t->pos + 1, (size_t)t->len - 1};
        a->n_fields = 1;
        return a;
    case T_NUMBER:
        next(p);
        a = new_arg(p, GT_ARG_INT, t->pos);
        a->ival = parse_int(p, t);
        return a;
    case T_STRING:
    case T_RAWSTRING:
        next(p);
        a = new_arg(p, GT_ARG_STRING, t->pos);
        a->str = decode_string(p, t);
        return a;
    case T_LPAREN:
        next(p);
        if (++p->depth > GT_MAX_DEPTH) perr(p, t->pos, "nesting deeper than %d levels", GT_MAX_DEPTH);
        a = new_arg(p, GT_ARG_PIPE, t->pos);
        a->pipe = parse_pipeline(p, "parenthesized pipeline", T_RPAREN);
        p->depth--;
        return a;
    default: return NULL;
    }
}

static gt_arg *parse_operand(parser *p) {
    gt_arg *a = parse_term(p);
    if (!a) return NULL;
    if (peek(p)->kind != T_FIELD || peek(p)->space_before) return a;
    char b1[64];
    switch (a->kind) {
    case GT_ARG_FIELD: case GT_ARG_VAR: case GT_ARG_PIPE: break;
    default: perr(p, peek(p)->pos, "unexpected %s after term", tok_desc(p, peek(p), b1, sizeof(b1)));
    }
    int cap = a->n_fields;
    while (peek(p)->kind == T_FIELD && !peek(p)->space_before) {
        tok *f = next(p);
        a->fields = grow(p, a->fields, a->n_fields, &cap, sizeof(gt_str));
        a->fields[a->n_fields++] = (gt_str){p->s + f->pos + 1, (size_t)f->len - 1};
    }
    return a;
}

static bool is_cmd_end(tok_kind k) { return k == T_PIPE || k == T_RPAREN || k == T_RDELIM; }

static void parse_command(parser *p, gt_cmd *c, const char *context) {
    int cap = 0;
    c->pos = peek(p)->pos;
    char b1[64];
    for (;;) {
        gt_arg *a = parse_operand(p);
        if (!a) break;
        c->args = grow(p, c->args, c->n_args, &cap, sizeof(gt_arg *));
        c->args[c->n_args++] = a;
        tok *t = peek(p);
        if (is_cmd_end(t->kind)) break;
        if (!t->space_before) perr(p, t->pos, "unexpected %s in operand", tok_desc(p, t, b1, sizeof(b1)));
    }
    if (c->n_args == 0) {
        tok *t = peek(p);
        if (is_cmd_end(t->kind)) perr(p, t->pos, "missing value for %s", context);
        perr(p, t->pos, "unexpected %s in %s", tok_desc(p, t, b1, sizeof(b1)), context);
    }
    if (c->args[0]->kind == GT_ARG_NIL) perr(p, c->args[0]->pos, "nil is not a command");
}

static gt_pipe *parse_pipeline(parser *p, const char *context, tok_kind end) {
    gt_pipe *pp = palloc(p, sizeof(*pp));
    pp->pos = peek(p)->pos;
    bool is_range = strcmp(context, "range") == 0;
    tok *t0 = &p->toks[p->ti];
    if (t0->kind == T_VAR && t0[1].kind == T_DECLARE) {
        pp->decl = GT_DECL_DECLARE;
        pp->vars[pp->n_vars++] = tok_str(p, t0);
        declare_var(p, tok_str(p, t0));
        p->ti += 2;
    } else if (t0->kind == T_VAR && t0[1].kind == T_ASSIGN) {
        use_var(p, t0);
        pp->decl = GT_DECL_ASSIGN;
        pp->vars[pp->n_vars++] = tok_str(p, t0);
        p->ti += 2;
    } else if (t0->kind == T_VAR && t0[1].kind == T_COMMA) {
        if (!is_range) perr(p, t0[1].pos, "too many declarations in %s", context);
        if (t0[2].kind != T_VAR) perr(p, t0[2].pos, "range can only initialize variables");
        if (t0[3].kind != T_DECLARE) perr(p, t0[3].pos, "range: expected := after two variables");
        pp->decl = GT_DECL_DECLARE;
        pp->vars[0] = tok_str(p, &t0[0]);
        pp->vars[1] = tok_str(p, &t0[2]);
        pp->n_vars = 2;
        declare_var(p, pp->vars[0]);
        declare_var(p, pp->vars[1]);
        p->ti += 4;
    }
    int cap = 0;
    char b1[64];
    for (;;) {
        pp->cmds = grow(p, pp->cmds, pp->n_cmds, &cap, sizeof(gt_cmd));
        gt_cmd *c = &pp->cmds[pp->n_cmds];
        memset(c, 0, sizeof(*c));
        parse_command(p, c, context);
        pp->n_cmds++;
        tok *t = peek(p);
        if (t->kind == T_PIPE) { next(p); continue; }
        if (t->kind == end) { next(p); break; }
        perr(p, t->pos, "unexpected %s in %s", tok_desc(p, t, b1, sizeof(b1)), context);
    }
    for (int i = 1; i < pp->n_cmds; i++) {
        if (pp->cmds[i].args[0]->kind != GT_ARG_FUNC)
            perr(p, pp->cmds[i].pos, "non executable command in pipeline stage %d", i + 1);
    }
    return pp;
}

/* ---- lists and control structures ----------------------------------------------------- */

typedef enum { TERM_EOF, TERM_END, TERM_ELSE, TERM_ELSE_IF, TERM_ELSE_WITH } term_kind;

static gt_node *new_node(parser *p, gt_node_kind k, int pos) {
    gt_node *n = palloc(p, sizeof(*n));
    n->kind = k;
    n->pos = pos;
    return n;
}

static void expect_rdelim(parser *p, const char *what) {
    tok *t = next(p);
    char b1[64];
    if (t->kind != T_RDELIM) perr(p, t->pos, "unexpected %s in %s", tok_desc(p, t, b1, sizeof(b1)), what);
}

static term_kind parse_list(parser *p, gt_list **out, int *term_pos);

/* After the keyword (if/range/with): the pipeline, the list, the else part, the end. */
static gt_node *parse_control(parser *p, gt_node_kind kind, int pos) {
    static const char *const NAMES[] = {[GT_N_IF] = "if", [GT_N_RANGE] = "range", [GT_N_WITH] = "with"};
    const char *name = NAMES[kind];
    if (++p->depth > GT_MAX_DEPTH) perr(p, pos, "nesting deeper than %d levels", GT_MAX_DEPTH);
    int mark = p->n_vars;
    gt_node *n = new_node(p, kind, pos);
    n->pipe = parse_pipeline(p, name, T_RDELIM);
    if (kind == GT_N_RANGE) p->range_depth++;
    int tpos;
    term_kind term = parse_list(p, &n->list, &tpos);
    if (kind == GT_N_RANGE) p->range_depth--;
    switch (term) {
    case TERM_EOF: perr(p, pos, "unexpected EOF: {{%s}} has no {{end}}", name);
    case TERM_END: break;
    case TERM_ELSE_IF:
    case TERM_ELSE_WITH:
        if ((term == TERM_ELSE_IF) != (kind == GT_N_IF) || (term == TERM_ELSE_WITH) != (kind == GT_N_WITH))
            perr(p, tpos, "{{else %s}} inside {{%s}}", term == TERM_ELSE_IF ? "if" : "with", name);
        n->else_list = palloc(p, sizeof(gt_list));
        n->else_list->nodes = palloc(p, sizeof(gt_node *));
        n->else_list->nodes[0] = parse_control(p, kind, tpos); /* shares our {{end}} */
        n->else_list->n = 1;
        break;
    case TERM_ELSE: {
        int epos;
        term_kind t2 = parse_list(p, &n->else_list, &epos);
        if (t2 == TERM_EOF) perr(p, pos, "unexpected EOF: {{%s}} has no {{end}}", name);
        if (t2 != TERM_END) perr(p, epos, "expected end; found {{else}}");
        break;
    }
    }
    p->n_vars = mark;
    p->depth--;
    return n;
}

static void add_node(parser *p, gt_list *l, int *cap, gt_node *n) {
    l->nodes = grow(p, l->nodes, l->n, cap, sizeof(gt_node *));
    l->nodes[l->n++] = n;
}

/* Parses text and actions until EOF, {{end}} or {{else ...}} (which it consumes; for
 * {{else if}} / {{else with}} it also consumes the keyword and leaves the pipeline). */
static term_kind parse_list(parser *p, gt_list **out, int *term_pos) {
    gt_list *l = palloc(p, sizeof(*l));
    *out = l;
    int cap = 0;
    for (;;) {
        size_t start = p->pos, idx = p->pos;
        while (idx + 1 < p->n && !(p->s[idx] == '{' && p->s[idx + 1] == '{')) idx++;
        bool found = idx + 1 < p->n;
        if (!found) idx = p->n;
        size_t ts = start, te = idx;
        if (p->trim_next) {
            while (ts < te && is_space((unsigned char)p->s[ts])) ts++;
            p->trim_next = false;
        }
        bool ltrim = found && idx + 3 < p->n && p->s[idx + 2] == '-' && is_space((unsigned char)p->s[idx + 3]);
        if (ltrim) while (te > ts && is_space((unsigned char)p->s[te - 1])) te--;
        if (te > ts) {
            gt_node *n = new_node(p, GT_N_TEXT, (int)ts);
            n->text = (gt_str){p->s + ts, te - ts};
            add_node(p, l, &cap, n);
        }
        if (!found) return TERM_EOF;
        int apos = (int)idx;
        p->pos = idx + 2 + (ltrim ? 2 : 0);
        if (at(p, p->pos, "/*")) { /* comment */
            const char *s = p->s + p->pos + 2;
            const char *e = NULL;
            for (const char *q = s; q + 1 < p->s + p->n; q++) if (q[0] == '*' && q[1] == '/') { e = q; break; }
            if (!e) perr(p, apos, "unclosed comment");
            size_t after = (size_t)(e - p->s) + 2;
            if (at(p, after, "}}")) p->pos = after + 2;
            else if (after < p->n && is_space((unsigned char)p->s[after]) && at(p, after + 1, "-}}")) {
                p->pos = after + 4;
                p->trim_next = true;
            } else perr(p, apos, "comment ends before closing delimiter");
            continue;
        }
        lex_action(p);
        tok *t = peek(p);
        if (t->kind == T_KEYWORD) {
            next(p);
            *term_pos = apos;
            if (tok_is(p, t, "end")) { expect_rdelim(p, "end"); return TERM_END; }
            if (tok_is(p, t, "else")) {
                tok *k = peek(p);
                if (k->kind == T_KEYWORD && (tok_is(p, k, "if") || tok_is(p, k, "with"))) {
                    next(p);
                    return tok_is(p, k, "if") ? TERM_ELSE_IF : TERM_ELSE_WITH;
                }
                expect_rdelim(p, "else");
                return TERM_ELSE;
            }
            if (tok_is(p, t, "if")) { add_node(p, l, &cap, parse_control(p, GT_N_IF, apos)); continue; }
            if (tok_is(p, t, "range")) { add_node(p, l, &cap, parse_control(p, GT_N_RANGE, apos)); continue; }
            if (tok_is(p, t, "with")) { add_node(p, l, &cap, parse_control(p, GT_N_WITH, apos)); continue; }
            if (tok_is(p, t, "break") || tok_is(p, t, "continue")) {
                bool brk = tok_is(p, t, "break");
                if (p->range_depth == 0) perr(p, apos, "{{%s}} outside {{range}}", brk ? "break" : "continue");
                expect_rdelim(p, brk ? "break" : "continue");
                add_node(p, l, &cap, new_node(p, brk ? GT_N_BREAK : GT_N_CONTINUE, apos));
                continue;
            }
            perr(p, apos, "{{%.*s}} is not supported", t->len, p->s + t->pos);
        }
        gt_node *n = new_node(p, GT_N_ACTION, apos);
        n->pipe = parse_pipeline(p, "command", T_RDELIM);
        add_node(p, l, &cap, n);
    }
}

/* ---- Ollama's touches ----------------------------------------------------------------- */

/* Ollama's Vars(): every field and variable identifier of the tree (Identifiers()), in
 * lower case; it only asks for "messages", "document" and "response". */
static void ids_check(gotmpl *t, gt_str id) {
    if (id.n == 8 && strncasecmp(id.s, "messages", 8) == 0) t->uses_messages = true;
    if (id.n == 8 && strncasecmp(id.s, "document", 8) == 0) t->uses_messages = true;
    if (id.n == 8 && strncasecmp(id.s, "response", 8) == 0) t->uses_response = true;
}

static void ids_pipe(gotmpl *t, const gt_pipe *pp) {
    for (int c = 0; c < pp->n_cmds; c++) {
        for (int i = 0; i < pp->cmds[c].n_args; i++) {
            const gt_arg *a = pp->cmds[c].args[i];
            if (a->kind == GT_ARG_FIELD || a->kind == GT_ARG_VAR) {
                if (a->kind == GT_ARG_VAR) ids_check(t, a->name);
                for (int f = 0; f < a->n_fields; f++) ids_check(t, a->fields[f]);
            } else if (a->kind == GT_ARG_PIPE && a->n_fields == 0) { /* a ChainNode is skipped */
                ids_pipe(t, a->pipe);
            }
        }
    }
}

static void ids_list(gotmpl *t, const gt_list *l) {
    for (int i = 0; i < l->n; i++) {
        const gt_node *n = l->nodes[i];
        if (n->pipe) ids_pipe(t, n->pipe);
        if (n->list) ids_list(t, n->list);
        if (n->else_list) ids_list(t, n->else_list);
    }
}

/* Ollama's deleteNode(root, cut-after-first-.Response): a pre-order walk that keeps the
 * first field node naming Response and drops every node visited after it; branch
 * conditions are not visited, a pipe that loses a whole command is dropped, an action
 * without a pipe is dropped. The copy shares the untouched subtrees. */
typedef struct { gotmpl *t; bool cut; } cutter;

static void *cut_alloc(cutter *c, size_t n) {
    void *m = gt_alloc(c->t, n);
    if (!m) c->t = NULL;
    return m;
}

static gt_pipe *cut_pipe(cutter *c, const gt_pipe *pp);

static const gt_arg *cut_arg(cutter *c, const gt_arg *a) {
    if (a->kind == GT_ARG_FIELD) {
        for (int f = 0; f < a->n_fields; f++) {
            if (a->fields[f].n == 8 && memcmp(a->fields[f].s, "Response", 8) == 0) {
                c->cut = true;
                return a;
            }
        }
    }
    if (c->cut) return NULL;
    if (a->kind == GT_ARG_PIPE && a->n_fields == 0) {
        gt_pipe *np = cut_pipe(c, a->pipe);
        if (!np || !c->t) return NULL;
        gt_arg *na = cut_alloc(c, sizeof(*na));
        if (!na) return NULL;
        *na = *a;
        na->pipe = np;
        return na;
    }
    return a;
}

static gt_pipe *cut_pipe(cutter *c, const gt_pipe *pp) {
    if (c->cut) return NULL;
    gt_pipe *np = cut_alloc(c, sizeof(*np));
    gt_cmd *cmds = np ? cut_alloc(c, sizeof(gt_cmd) * (size_t)pp->n_cmds) : NULL;
    if (!cmds) return NULL;
    *np = *pp;
    np->cmds = cmds;
    np->n_cmds = 0;
    for (int i = 0; i < pp->n_cmds; i++) {
        const gt_cmd *oc = &pp->cmds[i];
        gt_cmd *nc = &cmds[np->n_cmds];
        nc->pos = oc->pos;
        nc->args = cut_alloc(c, sizeof(gt_arg *) * (size_t)oc->n_args);
        if (!nc->args) return NULL;
        nc->n_args = 0;
        for (int j = 0; j < oc->n_args; j++) {
            const gt_arg *a = cut_arg(c, oc->args[j]);
            if (!c->t) return NULL;
            if (a) nc->args[nc->n_args++] = (gt_arg *)a;
        }
        if (nc->n_args == 0) return NULL;
        np->n_cmds++;
    }
    return np->n_cmds ? np : NULL;
}

static gt_list *cut_list(cutter *c, const gt_list *l) {
    if (c->cut) return NULL;
    gt_list *nl = cut_alloc(c, sizeof(*nl));
    gt_node **nodes = nl && l->n ? cut_alloc(c, sizeof(gt_node *) * (size_t)l->n) : NULL;
    if (!nl || (l->n && !nodes)) return NULL;
    nl->nodes = nodes;
    for (int i = 0; i < l->n; i++) {
        const gt_node *n = l->nodes[i];
        if (c->cut) break;
        gt_node *nn;
        switch (n->kind) {
        case GT_N_ACTION: {
            gt_pipe *np = cut_pipe(c, n->pipe);
            if (!c->t) return NULL;
            if (!np) continue;
            if (!(nn = cut_alloc(c, sizeof(*nn)))) return NULL;
            *nn = *n;
            nn->pipe = np;
            break;
        }
        case GT_N_IF: case GT_N_RANGE: case GT_N_WITH: {
            if (!(nn = cut_alloc(c, sizeof(*nn)))) return NULL;
            *nn = *n;
            nn->list = cut_list(c, n->list);
            if (!c->t) return NULL;
            if (n->else_list) {
                /* Ollama panics here when the cut happened in the first branch; an
                 * empty else list is the closest rendering. */
                nn->else_list = cut_list(c, n->else_list);
                if (!c->t) return NULL;
                if (!nn->else_list && !(nn->else_list = cut_alloc(c, sizeof(gt_list)))) return NULL;
            }
            break;
        }
        default: nn = (gt_node *)n; break;
        }
        nl->nodes[nl->n++] = nn;
    }
    return nl;
}

gotmpl *gotmpl_parse(const char *text) {
    if (!text) {
        anv_set_error("gotemplate: no template text");
        return NULL;
    }
    size_t n = strlen(text);
    if (n > GT_MAX_TEMPLATE) {
        anv_set_error("gotemplate: template of %zu bytes is larger than the %u byte limit", n, GT_MAX_TEMPLATE);
        return NULL;
    }
    gotmpl *t = calloc(1, sizeof(*t));
    char *src = t ? malloc(n + 1) : NULL;
    if (!src) {
        free(t);
        anv_set_error("gotemplate: out of memory");
        return NULL;
    }
    memcpy(src, text, n + 1);
    t->src = src;
    t->src_len = n;
    parser *p = calloc(1, sizeof(*p));
    if (!p) {
        gotmpl_free(t);
        anv_set_error("gotemplate: out of memory");
        return NULL;
    }
    p->t = t;
    p->s = src;
    p->n = n;
    if (setjmp(p->fail)) {
        free(p);
        gotmpl_free(t);
        return NULL;
    }
    int tpos = 0;
    term_kind term = parse_list(p, &t->root, &tpos);
    if (term == TERM_END) perr(p, tpos, "unexpected {{end}}");
    if (term != TERM_EOF) perr(p, tpos, "unexpected {{else}}");
    ids_list(t, t->root);
    if (!t->uses_messages && !t->uses_response) {
        /* Ollama's Parse appends {{ .Response }} to templates that print neither */
        gt_arg *a = palloc(p, sizeof(*a));
        a->kind = GT_ARG_FIELD;
        a->pos = (int)n;
        a->fields = palloc(p, sizeof(gt_str));
        a->fields[0] = (gt_str){"Response", 8};
        a->n_fields = 1;
        gt_pipe *pp = palloc(p, sizeof(*pp));
        pp->pos = (int)n;
        pp->cmds = palloc(p, sizeof(gt_cmd));
        pp->cmds[0] = (gt_cmd){palloc(p, sizeof(gt_arg *)), 1, (int)n};
        pp->cmds[0].args[0] = a;
        pp->n_cmds = 1;
        gt_node *nd = new_node(p, GT_N_ACTION, (int)n);
        nd->pipe = pp;
        int cap = t->root->n;
        add_node(p, t->root, &cap, nd);
    }
    cutter c = {t, false};
    t->cut_root = cut_list(&c, t->root);
    if (!c.t || !t->cut_root) perr(p, 0, "out of memory");
    free(p);
    return t;
}

void gotmpl_free(gotmpl *t) {
    if (!t) return;
    arena_free(t->arena);
    free(t->src);
    free(t);
}

bool gotmpl_uses_messages(const gotmpl *t) { return t && t->uses_messages; }
