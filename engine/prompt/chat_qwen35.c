/* chat_qwen35: the Qwen 3.5 / 3.6 prompt (qwen35, qwen35moe GGUFs) rendered as its Jinja
 * template does (the copy llama.cpp ships: models/templates/Qwen3.5-4B.jinja), byte-equal to
 * jinja2 on tests/prompt/jinja_think_goldens.json:
 *   <|im_start|>system\n# Tools\n\nYou have access to the following functions:\n\n<tools>
 *       {tool|tojson} per line</tools>\n\n(the call instructions)[\n\nsystem text|trim]<|im_end|>\n
 *       (with tools; without them the system turn is only the system text)
 *   <|im_start|>user\ncontent|trim<|im_end|>\n
 *   <|im_start|>assistant\n[<think>\nthinking\n</think>\n\n]content, then per call
 *       <tool_call>\n<function=NAME>\n<parameter=K>\nvalue\n</parameter>\n</function>\n</tool_call>
 *       (the thinking block only after the last real user query)
 *   consecutive tool results in one user turn: \n<tool_response>\nresult\n</tool_response>
 *   generation: <|im_start|>assistant\n<think>\n (think off: <think>\n\n</think>\n\n).
 * An assistant turn's thinking is its separate thinking, else a <think>..</think> block in
 * its content. The template's refusals are one-line errors: no messages, no user query, a
 * system message after the first, an unknown role. Parameter values: objects and arrays as
 * tojson, strings as they are, the rest as Python's str (True, None, 2, 1.5). Replies:
 * <think>..</think> and the <tool_call><function=..> calls (reply_parse.c). */
#include "chat.h"

#include "bytebuf.h"
#include "chat_json.h"
#include "error.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void add(bytebuf *b, const char *s) { bytebuf_add(b, s, strlen(s)); }

/* s[0..n) without leading/trailing whitespace: *start, returns the length. */
static size_t trimmed(const char *s, size_t n, const char **start) {
    size_t i = 0;
    while (i < n && isspace((unsigned char)s[i])) i++;
    while (n > i && isspace((unsigned char)s[n - 1])) n--;
    *start = s + i;
    return n - i;
}

static void add_trimmed(bytebuf *b, const char *s) {
    const char *t;
    size_t n = trimmed(s, strlen(s), &t);
    bytebuf_add(b, t, n);
}

static bool is_role(const chat_message *m, const char *r) { return !strcmp(m->role, r); }

/* A user turn that is only a <tool_response> block does not count as the query. */
static bool is_query(const chat_message *m) {
    if (!is_role(m, "user")) return false;
    const char *t;
    size_t n = trimmed(m->content, strlen(m->content), &t);
    static const char open[] = "<tool_response>", close[] = "</tool_response>";
    return !(n >= strlen(open) && !strncmp(t, open, strlen(open)) && n >= strlen(close) &&
             !strncmp(t + n - strlen(close), close, strlen(close)));
}

/* str(value) in Python for a parameter value that is not an object or array. */
static void put_scalar(bytebuf *b, const cJSON *v) {
    if (cJSON_IsString(v)) {
        add(b, v->valuestring);
    } else if (cJSON_IsBool(v)) {
        add(b, cJSON_IsTrue(v) ? "True" : "False");
    } else if (cJSON_IsNumber(v)) {
        chat_put_py_number(b, v->valuedouble);
    } else {
        add(b, "None");
    }
}

/* The calls of assistant message i after its content; -1 + error. */
static int put_calls(bytebuf *b, const char *calls_json, const char *content, int i) {
    cJSON *calls = cJSON_Parse(calls_json);
    if (!cJSON_IsArray(calls)) {
        cJSON_Delete(calls);
        anv_set_error("chat: message %d: tool_calls must be a JSON array", i);
        return -1;
    }
    const char *t;
    const bool has_text = trimmed(content, strlen(content), &t) > 0;
    for (const cJSON *c = calls->child; c; c = c->next) {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(c, "function");
        if (!cJSON_IsObject(fn)) fn = c;
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
        cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments"), *parsed = NULL;
        if (cJSON_IsString(args)) args = parsed = cJSON_Parse(args->valuestring);   /* arguments as JSON text */
        if (!cJSON_IsString(name) || (args && !cJSON_IsObject(args))) {
            cJSON_Delete(parsed);
            cJSON_Delete(calls);
            anv_set_error("chat: message %d: a tool call needs a function name and object arguments", i);
            return -1;
        }
        add(b, c == calls->child ? (has_text ? "\n\n<tool_call>\n<function=" : "<tool_call>\n<function=")
                                 : "\n<tool_call>\n<function=");
        add(b, name->valuestring);
        add(b, ">\n");
        for (const cJSON *a = args ? args->child : NULL; a; a = a->next) {
            add(b, "<parameter=");
            add(b, a->string);
            add(b, ">\n");
            if (cJSON_IsObject(a) || cJSON_IsArray(a)) chat_put_json(b, a);
            else put_scalar(b, a);
            add(b, "\n</parameter>\n");
        }
        add(b, "</function>\n</tool_call>");
        cJSON_Delete(parsed);
    }
    cJSON_Delete(calls);
    return 0;
}

/* The thinking and the answer of an assistant turn: its thinking field, else the text of a
 * <think>..</think> block in the content (the content then what follows </think>). */
static void split_thinking(const chat_message *m, bytebuf *thinking, bytebuf *content) {
    const char *c = m->content;
    bytebuf_add(thinking, "", 0);
    bytebuf_add(content, "", 0);
    const char *t;
    size_t tn = trimmed(c, strlen(c), &t);   /* content|trim (render_content) */
    char *ct = strndup(t, tn);
    if (!ct) { content->oom = true; return; }
    const char *close = strstr(ct, "</think>");
    if (m->thinking && *m->thinking) {
        add_trimmed(thinking, m->thinking);
        add(content, ct);
    } else if (close) {
        /* content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') */
        size_t n = (size_t)(close - ct);
        while (n && ct[n - 1] == '\n') n--;
        const char *s = ct, *o;
        while ((o = strstr(s, "<think>")) && o < ct + n) s = o + strlen("<think>");
        while (s < ct + n && *s == '\n') s++;
        char *r = strndup(s, (size_t)(ct + n - s));
        if (r) add_trimmed(thinking, r);
        else thinking->oom = true;
        free(r);
        /* content.split('</think>')[-1].lstrip('\n') */
        const char *last = close, *x;
        while ((x = strstr(last + 1, "</think>"))) last = x;
        last += strlen("</think>");
        while (*last == '\n') last++;
        add(content, last);
    } else {
        add(content, ct);
    }
    free(ct);
}

char *chat_qwen35_render(const chat_message *m, int n, bool add_assistant, const chat_extras *x) {
    for (int i = 0; i < n; i++)
        if (!m[i].role || !m[i].content) {
            anv_set_error("chat: message %d has no %s", i, m[i].role ? "content" : "role");
            return NULL;
        }
    if (n == 0) {
        anv_set_error("chat: Qwen 3.5's template needs at least one message (No messages provided.)");
        return NULL;
    }
    int last_query = -1;
    for (int i = n - 1; i >= 0 && last_query < 0; i--)
        if (is_query(&m[i])) last_query = i;
    if (last_query < 0) {
        anv_set_error("chat: Qwen 3.5's template needs a user query (No user query found in messages.)");
        return NULL;
    }
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
    bytebuf b = {0};
    add(&b, "");
    const bool sys0 = is_role(&m[0], "system");
    if (tools) {
        add(&b, "<|im_start|>system\n# Tools\n\nYou have access to the following functions:\n\n<tools>");
        for (const cJSON *t = tools->child; t; t = t->next) {
            add(&b, "\n");
            chat_put_json(&b, t);
        }
        add(&b, "\n</tools>\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n"
                "<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n"
                "</parameter>\n<parameter=example_parameter_2>\nThis is the value for the second parameter\n"
                "that can span\nmultiple lines\n</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n"
                "- Function calls MUST follow the specified format: an inner <function=...></function> block must be "
                "nested within <tool_call></tool_call> XML tags\n- Required parameters MUST be specified\n- You may "
                "provide optional reasoning for your function call in natural language BEFORE the function call, but "
                "NOT after\n- If there is no function call available, answer the question like normal with your "
                "current knowledge and do not tell the user about function calls\n</IMPORTANT>");
        const char *t;
        if (sys0 && trimmed(m[0].content, strlen(m[0].content), &t)) {
            add(&b, "\n\n");
            add_trimmed(&b, m[0].content);
        }
        add(&b, "<|im_end|>\n");
        cJSON_Delete(tools);
    } else if (sys0) {
        add(&b, "<|im_start|>system\n");
        add_trimmed(&b, m[0].content);
        add(&b, "<|im_end|>\n");
    }
    for (int i = 0; i < n; i++) {
        const chat_message *msg = &m[i];
        if (is_role(msg, "system")) {
            if (i) {
                bytebuf_free(&b);
                anv_set_error("chat: message %d: Qwen 3.5's system message must be at the beginning", i);
                return NULL;
            }
        } else if (is_role(msg, "user")) {
            add(&b, "<|im_start|>user\n");
            add_trimmed(&b, msg->content);
            add(&b, "<|im_end|>\n");
        } else if (is_role(msg, "assistant")) {
            bytebuf thinking = {0}, content = {0};
            split_thinking(msg, &thinking, &content);
            add(&b, "<|im_start|>assistant\n");
            if (i > last_query) {
                add(&b, "<think>\n");
                add(&b, thinking.data ? thinking.data : "");
                add(&b, "\n</think>\n\n");
            }
            add(&b, content.data ? content.data : "");
            if (thinking.oom || content.oom) b.oom = true;
            int rc = msg->tool_calls ? put_calls(&b, msg->tool_calls, content.data ? content.data : "", i) : 0;
            bytebuf_free(&thinking);
            bytebuf_free(&content);
            if (rc) { bytebuf_free(&b); return NULL; }
            add(&b, "<|im_end|>\n");
        } else if (is_role(msg, "tool")) {
            if (i > 0 && !is_role(&m[i - 1], "tool")) add(&b, "<|im_start|>user");
            add(&b, "\n<tool_response>\n");
            add_trimmed(&b, msg->content);
            add(&b, "\n</tool_response>");
            if (i == n - 1 || !is_role(&m[i + 1], "tool")) add(&b, "<|im_end|>\n");
        } else {
            bytebuf_free(&b);
            anv_set_error("chat: message %d: Qwen 3.5 has no role '%s' (system, user, assistant, tool)", i, msg->role);
            return NULL;
        }
    }
    if (add_assistant) {
        add(&b, "<|im_start|>assistant\n");
        add(&b, x && x->think == CHAT_THINK_OFF ? "<think>\n\n</think>\n\n" : "<think>\n");
    }
    if (b.oom) {
        bytebuf_free(&b);
        anv_set_error("chat: out of memory");
        return NULL;
    }
    return b.data;
}
