/* chat_ministral3: the prompt of Ministral 3 (mistral3 GGUFs: Ministral-3-3B/8B/14B Instruct
 * and Reasoning 2512) and Devstral Small rendered as their Jinja templates do (the copies
 * llama.cpp ships, models/templates/mistralai-Ministral-3-14B-Reasoning-2512.jinja and
 * unsloth-mistral-Devstral-Small-2507.jinja), with tools, tool calls and results:
 *   [SYSTEM_PROMPT]system text[/SYSTEM_PROMPT]   the first message if it is a system one,
 *                                                 else the template's default_system_message
 *                                                 (read from the template text; none if absent)
 *   [AVAILABLE_TOOLS]tools|tojson[/AVAILABLE_TOOLS]   once, after the system prompt
 *   [INST]user[/INST]
 *   assistant text, then per call [TOOL_CALLS]name[ARGS]arguments|tojson, then </s>
 *   [TOOL_RESULTS]result[/TOOL_RESULTS]
 * No generation prompt (the reply follows [/INST] or [/TOOL_RESULTS]); an assistant turn's
 * separate thinking is not replayed (the template prints only thinking blocks inside the
 * content, which Ollama's messages do not carry). Ministral 3's template (the one that says
 * roles "must alternate", also the default without a template) refuses, as one-line errors,
 * roles that do not alternate user/assistant (tool results and calls aside), an empty
 * assistant turn and a role other than user/assistant/tool after the first message;
 * Devstral's refuses nothing of that, prints a later system message as another
 * [SYSTEM_PROMPT] block and the system block even when empty.
 * The reply: [THINK]..[/THINK] thinking, then text or [TOOL_CALLS]name[ARGS]{..} calls
 * (reply_parse.c, as Ollama's ministral parser reads them). */
#include "chat.h"

#include "bytebuf.h"
#include "chat_json.h"
#include "error.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static void add(bytebuf *b, const char *s) { bytebuf_add(b, s, strlen(s)); }

/* The template's `set default_system_message = '...'` literal, unescaped (\n \t \\ \' \");
 * NULL when the template has none. */
static char *default_system_message(const char *t) {
    const char *k = t ? strstr(t, "default_system_message = ") : NULL;
    if (!k) return NULL;
    const char *s = k + strlen("default_system_message = ");
    const char q = *s;
    if (q != '\'' && q != '"') return NULL;
    bytebuf b = {0};
    for (s++; *s && *s != q; s++) {
        char c = *s;
        if (c == '\\' && s[1]) {
            s++;
            c = *s == 'n' ? '\n' : *s == 't' ? '\t' : *s == 'r' ? '\r' : *s;
        }
        bytebuf_add(&b, &c, 1);
    }
    if (*s != q || b.oom) { bytebuf_free(&b); return NULL; }
    if (!b.data) return calloc(1, 1);   /* '' */
    return b.data;
}

bool chat_ministral3_thinks(const char *template_text) {
    char *def = default_system_message(template_text);
    bool thinks = def && strstr(def, "[THINK]") && strstr(def, "[/THINK]");
    free(def);
    return thinks;
}

static const cJSON *call_function(const cJSON *call) {
    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
    return cJSON_IsObject(fn) ? fn : call;
}

/* [TOOL_CALLS]name[ARGS]arguments for each call of a JSON array text (arguments as text kept,
 * '' as {} in Ministral 3's template); -1 + error. */
static int add_calls(bytebuf *b, const char *calls_json, int i, bool empty_as_object) {
    cJSON *calls = cJSON_Parse(calls_json);
    if (!cJSON_IsArray(calls)) {
        cJSON_Delete(calls);
        anv_set_error("chat: message %d: tool_calls must be a JSON array", i);
        return -1;
    }
    for (const cJSON *c = calls->child; c; c = c->next) {
        const cJSON *fn = call_function(c);
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
        if (!cJSON_IsString(name)) {
            cJSON_Delete(calls);
            anv_set_error("chat: message %d: a tool call without a function name", i);
            return -1;
        }
        add(b, "[TOOL_CALLS]");
        add(b, name->valuestring);
        add(b, "[ARGS]");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
        if (cJSON_IsString(args)) add(b, *args->valuestring || !empty_as_object ? args->valuestring : "{}");
        else if (args) chat_put_json(b, args);
        else add(b, "{}");
    }
    cJSON_Delete(calls);
    return 0;
}

static bool has_calls(const chat_message *m) {
    if (!m->tool_calls || strcmp(m->role, "assistant")) return false;
    cJSON *c = cJSON_Parse(m->tool_calls);
    bool any = cJSON_IsArray(c) && c->child;
    cJSON_Delete(c);
    return any;
}

char *chat_ministral3_render(const chat_message *m, int n, const chat_extras *x) {
    for (int i = 0; i < n; i++)
        if (!m[i].role || !m[i].content) {
            anv_set_error("chat: message %d has no %s", i, m[i].role ? "content" : "role");
            return NULL;
        }
    const char *tmpl = x ? x->template_text : NULL;
    const bool strict = !tmpl || strstr(tmpl, "roles must alternate");   /* Ministral 3, not Devstral */
    bytebuf b = {0};
    int first = 0;
    if (n > 0 && !strcmp(m[0].role, "system")) {
        add(&b, "[SYSTEM_PROMPT]");
        add(&b, m[0].content);
        add(&b, "[/SYSTEM_PROMPT]");
        first = 1;
    } else {
        char *def = default_system_message(tmpl);
        if (def && (*def || !strict)) {
            add(&b, "[SYSTEM_PROMPT]");
            add(&b, def);
            add(&b, "[/SYSTEM_PROMPT]");
        }
        free(def);
    }
    if (x && x->tools_json && *x->tools_json) {
        cJSON *tools = cJSON_Parse(x->tools_json);
        if (!cJSON_IsArray(tools)) {
            cJSON_Delete(tools);
            bytebuf_free(&b);
            anv_set_error("chat: tools must be a JSON array");
            return NULL;
        }
        if (tools->child) {
            add(&b, "[AVAILABLE_TOOLS]");
            chat_put_json(&b, tools);
            add(&b, "[/AVAILABLE_TOOLS]");
        }
        cJSON_Delete(tools);
    }
    /* user and plain assistant turns alternate, starting with a user one */
    int idx = 0;
    for (int i = first; i < n && strict; i++) {
        bool user = !strcmp(m[i].role, "user");
        if (!user && (strcmp(m[i].role, "assistant") || has_calls(&m[i]))) continue;
        if (user != (idx % 2 == 0)) {
            bytebuf_free(&b);
            anv_set_error("chat: after the optional system message, Ministral's roles must alternate user and "
                          "assistant (tool calls and results aside)");
            return NULL;
        }
        idx++;
    }
    for (int i = first; i < n; i++) {
        const chat_message *msg = &m[i];
        if (!strcmp(msg->role, "user")) {
            add(&b, "[INST]");
            add(&b, msg->content);
            add(&b, "[/INST]");
        } else if (!strcmp(msg->role, "assistant")) {
            bool calls = has_calls(msg);
            if (strict && !*msg->content && !calls) {
                bytebuf_free(&b);
                anv_set_error("chat: message %d: an assistant turn with neither content nor tool calls", i);
                return NULL;
            }
            add(&b, msg->content);
            if (calls && add_calls(&b, msg->tool_calls, i, strict) != 0) { bytebuf_free(&b); return NULL; }
            add(&b, "</s>");
        } else if (!strcmp(msg->role, "tool")) {
            add(&b, "[TOOL_RESULTS]");
            add(&b, msg->content);
            add(&b, "[/TOOL_RESULTS]");
        } else if (!strict && !strcmp(msg->role, "system")) {
            add(&b, "[SYSTEM_PROMPT]");
            add(&b, msg->content);
            add(&b, "[/SYSTEM_PROMPT]");
        } else {
            bytebuf_free(&b);
            anv_set_error("chat: Ministral has only user, assistant and tool roles after the first message, got '%s'",
                          msg->role);
            return NULL;
        }
    }
    if (b.oom) { bytebuf_free(&b); anv_set_error("chat: out of memory"); return NULL; }
    if (!b.data) return calloc(1, 1);
    return b.data;
}
