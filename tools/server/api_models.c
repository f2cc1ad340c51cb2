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
#include "api_json.h"
#include "bytebuf.h"
#include "clock.h"
#include "error.h"
#include "model_create.h"
#include "model_facts.h"
#include "options.h"
#include "prompt.h"
#include "pull.h"
#include "quantize_model.h"
#include "vision.h"

/* ---------------------------------------------------------------- helpers */

static server_app *app_of(http_req *r) { return (server_app *)http_app(r); }

/* A status code for an error message that did not come with one. */
static int status_for_error(const char *msg, int dflt) {
    return strstr(msg, "not found") ? 404 : dflt;
}

/* Fails the request with the store's last error (404 when it says "not found"). */
static void fail_store(api_req *c, int dflt) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", anv_last_error());
    sched_redact_paths(msg, sizeof msg, NULL, NULL);  /* never a server path in a reply */
    aj_fail(c, status_for_error(msg, dflt), NULL, "%s", msg);
}

/* The model of a request, through the scheduler's one lookup (store names; paths only
 * with ANVIL_ALLOW_PATHS=1); fails the request otherwise. */
static bool find_model(api_req *c, const char *name, store_entry *e) {
    if (c->failed) return false;
    int st = sched_lookup(app_of(c->r)->sched, name, e);
    if (!st) return true;
    aj_fail(c, st, NULL, "%s", anv_last_error());
    return false;
}

/* Validates a model name (field) like the store does; fails 400 with its message if bad. */
static void check_name(api_req *c, const char *name, const char *field) {
    store_name n;
    if (c->failed) return;
    if (!name || !*name) aj_fail(c, 400, field, "%s is required", field);
    else if (store_name_parse(name, &n)) aj_fail(c, 400, field, "%s", anv_last_error());
}

/* Finds name in the store with find (store_lookup or store_resolve); fails otherwise. */
static bool find_entry(api_req *c, int (*find)(store *, const char *, store_entry *), const char *name, store_entry *e) {
    if (c->failed) return false;
    if (!find(app_of(c->r)->store, name, e)) return true;
    fail_store(c, 400);
    return false;
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

/* {"models": [...]}, the answer of tags and ps; *models is the array. */
static cJSON *model_listing(cJSON **models) {
    cJSON *root = cJSON_CreateObject();
    *models = cJSON_AddArrayToObject(root, "models");
    return root;
}

/* A new entry of a listing, named (as "name" and "model") and sized like Ollama's. */
static cJSON *listing_entry(cJSON *models, const char *name, uint64_t size, const char *digest) {
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "name", name);
    cJSON_AddStringToObject(m, "model", name);
    cJSON_AddNumberToObject(m, "size", (double)size);
    cJSON_AddStringToObject(m, "digest", digest_hex(digest));
    cJSON_AddItemToArray(models, m);
    return m;
}

/* The rest of a tags entry: modified_at, details from the GGUF header, capabilities. */
static void tags_details(store *st, cJSON *m, const store_entry *e) {
    add_time(m, "modified_at", entry_mtime(e));
    /* the listing does not resolve blobs: find the model layer's here */
    char *path = e->model_path ? strdup(e->model_path)
               : e->model_digest ? store_find_blob(st, e->model_digest) : NULL;
    model_facts f;
    facts_read(path, &f);   /* a damaged or missing file: details say "unknown" */
    const bool vision = path && model_has_vision(path, e->projector_path);
    free(path);
    cJSON_AddItemToObject(m, "details", facts_details_json(&f));
    facts_capabilities(&f, e->template_text, vision, cJSON_AddArrayToObject(m, "capabilities"));
    facts_close(&f);
}

void api_tags(http_req *r) {
    store *st = app_of(r)->store;
    store_entry *es = NULL;
    int n = 0;
    if (store_list(st, &es, &n)) { aj_fail(&(api_req){.r = r}, 500, NULL, "%s", anv_last_error()); return; }
    cJSON *models, *root = model_listing(&models);
    for (int i = 0; i < n; i++)
        tags_details(st, listing_entry(models, es[i].name, es[i].size, es[i].manifest_digest), &es[i]);
    store_entries_free(es, n);
    aj_reply(r, 200, root);
}

/* ---------------------------------------------------------------- show */

/* Go's %#v of a JSON value as Ollama prints parameters: strings quoted, numbers short.
 * Appended whole to a growable buffer: names and values come from requests (/api/create)
 * and have no length limit but the body's. */
static void go_value(const cJSON *v, bytebuf *b) {
    if (cJSON_IsString(v)) {
        bytebuf_add(b, "\"", 1);
        for (const unsigned char *s = (const unsigned char *)v->valuestring; *s; s++) {
            const char *esc = NULL;
            switch (*s) {
            case '"': esc = "\\\""; break;
            case '\\': esc = "\\\\"; break;
            case '\n': esc = "\\n"; break;
            case '\t': esc = "\\t"; break;
            case '\r': esc = "\\r"; break;
            default: break;
            }
            if (esc) bytebuf_add(b, esc, 2);
            else if (*s < 0x20) bytebuf_printf(b, "\\x%02x", *s);
            else bytebuf_add(b, s, 1);
        }
        bytebuf_add(b, "\"", 1);
    } else if (cJSON_IsNumber(v)) {
        char num[40];
        facts_format_number(v->valuedouble, num, sizeof num);
        bytebuf_printf(b, "%s", num);
    } else if (cJSON_IsBool(v)) {
        bytebuf_printf(b, "%s", cJSON_IsTrue(v) ? "true" : "false");
    } else {
        char *t = cJSON_PrintUnformatted(v);
        if (t) bytebuf_printf(b, "%s", t);
        else b->oom = true;
        free(t);
    }
}

/* The params layer (JSON object) as Ollama's show "parameters" text: one "key value" line
 * per value (a list gives one line per element), keys padded to 30 columns. malloc'd;
 * NULL when out of memory. */
static char *params_text(const char *params_json) {
    cJSON *p = params_json ? cJSON_Parse(params_json) : NULL;
    bytebuf b = {0};
    const cJSON *kv;
    cJSON_ArrayForEach(kv, p) {
        const cJSON *items = cJSON_IsArray(kv) ? kv->child : kv;
        for (const cJSON *v = items; v; v = cJSON_IsArray(kv) ? v->next : NULL) {
            bytebuf_printf(&b, "%s%-30s ", b.len ? "\n" : "", kv->string ? kv->string : "");
            go_value(v, &b);
        }
    }
    cJSON_Delete(p);
    char *out = b.oom ? NULL : strdup(bytebuf_str(&b));
    bytebuf_free(&b);
    return out;
}

/* show's answer for an entry and the facts of its GGUF file. */
static cJSON *show_object(const store_entry *e, const model_facts *f, bool verbose) {
    cJSON *root = cJSON_CreateObject();
    if (e->license) cJSON_AddStringToObject(root, "license", e->license);
    char *mf = modelfile_render(e);
    if (mf) cJSON_AddStringToObject(root, "modelfile", mf);
    free(mf);
    if (e->params_json) {
        char *pt = params_text(e->params_json);
        if (pt) cJSON_AddStringToObject(root, "parameters", pt);
        free(pt);
    }
    if (e->template_text) cJSON_AddStringToObject(root, "template", e->template_text);
    else if (f->file && prompt_gguf_is_base(f->file))   /* a base model: Ollama's default */
        cJSON_AddStringToObject(root, "template", PROMPT_BASE_TEMPLATE);
    if (e->system) cJSON_AddStringToObject(root, "system", e->system);
    cJSON_AddItemToObject(root, "details", facts_details_json(f));
    cJSON_AddItemToObject(root, "model_info", facts_model_info_json(f, verbose));
    if (verbose) cJSON_AddItemToObject(root, "tensors", facts_tensors_json(f));
    if (e->messages_json) {
        cJSON *msgs = cJSON_Parse(e->messages_json);
        if (cJSON_IsArray(msgs)) cJSON_AddItemToObject(root, "messages", msgs);
        else cJSON_Delete(msgs);
    }
    const bool vision = e->model_path && model_has_vision(e->model_path, e->projector_path);
    facts_capabilities(f, e->template_text, vision, cJSON_AddArrayToObject(root, "capabilities"));
    add_time(root, "modified_at", entry_mtime(e));
    return root;
}

void api_show(http_req *r) {
    api_req c = {.r = r};
    cJSON *req = aj_parse_body(&c);
    if (!req) return;
    const char *name = aj_model(&c, req, true);
    bool verbose = aj_bool(&c, req, "verbose", false);
    store_entry e;
    if (find_model(&c, name, &e)) {
        http_set_model(r, e.name);
        model_facts f;
        if (facts_read(e.model_path, &f)) {
            char err[1024];
            snprintf(err, sizeof err, "%s", anv_last_error());
            sched_redact_paths(err, sizeof err, e.model_path, e.name);
            aj_fail(&c, 500, NULL, "%s", err);
        } else {
            aj_reply(r, 200, show_object(&e, &f, verbose));
            facts_close(&f);
        }
        store_entry_clear(&e);
    }
    cJSON_Delete(req);
}

/* ---------------------------------------------------------------- ps */

/* Far in the future (Ollama shows "Forever" beyond 20 years): what a model kept forever
 * reports as expires_at, like Ollama's now + the largest duration. */
#define PS_FOREVER_SECONDS (292LL * 365 * 24 * 3600)

/* The rest of a ps entry: details (from the GGUF header when the store has the model),
 * expires_at, size_vram, context_length. */
static void ps_details(sched *sc, cJSON *m, const sched_loaded *l, int64_t now) {
    store_entry e;
    model_facts f;
    bool have = !sched_lookup(sc, l->name, &e);
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
}

/* Anvil's own facts about a loaded model, under "anvil" so Ollama's fields stay as they are
 * (clients ignore an unknown key): where it runs and how busy it is, for a router in front
 * of several replicas. */
static void ps_anvil(cJSON *m, const sched_loaded *l, const char *replica) {
    cJSON *a = cJSON_AddObjectToObject(m, "anvil");
    cJSON_AddStringToObject(a, "replica", replica);
    cJSON_AddStringToObject(a, "backend", l->backend);
    cJSON_AddStringToObject(a, "device", l->device);
    cJSON_AddNumberToObject(a, "layers", l->n_layer);
    cJSON_AddNumberToObject(a, "gpu_layers", l->n_gpu_layers);
    cJSON_AddStringToObject(a, "kv_cache_type", l->kv_type);
    cJSON_AddNumberToObject(a, "parallel", l->n_slots);
    cJSON_AddNumberToObject(a, "context_per_slot", l->context_length);
    cJSON_AddNumberToObject(a, "requests_in_flight", l->n_active);
    cJSON_AddNumberToObject(a, "requests_queued", l->n_queued);
    cJSON_AddBoolToObject(a, "embedding_only", l->embedding_only);
}

void api_ps(http_req *r) {
    server_app *app = app_of(r);
    sched_loaded *L = NULL;
    int n = 0;
    if (sched_ps(app->sched, &L, &n)) { aj_fail(&(api_req){.r = r}, 500, NULL, "%s", anv_last_error()); return; }
    int64_t now = (int64_t)time(NULL);
    cJSON *models, *root = model_listing(&models);
    int in_flight = 0, queued = 0;
    for (int i = 0; i < n; i++) {
        cJSON *m = listing_entry(models, L[i].name, L[i].size, L[i].digest);
        ps_details(app->sched, m, &L[i], now);
        ps_anvil(m, &L[i], app->replica);
        in_flight += L[i].n_active;
        queued += L[i].n_queued;
    }
    free(L);
    cJSON *a = cJSON_AddObjectToObject(root, "anvil");   /* this replica as a whole */
    cJSON_AddStringToObject(a, "replica", app->replica);
    cJSON_AddStringToObject(a, "version", ANVIL_VERSION);
    cJSON_AddNumberToObject(a, "requests_in_flight", in_flight);
    cJSON_AddNumberToObject(a, "requests_queued", queued);
    aj_reply(r, 200, root);
}

/* ---------------------------------------------------------------- progress streams */

/* Pull and create report progress as NDJSON lines. The stream starts with the first
 * line, so a request that fails before any progress still gets a proper HTTP status. */
typedef struct {
    api_req c;            /* c.stream: the client asked for a stream; c.begun: it began */
    bool gone;            /* the client went away */
    bool sent_success;
    pthread_mutex_t lock; /* pull may report from several threads */
    char last_status[160];
    char last_digest[DIGEST_STR_LEN + 1];
    double last_write;    /* seconds, CLOCK_MONOTONIC */
} progress_stream;

static void progress_init(progress_stream *ps, const api_req *c) {
    memset(ps, 0, sizeof *ps);
    ps->c = *c;
    pthread_mutex_init(&ps->lock, NULL);
}

/* Writes one line (obj consumed); caller holds the lock. */
static bool progress_write_locked(progress_stream *ps, cJSON *obj) {
    if (ps->gone) { cJSON_Delete(obj); return false; }
    ps->gone = !aj_send(&ps->c, obj);
    ps->last_write = anv_mono_s();
    return !ps->gone;
}

/* One status (with layer progress when digest is set). Repeats of the same layer's
 * progress are thinned to ten a second; the last (completed == total) always goes. */
static bool progress_status(progress_stream *ps, const char *status, const char *digest,
                            uint64_t total, uint64_t completed) {
    pthread_mutex_lock(&ps->lock);
    bool ok = !ps->gone;
    if (!ok || !ps->c.stream) goto out;
    bool same = !strcmp(ps->last_status, status) && !strcmp(ps->last_digest, digest ? digest : "");
    if (same && digest && completed != total && anv_mono_s() - ps->last_write < 0.1) goto out;
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

/* Ends the request after work that returned rc: success (a line, or the whole reply
 * without a stream), or the store's last error (in the stream once it began; else as an
 * HTTP error, 404 for "not found", err_status otherwise). */
static void progress_finish(progress_stream *ps, int rc, int err_status) {
    pthread_mutex_lock(&ps->lock);
    if (rc) {
        char err[600];
        snprintf(err, sizeof err, "%s", ps->gone ? "client went away" : anv_last_error());
        sched_redact_paths(err, sizeof err, NULL, NULL);
        aj_fail(&ps->c, status_for_error(err, err_status), NULL, "%s", err);
    } else {
        if (!ps->sent_success) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "status", "success");
            progress_write_locked(ps, o);
        }
        aj_end(&ps->c);
    }
    pthread_mutex_unlock(&ps->lock);
    pthread_mutex_destroy(&ps->lock);
}

/* The model a pull or create names (a valid store name) and "stream" (true unless
 * false); NULL + failure otherwise. */
static const char *progress_request(api_req *c, const cJSON *req) {
    const char *name = aj_model(c, req, true);
    check_name(c, name, "model");
    c->stream = aj_bool(c, req, "stream", true);
    return c->failed ? NULL : name;
}

/* ---------------------------------------------------------------- pull */

static bool pull_progress_cb(const pull_progress *p, void *user) {
    return progress_status(user, p->status ? p->status : "", p->digest, p->total, p->completed);
}

void api_pull(http_req *r) {
    api_req c = {.r = r};
    cJSON *req = aj_parse_body(&c);
    if (!req) return;
    const char *name = progress_request(&c, req);
    pull_opts o;
    pull_opts_default(&o);
    o.insecure = aj_bool(&c, req, "insecure", false);
    if (!c.failed) {
        progress_stream ps;
        progress_init(&ps, &c);
        o.progress = pull_progress_cb;
        o.user = &ps;
        progress_finish(&ps, store_pull(app_of(r)->store, name, &o), 500);
    }
    cJSON_Delete(req);
}

/* ---------------------------------------------------------------- create */

static void create_progress_cb(const char *status, void *user) {
    progress_status(user, status, NULL, 0, 0);
}

static bool is_gguf_name(const char *name) {
    size_t n = strlen(name);
    return n >= 5 && !strcasecmp(name + n - 5, ".gguf");
}

/* "files" {name: digest} of blobs already uploaded: the digest of its GGUF file (the one
 * file, or the one named *.gguf), NULL when absent (or + failure). */
static const char *create_files(api_req *c, store *st, const cJSON *req) {
    const cJSON *files = aj_object(c, req, "files");
    const char *digest = NULL;
    int n_gguf = 0;
    const cJSON *f;
    cJSON_ArrayForEach(f, files) {
        char field[300];
        snprintf(field, sizeof field, "files.%.200s", f->string);
        if (!aj_need(c, f, field, AJ_STRING)) return NULL;
        if (!digest_valid(f->valuestring, false)) {
            aj_fail(c, 400, field, "files: '%s' needs a digest \"sha256:<64 hex>\"", f->string);
            return NULL;
        }
        if (!store_has_blob(st, f->valuestring)) {
            aj_fail(c, 400, field, "files: blob %s of '%s' is not on the server (upload it to /api/blobs first)",
                    f->valuestring, f->string);
            return NULL;
        }
        bool gguf = is_gguf_name(f->string);
        n_gguf += gguf;
        if (!digest || gguf) digest = f->valuestring;
    }
    if (cJSON_GetArraySize(files) > 1 && n_gguf != 1) {
        aj_fail(c, 400, "files", "files: exactly one GGUF file is supported (safetensors directories are not)");
        return NULL;
    }
    return digest;
}

/* Replaces *dst with a copy of v unless v is NULL. */
static void set_text(char **dst, const char *v) {
    if (!v) return;
    free(*dst);
    *dst = strdup(v);
}

/* "license": a string or a list of strings, joined by blank lines. */
static void create_license(api_req *c, const cJSON *req, create_spec *spec) {
    int n = 0;
    const char **l = aj_strings(c, req, "license", &n);
    if (!l) return;
    bytebuf b = {0};
    for (int i = 0; i < n; i++) {
        if (b.len) bytebuf_add(&b, "\n\n", 2);
        bytebuf_add(&b, l[i], strlen(l[i]));
    }
    free(l);
    set_text(&spec->license, b.oom ? NULL : bytebuf_str(&b));
    bytebuf_free(&b);
}

/* "parameters" (an object of options, checked as a generation request's) and "messages"
 * (a list of {role, content}), kept as JSON. */
static void create_params_messages(api_req *c, const cJSON *req, create_spec *spec) {
    const cJSON *params = aj_object(c, req, "parameters");
    if (params) {
        run_options check;
        options_default(&check);
        if (options_apply_cjson(&check, params, NULL)) aj_fail(c, 400, "parameters", "parameters: %s", anv_last_error());
        options_clear(&check);
        if (c->failed) return;
        free(spec->params_json);
        spec->params_json = cJSON_PrintUnformatted(params);
    }
    const cJSON *msgs = aj_array(c, req, "messages");
    int i = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs) {
        char field[48], role_field[64], content_field[64];
        snprintf(field, sizeof field, "messages[%d]", i++);
        snprintf(role_field, sizeof role_field, "%s.role", field);
        snprintf(content_field, sizeof content_field, "%s.content", field);
        const cJSON *o = aj_need(c, m, field, AJ_OBJECT);
        aj_need(c, aj_any(o, "role"), role_field, AJ_STRING);
        aj_need(c, aj_any(o, "content"), content_field, AJ_STRING);
        if (c->failed) return;
    }
    if (msgs) {
        free(spec->messages_json);
        spec->messages_json = cJSON_PrintUnformatted(msgs);
    }
}

/* Fills spec from an Ollama create request (a Modelfile, or its fields as JSON). */
static void create_spec_from_request(api_req *c, const cJSON *req, create_spec *spec) {
    const char *modelfile = aj_string(c, req, "modelfile");  /* the pre-0.5 form */
    if (modelfile && !c->failed && modelfile_parse(modelfile, NULL, spec))
        aj_fail(c, 400, "modelfile", "%s", anv_last_error());
    const char *from = aj_string(c, req, "from");
    const char *file_digest = create_files(c, app_of(c->r)->store, req);
    if (c->failed) return;
    set_text(&spec->from, from && *from ? from : file_digest);
    if (!spec->from) { aj_fail(c, 400, "from", "neither 'from' nor 'files' was specified"); return; }
    spec->from_store_only = !sched_allow_paths(app_of(c->r)->sched);
    if (spec->from_store_only && (spec->from[0] == '/' || !strncmp(spec->from, "./", 2) ||
                                  !strncmp(spec->from, "../", 3) || !strncmp(spec->from, "~/", 2))) {
        aj_fail(c, 400, "from", "from: a file path is not a model name (upload the GGUF as a blob and name it in "
                "'files', or start the server with ANVIL_ALLOW_PATHS=1)");
        return;
    }
    set_text(&spec->template_text, aj_string(c, req, "template"));
    set_text(&spec->system, aj_string(c, req, "system"));
    create_license(c, req, spec);
    create_params_messages(c, req, spec);
    const char *q = aj_string(c, req, "quantize");
    const char *q_old = aj_string(c, req, "quantization");
    if (!q) q = q_old;
    if (c->failed || !q || !*q) return;
    if (quant_ftype_from_name(q) < 0) aj_fail(c, 400, "quantize", "quantize: unsupported quantization type '%s'", q);
    else set_text(&spec->quantize, q);
}

void api_create(http_req *r) {
    api_req c = {.r = r};
    cJSON *req = aj_parse_body(&c);
    if (!req) return;
    const char *name = progress_request(&c, req);
    create_spec spec = {0};
    create_spec_from_request(&c, req, &spec);
    if (!c.failed) {
        progress_stream ps;
        progress_init(&ps, &c);
        progress_finish(&ps, store_create(app_of(r)->store, name, &spec, create_progress_cb, &ps), 400);
    }
    create_spec_clear(&spec);
    cJSON_Delete(req);
}

/* ---------------------------------------------------------------- copy, delete */

void api_copy(http_req *r) {
    api_req c = {.r = r};
    cJSON *req = aj_parse_body(&c);
    if (!req) return;
    const char *src = aj_string(&c, req, "source"), *dst = aj_string(&c, req, "destination");
    if (!c.failed && (!src || !*src)) aj_fail(&c, 400, "source", "source is required");
    check_name(&c, dst, "destination");
    store_entry e;
    if (find_entry(&c, store_lookup, src, &e)) {
        store_entry_clear(&e);
        if (store_copy(app_of(r)->store, src, dst)) aj_fail(&c, 500, NULL, "%s", anv_last_error());
        else http_reply(r, 200, "application/json", "", 0);
    }
    cJSON_Delete(req);
}

void api_delete(http_req *r) {
    api_req c = {.r = r};
    cJSON *req = aj_parse_body(&c);
    if (!req) return;
    const char *name = aj_model(&c, req, true);
    check_name(&c, name, "model");
    store_entry e;
    if (find_entry(&c, store_lookup, name, &e)) {
        bool read_only = e.read_only;
        store_entry_clear(&e);
        /* a delete that lost a race with another one finds the model gone: 404, as Ollama */
        if (store_remove(app_of(r)->store, name)) fail_store(&c, read_only ? 400 : 500);
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
    api_req c = {.r = r};
    const char *digest = http_path_param(r);
    if (!digest || !digest_valid(digest, false)) {
        aj_fail(&c, 400, NULL, "invalid digest '%s': expected sha256:<64 lowercase hex digits>", digest ? digest : "");
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
        aj_fail(&c, 500, NULL, "%s", anv_last_error());
        return;
    }
    if (strcmp(got, digest)) {
        aj_fail(&c, 400, NULL, "digest mismatch: the upload is %s, the path says %s", got, digest);
        return;
    }
    char stored[DIGEST_STR_LEN + 1];
    int rc = spooled ? blob_adopt_file(app->store, spooled, digest) : store_put_bytes(app->store, body ? body : "", len, stored);
    if (rc) aj_fail(&c, 500, NULL, "%s", anv_last_error());
    else http_reply(r, 201, "text/plain", "", 0);
}
