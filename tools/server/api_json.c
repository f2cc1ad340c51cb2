/* api_json: the request-field readers, replies, streams and generation/embedding runs of the
 * Ollama and OpenAI handlers (see api_json.h). */
#include "api_json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "api_error.h"
#include "settings.h"
#include "api_images.h"
#include "vision.h"

void aj_fail(api_req *c, int status, const char *param, const char *fmt, ...) {
    if (c->failed) return;
    c->failed = true;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cJSON *o = c->anthropic ? api_error_anthropic(status, msg) : api_error_object(c->openai, status, param, msg);
    if (!c->begun) { aj_reply(c->r, status, o); return; }
    aj_send(c, o);
    http_stream_end(c->r);
}

/* Does the JSON text hold a NUL character: a raw 0 byte or the escape \u0000? C strings
 * end there, so cJSON would silently cut the string (a name "a\u0000b" read as "a"). */
static bool has_nul(const char *t, size_t len) {
    if (memchr(t, 0, len)) return true;
    for (size_t i = 0; i + 1 < len; i++) {
        if (t[i] != '\\') continue;
        if (t[i + 1] == 'u' && i + 5 < len && !memcmp(t + i + 2, "0000", 4)) return true;
        i++;  /* skip the escaped character (an escaped backslash included) */
    }
    return false;
}

typedef struct { cJSON *it; size_t idx; } keyed_item;

static const char *key_of(const cJSON *it) { return it->string ? it->string : ""; }

static int cmp_items(const void *a, const void *b) {
    const keyed_item *x = a, *y = b;
    int r = strcmp(key_of(x->it), key_of(y->it));
    return r ? r : (x->idx < y->idx ? -1 : x->idx > y->idx);
}

/* Duplicate keys take the last value, as Go's encoding/json does (cJSON's lookups would
 * find the first): earlier duplicates are removed, in every object of the tree. */
static bool drop_duplicate_keys(cJSON *o) {
    for (cJSON *it = o ? o->child : NULL; it; it = it->next)
        if ((cJSON_IsObject(it) || cJSON_IsArray(it)) && !drop_duplicate_keys(it)) return false;
    if (!cJSON_IsObject(o)) return true;
    size_t n = 0;
    for (cJSON *it = o->child; it; it = it->next) n++;
    if (n < 2) return true;
    keyed_item *v = malloc(n * sizeof *v);
    if (!v) return false;
    size_t i = 0;
    for (cJSON *it = o->child; it; it = it->next, i++) v[i] = (keyed_item){it, i};
    qsort(v, n, sizeof *v, cmp_items);  /* equal keys together, in document order */
    for (i = 0; i + 1 < n; i++)
        if (!strcmp(key_of(v[i].it), key_of(v[i + 1].it))) cJSON_Delete(cJSON_DetachItemViaPointer(o, v[i].it));
    free(v);
    return true;
}

cJSON *aj_parse_body(api_req *c) {
    size_t len;
    const char *body = http_body(c->r, &len);
    if (!len) { aj_fail(c, 400, NULL, "missing request body (a JSON object)"); return NULL; }
    if (has_nul(body, len)) {
        aj_fail(c, 400, NULL, "invalid JSON in the request body: a string holds a NUL character (\\u0000), which is not supported");
        return NULL;
    }
    const char *end = NULL;
    cJSON *o = cJSON_ParseWithLengthOpts(body, len, &end, 0);
    if (!o) {
        size_t at = end && end >= body ? (size_t)(end - body) : 0;
        aj_fail(c, 400, NULL, "invalid JSON in the request body (near byte %zu)", at);
        return NULL;
    }
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        aj_fail(c, 400, NULL, "the request body must be a JSON object");
        return NULL;
    }
    if (!drop_duplicate_keys(o)) {
        cJSON_Delete(o);
        aj_fail(c, 500, NULL, "out of memory");
        return NULL;
    }
    return o;
}

const cJSON *aj_any(const cJSON *o, const char *key) {
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    return v && !cJSON_IsNull(v) ? v : NULL;
}

static const struct {
    const char *want;
    cJSON_bool (*is)(const cJSON *);
} types[] = {
    [AJ_STRING] = {"a string", cJSON_IsString}, [AJ_BOOL] = {"true or false", cJSON_IsBool},
    [AJ_NUMBER] = {"a number", cJSON_IsNumber}, [AJ_OBJECT] = {"an object", cJSON_IsObject},
    [AJ_ARRAY] = {"an array", cJSON_IsArray},
};

static void fail_type(api_req *c, const char *field, const char *want) {
    aj_fail(c, 400, field, "invalid value for field '%s': expected %s", field, want);
}

const cJSON *aj_check(api_req *c, const cJSON *v, const char *field, aj_type t) {
    if (c->failed || !v || cJSON_IsNull(v)) return NULL;
    if (types[t].is(v)) return v;
    fail_type(c, field, types[t].want);
    return NULL;
}

const cJSON *aj_need(api_req *c, const cJSON *v, const char *field, aj_type t) {
    if (c->failed) return NULL;
    if (v && types[t].is(v)) return v;
    fail_type(c, field, types[t].want);
    return NULL;
}

const char *aj_string(api_req *c, const cJSON *o, const char *key) {
    const cJSON *v = aj_check(c, aj_any(o, key), key, AJ_STRING);
    return v ? v->valuestring : NULL;
}

bool aj_bool(api_req *c, const cJSON *o, const char *key, bool def) {
    const cJSON *v = aj_check(c, aj_any(o, key), key, AJ_BOOL);
    return v ? cJSON_IsTrue(v) : def;
}

double aj_number(api_req *c, const cJSON *o, const char *key, double def) {
    const cJSON *v = aj_check(c, aj_any(o, key), key, AJ_NUMBER);
    return v ? v->valuedouble : def;
}

long long aj_int(api_req *c, const cJSON *o, const char *key, long long def, long long lo, long long hi) {
    const cJSON *v = aj_any(o, key);
    if (c->failed || !v) return def;
    double d = v->valuedouble;
    if (!cJSON_IsNumber(v)) fail_type(c, key, "an integer");
    else if (d != floor(d) || d < (double)lo || d > (double)hi)
        aj_fail(c, 400, key, "invalid value for field '%s': expected an integer from %lld to %lld", key, lo, hi);
    return c->failed ? def : (long long)d;
}

const cJSON *aj_object(api_req *c, const cJSON *o, const char *key) {
    return aj_check(c, aj_any(o, key), key, AJ_OBJECT);
}

const cJSON *aj_array(api_req *c, const cJSON *o, const char *key) {
    return aj_check(c, aj_any(o, key), key, AJ_ARRAY);
}

const char **aj_strings(api_req *c, const cJSON *o, const char *key, int *n_out) {
    const cJSON *v = aj_any(o, key);
    *n_out = 0;
    if (c->failed || !v) return NULL;
    if (!cJSON_IsString(v) && !cJSON_IsArray(v)) {
        fail_type(c, key, "a string or an array of strings");
        return NULL;
    }
    int n = cJSON_IsString(v) ? 1 : cJSON_GetArraySize(v);
    const char **l = calloc((size_t)(n ? n : 1), sizeof *l);
    if (!l) { aj_fail(c, 500, NULL, "out of memory"); return NULL; }
    if (cJSON_IsString(v)) l[0] = v->valuestring;
    int i = 0;   /* walk the list: cJSON_GetArrayItem(v, i) is O(i), the walk O(n^2) */
    for (const cJSON *e = cJSON_IsArray(v) ? v->child : NULL; e && i < n; e = e->next, i++) {
        char field[80];
        snprintf(field, sizeof field, "%s[%d]", key, i);
        const cJSON *s = aj_need(c, e, field, AJ_STRING);
        if (!s) { free(l); return NULL; }
        l[i] = s->valuestring;
    }
    *n_out = n;
    return l;
}

const char *aj_model(api_req *c, const cJSON *body, bool or_name) {
    const char *model = aj_string(c, body, "model");
    const char *name = or_name ? aj_string(c, body, "name") : NULL;
    if (c->failed) return NULL;
    if (!model || !*model) model = name;
    if (!model || !*model) {
        aj_fail(c, 400, "model", c->openai ? "you must provide a model parameter" : "model is required");
        return NULL;
    }
    http_set_model(c->r, model);
    return model;
}

const char *aj_role(api_req *c, const cJSON *msg, const char *field) {
    char role_field[80];
    snprintf(role_field, sizeof role_field, "%s.role", field);
    const cJSON *v = aj_need(c, aj_any(msg, "role"), role_field, AJ_STRING);
    if (!v) return NULL;
    const char *role = v->valuestring;
    if (c->openai && !strcmp(role, "developer")) return "system";
    static const char *const roles[] = {"system", "user", "assistant", "tool"};
    for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++)
        if (!strcmp(role, roles[i])) return roles[i];
    aj_fail(c, 400, role_field, "invalid role '%.40s' in '%s': expected system, user, assistant or tool%s", role,
            role_field, c->openai ? " (or developer)" : "");
    return NULL;
}

bool aj_keep_alive(api_req *c, const cJSON *o, const char *key, int64_t *ms) {
    if (c->failed) return false;
    const cJSON *v = aj_any(o, key);
    if (!v) return false;
    if (cJSON_IsNumber(v)) {
        double s = v->valuedouble;
        if (!isfinite(s) || s > 9.0e15 / 1000) { aj_fail(c, 400, key, "invalid value for field '%s'", key); return false; }
        *ms = s < 0 ? -1 : (int64_t)(s * 1000.0);
        return true;
    }
    if (cJSON_IsString(v)) {
        if (sched_parse_duration_ms(v->valuestring, ms)) {
            aj_fail(c, 400, key, "invalid value for field '%s': '%.100s' is not a duration like \"5m\" or a number of seconds",
                    key, v->valuestring);
            return false;
        }
        return true;
    }
    aj_fail(c, 400, key, "invalid value for field '%s': expected a duration string or a number of seconds", key);
    return false;
}

int64_t aj_unix_seconds(void) { return (int64_t)time(NULL); }

void aj_reply(http_req *r, int status, cJSON *o) {
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!s) { http_reply_error(r, 500, "out of memory"); return; }
    http_reply_json(r, status, s);
    free(s);
}

void aj_begin(api_req *c) {
    if (c->begun) return;
    http_stream_begin(c->r, 200, c->openai ? "text/event-stream" : "application/x-ndjson");
    c->begun = true;
}

bool aj_send(api_req *c, cJSON *o) {
    if (!c->stream) { aj_reply(c->r, 200, o); return true; }
    aj_begin(c);
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    const cJSON *type = c->sse_named ? cJSON_GetObjectItemCaseSensitive(o, "type") : NULL;
    bytebuf line = {0};
    if (s && cJSON_IsString(type)) {   /* "event: <type>\n" (the type is ours: no newlines) */
        bytebuf_add(&line, "event: ", 7);
        bytebuf_add(&line, type->valuestring, strlen(type->valuestring));
        bytebuf_add(&line, "\n", 1);
    }
    cJSON_Delete(o);
    if (!s) { bytebuf_free(&line); return false; }
    const char *pre = c->openai ? "data: " : "", *post = c->openai ? "\n\n" : "\n";
    bytebuf_add(&line, pre, strlen(pre));
    bytebuf_add(&line, s, strlen(s));
    bytebuf_add(&line, post, strlen(post));
    bool ok = !line.oom && http_stream_write(c->r, line.data, line.len);
    bytebuf_free(&line);
    free(s);
    return ok;
}

void aj_end(api_req *c) {
    if (!c->begun) return;
    if (c->openai && !c->sse_named) http_stream_write(c->r, "data: [DONE]\n\n", 14);
    http_stream_end(c->r);
}

/* What the parser yielded since the last call: into the whole reply, or sent. */
static bool deliver(aj_gen *g) {
    reply_delta *d = &g->dl;
    bool ok = !d->content.oom && !d->thinking.oom;
    if (d->n_calls && !g->calls && !(g->calls = cJSON_CreateArray())) ok = false;
    for (int i = 0; ok && i < d->n_calls; i++) {
        char id[16];
        aj_call_id(id);
        cJSON *call = cJSON_CreateObject(), *fn = cJSON_AddObjectToObject(call, "function");
        cJSON_AddStringToObject(call, "id", id);
        cJSON_AddNumberToObject(fn, "index", cJSON_GetArraySize(g->calls));
        cJSON_AddStringToObject(fn, "name", d->calls[i].name);
        cJSON *args = cJSON_Parse(d->calls[i].arguments);
        cJSON_AddItemToObject(fn, "arguments", args ? args : cJSON_CreateObject());
        cJSON_AddItemToArray(g->calls, call);
    }
    if (!g->c->stream) {
        bytebuf_add(&g->text, bytebuf_str(&d->content), d->content.len);
        bytebuf_add(&g->thinking, bytebuf_str(&d->thinking), d->thinking.len);
        ok = ok && !g->text.oom && !g->thinking.oom;
    } else if (g->emit) {
        ok = ok && g->emit(g, d);
    } else if (d->content.len || d->thinking.len || d->n_calls) {
        cJSON *o = g->chunk(g, d);
        aj_attach_logprobs(g, o);
        ok = ok && aj_send(g->c, o);
    }
    reply_delta_reset(d);
    return ok;
}

static bool gen_on_text(const char *text, int len, void *user) {
    aj_gen *g = user;
    api_req *c = g->c;
    if (c->stream) aj_begin(c);   /* the first call (the model loaded) starts the stream, text or not */
    if (!g->rp) {
        reply_parse_opts o = g->style;   /* harmony, a Go TEMPLATE's tool tag */
        o.thinking = g->q.think != CHAT_THINK_OFF;
        o.tools = g->q.tools_json != NULL;
        o.tools_json = g->q.tools_json;   /* copied: XML call values typed by the schema */
        if (o.gemma4) o.thinking = CHAT_THINK_IS_ON(g->q.think);   /* Ollama drops Gemma 4's thought channel unless think is on */
        if (!(g->rp = reply_parser_new(&o))) return false;
    }
    if (len > 0 && (!reply_parser_feed(g->rp, text, (size_t)len, &g->dl) || !deliver(g))) return false;
    return http_client_alive(c->r);
}

void aj_messages(aj_gen *g, const cJSON *arr, char *(*text_of)(api_req *c, const cJSON *msg, const char *field)) {
    api_req *c = g->c;
    int n = cJSON_GetArraySize(arr);
    if (c->failed || !n) return;
    g->msgs = calloc((size_t)n, sizeof *g->msgs);
    if (!g->msgs) { aj_fail(c, 500, NULL, "out of memory"); return; }
    const cJSON *m;
    cJSON_ArrayForEach(m, arr) {
        char field[48];
        snprintf(field, sizeof field, "messages[%d]", g->n_msgs);
        const char *role = aj_role(c, aj_need(c, m, field, AJ_OBJECT), field);
        char *text = role ? text_of(c, m, field) : NULL;
        if (!text) return;
        g->msgs[g->n_msgs].role = role;
        g->msgs[g->n_msgs].content = text;
        g->n_msgs++;
        if (!aj_message_extras(c, m, field, &g->msgs[g->n_msgs - 1])) return;
    }
    g->q.messages = g->msgs;
    g->q.n_messages = g->n_msgs;
}

void aj_logprobs_request(aj_gen *g, const cJSON *body) {
    g->want_logprobs = aj_bool(g->c, body, "logprobs", false);
    const cJSON *top = aj_any(body, "top_logprobs");
    if (top && !cJSON_IsNull(top)) {
        if (!cJSON_IsNumber(top) || top->valuedouble < 0 || top->valuedouble > 20 || top->valuedouble != (int)top->valuedouble)
            aj_fail(g->c, 400, "top_logprobs", "top_logprobs must be between 0 and 20");
        else g->top_logprobs = (int)top->valuedouble;
    }
}

cJSON *aj_take_logprobs(aj_gen *g) {
    cJSON *a = g->logprobs;
    g->logprobs = NULL;
    return a;
}

/* {"token", "logprob", "bytes"} of one token (bytes: the piece's UTF-8 bytes, as Ollama and
 * OpenAI give them for pieces that are not whole characters). */
static cJSON *token_logprob(const tokenizer *tok, int32_t id, float logprob) {
    char piece[256];
    int n = tokenizer_token_to_piece(tok, id, piece, (int)sizeof piece - 1, false);
    if (n < 0 || n >= (int)sizeof piece) n = 0;
    piece[n] = 0;
    cJSON *e = cJSON_CreateObject();
    aj_add_text(e, "token", piece, (size_t)n);
    cJSON_AddNumberToObject(e, "logprob", logprob);
    cJSON *bytes = cJSON_AddArrayToObject(e, "bytes");
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(bytes, cJSON_CreateNumber((unsigned char)piece[i]));
    return e;
}

/* An entry's "token" as text (aj_add_text stores it as raw JSON); malloc'd, "" if none. */
static char *entry_token(const cJSON *e) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(e, "token");
    cJSON *parsed = cJSON_IsRaw(t) ? cJSON_Parse(t->valuestring) : NULL;
    const char *s = cJSON_IsString(t) ? t->valuestring : cJSON_GetStringValue(parsed);
    char *r = strdup(s ? s : "");
    cJSON_Delete(parsed);
    return r;
}

void aj_attach_logprobs(aj_gen *g, cJSON *o) {
    if (!g->want_logprobs || !o) return;
    cJSON *a = aj_take_logprobs(g);
    if (!a) a = cJSON_CreateArray();
    if (!g->c->openai) {
        if (cJSON_GetArraySize(a) > 0) cJSON_AddItemToObject(o, "logprobs", a);
        else cJSON_Delete(a);
        return;
    }
    cJSON *choice = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "choices"), 0);
    if (!choice) { cJSON_Delete(a); return; }
    cJSON *lp = cJSON_CreateObject();
    if (g->logprobs_legacy) {   /* {"tokens", "token_logprobs", "top_logprobs": [{token: logprob}], "text_offset"} */
        cJSON *toks = cJSON_AddArrayToObject(lp, "tokens"), *lps = cJSON_AddArrayToObject(lp, "token_logprobs");
        cJSON *tops = cJSON_AddArrayToObject(lp, "top_logprobs"), *offs = cJSON_AddArrayToObject(lp, "text_offset");
        const cJSON *e;
        cJSON_ArrayForEach(e, a) {
            char *t = entry_token(e);
            cJSON_AddItemToArray(toks, cJSON_CreateString(t ? t : ""));
            cJSON_AddItemToArray(lps, cJSON_CreateNumber(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "logprob"))));
            cJSON *top = cJSON_CreateObject();
            const cJSON *alt;
            cJSON_ArrayForEach(alt, cJSON_GetObjectItemCaseSensitive(e, "top_logprobs")) {
                char *at = entry_token(alt);
                if (at && !cJSON_GetObjectItemCaseSensitive(top, at))
                    cJSON_AddNumberToObject(top, at, cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(alt, "logprob")));
                free(at);
            }
            cJSON_AddItemToArray(tops, top);
            cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)g->logprobs_offset));
            g->logprobs_offset += t ? strlen(t) : 0;
            free(t);
        }
        cJSON_Delete(a);
    } else {
        cJSON_AddItemToObject(lp, "content", a);
    }
    if (cJSON_GetObjectItemCaseSensitive(choice, "logprobs")) cJSON_ReplaceItemInObjectCaseSensitive(choice, "logprobs", lp);
    else cJSON_AddItemToObject(choice, "logprobs", lp);
}

static void gen_on_logprob(const gen_logprobs *lp, const tokenizer *tok, void *user) {
    aj_gen *g = user;
    if (!g->logprobs && !(g->logprobs = cJSON_CreateArray())) return;
    cJSON *e = token_logprob(tok, lp->chosen.id, lp->chosen.logprob);
    if (g->top_logprobs > 0) {
        cJSON *top = cJSON_AddArrayToObject(e, "top_logprobs");
        for (int k = 0; k < lp->n_top; k++) cJSON_AddItemToArray(top, token_logprob(tok, lp->top[k].id, lp->top[k].logprob));
    }
    cJSON_AddItemToArray(g->logprobs, e);
}

static bool gen_still_wanted(void *user) {
    aj_gen *g = user;
    return http_client_alive(g->c->r);
}

bool aj_generate(aj_gen *g) {
    server_app *app = http_app(g->c->r);
    api_images *im = g->c->images;
    if (im && im->n > 0) {
        /* a model with a projector (engine/vision) takes images: decoded here, once, and
         * evaluated by the scheduler's worker; a text-only model's answer needs no decoding */
        bool vision = false;
        store_entry e;
        if (g->q.model && store_resolve(app->store, g->q.model, &e) == 0) {
            vision = model_has_vision(e.model_path, e.projector_path);
            store_entry_clear(&e);
        }
        if (!api_images_ready(g->c, im, g->q.model, vision, &app->image_limits)) return false;
        g->q.images = im->decoded;
        g->q.n_images = im->n;
    }
    g->q.on_text = gen_on_text;
    g->q.still_wanted = gen_still_wanted;
    if (g->want_logprobs) {
        g->q.on_logprob = gen_on_logprob;
        g->q.top_logprobs = g->top_logprobs;
    }
    g->q.user = g;
    g->q.reply_style = &g->style;
    sched_result *res = &g->res;
    if (!sched_generate(((server_app *)http_app(g->c->r))->sched, &g->q, res)) {
        if (g->rp && (!reply_parser_finish(g->rp, &g->dl) || !deliver(g))) {
            aj_fail(g->c, 500, NULL, "out of memory");
            return false;
        }
        return true;
    }
    aj_fail(g->c, res->status ? res->status : 500, NULL, "%s", res->error[0] ? res->error : "generation failed");
    return false;
}

void aj_gen_clear(aj_gen *g) {
    for (int i = 0; i < g->n_msgs; i++) {
        free((char *)g->msgs[i].content);
        free((char *)g->msgs[i].thinking);
        free((char *)g->msgs[i].tool_calls);
        free((char *)g->msgs[i].tool_name);
    }
    free(g->msgs);
    free(g->format);
    free(g->tools_json);
    bytebuf_free(&g->text);
    bytebuf_free(&g->thinking);
    cJSON_Delete(g->calls);
    cJSON_Delete(g->logprobs);
    reply_parser_free(g->rp);
    reply_delta_free(&g->dl);
    sched_result_clear(&g->res);
}

void aj_embed_inputs(aj_embed *e, const cJSON *body, const char *key) {
    free((void *)e->q.inputs);
    e->q.inputs = aj_strings(e->c, body, key, &e->q.n_inputs);
}

static bool embed_still_wanted(void *user) {
    const aj_embed *e = user;
    return http_client_alive(e->c->r);
}

/* A request's work budget for embeddings: inputs per request (each is one model evaluation;
 * OpenAI allows 2048). ANVIL_MAX_EMBED_INPUTS overrides the default. */
#define EMBED_INPUTS_DEFAULT 100000

bool aj_embed_run(aj_embed *e) {
    sched_embed_result *res = &e->res;
    const char *lim_s = anv_setting_raw("ANVIL_MAX_EMBED_INPUTS");
    const long lim = lim_s && *lim_s && atol(lim_s) > 0 ? atol(lim_s) : EMBED_INPUTS_DEFAULT;
    if (e->q.n_inputs > lim) {
        aj_fail(e->c, 400, "input", "input has %d items, more than the %ld one request may embed (ANVIL_MAX_EMBED_INPUTS)",
                e->q.n_inputs, lim);
        return false;
    }
    e->q.still_wanted = embed_still_wanted;
    e->q.user = e;
    if (!sched_embed(((server_app *)http_app(e->c->r))->sched, &e->q, res)) return true;
    aj_fail(e->c, res->status ? res->status : 500, NULL, "%s", res->error[0] ? res->error : "embedding failed");
    return false;
}

void aj_embed_clear(aj_embed *e) {
    free((void *)e->q.inputs);
    sched_embed_result_clear(&e->res);
}

char *aj_format(api_req *c, const cJSON *body, const char *key) {
    const cJSON *f = aj_any(body, key);
    if (!f || c->failed) return NULL;
    if (cJSON_IsString(f) && !f->valuestring[0]) return NULL;
    if (cJSON_IsString(f) && !strcmp(f->valuestring, "json")) return strdup("json");
    if (cJSON_IsObject(f)) return cJSON_PrintUnformatted(f);
    fail_type(c, key, "\"json\" or a JSON schema object");
    return NULL;
}

/* "[v0,v1,...]" for n floats (shortest text that reads back the same float). */
void api_float_array(bytebuf *b, const float *v, int n) {
    bytebuf_add(b, "[", 1);
    for (int i = 0; i < n; i++) {
        char num[32];
        int k = snprintf(num, sizeof num, "%s%.9g", i ? "," : "", (double)v[i]);
        bytebuf_add(b, num, (size_t)k);
    }
    bytebuf_add(b, "]", 1);
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (!len || len > n) return 0;
    unsigned cp = len == 1 ? c : len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    static const unsigned min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return len;
}

void aj_add_text(cJSON *o, const char *key, const char *text, size_t n) {
    bytebuf b = {0};
    bytebuf_add(&b, "\"", 1);
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        char esc[8];
        if (c < 0x20 || c == '"' || c == '\\') {
            const char *short_esc = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n"
                                  : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
            if (short_esc) bytebuf_add(&b, short_esc, 2);
            else { snprintf(esc, sizeof esc, "\\u%04x", c); bytebuf_add(&b, esc, 6); }
            i++;
            continue;
        }
        size_t len = utf8_len(s + i, n - i);
        if (!len) { bytebuf_add(&b, "\\ufffd", 6); i++; continue; }
        bytebuf_add(&b, text + i, len);
        i += len;
    }
    bytebuf_add(&b, "\"", 1);
    if (b.oom) cJSON_AddStringToObject(o, key, "");
    else cJSON_AddRawToObject(o, key, b.data);
    bytebuf_free(&b);
}
