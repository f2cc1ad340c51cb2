/* gotemplate_impl: the parse tree shared by the Go-template parser (gotemplate_parse.c)
 * and its evaluator (gotemplate.c). The node shapes follow Go's text/template/parse
 * (ListNode, TextNode, ActionNode, IfNode/RangeNode/WithNode with an else list, PipeNode
 * of CommandNodes of operands), so Ollama's tree rewrites (its "cut after {{ .Response }}"
 * for the last turn, its Vars() scan) can be reproduced node for node. Everything lives in
 * one arena owned by the gotmpl. */
#ifndef ANVIL_GOTEMPLATE_IMPL_H
#define ANVIL_GOTEMPLATE_IMPL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "gotemplate.h"

#define GT_MAX_DEPTH 100              /* nested if/range/with/else-if/parentheses */
#define GT_MAX_TEMPLATE (8u << 20)    /* bytes of template text */

typedef enum {
    GT_F_AND, GT_F_OR, GT_F_NOT, GT_F_EQ, GT_F_NE, GT_F_LT, GT_F_LE, GT_F_GT, GT_F_GE,
    GT_F_LEN, GT_F_INDEX, GT_F_SLICE, GT_F_PRINT, GT_F_PRINTLN, GT_F_JSON,
} gt_func;

typedef enum {
    GT_ARG_FIELD,  /* .A.B: fields of dot */
    GT_ARG_VAR,    /* $x or $x.A.B ($ alone is the data root) */
    GT_ARG_DOT,    /* . */
    GT_ARG_STRING, /* "..." or `...` (decoded) */
    GT_ARG_INT,
    GT_ARG_BOOL,
    GT_ARG_NIL,
    GT_ARG_FUNC,   /* a function name */
    GT_ARG_PIPE,   /* ( pipeline ) optionally followed by .A.B (Go's ChainNode) */
} gt_arg_kind;

typedef struct gt_pipe gt_pipe;

typedef struct {
    const char *s;
    size_t n;
} gt_str;

typedef struct {
    gt_arg_kind kind;
    int pos;             /* byte offset in the template */
    gt_str name;         /* GT_ARG_VAR: "$x"; GT_ARG_FUNC: the function name */
    gt_str *fields;      /* the chain of field names (without dots) */
    int n_fields;
    gt_str str;          /* GT_ARG_STRING */
    int64_t ival;        /* GT_ARG_INT */
    bool bval;           /* GT_ARG_BOOL */
    gt_func func;        /* GT_ARG_FUNC */
    gt_pipe *pipe;       /* GT_ARG_PIPE */
} gt_arg;

typedef struct {
    gt_arg **args;
    int n_args;
    int pos;
} gt_cmd;

typedef enum { GT_DECL_NONE, GT_DECL_DECLARE, GT_DECL_ASSIGN } gt_decl;

struct gt_pipe {
    int pos;
    gt_decl decl;
    int n_vars;          /* 0..2 declared/assigned variables */
    gt_str vars[2];
    gt_cmd *cmds;
    int n_cmds;
};

typedef enum { GT_N_TEXT, GT_N_ACTION, GT_N_IF, GT_N_RANGE, GT_N_WITH, GT_N_BREAK, GT_N_CONTINUE } gt_node_kind;

typedef struct gt_list gt_list;
typedef struct {
    gt_node_kind kind;
    int pos;
    gt_str text;         /* GT_N_TEXT (already trimmed) */
    gt_pipe *pipe;       /* action, if, range, with */
    gt_list *list;       /* if, range, with */
    gt_list *else_list;  /* NULL when there is no {{else}} */
} gt_node;

struct gt_list {
    gt_node **nodes;
    int n;
};

typedef struct gt_arena_block gt_arena_block;

struct gotmpl {
    char *src;               /* the template text (names and texts point into it) */
    size_t src_len;
    gt_list *root;           /* the tree, with {{ .Response }} appended as Ollama's Parse does */
    gt_list *cut_root;       /* root without everything after the first .Response field */
    bool uses_messages;      /* Ollama's Vars() has "messages" or "document" */
    bool uses_response;      /* Ollama's Vars() has "response" */
    gt_arena_block *arena;
};

/* gotemplate_tools.c: .Tools and a message's .ToolCalls as Ollama's template package shapes
 * them (NULL when none); gt_json_sorted: a deep copy with object keys sorted (a Go map). */
cJSON *gt_tools_for_template(const char *tools_json);
cJSON *gt_calls_for_template(const char *calls_json);
cJSON *gt_json_sorted(const cJSON *v);

void *gt_alloc(gotmpl *t, size_t n);                 /* zeroed, lives as long as t */
/* "gotemplate: line L col C (offset O): msg" into anv_set_error. */
void gt_error_at(const char *src, size_t src_len, int pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#endif
