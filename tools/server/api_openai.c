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
#include "api_images.h"
#include "api_json.h"
#include "error.h"

/* Ollama's options map from OpenAI's fields (NULL + failure on a bad one). */
static cJSON *map_options(api_req *c, const cJSON *body) {
    cJSON *o = cJSON_CreateObject();
    static const char *const floats[] = {"temperature", "top_p", "presence_penalty", "frequency_penalty"};
    for (size_t i = 0; i < sizeof floats / sizeof floats[0]; i++)
        if (aj_any(body, floats[i])) cJSON_AddNumberToObject(o, floats[i], aj_number(c, body, floats[i], 0));
    if (aj_any(body, "seed")) cJSON_AddNumberToObject(o, "seed", (double)aj_int(c, body, "seed", 0, -(1LL << 53), 1LL << 53));
    const char *max_keys[] = {"max_tokens", "max_completion_tokens"};
    for (int i = 0; i < 2; i++)
        if (aj_any(body, max_keys[i]))
            cJSON_AddNumberToObject(o, "num_predict", (double)aj_int(c, body, max_keys[i], -1, 0, 1 << 30));
    int n_stop = 0;
    const char **stop = aj_strings(c, body, "stop", &n_stop);
    if (stop) cJSON_AddItemToObject(o, "stop", cJSON_CreateStringArray(stop, n_stop));
    free(stop);
    long long n = aj_int(c, body, "n", 1, 1, 1 << 20);
    if (n != 1) aj_fail(c, 400, "n", "only n=1 is supported");
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

/* The text of one content part (field names it: "messages[0].content[1]"): a "text" part's
 * text, or an "image_url" part's marker (written into mk; the image into c->images: a data
 * URI, as the string "image_url" or its object's "url", as Ollama reads it). NULL + failure
 * otherwise. */
static const char *content_part_text(api_req *c, const cJSON *part, const char *field, char mk[API_IMAGE_MARKER_MAX]) {
    char type_field[112], text_field[112], url_field[112];
    snprintf(type_field, sizeof type_field, "%s.type", field);
    snprintf(text_field, sizeof text_field, "%s.text", field);
    snprintf(url_field, sizeof url_field, "%s.image_url", field);
    const cJSON *obj = aj_need(c, part, field, AJ_OBJECT);
    const cJSON *type = aj_need(c, aj_any(obj, "type"), type_field, AJ_STRING);
    if (!type) return NULL;
    const char *t = type->valuestring;
    if (!strcmp(t, "image_url")) {
        const cJSON *u = aj_any(part, "image_url");
        if (cJSON_IsObject(u)) {
            snprintf(url_field, sizeof url_field, "%s.image_url.url", field);
            u = aj_need(c, aj_any(u, "url"), url_field, AJ_STRING);
        } else {
            u = aj_need(c, u, url_field, AJ_STRING);
        }
        int i = u ? api_images_add_url(c, u->valuestring, url_field) : -1;
        if (i < 0) return NULL;
        api_image_marker(i, mk);
        return mk;
    }
    if (strcmp(t, "text")) aj_fail(c, 400, type_field, "unsupported content part type '%.40s' in '%s'", t, type_field);
    const cJSON *text = aj_check(c, aj_any(part, "text"), text_field, AJ_STRING);
    return c->failed ? NULL : text ? text->valuestring : "";
}

/* One message's text: its "content", a string, null, or an array of content parts (text and
 * image markers, joined by newlines). */
static char *message_text(api_req *c, const cJSON *msg, const char *msg_field) {
    char field[64];
    snprintf(field, sizeof field, "%s.content", msg_field);
    const cJSON *content = aj_any(msg, "content");
    if (!content) return strdup("");
    if (cJSON_IsString(content)) return strdup(content->valuestring);
    if (!cJSON_IsArray(content)) { aj_fail(c, 400, field, "invalid value for field '%s': expected a string or an array of content parts", field); return NULL; }
    bytebuf b = {0};
    bytebuf_add(&b, "", 0);
    int i = 0;
    const cJSON *part;
    cJSON_ArrayForEach(part, content) {
        char part_field[96], mk[API_IMAGE_MARKER_MAX];
        snprintf(part_field, sizeof part_field, "%s[%d]", field, i++);
        const char *text = content_part_text(c, part, part_field, mk);
        if (!text) break;
        if (b.len && *text) bytebuf_add(&b, "\n", 1);
        bytebuf_add(&b, text, strlen(text));
    }
    if (c->failed || b.oom) { bytebuf_free(&b); if (!c->failed) aj_fail(c, 500, NULL, "out of memory"); return NULL; }
    return b.data;
}

typedef struct {
    aj_gen out;   /* first: the chunk builder gets the whole struct as an aj_gen */
    const char *model;
    bool chat, include_usage;
    char id[48];
    int64_t created;
    cJSON *options;   /* out.q.options, Ollama's from OpenAI's fields */
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

/* OpenAI's tool_calls from the last n of g->out.calls: {"index"?, "id", "type":
 * "function", "function": {"name", "arguments": JSON text}} (index in stream deltas). */
static void add_oai_calls(const oai_gen *g, cJSON *d, int n, bool with_index) {
    int total = g->out.calls ? cJSON_GetArraySize(g->out.calls) : 0;
    if (n <= 0 || total < n) return;
    cJSON *arr = cJSON_AddArrayToObject(d, "tool_calls");
    for (int i = total - n; i < total; i++) {
        const cJSON *call = cJSON_GetArrayItem(g->out.calls, i);
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
        cJSON *o = cJSON_CreateObject(), *ofn;
        if (with_index) cJSON_AddNumberToObject(o, "index", i);
        cJSON_AddStringToObject(o, "id", cJSON_GetObjectItemCaseSensitive(call, "id")->valuestring);
        cJSON_AddStringToObject(o, "type", "function");
        ofn = cJSON_AddObjectToObject(o, "function");
        cJSON_AddStringToObject(ofn, "name", cJSON_GetObjectItemCaseSensitive(fn, "name")->valuestring);
        char *args = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(fn, "arguments"));
        cJSON_AddStringToObject(ofn, "arguments", args ? args : "{}");
        free(args);
        cJSON_AddItemToArray(arr, o);
    }
}

/* One choice carrying text under key ("delta" or "message" for chat), the reasoning
 * (reasoning_content), the last n_calls tool calls, finish or null. */
static cJSON *oai_choice(const oai_gen *g, const char *key, const char *text, size_t len, const char *thinking,
                         size_t thinking_len, int n_calls, const char *finish) {
    cJSON *ch = cJSON_CreateObject();
    cJSON_AddNumberToObject(ch, "index", 0);
    if (g->chat) {
        cJSON *d = cJSON_AddObjectToObject(ch, key);
        bool delta = !strcmp(key, "delta");
        cJSON_AddStringToObject(d, "role", "assistant");
        if (!len && n_calls && !delta) cJSON_AddNullToObject(d, "content");
        else aj_add_text(d, "content", text, len);
        if (thinking_len) aj_add_text(d, "reasoning_content", thinking, thinking_len);
        add_oai_calls(g, d, n_calls, delta);
    } else {
        aj_add_text(ch, "text", text, len);
        cJSON_AddNullToObject(ch, "logprobs");
    }
    if (finish) cJSON_AddStringToObject(ch, "finish_reason", finish);
    else cJSON_AddNullToObject(ch, "finish_reason");
    return ch;
}

/* A stream chunk with one choice carrying a delta (and a finish reason or null). */
static cJSON *oai_chunk(const oai_gen *g, const reply_delta *d, const char *finish) {
    cJSON *o = oai_head(g, g->chat ? "chat.completion.chunk" : "text_completion");
    cJSON *choices = cJSON_AddArrayToObject(o, "choices");
    cJSON_AddItemToArray(choices, oai_choice(g, "delta", d ? bytebuf_str(&d->content) : "", d ? d->content.len : 0,
                                             d ? bytebuf_str(&d->thinking) : "", d ? d->thinking.len : 0,
                                             d ? d->n_calls : 0, finish));
    if (g->include_usage) cJSON_AddNullToObject(o, "usage");
    return o;
}

static cJSON *oai_text_chunk(const aj_gen *out, const reply_delta *d) {
    return oai_chunk((const oai_gen *)out, d, NULL);
}

static void add_usage(cJSON *o, const sched_result *res) {
    cJSON *u = cJSON_AddObjectToObject(o, "usage");
    cJSON_AddNumberToObject(u, "prompt_tokens", res->prompt_eval_count);
    cJSON_AddNumberToObject(u, "completion_tokens", res->eval_count);
    cJSON_AddNumberToObject(u, "total_tokens", res->prompt_eval_count + res->eval_count);
    if (res->truncated_messages || res->truncated_tokens) {   /* Anvil's: the prompt was shortened */
        cJSON *t = cJSON_AddObjectToObject(u, "prompt_truncated");
        cJSON_AddNumberToObject(t, "messages", res->truncated_messages);
        cJSON_AddNumberToObject(t, "tokens", res->truncated_tokens);
    }
}

static void make_id(char *buf, size_t cap, const char *prefix) {
    static atomic_uint counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned n = atomic_fetch_add(&counter, 1);
    snprintf(buf, cap, "%s-%08lx%04x", prefix, (unsigned long)(ts.tv_nsec ^ (long)ts.tv_sec * 2654435761u) & 0xffffffffUL,
             n & 0xffffu);
}

/* The fields both completion routes read: model, stream, stream_options, the sampling
 * options, response_format and reasoning_effort (tools are read by the chat route). */
static void read_common(api_req *c, const cJSON *body, oai_gen *g) {
    sched_gen_request *q = &g->out.q;
    q->model = g->model = aj_model(c, body, false);
    c->stream = aj_bool(c, body, "stream", false);
    g->include_usage = aj_bool(c, aj_object(c, body, "stream_options"), "include_usage", false);
    q->options = g->options = map_options(c, body);
    q->format = g->out.format = map_response_format(c, body);
    aj_think(&g->out, body);
}

/* /v1/chat/completions: the messages, a non-empty array. */
static void read_messages(api_req *c, const cJSON *body, aj_gen *g) {
    const cJSON *arr = aj_array(c, body, "messages");
    if (!c->failed && !cJSON_GetArraySize(arr)) aj_fail(c, 400, "messages", "'messages' must be a non-empty array");
    aj_messages(g, arr, message_text);
}

/* /v1/completions: the prompt (a string, or an array of one), without suffix or echo. */
static void read_prompt(api_req *c, const cJSON *body, sched_gen_request *q) {
    const cJSON *p = aj_any(body, "prompt");
    if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1) p = cJSON_GetArrayItem(p, 0);
    q->prompt = cJSON_IsString(p) ? p->valuestring : NULL;
    if (!q->prompt) aj_fail(c, 400, "prompt", "invalid value for field 'prompt': expected a string");
    const char *suffix = aj_string(c, body, "suffix");
    if (suffix && *suffix) aj_fail(c, 400, "suffix", "suffix (insert) is not supported");
    if (aj_bool(c, body, "echo", false)) aj_fail(c, 400, "echo", "echo is not supported");
}

/* The end of a stream: the finishing chunk, the usage chunk if asked, [DONE]. */
static void send_stream_end(oai_gen *g, const char *finish) {
    api_req *c = g->out.c;
    cJSON *last = oai_chunk(g, NULL, finish);
    aj_attach_logprobs(&g->out, last);   /* the tokens no chunk carried yet */
    bool ok = aj_send(c, last);
    if (ok && g->include_usage) {
        cJSON *u = oai_head(g, g->chat ? "chat.completion.chunk" : "text_completion");
        cJSON_AddArrayToObject(u, "choices");
        add_usage(u, &g->out.res);
        ok = aj_send(c, u);
    }
    if (ok) aj_end(c);   /* "data: [DONE]" */
    else http_stream_end(c->r);
}

/* The whole completion: one choice with all the text, and the usage. */
static cJSON *whole_completion(const oai_gen *g, const char *finish) {
    cJSON *o = oai_head(g, g->chat ? "chat.completion" : "text_completion");
    cJSON *choices = cJSON_AddArrayToObject(o, "choices");
    cJSON_AddItemToArray(choices, oai_choice(g, "message", bytebuf_str(&g->out.text), g->out.text.len,
                                             bytebuf_str(&g->out.thinking), g->out.thinking.len,
                                             g->out.calls ? cJSON_GetArraySize(g->out.calls) : 0, finish));
    add_usage(o, &g->out.res);
    return o;
}

static void oai_generate(http_req *r, bool chat) {
    api_images images = {0};
    api_req c = {.r = r, .openai = true, .images = chat ? &images : NULL};
    cJSON *body = aj_parse_body(&c);
    if (!body) return;
    oai_gen g = {.out = {.c = &c, .chunk = oai_text_chunk}, .chat = chat, .created = aj_unix_seconds()};
    make_id(g.id, sizeof g.id, chat ? "chatcmpl" : "cmpl");
    read_common(&c, body, &g);
    if (chat) {
        read_messages(&c, body, &g.out);
        aj_tools(&g.out, body);
        aj_logprobs_request(&g.out, body);
    } else {
        read_prompt(&c, body, &g.out.q);
        /* the legacy "logprobs": N (0..5 in OpenAI's API; up to 20 here) */
        g.out.top_logprobs = (int)aj_int(&c, body, "logprobs", -1, 0, 20);
        g.out.want_logprobs = g.out.logprobs_legacy = g.out.top_logprobs >= 0;
        if (g.out.top_logprobs < 0) g.out.top_logprobs = 0;
    }
    if (!c.failed && aj_generate(&g.out)) {
        const sched_result *res = &g.out.res;
        const char *finish = g.out.calls && cJSON_GetArraySize(g.out.calls) ? "tool_calls"
                           : res->done_reason && !strcmp(res->done_reason, "length") ? "length" : "stop";
        if (c.stream) send_stream_end(&g, finish);
        else {
            cJSON *whole = whole_completion(&g, finish);
            aj_attach_logprobs(&g.out, whole);
            aj_reply(r, 200, whole);
        }
    }
    aj_gen_clear(&g.out);
    cJSON_Delete(g.options);
    api_images_free(&images);
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

/* The list of embeddings: float arrays, or base64 of their little-endian float32 bytes. */
static cJSON *embedding_list(const sched_embed_result *res, const char *model, bool b64) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "object", "list");
    cJSON *data = cJSON_AddArrayToObject(o, "data");
    for (int i = 0; i < res->n; i++) {
        const float *v = res->embeddings + (size_t)i * (size_t)res->dim;
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "object", "embedding");
        if (b64) { /* little-endian float32 bytes, as OpenAI sends them */
            size_t nb = (size_t)res->dim * sizeof(float);
            char *enc64 = malloc(4 * ((nb + 2) / 3) + 1);
            if (enc64) {
                EVP_EncodeBlock((unsigned char *)enc64, (const unsigned char *)v, (int)nb);
                cJSON_AddStringToObject(e, "embedding", enc64);
                free(enc64);
            }
        } else {
            bytebuf b = {0};
            api_float_array(&b, v, res->dim);
            cJSON_AddRawToObject(e, "embedding", b.data ? b.data : "[]");
            bytebuf_free(&b);
        }
        cJSON_AddNumberToObject(e, "index", i);
        cJSON_AddItemToArray(data, e);
    }
    cJSON_AddStringToObject(o, "model", model);
    cJSON *u = cJSON_AddObjectToObject(o, "usage");
    cJSON_AddNumberToObject(u, "prompt_tokens", res->prompt_eval_count);
    cJSON_AddNumberToObject(u, "total_tokens", res->prompt_eval_count);
    return o;
}

/* OpenAI's token-array inputs: [1, 2, 3] (one input) or [[1, 2], [3]] (several). False when
 * input is not one (strings: aj_strings reads them); with c failed on a bad element. */
typedef struct {
    int32_t **lists;
    int *lens;
    int n;
} token_inputs;

static int32_t *token_list(api_req *c, const cJSON *arr, const char *field, int *n_out) {
    int n = cJSON_GetArraySize(arr);
    int32_t *t = malloc((size_t)(n ? n : 1) * sizeof *t);
    if (!t) { aj_fail(c, 500, NULL, "out of memory"); return NULL; }
    int i = 0;   /* walk the list (cJSON_GetArrayItem is O(i)) */
    for (const cJSON *v = arr->child; v && i < n; v = v->next, i++) {
        if (!cJSON_IsNumber(v) || v->valuedouble != (double)(int32_t)v->valuedouble) {
            char name[48];
            snprintf(name, sizeof name, "%s[%d]", field, i);
            aj_fail(c, 400, name, "invalid value for field '%s': expected a token id (an integer)", name);
            free(t);
            return NULL;
        }
        t[i] = (int32_t)v->valuedouble;
    }
    *n_out = n;
    return t;
}

static bool read_token_inputs(api_req *c, const cJSON *input, token_inputs *ti) {
    const cJSON *first = cJSON_IsArray(input) ? cJSON_GetArrayItem(input, 0) : NULL;
    if (!first || !(cJSON_IsNumber(first) || cJSON_IsArray(first))) return false;
    bool nested = cJSON_IsArray(first);
    int n = nested ? cJSON_GetArraySize(input) : 1;
    ti->lists = calloc((size_t)n, sizeof *ti->lists);
    ti->lens = calloc((size_t)n, sizeof *ti->lens);
    if (!ti->lists || !ti->lens) { aj_fail(c, 500, NULL, "out of memory"); return true; }
    ti->n = n;
    const cJSON *next = nested ? input->child : input;
    for (int i = 0; i < n && next && !c->failed; i++) {
        char field[32];
        snprintf(field, sizeof field, nested ? "input[%d]" : "input", i);
        const cJSON *arr = next;
        next = nested ? next->next : NULL;
        if (!cJSON_IsArray(arr)) {
            aj_fail(c, 400, field, "invalid value for field '%s': expected an array of token ids", field);
            break;
        }
        if (cJSON_GetArraySize(arr) == 0) { aj_fail(c, 400, field, "invalid input: '%s' must not be empty", field); break; }
        ti->lists[i] = token_list(c, arr, field, &ti->lens[i]);
    }
    return true;
}

static void token_inputs_free(token_inputs *ti) {
    for (int i = 0; ti->lists && i < ti->n; i++) free(ti->lists[i]);
    free(ti->lists);
    free(ti->lens);
}

void oai_embeddings(http_req *r) {
    api_req c = {.r = r, .openai = true};
    cJSON *body = aj_parse_body(&c);
    if (!body) return;
    aj_embed e = {.c = &c, .q.truncate = true};
    token_inputs ti = {0};
    e.q.model = aj_model(&c, body, false);
    const cJSON *input = aj_any(body, "input");
    if (!c.failed && !input) aj_fail(&c, 400, "input", "invalid input: 'input' is required");
    if (!c.failed && read_token_inputs(&c, input, &ti)) {   /* token ids, as OpenAI's API allows */
        e.q.token_inputs = (const int32_t *const *)ti.lists;
        e.q.token_lens = ti.lens;
        e.q.n_inputs = ti.n;
    } else {
        aj_embed_inputs(&e, body, "input");
    }
    if (!c.failed && e.q.n_inputs == 0) aj_fail(&c, 400, "input", "invalid input: 'input' must not be empty");
    e.q.dimensions = (int)aj_int(&c, body, "dimensions", 0, 0, 1 << 20);
    const char *enc = aj_string(&c, body, "encoding_format");
    bool b64 = enc && !strcmp(enc, "base64");
    if (enc && !b64 && strcmp(enc, "float")) aj_fail(&c, 400, "encoding_format", "invalid encoding_format '%.40s': expected float or base64", enc);
    if (!c.failed && aj_embed_run(&e)) aj_reply(r, 200, embedding_list(&e.res, e.q.model, b64));
    aj_embed_clear(&e);
    token_inputs_free(&ti);
    cJSON_Delete(body);
}
