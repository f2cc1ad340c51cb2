/* api_openai: the OpenAI-compatible endpoints: POST /v1/chat/completions and
 * /v1/completions (whole or streamed as SSE ending in "data: [DONE]"), GET /v1/models
 * and /v1/models/{id}, POST /v1/embeddings. OpenAI's sampling fields become an
 * Ollama-style options map for the scheduler (only the fields the client sent, as
 * Ollama does); errors use OpenAI's {"error":{"message","type","param","code"}}. */
#include <openssl/evp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "api_json.h"
#include "error.h"

/* Ollama's options map from OpenAI's fields (NULL + failure on a bad one). */
static cJSON *map_options(api_req *c, const cJSON *body) {
    cJSON *o = cJSON_CreateObject();
    static const char *const floats[][2] = {
        {"temperature", "temperature"}, {"top_p", "top_p"},
        {"presence_penalty", "presence_penalty"}, {"frequency_penalty", "frequency_penalty"},
    };
    for (size_t i = 0; i < sizeof floats / sizeof floats[0]; i++)
        if (aj_any(body, floats[i][0])) cJSON_AddNumberToObject(o, floats[i][1], aj_number(c, body, floats[i][0], 0));
    if (aj_any(body, "seed")) cJSON_AddNumberToObject(o, "seed", (double)aj_int(c, body, "seed", 0, -(1LL << 53), 1LL << 53));
    const char *max_keys[] = {"max_tokens", "max_completion_tokens"};
    for (int i = 0; i < 2; i++)
        if (aj_any(body, max_keys[i]))
            cJSON_AddNumberToObject(o, "num_predict", (double)aj_int(c, body, max_keys[i], -1, 0, 1 << 30));
    const cJSON *stop = aj_any(body, "stop");
    if (stop) {
        cJSON *list = cJSON_AddArrayToObject(o, "stop");
        if (cJSON_IsString(stop)) {
            cJSON_AddItemToArray(list, cJSON_CreateString(stop->valuestring));
        } else if (cJSON_IsArray(stop)) {
            const cJSON *it;
            cJSON_ArrayForEach(it, stop) {
                if (!cJSON_IsString(it)) { aj_fail(c, 400, "stop", "invalid value for field 'stop': expected a string or an array of strings"); break; }
                cJSON_AddItemToArray(list, cJSON_CreateString(it->valuestring));
            }
        } else {
            aj_fail(c, 400, "stop", "invalid value for field 'stop': expected a string or an array of strings");
        }
    }
    long long n = aj_int(c, body, "n", 1, 1, 1 << 20);
    if (n != 1) aj_fail(c, 400, "n", "only n=1 is supported");
    const cJSON *lp = aj_any(body, "logprobs");
    if (lp && !cJSON_IsFalse(lp)) aj_fail(c, 400, "logprobs", "logprobs are not supported");
    if (c->failed) { cJSON_Delete(o); return NULL; }
    return o;
}

/* response_format: text | json_object | json_schema {schema}; malloc'd format or NULL. */
static char *map_response_format(api_req *c, const cJSON *body) {
    const cJSON *rf = aj_object(c, body, "response_format");
    if (!rf) return NULL;
    const char *type = aj_string(c, rf, "type");
    if (c->failed) return NULL;
    if (!type || !strcmp(type, "text")) return NULL;
    if (!strcmp(type, "json_object")) return strdup("json");
    if (!strcmp(type, "json_schema")) {
        const cJSON *js = aj_object(c, rf, "json_schema");
        const cJSON *schema = js ? aj_object(c, js, "schema") : NULL;
        if (c->failed) return NULL;
        if (!schema) { aj_fail(c, 400, "response_format.json_schema.schema", "response_format json_schema needs json_schema.schema (an object)"); return NULL; }
        return cJSON_PrintUnformatted(schema);
    }
    aj_fail(c, 400, "response_format.type", "invalid value for 'response_format.type': '%.40s' (expected text, json_object or json_schema)", type);
    return NULL;
}

/* One message's content: a string, null, or an array of content parts (text only). */
static char *message_text(api_req *c, const cJSON *content, int idx) {
    if (!content) return strdup("");
    if (cJSON_IsString(content)) return strdup(content->valuestring);
    char field[48];
    snprintf(field, sizeof field, "messages[%d].content", idx);
    if (!cJSON_IsArray(content)) { aj_fail(c, 400, field, "invalid value for field '%s': expected a string or an array of content parts", field); return NULL; }
    bytebuf b = {0};
    bytebuf_add(&b, "", 0);
    const cJSON *part;
    cJSON_ArrayForEach(part, content) {
        const char *type = cJSON_IsObject(part) ? aj_string(c, part, "type") : NULL;
        if (c->failed) break;
        if (!type) { aj_fail(c, 400, field, "invalid content part in '%s': expected an object with a 'type'", field); break; }
        if (!strcmp(type, "image_url") || !strcmp(type, "input_image")) {
            aj_fail(c, 400, field, "image input is not supported in '%s': the model is text-only", field);
            break;
        }
        if (strcmp(type, "text")) { aj_fail(c, 400, field, "unsupported content part type '%.40s' in '%s'", type, field); break; }
        const char *text = aj_string(c, part, "text");
        if (c->failed) break;
        if (b.len && text) bytebuf_add(&b, "\n", 1);
        if (text) bytebuf_add(&b, text, strlen(text));
    }
    if (c->failed || b.oom) { bytebuf_free(&b); if (!c->failed) aj_fail(c, 500, NULL, "out of memory"); return NULL; }
    return b.data;
}

typedef struct {
    http_req *r;
    const char *model;
    bool chat, stream, include_usage, begun;
    char id[48];
    int64_t created;
    bytebuf text;
} oai_gen;

static cJSON *oai_head(const oai_gen *g, const char *object) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", g->id);
    cJSON_AddStringToObject(o, "object", object);
    cJSON_AddNumberToObject(o, "created", (double)g->created);
    cJSON_AddStringToObject(o, "model", g->model);
    cJSON_AddStringToObject(o, "system_fingerprint", "fp_anvil");
    return o;
}

/* A stream chunk with one choice carrying text (and a finish reason or null). */
static cJSON *oai_chunk(const oai_gen *g, const char *text, size_t len, const char *finish) {
    cJSON *o = oai_head(g, g->chat ? "chat.completion.chunk" : "text_completion");
    cJSON *choices = cJSON_AddArrayToObject(o, "choices");
    cJSON *ch = cJSON_CreateObject();
    cJSON_AddNumberToObject(ch, "index", 0);
    if (g->chat) {
        cJSON *d = cJSON_AddObjectToObject(ch, "delta");
        cJSON_AddStringToObject(d, "role", "assistant");
        aj_add_text(d, "content", text, len);
    } else {
        aj_add_text(ch, "text", text, len);
        cJSON_AddNullToObject(ch, "logprobs");
    }
    if (finish) cJSON_AddStringToObject(ch, "finish_reason", finish);
    else cJSON_AddNullToObject(ch, "finish_reason");
    cJSON_AddItemToArray(choices, ch);
    if (g->include_usage) cJSON_AddNullToObject(o, "usage");
    return o;
}

static bool oai_on_text(const char *text, int len, void *user) {
    oai_gen *g = user;
    if (!g->stream) {
        bytebuf_add(&g->text, text, (size_t)len);
        return !g->text.oom && http_client_alive(g->r);
    }
    if (!g->begun) {
        http_stream_begin(g->r, 200, "text/event-stream");
        g->begun = true;
    }
    if (len <= 0) return http_client_alive(g->r);
    return aj_stream_sse(g->r, oai_chunk(g, text, (size_t)len, NULL)) && http_client_alive(g->r);
}

static void add_usage(cJSON *o, const sched_result *res) {
    cJSON *u = cJSON_AddObjectToObject(o, "usage");
    cJSON_AddNumberToObject(u, "prompt_tokens", res->prompt_eval_count);
    cJSON_AddNumberToObject(u, "completion_tokens", res->eval_count);
    cJSON_AddNumberToObject(u, "total_tokens", res->prompt_eval_count + res->eval_count);
}

static void make_id(char *buf, size_t cap, const char *prefix) {
    static atomic_uint counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned n = atomic_fetch_add(&counter, 1);
    snprintf(buf, cap, "%s-%08lx%04x", prefix, (unsigned long)(ts.tv_nsec ^ (long)ts.tv_sec * 2654435761u) & 0xffffffffUL,
             n & 0xffffu);
}

static void oai_generate(http_req *r, bool chat) {
    api_req c = {.r = r, .openai = true};
    cJSON *body = aj_parse_body(&c);
    if (!body) return;
    oai_gen g = {.r = r, .chat = chat, .created = aj_unix_seconds()};
    make_id(g.id, sizeof g.id, chat ? "chatcmpl" : "cmpl");
    sched_gen_request q = {0};
    sched_result res = {0};
    chat_message *msgs = NULL;
    int n_msgs = 0;
    char *format = NULL;
    cJSON *options = NULL;

    q.model = aj_string(&c, body, "model");
    if (!c.failed && (!q.model || !*q.model)) aj_fail(&c, 400, "model", "you must provide a model parameter");
    if (c.failed) goto out;
    http_set_model(r, q.model);
    g.model = q.model;
    g.stream = aj_bool(&c, body, "stream", false);
    const cJSON *so = aj_object(&c, body, "stream_options");
    g.include_usage = so && aj_bool(&c, so, "include_usage", false);
    options = map_options(&c, body);
    q.options = options;
    format = map_response_format(&c, body);
    q.format = format;
    const cJSON *tools = aj_array(&c, body, "tools");
    if (tools && cJSON_GetArraySize(tools) > 0) aj_fail(&c, 400, "tools", "model '%s' does not support tools", q.model);
    if (c.failed) goto out;
    if (chat) {
        const cJSON *arr = aj_array(&c, body, "messages");
        if (!c.failed && (!arr || !cJSON_GetArraySize(arr))) aj_fail(&c, 400, "messages", "'messages' must be a non-empty array");
        if (c.failed) goto out;
        int n = cJSON_GetArraySize(arr);
        msgs = calloc((size_t)n, sizeof *msgs);
        if (!msgs) { aj_fail(&c, 500, NULL, "out of memory"); goto out; }
        const cJSON *m;
        cJSON_ArrayForEach(m, arr) {
            char field[48];
            snprintf(field, sizeof field, "messages[%d]", n_msgs);
            if (!cJSON_IsObject(m)) { aj_fail(&c, 400, field, "invalid value for field '%s': expected an object", field); break; }
            const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
            if (!cJSON_IsString(role)) { aj_fail(&c, 400, field, "invalid value for field '%s.role': expected a string", field); break; }
            const char *rs = role->valuestring;
            if (!strcmp(rs, "developer")) rs = "system";
            if (strcmp(rs, "system") && strcmp(rs, "user") && strcmp(rs, "assistant") && strcmp(rs, "tool")) {
                aj_fail(&c, 400, field, "invalid role '%.40s' in '%s.role'", rs, field);
                break;
            }
            char *text = message_text(&c, aj_any(m, "content"), n_msgs);
            if (!text) break;
            msgs[n_msgs].role = rs;
            msgs[n_msgs].content = text;
            n_msgs++;
        }
        q.messages = msgs;
        q.n_messages = n_msgs;
    } else {
        const cJSON *p = aj_any(body, "prompt");
        if (p && cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1 && cJSON_IsString(cJSON_GetArrayItem(p, 0)))
            q.prompt = cJSON_GetArrayItem(p, 0)->valuestring;
        else if (p && cJSON_IsString(p)) q.prompt = p->valuestring;
        else aj_fail(&c, 400, "prompt", "invalid value for field 'prompt': expected a string");
        const char *suffix = aj_string(&c, body, "suffix");
        if (suffix && *suffix) aj_fail(&c, 400, "suffix", "suffix (insert) is not supported");
        if (aj_bool(&c, body, "echo", false)) aj_fail(&c, 400, "echo", "echo is not supported");
    }
    if (c.failed) goto out;
    q.on_text = oai_on_text;
    q.user = &g;

    if (sched_generate(((server_app *)http_app(r))->sched, &q, &res)) {
        const char *msg = res.error[0] ? res.error : "generation failed";
        if (g.begun) {
            cJSON *e = cJSON_CreateObject();
            cJSON *eo = cJSON_AddObjectToObject(e, "error");
            cJSON_AddStringToObject(eo, "message", msg);
            cJSON_AddStringToObject(eo, "type", "api_error");
            cJSON_AddNullToObject(eo, "param");
            cJSON_AddNullToObject(eo, "code");
            aj_stream_sse(r, e);
            http_stream_end(r);
        } else {
            aj_fail(&c, res.status ? res.status : 500, NULL, "%s", msg);
        }
        goto out;
    }
    const char *finish = res.done_reason && !strcmp(res.done_reason, "length") ? "length" : "stop";
    if (g.stream) {
        if (!g.begun) http_stream_begin(r, 200, "text/event-stream");
        bool ok = aj_stream_sse(r, oai_chunk(&g, "", 0, finish));
        if (ok && g.include_usage) {
            cJSON *u = oai_head(&g, chat ? "chat.completion.chunk" : "text_completion");
            cJSON_AddArrayToObject(u, "choices");
            add_usage(u, &res);
            ok = aj_stream_sse(r, u);
        }
        if (ok) http_stream_write(r, "data: [DONE]\n\n", 14);
        http_stream_end(r);
        goto out;
    }
    cJSON *o = oai_head(&g, chat ? "chat.completion" : "text_completion");
    cJSON *choices = cJSON_AddArrayToObject(o, "choices");
    cJSON *ch = cJSON_CreateObject();
    cJSON_AddNumberToObject(ch, "index", 0);
    const char *text = bytebuf_str(&g.text);
    if (chat) {
        cJSON *m = cJSON_AddObjectToObject(ch, "message");
        cJSON_AddStringToObject(m, "role", "assistant");
        aj_add_text(m, "content", text, g.text.len);
    } else {
        aj_add_text(ch, "text", text, g.text.len);
        cJSON_AddNullToObject(ch, "logprobs");
    }
    cJSON_AddStringToObject(ch, "finish_reason", finish);
    cJSON_AddItemToArray(choices, ch);
    add_usage(o, &res);
    aj_reply(r, 200, o);
out:
    sched_result_clear(&res);
    bytebuf_free(&g.text);
    for (int i = 0; i < n_msgs; i++) free((char *)msgs[i].content);
    free(msgs);
    free(format);
    cJSON_Delete(options);
    cJSON_Delete(body);
}

void oai_chat_completions(http_req *r) { oai_generate(r, true); }
void oai_completions(http_req *r) { oai_generate(r, false); }

static cJSON *model_object(const store_entry *e) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", e->name);
    cJSON_AddStringToObject(o, "object", "model");
    cJSON_AddNumberToObject(o, "created", (double)e->modified);
    cJSON_AddStringToObject(o, "owned_by", e->parsed.ns[0] ? e->parsed.ns : STORE_DEFAULT_NAMESPACE);
    return o;
}

void oai_models(http_req *r) {
    api_req c = {.r = r, .openai = true};
    server_app *app = http_app(r);
    const char *id = http_path_param(r);
    if (id && *id) {
        store_entry e = {0};
        if (store_lookup(app->store, id, &e)) {
            aj_fail(&c, 404, "model", "model '%.200s' not found", id);
            return;
        }
        aj_reply(r, 200, model_object(&e));
        store_entry_clear(&e);
        return;
    }
    store_entry *list = NULL;
    int n = 0;
    if (store_list(app->store, &list, &n)) { aj_fail(&c, 500, NULL, "%s", anv_last_error()); return; }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "object", "list");
    cJSON *data = cJSON_AddArrayToObject(o, "data");
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(data, model_object(&list[i]));
    store_entries_free(list, n);
    aj_reply(r, 200, o);
}

void oai_embeddings(http_req *r) {
    api_req c = {.r = r, .openai = true};
    cJSON *body = aj_parse_body(&c);
    if (!body) return;
    sched_embed_request q = {0};
    sched_embed_result res = {0};
    const char **inputs = NULL;
    q.model = aj_string(&c, body, "model");
    if (!c.failed && (!q.model || !*q.model)) aj_fail(&c, 400, "model", "you must provide a model parameter");
    if (c.failed) goto out;
    http_set_model(r, q.model);
    if (!aj_any(body, "input")) aj_fail(&c, 400, "input", "invalid input: 'input' is required");
    inputs = api_parse_inputs(&c, body, "input", &q.n_inputs);
    if (!c.failed && q.n_inputs == 0) aj_fail(&c, 400, "input", "invalid input: 'input' must not be empty");
    q.inputs = inputs;
    q.truncate = true;
    q.dimensions = (int)aj_int(&c, body, "dimensions", 0, 0, 1 << 20);
    const char *enc = aj_string(&c, body, "encoding_format");
    bool b64 = enc && !strcmp(enc, "base64");
    if (enc && !b64 && strcmp(enc, "float")) aj_fail(&c, 400, "encoding_format", "invalid encoding_format '%.40s': expected float or base64", enc);
    if (c.failed) goto out;
    if (sched_embed(((server_app *)http_app(r))->sched, &q, &res)) {
        aj_fail(&c, res.status ? res.status : 500, NULL, "%s", res.error[0] ? res.error : "embedding failed");
        goto out;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "object", "list");
    cJSON *data = cJSON_AddArrayToObject(o, "data");
    for (int i = 0; i < res.n; i++) {
        const float *v = res.embeddings + (size_t)i * (size_t)res.dim;
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "object", "embedding");
        if (b64) { /* little-endian float32 bytes, as OpenAI sends them */
            size_t nb = (size_t)res.dim * sizeof(float);
            char *enc64 = malloc(4 * ((nb + 2) / 3) + 1);
            if (enc64) {
                EVP_EncodeBlock((unsigned char *)enc64, (const unsigned char *)v, (int)nb);
                cJSON_AddStringToObject(e, "embedding", enc64);
                free(enc64);
            }
        } else {
            bytebuf b = {0};
            api_float_array(&b, v, res.dim);
            cJSON_AddRawToObject(e, "embedding", b.data ? b.data : "[]");
            bytebuf_free(&b);
        }
        cJSON_AddNumberToObject(e, "index", i);
        cJSON_AddItemToArray(data, e);
    }
    cJSON_AddStringToObject(o, "model", q.model);
    cJSON *u = cJSON_AddObjectToObject(o, "usage");
    cJSON_AddNumberToObject(u, "prompt_tokens", res.prompt_eval_count);
    cJSON_AddNumberToObject(u, "total_tokens", res.prompt_eval_count);
    aj_reply(r, 200, o);
out:
    sched_embed_result_clear(&res);
    free(inputs);
    cJSON_Delete(body);
}
