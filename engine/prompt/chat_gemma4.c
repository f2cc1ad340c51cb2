/* chat_gemma4: Gemma 4's prompt (gemma4 GGUFs) rendered as its Jinja templates do, the copies
 * llama.cpp ships in models/templates/: google-gemma-4-31B-it.jinja (the current one, which
 * takes OpenAI-style tool results) and google-gemma-4-31B-it-interleaved.jinja (the older
 * one, given the tool results the way llama.cpp's convert_tool_responses_gemma4 folds them
 * into the assistant turn). Byte-equal to jinja2 on tests/prompt/jinja_think_goldens.json.
 *   <|turn>system\n[<|think|>\n]system text|trim[<|tool>declaration:NAME{..}<tool|>..]<turn|>\n
 *       (only with a system message, tools or thinking on)
 *   <|turn>user\ncontent|trim<turn|>\n
 *   <|turn>model\n[<|channel>thought\nthinking\n<channel|>]<|tool_call>call:NAME{k:v,..}<tool_call|>
 *       <|tool_response>response:NAME{value:<|"|>result<|"|>}<tool_response|>content<turn|>\n
 *   generation: <|turn>model\n, then <|channel>thought\n<channel|> unless thinking is on.
 * Values are written by the templates' format_argument: strings between <|"|>, keys sorted
 * case-insensitively (Jinja's dictsort), true/false, None for null, numbers as Python prints
 * them. Tool declarations follow format_function_declaration / format_parameters, quirks
 * included (properties named like schema keywords are skipped; a list of types prints as
 * Python's str of the list, upper-cased). The reply format is reply_gemma4.c's. */
#include "chat.h"

#include "bytebuf.h"
#include "chat_json.h"
#include "error.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define Q "<|\"|>"

static void add(bytebuf *b, const char *s) { bytebuf_add(b, s, strlen(s)); }

static void add_trimmed(bytebuf *b, const char *s) {
    size_t i = 0, n = strlen(s);
    while (i < n && isspace((unsigned char)s[i])) i++;
    while (n > i && isspace((unsigned char)s[n - 1])) n--;
    bytebuf_add(b, s + i, n - i);
}

static void add_upper(bytebuf *b, const char *s) {
    for (; *s; s++) {
        char c = (char)toupper((unsigned char)*s);
        bytebuf_add(b, &c, 1);
    }
}

/* The object's members in Jinja's dictsort order (case-insensitive keys, stable), malloc'd
 * (NULL when there are none, or out of memory: b->oom). */
static const cJSON **sorted_members(bytebuf *b, const cJSON *o, int *n_out) {
    int n = 0;
    for (const cJSON *c = o->child; c; c = c->next) n++;
    *n_out = 0;
    const cJSON **out = n ? malloc((size_t)n * sizeof *out) : NULL;
    if (!out) { if (n) b->oom = true; return NULL; }
    int k = 0;
    for (const cJSON *c = o->child; c; c = c->next) {
        int i = k++;
        while (i > 0 && strcasecmp(out[i - 1]->string, c->string) > 0) { out[i] = out[i - 1]; i--; }
        out[i] = c;
    }
    *n_out = n;
    return out;
}

/* format_argument(argument, escape_keys). */
static void put_argument(bytebuf *b, const cJSON *v, bool escape_keys) {
    if (cJSON_IsString(v)) {
        add(b, Q);
        add(b, v->valuestring);
        add(b, Q);
    } else if (cJSON_IsBool(v)) {
        add(b, cJSON_IsTrue(v) ? "true" : "false");
    } else if (cJSON_IsObject(v)) {
        int n;
        const cJSON **keys = sorted_members(b, v, &n);
        add(b, "{");
        for (int i = 0; i < n; i++) {
            if (i) add(b, ",");
            if (escape_keys) add(b, Q);
            add(b, keys[i]->string);
            if (escape_keys) add(b, Q);
            add(b, ":");
            put_argument(b, keys[i], escape_keys);
        }
        add(b, "}");
        free(keys);
    } else if (cJSON_IsArray(v)) {
        add(b, "[");
        for (const cJSON *c = v->child; c; c = c->next) {
            put_argument(b, c, escape_keys);
            if (c->next) add(b, ",");
        }
        add(b, "]");
    } else if (cJSON_IsNumber(v)) {
        chat_put_py_number(b, v->valuedouble);
    } else {
        add(b, "None");
    }
}

static const cJSON *get(const cJSON *o, const char *k) { return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL; }

/* Jinja truthiness of a JSON value (absent: false). */
static bool truthy(const cJSON *v) {
    if (!v || cJSON_IsNull(v) || cJSON_IsFalse(v)) return false;
    if (cJSON_IsString(v)) return v->valuestring[0] != 0;
    if (cJSON_IsNumber(v)) return v->valuedouble != 0;
    if (cJSON_IsArray(v) || cJSON_IsObject(v)) return v->child != NULL;
    return true;
}

/* value['type'] | upper: a string upper-cased, a list as Python's str(list) upper-cased,
 * absent as "". */
static void put_type_upper(bytebuf *b, const cJSON *t) {
    if (cJSON_IsString(t)) {
        add_upper(b, t->valuestring);
    } else if (cJSON_IsArray(t)) {
        add(b, "[");
        for (const cJSON *c = t->child; c; c = c->next) {
            if (cJSON_IsString(c)) { add(b, "'"); add_upper(b, c->valuestring); add(b, "'"); }
            else if (cJSON_IsNumber(c)) chat_put_py_number(b, c->valuedouble);
            if (c->next) add(b, ", ");
        }
        add(b, "]");
    } else if (cJSON_IsNumber(t)) {
        chat_put_py_number(b, t->valuedouble);
    }
}

static bool type_is(const cJSON *v, const char *upper) {
    const cJSON *t = get(v, "type");
    return cJSON_IsString(t) && !strcasecmp(t->valuestring, upper);
}

static void put_string_list(bytebuf *b, const cJSON *list) {
    add(b, "[");
    for (const cJSON *c = cJSON_IsArray(list) ? list->child : NULL; c; c = c->next) {
        add(b, Q);
        if (cJSON_IsString(c)) add(b, c->valuestring);
        else put_argument(b, c, true);
        add(b, Q);
        if (c->next) add(b, ",");
    }
    add(b, "]");
}

static bool is_standard_key(const char *k) {
    static const char *const std[] = {"description", "type", "properties", "required", "nullable"};
    for (size_t i = 0; i < sizeof std / sizeof std[0]; i++)
        if (!strcmp(k, std[i])) return true;
    return false;
}

static void put_parameters(bytebuf *b, const cJSON *props, bool interleaved);

/* The comma the templates write between members of a property ({%- if add_comma %},..). */
static void comma(bytebuf *b, bool *add_comma) {
    if (*add_comma) add(b, ",");
    *add_comma = true;
}

/* items:{..} of an array property (dictsort of the items schema, nulls skipped). */
static void put_items(bytebuf *b, const cJSON *items, bool interleaved) {
    int n;
    const cJSON **keys = sorted_members(b, items, &n);
    add(b, "items:{");
    bool first = true;
    for (int i = 0; i < n; i++) {
        const cJSON *iv = keys[i];
        if (cJSON_IsNull(iv)) continue;
        if (!first) add(b, ",");
        first = false;
        const char *k = iv->string;
        if (!strcmp(k, "properties")) {
            add(b, "properties:{");
            if (cJSON_IsObject(iv)) put_parameters(b, iv, interleaved);
            add(b, "}");
        } else if (!strcmp(k, "required")) {
            add(b, "required:");
            put_string_list(b, iv);
        } else if (!strcmp(k, "type")) {
            add(b, "type:");
            if (cJSON_IsString(iv)) {
                add(b, Q);
                add_upper(b, iv->valuestring);
                add(b, Q);
            } else {
                add(b, "[");
                for (const cJSON *c = cJSON_IsArray(iv) ? iv->child : NULL; c; c = c->next) {
                    add(b, Q);
                    if (cJSON_IsString(c)) add_upper(b, c->valuestring);
                    add(b, Q);
                    if (c->next) add(b, ",");
                }
                add(b, "]");
            }
        } else {
            add(b, k);
            add(b, ":");
            put_argument(b, iv, true);
        }
    }
    add(b, "}");
    free(keys);
}

/* format_parameters(properties): NAME:{description,enum|items|properties,nullable,required,type}. */
static void put_parameters(bytebuf *b, const cJSON *props, bool interleaved) {
    int n;
    const cJSON **keys = sorted_members(b, props, &n);
    bool found_first = false;
    for (int i = 0; i < n; i++) {
        const cJSON *v = keys[i];
        if (is_standard_key(v->string)) continue;
        if (found_first) add(b, ",");
        found_first = true;
        add(b, v->string);
        add(b, ":{");
        bool add_comma = false;
        const cJSON *desc = get(v, "description");
        if (truthy(desc)) {
            add(b, "description:" Q);
            if (cJSON_IsString(desc)) add(b, desc->valuestring);
            else put_argument(b, desc, true);
            add(b, Q);
            add_comma = true;
        }
        if (interleaved && truthy(get(v, "nullable"))) { comma(b, &add_comma); add(b, "nullable:true"); }
        const cJSON *items = get(v, "items");
        if (type_is(v, "STRING")) {
            if (truthy(get(v, "enum"))) {
                comma(b, &add_comma);
                add(b, "enum:");
                put_argument(b, get(v, "enum"), true);
            }
        } else if (type_is(v, "ARRAY")) {
            if (cJSON_IsObject(items) && items->child) {
                if (interleaved) add(b, ",");
                else comma(b, &add_comma);
                put_items(b, items, interleaved);
            }
        } else if (interleaved && type_is(v, "OBJECT")) {
            const cJSON *p = get(v, "properties");
            add(b, ",properties:{");
            put_parameters(b, cJSON_IsObject(p) ? p : v, interleaved);
            add(b, "}");
            if (truthy(get(v, "required"))) {
                add(b, ",required:");
                put_string_list(b, get(v, "required"));
            }
        }
        if (!interleaved) {
            if (truthy(get(v, "nullable"))) { comma(b, &add_comma); add(b, "nullable:true"); }
            if (type_is(v, "OBJECT")) {
                const cJSON *p = get(v, "properties");
                comma(b, &add_comma);
                add(b, "properties:{");
                if (cJSON_IsObject(p) || cJSON_IsObject(v)) put_parameters(b, cJSON_IsObject(p) ? p : v, interleaved);
                add(b, "}");
                if (truthy(get(v, "required"))) {
                    comma(b, &add_comma);
                    add(b, "required:");
                    put_string_list(b, get(v, "required"));
                }
            }
        }
        comma(b, &add_comma);
        add(b, "type:" Q);
        put_type_upper(b, get(v, "type"));
        add(b, Q "}");
    }
    free(keys);
}

/* <|tool>declaration:NAME{description:..,parameters:{..}}<tool|> (format_function_declaration). */
static void put_declaration(bytebuf *b, const cJSON *tool, bool interleaved) {
    const cJSON *fn = get(tool, "function");
    const cJSON *name = get(fn, "name"), *desc = get(fn, "description"), *params = get(fn, "parameters");
    add(b, "<|tool>declaration:");
    if (cJSON_IsString(name)) add(b, name->valuestring);
    add(b, "{description:" Q);
    if (cJSON_IsString(desc)) add(b, desc->valuestring);
    add(b, Q);
    if (truthy(params)) {
        add(b, ",parameters:{");
        const cJSON *props = get(params, "properties");
        if (truthy(props)) {
            add(b, "properties:{");
            if (cJSON_IsObject(props)) put_parameters(b, props, interleaved);
            add(b, "},");
        }
        if (truthy(get(params, "required"))) {
            add(b, "required:");
            put_string_list(b, get(params, "required"));
            add(b, ",");
        }
        const cJSON *type = get(params, "type");
        if (truthy(type)) {
            add(b, "type:" Q);
            put_type_upper(b, type);
            add(b, Q "}");
        }
    }
    const cJSON *resp = get(fn, "response");
    if (resp) {
        add(b, ",response:{");
        const cJSON *rd = get(resp, "description");
        if (truthy(rd)) {
            add(b, "description:" Q);
            if (cJSON_IsString(rd)) add(b, rd->valuestring);
            add(b, Q ",");
        }
        if (type_is(resp, "OBJECT")) add(b, "type:" Q "OBJECT" Q "}");
    }
    add(b, "}<tool|>");
}

static const cJSON *call_name(const cJSON *c) {
    const cJSON *fn = get(c, "function");
    return get(fn ? fn : c, "name");
}

/* <|tool_call>call:NAME{k:v,..}<tool_call|> for each call (names checked by the caller). */
static void put_calls(bytebuf *b, const cJSON *calls) {
    for (const cJSON *c = calls->child; c; c = c->next) {
        const cJSON *fn = get(c, "function");
        const cJSON *name = call_name(c), *args = get(fn ? fn : c, "arguments");
        add(b, "<|tool_call>call:");
        add(b, cJSON_IsString(name) ? name->valuestring : "");
        add(b, "{");
        if (cJSON_IsObject(args)) {
            int n;
            const cJSON **keys = sorted_members(b, args, &n);
            for (int k = 0; k < n; k++) {
                if (k) add(b, ",");
                add(b, keys[k]->string);
                add(b, ":");
                put_argument(b, keys[k], false);
            }
            free(keys);
        } else if (cJSON_IsString(args)) {
            add(b, args->valuestring);
        }
        add(b, "}<tool_call|>");
    }
}

/* strip_thinking: each piece between <channel|> markers cut at its <|channel>, joined, trimmed. */
static void put_stripped(bytebuf *b, const char *text) {
    bytebuf r = {0};
    bytebuf_add(&r, "", 0);
    for (const char *s = text;;) {
        const char *close = strstr(s, "<channel|>");
        const char *end = close ? close : s + strlen(s);
        const char *open = strstr(s, "<|channel>");
        bytebuf_add(&r, s, (size_t)((open && open < end ? open : end) - s));
        if (!close) break;
        s = close + strlen("<channel|>");
    }
    add_trimmed(b, r.data ? r.data : "");
    if (r.oom) b->oom = true;
    bytebuf_free(&r);
}

/* <|tool_response>response:NAME{..}<tool_response|>: a mapping as sorted key:value pairs, any
 * other value as {value:..}. */
static void put_response(bytebuf *b, const char *name, const cJSON *resp) {
    add(b, "<|tool_response>response:");
    add(b, name);
    if (cJSON_IsObject(resp)) {
        int n;
        const cJSON **keys = sorted_members(b, resp, &n);
        add(b, "{");
        for (int k = 0; k < n; k++) {
            add(b, keys[k]->string);
            add(b, ":");
            put_argument(b, keys[k], false);
            if (k + 1 < n) add(b, ",");
        }
        add(b, "}");
        free(keys);
    } else {
        add(b, "{value:");
        put_argument(b, resp, false);
        add(b, "}");
    }
    add(b, "<tool_response|>");
}

typedef struct {
    const chat_message *m;
    cJSON *calls;        /* parsed tool_calls (NULL: none) */
    int first_id;        /* the number (1-based) of its first call in the conversation */
} g4_msg;

static bool is_role(const chat_message *m, const char *r) { return !strcmp(m->role, r); }

/* The function a tool result answers: the call of `owner` numbered like the result (the
 * k-th result of the conversation answers call k), else its tool_name, else "unknown". */
static const char *result_name(const g4_msg *owner, int result_no, const chat_message *tool) {
    int k = 0;
    for (const cJSON *c = owner->calls->child; c; c = c->next, k++) {
        if (owner->first_id + k != result_no) continue;
        const cJSON *name = get(get(c, "function") ? get(c, "function") : c, "name");
        if (cJSON_IsString(name)) return name->valuestring;
    }
    return tool->tool_name && *tool->tool_name ? tool->tool_name : "unknown";
}

/* The current template: tool results follow the assistant turn with the calls. */
static const char *render_current(bytebuf *b, const g4_msg *g, int n, int last_user, const int *result_no) {
    const char *prev_type = "";
    const char *prev_nt = NULL;   /* the role of the last non-tool message */
    for (int i = 0; i < n; i++) {
        const chat_message *m = g[i].m;
        if (is_role(m, "tool")) continue;
        prev_type = "";
        const bool model = is_role(m, "assistant");
        if (!(model && prev_nt && !strcmp(prev_nt, "assistant"))) {
            add(b, "<|turn>");
            add(b, model ? "model" : m->role);
            add(b, "\n");
        }
        const bool calls = g[i].calls && g[i].calls->child;
        if (m->thinking && *m->thinking && i > last_user && calls) {
            add(b, "<|channel>thought\n");
            add(b, m->thinking);
            add(b, "\n<channel|>");
        }
        if (calls) {
            put_calls(b, g[i].calls);
            prev_type = "tool_call";
        }
        bool responded = false;
        if (calls) {
            for (int k = i + 1; k < n && is_role(g[k].m, "tool"); k++) {
                cJSON *s = cJSON_CreateString(g[k].m->content);
                put_response(b, result_name(&g[i], result_no[k], g[k].m), s);
                cJSON_Delete(s);
                responded = true;
                prev_type = "tool_response";
            }
        }
        if (model) put_stripped(b, m->content);
        else add_trimmed(b, m->content);
        if (!strcmp(prev_type, "tool_call") && !responded) add(b, "<|tool_response>");
        else if (!(responded && !*m->content)) add(b, "<turn|>\n");
        prev_nt = m->role;
    }
    return prev_type;
}

/* The older (interleaved) template, after llama.cpp's fold: an assistant turn with calls takes
 * the tool results after it (each parsed as JSON when it is JSON) and the content of the next
 * assistant turn when that one has no calls. Returns the last message type for the
 * generation prompt ("tool_response" or ""). */
static const char *render_interleaved(bytebuf *b, const g4_msg *g, int n) {
    /* the last user message's index among the folded messages */
    int last_user = -1, folded = 0;
    for (int i = 0; i < n; folded++) {
        if (is_role(g[i].m, "user")) last_user = folded;
        if (is_role(g[i].m, "assistant") && g[i].calls && g[i].calls->child) {
            i++;
            while (i < n && is_role(g[i].m, "tool")) i++;
            if (i < n && is_role(g[i].m, "assistant") && !(g[i].calls && g[i].calls->child) && *g[i].m->content) i++;
        } else {
            i++;
        }
    }
    const char *prev_type = "";
    folded = 0;
    for (int i = 0; i < n; folded++) {
        const chat_message *m = g[i].m;
        const bool model = is_role(m, "assistant");
        const bool calls = model && g[i].calls && g[i].calls->child;
        if (!(!strcmp(prev_type, "tool_response") && calls)) {
            add(b, "<|turn>");
            add(b, model ? "model" : m->role);
            add(b, "\n");
        }
        prev_type = "";
        if (!calls) {
            if (model) put_stripped(b, m->content);
            else add_trimmed(b, m->content);
            add(b, "<turn|>\n");
            i++;
            continue;
        }
        if (m->thinking && *m->thinking && folded > last_user) {
            add(b, "<|channel>thought\n");
            add(b, m->thinking);
            add(b, "<channel|>");
        }
        put_calls(b, g[i].calls);
        prev_type = "tool_call";
        int k = i + 1, n_resp = 0;
        for (; k < n && is_role(g[k].m, "tool"); k++, n_resp++) {
            const cJSON *c = cJSON_GetArrayItem(g[i].calls, n_resp);
            const cJSON *name = get(get(c, "function") ? get(c, "function") : c, "name");
            cJSON *resp = cJSON_ParseWithOpts(g[k].m->content, NULL, true);   /* llama.cpp: JSON when it is JSON */
            if (!resp) resp = cJSON_CreateString(g[k].m->content);
            /* a result beyond the calls: llama.cpp names it by its tool_call_id, Ollama's
             * messages have none; its tool_name stands in */
            put_response(b, cJSON_IsString(name) && *name->valuestring ? name->valuestring
                            : g[k].m->tool_name ? g[k].m->tool_name : "", resp);
            cJSON_Delete(resp);
        }
        if (n_resp) prev_type = "tool_response";
        const char *content = NULL;
        if (k < n && is_role(g[k].m, "assistant") && !(g[k].calls && g[k].calls->child) && *g[k].m->content)
            content = g[k++].m->content;
        if (content) put_stripped(b, content);
        if (!(n_resp && !content)) add(b, "<turn|>\n");
        i = k;
    }
    return prev_type;
}

char *chat_gemma4_render(const chat_message *msgs, int n, bool add_assistant, const chat_extras *x) {
    for (int i = 0; i < n; i++)
        if (!msgs[i].role || !msgs[i].content) {
            anv_set_error("chat: message %d has no %s", i, msgs[i].role ? "content" : "role");
            return NULL;
        }
    const char *tmpl = x ? x->template_text : NULL;
    /* the older template lacks the current one's OpenAI-style tool result scan */
    const bool interleaved = tmpl && !strstr(tmpl, "OpenAI Chat Completions");
    const bool think = x && CHAT_THINK_IS_ON(x->think);
    cJSON *tools = NULL;
    if (x && x->tools_json && *x->tools_json) {
        tools = cJSON_Parse(x->tools_json);
        if (!cJSON_IsArray(tools)) {
            cJSON_Delete(tools);
            anv_set_error("chat: tools must be a JSON array");
            return NULL;
        }
        if (!tools->child) { cJSON_Delete(tools); tools = NULL; }
    }
    const bool has_system = n > 0 && (is_role(&msgs[0], "system") || is_role(&msgs[0], "developer"));
    g4_msg *g = calloc((size_t)(n ? n : 1), sizeof *g);
    int *result_no = calloc((size_t)(n ? n : 1), sizeof *result_no);
    bytebuf b = {0};
    add(&b, "");
    char *out = NULL;
    if (!g || !result_no) goto oom;
    const int first = has_system ? 1 : 0;
    int nl = 0, calls_seen = 0, results_seen = 0, last_user = -1;
    for (int i = first; i < n; i++, nl++) {
        g[nl].m = &msgs[i];
        if (msgs[i].tool_calls && is_role(&msgs[i], "assistant")) {
            g[nl].calls = cJSON_Parse(msgs[i].tool_calls);
            if (!cJSON_IsArray(g[nl].calls)) {
                anv_set_error("chat: message %d: tool_calls must be a JSON array", i);
                goto fail;
            }
            g[nl].first_id = calls_seen + 1;
            calls_seen += cJSON_GetArraySize(g[nl].calls);
            for (const cJSON *c = g[nl].calls->child; c; c = c->next)
                if (!cJSON_IsString(call_name(c))) {
                    anv_set_error("chat: message %d: a tool call without a function name", i);
                    goto fail;
                }
        }
        if (is_role(&msgs[i], "tool")) result_no[nl] = ++results_seen;
        if (is_role(&msgs[i], "user")) last_user = nl;
    }
    if (think || tools || has_system) {
        add(&b, "<|turn>system\n");
        if (think) add(&b, "<|think|>\n");
        if (has_system) add_trimmed(&b, msgs[0].content);
        for (const cJSON *t = tools ? tools->child : NULL; t; t = t->next) {
            bytebuf d = {0};
            put_declaration(&d, t, interleaved);
            add_trimmed(&b, d.data ? d.data : "");
            if (d.oom) b.oom = true;
            bytebuf_free(&d);
        }
        add(&b, "<turn|>\n");
    }
    const char *prev_type = "";
    if (interleaved) {
        prev_type = render_interleaved(&b, g, nl);
    } else {
        prev_type = render_current(&b, g, nl, last_user, result_no);
    }
    if (add_assistant) {
        if (interleaved) {
            if (strcmp(prev_type, "tool_response")) add(&b, "<|turn>model\n");
            if (!think) add(&b, "<|channel>thought\n<channel|>");
        } else if (strcmp(prev_type, "tool_response") && strcmp(prev_type, "tool_call")) {
            add(&b, "<|turn>model\n");
            if (!think) add(&b, "<|channel>thought\n<channel|>");
        }
    }
    if (b.oom) goto oom;
    out = b.data;
    b.data = NULL;
    goto done;
oom:
    anv_set_error("chat: out of memory");
fail:
    bytebuf_free(&b);
done:
    for (int i = 0; g && i < n; i++) cJSON_Delete(g[i].calls);
    free(g);
    free(result_no);
    cJSON_Delete(tools);
    return out;
}
