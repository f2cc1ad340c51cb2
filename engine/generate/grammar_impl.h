/* grammar_impl: the compiled form of a JSON grammar, shared by its compiler
 * (json_schema.c: JSON schema -> nodes) and its matcher (grammar.c: nodes -> a
 * byte-level pushdown automaton and the vocabulary mask). Not a public API: only
 * the grammar modules and their tests include it. */
#ifndef ANVIL_GRAMMAR_IMPL_H
#define ANVIL_GRAMMAR_IMPL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "grammar.h"

/* Most nested containers (objects/arrays) a document may have. */
#define GRAMMAR_MAX_NESTING 64
/* Longest run of whitespace allowed between two JSON tokens. */
#define GRAMMAR_MAX_WS 20
/* Most digits in the integer part, the fraction and the exponent of a number. */
#define GRAMMAR_MAX_INT_DIGITS 16
#define GRAMMAR_MAX_FRAC_DIGITS 16
#define GRAMMAR_MAX_EXP_DIGITS 2

typedef enum {
    GN_UNION,   /* one of alts[alt0 .. alt0+n_alts) */
    GN_LIT,     /* one of a set of literal byte strings (enum/const/true/false/null): trie */
    GN_STRING,  /* JSON string, min_len..max_len code points; excl: key names it must not equal */
    GN_NUMBER,  /* JSON number (integer: no fraction/exponent) */
    GN_OBJECT,  /* props in order (required first), then optional ones; additional props */
    GN_ARRAY,   /* items, min_items..max_items */
} gnode_kind;

typedef struct {
    gnode_kind kind;
    int32_t alt0, n_alts;        /* UNION */
    int32_t trie;                /* LIT: literal trie root; OBJECT: key trie root (-1: no props) */
    int32_t min, max;            /* STRING: length; ARRAY: items (max -1 = unbounded) */
    int32_t excl;                /* STRING: exclusion trie root over decoded names, -1 none */
    bool integer;                /* NUMBER */
    bool bounded;                /* NUMBER (integer only): lo <= value <= hi */
    int64_t lo, hi;
    int32_t prop0, n_props, n_req; /* OBJECT: props[prop0 ..), the first n_req are required */
    int32_t additional;          /* OBJECT: value node of additional properties, -1 none */
    int32_t addkey;              /* OBJECT: STRING node for additional keys (excludes declared) */
    int32_t item;                /* ARRAY */
} gnode;

typedef struct {
    char *key;     /* the key as JSON text, quotes included ("name") */
    int32_t keylen;
    int32_t node;  /* value schema */
} gprop;

/* Byte trie in first-child/next-sibling form. val: -1 for an inner node, else the
 * terminal's value (literal: 0; key trie: property index). maxval: the largest val in
 * the node's subtree (key tries prune keys of properties already passed). */
typedef struct {
    int32_t child, sibling, val, maxval;
    uint8_t byte;
} gtrie;

struct grammar {
    gnode *nodes;
    int32_t n_nodes, cap_nodes;
    int32_t *alts;
    int32_t n_alts, cap_alts;
    gprop *props;
    int32_t n_props, cap_props;
    gtrie *trie;
    int32_t n_trie, cap_trie;
    int32_t root;
};

/* Builders (json_schema.c); -1 on out of memory (error set). */
int32_t grammar_add_node(grammar *g, gnode_kind kind);
int32_t grammar_trie_new(grammar *g);
/* Inserts bytes under root with value val; returns 0 or -1. */
int grammar_trie_insert(grammar *g, int32_t root, const char *s, size_t n, int32_t val);
/* Child of node t for byte c, -1 if none. */
int32_t grammar_trie_child(const grammar *g, int32_t t, uint8_t c);

/* Byte-level check (tests, debugging): returns true if s[0..n) is a prefix of some
 * document; *complete (if not NULL) says whether it is a whole document. */
bool grammar_accepts_bytes(const grammar *g, const char *s, size_t n, bool *complete);
#endif
