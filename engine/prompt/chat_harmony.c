/* chat_harmony: gpt-oss's prompt (the harmony format) as its official chat template
 * (openai/gpt-oss chat_template.jinja, the one llama.cpp's --jinja and Ollama's harmony
 * renderer follow) renders it:
 *   <|start|>system<|message|>  model identity, knowledge cutoff, "Current date: ..",
 *                               "Reasoning: low|medium|high" (the think level; medium by
 *                               default), the valid channels, and with tools the line that
 *                               sends function calls to the commentary channel;
 *   <|start|>developer<|message|> "# Instructions" (the first system message) and
 *                               "# Tools": the tools as a TypeScript-like
 *                               `namespace functions { type NAME = (_: {..}) => any; }`;
 *   user turns; assistant turns on the final channel; an assistant tool call as its
 *   thinking on the analysis channel (dropped once a later final answer exists) then
 *   "<|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>{args}<|call|>";
 *   a tool result as "<|start|>functions.NAME to=assistant<|channel|>commentary<|message|>"
 *   + the result as a JSON string; the generation prompt "<|start|>assistant".
 * Whitespace follows the template under Hugging Face's trim_blocks/lstrip_blocks, quirks
 * included (a nested object's member types start on a new line indented 16 spaces). Two
 * extensions where the template would drop data: every call of a message is rendered (the
 * template renders the first), and a tool result names its tool_name when it has one. */
#include "chat.h"

#include "bytebuf.h"
#include "chat_formats.h"
#include "chat_json.h"
#include "error.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void add(bytebuf *b, const char *s) { bytebuf_add(b, s, strlen(s)); }

bool chat_format_is_harmony(chat_format f) {
    int i = chat_builtin_find("gpt-oss");
    return i >= 0 && f == (chat_format)(CHAT_BUILTIN + i);
}

static const cJSON *item(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

static bool in_required(const cJSON *required, const char *name) {
    const cJSON *r;
    cJSON_ArrayForEach(r, required) if (cJSON_IsString(r) && !strcmp(r->valuestring, name)) return true;
    return false;
}

static bool type_is(const cJSON *spec, const char *t) {
    const cJSON *ty = item(spec, "type");
    return cJSON_IsString(ty) && !strcmp(ty->valuestring, t);
}

static bool truthy(const cJSON *v) {
    if (!v || cJSON_IsNull(v) || cJSON_IsFalse(v)) return false;
    if (cJSON_IsString(v)) return *v->valuestring;
    if (cJSON_IsArray(v) || cJSON_IsObject(v)) return v->child != NULL;
    if (cJSON_IsNumber(v)) return v->valuedouble != 0;
    return true;
}

/* A JSON value as Jinja's string concatenation prints it (strings bare). */
static void put_plain(bytebuf *b, const cJSON *v) {
    if (cJSON_IsString(v)) add(b, v->valuestring);
    else chat_put_json(b, v);
}

/* The template's render_typescript_type macro. */
static void ts_type(bytebuf *b, const cJSON *spec, int depth) {
    if (depth > 32 || !cJSON_IsObject(spec)) { add(b, "any"); return; }
    const cJSON *ty = item(spec, "type"), *nullable = item(spec, "nullable");
    if (type_is(spec, "array")) {
        const cJSON *items = item(spec, "items");
        if (truthy(items)) {
            if (type_is(items, "string")) add(b, "string[]");
            else if (type_is(items, "number") || type_is(items, "integer")) add(b, "number[]");
            else if (type_is(items, "boolean")) add(b, "boolean[]");
            else {
                bytebuf inner = {0};
                ts_type(&inner, items, depth + 1);
                const char *s = bytebuf_str(&inner);
                if (!strcmp(s, "object | object") || inner.len > 50) add(b, "any[]");
                else { add(b, s); add(b, "[]"); }
                bytebuf_free(&inner);
            }
        } else {
            add(b, "any[]");
        }
        if (truthy(nullable)) add(b, " | null");
    } else if (cJSON_IsArray(ty) && ty->child) {   /* ["object", "object"]: a union */
        bool first = true;
        const cJSON *t;
        cJSON_ArrayForEach(t, ty) {
            if (!first) add(b, " | ");
            first = false;
            put_plain(b, t);
        }
    } else if (truthy(item(spec, "oneOf"))) {
        const cJSON *one = item(spec, "oneOf"), *v;
        bool objects = false;
        cJSON_ArrayForEach(v, one) if (type_is(v, "object")) objects = true;
        if (objects && cJSON_GetArraySize(one) > 1) { add(b, "any"); return; }
        cJSON_ArrayForEach(v, one) {
            ts_type(b, v, depth + 1);
            const cJSON *d = item(v, "description"), *def = item(v, "default");
            if (truthy(d)) { add(b, "// "); put_plain(b, d); }
            if (def) { add(b, "                    // default: "); chat_put_json(b, def); }
            if (v->next) add(b, " | \n");
        }
    } else if (type_is(spec, "string")) {
        const cJSON *en = item(spec, "enum");
        if (truthy(en)) {
            add(b, "\"");
            const cJSON *e;
            cJSON_ArrayForEach(e, en) {
                put_plain(b, e);
                if (e->next) add(b, "\" | \"");
            }
            add(b, "\"");
        } else {
            add(b, "string");
            if (truthy(nullable)) add(b, " | null");
        }
    } else if (type_is(spec, "number") || type_is(spec, "integer")) {
        add(b, "number");
    } else if (type_is(spec, "boolean")) {
        add(b, "boolean");
    } else if (type_is(spec, "object")) {
        const cJSON *props = item(spec, "properties"), *req = item(spec, "required");
        if (!cJSON_IsObject(props) || !props->child) { add(b, "object"); return; }   /* names need an object */
        add(b, "{\n");
        for (const cJSON *p = props->child; p; p = p->next) {
            add(b, p->string);
            if (!in_required(req, p->string)) add(b, "?");
            add(b, ": \n                ");
            ts_type(b, p, depth + 1);
            if (p->next) add(b, ", ");
        }
        add(b, "}");
    } else {
        add(b, "any");
    }
}

/* The template's render_tool_namespace("functions", tools); -1 on a malformed tool. */
static int put_namespace(bytebuf *b, const cJSON *tools) {
    add(b, "## functions\n\nnamespace functions {\n\n");
    const cJSON *t;
    int i = 0;
    cJSON_ArrayForEach(t, tools) {
        const cJSON *fn = item(t, "function");
        if (!cJSON_IsObject(fn)) fn = t;
        const cJSON *name = item(fn, "name"), *desc = item(fn, "description"), *params = item(fn, "parameters");
        if (!cJSON_IsString(name) || !*name->valuestring) {
            anv_set_error("chat: tools[%d] has no function name", i);
            return -1;
        }
        i++;
        if (cJSON_IsString(desc)) { add(b, "// "); add(b, desc->valuestring); add(b, "\n"); }
        add(b, "type ");
        add(b, name->valuestring);
        add(b, " = ");
        const cJSON *props = cJSON_IsObject(params) ? item(params, "properties") : NULL;
        if (!cJSON_IsObject(props) || !props->child) { add(b, "() => any;\n\n"); continue; }
        const cJSON *req = item(params, "required");
        add(b, "(_: {\n");
        for (const cJSON *p = props->child; p; p = p->next) {
            const cJSON *pd = item(p, "description"), *def = item(p, "default");
            if (truthy(pd)) { add(b, "// "); put_plain(b, pd); add(b, "\n"); }
            add(b, p->string);
            if (!in_required(req, p->string)) add(b, "?");
            add(b, ": ");
            ts_type(b, p, 0);
            if (def) {
                if (truthy(item(p, "enum"))) { add(b, ", // default: "); put_plain(b, def); }
                else if (truthy(item(p, "oneOf"))) { add(b, "// default: "); put_plain(b, def); }
                else { add(b, ", // default: "); chat_put_json(b, def); }
            }
            add(b, ",\n");
        }
        add(b, "}) => any;\n\n");
    }
    add(b, "} // namespace functions");
    return 0;
}

static const char *reasoning_level(int think) {
    switch (think) {
    case CHAT_THINK_LOW: return "low";
    case CHAT_THINK_HIGH: return "high";
    default: return "medium";   /* the template's default; think on/off keeps it (the trace cannot be turned off) */
    }
}

static bool has_channel_tags(const char *s) {
    return s && (strstr(s, "<|channel|>analysis<|message|>") || strstr(s, "<|channel|>final<|message|>"));
}

/* The function of a call ({"function": {"name", "arguments"}} or the bare object). */
static const cJSON *call_fn(const cJSON *call) {
    const cJSON *fn = item(call, "function");
    return cJSON_IsObject(fn) ? fn : call;
}

char *chat_harmony_render(const chat_message *m, int n, bool add_assistant, const chat_extras *x) {
    bytebuf b = {0};
    cJSON *tools = NULL, **calls = NULL;
    char *last_call = NULL;
    const chat_extras none = {0};
    if (!x) x = &none;
    if (x->tools_json && *x->tools_json) {
        tools = cJSON_Parse(x->tools_json);
        if (!cJSON_IsArray(tools)) { anv_set_error("chat: tools must be a JSON array"); goto fail; }
        if (!tools->child) { cJSON_Delete(tools); tools = NULL; }
    }
    char date[16];
    if (x->date) {
        snprintf(date, sizeof date, "%s", x->date);
    } else {
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        strftime(date, sizeof date, "%Y-%m-%d", &tm);
    }
    add(&b, "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
            "Knowledge cutoff: 2024-06\nCurrent date: ");
    add(&b, date);
    add(&b, "\n\nReasoning: ");
    add(&b, reasoning_level(x->think));
    add(&b, "\n\n# Valid channels: analysis, commentary, final. Channel must be included for every message.");
    if (tools) add(&b, "\nCalls to these tools must go to the commentary channel: 'functions'.");
    add(&b, "<|end|>");

    int first = 0;
    const char *dev = "";
    if (n > 0 && (!strcmp(m[0].role, "system") || !strcmp(m[0].role, "developer"))) {
        dev = m[0].content;
        first = 1;
    }
    if (*dev || tools) {
        add(&b, "<|start|>developer<|message|>");
        if (*dev) { add(&b, "# Instructions\n\n"); add(&b, dev); add(&b, "\n\n"); }
        if (tools) {
            add(&b, "# Tools\n\n");
            if (put_namespace(&b, tools)) goto fail;
        }
        add(&b, "<|end|>");
    }

    calls = calloc((size_t)(n > 0 ? n : 1), sizeof *calls);
    if (!calls) goto oom;
    for (int i = first; i < n; i++)
        if (m[i].tool_calls && !strcmp(m[i].role, "assistant")) {
            calls[i] = cJSON_Parse(m[i].tool_calls);
            if (!cJSON_IsArray(calls[i])) {
                anv_set_error("chat: message %d: tool_calls must be a JSON array", i);
                goto fail;
            }
            if (!calls[i]->child) { cJSON_Delete(calls[i]); calls[i] = NULL; }
        }
    for (int i = first; i < n; i++) {
        const chat_message *msg = &m[i];
        if (!strcmp(msg->role, "assistant")) {
            if (has_channel_tags(msg->content) || has_channel_tags(msg->thinking)) {
                anv_set_error("chat: message %d holds <|channel|> tags: pass the analysis as thinking and the final "
                              "answer as content", i);
                goto fail;
            }
            const char *thinking = msg->thinking ? msg->thinking : "";
            if (calls[i]) {
                bool later_final = false;
                for (int k = i + 1; k < n; k++)
                    if (!strcmp(m[k].role, "assistant") && !calls[k]) later_final = true;
                if (*msg->content && *thinking) {
                    anv_set_error("chat: message %d: an assistant tool call with both content and thinking (gpt-oss "
                                  "takes one analysis message)", i);
                    goto fail;
                }
                const char *analysis = *msg->content ? msg->content : thinking;
                if (*analysis && !later_final) {
                    add(&b, "<|start|>assistant<|channel|>analysis<|message|>");
                    add(&b, analysis);
                    add(&b, "<|end|>");
                }
                for (const cJSON *c = calls[i]->child; c; c = c->next) {
                    const cJSON *fn = call_fn(c), *name = item(fn, "name"), *args = item(fn, "arguments");
                    if (!cJSON_IsString(name) || !*name->valuestring) {
                        anv_set_error("chat: message %d: a tool call without a function name", i);
                        goto fail;
                    }
                    add(&b, "<|start|>assistant to=functions.");
                    add(&b, name->valuestring);
                    add(&b, "<|channel|>commentary json<|message|>");
                    if (args) chat_put_json(&b, args);
                    else add(&b, "{}");
                    add(&b, "<|call|>");
                    free(last_call);
                    if (!(last_call = strdup(name->valuestring))) goto oom;
                }
            } else if (i == n - 1 && !add_assistant) {
                if (msg->thinking) {
                    add(&b, "<|start|>assistant<|channel|>analysis<|message|>");
                    add(&b, thinking);
                    add(&b, "<|end|>");
                }
                add(&b, "<|start|>assistant<|channel|>final<|message|>");
                add(&b, msg->content);
                add(&b, "<|return|>");
            } else {
                add(&b, "<|start|>assistant<|channel|>final<|message|>");
                add(&b, msg->content);
                add(&b, "<|end|>");
                free(last_call);
                last_call = NULL;
            }
        } else if (!strcmp(msg->role, "tool")) {
            const char *name = msg->tool_name && *msg->tool_name ? msg->tool_name : last_call;
            if (!last_call || !name) {
                anv_set_error("chat: message %d is a tool result without an earlier assistant tool call", i);
                goto fail;
            }
            add(&b, "<|start|>functions.");
            add(&b, name);
            add(&b, " to=assistant<|channel|>commentary<|message|>");
            chat_put_json_string(&b, msg->content);
            add(&b, "<|end|>");
        } else if (!strcmp(msg->role, "user")) {
            add(&b, "<|start|>user<|message|>");
            add(&b, msg->content);
            add(&b, "<|end|>");
        }   /* later system/developer messages: the template has no place for them */
    }
    if (add_assistant) add(&b, "<|start|>assistant");
    if (b.oom) goto oom;
    for (int i = 0; i < n; i++) cJSON_Delete(calls[i]);
    free(calls);
    free(last_call);
    cJSON_Delete(tools);
    return b.data ? b.data : strdup("");
oom:
    anv_set_error("chat: out of memory");
fail:
    if (calls)
        for (int i = 0; i < n; i++) cJSON_Delete(calls[i]);
    free(calls);
    free(last_call);
    cJSON_Delete(tools);
    bytebuf_free(&b);
    return NULL;
}
