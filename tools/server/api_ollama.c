/* api_ollama: Ollama's generation endpoints: GET/HEAD /, POST /api/generate, /api/chat
 * (streamed as NDJSON or one object), /api/embed and the legacy /api/embeddings. Parses
 * and checks requests strictly, hands them to the scheduler and frames its output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_images.h"
#include "api_json.h"
#include "clock.h"

void api_root(http_req *r) {
    static const char text[] = "Ollama is running";
    http_reply(r, 200, "text/plain; charset=utf-8", text, sizeof text - 1);
}

/* Refuses what the engine cannot honour (tools and thinking are the model's to accept: the
 * scheduler answers 400 for a model without them; images: api_images_ready). */
static void refuse_unsupported(api_req *c, const cJSON *body, const char *model) {
    const char *suffix = aj_string(c, body, "suffix");
    if (suffix && *suffix) aj_fail(c, 400, "suffix", "model '%s' does not support insert (suffix)", model);
}

typedef struct {
    aj_gen out;   /* first: the chunk builder gets the whole struct as an aj_gen */
    const char *model;
    bool chat;
    int32_t *context;   /* out.q.context, malloc'd */
    char *prompt;       /* out.q.prompt with its image markers, malloc'd (NULL: no images) */
} ollama_gen;

static cJSON *chunk_head(const ollama_gen *g) {
    char ts[48];
    anv_rfc3339_utc(anv_wall_ns(), 9, ts);   /* nanoseconds, as Ollama */
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", g->model);
    cJSON_AddStringToObject(o, "created_at", ts);
    return o;
}

/* The reply fields: "message" {role, content, thinking?, tool_calls?} on /api/chat,
 * "response" and "thinking"? on /api/generate. calls: the last n_calls of g->out.calls. */
static void add_text(const ollama_gen *g, cJSON *o, const char *text, size_t len, const char *thinking,
                     size_t thinking_len, int n_calls) {
    cJSON *at = o;
    if (g->chat) {
        at = cJSON_AddObjectToObject(o, "message");
        cJSON_AddStringToObject(at, "role", "assistant");
        aj_add_text(at, "content", text, len);
    } else {
        aj_add_text(o, "response", text, len);
    }
    if (thinking_len) aj_add_text(at, "thinking", thinking, thinking_len);
    int total = g->out.calls ? cJSON_GetArraySize(g->out.calls) : 0;
    if (g->chat && n_calls > 0 && total >= n_calls) {
        cJSON *arr = cJSON_AddArrayToObject(at, "tool_calls");
        for (int i = total - n_calls; i < total; i++)
            cJSON_AddItemToArray(arr, cJSON_Duplicate(cJSON_GetArrayItem(g->out.calls, i), true));
    }
}

/* One streamed piece: {"model","created_at","response" or "message","done":false}. */
static cJSON *ollama_chunk(const aj_gen *out, const reply_delta *d) {
    const ollama_gen *g = (const ollama_gen *)out;
    cJSON *o = chunk_head(g);
    add_text(g, o, bytebuf_str(&d->content), d->content.len, bytebuf_str(&d->thinking), d->thinking.len, d->n_calls);
    cJSON_AddBoolToObject(o, "done", false);
    return o;
}

static void add_final_stats(cJSON *o, const sched_result *res) {
    cJSON_AddStringToObject(o, "done_reason", res->done_reason ? res->done_reason : "stop");
    bool load_only = res->done_reason && (!strcmp(res->done_reason, "load") || !strcmp(res->done_reason, "unload"));
    if (load_only) return;
    if (res->context) {
        cJSON *ctx = cJSON_AddArrayToObject(o, "context");
        for (int i = 0; i < res->n_context; i++) cJSON_AddItemToArray(ctx, cJSON_CreateNumber(res->context[i]));
    }
    cJSON_AddNumberToObject(o, "total_duration", (double)res->total_ns);
    cJSON_AddNumberToObject(o, "load_duration", (double)res->load_ns);
    cJSON_AddNumberToObject(o, "prompt_eval_count", res->prompt_eval_count);
    cJSON_AddNumberToObject(o, "prompt_eval_duration", (double)res->prompt_eval_ns);
    cJSON_AddNumberToObject(o, "eval_count", res->eval_count);
    cJSON_AddNumberToObject(o, "eval_duration", (double)res->eval_ns);
    if (res->truncated_messages || res->truncated_tokens) {   /* Anvil's: the prompt was shortened */
        cJSON *t = cJSON_AddObjectToObject(o, "prompt_truncated");
        cJSON_AddNumberToObject(t, "messages", res->truncated_messages);
        cJSON_AddNumberToObject(t, "tokens", res->truncated_tokens);
    }
}

/* The base64 strings of "images" (field: its name in errors) into c->images; how many. */
static int read_images(api_req *c, const cJSON *images, const char *field) {
    if (!images || cJSON_IsNull(images)) return 0;
    if (!cJSON_IsArray(images)) {
        aj_fail(c, 400, field, "invalid value for field '%s': expected an array of base64 strings", field);
        return 0;
    }
    int n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, images) {
        char f[80];
        snprintf(f, sizeof f, "%s[%d]", field, n);
        if (!cJSON_IsString(it)) { aj_fail(c, 400, f, "invalid value for field '%s': expected a base64 string", f); return 0; }
        if (api_images_add_base64(c, it->valuestring, f) < 0) return 0;
        n++;
    }
    return n;
}

/* One /api/chat message's text (its "content", a string) with the markers of its "images"
 * (api_images_tag: Ollama's placement). */
static char *message_text(api_req *c, const cJSON *msg, const char *field) {
    char content_field[64], images_field[64];
    snprintf(content_field, sizeof content_field, "%s.content", field);
    snprintf(images_field, sizeof images_field, "%s.images", field);
    const cJSON *content = aj_check(c, aj_any(msg, "content"), content_field, AJ_STRING);
    int first = c->images ? c->images->n : 0;
    int n_images = read_images(c, aj_any(msg, "images"), images_field);
    if (c->failed) return NULL;
    const char *t = content ? content->valuestring : "";
    char *text = n_images ? api_images_tag(c, t, first, n_images) : strdup(t);
    if (!text && !c->failed) aj_fail(c, 500, NULL, "out of memory");
    return text;
}

static int32_t *parse_context(api_req *c, const cJSON *arr, int *n_out) {
    int n = cJSON_GetArraySize(arr);
    *n_out = 0;
    if (!n) return NULL;
    int32_t *t = malloc((size_t)n * sizeof *t);
    if (!t) { aj_fail(c, 500, NULL, "out of memory"); return NULL; }
    int i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        if (!cJSON_IsNumber(it) || it->valuedouble != (double)(int32_t)it->valuedouble || it->valuedouble < 0) {
            aj_fail(c, 400, "context", "invalid value for field 'context': expected an array of token ids");
            free(t);
            return NULL;
        }
        t[i++] = (int32_t)it->valuedouble;
    }
    *n_out = n;
    return t;
}

/* The fields /api/generate and /api/chat share: stream, options, keep_alive, format, truncate and
 * what a text-only engine refuses. */
static void read_common(api_req *c, const cJSON *body, aj_gen *g) {
    c->stream = aj_bool(c, body, "stream", true);
    g->q.options = aj_object(c, body, "options");
    g->q.keep_alive_set = aj_keep_alive(c, body, "keep_alive", &g->q.keep_alive_ms);
    g->q.format = g->format = aj_format(c, body, "format");
    g->q.no_truncate = !aj_bool(c, body, "truncate", true);   /* Ollama's: shorten a long prompt */
    aj_logprobs_request(g, body);
    aj_think(g, body);
    refuse_unsupported(c, body, g->q.model);
}

/* /api/generate: prompt, system, template, raw and the context of an earlier reply. */
static void read_generate(api_req *c, const cJSON *body, ollama_gen *g) {
    sched_gen_request *q = &g->out.q;
    q->prompt = aj_string(c, body, "prompt");
    q->system = aj_string(c, body, "system");
    q->template_go = aj_string(c, body, "template");
    q->raw = aj_bool(c, body, "raw", false);
    const cJSON *ctx = aj_array(c, body, "context");
    if (ctx) g->context = parse_context(c, ctx, &q->n_context);
    q->context = g->context;
    q->want_context = !q->raw;
    int n_images = read_images(c, aj_any(body, "images"), "images");
    if (n_images && !c->failed) q->prompt = g->prompt = api_images_tag(c, q->prompt ? q->prompt : "", 0, n_images);
    if (q->template_go && !*q->template_go) q->template_go = NULL;
    if (q->system && !*q->system) q->system = NULL;
}

/* The last object: the whole text unless it was streamed, done, and the statistics. */
static cJSON *final_object(ollama_gen *g) {
    const api_req *c = g->out.c;
    cJSON *fin = chunk_head(g);
    if (c->stream) add_text(g, fin, "", 0, "", 0, 0);
    else add_text(g, fin, bytebuf_str(&g->out.text), g->out.text.len, bytebuf_str(&g->out.thinking),
                  g->out.thinking.len, g->out.calls ? cJSON_GetArraySize(g->out.calls) : 0);
    cJSON_AddBoolToObject(fin, "done", true);
    add_final_stats(fin, &g->out.res);
    aj_attach_logprobs(&g->out, fin);   /* the rest (all of them unless streamed) */
    return fin;
}

static void ollama_generate_or_chat(http_req *r, bool chat) {
    api_images images = {0};
    api_req c = {.r = r, .images = &images};
    cJSON *body = aj_parse_body(&c);
    if (!body) return;
    ollama_gen g = {.out = {.c = &c, .chunk = ollama_chunk}, .chat = chat};
    g.out.q.model = g.model = aj_model(&c, body, false);
    if (!c.failed) read_common(&c, body, &g.out);
    if (chat) {
        aj_messages(&g.out, aj_array(&c, body, "messages"), message_text);
        aj_tools(&g.out, body);
    } else {
        read_generate(&c, body, &g);
    }
    if (!c.failed && aj_generate(&g.out)) {
        aj_send(&c, final_object(&g));
        aj_end(&c);
    }
    aj_gen_clear(&g.out);
    free(g.context);
    free(g.prompt);
    api_images_free(&images);
    cJSON_Delete(body);
}

void api_generate(http_req *r) { ollama_generate_or_chat(r, false); }
void api_chat(http_req *r) { ollama_generate_or_chat(r, true); }

/* "embeddings": one array of floats per input, or the legacy "embedding" (the first). */
static cJSON *embed_object(const sched_embed_result *res, const char *model, bool legacy) {
    bytebuf vec = {0};
    cJSON *o = cJSON_CreateObject();
    if (legacy) {
        if (res->n > 0) api_float_array(&vec, res->embeddings, res->dim);
        else bytebuf_add(&vec, "[]", 2);
        cJSON_AddRawToObject(o, "embedding", vec.data ? vec.data : "[]");
    } else {
        cJSON_AddStringToObject(o, "model", model);
        bytebuf_add(&vec, "[", 1);
        for (int i = 0; i < res->n; i++) {
            if (i) bytebuf_add(&vec, ",", 1);
            api_float_array(&vec, res->embeddings + (size_t)i * (size_t)res->dim, res->dim);
        }
        bytebuf_add(&vec, "]", 1);
        cJSON_AddRawToObject(o, "embeddings", vec.data ? vec.data : "[]");
        cJSON_AddNumberToObject(o, "total_duration", (double)res->total_ns);
        cJSON_AddNumberToObject(o, "load_duration", (double)res->load_ns);
        cJSON_AddNumberToObject(o, "prompt_eval_count", res->prompt_eval_count);
    }
    if (vec.oom) { cJSON_Delete(o); o = NULL; }
    bytebuf_free(&vec);
    return o;
}

static void ollama_embed(http_req *r, bool legacy) {
    api_req c = {.r = r};
    cJSON *body = aj_parse_body(&c);
    if (!body) return;
    aj_embed e = {.c = &c, .q.truncate = true};
    e.q.model = aj_model(&c, body, false);
    if (legacy) {   /* one "prompt"; an empty one embeds nothing; Ollama does not normalise it */
        const char *p = aj_string(&c, body, "prompt");
        if (p && *p) aj_embed_inputs(&e, body, "prompt");
        e.q.raw = true;
    } else {
        const cJSON *in = aj_any(body, "input");
        if (!(cJSON_IsString(in) && !*in->valuestring)) aj_embed_inputs(&e, body, "input");   /* Ollama: "" embeds nothing */
        e.q.truncate = aj_bool(&c, body, "truncate", true);
        e.q.dimensions = (int)aj_int(&c, body, "dimensions", 0, 0, 1 << 20);
    }
    e.q.options = aj_object(&c, body, "options");
    e.q.keep_alive_set = aj_keep_alive(&c, body, "keep_alive", &e.q.keep_alive_ms);
    if (!c.failed && aj_embed_run(&e)) {
        cJSON *o = embed_object(&e.res, e.q.model, legacy);
        if (o) aj_reply(r, 200, o);
        else aj_fail(&c, 500, NULL, "out of memory");
    }
    aj_embed_clear(&e);
    cJSON_Delete(body);
}

void api_embed(http_req *r) { ollama_embed(r, false); }
void api_embeddings(http_req *r) { ollama_embed(r, true); }
