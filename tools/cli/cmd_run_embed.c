/* cmd_run_embed: `anvil run EMBEDDING-MODEL TEXT` as Ollama's CLI does it: the text's embedding
 * (normalised; --dimensions cuts it, --truncate=false refuses an input longer than the context)
 * printed as one JSON array, through a running server's /api/embed or in this process. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "client.h"
#include "embed_input.h"
#include "error.h"
#include "model.h"

/* The shortest text that reads back as the float32 f (Go's json.Marshal of a float32). */
static void print_float32(float f) {
    char buf[32];
    for (int prec = 1; prec <= 9; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, (double)f);
        if ((float)strtod(buf, NULL) == f) break;
    }
    fputs(buf, stdout);
}

static void print_vector(const float *v, int n) {
    putchar('[');
    for (int i = 0; i < n; i++) {
        if (i) putchar(',');
        print_float32(v[i]);
    }
    puts("]");
}

static int embed_remote(const run_embed_opts *o) {
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "model", o->model);
    cJSON_AddStringToObject(req, "input", o->text);
    if (o->truncate >= 0) cJSON_AddBoolToObject(req, "truncate", o->truncate);
    if (o->dimensions > 0) cJSON_AddNumberToObject(req, "dimensions", o->dimensions);
    if (o->keep_alive) cJSON_AddStringToObject(req, "keep_alive", o->keep_alive);
    char *body = cJSON_PrintUnformatted(req);
    cJSON_Delete(req);
    char *reply = NULL;
    int status = client_request("POST", "/api/embed", body, &reply);
    free(body);
    if (status < 0) anv_die("%s", anv_last_error());
    if (status / 100 != 2) {
        char *msg = client_error_message(status, reply);
        free(reply);
        anv_die("%s", msg);
    }
    cJSON *r = cJSON_Parse(reply);
    free(reply);
    const cJSON *e = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "embeddings"), 0);
    if (!cJSON_IsArray(e)) { cJSON_Delete(r); anv_die("the server returned no embedding"); }
    const int n = cJSON_GetArraySize(e);
    float *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (!v) anv_die("out of memory");
    int i = 0;
    for (const cJSON *x = e->child; x; x = x->next) v[i++] = (float)x->valuedouble;
    print_vector(v, n);
    free(v);
    cJSON_Delete(r);
    return 0;
}

static int embed_local(const run_embed_opts *o) {
    model *m = cli_load_model(o->model_path, o->mo, NULL);
    const int n_embd = m->hp.n_embd;
    int n = 0;
    int32_t *tokens = embed_tokenize(m->tok, o->text, &n);
    if (!tokens) anv_die("tokenizing the input: %s", anv_last_error());
    if (n == 0) anv_die("the input is empty");
    const int n_ctx = o->mo->n_ctx > 0 ? o->mo->n_ctx : m->hp.n_ctx_train;
    if (embed_fit_context(m->tok, tokens, &n, n_ctx, o->truncate != 0, true) != 0)
        anv_die("%s (%d tokens; context %d; --truncate cuts it)", anv_last_error(), n, n_ctx);
    model_ctx *ctx = model_ctx_new(m, n, o->mo->kv_type);
    float *v = malloc((size_t)n_embd * sizeof *v);
    if (!ctx || !v) anv_die("%s", ctx ? "out of memory" : anv_last_error());
    if (model_embed(ctx, tokens, n, v) != 0) anv_die("%s", anv_last_error());
    for (int i = 0; i < n_embd; i++)
        if (!isfinite(v[i])) anv_die("the embedding contains NaN or Inf values");
    print_vector(v, embed_normalize(v, n_embd, o->dimensions));
    free(v);
    free(tokens);
    model_ctx_free(ctx);
    model_free(m);
    return 0;
}

int run_embedding(const run_embed_opts *o) {
    if (!o->text || !*o->text) anv_die("%s is an embedding model: give the text to embed (anvil run MODEL TEXT)", o->model);
    return o->remote ? embed_remote(o) : embed_local(o);
}
