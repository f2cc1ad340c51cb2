/* gotemplate: executes a parsed Go template (gotemplate_parse.c) over Ollama's data with
 * text/template's semantics: truthiness (false, 0, "", empty list and missing keys are
 * false), variables scoped to their if/range/with, `and`/`or` short-circuit and return
 * an operand, eq/ne/lt/le/gt/ge on bool/int/string (mixing types is an error, a missing
 * key compares unequal), len/index/slice on strings (bytes) and lists, print/println as
 * fmt.Sprint/Sprintln, Ollama's json. Tools and tool calls are JSON trees shaped as
 * Ollama's template types (gotemplate_tools.c), read by Go field name, ranged (maps in
 * sorted key order), printed through their String methods (JSON) or fmt's %v for decoded
 * `any` values (map[a:1], [x y], float64 %v). Values the engine cannot print the way Go
 * would (a message, a struct, a non-empty message list) are errors, never a guess. Limits per render:
 * 10M steps, 64 MiB of output, 64 MiB of print/json strings, so a hostile template
 * fails instead of hanging or eating memory. */
#include "gotemplate_impl.h"

#include "error.h"

#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GT_MAX_STEPS 10000000L
#define GT_MAX_OUTPUT ((size_t)64 << 20)
#define GT_MAX_ARGS 32
#define GT_MAX_TEMP_BYTES ((size_t)64 << 20) /* strings made by print/json in one render */

typedef enum { V_NIL, V_BOOL, V_INT, V_STR, V_MSGS, V_EMPTY, V_MSG, V_ROOT, V_JSON } vkind;
/* V_JSON: a value of Ollama's template types for tools (gotemplate_tools.c), by Go type */
typedef enum { JT_TOOLS, JT_TOOL, JT_TFUNC, JT_TPARAMS, JT_PROPS, JT_PROP, JT_CALLS, JT_CALL, JT_CFUNC, JT_ARGS,
               JT_ANY } jtype;

typedef struct {
    vkind k;
    bool b;
    int64_t i;
    const char *s;               /* V_STR */
    size_t n;                    /* V_STR bytes */
    const chat_message *msgs;    /* V_MSGS (nmsg of them), V_MSG (one) */
    int nmsg;
    const cJSON *j;              /* V_JSON (NULL or null: a nil map or slice) */
    jtype jt;
} val;

typedef struct {
    gt_str name;
    val v;
} var;

typedef struct {
    const gotmpl *t;
    const gotmpl_vars *v;
    bool msgs_mode;
    char *out;
    size_t len, cap;
    var *vars;
    int n_vars, cap_vars;
    char **temps;
    int n_temps, cap_temps;
    size_t temp_bytes;
    long steps;
    cJSON *tools;                /* .Tools (gotemplate_tools.c), NULL = none */
    cJSON **calls;               /* per message of v->messages: its .ToolCalls, NULL = none */
    jmp_buf fail;
} ex;

static _Noreturn void xerr(ex *x, int pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static _Noreturn void xerr(ex *x, int pos, const char *fmt, ...) {
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    gt_error_at(x->t->src, x->t->src_len, pos, "executing: %s", msg);
    longjmp(x->fail, 1);
}

static void step(ex *x, int pos) {
    if (++x->steps > GT_MAX_STEPS) xerr(x, pos, "more than %ld steps (runaway template)", GT_MAX_STEPS);
}

static void emit(ex *x, int pos, const char *s, size_t n) {
    if (x->len + n > GT_MAX_OUTPUT) xerr(x, pos, "output larger than %zu bytes", GT_MAX_OUTPUT);
    if (x->len + n + 1 > x->cap) {
        size_t nc = x->cap ? x->cap : 256;
        while (nc < x->len + n + 1) nc *= 2;
        char *no = realloc(x->out, nc);
        if (!no) xerr(x, pos, "out of memory");
        x->out = no;
        x->cap = nc;
    }
    memcpy(x->out + x->len, s, n);
    x->len += n;
    x->out[x->len] = 0;
}

/* A string that lives until the render ends. */
static char *temp(ex *x, int pos, size_t n) {
    x->temp_bytes += n + 32;
    if (x->temp_bytes > GT_MAX_TEMP_BYTES) xerr(x, pos, "strings built by print/json exceed %zu bytes", GT_MAX_TEMP_BYTES);
    if (x->n_temps == x->cap_temps) {
        int nc = x->cap_temps ? x->cap_temps * 2 : 8;
        char **nt = realloc(x->temps, sizeof(char *) * (size_t)nc);
        if (!nt) xerr(x, pos, "out of memory");
        x->temps = nt;
        x->cap_temps = nc;
    }
    char *s = malloc(n + 1);
    if (!s) xerr(x, pos, "out of memory");
    x->temps[x->n_temps++] = s;
    return s;
}

static val vstr(const char *s) { return (val){.k = V_STR, .s = s ? s : "", .n = s ? strlen(s) : 0}; }
static val vint(int64_t i) { return (val){.k = V_INT, .i = i}; }
static val vbool(bool b) { return (val){.k = V_BOOL, .b = b}; }
static val vnil(void) { return (val){.k = V_NIL}; }

static const char *type_name(const val *v) {
    switch (v->k) {
    case V_NIL: return "<nil>";
    case V_BOOL: return "bool";
    case V_INT: return "int";
    case V_STR: return "string";
    case V_MSGS: return "[]*api.Message";
    case V_EMPTY: return "list";
    case V_MSG: return "*api.Message";
    case V_ROOT: return "map[string]interface {}";
    case V_JSON: {
        static const char *const names[] = {"template.templateTools", "template.templateTool",
                                            "template.templateToolFunction", "template.templateToolFunctionParameters",
                                            "template.templateProperties", "api.ToolProperty", "[]template.templateToolCall",
                                            "template.templateToolCall", "template.templateToolCallFunction",
                                            "template.templateArgs", "interface {}"};
        return names[v->jt];
    }
    }
    return "?";
}

static bool truth(const val *v) {
    switch (v->k) {
    case V_NIL: return false;
    case V_BOOL: return v->b;
    case V_INT: return v->i != 0;
    case V_STR: return v->n > 0;
    case V_MSGS: return v->nmsg > 0;
    case V_EMPTY: return false;
    case V_MSG: case V_ROOT: return true;
    case V_JSON:
        if (!v->j || cJSON_IsNull(v->j) || cJSON_IsFalse(v->j)) return false;
        if (cJSON_IsArray(v->j) || cJSON_IsObject(v->j)) return v->j->child != NULL;
        if (cJSON_IsString(v->j)) return *v->j->valuestring;
        if (cJSON_IsNumber(v->j)) return v->j->valuedouble != 0;
        return true;
    }
    return false;
}

static val vjson(const cJSON *j, jtype jt) { return (val){.k = V_JSON, .j = j, .jt = jt}; }

/* A JSON value reached through an `any` (arguments, items, enum): strings and bools become
 * Go's; numbers (Go float64s) and containers stay JSON, printed the way fmt prints them. */
static val json_scalar(const cJSON *j) {
    if (!j || cJSON_IsNull(j)) return (val){.k = V_NIL};
    if (cJSON_IsString(j)) return (val){.k = V_STR, .s = j->valuestring, .n = strlen(j->valuestring)};
    if (cJSON_IsBool(j)) return (val){.k = V_BOOL, .b = cJSON_IsTrue(j)};
    return vjson(j, JT_ANY);
}

/* fmt's %v of a float64: the shortest digits, %e form below 1e-4 or from 1e6 on. */
static void go_float(double f, char *out, size_t cap) {
    if (f == 0) { snprintf(out, cap, signbit(f) ? "-0" : "0"); return; }
    if (isinf(f)) { snprintf(out, cap, f > 0 ? "+Inf" : "-Inf"); return; }
    if (isnan(f)) { snprintf(out, cap, "NaN"); return; }
    char buf[48];
    int p = 1;
    for (; p <= 17; p++) {
        snprintf(buf, sizeof buf, "%.*e", p - 1, f);
        if (strtod(buf, NULL) == f) break;
    }
    int exp = atoi(strchr(buf, 'e') + 1);
    if (exp < -4 || exp >= 6) snprintf(out, cap, "%s", buf);
    else snprintf(out, cap, "%.*f", p - 1 - exp > 0 ? p - 1 - exp : 0, f);
}

static bool gstr_is(gt_str s, const char *lit) { return s.n == strlen(lit) && memcmp(s.s, lit, s.n) == 0; }

/* ---- data ----------------------------------------------------------------------------- */

static const cJSON *jget(const cJSON *o, const char *k) {
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
}

static val jstr(const cJSON *o, const char *k) {
    const cJSON *v = jget(o, k);
    return cJSON_IsString(v) ? (val){.k = V_STR, .s = v->valuestring, .n = strlen(v->valuestring)} : (val){.k = V_STR, .s = "", .n = 0};
}

static val jany(const cJSON *o, const char *k) {
    const cJSON *v = jget(o, k);
    return v ? json_scalar(v) : (val){.k = V_NIL};
}

/* PropertyType's String(): the type, or fmt's [a b] for several. */
static val prop_type(ex *x, int pos, const cJSON *t);

static const char *const MSGS_MODE_KEYS[] = {"System", "Messages", "Tools", "Response", "Think", "IsThinkSet",
                                             "Query", "Document", "Instruction", NULL};
static const char *const TURN_MODE_KEYS[] = {"System", "Prompt", "Response", "Think", "IsThinkSet", NULL};

static int n_root_keys(const ex *x) { return x->msgs_mode ? 9 : 5; }

static val root_key(ex *x, gt_str key) {
    const char *const *keys = x->msgs_mode ? MSGS_MODE_KEYS : TURN_MODE_KEYS;
    bool present = false;
    for (int i = 0; keys[i]; i++) present |= gstr_is(key, keys[i]);
    if (!present) return vnil(); /* Ollama: missingkey=zero on a map[string]any */
    const gotmpl_vars *v = x->v;
    if (gstr_is(key, "System")) return vstr(v->system);
    if (gstr_is(key, "Prompt")) return vstr(v->prompt);
    if (gstr_is(key, "Response")) return vstr(v->response);
    if (gstr_is(key, "Think")) return vbool(v->think);
    if (gstr_is(key, "IsThinkSet")) return vbool(v->is_think_set);
    if (gstr_is(key, "Messages")) return (val){.k = V_MSGS, .msgs = v->messages, .nmsg = v->n_messages};
    if (gstr_is(key, "Tools")) return x->tools ? vjson(x->tools, JT_TOOLS) : (val){.k = V_EMPTY};
    return vstr(""); /* Query, Document, Instruction */
}

/* A field of a tools value (Go field names of Ollama's template types). */
static bool json_field(ex *x, const val *r, gt_str name, int pos, val *out) {
    const cJSON *j = r->j;
#define IS(lit) gstr_is(name, lit)
    switch (r->jt) {
    case JT_TOOL:
        if (IS("Type")) { *out = jstr(j, "type"); return true; }
        if (IS("Items")) { *out = jany(j, "items"); return true; }
        if (IS("Function")) { *out = vjson(jget(j, "function"), JT_TFUNC); return true; }
        return false;
    case JT_TFUNC:
        if (IS("Name")) { *out = jstr(j, "name"); return true; }
        if (IS("Description")) { *out = jstr(j, "description"); return true; }
        if (IS("Parameters")) { *out = vjson(jget(j, "parameters"), JT_TPARAMS); return true; }
        return false;
    case JT_TPARAMS:
        if (IS("Type")) { *out = jstr(j, "type"); return true; }
        if (IS("Defs")) { *out = jany(j, "$defs"); return true; }
        if (IS("Items")) { *out = jany(j, "items"); return true; }
        if (IS("Required")) { *out = jget(j, "required") ? vjson(jget(j, "required"), JT_ANY) : (val){.k = V_EMPTY}; return true; }
        if (IS("Properties")) { *out = vjson(jget(j, "properties"), JT_PROPS); return true; }
        return false;
    case JT_PROP:
        if (IS("AnyOf")) { *out = jget(j, "anyOf") ? vjson(jget(j, "anyOf"), JT_ANY) : (val){.k = V_EMPTY}; return true; }
        if (IS("Type")) { *out = prop_type(x, pos, jget(j, "type")); return true; }
        if (IS("Items")) { *out = jany(j, "items"); return true; }
        if (IS("Description")) { *out = jstr(j, "description"); return true; }
        if (IS("Enum")) { *out = jget(j, "enum") ? vjson(jget(j, "enum"), JT_ANY) : (val){.k = V_EMPTY}; return true; }
        if (IS("Properties")) { *out = jget(j, "properties") ? vjson(jget(j, "properties"), JT_PROPS) : (val){.k = V_NIL}; return true; }
        return false;
    case JT_CALL:
        if (IS("ID")) { *out = jstr(j, "ID"); return true; }
        if (IS("Function")) { *out = vjson(jget(j, "Function"), JT_CFUNC); return true; }
        return false;
    case JT_CFUNC:
        if (IS("Index")) { const cJSON *i = jget(j, "Index"); *out = vint(i ? (int64_t)i->valuedouble : 0); return true; }
        if (IS("Name")) { *out = jstr(j, "Name"); return true; }
        if (IS("Arguments")) { *out = vjson(jget(j, "Arguments"), JT_ARGS); return true; }
        return false;
    case JT_PROPS: case JT_ARGS: case JT_ANY: {   /* a Go map: .key is the key's value */
        if (!cJSON_IsObject(j)) return false;
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)name.n, name.s);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
        *out = r->jt == JT_PROPS ? (v ? vjson(v, JT_PROP) : (val){.k = V_NIL}) : json_scalar(v);
        return true;
    }
    default: return false;
    }
#undef IS
}

static val field(ex *x, const val *recv, gt_str name, int pos) {
    switch (recv->k) {
    case V_ROOT: return root_key(x, name);
    case V_MSG: {
        const chat_message *m = recv->msgs;
        if (gstr_is(name, "Role")) return vstr(m->role);
        if (gstr_is(name, "Content")) return vstr(m->content);
        if (gstr_is(name, "Thinking")) return vstr(m->thinking);
        if (gstr_is(name, "ToolName")) return vstr(m->tool_name);
        if (gstr_is(name, "ToolCallID")) return vstr("");
        if (gstr_is(name, "Images")) return (val){.k = V_EMPTY};
        if (gstr_is(name, "ToolCalls")) {
            ptrdiff_t i = m - x->v->messages;
            if (x->calls && x->v->messages && i >= 0 && i < x->v->n_messages && x->calls[i]) return vjson(x->calls[i], JT_CALLS);
            return (val){.k = V_EMPTY};
        }
        break;
    }
    case V_JSON: {
        val out;
        if (json_field(x, recv, name, pos, &out)) return out;
        break;
    }
    case V_NIL: xerr(x, pos, "nil pointer evaluating interface {}.%.*s", (int)name.n, name.s);
    default: break;
    }
    xerr(x, pos, "can't evaluate field %.*s in type %s", (int)name.n, name.s, type_name(recv));
}

static val field_chain(ex *x, val v, const gt_arg *a) {
    for (int i = 0; i < a->n_fields; i++) v = field(x, &v, a->fields[i], a->pos);
    return v;
}

/* ---- variables ------------------------------------------------------------------------ */

static void push_var(ex *x, gt_str name, val v, int pos) {
    if (x->n_vars == x->cap_vars) {
        int nc = x->cap_vars ? x->cap_vars * 2 : 16;
        var *nv = realloc(x->vars, sizeof(var) * (size_t)nc);
        if (!nv) xerr(x, pos, "out of memory");
        x->vars = nv;
        x->cap_vars = nc;
    }
    x->vars[x->n_vars++] = (var){name, v};
}

static var *find_var(ex *x, gt_str name, int pos) {
    for (int i = x->n_vars - 1; i >= 0; i--) {
        if (x->vars[i].name.n == name.n && memcmp(x->vars[i].name.s, name.s, name.n) == 0) return &x->vars[i];
    }
    xerr(x, pos, "undefined variable: %.*s", (int)name.n, name.s);
}

/* ---- printing ------------------------------------------------------------------------- */

static void emit_json_string(ex *x, int pos, const char *s, size_t n);
static val take_tail(ex *x, int pos, size_t start);

/* json.Marshal of a tools value (keys already in Go's order, gotemplate_tools.c). */
static void emit_json_node(ex *x, int pos, const cJSON *j) {
    step(x, pos);
    if (!j || cJSON_IsNull(j)) { emit(x, pos, "null", 4); return; }
    if (cJSON_IsString(j)) { emit_json_string(x, pos, j->valuestring, strlen(j->valuestring)); return; }
    if (cJSON_IsArray(j) || cJSON_IsObject(j)) {
        bool obj = cJSON_IsObject(j);
        emit(x, pos, obj ? "{" : "[", 1);
        for (const cJSON *c = j->child; c; c = c->next) {
            if (c != j->child) emit(x, pos, ",", 1);
            if (obj) { emit_json_string(x, pos, c->string, strlen(c->string)); emit(x, pos, ":", 1); }
            emit_json_node(x, pos, c);
        }
        emit(x, pos, obj ? "}" : "]", 1);
        return;
    }
    char *t = cJSON_PrintUnformatted(j);   /* numbers, true, false */
    if (!t) xerr(x, pos, "out of memory");
    size_t n = strlen(t);
    if (x->len + n > GT_MAX_OUTPUT) { free(t); xerr(x, pos, "output larger than %zu bytes", GT_MAX_OUTPUT); }
    emit(x, pos, t, n);
    free(t);
}

/* fmt's %v of a decoded JSON value (map[k:v ...] with sorted keys, [a b], <nil>). */
static void emit_go_any(ex *x, int pos, const cJSON *j) {
    step(x, pos);
    char buf[48];
    if (!j || cJSON_IsNull(j)) emit(x, pos, "<nil>", 5);
    else if (cJSON_IsString(j)) emit(x, pos, j->valuestring, strlen(j->valuestring));
    else if (cJSON_IsBool(j)) emit(x, pos, cJSON_IsTrue(j) ? "true" : "false", cJSON_IsTrue(j) ? 4 : 5);
    else if (cJSON_IsNumber(j)) { go_float(j->valuedouble, buf, sizeof buf); emit(x, pos, buf, strlen(buf)); }
    else {
        bool obj = cJSON_IsObject(j);
        emit(x, pos, obj ? "map[" : "[", obj ? 4 : 1);
        for (const cJSON *c = j->child; c; c = c->next) {
            if (c != j->child) emit(x, pos, " ", 1);
            if (obj) { emit(x, pos, c->string, strlen(c->string)); emit(x, pos, ":", 1); }
            emit_go_any(x, pos, c);
        }
        emit(x, pos, "]", 1);
    }
}

static val prop_type(ex *x, int pos, const cJSON *t) {
    if (cJSON_IsString(t)) return vstr(t->valuestring);
    if (!cJSON_IsArray(t) || !t->child) return vstr("");
    size_t start = x->len;
    emit(x, pos, "[", 1);
    for (const cJSON *c = t->child; c; c = c->next) {
        if (c != t->child) emit(x, pos, " ", 1);
        if (cJSON_IsString(c)) emit(x, pos, c->valuestring, strlen(c->valuestring));
    }
    emit(x, pos, "]", 1);
    return take_tail(x, pos, start);
}

/* A []string or []any field of a struct as fmt's %v prints it: [a b], and [] when absent. */
static void emit_go_slice(ex *x, int pos, const cJSON *j) {
    if (cJSON_IsArray(j)) emit_go_any(x, pos, j);
    else emit(x, pos, "[]", 2);
}

static void emit_go_str(ex *x, int pos, const cJSON *o, const char *k) {
    const cJSON *v = jget(o, k);
    if (cJSON_IsString(v)) emit(x, pos, v->valuestring, strlen(v->valuestring));
}

/* fmt's %v of Ollama's template types (template.go, api/types.go), as `{{ . }}` prints them: the
 * types with a String method (templateTools, templateTool, templateProperties, templateArgs) as
 * their JSON; a struct without one as {field field ...}, each field by its own %v (a nil
 * interface <nil>, a nil slice []); api.ToolProperty's *ToolPropertiesMap, which Go prints as a
 * pointer address, as its JSON. */
static void emit_go_template_value(ex *x, int pos, const cJSON *j, jtype jt) {
    step(x, pos);
    switch (jt) {
    case JT_TOOLS: case JT_TOOL: emit_json_node(x, pos, j); return;
    case JT_PROPS: case JT_ARGS:
        if (!j || cJSON_IsNull(j)) emit(x, pos, "{}", 2);
        else emit_json_node(x, pos, j);
        return;
    case JT_ANY: emit_go_any(x, pos, j); return;
    case JT_TFUNC:   /* {Name Description Parameters} */
        emit(x, pos, "{", 1);
        emit_go_str(x, pos, j, "name");
        emit(x, pos, " ", 1);
        emit_go_str(x, pos, j, "description");
        emit(x, pos, " ", 1);
        emit_go_template_value(x, pos, jget(j, "parameters"), JT_TPARAMS);
        emit(x, pos, "}", 1);
        return;
    case JT_TPARAMS:   /* {Type Defs Items Required Properties} */
        emit(x, pos, "{", 1);
        emit_go_str(x, pos, j, "type");
        emit(x, pos, " ", 1);
        emit_go_any(x, pos, jget(j, "$defs"));
        emit(x, pos, " ", 1);
        emit_go_any(x, pos, jget(j, "items"));
        emit(x, pos, " ", 1);
        emit_go_slice(x, pos, jget(j, "required"));
        emit(x, pos, " ", 1);
        emit_go_template_value(x, pos, jget(j, "properties"), JT_PROPS);
        emit(x, pos, "}", 1);
        return;
    case JT_PROP: {   /* {AnyOf Type Items Description Enum Properties Required} */
        emit(x, pos, "{", 1);
        const cJSON *any_of = jget(j, "anyOf");
        emit(x, pos, "[", 1);
        for (const cJSON *c = cJSON_IsArray(any_of) ? any_of->child : NULL; c; c = c->next) {
            if (c != any_of->child) emit(x, pos, " ", 1);
            emit_go_template_value(x, pos, c, JT_PROP);
        }
        emit(x, pos, "] ", 2);
        val t = prop_type(x, pos, jget(j, "type"));
        emit(x, pos, t.s, t.n);
        emit(x, pos, " ", 1);
        emit_go_any(x, pos, jget(j, "items"));
        emit(x, pos, " ", 1);
        emit_go_str(x, pos, j, "description");
        emit(x, pos, " ", 1);
        emit_go_slice(x, pos, jget(j, "enum"));
        emit(x, pos, " ", 1);
        const cJSON *props = jget(j, "properties");
        if (props) emit_json_node(x, pos, props);
        else emit(x, pos, "<nil>", 5);
        emit(x, pos, " ", 1);
        emit_go_slice(x, pos, jget(j, "required"));
        emit(x, pos, "}", 1);
        return;
    }
    case JT_CALLS:
        emit(x, pos, "[", 1);
        for (const cJSON *c = cJSON_IsArray(j) ? j->child : NULL; c; c = c->next) {
            if (c != j->child) emit(x, pos, " ", 1);
            emit_go_template_value(x, pos, c, JT_CALL);
        }
        emit(x, pos, "]", 1);
        return;
    case JT_CALL:   /* {ID Function} */
        emit(x, pos, "{", 1);
        emit_go_str(x, pos, j, "ID");
        emit(x, pos, " ", 1);
        emit_go_template_value(x, pos, jget(j, "Function"), JT_CFUNC);
        emit(x, pos, "}", 1);
        return;
    case JT_CFUNC: {   /* {Index Name Arguments} */
        char buf[32];
        const cJSON *i = jget(j, "Index");
        emit(x, pos, "{", 1);
        emit(x, pos, buf, (size_t)snprintf(buf, sizeof buf, "%" PRId64, i ? (int64_t)i->valuedouble : 0));
        emit(x, pos, " ", 1);
        emit_go_str(x, pos, j, "Name");
        emit(x, pos, " ", 1);
        emit_go_template_value(x, pos, jget(j, "Arguments"), JT_ARGS);
        emit(x, pos, "}", 1);
        return;
    }
    }
}


static void emit_value(ex *x, int pos, const val *v) {
    char buf[32];
    switch (v->k) {
    case V_STR: emit(x, pos, v->s, v->n); return;
    case V_INT: emit(x, pos, buf, (size_t)snprintf(buf, sizeof(buf), "%" PRId64, v->i)); return;
    case V_BOOL: emit(x, pos, v->b ? "true" : "false", v->b ? 4 : 5); return;
    case V_NIL: emit(x, pos, "<no value>", 10); return;
    case V_EMPTY: emit(x, pos, "[]", 2); return;
    case V_MSGS:
        if (v->nmsg == 0) { emit(x, pos, "[]", 2); return; }
        break;
    case V_JSON: emit_go_template_value(x, pos, v->j, v->jt); return;   /* Go's %v of Ollama's types */
    default: break;
    }
    xerr(x, pos, "cannot print a value of type %s", type_name(v));
}

/* fmt's %v of one operand of print/println (a nil operand is "<nil>" there). */
static void emit_operand(ex *x, int pos, const val *v) {
    if (v->k == V_NIL) emit(x, pos, "<nil>", 5);
    else emit_value(x, pos, v);
}

/* Go's encoding/json string encoding (HTML-safe, \b \f \n \r \t, \u00XX, bad UTF-8 -> U+FFFD). */
static void emit_json_string(ex *x, int pos, const char *s, size_t n) {
    static const char HEX[] = "0123456789abcdef";
    emit(x, pos, "\"", 1);
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80) {
            char e[8];
            switch (c) {
            case '"': emit(x, pos, "\\\"", 2); break;
            case '\\': emit(x, pos, "\\\\", 2); break;
            case '\b': emit(x, pos, "\\b", 2); break;
            case '\f': emit(x, pos, "\\f", 2); break;
            case '\n': emit(x, pos, "\\n", 2); break;
            case '\r': emit(x, pos, "\\r", 2); break;
            case '\t': emit(x, pos, "\\t", 2); break;
            default:
                if (c < 0x20 || c == '<' || c == '>' || c == '&') {
                    e[0] = '\\', e[1] = 'u', e[2] = '0', e[3] = '0', e[4] = HEX[c >> 4], e[5] = HEX[c & 15];
                    emit(x, pos, e, 6);
                } else emit(x, pos, (const char *)&c, 1);
            }
            i++;
            continue;
        }
        /* decode one UTF-8 sequence; invalid -> U+FFFD for one byte */
        int len = c >= 0xF0 && c < 0xF5 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
        if (c >= 0xF5) len = 0;
        uint32_t r = len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
        bool ok = len > 0 && i + (size_t)len <= n;
        for (int k = 1; ok && k < len; k++) {
            unsigned char d = (unsigned char)s[i + (size_t)k];
            if ((d & 0xC0) != 0x80) ok = false;
            r = (r << 6) | (d & 0x3F);
        }
        if (ok && ((len == 3 && (r < 0x800 || (r >= 0xD800 && r < 0xE000))) || (len == 4 && (r < 0x10000 || r > 0x10FFFF))))
            ok = false;
        if (!ok) { emit(x, pos, "\\ufffd", 6); i++; continue; }
        if (r == 0x2028) emit(x, pos, "\\u2028", 6);
        else if (r == 0x2029) emit(x, pos, "\\u2029", 6);
        else emit(x, pos, s + i, (size_t)len);
        i += (size_t)len;
    }
    emit(x, pos, "\"", 1);
}

/* print/json build their string at the end of the output, then move it to a temp. */
static val take_tail(ex *x, int pos, size_t start) {
    size_t n = x->len - start;
    char *s = temp(x, pos, n);
    memcpy(s, x->out + start, n);
    s[n] = 0;
    x->len = start;
    x->out[start] = 0;
    return (val){.k = V_STR, .s = s, .n = n};
}

/* ---- functions ------------------------------------------------------------------------ */

static val eval_pipe(ex *x, const val *dot, const gt_pipe *pp);

static val eval_arg(ex *x, const val *dot, const gt_arg *a);

typedef enum { BK_INVALID, BK_BOOL, BK_INT, BK_STR, BK_OTHER } basic_kind;
static basic_kind bkind(const val *v) {
    switch (v->k) {
    case V_NIL: return BK_INVALID;
    case V_BOOL: return BK_BOOL;
    case V_INT: return BK_INT;
    case V_STR: return BK_STR;
    default: return BK_OTHER;
    }
}

static bool eq2(ex *x, int pos, const val *a, const val *b) {
    basic_kind ka = bkind(a), kb = bkind(b);
    if (ka == BK_INVALID || kb == BK_INVALID) {
        if (ka == BK_INVALID && kb == BK_INVALID) return true;
        if (ka == BK_OTHER || kb == BK_OTHER) xerr(x, pos, "error calling eq: comparing %s with nil is not supported", type_name(ka == BK_OTHER ? a : b));
        return false;
    }
    if (ka == BK_OTHER || kb == BK_OTHER) {
        if (a->k == V_MSG && b->k == V_MSG) return a->msgs == b->msgs;
        xerr(x, pos, "error calling eq: non-comparable type %s", type_name(ka == BK_OTHER ? a : b));
    }
    if (ka != kb) xerr(x, pos, "error calling eq: incompatible types for comparison: %s and %s", type_name(a), type_name(b));
    switch (ka) {
    case BK_BOOL: return a->b == b->b;
    case BK_INT: return a->i == b->i;
    default: return a->n == b->n && memcmp(a->s, b->s, a->n) == 0;
    }
}

static bool lt2(ex *x, int pos, const char *fn, const val *a, const val *b) {
    basic_kind ka = bkind(a), kb = bkind(b);
    if (ka == BK_INVALID || ka == BK_OTHER || kb == BK_INVALID || kb == BK_OTHER || ka == BK_BOOL || kb == BK_BOOL) {
        if (ka != kb && ka != BK_INVALID && ka != BK_OTHER && kb != BK_INVALID && kb != BK_OTHER)
            xerr(x, pos, "error calling %s: incompatible types for comparison", fn);
        xerr(x, pos, "error calling %s: invalid type for comparison", fn);
    }
    if (ka != kb) xerr(x, pos, "error calling %s: incompatible types for comparison", fn);
    if (ka == BK_INT) return a->i < b->i;
    size_t m = a->n < b->n ? a->n : b->n;
    int c = memcmp(a->s, b->s, m);
    return c < 0 || (c == 0 && a->n < b->n);
}

static int64_t index_arg(ex *x, int pos, const char *fn, const val *v) {
    if (v->k != V_INT) xerr(x, pos, "error calling %s: cannot index with type %s", fn, type_name(v));
    return v->i;
}

static void want_args(ex *x, int pos, const char *fn, int n, int want) {
    if (n != want) xerr(x, pos, "wrong number of args for %s: want %d got %d", fn, want, n);
}

static val call_index(ex *x, int pos, const val *av, int n) {
    if (n < 1) xerr(x, pos, "wrong number of args for index: want at least 1 got 0");
    val item = av[0];
    for (int k = 1; k < n; k++) {
        const val *ix = &av[k];
        switch (item.k) {
        case V_NIL: xerr(x, pos, "error calling index: index of untyped nil");
        case V_STR: case V_MSGS: case V_EMPTY: {
            int64_t i = index_arg(x, pos, "index", ix);
            int64_t len = item.k == V_STR ? (int64_t)item.n : item.k == V_MSGS ? item.nmsg : 0;
            if (i < 0 || i >= len) xerr(x, pos, "error calling index: index out of range: %" PRId64, i);
            if (item.k == V_STR) item = vint((unsigned char)item.s[i]);
            else item = (val){.k = V_MSG, .msgs = &item.msgs[i], .nmsg = 1};
            break;
        }
        case V_ROOT:
            if (ix->k != V_STR) xerr(x, pos, "error calling index: value has type %s; should be string", type_name(ix));
            item = root_key(x, (gt_str){ix->s, ix->n});
            break;
        case V_JSON:
            if (cJSON_IsArray(item.j) || item.jt == JT_TOOLS || item.jt == JT_CALLS) {
                int64_t i = index_arg(x, pos, "index", ix);
                int len = cJSON_GetArraySize(item.j);
                if (i < 0 || i >= len) xerr(x, pos, "error calling index: index out of range: %" PRId64, i);
                const cJSON *e = cJSON_GetArrayItem(item.j, (int)i);
                item = item.jt == JT_TOOLS ? vjson(e, JT_TOOL) : item.jt == JT_CALLS ? vjson(e, JT_CALL) : json_scalar(e);
            } else if (cJSON_IsObject(item.j) || item.jt == JT_PROPS || item.jt == JT_ARGS) {
                if (ix->k != V_STR) xerr(x, pos, "error calling index: value has type %s; should be string", type_name(ix));
                char key[256];
                snprintf(key, sizeof key, "%.*s", (int)ix->n, ix->s);
                const cJSON *e = cJSON_IsObject(item.j) ? cJSON_GetObjectItemCaseSensitive(item.j, key) : NULL;
                item = item.jt == JT_PROPS ? (e ? vjson(e, JT_PROP) : vnil()) : json_scalar(e);
            } else {
                xerr(x, pos, "error calling index: can't index item of type %s", type_name(&item));
            }
            break;
        default: xerr(x, pos, "error calling index: can't index item of type %s", type_name(&item));
        }
    }
    return item;
}

static val call_slice(ex *x, int pos, const val *av, int n) {
    if (n < 1) xerr(x, pos, "wrong number of args for slice: want at least 1 got 0");
    val item = av[0];
    if (item.k == V_NIL) xerr(x, pos, "error calling slice: slice of untyped nil");
    if (n - 1 > 3) xerr(x, pos, "error calling slice: too many slice indexes: %d", n - 1);
    int64_t len;
    if (item.k == V_STR) {
        if (n - 1 == 3) xerr(x, pos, "error calling slice: cannot 3-index slice a string");
        len = (int64_t)item.n;
    } else if (item.k == V_MSGS) len = item.nmsg;
    else if (item.k == V_EMPTY) len = 0;
    else xerr(x, pos, "error calling slice: can't slice item of type %s", type_name(&item));
    int64_t idx[3] = {0, len, len};
    for (int k = 1; k < n; k++) {
        int64_t i = index_arg(x, pos, "slice", &av[k]);
        if (i < 0 || i > len) xerr(x, pos, "error calling slice: index out of range: %" PRId64, i);
        idx[k - 1] = i;
    }
    if (idx[0] > idx[1]) xerr(x, pos, "error calling slice: invalid slice index: %" PRId64 " > %" PRId64, idx[0], idx[1]);
    if (n - 1 == 3 && idx[1] > idx[2]) xerr(x, pos, "error calling slice: invalid slice index: %" PRId64 " > %" PRId64, idx[1], idx[2]);
    if (item.k == V_STR) return (val){.k = V_STR, .s = item.s + idx[0], .n = (size_t)(idx[1] - idx[0])};
    if (item.k == V_EMPTY) return item;
    return (val){.k = V_MSGS, .msgs = item.msgs + idx[0], .nmsg = (int)(idx[1] - idx[0])};
}

static val call(ex *x, const val *dot, const gt_arg *fa, const gt_cmd *cmd, bool has_final, const val *final) {
    int n = cmd->n_args - 1 + (has_final ? 1 : 0);
    int pos = fa->pos;
    gt_func f = fa->func;
    char fname[16];
    snprintf(fname, sizeof(fname), "%.*s", (int)fa->name.n, fa->name.s);
    step(x, pos);
    if (n > GT_MAX_ARGS) xerr(x, pos, "too many arguments to %s", fname);
    if (f == GT_F_AND || f == GT_F_OR) { /* lazy, returns an operand */
        if (n < 1) xerr(x, pos, "wrong number of args for %s: want at least 1 got 0", fname);
        val v = vnil();
        for (int i = 1; i < cmd->n_args; i++) {
            v = eval_arg(x, dot, cmd->args[i]);
            if (truth(&v) == (f == GT_F_OR)) return v;
        }
        return has_final ? *final : v;
    }
    val av[GT_MAX_ARGS];
    for (int i = 1; i < cmd->n_args; i++) av[i - 1] = eval_arg(x, dot, cmd->args[i]);
    if (has_final) av[n - 1] = *final;
    switch (f) {
    case GT_F_NOT: want_args(x, pos, fname, n, 1); return vbool(!truth(&av[0]));
    case GT_F_EQ:
        if (n < 1) xerr(x, pos, "wrong number of args for eq: want at least 1 got 0");
        if (n < 2) xerr(x, pos, "error calling eq: missing argument for comparison");
        for (int i = 1; i < n; i++) if (eq2(x, pos, &av[0], &av[i])) return vbool(true);
        return vbool(false);
    case GT_F_NE: want_args(x, pos, fname, n, 2); return vbool(!eq2(x, pos, &av[0], &av[1]));
    case GT_F_LT: want_args(x, pos, fname, n, 2); return vbool(lt2(x, pos, fname, &av[0], &av[1]));
    case GT_F_LE: want_args(x, pos, fname, n, 2);
        return vbool(lt2(x, pos, fname, &av[0], &av[1]) || eq2(x, pos, &av[0], &av[1]));
    case GT_F_GT: want_args(x, pos, fname, n, 2);
        return vbool(!(lt2(x, pos, fname, &av[0], &av[1]) || eq2(x, pos, &av[0], &av[1])));
    case GT_F_GE: want_args(x, pos, fname, n, 2); return vbool(!lt2(x, pos, fname, &av[0], &av[1]));
    case GT_F_LEN:
        want_args(x, pos, fname, n, 1);
        switch (av[0].k) {
        case V_STR: return vint((int64_t)av[0].n);
        case V_MSGS: return vint(av[0].nmsg);
        case V_EMPTY: return vint(0);
        case V_ROOT: return vint(n_root_keys(x));
        case V_JSON:
            if (cJSON_IsArray(av[0].j) || cJSON_IsObject(av[0].j)) return vint(cJSON_GetArraySize(av[0].j));
            if (!av[0].j || cJSON_IsNull(av[0].j)) return vint(0);
            xerr(x, pos, "error calling len: len of type %s", type_name(&av[0]));
        case V_NIL: xerr(x, pos, "error calling len: len of nil pointer");
        default: xerr(x, pos, "error calling len: len of type %s", type_name(&av[0]));
        }
    case GT_F_INDEX: return call_index(x, pos, av, n);
    case GT_F_SLICE: return call_slice(x, pos, av, n);
    case GT_F_PRINT:
    case GT_F_PRINTLN: {
        size_t start = x->len;
        for (int i = 0; i < n; i++) {
            bool sep = f == GT_F_PRINTLN ? i > 0 : (i > 0 && av[i].k != V_STR && av[i - 1].k != V_STR);
            if (sep) emit(x, pos, " ", 1);
            emit_operand(x, pos, &av[i]);
        }
        if (f == GT_F_PRINTLN) emit(x, pos, "\n", 1);
        return take_tail(x, pos, start);
    }
    case GT_F_JSON: {
        want_args(x, pos, fname, n, 1);
        size_t start = x->len;
        switch (av[0].k) {
        case V_STR: emit_json_string(x, pos, av[0].s, av[0].n); break;
        case V_NIL: case V_EMPTY: emit(x, pos, "null", 4); break;
        case V_INT: case V_BOOL: emit_value(x, pos, &av[0]); break;
        case V_JSON: emit_json_node(x, pos, av[0].j); break;
        default: xerr(x, pos, "json of a value of type %s is not supported", type_name(&av[0]));
        }
        return take_tail(x, pos, start);
    }
    default: break;
    }
    xerr(x, pos, "internal: unknown function");
}

static val eval_arg(ex *x, const val *dot, const gt_arg *a) {
    switch (a->kind) {
    case GT_ARG_FIELD: return field_chain(x, *dot, a);
    case GT_ARG_VAR: return field_chain(x, find_var(x, a->name, a->pos)->v, a);
    case GT_ARG_DOT: return *dot;
    case GT_ARG_STRING: return (val){.k = V_STR, .s = a->str.s, .n = a->str.n};
    case GT_ARG_INT: return vint(a->ival);
    case GT_ARG_BOOL: return vbool(a->bval);
    case GT_ARG_NIL: return vnil();
    case GT_ARG_FUNC: { /* a function as an operand is called without arguments */
        gt_cmd c = {(gt_arg **)&a, 1, a->pos};
        return call(x, dot, a, &c, false, NULL);
    }
    case GT_ARG_PIPE: return field_chain(x, eval_pipe(x, dot, a->pipe), a);
    }
    xerr(x, a->pos, "internal: bad operand");
}

static val eval_command(ex *x, const val *dot, const gt_cmd *c, bool has_final, const val *final) {
    const gt_arg *first = c->args[0];
    if (first->kind == GT_ARG_FUNC) return call(x, dot, first, c, has_final, final);
    if (c->n_args > 1 || has_final) xerr(x, first->pos, "can't give argument to non-function");
    return eval_arg(x, dot, first);
}

/* Evaluates the commands; a declaration pushes the variable(s), an assignment sets them. */
static val eval_pipe_value(ex *x, const val *dot, const gt_pipe *pp) {
    val v = vnil();
    for (int i = 0; i < pp->n_cmds; i++) v = eval_command(x, dot, &pp->cmds[i], i > 0, &v);
    return v;
}

static val eval_pipe(ex *x, const val *dot, const gt_pipe *pp) {
    step(x, pp->pos);
    val v = eval_pipe_value(x, dot, pp);
    for (int i = 0; i < pp->n_vars; i++) {
        if (pp->decl == GT_DECL_DECLARE) push_var(x, pp->vars[i], v, pp->pos);
        else find_var(x, pp->vars[i], pp->pos)->v = v;
    }
    return v;
}

/* ---- walking the tree ----------------------------------------------------------------- */

typedef enum { FLOW_NEXT, FLOW_BREAK, FLOW_CONTINUE } flow;

static flow walk_list(ex *x, const val *dot, const gt_list *l);

static flow walk_range(ex *x, const val *dot, const gt_node *n) {
    int mark = x->n_vars;
    const gt_pipe *pp = n->pipe;
    val v = eval_pipe_value(x, dot, pp);
    for (int i = 0; i < pp->n_vars; i++) push_var(x, pp->vars[i], v, pp->pos);
    int64_t count;
    switch (v.k) {
    case V_MSGS: count = v.nmsg; break;
    case V_EMPTY: case V_NIL: count = 0; break;
    case V_JSON:
        if (v.j && !cJSON_IsArray(v.j) && !cJSON_IsObject(v.j) && !cJSON_IsNull(v.j))
            xerr(x, n->pos, "range can't iterate over a value of type %s", type_name(&v));
        if (v.jt != JT_TOOLS && v.jt != JT_CALLS && v.jt != JT_PROPS && v.jt != JT_ARGS && v.jt != JT_ANY)
            xerr(x, n->pos, "range can't iterate over a value of type %s", type_name(&v));
        count = v.j && !cJSON_IsNull(v.j) ? cJSON_GetArraySize(v.j) : 0;
        break;
    case V_INT:
        if (pp->n_vars > 1) xerr(x, n->pos, "can't use %" PRId64 " to iterate over more than one variable", v.i);
        count = v.i > 0 ? v.i : 0;
        break;
    default: xerr(x, n->pos, "range can't iterate over a value of type %s", type_name(&v));
    }
    flow result = FLOW_NEXT;
    if (count == 0) {
        if (n->else_list) result = walk_list(x, dot, n->else_list);
    } else {
        int body_mark = x->n_vars;
        const cJSON *e = NULL;   /* the JSON element: a walk of the list (cJSON_GetArrayItem is O(i)) */
        for (int64_t i = 0; i < count; i++) {
            step(x, n->pos);
            val elem, key = vint(i);
            if (v.k == V_JSON) {
                e = i == 0 ? v.j->child : e ? e->next : NULL;
                elem = v.jt == JT_TOOLS ? vjson(e, JT_TOOL) : v.jt == JT_CALLS ? vjson(e, JT_CALL)
                     : v.jt == JT_PROPS ? vjson(e, JT_PROP) : json_scalar(e);
                if (cJSON_IsObject(v.j)) key = vstr(e->string);   /* a map: its keys, in Go's sorted order */
            } else {
                elem = v.k == V_INT ? vint(i) : (val){.k = V_MSG, .msgs = &v.msgs[i], .nmsg = 1};
            }
            if (pp->n_vars == 1) x->vars[body_mark - 1].v = elem;
            if (pp->n_vars == 2) {
                x->vars[body_mark - 2].v = key;
                x->vars[body_mark - 1].v = elem;
            }
            flow f = walk_list(x, &elem, n->list);
            x->n_vars = body_mark;
            if (f == FLOW_BREAK) break;
        }
    }
    x->n_vars = mark;
    return result;
}

static flow walk_node(ex *x, const val *dot, const gt_node *n) {
    step(x, n->pos);
    switch (n->kind) {
    case GT_N_TEXT: emit(x, n->pos, n->text.s, n->text.n); return FLOW_NEXT;
    case GT_N_ACTION: {
        val v = eval_pipe(x, dot, n->pipe);
        if (n->pipe->n_vars == 0) emit_value(x, n->pos, &v);
        return FLOW_NEXT;
    }
    case GT_N_IF:
    case GT_N_WITH: {
        int mark = x->n_vars;
        val v = eval_pipe(x, dot, n->pipe);
        flow f = FLOW_NEXT;
        if (truth(&v)) f = walk_list(x, n->kind == GT_N_WITH ? &v : dot, n->list);
        else if (n->else_list) f = walk_list(x, dot, n->else_list);
        x->n_vars = mark;
        return f;
    }
    case GT_N_RANGE: return walk_range(x, dot, n);
    case GT_N_BREAK: return FLOW_BREAK;
    case GT_N_CONTINUE: return FLOW_CONTINUE;
    }
    return FLOW_NEXT;
}

static flow walk_list(ex *x, const val *dot, const gt_list *l) {
    for (int i = 0; i < l->n; i++) {
        flow f = walk_node(x, dot, l->nodes[i]);
        if (f != FLOW_NEXT) return f;
    }
    return FLOW_NEXT;
}

static char *render_tree(const gotmpl *t, const gt_list *root, const gotmpl_vars *v) {
    if (!t || !v) {
        anv_set_error("gotemplate: render without a template or variables");
        return NULL;
    }
    ex *x = calloc(1, sizeof(*x));
    if (!x) {
        anv_set_error("gotemplate: out of memory");
        return NULL;
    }
    x->t = t;
    x->v = v;
    x->msgs_mode = v->messages != NULL;
    char *result = NULL;
    if (x->msgs_mode && v->tools_json) x->tools = gt_tools_for_template(v->tools_json);
    if (x->msgs_mode && v->n_messages > 0) {
        x->calls = calloc((size_t)v->n_messages, sizeof *x->calls);
        for (int i = 0; x->calls && i < v->n_messages; i++)
            if (v->messages[i].tool_calls) x->calls[i] = gt_calls_for_template(v->messages[i].tool_calls);
    }
    if (setjmp(x->fail) == 0) {
        val data = {.k = V_ROOT};
        push_var(x, (gt_str){"$", 1}, data, 0);
        emit(x, 0, "", 0);
        walk_list(x, &data, root);
        result = x->out;
        x->out = NULL;
    }
    free(x->out);
    cJSON_Delete(x->tools);
    for (int i = 0; x->calls && i < v->n_messages; i++) cJSON_Delete(x->calls[i]);
    free(x->calls);
    for (int i = 0; i < x->n_temps; i++) free(x->temps[i]);
    free(x->temps);
    free(x->vars);
    free(x);
    return result;
}

char *gotmpl_render(const gotmpl *t, const gotmpl_vars *v) { return render_tree(t, t ? t->root : NULL, v); }

char *gotmpl_render_last_turn(const gotmpl *t, const gotmpl_vars *v) {
    return render_tree(t, t ? t->cut_root : NULL, v);
}
