/* json_schema: compiles a JSON schema (or "any JSON object") into the grammar nodes of
 * grammar_impl.h that grammar.c matches byte by byte.
 *
 * Supported: type (one or a list), properties, required, additionalProperties (true /
 * false / schema), items, minItems/maxItems, minLength/maxLength (code points), enum,
 * const, anyOf, oneOf (matched as anyOf: exclusivity is not enforced, as in llama.cpp),
 * minimum/maximum/exclusiveMinimum/exclusiveMaximum on integers (not on numbers: error),
 * allOf with one schema, $ref to a local JSON pointer (#/$defs/X, #/definitions/X, #),
 * recursion through $ref, nesting. Annotations (title, description, default, examples,
 * format, $schema, $id, $comment, ...) and unknown keywords are ignored: they do not
 * change validity (format is an annotation unless a validator opts in).
 * Unsupported keywords that would change validity are an error naming the keyword:
 * pattern, bounds on non-integer numbers, multipleOf, patternProperties,
 * propertyNames, min/maxProperties, uniqueItems: true, prefixItems, tuple-form items,
 * contains, not, if/then/else, dependent*, unevaluated*.
 *
 * Output choices (every output still validates; the grammar is narrower than the schema):
 *  - object members come in a fixed order: required properties first, in the order of
 *    "properties" (required names missing from "properties" after them), then optional
 *    properties in declared order, each of which may be skipped (like llama.cpp's
 *    json-schema-to-grammar). Additional properties (if allowed) may appear anywhere
 *    after the required ones and never reuse a declared name.
 *  - "properties" without "additionalProperties" allows no additional properties
 *    (llama.cpp does the same); an object schema without "properties" allows any.
 *  - a schema without "type" is inferred from its keywords (properties/required ->
 *    object, items/minItems/maxItems -> array, minLength/maxLength -> string), else any
 *    JSON value.
 *  - "integer" is generated without fraction or exponent; numbers have at most 16
 *    integer digits, 16 fraction digits and a 2-digit exponent.
 *  - enum/const values are written in their compact JSON form (cJSON's). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "grammar_impl.h"
#include "str_set.h"

#define SCHEMA_MAX_DEPTH 64 /* nesting of the schema document itself */

/* ---- builders ---- */

static int grow(void **p, int32_t *cap, int32_t need, size_t elem) {
    if (need <= *cap) return 0;
    int32_t nc = *cap ? *cap : 16;
    while (nc < need) {
        if (nc > (1 << 29)) { anv_set_error("grammar too large"); return -1; }
        nc *= 2;
    }
    void *q = realloc(*p, (size_t)nc * elem);
    if (!q) { anv_set_error("out of memory"); return -1; }
    *p = q;
    *cap = nc;
    return 0;
}

int32_t grammar_add_node(grammar *g, gnode_kind kind) {
    if (grow((void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof(gnode)) != 0) return -1;
    if (g->n_nodes >= 65535) { anv_set_error("JSON schema too large (more than 65535 grammar nodes)"); return -1; }
    gnode *n = &g->nodes[g->n_nodes];
    memset(n, 0, sizeof *n);
    n->kind = kind;
    n->trie = n->excl = n->additional = n->addkey = n->item = -1;
    n->max = -1;
    return g->n_nodes++;
}

int32_t grammar_trie_new(grammar *g) {
    if (grow((void **)&g->trie, &g->cap_trie, g->n_trie + 1, sizeof(gtrie)) != 0) return -1;
    g->trie[g->n_trie] = (gtrie){.child = -1, .sibling = -1, .val = -1, .maxval = -1, .byte = 0};
    return g->n_trie++;
}

int32_t grammar_trie_child(const grammar *g, int32_t t, uint8_t c) {
    for (int32_t k = g->trie[t].child; k >= 0; k = g->trie[k].sibling)
        if (g->trie[k].byte == c) return k;
    return -1;
}

int grammar_trie_insert(grammar *g, int32_t root, const char *s, size_t n, int32_t val) {
    int32_t t = root;
    if (g->trie[t].maxval < val) g->trie[t].maxval = val;
    for (size_t i = 0; i < n; i++) {
        int32_t k = grammar_trie_child(g, t, (uint8_t)s[i]);
        if (k < 0) {
            k = grammar_trie_new(g);
            if (k < 0) return -1;
            g->trie[k].byte = (uint8_t)s[i];
            g->trie[k].sibling = g->trie[t].child;
            g->trie[t].child = k;
        }
        t = k;
        if (g->trie[t].maxval < val) g->trie[t].maxval = val;
    }
    if (g->trie[t].val < 0) g->trie[t].val = val;
    return 0;
}

static int add_alts(grammar *g, int32_t node, const int32_t *alts, int32_t n) {
    if (grow((void **)&g->alts, &g->cap_alts, g->n_alts + n, sizeof(int32_t)) != 0) return -1;
    memcpy(g->alts + g->n_alts, alts, (size_t)n * sizeof(int32_t));
    g->nodes[node].alt0 = g->n_alts;
    g->nodes[node].n_alts = n;
    g->n_alts += n;
    return 0;
}

void grammar_free(grammar *g) {
    if (!g) return;
    for (int32_t i = 0; i < g->n_props; i++) free(g->props[i].key);
    free(g->nodes);
    free(g->alts);
    free(g->props);
    free(g->trie);
    free(g);
}

/* ---- compiler ---- */

typedef struct {
    grammar *g;
    cJSON *doc;
    int32_t any; /* the "any JSON value" node, built on first use */
    const cJSON **memo_key;
    int32_t *memo_node;
    int n_memo, cap_memo;
    int depth;
} compiler;

static int32_t lit_node(grammar *g, const char *const *lits, int n) {
    int32_t node = grammar_add_node(g, GN_LIT);
    if (node < 0) return -1;
    int32_t root = grammar_trie_new(g);
    if (root < 0) return -1;
    g->nodes[node].trie = root;
    for (int i = 0; i < n; i++)
        if (grammar_trie_insert(g, root, lits[i], strlen(lits[i]), 0) != 0) return -1;
    return node;
}

static int32_t string_node(grammar *g, int32_t min, int32_t max) {
    int32_t n = grammar_add_node(g, GN_STRING);
    if (n < 0) return -1;
    g->nodes[n].min = min;
    g->nodes[n].max = max;
    return n;
}

static int32_t any_node(compiler *c) {
    if (c->any >= 0) return c->any;
    grammar *g = c->g;
    int32_t any = grammar_add_node(g, GN_UNION);
    if (any < 0) return -1;
    c->any = any;
    int32_t obj = grammar_add_node(g, GN_OBJECT);
    int32_t key = string_node(g, 0, -1);
    int32_t arr = grammar_add_node(g, GN_ARRAY);
    int32_t str = string_node(g, 0, -1);
    int32_t num = grammar_add_node(g, GN_NUMBER);
    static const char *const tfn[] = {"true", "false", "null"};
    int32_t lit = lit_node(g, tfn, 3);
    if (obj < 0 || key < 0 || arr < 0 || str < 0 || num < 0 || lit < 0) return -1;
    g->nodes[obj].additional = any;
    g->nodes[obj].addkey = key;
    g->nodes[arr].item = any;
    g->nodes[arr].min = 0;
    int32_t alts[5] = {obj, arr, str, num, lit};
    if (add_alts(g, any, alts, 5) != 0) return -1;
    return any;
}

/* The JSON text of a string, quotes included (escapes " \ and control characters). */
static char *json_quote(const char *s) {
    size_t n = strlen(s);
    char *out = malloc(n * 6 + 3);
    if (!out) { anv_set_error("out of memory"); return NULL; }
    size_t k = 0;
    out[k++] = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\') { out[k++] = '\\'; out[k++] = (char)ch; }
        else if (ch == '\n') { out[k++] = '\\'; out[k++] = 'n'; }
        else if (ch == '\t') { out[k++] = '\\'; out[k++] = 't'; }
        else if (ch == '\r') { out[k++] = '\\'; out[k++] = 'r'; }
        else if (ch < 0x20) {
            static const char hex[] = "0123456789abcdef";
            memcpy(out + k, "\\u00", 4);
            k += 4;
            out[k++] = hex[ch >> 4];
            out[k++] = hex[ch & 15];
        } else out[k++] = (char)ch;
    }
    out[k++] = '"';
    out[k] = 0;
    return out;
}

static const char *const k_unsupported[] = {
    "pattern", "multipleOf",
    "patternProperties", "propertyNames", "minProperties", "maxProperties", "prefixItems",
    "contains", "minContains", "maxContains", "not", "if", "then", "else", "dependentRequired",
    "dependentSchemas", "dependencies", "unevaluatedProperties", "unevaluatedItems",
    "additionalItems", "$dynamicRef", "$recursiveRef", NULL};

/* Keywords that constrain a value (anything else is an annotation or a container of
 * definitions). */
static const char *const k_validation[] = {
    "type", "enum", "const", "properties", "required", "additionalProperties", "items", "minItems",
    "maxItems", "minLength", "maxLength", "$ref", "allOf", "anyOf", "oneOf", "uniqueItems", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", NULL};

static bool in_list(const char *s, const char *const *list) {
    for (int i = 0; list[i]; i++)
        if (strcmp(s, list[i]) == 0) return true;
    return false;
}

/* A second validation keyword besides `self` (NULL if none). */
static const char *other_validation(const cJSON *s, const char *self) {
    for (const cJSON *k = s->child; k; k = k->next)
        if (in_list(k->string, k_validation) && strcmp(k->string, self) != 0) {
            if (strcmp(k->string, "uniqueItems") == 0 && cJSON_IsFalse(k)) continue;
            return k->string;
        }
    return NULL;
}

/* Reads a non-negative integer keyword; 0 if absent (*out untouched), 1 if read, -1 on error. */
static int get_count(const cJSON *s, const char *key, int32_t *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, key);
    if (!v) return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1e9 || v->valuedouble != (double)(int64_t)v->valuedouble) {
        anv_set_error("JSON schema: \"%s\" must be a non-negative integer", key);
        return -1;
    }
    *out = (int32_t)v->valuedouble;
    return 1;
}

static int32_t compile(compiler *c, const cJSON *s);

static const cJSON *resolve_ref(compiler *c, const char *ref) {
    if (ref[0] != '#') {
        anv_set_error("JSON schema: $ref \"%s\" is not local (only #/... pointers are supported)", ref);
        return NULL;
    }
    const cJSON *cur = c->doc;
    const char *p = ref + 1;
    while (*p) {
        if (*p != '/') { anv_set_error("JSON schema: bad $ref \"%s\"", ref); return NULL; }
        p++;
        char seg[256];
        size_t k = 0;
        while (*p && *p != '/') {
            char ch = *p++;
            if (ch == '~' && *p == '0') { ch = '~'; p++; }
            else if (ch == '~' && *p == '1') { ch = '/'; p++; }
            if (k + 1 >= sizeof seg) { anv_set_error("JSON schema: $ref \"%s\" too long", ref); return NULL; }
            seg[k++] = ch;
        }
        seg[k] = 0;
        const cJSON *next = NULL;
        if (cJSON_IsObject(cur)) next = cJSON_GetObjectItemCaseSensitive(cur, seg);
        else if (cJSON_IsArray(cur)) {
            char *end;
            long idx = strtol(seg, &end, 10);
            if (*seg && !*end) next = cJSON_GetArrayItem(cur, (int)idx);
        }
        if (!next) { anv_set_error("JSON schema: $ref \"%s\" does not resolve", ref); return NULL; }
        cur = next;
    }
    return cur;
}

static int32_t compile_ref(compiler *c, const char *ref) {
    const cJSON *target = resolve_ref(c, ref);
    if (!target) return -1;
    for (int i = 0; i < c->n_memo; i++)
        if (c->memo_key[i] == target) return c->memo_node[i];
    /* A one-alternative union stands for the target so that recursive references
     * terminate; its alternative is filled in once the target is compiled. */
    int32_t p = grammar_add_node(c->g, GN_UNION);
    if (p < 0) return -1;
    if (c->n_memo == c->cap_memo) {
        int nc = c->cap_memo ? c->cap_memo * 2 : 16;
        const cJSON **k = realloc(c->memo_key, (size_t)nc * sizeof *k);
        if (k) c->memo_key = k;
        int32_t *v = realloc(c->memo_node, (size_t)nc * sizeof *v);
        if (v) c->memo_node = v;
        if (!k || !v) { anv_set_error("out of memory"); return -1; }
        c->cap_memo = nc;
    }
    c->memo_key[c->n_memo] = target;
    c->memo_node[c->n_memo++] = p;
    int32_t n = compile(c, target);
    if (n < 0) return -1;
    if (add_alts(c->g, p, &n, 1) != 0) return -1;
    return p;
}

static bool value_has_type(const cJSON *v, const char *type) {
    if (strcmp(type, "string") == 0) return cJSON_IsString(v);
    if (strcmp(type, "number") == 0) return cJSON_IsNumber(v);
    if (strcmp(type, "integer") == 0) return cJSON_IsNumber(v) && v->valuedouble == (double)(int64_t)v->valuedouble;
    if (strcmp(type, "boolean") == 0) return cJSON_IsBool(v);
    if (strcmp(type, "null") == 0) return cJSON_IsNull(v);
    if (strcmp(type, "object") == 0) return cJSON_IsObject(v);
    if (strcmp(type, "array") == 0) return cJSON_IsArray(v);
    return false;
}

static bool value_has_types(const cJSON *v, const cJSON *type) {
    if (!type) return true;
    if (cJSON_IsString(type)) return value_has_type(v, type->valuestring);
    for (const cJSON *t = type->child; t; t = t->next)
        if (cJSON_IsString(t) && value_has_type(v, t->valuestring)) return true;
    return false;
}

/* enum / const: a literal trie of the values' compact JSON texts. */
static int32_t compile_literals(compiler *c, const cJSON *s, const cJSON *values, bool is_const) {
    const char *kw = is_const ? "const" : "enum";
    const char *other = NULL;
    for (const cJSON *k = s->child; k; k = k->next)
        if (in_list(k->string, k_validation) && strcmp(k->string, kw) != 0 && strcmp(k->string, "type") != 0 &&
            !(strcmp(k->string, "uniqueItems") == 0 && cJSON_IsFalse(k)))
            other = k->string;
    if (other) {
        anv_set_error("JSON schema: \"%s\" combined with \"%s\" is unsupported", kw, other);
        return -1;
    }
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(s, "type");
    int32_t node = grammar_add_node(c->g, GN_LIT);
    int32_t root = node < 0 ? -1 : grammar_trie_new(c->g);
    if (root < 0) return -1;
    c->g->nodes[node].trie = root;
    int n = 0;
    for (const cJSON *v = is_const ? values : values->child; v; v = is_const ? NULL : v->next) {
        if (!value_has_types(v, type)) continue;
        char *txt = cJSON_PrintUnformatted(v);
        if (!txt) { anv_set_error("out of memory"); return -1; }
        int rc = grammar_trie_insert(c->g, root, txt, strlen(txt), 0);
        cJSON_free(txt);
        if (rc != 0) return -1;
        n++;
    }
    if (n == 0) {
        anv_set_error("JSON schema: \"%s\" allows no value%s", kw, type ? " of the given type" : "");
        return -1;
    }
    return node;
}

static int add_prop(grammar *g, const char *name, int32_t node) {
    if (grow((void **)&g->props, &g->cap_props, g->n_props + 1, sizeof(gprop)) != 0) return -1;
    char *key = json_quote(name);
    if (!key) return -1;
    g->props[g->n_props++] = (gprop){.key = key, .keylen = (int32_t)strlen(key), .node = node};
    return 0;
}

/* The names of an object's members (or of a list of strings) as a set: membership and duplicate
 * checks stay linear in the schema's size (a 100k-name "required" list compiled in O(n^2)). */
static int name_set(str_set *set, const cJSON *list, bool keys) {
    size_t n = 0;
    for (const cJSON *v = list ? list->child : NULL; v; v = v->next) n++;
    if (str_set_init(set, n) != 0) return -1;
    for (const cJSON *v = list ? list->child : NULL; v; v = v->next)
        if (str_set_add(set, keys ? v->string : v->valuestring) < 0) return -1;
    return 0;
}

static int32_t compile_object(compiler *c, const cJSON *s) {
    grammar *g = c->g;
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(s, "properties");
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(s, "required");
    const cJSON *addl = cJSON_GetObjectItemCaseSensitive(s, "additionalProperties");
    if (props && !cJSON_IsObject(props)) { anv_set_error("JSON schema: \"properties\" must be an object"); return -1; }
    if (req && !cJSON_IsArray(req)) { anv_set_error("JSON schema: \"required\" must be an array"); return -1; }
    for (const cJSON *r = req ? req->child : NULL; r; r = r->next)
        if (!cJSON_IsString(r)) { anv_set_error("JSON schema: \"required\" must list strings"); return -1; }

    int32_t additional = -1;
    if (addl && !cJSON_IsBool(addl) && !cJSON_IsObject(addl)) {
        anv_set_error("JSON schema: \"additionalProperties\" must be a boolean or a schema");
        return -1;
    }
    if (cJSON_IsTrue(addl) || (!addl && (!props || !props->child))) additional = any_node(c);
    else if (cJSON_IsObject(addl)) additional = compile(c, addl);
    if ((addl && !cJSON_IsFalse(addl) && additional < 0) || (!addl && additional < 0 && (!props || !props->child)))
        return -1;

    int32_t node = grammar_add_node(g, GN_OBJECT);
    if (node < 0) return -1;
    /* Property value nodes first (compiling may add props of nested objects), then this
     * object's props contiguously: required (properties order, then the other required
     * names), then optional. */
    int n_decl = props ? cJSON_GetArraySize(props) : 0;
    int n_req_list = req ? cJSON_GetArraySize(req) : 0;
    int cap = n_decl + n_req_list + 1;
    const char **names = malloc((size_t)cap * sizeof *names);
    int32_t *nodes = malloc((size_t)cap * sizeof *nodes);
    if (!names || !nodes) { free(names); free(nodes); anv_set_error("out of memory"); return -1; }
    int n = 0, n_req = 0, rc = 0;
    str_set req_names = {0}, declared = {0}, undeclared = {0};
    if (name_set(&req_names, req, false) != 0 || name_set(&declared, props, true) != 0 || str_set_init(&undeclared, 0) != 0)
        rc = -1;
    for (int pass = 0; pass < 3 && rc == 0; pass++) {
        if (pass == 1) { /* required names without a declared schema, each once */
            for (const cJSON *r = req ? req->child : NULL; r && rc == 0; r = r->next) {
                if (str_set_has(&declared, r->valuestring)) continue;
                const int added = str_set_add(&undeclared, r->valuestring);
                if (added <= 0) { rc = added; continue; }
                if (additional < 0) {
                    anv_set_error("JSON schema: required property \"%s\" is not allowed by the schema", r->valuestring);
                    rc = -1;
                    break;
                }
                names[n] = r->valuestring;
                nodes[n++] = additional;
            }
            n_req = n;
            continue;
        }
        for (const cJSON *p = props ? props->child : NULL; p && rc == 0; p = p->next) {
            bool is_req = str_set_has(&req_names, p->string);
            if (is_req != (pass == 0)) continue;
            int32_t v = compile(c, p);
            if (v < 0) rc = -1;
            names[n] = p->string;
            nodes[n++] = v;
        }
    }
    if (rc == 0) {
        g->nodes[node].prop0 = g->n_props;
        g->nodes[node].n_props = n;
        g->nodes[node].n_req = n_req;
        g->nodes[node].additional = additional;
        for (int i = 0; i < n && rc == 0; i++) rc = add_prop(g, names[i], nodes[i]);
        if (rc == 0 && n > 0) {
            int32_t kt = grammar_trie_new(g);
            rc = kt < 0 ? -1 : 0;
            g->nodes[node].trie = kt;
            for (int i = 0; i < n && rc == 0; i++) {
                const gprop *pr = &g->props[g->nodes[node].prop0 + i];
                rc = grammar_trie_insert(g, kt, pr->key, (size_t)pr->keylen, i);
            }
        }
        if (rc == 0 && additional >= 0) {
            int32_t key = string_node(g, 0, -1);
            rc = key < 0 ? -1 : 0;
            g->nodes[node].addkey = key;
            if (rc == 0 && n > 0) {
                int32_t ex = grammar_trie_new(g);
                rc = ex < 0 ? -1 : 0;
                g->nodes[key].excl = ex;
                for (int i = 0; i < n && rc == 0; i++) rc = grammar_trie_insert(g, ex, names[i], strlen(names[i]), 0);
            }
        }
    }
    str_set_free(&req_names);
    str_set_free(&declared);
    str_set_free(&undeclared);
    free(names);
    free(nodes);
    return rc == 0 ? node : -1;
}

static int32_t compile_array(compiler *c, const cJSON *s) {
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(s, "items");
    int32_t min = 0, max = -1;
    if (get_count(s, "minItems", &min) < 0 || get_count(s, "maxItems", &max) < 0) return -1;
    if (max >= 0 && max < min) { anv_set_error("JSON schema: maxItems %d < minItems %d", max, min); return -1; }
    int32_t item;
    if (!items || cJSON_IsTrue(items)) item = any_node(c);
    else if (cJSON_IsFalse(items)) {
        if (min > 0) { anv_set_error("JSON schema: \"items\": false with minItems > 0"); return -1; }
        max = 0;
        item = any_node(c);
    } else if (cJSON_IsArray(items)) {
        anv_set_error("JSON schema: tuple-form \"items\" (an array of schemas) is unsupported");
        return -1;
    } else item = compile(c, items);
    if (item < 0) return -1;
    int32_t node = grammar_add_node(c->g, GN_ARRAY);
    if (node < 0) return -1;
    c->g->nodes[node].item = item;
    c->g->nodes[node].min = min;
    c->g->nodes[node].max = max;
    return node;
}

/* minimum / maximum / exclusiveMinimum / exclusiveMaximum (draft 4 booleans too) of an
 * integer as an inclusive range; 0 if none given, 1 if bounded, -1 on error (bounds on a
 * non-integer number are unsupported). */
static int int_bounds(const cJSON *s, bool integer, int64_t *lo, int64_t *hi) {
    static const char *const kw[] = {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"};
    const double lim = 9999999999999999.0; /* GRAMMAR_MAX_INT_DIGITS nines */
    double lo_d = -lim, hi_d = lim;
    bool any = false, xmin = false, xmax = false;
    const cJSON *v[4];
    for (int i = 0; i < 4; i++) {
        v[i] = cJSON_GetObjectItemCaseSensitive(s, kw[i]);
        if (!v[i]) continue;
        if (!integer) {
            anv_set_error("JSON schema: \"%s\" is unsupported on type number (only on integer)", kw[i]);
            return -1;
        }
        if (cJSON_IsBool(v[i]) && (i == 1 || i == 3)) { /* draft 4: modifies minimum/maximum */
            if (i == 1) xmin = cJSON_IsTrue(v[i]);
            else xmax = cJSON_IsTrue(v[i]);
            continue;
        }
        if (!cJSON_IsNumber(v[i])) { anv_set_error("JSON schema: \"%s\" must be a number", kw[i]); return -1; }
        any = true;
    }
    if (v[0] && cJSON_IsNumber(v[0])) lo_d = xmin ? floor(v[0]->valuedouble) + 1 : ceil(v[0]->valuedouble);
    if (v[1] && cJSON_IsNumber(v[1])) lo_d = fmax(lo_d, floor(v[1]->valuedouble) + 1);
    if (v[2] && cJSON_IsNumber(v[2])) hi_d = xmax ? ceil(v[2]->valuedouble) - 1 : floor(v[2]->valuedouble);
    if (v[3] && cJSON_IsNumber(v[3])) hi_d = fmin(hi_d, ceil(v[3]->valuedouble) - 1);
    lo_d = fmax(lo_d, -lim);
    hi_d = fmin(hi_d, lim);
    if (any && lo_d > hi_d) {
        anv_set_error("JSON schema: minimum/maximum allow no integer of at most %d digits", GRAMMAR_MAX_INT_DIGITS);
        return -1;
    }
    *lo = (int64_t)lo_d;
    *hi = (int64_t)hi_d;
    return any ? 1 : 0;
}

static int32_t compile_typed(compiler *c, const cJSON *s, const char *type) {
    if (strcmp(type, "object") == 0) return compile_object(c, s);
    if (strcmp(type, "array") == 0) return compile_array(c, s);
    if (strcmp(type, "string") == 0) {
        int32_t min = 0, max = -1;
        if (get_count(s, "minLength", &min) < 0 || get_count(s, "maxLength", &max) < 0) return -1;
        if (max >= 0 && max < min) { anv_set_error("JSON schema: maxLength %d < minLength %d", max, min); return -1; }
        return string_node(c->g, min, max);
    }
    if (strcmp(type, "number") == 0 || strcmp(type, "integer") == 0) {
        int64_t lo, hi;
        int b = int_bounds(s, type[0] == 'i', &lo, &hi);
        if (b < 0) return -1;
        int32_t n = grammar_add_node(c->g, GN_NUMBER);
        if (n < 0) return -1;
        c->g->nodes[n].integer = type[0] == 'i';
        c->g->nodes[n].bounded = b > 0;
        c->g->nodes[n].lo = lo;
        c->g->nodes[n].hi = hi;
        return n;
    }
    if (strcmp(type, "boolean") == 0) {
        static const char *const tf[] = {"true", "false"};
        return lit_node(c->g, tf, 2);
    }
    if (strcmp(type, "null") == 0) {
        static const char *const nl[] = {"null"};
        return lit_node(c->g, nl, 1);
    }
    anv_set_error("JSON schema: unknown type \"%s\"", type);
    return -1;
}

static int32_t compile_union(compiler *c, const cJSON *list, const char *kw) {
    int n = cJSON_GetArraySize(list);
    if (!cJSON_IsArray(list) || n == 0) { anv_set_error("JSON schema: \"%s\" must be a non-empty array", kw); return -1; }
    int32_t *alts = malloc((size_t)n * sizeof *alts);
    if (!alts) { anv_set_error("out of memory"); return -1; }
    int i = 0;
    for (const cJSON *a = list->child; a; a = a->next) {
        alts[i] = compile(c, a);
        if (alts[i++] < 0) { free(alts); return -1; }
    }
    int32_t u = grammar_add_node(c->g, GN_UNION);
    int rc = u < 0 ? -1 : add_alts(c->g, u, alts, n);
    free(alts);
    return rc == 0 ? u : -1;
}

static int32_t compile_inner(compiler *c, const cJSON *s) {
    if (cJSON_IsTrue(s)) return any_node(c);
    if (cJSON_IsFalse(s)) { anv_set_error("JSON schema: the schema false allows no document"); return -1; }
    if (!cJSON_IsObject(s)) { anv_set_error("JSON schema: a schema must be an object or a boolean"); return -1; }
    for (const cJSON *k = s->child; k; k = k->next) {
        if (in_list(k->string, k_unsupported)) {
            anv_set_error("JSON schema: keyword \"%s\" is unsupported", k->string);
            return -1;
        }
        if (strcmp(k->string, "uniqueItems") == 0 && !cJSON_IsFalse(k)) {
            anv_set_error("JSON schema: keyword \"uniqueItems\" is unsupported");
            return -1;
        }
    }
    const char *other;
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(s, "$ref");
    if (ref) {
        if (!cJSON_IsString(ref)) { anv_set_error("JSON schema: \"$ref\" must be a string"); return -1; }
        if ((other = other_validation(s, "$ref"))) {
            anv_set_error("JSON schema: \"$ref\" combined with \"%s\" is unsupported", other);
            return -1;
        }
        return compile_ref(c, ref->valuestring);
    }
    const cJSON *all = cJSON_GetObjectItemCaseSensitive(s, "allOf");
    if (all) {
        if (!cJSON_IsArray(all) || cJSON_GetArraySize(all) != 1) {
            anv_set_error("JSON schema: \"allOf\" with other than one schema is unsupported");
            return -1;
        }
        if ((other = other_validation(s, "allOf"))) {
            anv_set_error("JSON schema: \"allOf\" combined with \"%s\" is unsupported", other);
            return -1;
        }
        return compile(c, all->child);
    }
    const char *ukw = cJSON_GetObjectItemCaseSensitive(s, "anyOf") ? "anyOf" : "oneOf";
    const cJSON *any_of = cJSON_GetObjectItemCaseSensitive(s, ukw);
    if (any_of) {
        if ((other = other_validation(s, ukw))) {
            anv_set_error("JSON schema: \"%s\" combined with \"%s\" is unsupported", ukw, other);
            return -1;
        }
        return compile_union(c, any_of, ukw);
    }
    const cJSON *cnst = cJSON_GetObjectItemCaseSensitive(s, "const");
    if (cnst) return compile_literals(c, s, cnst, true);
    const cJSON *en = cJSON_GetObjectItemCaseSensitive(s, "enum");
    if (en) {
        if (!cJSON_IsArray(en)) { anv_set_error("JSON schema: \"enum\" must be an array"); return -1; }
        return compile_literals(c, s, en, false);
    }
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(s, "type");
    if (!type) {
        if (cJSON_GetObjectItemCaseSensitive(s, "properties") || cJSON_GetObjectItemCaseSensitive(s, "required") ||
            cJSON_GetObjectItemCaseSensitive(s, "additionalProperties"))
            return compile_object(c, s);
        if (cJSON_GetObjectItemCaseSensitive(s, "items") || cJSON_GetObjectItemCaseSensitive(s, "minItems") ||
            cJSON_GetObjectItemCaseSensitive(s, "maxItems"))
            return compile_array(c, s);
        if (cJSON_GetObjectItemCaseSensitive(s, "minLength") || cJSON_GetObjectItemCaseSensitive(s, "maxLength"))
            return compile_typed(c, s, "string");
        if (cJSON_GetObjectItemCaseSensitive(s, "minimum") || cJSON_GetObjectItemCaseSensitive(s, "maximum") ||
            cJSON_GetObjectItemCaseSensitive(s, "exclusiveMinimum") || cJSON_GetObjectItemCaseSensitive(s, "exclusiveMaximum"))
            return compile_typed(c, s, "number"); /* bounds only on integers: an error */
        return any_node(c);
    }
    if (cJSON_IsString(type)) return compile_typed(c, s, type->valuestring);
    if (!cJSON_IsArray(type) || cJSON_GetArraySize(type) == 0) {
        anv_set_error("JSON schema: \"type\" must be a string or a non-empty array of strings");
        return -1;
    }
    int n = cJSON_GetArraySize(type), i = 0;
    int32_t alts[8];
    if (n > 8) { anv_set_error("JSON schema: \"type\" lists more than 8 types"); return -1; }
    for (const cJSON *t = type->child; t; t = t->next) {
        if (!cJSON_IsString(t)) { anv_set_error("JSON schema: \"type\" must list strings"); return -1; }
        if ((alts[i++] = compile_typed(c, s, t->valuestring)) < 0) return -1;
    }
    if (n == 1) return alts[0];
    int32_t u = grammar_add_node(c->g, GN_UNION);
    if (u < 0 || add_alts(c->g, u, alts, n) != 0) return -1;
    return u;
}

static int32_t compile(compiler *c, const cJSON *s) {
    if (++c->depth > SCHEMA_MAX_DEPTH) {
        anv_set_error("JSON schema nested deeper than %d levels", SCHEMA_MAX_DEPTH);
        c->depth--;
        return -1;
    }
    int32_t n = compile_inner(c, s);
    c->depth--;
    return n;
}

static grammar *grammar_alloc(void) {
    grammar *g = calloc(1, sizeof *g);
    if (!g) anv_set_error("out of memory");
    return g;
}

grammar *grammar_json_object(void) {
    grammar *g = grammar_alloc();
    if (!g) return NULL;
    compiler c = {.g = g, .any = -1};
    int32_t any = any_node(&c);
    if (any < 0) { grammar_free(g); return NULL; }
    g->root = g->alts[g->nodes[any].alt0]; /* the object alternative of "any value" */
    return g;
}

/* ---- a finite document must exist ----
 * The least container nesting any document of each node needs (Knuth's generalisation of
 * Dijkstra to grammars, levels as buckets): a literal, string or number needs 0; an object 1 +
 * the most its required properties need; an array 1, or 1 + its item's when minItems > 0; a
 * union the least of its branches'. A root that needs more than GRAMMAR_MAX_NESTING (or has no
 * finite document at all: {"$ref": "#"}, required properties that refer back to their object)
 * would leave the matcher with no token to allow: refused here as the schema's fault. */
static int check_finite(const grammar *g, int32_t root) {
    const int32_t n = g->n_nodes;
    const int32_t inf = GRAMMAR_MAX_NESTING + 1;
    /* children each node waits for: a union any one branch, an object every required
     * property (one edge per occurrence), an array with minItems > 0 its item */
    #define CHILDREN(i, BODY) do { const gnode *nd = &g->nodes[i]; \
        if (nd->kind == GN_UNION) for (int32_t a = 0; a < nd->n_alts; a++) { int32_t ch = g->alts[nd->alt0 + a]; BODY; } \
        else if (nd->kind == GN_OBJECT) for (int32_t q = 0; q < nd->n_req; q++) { int32_t ch = g->props[nd->prop0 + q].node; BODY; } \
        else if (nd->kind == GN_ARRAY && nd->min > 0 && nd->max != 0) { int32_t ch = nd->item; BODY; } } while (0)
    if (n <= 0 || root < 0 || root >= n) { anv_set_error("JSON schema: empty grammar"); return -1; }
    const size_t nn = (size_t)(uint32_t)n;
    size_t n_edges = 0;
    for (int32_t i = 0; i < n; i++) CHILDREN(i, { if (ch >= 0 && ch < n) n_edges++; });
    const size_t n_push = nn + n_edges;   /* every push is a node's start or an edge's use */
    int32_t *need = calloc(nn, sizeof *need), *acc = calloc(nn, sizeof *acc);
    int32_t *depth = malloc(nn * sizeof *depth), *par0 = calloc(nn + 1, sizeof *par0);
    int32_t *par = malloc((n_edges ? n_edges : 1) * sizeof *par), *fill = calloc(nn, sizeof *fill);
    int32_t *ent_node = malloc(n_push * sizeof *ent_node), *ent_next = malloc(n_push * sizeof *ent_next);
    int32_t head[GRAMMAR_MAX_NESTING + 1];
    uint8_t *final = calloc(nn, 1);
    int rc = -1;
    if (!need || !acc || !depth || !par0 || !par || !fill || !ent_node || !ent_next || !final) {
        anv_set_error("out of memory");
        goto done;
    }
    for (int32_t i = 0; i < n; i++) CHILDREN(i, { if (ch >= 0 && ch < n) par0[ch + 1]++; });
    for (int32_t i = 0; i < n; i++) par0[i + 1] += par0[i];
    for (int32_t i = 0; i < n; i++) CHILDREN(i, { if (ch >= 0 && ch < n) par[par0[ch] + fill[ch]++] = i; });
    for (int32_t d = 0; d < inf; d++) head[d] = -1;
    size_t n_ent = 0;
    /* buckets by depth: linked stacks; a node is final when first popped at its depth */
    #define PUSH(i, d) do { if ((d) < depth[i] && n_ent < n_push) { depth[i] = (d); ent_node[n_ent] = (i); \
        ent_next[n_ent] = head[d]; head[d] = (int32_t)n_ent++; } } while (0)
    for (int32_t i = 0; i < n; i++) depth[i] = inf;
    for (int32_t i = 0; i < n; i++) {
        const gnode *nd = &g->nodes[i];
        switch (nd->kind) {
        case GN_UNION: need[i] = 1; break;
        case GN_OBJECT: need[i] = nd->n_req; if (!need[i]) PUSH(i, 1); break;
        case GN_ARRAY: if (nd->min > 0 && nd->max != 0) need[i] = 1; else PUSH(i, 1); break;
        case GN_NUMBER: if (!(nd->integer && nd->bounded && nd->lo > nd->hi)) PUSH(i, 0); break;
        case GN_STRING: if (nd->max < 0 || nd->min <= nd->max) PUSH(i, 0); break;
        case GN_LIT: PUSH(i, 0); break;
        }
    }
    for (int32_t d = 0; d < inf; d++)
        while (head[d] >= 0) {
            const int32_t e0 = head[d], i = ent_node[e0];
            head[d] = ent_next[e0];
            if (final[i] || depth[i] != d) continue;
            final[i] = 1;
            for (int32_t e = par0[i]; e < par0[i + 1]; e++) {
                const int32_t p = par[e];
                if (final[p]) continue;
                if (g->nodes[p].kind == GN_UNION) { PUSH(p, d); continue; }
                if (d > acc[p]) acc[p] = d;
                if (--need[p] == 0 && acc[p] + 1 < inf) PUSH(p, acc[p] + 1);
            }
        }
    #undef PUSH
    #undef CHILDREN
    if (!final[root]) {
        anv_set_error("JSON schema: no finite JSON value satisfies it within %d levels of nesting (a \"$ref\" "
                      "cycle through required properties or array items, or a deeper chain)", GRAMMAR_MAX_NESTING);
        goto done;
    }
    rc = 0;
done:
    free(need); free(acc); free(depth); free(par0); free(par); free(fill); free(ent_node); free(ent_next); free(final);
    return rc;
}

grammar *grammar_json_schema(const char *schema_json) {
    if (!schema_json) { anv_set_error("JSON schema: none given"); return NULL; }
    cJSON *doc = cJSON_Parse(schema_json);
    if (!doc) { anv_set_error("JSON schema: not valid JSON"); return NULL; }
    grammar *g = grammar_alloc();
    if (!g) { cJSON_Delete(doc); return NULL; }
    compiler c = {.g = g, .doc = doc, .any = -1};
    int32_t root = compile(&c, doc);
    free(c.memo_key);
    free(c.memo_node);
    cJSON_Delete(doc);
    if (root < 0 || check_finite(g, root) != 0) { grammar_free(g); return NULL; }
    g->root = root;
    return g;
}
