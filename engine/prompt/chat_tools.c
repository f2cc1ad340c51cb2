/* chat_tools: tool definitions, tool calls, tool results and the think switch in the
 * prompt (chat.h: chat_apply_ex), rendered as each family's official Jinja template does:
 *   ChatML (Qwen 2.5 / Qwen 3 / Hermes): tools in the system turn inside <tools></tools>,
 *     one JSON object per line (Jinja's tojson: ", " and ": " separators); an assistant
 *     turn's calls as "\n<tool_call>\n{"name": "..", "arguments": {..}}\n</tool_call>";
 *     consecutive tool results in one user turn, each in <tool_response></tool_response>;
 *     think off appends "<think>\n\n</think>\n\n" after the assistant prefix (Qwen 3's
 *     enable_thinking=false).
 *   gpt-oss: the harmony format, always (chat_harmony.c);
 *   Llama 3.x and Mistral with tools or calls: chat_tools_families.c.
 * Formats without tool calling refuse tools; their plain turns are chat_apply's. */
#include "chat.h"

#include "bytebuf.h"
#include "chat_formats.h"
#include "chat_json.h"
#include "error.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put(bytebuf *b, const char *s, size_t n) { bytebuf_add(b, s, n); }
static void add(bytebuf *b, const char *s) { bytebuf_add(b, s, strlen(s)); }

/* A JSON string as Python's json.dumps(ensure_ascii=False) writes it. */
void chat_put_json_string(bytebuf *b, const char *s) {
    add(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        switch (*p) {
        case '"': add(b, "\\\""); break;
        case '\\': add(b, "\\\\"); break;
        case '\n': add(b, "\\n"); break;
        case '\r': add(b, "\\r"); break;
        case '\t': add(b, "\\t"); break;
        case '\b': add(b, "\\b"); break;
        case '\f': add(b, "\\f"); break;
        default:
            if (*p < 0x20) { snprintf(esc, sizeof esc, "\\u%04x", *p); add(b, esc); }
            else put(b, (const char *)p, 1);
        }
    }
    add(b, "\"");
}

void chat_put_py_number(bytebuf *b, double v) {
    char t[40];
    if (v == floor(v) && fabs(v) < 1e15) {
        snprintf(t, sizeof t, "%.0f", v);
    } else {
        for (int p = 1; p <= 17; p++) {
            snprintf(t, sizeof t, "%.*g", p, v);
            if (strtod(t, NULL) == v) break;
        }
        if (!strpbrk(t, ".eni")) strcat(t, ".0");
    }
    add(b, t);
}

/* Jinja's tojson (json.dumps: ", " and ": " separators, keys in their order). */
void chat_put_json(bytebuf *b, const cJSON *v) {
    if (cJSON_IsObject(v)) {
        add(b, "{");
        bool first = true;
        for (const cJSON *c = v->child; c; c = c->next) {
            if (!first) add(b, ", ");
            first = false;
            chat_put_json_string(b, c->string);
            add(b, ": ");
            chat_put_json(b, c);
        }
        add(b, "}");
    } else if (cJSON_IsArray(v)) {
        add(b, "[");
        bool first = true;
        for (const cJSON *c = v->child; c; c = c->next) {
            if (!first) add(b, ", ");
            first = false;
            chat_put_json(b, c);
        }
        add(b, "]");
    } else if (cJSON_IsString(v)) {
        chat_put_json_string(b, v->valuestring);
    } else {
        char *t = cJSON_PrintUnformatted(v);   /* numbers, true, false, null */
        if (!t) { b->oom = true; return; }
        add(b, t);
        free(t);
    }
}

/* json.dumps(indent=N): one member per line, ",", ": ", empty containers as {} and []. */
static void put_json_indented(bytebuf *b, const cJSON *v, int indent, int level) {
    bool obj = cJSON_IsObject(v);
    if ((obj || cJSON_IsArray(v)) && v->child) {
        add(b, obj ? "{" : "[");
        for (const cJSON *c = v->child; c; c = c->next) {
            add(b, "\n");
            for (int i = 0; i < indent * (level + 1); i++) add(b, " ");
            if (obj) { chat_put_json_string(b, c->string); add(b, ": "); }
            put_json_indented(b, c, indent, level + 1);
            if (c->next) add(b, ",");
        }
        add(b, "\n");
        for (int i = 0; i < indent * level; i++) add(b, " ");
        add(b, obj ? "}" : "]");
    } else if (obj || cJSON_IsArray(v)) {
        add(b, obj ? "{}" : "[]");
    } else {
        chat_put_json(b, v);
    }
}

void chat_put_json_indent(bytebuf *b, const cJSON *v, int indent) { put_json_indented(b, v, indent, 0); }

static bool is_mistral_tekken(chat_format f) {
    int i = chat_builtin_find("mistral-v3-tekken");
    return i >= 0 && f == (chat_format)(CHAT_BUILTIN + i);
}

bool chat_format_has_tools(chat_format f, const char *template_text) {
    if (chat_format_is_harmony(f)) return true;
    if (f == CHAT_GEMMA4 || f == CHAT_QWEN35) return true;   /* both templates declare tools */
    if (f == CHAT_MINISTRAL3) return !template_text || !*template_text || strstr(template_text, "[AVAILABLE_TOOLS]");
    if (f != CHAT_CHATML && f != CHAT_LLAMA3 && f != CHAT_MISTRAL && !is_mistral_tekken(f)) return false;
    /* a GGUF template that never mentions tools was not trained for them */
    return !template_text || !*template_text || strstr(template_text, "tools") || strstr(template_text, "tool_call");
}

bool chat_format_has_thinking(chat_format f, const char *template_text, const char *arch) {
    if (chat_format_is_harmony(f)) return true;
    if (f == CHAT_GEMMA4 || f == CHAT_QWEN35) return true;   /* <|think|> / enable_thinking */
    if (template_text && strstr(template_text, "<think>") && strstr(template_text, "</think>")) return true;
    /* Ministral 3 Reasoning: its system prompt asks for [THINK]..[/THINK] */
    if (f == CHAT_MINISTRAL3) return chat_ministral3_thinks(template_text);
    return f == CHAT_CHATML && (!template_text || !*template_text) && arch &&
           (!strcmp(arch, "qwen3") || !strcmp(arch, "qwen3moe"));
}

/* One assistant call in Qwen's form; -1 when the call is malformed. */
static int put_chatml_call(bytebuf *b, const cJSON *call) {
    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
    if (cJSON_IsObject(fn)) call = fn;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(call, "name");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(call, "arguments");
    if (!cJSON_IsString(name)) return -1;
    add(b, "\n<tool_call>\n{\"name\": \"");
    add(b, name->valuestring);
    add(b, "\", \"arguments\": ");
    if (args) chat_put_json(b, args);
    else add(b, "{}");
    add(b, "}\n</tool_call>");
    return 0;
}

static char *render_chatml_ex(const chat_message *m, int n, bool add_assistant, const chat_extras *x) {
    bytebuf b = {0};
    add(&b, "");
    cJSON *tools = NULL;
    int first = 0;
    if (x->tools_json) {
        tools = cJSON_Parse(x->tools_json);
        if (!cJSON_IsArray(tools)) {
            cJSON_Delete(tools);
            anv_set_error("chat: tools must be a JSON array");
            free(b.data);
            return NULL;
        }
        if (cJSON_GetArraySize(tools) == 0) { cJSON_Delete(tools); tools = NULL; }
    }
    if (tools) {
        add(&b, "<|im_start|>system\n");
        if (n > 0 && !strcmp(m[0].role, "system")) {
            add(&b, m[0].content);
            add(&b, "\n\n");
            first = 1;
        }
        add(&b, "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
                "You are provided with function signatures within <tools></tools> XML tags:\n<tools>");
        for (const cJSON *t = tools->child; t; t = t->next) {
            add(&b, "\n");
            chat_put_json(&b, t);
        }
        add(&b, "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
                "within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, "
                "\"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n");
        cJSON_Delete(tools);
    }
    for (int i = first; i < n; i++) {
        const chat_message *msg = &m[i];
        if (!strcmp(msg->role, "tool")) {
            if (i == first || strcmp(m[i - 1].role, "tool")) add(&b, "<|im_start|>user");
            add(&b, "\n<tool_response>\n");
            add(&b, msg->content);
            add(&b, "\n</tool_response>");
            if (i == n - 1 || strcmp(m[i + 1].role, "tool")) add(&b, "<|im_end|>\n");
            continue;
        }
        cJSON *calls = msg->tool_calls && !strcmp(msg->role, "assistant") ? cJSON_Parse(msg->tool_calls) : NULL;
        if (msg->tool_calls && !strcmp(msg->role, "assistant") && !cJSON_IsArray(calls)) {
            cJSON_Delete(calls);
            anv_set_error("chat: message %d: tool_calls must be a JSON array", i);
            free(b.data);
            return NULL;
        }
        if (calls && cJSON_GetArraySize(calls) > 0) {
            add(&b, "<|im_start|>assistant");
            if (*msg->content) { add(&b, "\n"); add(&b, msg->content); }
            for (const cJSON *c = calls->child; c; c = c->next)
                if (put_chatml_call(&b, c)) {
                    cJSON_Delete(calls);
                    anv_set_error("chat: message %d: a tool call without a function name", i);
                    free(b.data);
                    return NULL;
                }
            add(&b, "<|im_end|>\n");
        } else {
            add(&b, "<|im_start|>");
            add(&b, msg->role);
            add(&b, "\n");
            add(&b, msg->content);
            add(&b, "<|im_end|>\n");
        }
        cJSON_Delete(calls);
    }
    if (add_assistant) {
        add(&b, "<|im_start|>assistant\n");
        if (x->think == CHAT_THINK_OFF) add(&b, "<think>\n\n</think>\n\n");
    }
    if (b.oom) {
        free(b.data);
        anv_set_error("chat: out of memory");
        return NULL;
    }
    return b.data;
}

char *chat_apply_ex(chat_format f, const chat_message *msgs, int n_msgs, bool add_assistant, const chat_extras *x) {
    bool has_tools = x && x->tools_json && strcmp(x->tools_json, "[]") && *x->tools_json;
    bool has_calls = false;
    for (int i = 0; i < n_msgs; i++)
        if (msgs[i].tool_calls || !strcmp(msgs[i].role ? msgs[i].role : "", "tool")) has_calls = true;
    if (chat_format_is_harmony(f)) {   /* always: the official template, not llama.cpp's bare built-in */
        for (int i = 0; i < n_msgs; i++)
            if (!msgs[i].role || !msgs[i].content) {
                anv_set_error("chat: message %d has no %s", i, msgs[i].role ? "content" : "role");
                return NULL;
            }
        return chat_harmony_render(msgs, n_msgs, add_assistant, x);
    }
    if (f == CHAT_MINISTRAL3) return chat_ministral3_render(msgs, n_msgs, x);   /* always: its default system prompt */
    if (f == CHAT_GEMMA4) return chat_gemma4_render(msgs, n_msgs, add_assistant, x);
    if (f == CHAT_QWEN35) return chat_qwen35_render(msgs, n_msgs, add_assistant, x);
    if ((f == CHAT_LLAMA3 || f == CHAT_MISTRAL || is_mistral_tekken(f)) && (has_tools || has_calls)) {
        for (int i = 0; i < n_msgs; i++)
            if (!msgs[i].role || !msgs[i].content) {
                anv_set_error("chat: message %d has no %s", i, msgs[i].role ? "content" : "role");
                return NULL;
            }
        return f == CHAT_LLAMA3 ? chat_llama3_tools_render(msgs, n_msgs, add_assistant, x)
                                : chat_mistral_tools_render(msgs, n_msgs, f != CHAT_MISTRAL, x);
    }
    if (f == CHAT_CHATML && x && (has_tools || has_calls || x->think == CHAT_THINK_OFF)) {
        for (int i = 0; i < n_msgs; i++)
            if (!msgs[i].role || !msgs[i].content) {
                anv_set_error("chat: message %d has no %s", i, msgs[i].role ? "content" : "role");
                return NULL;
            }
        return render_chatml_ex(msgs, n_msgs, add_assistant, x);
    }
    if (has_tools) {
        anv_set_error("chat: the %s format has no tool calling", chat_format_name(f));
        return NULL;
    }
    return chat_apply(f, msgs, n_msgs, add_assistant);
}
