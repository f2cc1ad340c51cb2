/* api_anthropic: Anthropic's Messages API on the chat path: POST /v1/messages (whole, or
 * streamed as named SSE events: message_start, ping, content_block_start / _delta
 * (text_delta, thinking_delta, input_json_delta) / _stop, message_delta, message_stop)
 * and POST /v1/messages/count_tokens. A request becomes the scheduler's chat request:
 * system (a string or text blocks) the system message; messages' content blocks the turns
 * (a role "system" message among them a system turn)
 * (text, thinking, tool_use as the assistant's tool calls, each tool_result a role "tool"
 * turn before the user's text, named after its tool_use); tools' input_schema the function
 * parameters; thinking {type: enabled|disabled} (or output_config.effort) the think switch;
 * output_config.format's json_schema the grammar; max_tokens, stop_sequences, temperature,
 * top_p, top_k Ollama's options. The reply is thinking, text
 * and tool_use blocks (ids toolu_..., input the parsed object), stop_reason end_turn,
 * max_tokens, stop_sequence (with the stop_sequence that matched) or tool_use, and usage.
 * Errors are Anthropic's {"type":"error","error":{"type","message"}} (api_error.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_error.h"
#include "api_images.h"
#include "api_json.h"

enum { BLOCK_NONE, BLOCK_THINKING, BLOCK_TEXT, BLOCK_TOOL_USE };

typedef struct {
    aj_gen out;            /* first: the stream emitter gets the whole struct as an aj_gen */
    const char *model;
    char id[40];           /* msg_ + 24 hex */
    cJSON *options;        /* out.q.options */
    cJSON *tool_names;     /* tool_use id -> tool name, from the assistant turns */
    const cJSON *stops;    /* the request's stop_sequences (an array of strings) or NULL */
    int cap_msgs;
    /* the stream */
    bool started;          /* message_start sent */
    int index;             /* the index of the block open now, or of the next one */
    int open;              /* BLOCK_* open now */
    int n_calls_sent;
} an_gen;

/* ------------------------------------------------------------------ the request */

/* A new turn at the end of g->out.msgs (the array is sized for every block). */
static chat_message *push_turn(an_gen *g, const char *role) {
    if (g->out.n_msgs >= g->cap_msgs) return NULL;
    chat_message *m = &g->out.msgs[g->out.n_msgs++];
    *m = (chat_message){.role = role};
    return m;
}

static char *dup_or_fail(api_req *c, const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (!d) { aj_fail(c, 500, NULL, "out of memory"); return NULL; }
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

/* Appends the text of a text block (field names it) to b, a newline between blocks. */
static void add_text_block(api_req *c, const cJSON *block, const char *field, bytebuf *b) {
    char f[320];
    snprintf(f, sizeof f, "%s.text", field);
    const cJSON *t = aj_need(c, aj_any(block, "text"), f, AJ_STRING);
    if (!t) return;
    if (b->len && *t->valuestring) bytebuf_add(b, "\n", 1);
    bytebuf_add(b, t->valuestring, strlen(t->valuestring));
}

/* The type of content block v (an object); NULL + failure. */
static const char *block_type(api_req *c, const cJSON *v, const char *field) {
    char f[320];
    snprintf(f, sizeof f, "%s.type", field);
    const cJSON *t = aj_need(c, aj_any(aj_need(c, v, field, AJ_OBJECT), "type"), f, AJ_STRING);
    return t ? t->valuestring : NULL;
}

static void refuse_media(api_req *c, const char *type, const char *field) {
    aj_fail(c, 400, field, "%s input is not supported in '%s'", type, field);
}

/* An image block {"type": "image", "source": {"type": "base64", "media_type": "image/png",
 * "data": ...}}: the image into c->images, its marker into b where the block stands. A "url"
 * source is refused (the server fetches nothing), as Ollama refuses image URLs. */
static void add_image_block(api_req *c, const cJSON *block, const char *field, bytebuf *b) {
    char f[320], tf[336];
    snprintf(f, sizeof f, "%s.source", field);
    const cJSON *src = aj_need(c, aj_any(block, "source"), f, AJ_OBJECT);
    snprintf(tf, sizeof tf, "%s.type", f);
    const cJSON *st = aj_need(c, aj_any(src, "type"), tf, AJ_STRING);
    if (!st) return;
    if (strcmp(st->valuestring, "base64")) {
        aj_fail(c, 400, tf, "image source type '%.40s' is not supported in '%s': send the image as base64", st->valuestring, tf);
        return;
    }
    snprintf(tf, sizeof tf, "%s.media_type", f);
    const cJSON *mt = aj_need(c, aj_any(src, "media_type"), tf, AJ_STRING);
    if (mt && strcmp(mt->valuestring, "image/jpeg") && strcmp(mt->valuestring, "image/png") &&
        strcmp(mt->valuestring, "image/gif") && strcmp(mt->valuestring, "image/webp"))
        aj_fail(c, 400, tf, "invalid media_type '%.40s' in '%s': expected image/jpeg, image/png, image/gif or image/webp",
                mt->valuestring, tf);
    snprintf(tf, sizeof tf, "%s.data", f);
    const cJSON *data = aj_need(c, aj_any(src, "data"), tf, AJ_STRING);
    int i = data ? api_images_add_base64(c, data->valuestring, tf) : -1;
    if (i < 0) return;
    char mk[API_IMAGE_MARKER_MAX];
    api_image_marker(i, mk);
    if (b->len) bytebuf_add(b, "\n", 1);
    bytebuf_add(b, mk, strlen(mk));
}

/* Text of a string, or of an array of text blocks (field names it); malloc'd, NULL + failure. */
static char *text_of(api_req *c, const cJSON *v, const char *field) {
    if (!v) return dup_or_fail(c, "", 0);
    if (cJSON_IsString(v)) return dup_or_fail(c, v->valuestring, strlen(v->valuestring));
    if (!cJSON_IsArray(v)) {
        aj_fail(c, 400, field, "invalid value for field '%s': expected a string or an array of content blocks", field);
        return NULL;
    }
    bytebuf b = {0};
    int j = 0;
    const cJSON *block;
    cJSON_ArrayForEach(block, v) {
        char f[256];
        snprintf(f, sizeof f, "%s[%d]", field, j++);
        const char *type = block_type(c, block, f);
        if (!type) break;
        if (!strcmp(type, "text")) add_text_block(c, block, f, &b);
        else if (!strcmp(type, "image")) add_image_block(c, block, f, &b);
        else if (!strcmp(type, "document")) refuse_media(c, type, f);
        else aj_fail(c, 400, f, "unsupported content block type '%.40s' in '%s' (expected text)", type, f);
        if (c->failed) break;
    }
    char *out = c->failed ? NULL : b.oom ? (aj_fail(c, 500, NULL, "out of memory"), NULL)
                                         : dup_or_fail(c, b.data ? b.data : "", b.len);
    bytebuf_free(&b);
    return out;
}

/* A tool_result block: a role "tool" turn, named after the tool_use it answers; an error
 * result (is_error) says so in its text. */
static void add_tool_result(an_gen *g, const cJSON *block, const char *field) {
    api_req *c = g->out.c;
    char f[192];
    snprintf(f, sizeof f, "%s.tool_use_id", field);
    const cJSON *id = aj_need(c, aj_any(block, "tool_use_id"), f, AJ_STRING);
    snprintf(f, sizeof f, "%s.is_error", field);
    const cJSON *is_error = aj_check(c, aj_any(block, "is_error"), f, AJ_BOOL);
    snprintf(f, sizeof f, "%s.content", field);
    char *text = id ? text_of(c, aj_any(block, "content"), f) : NULL;
    if (!text) return;
    if (cJSON_IsTrue(is_error)) {
        size_t n = strlen(text);
        char *e = malloc(n + 8);
        if (!e) { free(text); aj_fail(c, 500, NULL, "out of memory"); return; }
        memcpy(e, "Error: ", 7);
        memcpy(e + 7, text, n + 1);
        free(text);
        text = e;
    }
    chat_message *m = push_turn(g, "tool");
    if (!m) { free(text); aj_fail(c, 500, NULL, "too many turns"); return; }
    m->content = text;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(g->tool_names, id->valuestring);
    if (cJSON_IsString(name) && !(m->tool_name = dup_or_fail(c, name->valuestring, strlen(name->valuestring)))) return;
}

/* A tool_use block into calls (Ollama's shape {"function": {"name", "arguments"}}). */
static void add_tool_use(an_gen *g, const cJSON *block, const char *field, cJSON *calls) {
    api_req *c = g->out.c;
    char f[192];
    snprintf(f, sizeof f, "%s.id", field);
    const cJSON *id = aj_need(c, aj_any(block, "id"), f, AJ_STRING);
    snprintf(f, sizeof f, "%s.name", field);
    const cJSON *name = aj_need(c, aj_any(block, "name"), f, AJ_STRING);
    snprintf(f, sizeof f, "%s.input", field);
    const cJSON *input = aj_check(c, aj_any(block, "input"), f, AJ_OBJECT);
    if (c->failed) return;
    if (!*name->valuestring) { aj_fail(c, 400, f, "'%s.name' must not be empty", field); return; }
    cJSON *call = cJSON_CreateObject(), *fn = cJSON_AddObjectToObject(call, "function");
    cJSON_AddStringToObject(fn, "name", name->valuestring);
    cJSON_AddItemToObject(fn, "arguments", input ? cJSON_Duplicate(input, true) : cJSON_CreateObject());
    cJSON_AddItemToArray(calls, call);
    cJSON_DeleteItemFromObjectCaseSensitive(g->tool_names, id->valuestring);
    cJSON_AddStringToObject(g->tool_names, id->valuestring, name->valuestring);
}

/* One message of "messages": its tool results (user) as tool turns, then its text,
 * thinking and tool calls (assistant) as one turn. */
static void read_message(an_gen *g, const cJSON *msg, int i) {
    api_req *c = g->out.c;
    char field[48], f[80];
    snprintf(field, sizeof field, "messages[%d]", i);
    snprintf(f, sizeof f, "%s.role", field);
    const cJSON *role_v = aj_need(c, aj_any(aj_need(c, msg, field, AJ_OBJECT), "role"), f, AJ_STRING);
    if (!role_v) return;
    if (!strcmp(role_v->valuestring, "system")) {   /* a system message among the turns: its text */
        snprintf(f, sizeof f, "%s.content", field);
        char *text = text_of(c, aj_any(msg, "content"), f);
        chat_message *m = text ? push_turn(g, "system") : NULL;
        if (m) m->content = text;
        else if (text) { free(text); aj_fail(c, 500, NULL, "too many turns"); }
        return;
    }
    const bool user = !strcmp(role_v->valuestring, "user");
    if (!user && strcmp(role_v->valuestring, "assistant")) {
        aj_fail(c, 400, f, "invalid role '%.40s' in '%s': expected user, assistant or system", role_v->valuestring, f);
        return;
    }
    snprintf(f, sizeof f, "%s.content", field);
    const cJSON *content = aj_any(msg, "content");
    if (!content || (!cJSON_IsString(content) && !cJSON_IsArray(content))) {
        aj_fail(c, 400, f, "invalid value for field '%s': expected a string or an array of content blocks", f);
        return;
    }
    bytebuf text = {0}, thinking = {0};
    cJSON *calls = cJSON_CreateArray();
    const int n_before = g->out.n_msgs;
    if (cJSON_IsString(content)) bytebuf_add(&text, content->valuestring, strlen(content->valuestring));
    int j = 0;
    const cJSON *block;
    const cJSON *blocks = cJSON_IsArray(content) ? content : NULL;
    cJSON_ArrayForEach(block, blocks) {
        char bf[112];
        snprintf(bf, sizeof bf, "%s[%d]", f, j++);
        const char *type = block_type(c, block, bf);
        if (!type) break;
        if (!strcmp(type, "text")) {
            add_text_block(c, block, bf, &text);
        } else if (!strcmp(type, "image")) {
            add_image_block(c, block, bf, &text);
        } else if (!strcmp(type, "document")) {
            refuse_media(c, type, bf);
        } else if (!strcmp(type, "thinking")) {
            char tf[160];
            snprintf(tf, sizeof tf, "%s.thinking", bf);
            const cJSON *t = aj_need(c, aj_any(block, "thinking"), tf, AJ_STRING);
            if (t) bytebuf_add(&thinking, t->valuestring, strlen(t->valuestring));
        } else if (!strcmp(type, "redacted_thinking")) {
            /* encrypted reasoning of another model: nothing to render */
        } else if (!strcmp(type, "tool_use") && !user) {
            add_tool_use(g, block, bf, calls);
        } else if (!strcmp(type, "tool_result") && user) {
            add_tool_result(g, block, bf);
        } else if (!strcmp(type, "tool_use") || !strcmp(type, "tool_result")) {
            aj_fail(c, 400, bf, "a %s block belongs in %s message ('%s')", type,
                    user ? "an assistant" : "a user", bf);
        } else {
            aj_fail(c, 400, bf, "unsupported content block type '%.40s' in '%s'", type, bf);
        }
        if (c->failed) break;
    }
    const int n_calls = cJSON_GetArraySize(calls);
    if (!c->failed && (text.oom || thinking.oom)) aj_fail(c, 500, NULL, "out of memory");
    /* a user turn of only tool results is those results; an empty assistant turn is dropped */
    const bool only_results = g->out.n_msgs > n_before && !text.len;
    if (!c->failed && !only_results && (user || text.len || thinking.len || n_calls)) {
        chat_message *m = push_turn(g, user ? "user" : "assistant");
        if (!m) aj_fail(c, 500, NULL, "too many turns");
        else if ((m->content = dup_or_fail(c, text.data ? text.data : "", text.len)) && thinking.len)
            m->thinking = dup_or_fail(c, thinking.data, thinking.len);
        if (m && !c->failed && n_calls && !(m->tool_calls = cJSON_PrintUnformatted(calls)))
            aj_fail(c, 500, NULL, "out of memory");
    }
    cJSON_Delete(calls);
    bytebuf_free(&text);
    bytebuf_free(&thinking);
}

/* "system" and "messages" into g->out.q.messages. */
static void read_conversation(an_gen *g, const cJSON *body) {
    api_req *c = g->out.c;
    const cJSON *msgs = aj_array(c, body, "messages");
    if (c->failed) return;
    if (!cJSON_GetArraySize(msgs)) { aj_fail(c, 400, "messages", "'messages' must be a non-empty array"); return; }
    int cap = 1;   /* the system turn, then at most one turn per message and per block */
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs) {
        const cJSON *content = aj_any(m, "content");
        cap += 1 + (cJSON_IsArray(content) ? cJSON_GetArraySize(content) : 0);
    }
    g->out.msgs = calloc((size_t)cap, sizeof *g->out.msgs);
    g->tool_names = cJSON_CreateObject();
    if (!g->out.msgs || !g->tool_names) { aj_fail(c, 500, NULL, "out of memory"); return; }
    g->cap_msgs = cap;
    const cJSON *sys = aj_any(body, "system");
    if (sys) {
        char *text = text_of(c, sys, "system");
        if (!text) return;
        chat_message *t = push_turn(g, "system");
        t->content = text;
    }
    int i = 0;
    cJSON_ArrayForEach(m, msgs) {
        read_message(g, m, i++);
        if (c->failed) return;
    }
    g->out.q.messages = g->out.msgs;
    g->out.q.n_messages = g->out.n_msgs;
}

/* "tools" ({name, description, input_schema}, custom tools only) and "tool_choice"
 * (auto, any: the tools as given; tool: only the named one; none: no tools) into
 * g->out.q.tools_json, as function tools. */
static void read_tools(an_gen *g, const cJSON *body) {
    api_req *c = g->out.c;
    const cJSON *tools = aj_array(c, body, "tools");
    const cJSON *choice = aj_object(c, body, "tool_choice");
    const char *mode = choice ? aj_string(c, choice, "type") : "auto";
    const char *only = choice ? aj_string(c, choice, "name") : NULL;
    if (c->failed) return;
    if (!mode || (strcmp(mode, "auto") && strcmp(mode, "any") && strcmp(mode, "tool") && strcmp(mode, "none"))) {
        aj_fail(c, 400, "tool_choice.type", "invalid value for 'tool_choice.type': '%.40s' (expected auto, any, tool or none)",
                mode ? mode : "");
        return;
    }
    if (!strcmp(mode, "tool") && (!only || !*only)) {
        aj_fail(c, 400, "tool_choice.name", "tool_choice of type \"tool\" needs 'tool_choice.name'");
        return;
    }
    cJSON *out = cJSON_CreateArray();
    bool found = false;
    int i = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, tools) {
        char field[40], f[64];
        snprintf(field, sizeof field, "tools[%d]", i++);
        if (!aj_need(c, t, field, AJ_OBJECT)) break;
        snprintf(f, sizeof f, "%s.type", field);
        const cJSON *type = aj_check(c, aj_any(t, "type"), f, AJ_STRING);
        if (type && strcmp(type->valuestring, "custom")) {
            aj_fail(c, 400, f, "unsupported tool type '%.60s' in '%s': only custom tools (name, description, "
                    "input_schema) exist here, no server tools", type->valuestring, f);
            break;
        }
        snprintf(f, sizeof f, "%s.name", field);
        const cJSON *name = aj_need(c, aj_any(t, "name"), f, AJ_STRING);
        snprintf(f, sizeof f, "%s.description", field);
        const cJSON *desc = aj_check(c, aj_any(t, "description"), f, AJ_STRING);
        snprintf(f, sizeof f, "%s.input_schema", field);
        const cJSON *schema = aj_need(c, aj_any(t, "input_schema"), f, AJ_OBJECT);
        if (c->failed) break;
        if (!*name->valuestring) { aj_fail(c, 400, field, "'%s.name' must not be empty", field); break; }
        if (!strcmp(mode, "none") || (only && strcmp(mode, "tool") == 0 && strcmp(only, name->valuestring))) continue;
        found = true;
        cJSON *o = cJSON_CreateObject(), *fn;
        cJSON_AddStringToObject(o, "type", "function");
        fn = cJSON_AddObjectToObject(o, "function");
        cJSON_AddStringToObject(fn, "name", name->valuestring);
        if (desc) cJSON_AddStringToObject(fn, "description", desc->valuestring);
        cJSON_AddItemToObject(fn, "parameters", cJSON_Duplicate(schema, true));
        cJSON_AddItemToArray(out, o);
    }
    if (!c->failed && !strcmp(mode, "tool") && !found)
        aj_fail(c, 400, "tool_choice.name", "tool_choice names '%.100s', which is not in 'tools'", only);
    if (!c->failed && cJSON_GetArraySize(out)) {
        g->out.tools_json = cJSON_PrintUnformatted(out);
        if (!g->out.tools_json) aj_fail(c, 500, NULL, "out of memory");
        g->out.q.tools_json = g->out.tools_json;
    }
    cJSON_Delete(out);
}

/* "thinking": {"type": "enabled", "budget_tokens": N} turns the model's thinking on
 * (the budget is not enforced), "disabled" off; without it output_config.effort (low,
 * medium, high, xhigh, max) turns it on at that level, as Ollama does; else the model's
 * default. */
static void read_thinking(an_gen *g, const cJSON *body) {
    api_req *c = g->out.c;
    const cJSON *th = aj_object(c, body, "thinking");
    const char *type = th ? aj_string(c, th, "type") : NULL;
    if (th) aj_int(c, th, "budget_tokens", 0, 0, 1 << 30);
    const cJSON *oc = aj_object(c, body, "output_config");
    const char *effort = oc ? aj_string(c, oc, "effort") : NULL;
    g->out.q.think = CHAT_THINK_DEFAULT;
    if (c->failed) return;
    if (th) {
        if (type && (!strcmp(type, "enabled") || !strcmp(type, "adaptive"))) g->out.q.think = CHAT_THINK_ON;
        else if (type && !strcmp(type, "disabled")) g->out.q.think = CHAT_THINK_OFF;
        else aj_fail(c, 400, "thinking.type", "invalid value for 'thinking.type': expected enabled or disabled");
    } else if (effort) {
        static const struct { const char *name; int think; } lv[] = {
            {"low", CHAT_THINK_LOW}, {"medium", CHAT_THINK_MEDIUM}, {"high", CHAT_THINK_HIGH},
            {"xhigh", CHAT_THINK_HIGH}, {"max", CHAT_THINK_HIGH}};
        for (size_t i = 0; i < sizeof lv / sizeof lv[0] && g->out.q.think == CHAT_THINK_DEFAULT; i++)
            if (!strcmp(effort, lv[i].name)) g->out.q.think = lv[i].think;
        if (g->out.q.think == CHAT_THINK_DEFAULT)
            aj_fail(c, 400, "output_config.effort", "invalid value for 'output_config.effort': expected low, medium, high, "
                    "xhigh or max");
    }
}

/* output_config.format {"type": "json_schema", "schema": {...}}: the grammar's format. */
static void read_output_format(an_gen *g, const cJSON *body) {
    api_req *c = g->out.c;
    const cJSON *oc = aj_object(c, body, "output_config");
    const cJSON *fmt = oc ? aj_object(c, oc, "format") : NULL;
    const char *type = fmt ? aj_string(c, fmt, "type") : NULL;
    if (c->failed || !fmt) return;
    const cJSON *schema = aj_object(c, fmt, "schema");
    if (c->failed) return;
    if (!type || strcmp(type, "json_schema") || !schema) {
        aj_fail(c, 400, "output_config.format", "output_config.format must be {\"type\": \"json_schema\", \"schema\": {...}}");
        return;
    }
    if (!(g->out.format = cJSON_PrintUnformatted(schema))) aj_fail(c, 500, NULL, "out of memory");
    g->out.q.format = g->out.format;
}

/* max_tokens (required), temperature, top_p, top_k, stop_sequences: Ollama's options. */
static void read_options(an_gen *g, const cJSON *body) {
    api_req *c = g->out.c;
    cJSON *o = g->options = cJSON_CreateObject();
    if (!o) { aj_fail(c, 500, NULL, "out of memory"); return; }
    g->out.q.options = o;
    if (!aj_any(body, "max_tokens")) { aj_fail(c, 400, "max_tokens", "max_tokens: Field required"); return; }
    cJSON_AddNumberToObject(o, "num_predict", (double)aj_int(c, body, "max_tokens", 0, 1, 1 << 30));
    static const char *const floats[] = {"temperature", "top_p"};
    for (size_t i = 0; i < sizeof floats / sizeof floats[0]; i++)
        if (aj_any(body, floats[i])) cJSON_AddNumberToObject(o, floats[i], aj_number(c, body, floats[i], 0));
    if (aj_any(body, "top_k")) cJSON_AddNumberToObject(o, "top_k", (double)aj_int(c, body, "top_k", 0, 0, 1 << 30));
    int n = 0;
    const char **stops = aj_strings(c, body, "stop_sequences", &n);
    if (stops && n) {
        cJSON_AddItemToObject(o, "stop", cJSON_CreateStringArray(stops, n));
        g->stops = aj_any(body, "stop_sequences");
    }
    free(stops);
}

static void random_id(char *out, size_t cap, const char *prefix) {
    char a[16], b[16], d[16];
    aj_call_id(a);
    aj_call_id(b);
    aj_call_id(d);
    snprintf(out, cap, "%s%s%s%s", prefix, a + 5, b + 5, d + 5);   /* "call_" + 8 hex, three times */
}

/* ------------------------------------------------------------------ the reply */

/* The tool_use id of call i of the reply: toolu_ + the message's and the call's hex. */
static void tool_use_id(const an_gen *g, int i, char *out, size_t cap) {
    const cJSON *call = cJSON_GetArrayItem(g->out.calls, i);
    const char *id = cJSON_GetObjectItemCaseSensitive(call, "id")->valuestring;
    snprintf(out, cap, "toolu_%s%s", g->id + 4, id + 5);
}

static const char *call_name(const an_gen *g, int i) {
    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(g->out.calls, i), "function");
    return cJSON_GetObjectItemCaseSensitive(fn, "name")->valuestring;
}

static const cJSON *call_args(const an_gen *g, int i) {
    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(g->out.calls, i), "function");
    return cJSON_GetObjectItemCaseSensitive(fn, "arguments");
}

static int n_calls(const an_gen *g) { return g->out.calls ? cJSON_GetArraySize(g->out.calls) : 0; }

/* stop_reason, and in *seq the stop_sequence (one of the request's) or NULL. */
static const char *stop_reason(const an_gen *g, const char **seq) {
    *seq = NULL;
    if (n_calls(g)) return "tool_use";
    const char *hit = g->out.res.stop_sequence;
    const cJSON *s, *stops = hit ? g->stops : NULL;
    cJSON_ArrayForEach(s, stops)
        if (cJSON_IsString(s) && !strcmp(s->valuestring, hit)) { *seq = s->valuestring; return "stop_sequence"; }
    const char *dr = g->out.res.done_reason;
    return dr && !strcmp(dr, "length") ? "max_tokens" : "end_turn";
}

/* usage: input_tokens those evaluated, cache_read_input_tokens those reused from the cache
 * (Anthropic's split: the prompt is their sum), output_tokens; res NULL: all 0. */
static void add_usage(cJSON *o, const sched_result *res) {
    cJSON *u = cJSON_AddObjectToObject(o, "usage");
    int evaluated = res ? res->prompt_eval_count : 0, cached = res ? res->prompt_tokens - res->prompt_eval_count : 0;
    cJSON_AddNumberToObject(u, "input_tokens", evaluated);
    cJSON_AddNumberToObject(u, "cache_creation_input_tokens", 0);
    cJSON_AddNumberToObject(u, "cache_read_input_tokens", cached > 0 ? cached : 0);
    cJSON_AddNumberToObject(u, "output_tokens", res ? res->eval_count : 0);
}

static void add_nullable(cJSON *o, const char *key, const char *v) {
    if (v) cJSON_AddStringToObject(o, key, v);
    else cJSON_AddNullToObject(o, key);
}

/* The message object: content blocks given (NULL: an empty array), stop reason or null. */
static cJSON *message_object(const an_gen *g, cJSON *content, const char *reason, const char *seq, const sched_result *res) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", g->id);
    cJSON_AddStringToObject(o, "type", "message");
    cJSON_AddStringToObject(o, "role", "assistant");
    cJSON_AddStringToObject(o, "model", g->model);
    cJSON_AddItemToObject(o, "content", content ? content : cJSON_CreateArray());
    add_nullable(o, "stop_reason", reason);
    add_nullable(o, "stop_sequence", seq);
    add_usage(o, res);
    return o;
}

static cJSON *thinking_block(const char *text, size_t n) {
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "type", "thinking");
    aj_add_text(b, "thinking", text, n);
    cJSON_AddStringToObject(b, "signature", "");
    return b;
}

static cJSON *text_block(const char *text, size_t n) {
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "type", "text");
    aj_add_text(b, "text", text, n);
    return b;
}

/* A tool_use block of call i; input: the arguments, or an empty object (a stream start). */
static cJSON *tool_use_block(const an_gen *g, int i, bool with_input) {
    char id[64];
    tool_use_id(g, i, id, sizeof id);
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "type", "tool_use");
    cJSON_AddStringToObject(b, "id", id);
    cJSON_AddStringToObject(b, "name", call_name(g, i));
    const cJSON *args = call_args(g, i);
    cJSON_AddItemToObject(b, "input", with_input && args ? cJSON_Duplicate(args, true) : cJSON_CreateObject());
    return b;
}

static cJSON *whole_message(const an_gen *g) {
    cJSON *content = cJSON_CreateArray();
    if (g->out.thinking.len) cJSON_AddItemToArray(content, thinking_block(bytebuf_str(&g->out.thinking), g->out.thinking.len));
    if (g->out.text.len) cJSON_AddItemToArray(content, text_block(bytebuf_str(&g->out.text), g->out.text.len));
    for (int i = 0; i < n_calls(g); i++) cJSON_AddItemToArray(content, tool_use_block(g, i, true));
    const char *seq, *reason = stop_reason(g, &seq);
    return message_object(g, content, reason, seq, &g->out.res);
}

/* ------------------------------------------------------------------ the stream */

static cJSON *event(const char *type) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "type", type);
    return e;
}

static bool send_start(an_gen *g) {
    if (g->started) return true;
    g->started = true;
    cJSON *e = event("message_start");
    cJSON_AddItemToObject(e, "message", message_object(g, NULL, NULL, NULL, NULL));
    return aj_send(g->out.c, e) && aj_send(g->out.c, event("ping"));
}

static bool close_block(an_gen *g) {
    if (g->open == BLOCK_NONE) return true;
    cJSON *e = event("content_block_stop");
    cJSON_AddNumberToObject(e, "index", g->index++);
    g->open = BLOCK_NONE;
    return aj_send(g->out.c, e);
}

static bool open_block(an_gen *g, int kind, cJSON *block) {
    if (!close_block(g)) { cJSON_Delete(block); return false; }
    cJSON *e = event("content_block_start");
    cJSON_AddNumberToObject(e, "index", g->index);
    cJSON_AddItemToObject(e, "content_block", block);
    g->open = kind;
    return aj_send(g->out.c, e);
}

/* A content_block_delta of the open block: delta {type, key: text}. */
static bool send_delta(an_gen *g, const char *type, const char *key, const char *text, size_t n) {
    cJSON *e = event("content_block_delta"), *d;
    cJSON_AddNumberToObject(e, "index", g->index);
    d = cJSON_AddObjectToObject(e, "delta");
    cJSON_AddStringToObject(d, "type", type);
    aj_add_text(d, key, text, n);
    return aj_send(g->out.c, e);
}

/* What one piece of the reply yields: thinking and text deltas into blocks of their kind
 * (a block of the other kind is closed first), each new tool call a whole tool_use block. */
static bool emit(aj_gen *out, const reply_delta *d) {
    an_gen *g = (an_gen *)out;
    bool ok = send_start(g);
    if (ok && d->thinking.len) {
        if (g->open != BLOCK_THINKING) ok = open_block(g, BLOCK_THINKING, thinking_block("", 0));
        ok = ok && send_delta(g, "thinking_delta", "thinking", bytebuf_str(&d->thinking), d->thinking.len);
    }
    if (ok && d->content.len) {
        if (g->open != BLOCK_TEXT) ok = open_block(g, BLOCK_TEXT, text_block("", 0));
        ok = ok && send_delta(g, "text_delta", "text", bytebuf_str(&d->content), d->content.len);
    }
    for (; ok && g->n_calls_sent < n_calls(g); g->n_calls_sent++) {
        ok = open_block(g, BLOCK_TOOL_USE, tool_use_block(g, g->n_calls_sent, false));
        char *args = ok ? cJSON_PrintUnformatted(call_args(g, g->n_calls_sent)) : NULL;
        if (ok) ok = send_delta(g, "input_json_delta", "partial_json", args ? args : "{}", args ? strlen(args) : 2);
        free(args);
        ok = ok && close_block(g);
    }
    return ok;
}

static void send_stream_end(an_gen *g) {
    const char *seq, *reason = stop_reason(g, &seq);
    bool ok = send_start(g) && close_block(g);
    if (ok) {
        cJSON *e = event("message_delta"), *d = cJSON_AddObjectToObject(e, "delta");
        cJSON_AddStringToObject(d, "stop_reason", reason);
        add_nullable(d, "stop_sequence", seq);
        add_usage(e, &g->out.res);
        ok = aj_send(g->out.c, e) && aj_send(g->out.c, event("message_stop"));
    }
    if (ok) aj_end(g->out.c);
    else http_stream_end(g->out.c->r);
}

/* ------------------------------------------------------------------ the routes */

/* The request's conversation, tools and thinking (what count_tokens counts too). */
static void read_prompt(an_gen *g, const cJSON *body) {
    g->out.q.model = g->model = aj_model(g->out.c, body, false);
    read_conversation(g, body);
    read_tools(g, body);
    read_thinking(g, body);
}

static void an_gen_clear(an_gen *g) {
    aj_gen_clear(&g->out);
    cJSON_Delete(g->options);
    cJSON_Delete(g->tool_names);
}

void anthropic_messages(http_req *r) {
    api_images images = {0};
    api_req c = {.r = r, .openai = true, .anthropic = true, .sse_named = true, .images = &images};
    cJSON *body = aj_parse_body(&c);
    if (!body) return;
    an_gen g = {.out = {.c = &c, .emit = emit}};
    random_id(g.id, sizeof g.id, "msg_");
    read_prompt(&g, body);
    read_options(&g, body);
    read_output_format(&g, body);
    c.stream = aj_bool(&c, body, "stream", false);
    aj_object(&c, body, "metadata");   /* checked, not used */
    if (!c.failed && aj_generate(&g.out)) {
        if (c.stream) send_stream_end(&g);
        else aj_reply(r, 200, whole_message(&g));
    }
    an_gen_clear(&g);
    api_images_free(&images);
    cJSON_Delete(body);
}

void anthropic_count_tokens(http_req *r) {
    api_images images = {0};
    api_req c = {.r = r, .openai = true, .anthropic = true, .images = &images};
    cJSON *body = aj_parse_body(&c);
    if (!body) return;
    an_gen g = {.out = {.c = &c, .q.count_only = true}};
    read_prompt(&g, body);
    if (!c.failed && aj_generate(&g.out)) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "input_tokens", g.out.res.prompt_tokens);
        aj_reply(r, 200, o);
    }
    an_gen_clear(&g);
    api_images_free(&images);
    cJSON_Delete(body);
}
