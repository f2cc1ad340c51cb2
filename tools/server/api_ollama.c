/* api_ollama: Ollama's generation endpoints: GET/HEAD /, POST /api/generate, /api/chat
 * (streamed as NDJSON or one object), /api/embed and the legacy /api/embeddings. Parses
 * and checks requests strictly, hands them to the scheduler and frames its output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_json.h"

void api_root(http_req *r) {
    static const char text[] = "Ollama is running";
    http_reply(r, 200, "text/plain; charset=utf-8", text, sizeof text - 1);
}

/* Refuses what a text-only engine without tools or thinking cannot honour. */
static void refuse_unsupported(api_req *c, const cJSON *body, const char *model) {
    const cJSON *think = aj_any(body, "think");
    if (think && !cJSON_IsFalse(think) && !(cJSON_IsString(think) && !strcmp(think->valuestring, "false")))
        aj_fail(c, 400, "think", "model '%s' does not support thinking", model);
    const cJSON *tools = aj_array(c, body, "tools");
    if (tools && cJSON_GetArraySize(tools) > 0) aj_fail(c, 400, "tools", "model '%s' does not support tools", model);
    const cJSON *images = aj_array(c, body, "images");
    if (images && cJSON_GetArraySize(images) > 0)
        aj_fail(c, 400, "images", "model '%s' does not support image input (it is a text-only model)", model);
    const char *suffix = aj_string(c, body, "suffix");
    if (suffix && *suffix) aj_fail(c, 400, "suffix", "model '%s' does not support insert (suffix)", model);
}

typedef struct {
    http_req *r;
    const char *model;
    bool chat, stream, begun;
    bytebuf text;
} ollama_gen;

static cJSON *chunk_head(const ollama_gen *g) {
    char ts[40];
    aj_now_rfc3339(ts);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", g->model);
    cJSON_AddStringToObject(o, "created_at", ts);
    return o;
}

static void add_text(const ollama_gen *g, cJSON *o, const char *text, size_t len) {
    if (g->chat) {
        cJSON *m = cJSON_AddObjectToObject(o, "message");
        cJSON_AddStringToObject(m, "role", "assistant");
        aj_add_text(m, "content", text, len);
    } else {
        aj_add_text(o, "response", text, len);
    }
}

static bool ollama_on_text(const char *text, int len, void *user) {
    ollama_gen *g = user;
    if (!g->stream) {
        bytebuf_add(&g->text, text, (size_t)len);
        return !g->text.oom && http_client_alive(g->r);
    }
    if (!g->begun) {
        http_stream_begin(g->r, 200, "application/x-ndjson");
        g->begun = true;
    }
    if (len <= 0) return http_client_alive(g->r);
    cJSON *o = chunk_head(g);
    add_text(g, o, text, (size_t)len);
    cJSON_AddBoolToObject(o, "done", false);
    return aj_stream_ndjson(g->r, o) && http_client_alive(g->r);
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
}

/* The messages of /api/chat; NULL + failure on a bad one. */
static chat_message *parse_messages(api_req *c, const cJSON *arr, int *n_out) {
    int n = cJSON_GetArraySize(arr);
    *n_out = 0;
    if (n == 0) return NULL;
    chat_message *m = calloc((size_t)n, sizeof *m);
    if (!m) { aj_fail(c, 500, NULL, "out of memory"); return NULL; }
    int i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        char field[48];
        if (!cJSON_IsObject(it)) {
            aj_fail(c, 400, "messages", "invalid value for field 'messages[%d]': expected an object", i);
            break;
        }
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(it, "role");
        const cJSON *content = aj_any(it, "content");
        snprintf(field, sizeof field, "messages[%d].role", i);
        if (!cJSON_IsString(role)) { aj_fail(c, 400, field, "invalid value for field '%s': expected a string", field); break; }
        if (strcmp(role->valuestring, "system") && strcmp(role->valuestring, "user") &&
            strcmp(role->valuestring, "assistant") && strcmp(role->valuestring, "tool")) {
            aj_fail(c, 400, field, "invalid role '%.40s' in '%s': expected system, user, assistant or tool",
                    role->valuestring, field);
            break;
        }
        snprintf(field, sizeof field, "messages[%d].content", i);
        if (content && !cJSON_IsString(content)) { aj_fail(c, 400, field, "invalid value for field '%s': expected a string", field); break; }
        const cJSON *images = aj_any(it, "images");
        if (images && (!cJSON_IsArray(images) || cJSON_GetArraySize(images) > 0)) {
            aj_fail(c, 400, "images", "image input is not supported: the model is text-only");
            break;
        }
        m[i].role = role->valuestring;
        m[i].content = content ? content->valuestring : "";
        i++;
    }
    if (c->failed) { free(m); return NULL; }
    *n_out = n;
    return m;
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

static void ollama_generate_or_chat(http_req *r, bool chat) {
    api_req c = {.r = r};
    cJSON *body = aj_parse_body(&c);
    if (!body) return;
    ollama_gen g = {.r = r, .chat = chat};
    sched_gen_request q = {0};
    sched_result res = {0};
    chat_message *msgs = NULL;
    int32_t *context = NULL;
    char *format = NULL;

    q.model = aj_string(&c, body, "model");
    if (!c.failed && (!q.model || !*q.model)) aj_fail(&c, 400, "model", "model is required");
    if (c.failed) goto out;
    http_set_model(r, q.model);
    g.model = q.model;
    g.stream = aj_bool(&c, body, "stream", true);
    q.options = aj_object(&c, body, "options");
    q.keep_alive_set = aj_keep_alive(&c, body, "keep_alive", &q.keep_alive_ms);
    format = api_parse_format(&c, body, "format");
    q.format = format;
    refuse_unsupported(&c, body, q.model);
    if (chat) {
        const cJSON *m = aj_array(&c, body, "messages");
        if (m) msgs = parse_messages(&c, m, &q.n_messages);
        q.messages = msgs;
    } else {
        q.prompt = aj_string(&c, body, "prompt");
        q.system = aj_string(&c, body, "system");
        q.template_go = aj_string(&c, body, "template");
        q.raw = aj_bool(&c, body, "raw", false);
        const cJSON *ctx = aj_array(&c, body, "context");
        if (ctx) context = parse_context(&c, ctx, &q.n_context);
        q.context = context;
        q.want_context = !q.raw;
        if (q.template_go && !*q.template_go) q.template_go = NULL;
        if (q.system && !*q.system) q.system = NULL;
    }
    if (c.failed) goto out;
    q.on_text = ollama_on_text;
    q.user = &g;

    int rc = sched_generate(((server_app *)http_app(r))->sched, &q, &res);
    if (rc) {
        int status = res.status ? res.status : 500;
        const char *msg = res.error[0] ? res.error : "generation failed";
        if (g.begun) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "error", msg);
            aj_stream_ndjson(r, e);
            http_stream_end(r);
        } else {
            aj_fail(&c, status, NULL, "%s", msg);
        }
        goto out;
    }
    cJSON *fin = chunk_head(&g);
    if (g.stream) add_text(&g, fin, "", 0);
    else add_text(&g, fin, bytebuf_str(&g.text), g.text.len);
    cJSON_AddBoolToObject(fin, "done", true);
    add_final_stats(fin, &res);
    if (g.stream) {
        if (!g.begun) http_stream_begin(r, 200, "application/x-ndjson");
        aj_stream_ndjson(r, fin);
        http_stream_end(r);
    } else {
        aj_reply(r, 200, fin);
    }
out:
    sched_result_clear(&res);
    bytebuf_free(&g.text);
    free(msgs);
    free(context);
    free(format);
    cJSON_Delete(body);
}

void api_generate(http_req *r) { ollama_generate_or_chat(r, false); }
void api_chat(http_req *r) { ollama_generate_or_chat(r, true); }

static void ollama_embed(http_req *r, bool legacy) {
    api_req c = {.r = r};
    cJSON *body = aj_parse_body(&c);
    if (!body) return;
    sched_embed_request q = {0};
    sched_embed_result res = {0};
    const char **inputs = NULL;
    q.model = aj_string(&c, body, "model");
    if (!c.failed && (!q.model || !*q.model)) aj_fail(&c, 400, "model", "model is required");
    if (c.failed) goto out;
    http_set_model(r, q.model);
    if (legacy) {
        const char *p = aj_string(&c, body, "prompt");
        if (p && *p) {
            inputs = malloc(sizeof *inputs);
            if (!inputs) { aj_fail(&c, 500, NULL, "out of memory"); goto out; }
            inputs[0] = p;
            q.n_inputs = 1;
        }
        q.truncate = true;
    } else {
        inputs = api_parse_inputs(&c, body, "input", &q.n_inputs);
        q.truncate = aj_bool(&c, body, "truncate", true);
        q.dimensions = (int)aj_int(&c, body, "dimensions", 0, 0, 1 << 20);
    }
    q.inputs = inputs;
    q.options = aj_object(&c, body, "options");
    q.keep_alive_set = aj_keep_alive(&c, body, "keep_alive", &q.keep_alive_ms);
    if (c.failed) goto out;
    if (sched_embed(((server_app *)http_app(r))->sched, &q, &res)) {
        aj_fail(&c, res.status ? res.status : 500, NULL, "%s", res.error[0] ? res.error : "embedding failed");
        goto out;
    }
    bytebuf vec = {0};
    cJSON *o = cJSON_CreateObject();
    if (legacy) {
        if (res.n > 0) api_float_array(&vec, res.embeddings, res.dim);
        else bytebuf_add(&vec, "[]", 2);
        cJSON_AddRawToObject(o, "embedding", vec.data ? vec.data : "[]");
    } else {
        cJSON_AddStringToObject(o, "model", q.model);
        bytebuf_add(&vec, "[", 1);
        for (int i = 0; i < res.n; i++) {
            if (i) bytebuf_add(&vec, ",", 1);
            api_float_array(&vec, res.embeddings + (size_t)i * (size_t)res.dim, res.dim);
        }
        bytebuf_add(&vec, "]", 1);
        cJSON_AddRawToObject(o, "embeddings", vec.data ? vec.data : "[]");
        cJSON_AddNumberToObject(o, "total_duration", (double)res.total_ns);
        cJSON_AddNumberToObject(o, "load_duration", (double)res.load_ns);
        cJSON_AddNumberToObject(o, "prompt_eval_count", res.prompt_eval_count);
    }
    if (vec.oom) { cJSON_Delete(o); aj_fail(&c, 500, NULL, "out of memory"); }
    else aj_reply(r, 200, o);
    bytebuf_free(&vec);
out:
    sched_embed_result_clear(&res);
    free(inputs);
    cJSON_Delete(body);
}

void api_embed(http_req *r) { ollama_embed(r, false); }
void api_embeddings(http_req *r) { ollama_embed(r, true); }
