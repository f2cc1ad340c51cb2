/* chat_tools_families: tools, tool calls and tool results for the Llama 3.x and Mistral
 * families (chat.h: chat_apply_ex), rendered as their official Jinja templates do (the
 * copies llama.cpp ships: meta-llama-Llama-3.1/3.2/3.3, mistralai-Mistral-Nemo-Instruct-2407;
 * Mistral 7B v0.3's, the same template with spaces, for the mistral-v3 format):
 *   Llama 3.x  a system turn with "Environment: ipython", "Cutting Knowledge Date: December
 *              2023", "Today Date: .." (26 Jul 2024 unless the template asks strftime_now),
 *              then the tools as json.dumps(indent=4) objects inside the first user turn
 *              after the instructions to answer with {"name", "parameters"}; one call per
 *              assistant turn as {"name": .., "parameters": {..}}; a tool result as an
 *              ipython turn holding the result as a JSON string;
 *   Mistral    [AVAILABLE_TOOLS][{"type": "function", "function": {..}}][/AVAILABLE_TOOLS]
 *              before the last user turn; [TOOL_CALLS][{"name", "arguments", "id"}]</s>;
 *              [TOOL_RESULTS]{"content": .., "call_id": ..}[/TOOL_RESULTS]. The templates want
 *              9-character call ids that Ollama's messages lack: the calls of a conversation
 *              get 000000001, 000000002, .. in order, and each tool result the id of the
 *              oldest call not yet answered.
 * The templates' refusals are kept as one-line errors (no first user turn for the tools,
 * several calls in one Llama turn, roles that do not alternate in Mistral Nemo). */
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

static bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f' || c == '\v'; }

/* Jinja's trim. */
static void add_trimmed(bytebuf *b, const char *s) {
    const char *e = s + strlen(s);
    while (s < e && is_space(*s)) s++;
    while (e > s && is_space(e[-1])) e--;
    bytebuf_add(b, s, (size_t)(e - s));
}

static const cJSON *item(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

static const cJSON *call_fn(const cJSON *call) {
    const cJSON *fn = item(call, "function");
    return cJSON_IsObject(fn) ? fn : call;
}

/* Parses tools (NULL when none or empty) and each message's calls; -1 + error. */
static int parse_inputs(const chat_message *m, int n, const chat_extras *x, cJSON **tools, cJSON **calls) {
    *tools = NULL;
    if (x && x->tools_json && *x->tools_json) {
        *tools = cJSON_Parse(x->tools_json);
        if (!cJSON_IsArray(*tools)) {
            cJSON_Delete(*tools);
            *tools = NULL;
            anv_set_error("chat: tools must be a JSON array");
            return -1;
        }
        if (!(*tools)->child) { cJSON_Delete(*tools); *tools = NULL; }
    }
    for (int i = 0; i < n; i++) {
        calls[i] = NULL;
        if (!m[i].tool_calls || strcmp(m[i].role, "assistant")) continue;
        calls[i] = cJSON_Parse(m[i].tool_calls);
        if (!cJSON_IsArray(calls[i])) {
            anv_set_error("chat: message %d: tool_calls must be a JSON array", i);
            return -1;
        }
        for (const cJSON *c = calls[i]->child; c; c = c->next)
            if (!cJSON_IsString(item(call_fn(c), "name"))) {
                anv_set_error("chat: message %d: a tool call without a function name", i);
                return -1;
            }
        if (!calls[i]->child) { cJSON_Delete(calls[i]); calls[i] = NULL; }
    }
    return 0;
}

static void free_inputs(cJSON *tools, cJSON **calls, int n) {
    cJSON_Delete(tools);
    if (calls)
        for (int i = 0; i < n; i++) cJSON_Delete(calls[i]);
    free(calls);
}

/* "02 Jan 2026" from YYYY-MM-DD (or today). */
static void llama_date(const chat_extras *x, char out[32]) {
    struct tm tm = {0};
    int y, mo, d;
    if (x && x->date && sscanf(x->date, "%d-%d-%d", &y, &mo, &d) == 3 && mo >= 1 && mo <= 12 && d >= 1 && d <= 31) {
        tm.tm_year = y - 1900;
        tm.tm_mon = mo - 1;
        tm.tm_mday = d;
    } else {
        time_t now = time(NULL);
        localtime_r(&now, &tm);
    }
    static const char *const mon[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    snprintf(out, 32, "%02d %s %d", tm.tm_mday, mon[tm.tm_mon], tm.tm_year + 1900);
}

static void llama_header(bytebuf *b, const char *role) {
    add(b, "<|start_header_id|>");
    add(b, role);
    add(b, "<|end_header_id|>\n\n");
}

char *chat_llama3_tools_render(const chat_message *m, int n, bool add_assistant, const chat_extras *x) {
    bytebuf b = {0};
    cJSON *tools = NULL, **calls = calloc((size_t)(n > 0 ? n : 1), sizeof *calls);
    if (!calls) { anv_set_error("chat: out of memory"); return NULL; }
    if (parse_inputs(m, n, x, &tools, calls)) goto fail;
    int i = 0;
    const char *sys = "";
    if (n > 0 && !strcmp(m[0].role, "system")) { sys = m[0].content; i = 1; }
    llama_header(&b, "system");
    if (tools) add(&b, "Environment: ipython\n");
    add(&b, "Cutting Knowledge Date: December 2023\nToday Date: ");
    char date[32] = "26 Jul 2024";
    if (x && x->template_text && strstr(x->template_text, "strftime_now")) llama_date(x, date);
    add(&b, date);
    add(&b, "\n\n");
    add_trimmed(&b, sys);
    add(&b, "<|eot_id|>");
    if (tools) {
        if (i >= n) {
            anv_set_error("chat: Llama 3 puts the tools in the first user message, and there is none");
            goto fail;
        }
        llama_header(&b, "user");
        add(&b, "Given the following functions, please respond with a JSON for a function call with its proper "
                "arguments that best answers the given prompt.\n\nRespond in the format {\"name\": function name, "
                "\"parameters\": dictionary of argument name and its value}.Do not use variables.\n\n");
        for (const cJSON *t = tools->child; t; t = t->next) {
            chat_put_json_indent(&b, t, 4);
            add(&b, "\n\n");
        }
        add_trimmed(&b, m[i].content);
        add(&b, "<|eot_id|>");
        i++;
    }
    for (; i < n; i++) {
        const chat_message *msg = &m[i];
        bool tool = !strcmp(msg->role, "tool") || !strcmp(msg->role, "ipython");
        if (calls[i]) {
            if (calls[i]->child->next) {
                anv_set_error("chat: message %d: Llama 3 takes one tool call per assistant message", i);
                goto fail;
            }
            const cJSON *fn = call_fn(calls[i]->child), *args = item(fn, "arguments");
            llama_header(&b, "assistant");
            add(&b, "{\"name\": \"");
            add(&b, item(fn, "name")->valuestring);
            add(&b, "\", \"parameters\": ");
            if (args) chat_put_json(&b, args);
            else add(&b, "{}");
            add(&b, "}<|eot_id|>");
        } else if (tool) {
            llama_header(&b, "ipython");
            chat_put_json_string(&b, msg->content);   /* a string "is iterable" in Jinja: tojson */
            add(&b, "<|eot_id|>");
        } else {
            llama_header(&b, msg->role);
            add_trimmed(&b, msg->content);
            add(&b, "<|eot_id|>");
        }
    }
    if (add_assistant) llama_header(&b, "assistant");
    if (b.oom) { anv_set_error("chat: out of memory"); goto fail; }
    free_inputs(tools, calls, n);
    return b.data;
fail:
    free_inputs(tools, calls, n);
    bytebuf_free(&b);
    return NULL;
}

/* Mistral: v3 (7B v0.3, spaced) or tekken (Nemo). */
char *chat_mistral_tools_render(const chat_message *m, int n, bool tekken, const chat_extras *x) {
    bytebuf b = {0};
    cJSON *tools = NULL, **calls = calloc((size_t)(n > 0 ? n : 1), sizeof *calls);
    if (!calls) { anv_set_error("chat: out of memory"); return NULL; }
    if (parse_inputs(m, n, x, &tools, calls)) goto fail;
    int first = 0;
    const char *sys = NULL;
    if (n > 0 && !strcmp(m[0].role, "system")) { sys = m[0].content; first = 1; }
    int last_user = -1, idx = 0;
    for (int i = first; i < n; i++) {
        if (!strcmp(m[i].role, "user")) last_user = i;
        if (!tekken || !strcmp(m[i].role, "tool") || calls[i]) continue;
        if (!strcmp(m[i].role, "user") != (idx % 2 == 0)) {
            anv_set_error("chat: after the optional system message, Mistral's roles must alternate "
                          "user/assistant/user/assistant/...");
            goto fail;
        }
        idx++;
    }
    int n_ids = 0, answered = 0;
    for (int i = first; i < n; i++) {
        const chat_message *msg = &m[i];
        if (!strcmp(msg->role, "user")) {
            /* the template compares messages by value: a user turn equal to the last one also gets the tools */
            if (tools && !strcmp(msg->content, m[last_user].content)) {
                add(&b, tekken ? "[AVAILABLE_TOOLS][" : "[AVAILABLE_TOOLS] [");
                for (const cJSON *t = tools->child; t; t = t->next) {
                    const cJSON *fn = item(t, "function");
                    if (!cJSON_IsObject(fn)) fn = t;
                    if (!cJSON_IsObject(fn)) {
                        anv_set_error("chat: a tool that is not an object");
                        goto fail;
                    }
                    add(&b, "{\"type\": \"function\", \"function\": {");
                    bool firstkey = true;
                    for (const cJSON *k = fn->child; k; k = k->next) {
                        if (!strcmp(k->string, "return")) continue;
                        if (!firstkey) add(&b, ", ");
                        firstkey = false;
                        add(&b, "\"");
                        add(&b, k->string);
                        add(&b, "\": ");
                        if (cJSON_IsString(k)) { add(&b, "\""); add(&b, k->valuestring); add(&b, "\""); }   /* as is */
                        else chat_put_json(&b, k);
                    }
                    add(&b, "}}");
                    add(&b, t->next ? ", " : "]");
                }
                add(&b, "[/AVAILABLE_TOOLS]");
            }
            add(&b, tekken ? "[INST]" : "[INST] ");
            if (i == n - 1 && sys) { add(&b, sys); add(&b, "\n\n"); }
            add(&b, msg->content);
            add(&b, "[/INST]");
        } else if (calls[i]) {
            add(&b, tekken ? "[TOOL_CALLS][" : "[TOOL_CALLS] [");
            for (const cJSON *c = calls[i]->child; c; c = c->next) {
                const cJSON *fn = call_fn(c);
                bytebuf one = {0};
                chat_put_json(&one, fn);
                if (one.len) one.len--;   /* out[:-1]: the object without its closing brace */
                bytebuf_add(&b, bytebuf_str(&one), one.len);
                bytebuf_free(&one);
                char id[32];
                snprintf(id, sizeof id, "%09d", ++n_ids);
                add(&b, ", \"id\": \"");
                add(&b, id);
                add(&b, "\"}");
                add(&b, c->next ? ", " : "]</s>");
            }
        } else if (!strcmp(msg->role, "assistant")) {
            if (tekken) add(&b, msg->content);
            else { add(&b, " "); add_trimmed(&b, msg->content); }
            add(&b, "</s>");
        } else if (!strcmp(msg->role, "tool")) {
            if (answered >= n_ids) {
                anv_set_error("chat: message %d is a tool result without an earlier assistant tool call", i);
                goto fail;
            }
            char id[32];
            snprintf(id, sizeof id, "%09d", ++answered);
            add(&b, tekken ? "[TOOL_RESULTS]{\"content\": " : "[TOOL_RESULTS] {\"content\": ");
            add(&b, msg->content);   /* content|string: as is */
            add(&b, ", \"call_id\": \"");
            add(&b, id);
            add(&b, "\"}[/TOOL_RESULTS]");
        } else if (tekken) {
            anv_set_error("chat: message %d: Mistral takes user and assistant roles after one optional system "
                          "message", i);
            goto fail;
        }
    }
    if (b.oom) { anv_set_error("chat: out of memory"); goto fail; }
    free_inputs(tools, calls, n);
    return b.data ? b.data : strdup("");
fail:
    free_inputs(tools, calls, n);
    bytebuf_free(&b);
    return NULL;
}
