/* api_models: Ollama's model-management endpoints of `anvil serve`: version, tags, show,
 * ps, pull, create, copy, delete and blobs. They translate between Ollama's JSON and the
 * store (store.h), pulls (pull.h), Modelfile creation (model_create.h) and the
 * scheduler's list of loaded models (scheduler.h). Facts about a model (family, parameter
 * count, quantization, metadata) come from its GGUF header (model_facts.c). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "api.h"
#include "error.h"
#include "model_create.h"
#include "model_facts.h"
#include "options.h"
#include "pull.h"
#include "quantize_model.h"

/* ---------------------------------------------------------------- helpers */

static server_app *app_of(http_req *r) { return (server_app *)http_app(r); }

/* Replies with obj (consumed). */
static void reply_obj(http_req *r, int status, cJSON *obj) {
    char *text = obj ? cJSON_PrintUnformatted(obj) : NULL;
    if (!text) http_reply_error(r, 500, "out of memory");
    else http_reply_json(r, status, text);
    free(text);
    cJSON_Delete(obj);
}

/* The request body as a JSON object; replies 400 and returns NULL otherwise. */
static cJSON *parse_body(http_req *r) {
    size_t len = 0;
    const char *body = http_body(r, &len);
    if (!body || !len) { http_reply_error(r, 400, "missing request body"); return NULL; }
    cJSON *j = cJSON_ParseWithLength(body, len);
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        http_reply_error(r, 400, "invalid JSON request body (an object is expected)");
        return NULL;
    }
    return j;
}

static const char *json_str(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool json_bool(const cJSON *o, const char *key, bool dflt) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : dflt;
}

/* Ollama's "model" field, or the legacy "name". */
static const char *request_model(const cJSON *req) {
    const char *m = json_str(req, "model");
    return m && *m ? m : json_str(req, "name");
}

/* A status code for an error message that did not come with one. */
static int status_for_error(const char *msg, int dflt) {
    return strstr(msg, "not found") ? 404 : dflt;
}

/* Validates a model name like the store does; replies 400 with its message if bad. */
static bool check_name(http_req *r, const char *name, const char *field) {
    store_name n;
    if (!name || !*name) { http_reply_error(r, 400, "%s is required", field); return false; }
    if (store_name_parse(name, &n)) { http_reply_error(r, 400, "%s", anv_last_error()); return false; }
    return true;
}

static void add_time(cJSON *o, const char *key, int64_t unix_s) {
    char buf[40];
    facts_rfc3339(unix_s, buf, sizeof buf);
    cJSON_AddStringToObject(o, key, buf);
}

/* Hex part of "sha256:<hex>" (Ollama's tags/ps digest form), "" for NULL. */
static const char *digest_hex(const char *digest) {
    if (!digest) return "";
    const char *c = strchr(digest, ':');
    return c ? c + 1 : digest;
}

/* Modification time of an entry: the manifest's, or the file's for a plain path. */
static int64_t entry_mtime(const store_entry *e) {
    if (e->modified) return e->modified;
    struct stat st;
    return e->model_path && !stat(e->model_path, &st) ? (int64_t)st.st_mtime : 0;
}

/* ---------------------------------------------------------------- version, tags */

void api_version(http_req *r) {
    http_reply_json(r, 200, "{\"version\":\"" ANVIL_VERSION "\"}");
}

void api_tags(http_req *r) {
    server_app *app = app_of(r);
    store_entry *es = NULL;
    int n = 0;
    if (store_list(app->store, &es, &n)) { http_reply_error(r, 500, "%s", anv_last_error()); return; }
    cJSON *root = cJSON_CreateObject();
    cJSON *models = cJSON_AddArrayToObject(root, "models");
    for (int i = 0; i < n; i++) {
        const store_entry *e = &es[i];
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "name", e->name);
        cJSON_AddStringToObject(m, "model", e->name);
        add_time(m, "modified_at", entry_mtime(e));
        cJSON_AddNumberToObject(m, "size", (double)e->size);
        cJSON_AddStringToObject(m, "digest", digest_hex(e->manifest_digest));
        /* the listing does not resolve blobs: find the model layer's here */
        char *path = e->model_path ? strdup(e->model_path)
                   : e->model_digest ? store_find_blob(app->store, e->model_digest) : NULL;
        model_facts f;
        facts_read(path, &f);   /* a damaged or missing file: details say "unknown" */
        free(path);
        cJSON_AddItemToObject(m, "details", facts_details_json(&f));
        facts_close(&f);
        cJSON *caps = cJSON_AddArrayToObject(m, "capabilities");
        cJSON_AddItemToArray(caps, cJSON_CreateString("completion"));
        cJSON_AddItemToArray(models, m);
    }
    store_entries_free(es, n);
    reply_obj(r, 200, root);
}

/* ---------------------------------------------------------------- show */

/* Go's %#v of a JSON value as Ollama prints parameters: strings quoted, numbers short. */
static void go_value(const cJSON *v, char *buf, size_t cap) {
    if (cJSON_IsString(v)) {
        size_t o = 0;
        if (o + 1 < cap) buf[o++] = '"';
        for (const unsigned char *s = (const unsigned char *)v->valuestring; *s && o + 7 < cap; s++) {
            const char *esc = NULL;
            switch (*s) {
            case '"': esc = "\\\""; break;
            case '\\': esc = "\\\\"; break;
            case '\n': esc = "\\n"; break;
            case '\t': esc = "\\t"; break;
            case '\r': esc = "\\r"; break;
            default: break;
            }
            if (esc) { memcpy(buf + o, esc, 2); o += 2; }
            else if (*s < 0x20) o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", *s);
            else buf[o++] = (char)*s;
        }
        if (o + 1 < cap) buf[o++] = '"';
        buf[o] = 0;
    } else if (cJSON_IsNumber(v)) {
        facts_format_number(v->valuedouble, buf, cap);
    } else if (cJSON_IsBool(v)) {
        snprintf(buf, cap, "%s", cJSON_IsTrue(v) ? "true" : "false");
    } else {
        char *t = cJSON_PrintUnformatted(v);
        snprintf(buf, cap, "%s", t ? t : "");
        free(t);
    }
}

/* The params layer (JSON object) as Ollama's show "parameters" text: one "key value" line
 * per value (a list gives one line per element), keys padded to 30 columns. */
static char *params_text(const char *params_json) {
    cJSON *p = params_json ? cJSON_Parse(params_json) : NULL;
    size_t cap = 256, len = 0;
    char *out = malloc(cap);
    if (!out) { cJSON_Delete(p); return NULL; }
    out[0] = 0;
    const cJSON *kv;
    cJSON_ArrayForEach(kv, p) {
        const cJSON *items = cJSON_IsArray(kv) ? kv->child : kv;
        for (const cJSON *v = items; v; v = cJSON_IsArray(kv) ? v->next : NULL) {
            char val[1024], line[1200];
            go_value(v, val, sizeof val);
            int n = snprintf(line, sizeof line, "%s%-30s %s", len ? "\n" : "", kv->string, val);
            if (n < 0) continue;
            if (len + (size_t)n + 1 > cap) {
                cap = 2 * (len + (size_t)n + 1);
                char *grown = realloc(out, cap);
                if (!grown) { free(out); cJSON_Delete(p); return NULL; }
                out = grown;
            }
            memcpy(out + len, line, (size_t)n + 1);
            len += (size_t)n;
        }
    }
    cJSON_Delete(p);
    return out;
}

void api_show(http_req *r) {
    server_app *app = app_of(r);
    cJSON *req = parse_body(r);
    if (!req) return;
    const char *name = request_model(req);
    bool verbose = json_bool(req, "verbose", false);
    if (!name || !*name) { cJSON_Delete(req); http_reply_error(r, 400, "model is required"); return; }
    store_entry e;
    if (store_resolve(app->store, name, &e)) {
        const char *msg = anv_last_error();
        cJSON_Delete(req);
        http_reply_error(r, status_for_error(msg, 400), "%s", msg);
        return;
    }
    http_set_model(r, e.name);
    model_facts f;
    if (facts_read(e.model_path, &f)) {
        char msg[600];
        snprintf(msg, sizeof msg, "%s", anv_last_error());
        store_entry_clear(&e);
        cJSON_Delete(req);
        http_reply_error(r, 500, "%s", msg);
        return;
    }
    cJSON *root = cJSON_CreateObject();
    if (e.license) cJSON_AddStringToObject(root, "license", e.license);
    char *mf = modelfile_render(&e);
    if (mf) cJSON_AddStringToObject(root, "modelfile", mf);
    free(mf);
    if (e.params_json) {
        char *pt = params_text(e.params_json);
        if (pt) cJSON_AddStringToObject(root, "parameters", pt);
        free(pt);
    }
    if (e.template_text) cJSON_AddStringToObject(root, "template", e.template_text);
    if (e.system) cJSON_AddStringToObject(root, "system", e.system);
    cJSON_AddItemToObject(root, "details", facts_details_json(&f));
    cJSON_AddItemToObject(root, "model_info", facts_model_info_json(&f, verbose));
    if (verbose) cJSON_AddItemToObject(root, "tensors", facts_tensors_json(&f));
    if (e.messages_json) {
        cJSON *msgs = cJSON_Parse(e.messages_json);
        if (cJSON_IsArray(msgs)) cJSON_AddItemToObject(root, "messages", msgs);
        else cJSON_Delete(msgs);
    }
    cJSON *caps = cJSON_AddArrayToObject(root, "capabilities");
    cJSON_AddItemToArray(caps, cJSON_CreateString("completion"));
    add_time(root, "modified_at", entry_mtime(&e));
    facts_close(&f);
    store_entry_clear(&e);
    cJSON_Delete(req);
    reply_obj(r, 200, root);
}

/* ---------------------------------------------------------------- ps */

/* Far in the future (Ollama shows "Forever" beyond 20 years): what a model kept forever
 * reports as expires_at, like Ollama's now + the largest duration. */
#define PS_FOREVER_SECONDS (292LL * 365 * 24 * 3600)

void api_ps(http_req *r) {
    server_app *app = app_of(r);
    sched_loaded *L = NULL;
    int n = 0;
    if (sched_ps(app->sched, &L, &n)) { http_reply_error(r, 500, "%s", anv_last_error()); return; }
    int64_t now = (int64_t)time(NULL);
    cJSON *root = cJSON_CreateObject();
    cJSON *models = cJSON_AddArrayToObject(root, "models");
    for (int i = 0; i < n; i++) {
        const sched_loaded *l = &L[i];
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "name", l->name);
        cJSON_AddStringToObject(m, "model", l->name);
        cJSON_AddNumberToObject(m, "size", (double)l->size);
        cJSON_AddStringToObject(m, "digest", digest_hex(l->digest));
        store_entry e;
        model_facts f;
        bool have = !store_resolve(app->store, l->name, &e);
        if (!have || facts_read(e.model_path, &f)) {
            facts_unknown(&f);
            snprintf(f.family, sizeof f.family, "%s", l->arch);
        }
        if (have) store_entry_clear(&e);
        cJSON_AddItemToObject(m, "details", facts_details_json(&f));
        facts_close(&f);
        int64_t expires = l->expires_at_ms == 0 ? now + PS_FOREVER_SECONDS
                        : l->expires_at_ms < 0 ? now - 1 : l->expires_at_ms / 1000;
        add_time(m, "expires_at", expires);
        cJSON_AddNumberToObject(m, "size_vram", (double)l->size_vram);
        cJSON_AddNumberToObject(m, "context_length", l->context_length);
        cJSON_AddItemToArray(models, m);
    }
    free(L);
    reply_obj(r, 200, root);
}

/* ---------------------------------------------------------------- progress streams */

/* Pull and create report progress as NDJSON lines. The stream starts with the first
 * line, so a request that fails before any progress still gets a proper HTTP status. */
typedef struct {
    http_req *r;
    bool stream;          /* the client asked for a stream */
    bool started;         /* stream begun */
    bool gone;            /* the client went away */
    bool sent_success;
    pthread_mutex_t lock; /* pull may report from several threads */
    char last_status[160];
    char last_digest[DIGEST_STR_LEN + 1];
    double last_write;    /* seconds, CLOCK_MONOTONIC */
} progress_stream;

static double mono_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void progress_init(progress_stream *ps, http_req *r, bool stream) {
    memset(ps, 0, sizeof *ps);
    ps->r = r;
    ps->stream = stream;
    pthread_mutex_init(&ps->lock, NULL);
}

/* Writes one line (obj consumed); caller holds the lock. */
static bool progress_write_locked(progress_stream *ps, cJSON *obj) {
    char *text = cJSON_PrintUnformatted(obj);
    cJSON_Delete(obj);
    if (!text) return !ps->gone;
    if (!ps->started) {
        http_stream_begin(ps->r, 200, "application/x-ndjson");
        ps->started = true;
    }
    size_t n = strlen(text);
    text[n] = '\n';   /* replaces the NUL: write n + 1 bytes, not as a string */
    if (!ps->gone && !http_stream_write(ps->r, text, n + 1)) ps->gone = true;
    free(text);
    ps->last_write = mono_seconds();
    return !ps->gone;
}

/* One status (with layer progress when digest is set). Repeats of the same layer's
 * progress are thinned to ten a second; the last (completed == total) always goes. */
static bool progress_status(progress_stream *ps, const char *status, const char *digest,
                            uint64_t total, uint64_t completed) {
    pthread_mutex_lock(&ps->lock);
    bool ok = !ps->gone;
    if (!ok || !ps->stream) goto out;
    bool same = !strcmp(ps->last_status, status) && !strcmp(ps->last_digest, digest ? digest : "");
    if (same && digest && completed != total && mono_seconds() - ps->last_write < 0.1) goto out;
    if (same && !digest) goto out;
    snprintf(ps->last_status, sizeof ps->last_status, "%s", status);
    snprintf(ps->last_digest, sizeof ps->last_digest, "%s", digest ? digest : "");
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "status", status);
    if (digest) {
        cJSON_AddStringToObject(o, "digest", digest);
        if (total) cJSON_AddNumberToObject(o, "total", (double)total);
        if (total || completed) cJSON_AddNumberToObject(o, "completed", (double)completed);
    }
    if (!strcmp(status, "success")) ps->sent_success = true;
    ok = progress_write_locked(ps, o);
out:
    pthread_mutex_unlock(&ps->lock);
    return ok;
}

/* Ends the request: success, or the error (in the stream once it started; else as an
 * HTTP error with status err_status). */
static void progress_finish(progress_stream *ps, int rc, const char *error, int err_status) {
    pthread_mutex_lock(&ps->lock);
    if (rc == 0 && !ps->stream) {
        http_reply_json(ps->r, 200, "{\"status\":\"success\"}");
    } else if (rc == 0) {
        if (!ps->sent_success) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "status", "success");
            progress_write_locked(ps, o);
        }
        http_stream_end(ps->r);
    } else if (ps->started) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "error", error);
        progress_write_locked(ps, o);
        http_stream_end(ps->r);
    } else {
        http_reply_error(ps->r, err_status, "%s", error);
    }
    pthread_mutex_unlock(&ps->lock);
    pthread_mutex_destroy(&ps->lock);
}

/* ---------------------------------------------------------------- pull */

static bool pull_progress_cb(const pull_progress *p, void *user) {
    return progress_status(user, p->status ? p->status : "", p->digest, p->total, p->completed);
}

void api_pull(http_req *r) {
    server_app *app = app_of(r);
    cJSON *req = parse_body(r);
    if (!req) return;
    const char *name = request_model(req);
    if (!check_name(r, name, "model")) { cJSON_Delete(req); return; }
    http_set_model(r, name);
    progress_stream ps;
    progress_init(&ps, r, json_bool(req, "stream", true));
    pull_opts o;
    pull_opts_default(&o);
    o.insecure = json_bool(req, "insecure", false);
    o.progress = pull_progress_cb;
    o.user = &ps;
    int rc = store_pull(app->store, name, &o);
    char err[600] = "";
    if (rc) snprintf(err, sizeof err, "%s", ps.gone ? "client went away" : anv_last_error());
    progress_finish(&ps, rc, err, status_for_error(err, 500));
    cJSON_Delete(req);
}

/* ---------------------------------------------------------------- create */

static void create_progress_cb(const char *status, void *user) {
    progress_status(user, status, NULL, 0, 0);
}

/* Strings or an array of strings (Ollama's "license"), joined by blank lines. */
static char *string_or_list(const cJSON *v) {
    if (cJSON_IsString(v)) return strdup(v->valuestring);
    if (!cJSON_IsArray(v)) return NULL;
    size_t total = 1;
    const cJSON *x;
    cJSON_ArrayForEach(x, v) if (cJSON_IsString(x)) total += strlen(x->valuestring) + 2;
    char *out = malloc(total);
    if (!out) return NULL;
    out[0] = 0;
    cJSON_ArrayForEach(x, v) if (cJSON_IsString(x)) {
        if (out[0]) strcat(out, "\n\n");
        strcat(out, x->valuestring);
    }
    return out;
}

/* Fills spec from an Ollama create request; replies 400 and returns -1 on bad input. */
static int create_spec_from_request(http_req *r, server_app *app, const cJSON *req, create_spec *spec) {
    const char *modelfile = json_str(req, "modelfile");  /* the pre-0.5 form */
    if (modelfile && modelfile_parse(modelfile, NULL, spec)) {
        http_reply_error(r, 400, "%s", anv_last_error());
        return -1;
    }
    const char *from = json_str(req, "from");
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(req, "files");
    if (files && !cJSON_IsObject(files)) { http_reply_error(r, 400, "files: an object {name: digest} is expected"); return -1; }
    const char *file_digest = NULL;
    const cJSON *f;
    cJSON_ArrayForEach(f, files) {
        if (!cJSON_IsString(f) || !digest_valid(f->valuestring, false)) {
            http_reply_error(r, 400, "files: '%s' needs a digest \"sha256:<64 hex>\"", f->string);
            return -1;
        }
        if (!store_has_blob(app->store, f->valuestring)) {
            http_reply_error(r, 400, "files: blob %s of '%s' is not on the server (upload it to /api/blobs first)",
                             f->valuestring, f->string);
            return -1;
        }
        size_t n = strlen(f->string);
        bool gguf = n >= 5 && !strcasecmp(f->string + n - 5, ".gguf");
        if (!file_digest || gguf) file_digest = f->valuestring;
    }
    if (cJSON_GetArraySize(files) > 1) {
        int n_gguf = 0;
        cJSON_ArrayForEach(f, files) {
            size_t n = strlen(f->string);
            n_gguf += n >= 5 && !strcasecmp(f->string + n - 5, ".gguf");
        }
        if (n_gguf != 1) {
            http_reply_error(r, 400, "files: exactly one GGUF file is supported (safetensors directories are not)");
            return -1;
        }
    }
    const char *src = from && *from ? from : file_digest;
    if (src) { free(spec->from); spec->from = strdup(src); }
    if (!spec->from) { http_reply_error(r, 400, "neither 'from' nor 'files' was specified"); return -1; }

    const char *keys[] = {"template", "system"};
    char **dst[] = {&spec->template_text, &spec->system};
    for (int i = 0; i < 2; i++) {
        const char *v = json_str(req, keys[i]);
        if (v) { free(*dst[i]); *dst[i] = strdup(v); }
    }
    const cJSON *lic = cJSON_GetObjectItemCaseSensitive(req, "license");
    if (lic && !cJSON_IsNull(lic)) {
        char *l = string_or_list(lic);
        if (!l) { http_reply_error(r, 400, "license: a string or a list of strings is expected"); return -1; }
        free(spec->license);
        spec->license = l;
    }
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(req, "parameters");
    if (params && !cJSON_IsNull(params)) {
        if (!cJSON_IsObject(params)) { http_reply_error(r, 400, "parameters: an object is expected"); return -1; }
        run_options check;
        options_default(&check);
        int bad = options_apply_cjson(&check, params, NULL);
        options_clear(&check);
        if (bad) { http_reply_error(r, 400, "parameters: %s", anv_last_error()); return -1; }
        free(spec->params_json);
        spec->params_json = cJSON_PrintUnformatted(params);
    }
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(req, "messages");
    if (msgs && !cJSON_IsNull(msgs)) {
        if (!cJSON_IsArray(msgs)) { http_reply_error(r, 400, "messages: a list of {role, content} is expected"); return -1; }
        const cJSON *m;
        cJSON_ArrayForEach(m, msgs) {
            if (!json_str(m, "role") || !json_str(m, "content")) {
                http_reply_error(r, 400, "messages: each message needs a string role and content");
                return -1;
            }
        }
        free(spec->messages_json);
        spec->messages_json = cJSON_PrintUnformatted(msgs);
    }
    const char *q = json_str(req, "quantize");
    if (!q) q = json_str(req, "quantization");
    if (q && *q) {
        if (quant_ftype_from_name(q) < 0) { http_reply_error(r, 400, "quantize: unsupported quantization type '%s'", q); return -1; }
        free(spec->quantize);
        spec->quantize = strdup(q);
    }
    return 0;
}

void api_create(http_req *r) {
    server_app *app = app_of(r);
    cJSON *req = parse_body(r);
    if (!req) return;
    const char *name = request_model(req);
    if (!check_name(r, name, "model")) { cJSON_Delete(req); return; }
    http_set_model(r, name);
    create_spec spec;
    memset(&spec, 0, sizeof spec);
    if (create_spec_from_request(r, app, req, &spec)) {
        create_spec_clear(&spec);
        cJSON_Delete(req);
        return;
    }
    progress_stream ps;
    progress_init(&ps, r, json_bool(req, "stream", true));
    int rc = store_create(app->store, name, &spec, create_progress_cb, &ps);
    char err[600] = "";
    if (rc) snprintf(err, sizeof err, "%s", anv_last_error());
    progress_finish(&ps, rc, err, status_for_error(err, 400));
    create_spec_clear(&spec);
    cJSON_Delete(req);
}

/* ---------------------------------------------------------------- copy, delete */

void api_copy(http_req *r) {
    server_app *app = app_of(r);
    cJSON *req = parse_body(r);
    if (!req) return;
    const char *src = json_str(req, "source"), *dst = json_str(req, "destination");
    if (!src || !*src) { cJSON_Delete(req); http_reply_error(r, 400, "source is required"); return; }
    if (!check_name(r, dst, "destination")) { cJSON_Delete(req); return; }
    store_entry e;
    if (store_lookup(app->store, src, &e)) {
        const char *msg = anv_last_error();
        http_reply_error(r, status_for_error(msg, 400), "%s", msg);
    } else {
        store_entry_clear(&e);
        if (store_copy(app->store, src, dst)) http_reply_error(r, 500, "%s", anv_last_error());
        else http_reply(r, 200, "application/json", "", 0);
    }
    cJSON_Delete(req);
}

void api_delete(http_req *r) {
    server_app *app = app_of(r);
    cJSON *req = parse_body(r);
    if (!req) return;
    const char *name = request_model(req);
    if (!check_name(r, name, "model")) { cJSON_Delete(req); return; }
    store_entry e;
    if (store_lookup(app->store, name, &e)) {
        const char *msg = anv_last_error();
        http_reply_error(r, status_for_error(msg, 400), "%s", msg);
    } else {
        bool read_only = e.read_only;
        store_entry_clear(&e);
        if (store_remove(app->store, name)) http_reply_error(r, read_only ? 400 : 500, "%s", anv_last_error());
        else http_reply(r, 200, "application/json", "", 0);
    }
    cJSON_Delete(req);
}

/* ---------------------------------------------------------------- blobs */

/* Moves an uploaded (spooled) file to the blob path (the spool folder is the store's
 * root, so normally one rename); falls back to a copy. */
static int blob_adopt_file(store *st, const char *tmp_path, const char *digest) {
    char *dst = store_blob_path(st, digest);
    if (!dst) return -1;
    char *slash = strrchr(dst, '/');
    if (slash) {   /* <root>/blobs may not exist yet (the root does: it holds the spool) */
        *slash = 0;
        mkdir(dst, 0755);
        *slash = '/';
    }
    int rc = rename(tmp_path, dst);
    free(dst);
    if (rc == 0) return 0;
    char got[DIGEST_STR_LEN + 1];
    uint64_t size;
    return store_import_file(st, tmp_path, got, &size);
}

void api_blob(http_req *r) {
    server_app *app = app_of(r);
    const char *digest = http_path_param(r);
    if (!digest || !digest_valid(digest, false)) {
        http_reply_error(r, 400, "invalid digest '%s': expected sha256:<64 lowercase hex digits>", digest ? digest : "");
        return;
    }
    const char *method = http_method(r);
    if (!strcmp(method, "HEAD") || !strcmp(method, "GET")) {
        int status = store_has_blob(app->store, digest) ? 200 : 404;
        http_reply(r, status, "text/plain", "", 0);
        return;
    }
    if (store_has_blob(app->store, digest)) {   /* Ollama: already there is fine */
        http_reply(r, 200, "text/plain", "", 0);
        return;
    }
    char got[DIGEST_STR_LEN + 1];
    const char *spooled = http_body_path(r);
    size_t len = 0;
    const char *body = spooled ? NULL : http_body(r, &len);
    if (spooled ? digest_file(spooled, got, NULL) : (digest_bytes(body ? body : "", len, got), 0)) {
        http_reply_error(r, 500, "%s", anv_last_error());
        return;
    }
    if (strcmp(got, digest)) {
        http_reply_error(r, 400, "digest mismatch: the upload is %s, the path says %s", got, digest);
        return;
    }
    char stored[DIGEST_STR_LEN + 1];
    int rc = spooled ? blob_adopt_file(app->store, spooled, digest) : store_put_bytes(app->store, body ? body : "", len, stored);
    if (rc) http_reply_error(r, 500, "%s", anv_last_error());
    else http_reply(r, 201, "text/plain", "", 0);
}
