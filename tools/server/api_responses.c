/* api_responses: OpenAI's Responses API on the chat path: POST /v1/responses, whole or
 * streamed as named SSE events (response.created, response.in_progress,
 * response.output_item.added / .done, response.content_part.added / .done,
 * response.output_text.delta / .done, response.reasoning_summary_* for thinking,
 * response.function_call_arguments.delta / .done, response.completed or
 * response.incomplete), each with its sequence_number. The request becomes the
 * scheduler's chat request: instructions the system message; input a string (one user
 * turn) or items: messages (input_text / output_text parts), function_call (the
 * assistant's tool calls), function_call_output (a role "tool" turn named after its
 * call), reasoning (the next assistant turn's thinking); tools the flat function form
 * {type, name, description, parameters} (a namespace's members as "namespace.name",
 * web_search left out); tool_choice none / auto / required / {type:
 * function, name}; max_output_tokens, temperature, top_p Ollama's options; reasoning.effort
 * the think switch; text.format json_object / json_schema the grammar. The reply's output
 * is a reasoning item, a message with output_text, and function_call items (call_id,
 * arguments as JSON text). Nothing is stored: previous_response_id and conversation are a
 * 400 (Ollama reads neither and answers as if they were absent). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_images.h"
#include "api_json.h"

enum { ITEM_NONE, ITEM_REASONING, ITEM_MESSAGE };

typedef struct {
    aj_gen out;            /* first: the stream emitter gets the whole struct as an aj_gen */
    const cJSON *body;
    const char *model;
    char id[48];           /* resp_ + hex */
    int64_t created;
    cJSON *options;
    cJSON *call_names;     /* call_id -> function name, from the function_call items */
    char *pending_thinking;   /* a reasoning item's text waiting for its assistant turn */
    int cap_msgs;
    /* the reply: finished output items (the stream's, or the whole reply's) */
    cJSON *items;
    int seq;               /* the stream's next sequence_number */
    int open;              /* ITEM_* open now (its output index: the size of items) */
    char open_id[64];
    bytebuf acc;           /* the open item's text so far */
    int n_calls_sent;
} rs_gen;

/* ------------------------------------------------------------------ the request */

static char *dup_n(api_req *c, const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (!d) { aj_fail(c, 500, NULL, "out of memory"); return NULL; }
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

static chat_message *push_turn(rs_gen *g, const char *role) {
    if (g->out.n_msgs >= g->cap_msgs) { aj_fail(g->out.c, 500, NULL, "too many turns"); return NULL; }
    chat_message *m = &g->out.msgs[g->out.n_msgs++];
    *m = (chat_message){.role = role};
    return m;
}

/* The text of content: a string or an array of parts (input_text, output_text, refusal's
 * text, input_image's marker; files and audio refused). malloc'd, NULL + failure. */
static char *content_text(api_req *c, const cJSON *content, const char *field) {
    if (!content) return dup_n(c, "", 0);
    if (cJSON_IsString(content)) return dup_n(c, content->valuestring, strlen(content->valuestring));
    if (!cJSON_IsArray(content)) {
        aj_fail(c, 400, field, "invalid value for field '%s': expected a string or an array of content parts", field);
        return NULL;
    }
    bytebuf b = {0};
    int j = 0;
    const cJSON *part;
    cJSON_ArrayForEach(part, content) {
        char f[128], tf[144];
        snprintf(f, sizeof f, "%s[%d]", field, j++);
        snprintf(tf, sizeof tf, "%s.type", f);
        const cJSON *type = aj_need(c, aj_any(aj_need(c, part, f, AJ_OBJECT), "type"), tf, AJ_STRING);
        if (!type) break;
        const char *t = type->valuestring;
        if (!strcmp(t, "input_text") || !strcmp(t, "output_text") || !strcmp(t, "text")) {
            snprintf(tf, sizeof tf, "%s.text", f);
            const cJSON *text = aj_need(c, aj_any(part, "text"), tf, AJ_STRING);
            if (text && b.len && *text->valuestring) bytebuf_add(&b, "\n", 1);
            if (text) bytebuf_add(&b, text->valuestring, strlen(text->valuestring));
        } else if (!strcmp(t, "refusal")) {
            /* the model's own refusal replayed: its text */
            snprintf(tf, sizeof tf, "%s.refusal", f);
            const cJSON *text = aj_need(c, aj_any(part, "refusal"), tf, AJ_STRING);
            if (text) bytebuf_add(&b, text->valuestring, strlen(text->valuestring));
        } else if (!strcmp(t, "input_image")) {
            /* {"type": "input_image", "image_url": "data:image/...;base64,..."}: its marker where it
             * stands (a file_id or an http(s) URL: a 400) */
            snprintf(tf, sizeof tf, "%s.image_url", f);
            const cJSON *url = aj_need(c, aj_any(part, "image_url"), tf, AJ_STRING);
            int i = url ? api_images_add_url(c, url->valuestring, tf) : -1;
            if (i >= 0) {
                char mk[API_IMAGE_MARKER_MAX];
                api_image_marker(i, mk);
                if (b.len) bytebuf_add(&b, "\n", 1);
                bytebuf_add(&b, mk, strlen(mk));
            }
        } else if (!strcmp(t, "input_file") || !strcmp(t, "input_audio")) {
            aj_fail(c, 400, f, "%s is not supported in '%s'", t, f);
        } else {
            aj_fail(c, 400, tf, "unsupported content part type '%.40s' in '%s'", t, tf);
        }
        if (c->failed) break;
    }
    char *out = c->failed ? NULL : b.oom ? (aj_fail(c, 500, NULL, "out of memory"), NULL) : dup_n(c, b.data ? b.data : "", b.len);
    bytebuf_free(&b);
    return out;
}

/* A message item: role user, assistant, system or developer (system). */
static void add_message(rs_gen *g, const cJSON *item, const char *field) {
    api_req *c = g->out.c;
    char f[80];
    snprintf(f, sizeof f, "%s.role", field);
    const cJSON *role_v = aj_need(c, aj_any(item, "role"), f, AJ_STRING);
    if (!role_v) return;
    const char *r = role_v->valuestring;
    const char *role = !strcmp(r, "user") ? "user" : !strcmp(r, "assistant") ? "assistant"
                     : !strcmp(r, "system") || !strcmp(r, "developer") ? "system" : NULL;
    if (!role) { aj_fail(c, 400, f, "invalid role '%.40s' in '%s': expected user, assistant, system or developer", r, f); return; }
    snprintf(f, sizeof f, "%s.content", field);
    char *text = content_text(c, aj_any(item, "content"), f);
    if (!text) return;
    chat_message *m = push_turn(g, role);
    if (!m) { free(text); return; }
    m->content = text;
    if (!strcmp(role, "assistant") && g->pending_thinking) {
        m->thinking = g->pending_thinking;
        g->pending_thinking = NULL;
    }
}

/* A function_call item: a tool call of the assistant turn it follows (or of a new one). */
static void add_function_call(rs_gen *g, const cJSON *item, const char *field) {
    api_req *c = g->out.c;
    char f[80];
    snprintf(f, sizeof f, "%s.name", field);
    const cJSON *name = aj_need(c, aj_any(item, "name"), f, AJ_STRING);
    snprintf(f, sizeof f, "%s.call_id", field);
    const cJSON *call_id = aj_check(c, aj_any(item, "call_id"), f, AJ_STRING);
    snprintf(f, sizeof f, "%s.arguments", field);
    const cJSON *args_v = aj_check(c, aj_any(item, "arguments"), f, AJ_STRING);
    if (c->failed) return;
    cJSON *args = args_v && *args_v->valuestring ? cJSON_Parse(args_v->valuestring) : cJSON_CreateObject();
    if (!cJSON_IsObject(args)) {
        cJSON_Delete(args);
        aj_fail(c, 400, f, "'%s' is not a JSON object", f);
        return;
    }
    chat_message *m = g->out.n_msgs ? &g->out.msgs[g->out.n_msgs - 1] : NULL;
    if (!m || strcmp(m->role, "assistant")) {
        m = push_turn(g, "assistant");
        if (m && !(m->content = dup_n(c, "", 0))) m = NULL;
    }
    if (m && !m->thinking && g->pending_thinking) {
        m->thinking = g->pending_thinking;
        g->pending_thinking = NULL;
    }
    cJSON *calls = m && m->tool_calls ? cJSON_Parse(m->tool_calls) : cJSON_CreateArray();
    if (!m || !calls) { cJSON_Delete(args); cJSON_Delete(calls); if (!c->failed) aj_fail(c, 500, NULL, "out of memory"); return; }
    cJSON *call = cJSON_CreateObject(), *fn = cJSON_AddObjectToObject(call, "function");
    cJSON_AddStringToObject(fn, "name", name->valuestring);
    cJSON_AddItemToObject(fn, "arguments", args);
    cJSON_AddItemToArray(calls, call);
    free((char *)m->tool_calls);
    m->tool_calls = cJSON_PrintUnformatted(calls);
    cJSON_Delete(calls);
    if (!m->tool_calls) aj_fail(c, 500, NULL, "out of memory");
    if (call_id) {
        cJSON_DeleteItemFromObjectCaseSensitive(g->call_names, call_id->valuestring);
        cJSON_AddStringToObject(g->call_names, call_id->valuestring, name->valuestring);
    }
}

/* A function_call_output item: a role "tool" turn named after the call it answers. */
static void add_function_output(rs_gen *g, const cJSON *item, const char *field) {
    api_req *c = g->out.c;
    char f[80];
    snprintf(f, sizeof f, "%s.call_id", field);
    const cJSON *call_id = aj_need(c, aj_any(item, "call_id"), f, AJ_STRING);
    snprintf(f, sizeof f, "%s.output", field);
    char *text = call_id ? content_text(c, aj_any(item, "output"), f) : NULL;
    if (!text) return;
    chat_message *m = push_turn(g, "tool");
    if (!m) { free(text); return; }
    m->content = text;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(g->call_names, call_id->valuestring);
    if (cJSON_IsString(name)) m->tool_name = dup_n(c, name->valuestring, strlen(name->valuestring));
}

/* A reasoning item: its summary (or content, or encrypted_content: this server's own is the
 * plain text) text, the next assistant turn's thinking. */
static void add_reasoning(rs_gen *g, const cJSON *item, const char *field) {
    api_req *c = g->out.c;
    bytebuf b = {0};
    static const char *const keys[] = {"summary", "content"};
    for (int k = 0; k < 2 && !b.len; k++) {
        char f[80];
        snprintf(f, sizeof f, "%s.%s", field, keys[k]);
        const cJSON *parts = aj_check(c, aj_any(item, keys[k]), f, AJ_ARRAY), *p;
        cJSON_ArrayForEach(p, parts) {
            const cJSON *t = aj_any(p, "text");
            if (!cJSON_IsString(t)) continue;
            if (b.len) bytebuf_add(&b, "\n", 1);
            bytebuf_add(&b, t->valuestring, strlen(t->valuestring));
        }
    }
    char f[80];
    snprintf(f, sizeof f, "%s.encrypted_content", field);
    const cJSON *enc = aj_check(c, aj_any(item, "encrypted_content"), f, AJ_STRING);
    if (!b.len && enc) bytebuf_add(&b, enc->valuestring, strlen(enc->valuestring));
    free(g->pending_thinking);
    g->pending_thinking = !c->failed && b.len ? dup_n(c, b.data, b.len) : NULL;
    bytebuf_free(&b);
}

/* "instructions" and "input" into g->out.q.messages. */
static void read_input(rs_gen *g, const cJSON *body) {
    api_req *c = g->out.c;
    const char *instructions = aj_string(c, body, "instructions");
    const cJSON *input = aj_any(body, "input");
    if (c->failed) return;
    if (!input || (!cJSON_IsString(input) && !cJSON_IsArray(input))) {
        aj_fail(c, 400, "input", "invalid value for field 'input': expected a string or an array of input items");
        return;
    }
    g->cap_msgs = 2 + (cJSON_IsArray(input) ? cJSON_GetArraySize(input) : 0);
    g->out.msgs = calloc((size_t)g->cap_msgs, sizeof *g->out.msgs);
    g->call_names = cJSON_CreateObject();
    if (!g->out.msgs || !g->call_names) { aj_fail(c, 500, NULL, "out of memory"); return; }
    chat_message *m;
    if (instructions && *instructions && (m = push_turn(g, "system")))
        m->content = dup_n(c, instructions, strlen(instructions));
    if (cJSON_IsString(input) && (m = push_turn(g, "user"))) m->content = dup_n(c, input->valuestring, strlen(input->valuestring));
    int i = 0;
    const cJSON *item;
    const cJSON *items = cJSON_IsArray(input) ? input : NULL;
    cJSON_ArrayForEach(item, items) {
        char field[40], f[56];
        snprintf(field, sizeof field, "input[%d]", i++);
        snprintf(f, sizeof f, "%s.type", field);
        if (!aj_need(c, item, field, AJ_OBJECT)) return;
        const cJSON *type_v = aj_check(c, aj_any(item, "type"), f, AJ_STRING);
        const char *type = type_v ? type_v->valuestring : "message";   /* EasyInputMessage: no type */
        if (c->failed) return;
        if (!strcmp(type, "message")) add_message(g, item, field);
        else if (!strcmp(type, "function_call")) add_function_call(g, item, field);
        else if (!strcmp(type, "function_call_output")) add_function_output(g, item, field);
        else if (!strcmp(type, "reasoning")) add_reasoning(g, item, field);
        else if (!strcmp(type, "item_reference"))
            aj_fail(c, 400, f, "item_reference is not supported in '%s': this server stores no items, send them whole", f);
        else aj_fail(c, 400, f, "unsupported input item type '%.40s' in '%s'", type, f);
        if (c->failed) return;
    }
    if (g->pending_thinking && (m = push_turn(g, "assistant"))) {   /* trailing reasoning: its own turn */
        m->content = dup_n(c, "", 0);
        m->thinking = g->pending_thinking;
        g->pending_thinking = NULL;
    }
    if (!c->failed && !g->out.n_msgs) aj_fail(c, 400, "input", "'input' must not be empty");
    g->out.q.messages = g->out.msgs;
    g->out.q.n_messages = g->out.n_msgs;
}

/* One function tool (field names it) into out as Ollama's {"type": "function", "function":
 * {..}}, its name prefixed with a namespace's ("ns.name"); skipped when tool_choice names
 * another or is none. False + failure on a malformed one. */
static bool add_function_tool(api_req *c, const cJSON *t, const char *field, const char *prefix, const char *mode,
                              const char *only, cJSON *out, bool *found) {
    char f[96], name[256];
    snprintf(f, sizeof f, "%s.name", field);
    const cJSON *name_v = aj_need(c, aj_any(t, "name"), f, AJ_STRING);
    snprintf(f, sizeof f, "%s.description", field);
    const cJSON *desc = aj_check(c, aj_any(t, "description"), f, AJ_STRING);
    snprintf(f, sizeof f, "%s.parameters", field);
    const cJSON *params = aj_check(c, aj_any(t, "parameters"), f, AJ_OBJECT);
    if (c->failed) return false;
    if (!*name_v->valuestring) { aj_fail(c, 400, field, "'%s.name' must not be empty", field); return false; }
    snprintf(name, sizeof name, "%s%s%.200s", prefix ? prefix : "", prefix ? "." : "", name_v->valuestring);
    if (!strcmp(mode, "none") || (only && strcmp(only, name))) return true;
    *found = true;
    cJSON *o = cJSON_CreateObject(), *fn;
    cJSON_AddStringToObject(o, "type", "function");
    fn = cJSON_AddObjectToObject(o, "function");
    cJSON_AddStringToObject(fn, "name", name);
    if (desc) cJSON_AddStringToObject(fn, "description", desc->valuestring);
    cJSON_AddItemToObject(fn, "parameters", params ? cJSON_Duplicate(params, true) : cJSON_CreateObject());
    cJSON_AddItemToArray(out, o);
    return true;
}

/* "tools" and "tool_choice" into g->out.q.tools_json: function tools; a namespace's
 * member functions as "namespace.name" (as Ollama); web_search, a tool the server would run,
 * is left out (the model is not offered it); any other type is a 400. */
static void read_tools(rs_gen *g, const cJSON *body) {
    api_req *c = g->out.c;
    const cJSON *tools = aj_array(c, body, "tools");
    const cJSON *choice = aj_any(body, "tool_choice");
    const char *mode = "auto", *only = NULL;
    if (cJSON_IsString(choice)) {
        mode = choice->valuestring;
        if (strcmp(mode, "auto") && strcmp(mode, "none") && strcmp(mode, "required"))
            aj_fail(c, 400, "tool_choice", "invalid value for 'tool_choice': '%.40s' (expected none, auto, required or "
                    "{\"type\": \"function\", \"name\": ...})", mode);
    } else if (cJSON_IsObject(choice)) {
        const char *type = aj_string(c, choice, "type");
        only = aj_string(c, choice, "name");
        mode = "function";
        if (!c->failed && (!type || strcmp(type, "function") || !only || !*only))
            aj_fail(c, 400, "tool_choice", "tool_choice as an object must be {\"type\": \"function\", \"name\": ...}");
    } else if (choice) {
        aj_fail(c, 400, "tool_choice", "invalid value for field 'tool_choice': expected a string or an object");
    }
    if (c->failed) return;
    cJSON *out = cJSON_CreateArray();
    bool found = false;
    int i = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, tools) {
        char field[40], f[64];
        snprintf(field, sizeof field, "tools[%d]", i++);
        if (!aj_need(c, t, field, AJ_OBJECT)) break;
        snprintf(f, sizeof f, "%s.type", field);
        const cJSON *type = aj_need(c, aj_any(t, "type"), f, AJ_STRING);
        if (!type) break;
        const char *ty = type->valuestring;
        if (!strcmp(ty, "function")) {
            if (!add_function_tool(c, t, field, NULL, mode, only, out, &found)) break;
        } else if (!strcmp(ty, "namespace")) {
            snprintf(f, sizeof f, "%s.name", field);
            const cJSON *ns = aj_need(c, aj_any(t, "name"), f, AJ_STRING);
            snprintf(f, sizeof f, "%s.tools", field);
            const cJSON *members = ns ? aj_need(c, aj_any(t, "tools"), f, AJ_ARRAY) : NULL, *m;
            int j = 0;
            cJSON_ArrayForEach(m, members) {
                char mf[80], mtf[96];
                snprintf(mf, sizeof mf, "%s.tools[%d]", field, j++);
                snprintf(mtf, sizeof mtf, "%s.type", mf);
                const cJSON *mt = aj_check(c, aj_any(aj_need(c, m, mf, AJ_OBJECT), "type"), mtf, AJ_STRING);
                if (!c->failed && mt && strcmp(mt->valuestring, "function"))
                    aj_fail(c, 400, mtf, "unsupported tool type '%.60s' in '%s': a namespace holds function tools", mt->valuestring, mtf);
                if (c->failed || !add_function_tool(c, m, mf, ns->valuestring, mode, only, out, &found)) break;
            }
            if (c->failed) break;
        } else if (strcmp(ty, "web_search") && strcmp(ty, "web_search_preview")) {
            aj_fail(c, 400, f, "unsupported tool type '%.60s' in '%s': only function tools (and namespaces of them) exist "
                    "here", ty, f);
            break;
        }
    }
    if (!c->failed && only && !found)
        aj_fail(c, 400, "tool_choice", "tool_choice names the function '%.100s', which is not in 'tools'", only);
    if (!c->failed && cJSON_GetArraySize(out)) {
        g->out.tools_json = cJSON_PrintUnformatted(out);
        if (!g->out.tools_json) aj_fail(c, 500, NULL, "out of memory");
        g->out.q.tools_json = g->out.tools_json;
    }
    cJSON_Delete(out);
}

/* text.format: text (none), json_object, json_schema {schema}: the grammar's format. */
static void read_text_format(rs_gen *g, const cJSON *body) {
    api_req *c = g->out.c;
    const cJSON *text = aj_object(c, body, "text");
    const cJSON *fmt = text ? aj_object(c, text, "format") : NULL;
    const char *type = fmt ? aj_string(c, fmt, "type") : NULL;
    if (c->failed || !type || !strcmp(type, "text")) return;
    if (!strcmp(type, "json_object")) {
        g->out.format = strdup("json");
    } else if (!strcmp(type, "json_schema")) {
        const cJSON *schema = aj_object(c, fmt, "schema");
        if (c->failed) return;
        if (!schema) { aj_fail(c, 400, "text.format.schema", "text.format json_schema needs 'schema' (an object)"); return; }
        g->out.format = cJSON_PrintUnformatted(schema);
    } else {
        aj_fail(c, 400, "text.format.type", "invalid value for 'text.format.type': '%.40s' (expected text, json_object or "
                "json_schema)", type);
        return;
    }
    if (!g->out.format) aj_fail(c, 500, NULL, "out of memory");
    g->out.q.format = g->out.format;
}

static void read_request(rs_gen *g, const cJSON *body) {
    api_req *c = g->out.c;
    g->out.q.model = g->model = aj_model(c, body, false);
    c->stream = aj_bool(c, body, "stream", false);
    if (aj_any(body, "previous_response_id"))
        aj_fail(c, 400, "previous_response_id", "previous_response_id is not supported: this server stores no responses "
                "(send the whole conversation in 'input')");
    if (aj_any(body, "conversation"))
        aj_fail(c, 400, "conversation", "conversation is not supported: this server stores no conversations (send the "
                "whole conversation in 'input')");
    if (aj_bool(c, body, "background", false))
        aj_fail(c, 400, "background", "background responses are not supported (nothing is stored to poll)");
    cJSON *o = g->options = cJSON_CreateObject();
    g->out.q.options = o;
    static const char *const floats[] = {"temperature", "top_p"};
    for (size_t i = 0; i < sizeof floats / sizeof floats[0]; i++)
        if (aj_any(body, floats[i])) cJSON_AddNumberToObject(o, floats[i], aj_number(c, body, floats[i], 0));
    if (aj_any(body, "max_output_tokens"))
        cJSON_AddNumberToObject(o, "num_predict", (double)aj_int(c, body, "max_output_tokens", 0, 1, 1 << 30));
    aj_think(&g->out, body);   /* reasoning.effort */
    read_text_format(g, body);
    read_input(g, body);
    read_tools(g, body);
}

/* ------------------------------------------------------------------ the reply */

static int n_calls(const rs_gen *g) { return g->out.calls ? cJSON_GetArraySize(g->out.calls) : 0; }

static bool incomplete(const rs_gen *g) {
    return !n_calls(g) && g->out.res.done_reason && !strcmp(g->out.res.done_reason, "length");
}

static void item_id(const rs_gen *g, const char *prefix, int index, char *out, size_t cap) {
    snprintf(out, cap, "%s_%s_%d", prefix, g->id + 5, index);
}

static cJSON *text_part(const char *type, const char *text, size_t n, bool with_logprobs) {
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "type", type);
    aj_add_text(p, "text", text, n);
    cJSON_AddArrayToObject(p, "annotations");
    if (with_logprobs) cJSON_AddArrayToObject(p, "logprobs");
    return p;
}

static cJSON *message_item(const char *id, const char *status, const char *text, size_t n, bool with_part) {
    cJSON *it = cJSON_CreateObject();
    cJSON_AddStringToObject(it, "id", id);
    cJSON_AddStringToObject(it, "type", "message");
    cJSON_AddStringToObject(it, "status", status);
    cJSON_AddStringToObject(it, "role", "assistant");
    cJSON *content = cJSON_AddArrayToObject(it, "content");
    if (with_part) cJSON_AddItemToArray(content, text_part("output_text", text, n, true));
    return it;
}

/* A reasoning item; done: its summary, and with encrypted (include
 * "reasoning.encrypted_content") the text as encrypted_content too, as Ollama sends it:
 * what a client sends back for the next turn. */
static cJSON *reasoning_item(const char *id, const char *text, size_t n, bool done, bool encrypted) {
    cJSON *it = cJSON_CreateObject();
    cJSON_AddStringToObject(it, "id", id);
    cJSON_AddStringToObject(it, "type", "reasoning");
    cJSON *summary = cJSON_AddArrayToObject(it, "summary");
    if (done) {
        cJSON *s = cJSON_CreateObject();
        cJSON_AddStringToObject(s, "type", "summary_text");
        aj_add_text(s, "text", text, n);
        cJSON_AddItemToArray(summary, s);
        if (encrypted) aj_add_text(it, "encrypted_content", text, n);
    }
    return it;
}

/* Did the request ask for reasoning.encrypted_content in "include"? */
static bool wants_encrypted(const rs_gen *g) {
    const cJSON *inc = cJSON_GetObjectItemCaseSensitive(g->body, "include"), *v;
    if (!cJSON_IsArray(inc)) return false;
    cJSON_ArrayForEach(v, inc)
        if (cJSON_IsString(v) && !strcmp(v->valuestring, "reasoning.encrypted_content")) return true;
    return false;
}

/* The function_call item of the reply's call i (arguments "" while in progress). */
static cJSON *call_item(const rs_gen *g, int i, int index, bool done) {
    const cJSON *call = cJSON_GetArrayItem(g->out.calls, i);
    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
    char id[80];
    item_id(g, "fc", index, id, sizeof id);
    cJSON *it = cJSON_CreateObject();
    cJSON_AddStringToObject(it, "id", id);
    cJSON_AddStringToObject(it, "type", "function_call");
    cJSON_AddStringToObject(it, "status", done ? "completed" : "in_progress");
    cJSON_AddStringToObject(it, "call_id", cJSON_GetObjectItemCaseSensitive(call, "id")->valuestring);
    cJSON_AddStringToObject(it, "name", cJSON_GetObjectItemCaseSensitive(fn, "name")->valuestring);
    char *args = done ? cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(fn, "arguments")) : NULL;
    cJSON_AddStringToObject(it, "arguments", done ? (args ? args : "{}") : "");
    free(args);
    return it;
}

/* The response object: status, the output items so far (copied), usage when done. */
static cJSON *response_object(const rs_gen *g, const char *status, bool done) {
    const cJSON *body = g->body;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", g->id);
    cJSON_AddStringToObject(o, "object", "response");
    cJSON_AddNumberToObject(o, "created_at", (double)g->created);
    cJSON_AddStringToObject(o, "status", status);
    if (done && !strcmp(status, "incomplete")) {
        cJSON *d = cJSON_AddObjectToObject(o, "incomplete_details");
        cJSON_AddStringToObject(d, "reason", "max_output_tokens");
    } else {
        cJSON_AddNullToObject(o, "incomplete_details");
    }
    cJSON_AddNullToObject(o, "error");
    cJSON_AddStringToObject(o, "model", g->model);
    const cJSON *ins = aj_any(body, "instructions");
    cJSON_AddItemToObject(o, "instructions", ins ? cJSON_Duplicate(ins, true) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "output", g->items ? cJSON_Duplicate(g->items, true) : cJSON_CreateArray());
    const cJSON *tools = aj_any(body, "tools"), *choice = aj_any(body, "tool_choice");
    cJSON_AddItemToObject(o, "tools", tools ? cJSON_Duplicate(tools, true) : cJSON_CreateArray());
    cJSON_AddItemToObject(o, "tool_choice", choice ? cJSON_Duplicate(choice, true) : cJSON_CreateString("auto"));
    cJSON_AddBoolToObject(o, "parallel_tool_calls", true);
    cJSON_AddNullToObject(o, "previous_response_id");
    static const char *const copied[] = {"temperature", "top_p", "max_output_tokens", "reasoning", "text", "metadata"};
    for (size_t i = 0; i < sizeof copied / sizeof copied[0]; i++) {
        const cJSON *v = aj_any(body, copied[i]);
        cJSON_AddItemToObject(o, copied[i], v ? cJSON_Duplicate(v, true) : cJSON_CreateNull());
    }
    cJSON_AddBoolToObject(o, "store", false);
    cJSON_AddStringToObject(o, "truncation", "disabled");
    if (done) {
        const sched_result *res = &g->out.res;
        cJSON *u = cJSON_AddObjectToObject(o, "usage");
        /* OpenAI's split: input_tokens the whole prompt, cached_tokens the part reused */
        cJSON_AddNumberToObject(u, "input_tokens", res->prompt_tokens);
        cJSON_AddNumberToObject(cJSON_AddObjectToObject(u, "input_tokens_details"), "cached_tokens",
                                res->prompt_tokens - res->prompt_eval_count);
        cJSON_AddNumberToObject(u, "output_tokens", res->eval_count);
        cJSON_AddNumberToObject(cJSON_AddObjectToObject(u, "output_tokens_details"), "reasoning_tokens", 0);
        cJSON_AddNumberToObject(u, "total_tokens", res->prompt_tokens + res->eval_count);
    } else {
        cJSON_AddNullToObject(o, "usage");
    }
    return o;
}

/* The whole reply's output: reasoning, the message (unless the reply is only calls), calls. */
static void whole_items(rs_gen *g) {
    char id[80];
    if (g->out.thinking.len) {
        item_id(g, "rs", cJSON_GetArraySize(g->items), id, sizeof id);
        cJSON_AddItemToArray(g->items, reasoning_item(id, bytebuf_str(&g->out.thinking), g->out.thinking.len, true, wants_encrypted(g)));
    }
    if (g->out.text.len || !n_calls(g)) {
        item_id(g, "msg", cJSON_GetArraySize(g->items), id, sizeof id);
        cJSON_AddItemToArray(g->items, message_item(id, incomplete(g) ? "incomplete" : "completed",
                                                    bytebuf_str(&g->out.text), g->out.text.len, true));
    }
    for (int i = 0; i < n_calls(g); i++)
        cJSON_AddItemToArray(g->items, call_item(g, i, cJSON_GetArraySize(g->items), true));
}

/* ------------------------------------------------------------------ the stream */

static bool send_event(rs_gen *g, const char *type, cJSON *e) {
    cJSON_AddStringToObject(e, "type", type);
    cJSON_AddNumberToObject(e, "sequence_number", g->seq++);
    return aj_send(g->out.c, e);
}

/* An event about the open item: item_id and output_index set. */
static cJSON *item_event(const rs_gen *g) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "item_id", g->open_id);
    cJSON_AddNumberToObject(e, "output_index", cJSON_GetArraySize(g->items));
    return e;
}

static bool send_item(rs_gen *g, const char *type, cJSON *item) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddNumberToObject(e, "output_index", cJSON_GetArraySize(g->items));
    cJSON_AddItemToObject(e, "item", item);
    return send_event(g, type, e);
}

/* response.created and response.in_progress, once, before anything else. */
static bool send_start(rs_gen *g) {
    if (g->seq) return true;
    cJSON *e = cJSON_CreateObject();
    cJSON_AddItemToObject(e, "response", response_object(g, "in_progress", false));
    bool ok = send_event(g, "response.created", e);
    e = cJSON_CreateObject();
    cJSON_AddItemToObject(e, "response", response_object(g, "in_progress", false));
    return ok && send_event(g, "response.in_progress", e);
}

/* Closes the open item: its done events, then it joins the finished items. */
static bool close_item(rs_gen *g, const char *status) {
    if (g->open == ITEM_NONE) return true;
    const char *text = bytebuf_str(&g->acc);
    size_t n = g->acc.len;
    bool ok = true;
    cJSON *item, *e;
    if (g->open == ITEM_REASONING) {
        e = item_event(g);
        cJSON_AddNumberToObject(e, "summary_index", 0);
        aj_add_text(e, "text", text, n);
        ok = send_event(g, "response.reasoning_summary_text.done", e);
        e = item_event(g);
        cJSON_AddNumberToObject(e, "summary_index", 0);
        cJSON *part = cJSON_AddObjectToObject(e, "part");
        cJSON_AddStringToObject(part, "type", "summary_text");
        aj_add_text(part, "text", text, n);
        ok = ok && send_event(g, "response.reasoning_summary_part.done", e);
        item = reasoning_item(g->open_id, text, n, true, wants_encrypted(g));
    } else {
        e = item_event(g);
        cJSON_AddNumberToObject(e, "content_index", 0);
        aj_add_text(e, "text", text, n);
        cJSON_AddArrayToObject(e, "logprobs");
        ok = send_event(g, "response.output_text.done", e);
        e = item_event(g);
        cJSON_AddNumberToObject(e, "content_index", 0);
        cJSON_AddItemToObject(e, "part", text_part("output_text", text, n, true));
        ok = ok && send_event(g, "response.content_part.done", e);
        item = message_item(g->open_id, status, text, n, true);
    }
    ok = ok && send_item(g, "response.output_item.done", cJSON_Duplicate(item, true));
    cJSON_AddItemToArray(g->items, item);
    g->open = ITEM_NONE;
    bytebuf_free(&g->acc);
    return ok;
}

static bool open_item(rs_gen *g, int kind) {
    if (g->open == kind) return true;
    bool ok = close_item(g, "completed");
    int index = cJSON_GetArraySize(g->items);
    item_id(g, kind == ITEM_REASONING ? "rs" : "msg", index, g->open_id, sizeof g->open_id);
    g->open = kind;
    if (kind == ITEM_REASONING) {
        ok = ok && send_item(g, "response.output_item.added", reasoning_item(g->open_id, "", 0, false, false));
        cJSON *e = item_event(g), *part;
        cJSON_AddNumberToObject(e, "summary_index", 0);
        part = cJSON_AddObjectToObject(e, "part");
        cJSON_AddStringToObject(part, "type", "summary_text");
        cJSON_AddStringToObject(part, "text", "");
        return ok && send_event(g, "response.reasoning_summary_part.added", e);
    }
    ok = ok && send_item(g, "response.output_item.added", message_item(g->open_id, "in_progress", "", 0, false));
    cJSON *e = item_event(g);
    cJSON_AddNumberToObject(e, "content_index", 0);
    cJSON_AddItemToObject(e, "part", text_part("output_text", "", 0, true));
    return ok && send_event(g, "response.content_part.added", e);
}

static bool emit_calls(rs_gen *g) {
    bool ok = true;
    for (; ok && g->n_calls_sent < n_calls(g); g->n_calls_sent++) {
        ok = close_item(g, "completed");
        int index = cJSON_GetArraySize(g->items);
        cJSON *done = call_item(g, g->n_calls_sent, index, true);
        const char *args = cJSON_GetObjectItemCaseSensitive(done, "arguments")->valuestring;
        snprintf(g->open_id, sizeof g->open_id, "%s", cJSON_GetObjectItemCaseSensitive(done, "id")->valuestring);
        ok = ok && send_item(g, "response.output_item.added", call_item(g, g->n_calls_sent, index, false));
        cJSON *e = item_event(g);
        cJSON_AddStringToObject(e, "delta", args);
        ok = ok && send_event(g, "response.function_call_arguments.delta", e);
        e = item_event(g);
        cJSON_AddStringToObject(e, "name", cJSON_GetObjectItemCaseSensitive(done, "name")->valuestring);
        cJSON_AddStringToObject(e, "arguments", args);
        ok = ok && send_event(g, "response.function_call_arguments.done", e);
        ok = ok && send_item(g, "response.output_item.done", cJSON_Duplicate(done, true));
        cJSON_AddItemToArray(g->items, done);
    }
    return ok;
}

/* What one piece of the reply yields: reasoning and text deltas into an item of their
 * kind (the other kind's closed first), each new call a whole function_call item. */
static bool emit(aj_gen *out, const reply_delta *d) {
    rs_gen *g = (rs_gen *)out;
    bool ok = send_start(g);
    if (ok && d->thinking.len) {
        ok = open_item(g, ITEM_REASONING);
        bytebuf_add(&g->acc, bytebuf_str(&d->thinking), d->thinking.len);
        cJSON *e = item_event(g);
        cJSON_AddNumberToObject(e, "summary_index", 0);
        aj_add_text(e, "delta", bytebuf_str(&d->thinking), d->thinking.len);
        ok = ok && send_event(g, "response.reasoning_summary_text.delta", e);
    }
    if (ok && d->content.len) {
        ok = open_item(g, ITEM_MESSAGE);
        bytebuf_add(&g->acc, bytebuf_str(&d->content), d->content.len);
        cJSON *e = item_event(g);
        cJSON_AddNumberToObject(e, "content_index", 0);
        aj_add_text(e, "delta", bytebuf_str(&d->content), d->content.len);
        cJSON_AddArrayToObject(e, "logprobs");
        ok = ok && send_event(g, "response.output_text.delta", e);
    }
    return ok && emit_calls(g) && !g->acc.oom;
}

static void send_stream_end(rs_gen *g) {
    const char *status = incomplete(g) ? "incomplete" : "completed";
    bool ok = send_start(g) && emit_calls(g) && close_item(g, status);
    if (ok) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToObject(e, "response", response_object(g, status, true));
        ok = send_event(g, !strcmp(status, "completed") ? "response.completed" : "response.incomplete", e);
    }
    if (ok) aj_end(g->out.c);
    else http_stream_end(g->out.c->r);
}

/* ------------------------------------------------------------------ the route */

void oai_responses(http_req *r) {
    api_images images = {0};
    api_req c = {.r = r, .openai = true, .sse_named = true, .images = &images};
    cJSON *body = aj_parse_body(&c);
    if (!body) return;
    rs_gen g = {.out = {.c = &c, .emit = emit}, .body = body, .created = aj_unix_seconds(), .items = cJSON_CreateArray()};
    char a[16], b[16], d[16];
    aj_call_id(a);
    aj_call_id(b);
    aj_call_id(d);
    snprintf(g.id, sizeof g.id, "resp_%s%s%s", a + 5, b + 5, d + 5);
    read_request(&g, body);
    if (!c.failed && aj_generate(&g.out)) {
        if (c.stream) {
            send_stream_end(&g);
        } else {
            whole_items(&g);
            aj_reply(r, 200, response_object(&g, incomplete(&g) ? "incomplete" : "completed", true));
        }
    }
    aj_gen_clear(&g.out);
    cJSON_Delete(g.options);
    cJSON_Delete(g.call_names);
    cJSON_Delete(g.items);
    free(g.pending_thinking);
    bytebuf_free(&g.acc);
    api_images_free(&images);
    cJSON_Delete(body);
}
