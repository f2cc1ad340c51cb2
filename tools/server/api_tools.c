/* api_tools: the request side of tool calling and thinking, for both APIs (api_json.h):
 * "tools" (checked: each {"type": "function", "function": {"name": ...}}), "think" /
 * "reasoning_effort" (a level is kept: gpt-oss renders it), and each chat message's thinking, tool_calls and tool_name. Tool
 * calls are kept in Ollama's shape [{"function": {"name", "arguments": {...}}}] whatever
 * the API (OpenAI sends arguments as JSON text: parsed here, a 400 if it is not an
 * object), so the prompt renders them one way. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api_json.h"

void aj_call_id(char out[16]) {
    static atomic_uint counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned x = (unsigned)ts.tv_nsec * 2654435761u ^ (unsigned)ts.tv_sec ^ (atomic_fetch_add(&counter, 1) * 40503u);
    snprintf(out, 16, "call_%08x", x);
}

void aj_tools(aj_gen *g, const cJSON *body) {
    api_req *c = g->c;
    const cJSON *tools = aj_array(c, body, "tools");
    if (c->failed || !tools || cJSON_GetArraySize(tools) == 0) return;
    int i = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, tools) {
        char field[48];
        snprintf(field, sizeof field, "tools[%d]", i++);
        if (!aj_need(c, t, field, AJ_OBJECT)) return;
        const char *type = aj_string(c, t, "type");
        if (type && strcmp(type, "function")) {
            aj_fail(c, 400, "tools", "invalid value for '%s.type': '%.40s' (only \"function\" tools exist)", field, type);
            return;
        }
        char fn_field[64];
        snprintf(fn_field, sizeof fn_field, "%s.function", field);
        const cJSON *fn = aj_need(c, aj_any(t, "function"), fn_field, AJ_OBJECT);
        const char *name = fn ? aj_string(c, fn, "name") : NULL;
        if (c->failed) return;
        if (!name || !*name) {
            aj_fail(c, 400, "tools", "'%s.name' is required", fn_field);
            return;
        }
    }
    g->tools_json = cJSON_PrintUnformatted(tools);
    if (!g->tools_json) { aj_fail(c, 500, NULL, "out of memory"); return; }
    g->q.tools_json = g->tools_json;
}

void aj_think(aj_gen *g, const cJSON *body) {
    api_req *c = g->c;
    const char *key = c->openai ? "reasoning_effort" : "think";
    const cJSON *v = aj_any(body, key);
    const cJSON *reasoning = c->openai && !v ? aj_any(body, "reasoning") : NULL;
    if (cJSON_IsObject(reasoning) && (v = aj_any(reasoning, "effort"))) key = "reasoning.effort";   /* the newer spelling */
    g->q.think = CHAT_THINK_DEFAULT;
    if (c->failed || !v) return;
    if (cJSON_IsBool(v)) {
        g->q.think = cJSON_IsTrue(v) ? CHAT_THINK_ON : CHAT_THINK_OFF;
        return;
    }
    if (cJSON_IsString(v)) {
        /* levels: gpt-oss's Reasoning (max is its high, minimal its low); other families: on */
        static const struct { const char *name; int think; } lv[] = {
            {"low", CHAT_THINK_LOW}, {"medium", CHAT_THINK_MEDIUM}, {"high", CHAT_THINK_HIGH},
            {"max", CHAT_THINK_HIGH}, {"minimal", CHAT_THINK_LOW}, {"true", CHAT_THINK_ON}};
        const char *s = v->valuestring;
        if (!strcmp(s, "false") || !strcmp(s, "none")) { g->q.think = CHAT_THINK_OFF; return; }
        for (size_t i = 0; i < sizeof lv / sizeof lv[0]; i++)
            if (!strcmp(s, lv[i].name)) { g->q.think = lv[i].think; return; }
    }
    if (c->openai) aj_fail(c, 400, key, "invalid value for '%s': expected none, minimal, low, medium or high", key);
    else aj_fail(c, 400, key, "invalid value for 'think': expected true, false, \"low\", \"medium\", \"high\" or \"max\"");
}

/* One call of a message's tool_calls, in Ollama's shape (a new object); NULL + failure. */
static cJSON *normalize_call(api_req *c, const cJSON *call, const char *field) {
    const cJSON *fn = aj_need(c, aj_any(aj_need(c, call, field, AJ_OBJECT), "function"), field, AJ_OBJECT);
    const char *name = fn ? aj_string(c, fn, "name") : NULL;
    if (c->failed) return NULL;
    if (!name || !*name) { aj_fail(c, 400, field, "'%s.function.name' is required", field); return NULL; }
    const cJSON *args = aj_any(fn, "arguments");
    cJSON *parsed = NULL;
    if (cJSON_IsString(args)) {   /* OpenAI: JSON text */
        parsed = cJSON_Parse(args->valuestring);
        if (!cJSON_IsObject(parsed)) {
            cJSON_Delete(parsed);
            aj_fail(c, 400, field, "'%s.function.arguments' is not a JSON object", field);
            return NULL;
        }
    } else if (args && !cJSON_IsObject(args)) {
        aj_fail(c, 400, field, "invalid value for '%s.function.arguments': expected an object or JSON text", field);
        return NULL;
    }
    cJSON *out = cJSON_CreateObject(), *ofn = cJSON_AddObjectToObject(out, "function");
    const cJSON *index = aj_any(fn, "index");   /* Ollama keeps it (a TEMPLATE can print .Function.Index) */
    if (cJSON_IsNumber(index)) cJSON_AddNumberToObject(ofn, "index", index->valueint);
    cJSON_AddStringToObject(ofn, "name", name);
    cJSON_AddItemToObject(ofn, "arguments", parsed ? parsed : args ? cJSON_Duplicate(args, true) : cJSON_CreateObject());
    return out;
}

static char *dup_or_fail(api_req *c, const char *s) {
    char *d = strdup(s);
    if (!d) aj_fail(c, 500, NULL, "out of memory");
    return d;
}

bool aj_message_extras(api_req *c, const cJSON *msg, const char *field, chat_message *m) {
    char f[96];
    snprintf(f, sizeof f, "%s.%s", field, c->openai ? "reasoning_content" : "thinking");
    const cJSON *th = aj_check(c, aj_any(msg, c->openai ? "reasoning_content" : "thinking"), f, AJ_STRING);
    if (th && *th->valuestring && !(m->thinking = dup_or_fail(c, th->valuestring))) return false;
    snprintf(f, sizeof f, "%s.tool_name", field);
    const cJSON *tn = aj_check(c, aj_any(msg, "tool_name"), f, AJ_STRING);
    if (tn && !(m->tool_name = dup_or_fail(c, tn->valuestring))) return false;
    snprintf(f, sizeof f, "%s.tool_calls", field);
    const cJSON *calls = aj_check(c, aj_any(msg, "tool_calls"), f, AJ_ARRAY);
    if (c->failed) return false;
    if (!calls || cJSON_GetArraySize(calls) == 0) return true;
    cJSON *norm = cJSON_CreateArray();
    int i = 0;
    const cJSON *call;
    cJSON_ArrayForEach(call, calls) {
        char cf[112];
        snprintf(cf, sizeof cf, "%s[%d]", f, i++);
        cJSON *n = normalize_call(c, call, cf);
        if (!n) { cJSON_Delete(norm); return false; }
        cJSON_AddItemToArray(norm, n);
    }
    m->tool_calls = cJSON_PrintUnformatted(norm);
    cJSON_Delete(norm);
    if (!m->tool_calls) { aj_fail(c, 500, NULL, "out of memory"); return false; }
    return true;
}
