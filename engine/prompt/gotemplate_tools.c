/* gotemplate_tools: the request's tools and a message's tool calls in the shape Ollama's
 * template package hands a TEMPLATE (template/template.go convertToolsForTemplate /
 * convertMessagesForTemplate, v0.17): what json.Marshal of those Go values prints, as a
 * cJSON tree whose key order is the output order:
 *   tool       {"type", "items"?, "function": {"name", "description", "parameters":
 *              {"type", "$defs"?, "items"?, "required"?, "properties": {..} | null}}}
 *              (struct field order; properties is a Go map: keys sorted);
 *   property   {"anyOf"?, "type"? (a string when one type), "items"?, "description"?,
 *              "enum"?, "properties"? (insertion order)}; fields Ollama does not model
 *              (default, nullable, ...) are dropped, as its JSON decoding drops them;
 *   call       {"ID", "Function": {"Index", "Name", "Arguments"}} (arguments a Go map:
 *              keys sorted at every level).
 * `any` values (items, $defs, enum) decode to Go maps, so their keys are sorted too.
 * Also gotmpl_tool_tag and gotmpl_think_tags: the tags Ollama's fallback tool and thinking
 * parsers look for. */
#include "gotemplate_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const cJSON *get(const cJSON *o, const char *k) { return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL; }

static int cmp_keys(const void *a, const void *b) {
    return strcmp((*(const cJSON *const *)a)->string, (*(const cJSON *const *)b)->string);
}

/* A deep copy with every object's keys sorted (a decoded Go map[string]any). */
cJSON *gt_json_sorted(const cJSON *v) {
    if (!v) return NULL;
    if (cJSON_IsArray(v)) {
        cJSON *a = cJSON_CreateArray();
        for (const cJSON *c = v->child; a && c; c = c->next) cJSON_AddItemToArray(a, gt_json_sorted(c));
        return a;
    }
    if (!cJSON_IsObject(v)) return cJSON_Duplicate(v, false);
    int n = cJSON_GetArraySize(v);
    const cJSON **keys = malloc(sizeof *keys * (size_t)(n ? n : 1));
    cJSON *o = cJSON_CreateObject();
    if (!keys || !o) { free(keys); cJSON_Delete(o); return NULL; }
    int k = 0;
    for (const cJSON *c = v->child; c; c = c->next) {
        bool dup = false;   /* a Go map keeps the last of duplicate keys */
        for (int i = 0; i < k; i++)
            if (!strcmp(keys[i]->string, c->string)) { keys[i] = c; dup = true; }
        if (!dup) keys[k++] = c;
    }
    qsort(keys, (size_t)k, sizeof *keys, cmp_keys);
    for (int i = 0; i < k; i++) cJSON_AddItemToObject(o, keys[i]->string, gt_json_sorted(keys[i]));
    free(keys);
    return o;
}

static void add_str(cJSON *o, const char *k, const cJSON *v) {
    cJSON_AddStringToObject(o, k, cJSON_IsString(v) ? v->valuestring : "");
}

static bool nonempty(const cJSON *v) {
    if (!v || cJSON_IsNull(v)) return false;
    if (cJSON_IsArray(v) || cJSON_IsObject(v)) return v->child != NULL;
    if (cJSON_IsString(v)) return *v->valuestring;
    return true;
}

static cJSON *property(const cJSON *p, int depth);

/* A ToolPropertiesMap: properties in the order given; a Go map (sorted) when sorted. */
static cJSON *properties(const cJSON *props, bool sorted, int depth) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    for (const cJSON *c = props->child; c; c = c->next) {
        cJSON *old = cJSON_GetObjectItemCaseSensitive(o, c->string);
        if (old) cJSON_DeleteItemFromObjectCaseSensitive(o, c->string);
        cJSON_AddItemToObject(o, c->string, property(c, depth + 1));
    }
    if (!sorted) return o;
    /* a Go map: the top-level names sorted, each property's own fields kept in struct order */
    int n = cJSON_GetArraySize(o);
    cJSON **items = malloc(sizeof *items * (size_t)(n ? n : 1));
    if (!items) { cJSON_Delete(o); return NULL; }
    int k = 0;
    while (o->child) items[k++] = cJSON_DetachItemViaPointer(o, o->child);
    qsort(items, (size_t)k, sizeof *items, cmp_keys);
    for (int i = 0; i < k; i++) {
        char *name = items[i]->string;
        items[i]->string = NULL;
        cJSON_AddItemToObject(o, name, items[i]);
        free(name);
    }
    free(items);
    return o;
}

static cJSON *property(const cJSON *p, int depth) {
    cJSON *o = cJSON_CreateObject();
    if (!o || depth > 64) return o;
    const cJSON *any = get(p, "anyOf"), *ty = get(p, "type"), *items = get(p, "items"), *desc = get(p, "description"),
                *en = get(p, "enum"), *props = get(p, "properties");
    if (cJSON_IsArray(any) && any->child) {
        cJSON *a = cJSON_AddArrayToObject(o, "anyOf");
        for (const cJSON *c = any->child; c; c = c->next) cJSON_AddItemToArray(a, property(c, depth + 1));
    }
    if (cJSON_IsString(ty)) cJSON_AddStringToObject(o, "type", ty->valuestring);
    else if (cJSON_IsArray(ty) && ty->child) {
        if (!ty->child->next) cJSON_AddItemToObject(o, "type", cJSON_Duplicate(ty->child, false));
        else cJSON_AddItemToObject(o, "type", cJSON_Duplicate(ty, true));
    }
    if (nonempty(items)) cJSON_AddItemToObject(o, "items", gt_json_sorted(items));
    if (cJSON_IsString(desc) && *desc->valuestring) cJSON_AddStringToObject(o, "description", desc->valuestring);
    if (cJSON_IsArray(en) && en->child) cJSON_AddItemToObject(o, "enum", gt_json_sorted(en));
    if (cJSON_IsObject(props)) cJSON_AddItemToObject(o, "properties", properties(props, false, depth));
    return o;
}

cJSON *gt_tools_for_template(const char *tools_json) {
    cJSON *in = tools_json ? cJSON_Parse(tools_json) : NULL;
    if (!cJSON_IsArray(in) || !in->child) { cJSON_Delete(in); return NULL; }
    cJSON *out = cJSON_CreateArray();
    for (const cJSON *t = in->child; out && t; t = t->next) {
        cJSON *o = cJSON_CreateObject();
        const cJSON *fn = get(t, "function"), *params = get(fn, "parameters");
        add_str(o, "type", get(t, "type"));
        if (nonempty(get(t, "items"))) cJSON_AddItemToObject(o, "items", gt_json_sorted(get(t, "items")));
        cJSON *f = cJSON_AddObjectToObject(o, "function");
        add_str(f, "name", get(fn, "name"));
        add_str(f, "description", get(fn, "description"));
        cJSON *p = cJSON_AddObjectToObject(f, "parameters");
        add_str(p, "type", get(params, "type"));
        if (nonempty(get(params, "$defs"))) cJSON_AddItemToObject(p, "$defs", gt_json_sorted(get(params, "$defs")));
        if (nonempty(get(params, "items"))) cJSON_AddItemToObject(p, "items", gt_json_sorted(get(params, "items")));
        const cJSON *req = get(params, "required");
        if (cJSON_IsArray(req) && req->child) cJSON_AddItemToObject(p, "required", cJSON_Duplicate(req, true));
        const cJSON *props = get(params, "properties");
        cJSON_AddItemToObject(p, "properties", cJSON_IsObject(props) ? properties(props, true, 0) : cJSON_CreateNull());
        cJSON_AddItemToArray(out, o);
    }
    cJSON_Delete(in);
    return out;
}

cJSON *gt_calls_for_template(const char *calls_json) {
    cJSON *in = calls_json ? cJSON_Parse(calls_json) : NULL;
    if (!cJSON_IsArray(in) || !in->child) { cJSON_Delete(in); return NULL; }
    cJSON *out = cJSON_CreateArray();
    for (const cJSON *c = in->child; out && c; c = c->next) {
        const cJSON *fn = get(c, "function"), *idx = get(fn, "index"), *args = get(fn, "arguments");
        cJSON *o = cJSON_CreateObject();
        add_str(o, "ID", get(c, "id"));
        cJSON *f = cJSON_AddObjectToObject(o, "Function");
        cJSON_AddNumberToObject(f, "Index", cJSON_IsNumber(idx) ? idx->valueint : 0);
        add_str(f, "Name", get(fn, "name"));
        cJSON_AddItemToObject(f, "Arguments", cJSON_IsObject(args) ? gt_json_sorted(args) : cJSON_CreateObject());
        cJSON_AddItemToArray(out, o);
    }
    cJSON_Delete(in);
    return out;
}

/* ---- Ollama's tool tag (tools/template.go parseTag) ------------------------------------ */

static bool pipe_has_tool_calls(const gt_pipe *pp) {
    for (int c = 0; pp && c < pp->n_cmds; c++)
        for (int a = 0; a < pp->cmds[c].n_args; a++) {
            const gt_arg *arg = pp->cmds[c].args[a];
            if (arg->kind != GT_ARG_FIELD) continue;
            for (int f = 0; f < arg->n_fields; f++)
                if (arg->fields[f].n == 9 && !memcmp(arg->fields[f].s, "ToolCalls", 9)) return true;
        }
    return false;
}

static const gt_node *find_tool_calls_if(const gt_list *l, int depth) {
    for (int i = 0; l && depth < GT_MAX_DEPTH && i < l->n; i++) {
        const gt_node *n = l->nodes[i], *r;
        if (n->kind != GT_N_IF && n->kind != GT_N_RANGE && n->kind != GT_N_WITH) continue;
        if (n->kind == GT_N_IF && pipe_has_tool_calls(n->pipe)) return n;
        if ((r = find_tool_calls_if(n->list, depth + 1)) || (r = find_tool_calls_if(n->else_list, depth + 1))) return r;
    }
    return NULL;
}

static bool blank(gt_str s) {
    for (size_t i = 0; i < s.n; i++)
        if (s.s[i] != ' ' && s.s[i] != '\t' && s.s[i] != '\n' && s.s[i] != '\r' && s.s[i] != '\v' && s.s[i] != '\f')
            return false;
    return true;
}

/* findTextNode: depth first; a nested block or an action ends the search at its level. */
static const gt_node *find_text(const gt_list *l, int depth) {
    for (int i = 0; l && depth < GT_MAX_DEPTH && i < l->n; i++) {
        const gt_node *n = l->nodes[i], *r;
        switch (n->kind) {
        case GT_N_TEXT:
            if (!blank(n->text)) return n;
            break;
        case GT_N_IF: case GT_N_RANGE: case GT_N_WITH:
            if ((r = find_text(n->list, depth + 1)) || (r = find_text(n->else_list, depth + 1))) return r;
            return NULL;
        case GT_N_ACTION: return NULL;
        default: break;
        }
    }
    return NULL;
}

void gotmpl_tool_tag(const gotmpl *t, char *out, size_t cap) {
    if (!cap) return;
    snprintf(out, cap, "{");
    const gt_node *ifn = t ? find_tool_calls_if(t->root, 0) : NULL;
    const gt_node *tn = ifn ? find_text(ifn->list, 0) : NULL;
    if (!tn) return;
    size_t n = 0;
    char buf[256];
    for (size_t i = 0; i < tn->text.n && tn->text.s[i] != '{' && n + 1 < sizeof buf; i++) {
        if (tn->text.s[i] == '\r' && i + 1 < tn->text.n && tn->text.s[i + 1] == '\n') continue;   /* \r\n -> \n */
        buf[n++] = tn->text.s[i];
    }
    size_t a = 0;
    while (a < n && (buf[a] == ' ' || buf[a] == '\t' || buf[a] == '\n' || buf[a] == '\r' || buf[a] == '\v' || buf[a] == '\f')) a++;
    while (n > a && (buf[n - 1] == ' ' || buf[n - 1] == '\t' || buf[n - 1] == '\n' || buf[n - 1] == '\r' ||
                     buf[n - 1] == '\v' || buf[n - 1] == '\f')) n--;
    if (n > a) snprintf(out, cap, "%.*s", (int)(n - a), buf + a);
}

/* ---- Ollama's thinking tags (thinking/template.go InferTags) -------------------------- */

typedef struct {
    char *open, *close;
    size_t cap;
} think_tags;

static bool pipe_has_field(const gt_pipe *pp, const char *name, bool first_only) {
    size_t n = strlen(name);
    for (int c = 0; pp && c < pp->n_cmds; c++)
        for (int a = 0; a < pp->cmds[c].n_args; a++) {
            const gt_arg *arg = pp->cmds[c].args[a];
            if (arg->kind == GT_ARG_PIPE && pipe_has_field(arg->pipe, name, first_only)) return true;
            if (arg->kind != GT_ARG_FIELD || !arg->n_fields) continue;
            if (arg->fields[0].n == n && !memcmp(arg->fields[0].s, name, n)) return true;
        }
    return false;
}

static void set_tag(char *out, size_t cap, gt_str s) {
    size_t a = 0, e = s.n;
    while (a < e && (s.s[a] == ' ' || s.s[a] == '\t' || s.s[a] == '\n' || s.s[a] == '\r' || s.s[a] == '\v' || s.s[a] == '\f')) a++;
    while (e > a && (s.s[e - 1] == ' ' || s.s[e - 1] == '\t' || s.s[e - 1] == '\n' || s.s[e - 1] == '\r' ||
                     s.s[e - 1] == '\v' || s.s[e - 1] == '\f')) e--;
    snprintf(out, cap, "%.*s", (int)(e - a), s.s + a);
}

/* The tags from list l (the innermost list holding a .Thinking field). */
static void take_tags(think_tags *tt, const gt_list *l) {
    if (!l || !l->n) return;
    if (l->nodes[0]->kind == GT_N_TEXT) set_tag(tt->open, tt->cap, l->nodes[0]->text);
    if (l->nodes[l->n - 1]->kind == GT_N_TEXT) set_tag(tt->close, tt->cap, l->nodes[l->n - 1]->text);
}

/* Visits in Ollama's order: a block's pipe, then its list, then its else list. in_msgs: the
 * innermost range ranges over .Messages. */
static void visit(think_tags *tt, const gt_list *l, bool in_msgs, int depth) {
    for (int i = 0; l && depth < GT_MAX_DEPTH && i < l->n; i++) {
        const gt_node *n = l->nodes[i];
        if (n->pipe && in_msgs && pipe_has_field(n->pipe, "Thinking", true)) take_tags(tt, l);
        if (n->kind == GT_N_IF || n->kind == GT_N_WITH || n->kind == GT_N_RANGE) {
            bool inner = n->kind == GT_N_RANGE ? pipe_has_field(n->pipe, "Messages", true) : in_msgs;
            visit(tt, n->list, inner, depth + 1);
            visit(tt, n->else_list, inner, depth + 1);
        }
    }
}

void gotmpl_think_tags(const gotmpl *t, char *open, char *close, size_t cap) {
    if (!cap) return;
    open[0] = close[0] = 0;
    think_tags tt = {open, close, cap};
    if (t) visit(&tt, t->root, false, 0);
}
