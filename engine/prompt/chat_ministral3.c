/* chat_ministral3: the prompts of the Mistral 3 family (mistral3 GGUFs: Ministral-3-3B/8B/14B
 * Instruct and Reasoning 2512, Devstral Small, Mistral Small 3.2) rendered as their Jinja
 * templates do (the copies llama.cpp ships in models/templates/:
 * mistralai-Ministral-3-14B-Reasoning-2512, unsloth-mistral-Devstral-Small-2507,
 * Mistral-Small-3.2-24B-Instruct-2506), with tools, tool calls and results:
 *   [SYSTEM_PROMPT]system text[/SYSTEM_PROMPT]   the first message if it is a system one,
 *                                                 else the template's default_system_message
 *                                                 (read from the template text, `today` = the
 *                                                 request's date; none if absent)
 *   [AVAILABLE_TOOLS]tools|tojson[/AVAILABLE_TOOLS]   once, after the system prompt (Small 3.2:
 *                                                 before the last user turn)
 *   [INST]user[/INST]
 *   assistant text, then per call [TOOL_CALLS]name[ARGS]arguments, then </s> (Small 3.2:
 *   the calls instead of the text, [TOOL_CALLS]name[CALL_ID]id[ARGS]arguments|tojson)
 *   [TOOL_RESULTS]result[/TOOL_RESULTS] (Small 3.2: [TOOL_RESULTS]id[TOOL_CONTENT]result..)
 * Call ids, which Ollama's messages lack: 000000001, 000000002.. in order, each result the id
 * of the oldest call not yet answered (as chat_tools_families.c does for Mistral Nemo).
 * No generation prompt (the reply follows [/INST] or [/TOOL_RESULTS]); an assistant turn's
 * separate thinking is not replayed (the templates print only thinking blocks inside the
 * content, which Ollama's messages do not carry). Which rules apply is read from the template:
 * one that says roles "must alternate" (Ministral 3, Small 3.2; also the default without a
 * template) refuses, as one-line errors, roles that do not alternate user/assistant (tool
 * results and calls aside), and Ministral 3's an empty assistant turn and a later system
 * turn; Devstral's refuses none of that, prints a later system message as another
 * [SYSTEM_PROMPT] block and the system block even when empty.
 * The reply: [THINK]..[/THINK] thinking, then text or [TOOL_CALLS]name[ARGS]{..} calls
 * (reply_parse.c, as Ollama's ministral parser reads them). */
#include "chat.h"

#include "bytebuf.h"
#include "chat_json.h"
#include "error.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void add(bytebuf *b, const char *s) { bytebuf_add(b, s, strlen(s)); }

/* The request's date as YYYY-MM-DD (strftime_now("%Y-%m-%d") in Mistral Small 3.2's template). */
static void today(const chat_extras *x, char out[16]) {
    int y, mo, d;
    if (x && x->date && sscanf(x->date, "%d-%d-%d", &y, &mo, &d) == 3 && y >= 0 && y <= 9999 && mo >= 1 && mo <= 12 &&
        d >= 1 && d <= 31) {
        snprintf(out, 16, "%04d-%02d-%02d", y, mo, d);
        return;
    }
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(out, 16, "%Y-%m-%d", &tm);
}

/* The template's `set default_system_message = ...`: string literals (unescaped: \n \t \\ \'
 * \") joined by +, the name `today` standing for the date (Mistral Small 3.2); NULL when the
 * template has none or it is something else. */
static char *default_system_message(const char *t, const chat_extras *x) {
    const char *k = t ? strstr(t, "default_system_message = ") : NULL;
    if (!k) return NULL;
    const char *s = k + strlen("default_system_message = ");
    bytebuf b = {0};
    for (;;) {
        while (*s == ' ') s++;
        const char q = *s;
        if (q == '\'' || q == '"') {
            for (s++; *s && *s != q; s++) {
                char c = *s;
                if (c == '\\' && s[1]) {
                    s++;
                    c = *s == 'n' ? '\n' : *s == 't' ? '\t' : *s == 'r' ? '\r' : *s;
                }
                bytebuf_add(&b, &c, 1);
            }
            if (*s != q) break;
            s++;
        } else if (!strncmp(s, "today", 5) && !(s[5] == '_' || (s[5] >= 'a' && s[5] <= 'z'))) {
            char date[16];
            today(x, date);
            add(&b, date);
            s += 5;
        } else {
            break;
        }
        while (*s == ' ') s++;
        if (*s != '+') {
            if (!strncmp(s, "%}", 2) || !strncmp(s, "-%}", 3)) {   /* the end of the set */
                if (b.oom) break;
                return b.data ? b.data : calloc(1, 1);
            }
            break;
        }
        s++;
    }
    bytebuf_free(&b);
    return NULL;
}

bool chat_ministral3_thinks(const char *template_text) {
    char *def = default_system_message(template_text, NULL);
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

/* Mistral Small 3.2's calls: [TOOL_CALLS]name[CALL_ID]id[ARGS]arguments|tojson, the ids
 * 000000001.. in order (*n_ids counts them); -1 + error. */
static int add_calls_with_ids(bytebuf *b, const char *calls_json, int i, int *n_ids) {
    cJSON *calls = cJSON_Parse(calls_json);
    for (const cJSON *c = cJSON_IsArray(calls) ? calls->child : NULL; c; c = c->next) {
        const cJSON *fn = call_function(c);
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
        if (!cJSON_IsString(name)) {
            cJSON_Delete(calls);
            anv_set_error("chat: message %d: a tool call without a function name", i);
            return -1;
        }
        char id[32];
        snprintf(id, sizeof id, "%09d", ++*n_ids);
        add(b, "[TOOL_CALLS]");
        add(b, name->valuestring);
        add(b, "[CALL_ID]");
        add(b, id);
        add(b, "[ARGS]");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
        if (args) chat_put_json(b, args);   /* tojson, a string quoted */
        else add(b, "{}");
    }
    cJSON_Delete(calls);
    return 0;
}

char *chat_ministral3_render(const chat_message *m, int n, const chat_extras *x) {
    for (int i = 0; i < n; i++)
        if (!m[i].role || !m[i].content) {
            anv_set_error("chat: message %d has no %s", i, m[i].role ? "content" : "role");
            return NULL;
        }
    const char *tmpl = x ? x->template_text : NULL;
    const bool strict = !tmpl || strstr(tmpl, "roles must alternate");   /* Ministral 3, Small 3.2; not Devstral */
    const bool ids = tmpl && strstr(tmpl, "[CALL_ID]");                   /* Mistral Small 3.2 */
    bytebuf b = {0};
    int first = 0;
    char *def = default_system_message(tmpl, x);
    if (n > 0 && !strcmp(m[0].role, "system")) {
        add(&b, "[SYSTEM_PROMPT]");
        add(&b, m[0].content);
        add(&b, "[/SYSTEM_PROMPT]");
        first = 1;
    } else if (def && (*def || !strict || ids)) {
        add(&b, "[SYSTEM_PROMPT]");
        add(&b, def);
        add(&b, "[/SYSTEM_PROMPT]");
    }
    free(def);
    cJSON *tools = NULL;
    if (x && x->tools_json && *x->tools_json) {
        tools = cJSON_Parse(x->tools_json);
        if (!cJSON_IsArray(tools)) {
            cJSON_Delete(tools);
            bytebuf_free(&b);
            anv_set_error("chat: tools must be a JSON array");
            return NULL;
        }
        if (!tools->child) { cJSON_Delete(tools); tools = NULL; }
    }
    if (tools && !ids) {   /* Small 3.2: before the last user turn instead */
        add(&b, "[AVAILABLE_TOOLS]");
        chat_put_json(&b, tools);
        add(&b, "[/AVAILABLE_TOOLS]");
    }
    /* user and plain assistant turns alternate, starting with a user one (Small 3.2 counts a
     * later system turn too) */
    int idx = 0, last_user = -1;
    for (int i = first; i < n; i++) {
        bool user = !strcmp(m[i].role, "user");
        if (user) last_user = i;
        if (!strict) continue;
        if (!user && (!strcmp(m[i].role, "tool") || has_calls(&m[i]) || (!ids && strcmp(m[i].role, "assistant")))) continue;
        if (user != (idx % 2 == 0)) {
            cJSON_Delete(tools);
            bytebuf_free(&b);
            anv_set_error("chat: after the optional system message, Mistral's roles must alternate user and "
                          "assistant (tool calls and results aside)");
            return NULL;
        }
        idx++;
    }
    int n_ids = 0, answered = 0;
    for (int i = first; i < n; i++) {
        const chat_message *msg = &m[i];
        if (!strcmp(msg->role, "user")) {
            /* Small 3.2 compares messages by value: a user turn equal to the last one also gets the tools */
            if (tools && ids && !strcmp(msg->content, m[last_user].content)) {
                add(&b, "[AVAILABLE_TOOLS]");
                chat_put_json(&b, tools);
                add(&b, "[/AVAILABLE_TOOLS]");
            }
            add(&b, "[INST]");
            add(&b, msg->content);
            add(&b, "[/INST]");
        } else if (!strcmp(msg->role, "assistant")) {
            bool calls = has_calls(msg);
            if (strict && !ids && !*msg->content && !calls) {
                cJSON_Delete(tools);
                bytebuf_free(&b);
                anv_set_error("chat: message %d: an assistant turn with neither content nor tool calls", i);
                return NULL;
            }
            if (ids && calls) {   /* Small 3.2: the calls instead of the content */
                if (add_calls_with_ids(&b, msg->tool_calls, i, &n_ids) != 0) { cJSON_Delete(tools); bytebuf_free(&b); return NULL; }
            } else {
                add(&b, msg->content);
                if (calls && add_calls(&b, msg->tool_calls, i, strict) != 0) { cJSON_Delete(tools); bytebuf_free(&b); return NULL; }
            }
            add(&b, "</s>");
        } else if (!strcmp(msg->role, "tool")) {
            add(&b, "[TOOL_RESULTS]");
            if (ids) {   /* the id of the oldest call not yet answered */
                if (answered >= n_ids) {
                    cJSON_Delete(tools);
                    bytebuf_free(&b);
                    anv_set_error("chat: message %d is a tool result without an earlier assistant tool call", i);
                    return NULL;
                }
                char id[32];
                snprintf(id, sizeof id, "%09d", ++answered);
                add(&b, id);
                add(&b, "[TOOL_CONTENT]");
            }
            add(&b, msg->content);
            add(&b, "[/TOOL_RESULTS]");
        } else if ((!strict || ids) && !strcmp(msg->role, "system")) {
            add(&b, "[SYSTEM_PROMPT]");
            add(&b, msg->content);
            add(&b, "[/SYSTEM_PROMPT]");
        } else {
            cJSON_Delete(tools);
            bytebuf_free(&b);
            anv_set_error("chat: Ministral has only user, assistant and tool roles after the first message, got '%s'",
                          msg->role);
            return NULL;
        }
    }
    cJSON_Delete(tools);
    if (b.oom) { bytebuf_free(&b); anv_set_error("chat: out of memory"); return NULL; }
    if (!b.data) return calloc(1, 1);
    return b.data;
}
