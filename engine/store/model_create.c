/* model_create: Modelfiles (parse and render) and `anvil create`: turns a create_spec into
 * a store model — the model layer imported from a GGUF path, reused from a store model or
 * an uploaded blob (optionally re-quantized), then the template, system, license, params
 * and messages layers, the config blob, and the manifest. */
#include "model_create.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "path.h"
#include "gguf.h"
#include "options.h"
#include "quantize_model.h"
#include "store_impl.h"
#include "store_verify.h"
#include "hash.h"

void create_spec_clear(create_spec *c) {
    if (!c) return;
    free(c->from);
    free(c->template_text);
    free(c->system);
    free(c->license);
    free(c->params_json);
    free(c->messages_json);
    free(c->quantize);
    free(c->projector);
    memset(c, 0, sizeof *c);
}

/* ---- parsing ---- */

typedef struct {
    const char *p;     /* cursor */
    int line;          /* line number of the cursor (1-based) */
} cursor;

static int line_error(int line, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int line_error(int line, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    anv_set_error("Modelfile line %d: %s", line, msg);
    return -1;
}

static void skip_blanks(cursor *c) {
    while (*c->p == ' ' || *c->p == '\t') c->p++;
}

/* Only blanks (and a comment) may follow a closing quote on its line. */
static int expect_line_end(cursor *c) {
    skip_blanks(c);
    if (*c->p == '\r') c->p++;
    if (*c->p && *c->p != '\n' && *c->p != '#') return line_error(c->line, "unexpected text after the closing quote");
    while (*c->p && *c->p != '\n') c->p++;
    return 0;
}

/* Reads a value at the cursor: """multi-line""", "quoted" (\" and \\ escapes) or the
 * rest of the line (trimmed). Leaves the cursor at the end of the value's last line. */
static int read_value(cursor *c, char **out) {
    *out = NULL;
    skip_blanks(c);
    if (!strncmp(c->p, "\"\"\"", 3)) {
        int open_line = c->line;
        const char *start = c->p + 3;
        const char *end = strstr(start, "\"\"\"");
        if (!end) return line_error(open_line, "\"\"\" is never closed");
        for (const char *q = c->p; q < end; q++) c->line += *q == '\n';
        *out = strndup(start, (size_t)(end - start));
        c->p = end + 3;
        if (!*out) return line_error(open_line, "out of memory");
        return expect_line_end(c);
    }
    if (*c->p == '"') {
        char *buf = malloc(strlen(c->p) + 1);
        if (!buf) return line_error(c->line, "out of memory");
        size_t n = 0;
        const char *q = c->p + 1;
        for (; *q && *q != '"' && *q != '\n'; q++) {
            if (*q == '\\' && (q[1] == '"' || q[1] == '\\')) q++;
            buf[n++] = *q;
        }
        if (*q != '"') { free(buf); return line_error(c->line, "the quoted value is not closed on its line"); }
        buf[n] = 0;
        *out = buf;
        c->p = q + 1;
        return expect_line_end(c);
    }
    const char *start = c->p;
    while (*c->p && *c->p != '\n') c->p++;
    const char *end = c->p;
    while (end > start && isspace((unsigned char)end[-1])) end--;
    *out = strndup(start, (size_t)(end - start));
    if (!*out) return line_error(c->line, "out of memory");
    return 0;
}

/* A word at the cursor (command, parameter name, role), malloc'd. */
static char *read_word(cursor *c) {
    skip_blanks(c);
    const char *s = c->p;
    while (*c->p && !isspace((unsigned char)*c->p)) c->p++;
    return strndup(s, (size_t)(c->p - s));
}

static bool looks_like_path(const char *v) {
    size_t n = strlen(v);
    return path_is_absolute(v) || path_is_explicit_relative(v) || (n > 5 && !strcasecmp(v + n - 5, ".gguf"));
}

/* FROM's value: a digest and a store name stay as they are; a path becomes absolute. */
static int resolve_from(const char *v, const char *base_dir, int line, char **out) {
    if (!*v) return line_error(line, "FROM needs a model name or a GGUF file path");
    if (!strncmp(v, "sha256:", 7) || !strncmp(v, "sha256-", 7)) {
        char d[DIGEST_STR_LEN + 1];
        snprintf(d, sizeof d, "sha256:%s", v + 7);
        if (strlen(v) != DIGEST_STR_LEN || !digest_valid(d, false)) return line_error(line, "FROM '%s' is not a valid sha256 digest", v);
        *out = strdup(d);
        return 0;
    }
    char *path = NULL;
    if (v[0] == '~' && path_is_explicit_relative(v)) {
        const char *home = getenv("HOME");
#ifdef _WIN32
        if (!home || !*home) home = getenv("USERPROFILE");
#endif
        if (!home) return line_error(line, "FROM %s: HOME is not set", v);
        path = store_fmt("%s/%s", home, v + 2);
    } else if (path_is_absolute(v)) {
        path = strdup(v);
    } else {
        char cwd[4096];
        const char *base = base_dir && *base_dir ? base_dir : getcwd(cwd, sizeof cwd);
        path = base ? store_fmt("%s/%s", base, v) : strdup(v);
    }
    if (!path) return line_error(line, "out of memory");
    struct stat st;
    bool exists = stat(path, &st) == 0;
    if (exists || looks_like_path(v)) {
        char *real = exists ? realpath(path, NULL) : NULL;
        if (real) { free(path); path = real; }
        *out = path;
        return 0;
    }
    free(path);
    store_name n;
    if (store_name_parse(v, &n) != 0) {
        char why[400];
        snprintf(why, sizeof why, "%s", anv_last_error());
        return line_error(line, "FROM '%s' is neither a file nor a model name (%s)", v, why);
    }
    *out = strdup(v);
    return 0;
}

/* A second FROM (Ollama's vision models): a projector GGUF file, kept as a path. */
static int read_projector_from(cursor *c, const char *base_dir, int line, int from_line, char **value, char **out) {
    int rc = read_value(c, value);
    if (rc != 0) return rc;
    char *path = NULL;
    if ((rc = resolve_from(*value, base_dir, line, &path)) != 0) return rc;
    gguf_file *g = gguf_open(path);
    gguf_str a;
    const bool clip = g && gguf_get_str(g, "general.architecture", &a) && gguf_str_eq(a, "clip");
    gguf_close(g);
    if (!clip) {
        rc = line_error(line, "a second FROM (the first is on line %d) must name a vision projector GGUF file "
                        "(general.architecture clip): '%s' is not one", from_line, *value);
        free(path);
        return rc;
    }
    *out = path;
    return 0;
}

/* A validated PARAMETER value as JSON: true/false, else a number (options_set_text has
 * already rejected anything else). */
static cJSON *param_value_json(const char *v) {
    if (!strcmp(v, "true")) return cJSON_CreateTrue();
    if (!strcmp(v, "false")) return cJSON_CreateFalse();
    return cJSON_CreateNumber(strtod(v, NULL));
}

static int append_text(char **dst, const char *text, const char *sep) {
    char *n = *dst ? store_fmt("%s%s%s", *dst, sep, text) : strdup(text);
    if (!n) return -1;
    free(*dst);
    *dst = n;
    return 0;
}

int modelfile_parse(const char *text, const char *base_dir, create_spec *out) {
    memset(out, 0, sizeof *out);
    cJSON *params = cJSON_CreateObject();
    cJSON *messages = cJSON_CreateArray();
    run_options scratch;
    options_default(&scratch);
    cursor c = {text ? text : "", 1};
    int rc = 0, from_line = 0;
    char *cmd = NULL, *arg = NULL, *value = NULL;
    while (rc == 0 && *c.p) {
        skip_blanks(&c);
        if (*c.p == '\n' || *c.p == '\r' || *c.p == '#' || !*c.p) {
            while (*c.p && *c.p != '\n') c.p++;
        } else {
            int line = c.line;
            cmd = read_word(&c);
            if (!cmd) { rc = line_error(line, "out of memory"); break; }
            if (!strcasecmp(cmd, "FROM")) {
                if (from_line && out->projector) rc = line_error(line, "a third FROM (the model and its projector are on lines before)");
                else if (from_line) rc = read_projector_from(&c, base_dir, line, from_line, &value, &out->projector);
                else if ((rc = read_value(&c, &value)) == 0) {
                    from_line = line;
                    rc = resolve_from(value, base_dir, line, &out->from);
                }
            } else if (!strcasecmp(cmd, "PARAMETER")) {
                arg = read_word(&c);
                if (!arg || !*arg) rc = line_error(line, "PARAMETER needs a name and a value");
                else if ((rc = read_value(&c, &value)) == 0) {
                    for (char *k = arg; *k; k++) *k = (char)tolower((unsigned char)*k);
                    if (!*value) rc = line_error(line, "PARAMETER %s needs a value", arg);
                    else if (options_set_text(&scratch, arg, value) != 0) rc = line_error(line, "%s", anv_last_error());
                    else if (!strcmp(arg, "stop")) {
                        cJSON *arr = cJSON_GetObjectItemCaseSensitive(params, "stop");
                        if (!arr) arr = cJSON_AddArrayToObject(params, "stop");
                        cJSON_AddItemToArray(arr, cJSON_CreateString(value));
                    } else {
                        cJSON_DeleteItemFromObjectCaseSensitive(params, arg);
                        cJSON_AddItemToObject(params, arg, param_value_json(value));
                    }
                }
            } else if (!strcasecmp(cmd, "TEMPLATE") || !strcasecmp(cmd, "SYSTEM")) {
                if ((rc = read_value(&c, &value)) == 0) {
                    char **dst = !strcasecmp(cmd, "TEMPLATE") ? &out->template_text : &out->system;
                    free(*dst);
                    *dst = value;
                    value = NULL;
                }
            } else if (!strcasecmp(cmd, "LICENSE")) {
                if ((rc = read_value(&c, &value)) == 0 && append_text(&out->license, value, "\n\n") != 0)
                    rc = line_error(line, "out of memory");
            } else if (!strcasecmp(cmd, "MESSAGE")) {
                arg = read_word(&c);
                for (char *k = arg; k && *k; k++) *k = (char)tolower((unsigned char)*k);
                if (!arg || (strcmp(arg, "system") && strcmp(arg, "user") && strcmp(arg, "assistant")))
                    rc = line_error(line, "MESSAGE role '%s' is not one of system, user, assistant", arg ? arg : "");
                else if ((rc = read_value(&c, &value)) == 0) {
                    cJSON *m = cJSON_CreateObject();
                    cJSON_AddStringToObject(m, "role", arg);
                    cJSON_AddStringToObject(m, "content", value);
                    cJSON_AddItemToArray(messages, m);
                }
            } else if (!strcasecmp(cmd, "ADAPTER")) {
                rc = line_error(line, "ADAPTER (LoRA adapters) is not supported by anvil");
            } else if (!strcasecmp(cmd, "REQUIRES")) {
                rc = read_value(&c, &value);  /* a minimum Ollama version: nothing to check */
            } else {
                rc = line_error(line, "unknown command '%.40s' (FROM, PARAMETER, TEMPLATE, SYSTEM, LICENSE, MESSAGE)", cmd);
            }
            free(cmd);
            free(arg);
            free(value);
            cmd = arg = value = NULL;
        }
        if (*c.p == '\n') { c.p++; c.line++; }
    }
    if (rc == 0 && !from_line) rc = (anv_set_error("Modelfile: no FROM line (the model or GGUF file to start from)"), -1);
    if (rc == 0 && cJSON_GetArraySize(params) > 0 && !(out->params_json = cJSON_PrintUnformatted(params)))
        rc = (anv_set_error("out of memory"), -1);
    if (rc == 0 && cJSON_GetArraySize(messages) > 0 && !(out->messages_json = cJSON_PrintUnformatted(messages)))
        rc = (anv_set_error("out of memory"), -1);
    cJSON_Delete(params);
    cJSON_Delete(messages);
    options_clear(&scratch);
    if (rc != 0) create_spec_clear(out);
    return rc;
}

/* ---- rendering ---- */

/* A value as the parser reads it back: """...""" when it spans lines, else "..." . */
static void put_value(FILE *f, const char *v) {
    if (strchr(v, '\n') || strchr(v, '\r')) { fprintf(f, "\"\"\"%s\"\"\"", v); return; }
    fputc('"', f);
    for (const char *p = v; *p; p++) {
        if (*p == '"' || *p == '\\') fputc('\\', f);
        fputc(*p, f);
    }
    fputc('"', f);
}

static void put_block(FILE *f, const char *cmd, const char *text) {
    if (text) fprintf(f, "%s \"\"\"%s\"\"\"\n", cmd, text);
}

char *modelfile_render(const store_entry *e) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) { anv_set_error("out of memory"); return NULL; }
    fputs("# Modelfile generated by \"anvil show\"\n", f);
    if (e->manifest_path) {
        fprintf(f, "# To build a new Modelfile based on this, replace FROM with:\n# FROM %s\n", e->name ? e->name : "");
    }
    fprintf(f, "\nFROM %s\n", e->model_path ? e->model_path : (e->name ? e->name : ""));
    if (e->projector_path) fprintf(f, "FROM %s\n", e->projector_path);
    put_block(f, "TEMPLATE", e->template_text);
    put_block(f, "SYSTEM", e->system);
    cJSON *params = e->params_json ? cJSON_Parse(e->params_json) : NULL;
    const cJSON *it;
    cJSON_ArrayForEach(it, params) {
        if (cJSON_IsArray(it) || cJSON_IsString(it)) {
            const cJSON *s;
            if (cJSON_IsString(it)) { fprintf(f, "PARAMETER %s ", it->string); put_value(f, it->valuestring); fputc('\n', f); }
            else cJSON_ArrayForEach(s, it) {
                if (!cJSON_IsString(s)) continue;
                fprintf(f, "PARAMETER %s ", it->string);
                put_value(f, s->valuestring);
                fputc('\n', f);
            }
        } else {
            char *v = cJSON_PrintUnformatted(it);
            if (v) fprintf(f, "PARAMETER %s %s\n", it->string, v);
            free(v);
        }
    }
    cJSON_Delete(params);
    cJSON *msgs = e->messages_json ? cJSON_Parse(e->messages_json) : NULL;
    cJSON_ArrayForEach(it, msgs) {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(it, "role");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(it, "content");
        if (!cJSON_IsString(role) || !cJSON_IsString(content)) continue;
        fprintf(f, "MESSAGE %s ", role->valuestring);
        put_value(f, content->valuestring);
        fputc('\n', f);
    }
    cJSON_Delete(msgs);
    put_block(f, "LICENSE", e->license);
    if (fclose(f) != 0 || !buf) { free(buf); anv_set_error("out of memory"); return NULL; }
    return buf;
}

/* ---- creating ---- */

static void say(create_progress_fn progress, void *user, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(create_progress_fn progress, void *user, const char *fmt, ...) {
    if (!progress) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    progress(msg, user);
}

/* Stores text as a layer (empty text: no layer). */
static int text_layer(store *s, const char *media_type, const char *text, store_layer *l, char *digest_buf,
                      create_progress_fn progress, void *user) {
    if (!text || !*text) return 0;
    size_t n = strlen(text);
    char d[DIGEST_STR_LEN + 1];
    digest_bytes(text, n, d);
    bool had = store_has_blob(s, d);
    if (store_put_bytes(s, text, n, digest_buf) != 0) return -1;
    say(progress, user, "%s layer %s", had ? "using existing" : "creating new", digest_buf);
    *l = (store_layer){media_type, digest_buf, n};
    return 1;
}

/* params of the FROM model with the spec's keys replacing theirs; validated. */
static char *merge_params(const char *base, const char *over) {
    cJSON *b = base ? cJSON_Parse(base) : cJSON_CreateObject();
    cJSON *o = over ? cJSON_Parse(over) : NULL;
    char *out = NULL;
    if (!b || !cJSON_IsObject(b)) anv_set_error("the FROM model's parameters are not a JSON object");
    else if (over && (!o || !cJSON_IsObject(o))) anv_set_error("parameters must be a JSON object");
    else {
        const cJSON *it;
        cJSON_ArrayForEach(it, o) {
            cJSON_DeleteItemFromObjectCaseSensitive(b, it->string);
            cJSON_AddItemToObject(b, it->string, cJSON_Duplicate(it, true));
        }
        run_options check;
        options_default(&check);
        int rc = options_apply_cjson(&check, b, NULL);
        options_clear(&check);
        if (rc == 0) out = cJSON_GetArraySize(b) ? cJSON_PrintUnformatted(b) : strdup("");
    }
    cJSON_Delete(b);
    cJSON_Delete(o);
    return out;
}

static int check_messages(const char *json) {
    cJSON *m = cJSON_Parse(json);
    bool ok = cJSON_IsArray(m);
    const cJSON *it;
    cJSON *arr = ok ? m : NULL;
    cJSON_ArrayForEach(it, arr) {
        if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(it, "role")) ||
            !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(it, "content"))) ok = false;
    }
    cJSON_Delete(m);
    if (!ok) anv_set_error("messages must be a JSON array of {\"role\", \"content\"} objects");
    return ok ? 0 : -1;
}

static bool from_is_path(const char *from) {
    struct stat st;
    return path_is_absolute(from) || path_is_explicit_relative(from) || (stat(from, &st) == 0 && S_ISREG(st.st_mode));
}

/* The quantizing status with its percentage, as Ollama's create shows it, every 5%. */
typedef struct { create_progress_fn progress; void *user; const char *from, *to; int last; } quant_progress;
static void on_quant_progress(double done, void *user) {
    quant_progress *q = user;
    const int pct = (int)(done * 100.0);
    if (pct / 5 == q->last / 5) return;
    q->last = pct;
    say(q->progress, q->user, "quantizing %s model to %s %d%%", q->from, q->to, pct);
}

/* Re-quantizes in_path into a blob; digest_out/size_out describe it. */
static int quantize_into_store(store *s, const char *in_path, const char *type, char *digest_out, uint64_t *size_out,
                               create_progress_fn progress, void *user) {
    int ftype = quant_ftype_from_name(type);
    if (ftype < 0) { anv_set_error("unknown quantization type '%s' (q4_K_M, q4_K_S, q8_0, q4_0, q6_K, f16 ...)", type); return -1; }
    gguf_file *g = gguf_open(in_path);
    if (!g) return -1;
    uint32_t in_ft = 0;
    const char *in_name = gguf_get_u32(g, "general.file_type", &in_ft) ? quant_ftype_name((int)in_ft) : NULL;
    gguf_close(g);
    say(progress, user, "quantizing %s model to %s", in_name ? in_name : "the", quant_ftype_name(ftype));
    char *blobs = store_fmt("%s/blobs", s->root);
    if (!blobs || store_mkdirs(blobs) != 0) { free(blobs); return -1; }
    static int counter;
    char *tmp = store_fmt("%s/" STORE_TMP_PREFIX "quantize-%s-%d", blobs, anv_process_tag(),
                          __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED));
    free(blobs);
    if (!tmp) return -1;
    quant_progress qp = {progress, user, in_name ? in_name : "the", quant_ftype_name(ftype), 0};
    quantize_opts qo = {.n_threads = 0, .pure = false, .progress = on_quant_progress, .user = &qp};
    int rc = quantize_model_ftype(in_path, tmp, (quant_ftype)ftype, &qo);
    if (rc == 0) rc = store_import_move(s, tmp, digest_out, size_out);
    else unlink(tmp);
    free(tmp);
    if (rc == 0) say(progress, user, "creating new layer %s", digest_out);
    return rc;
}

static int create_locked(store *s, const char *name, const create_spec *spec, create_progress_fn progress, void *user);

/* The shared store lock is held from the FROM lookup (or the first blob written) until the
 * manifest is committed: a concurrent remove's prune cannot take the blobs it uses. */
int store_create(store *s, const char *name, const create_spec *spec, create_progress_fn progress, void *user) {
    store_lk lk;
    if (store_lock_acquire(s, false, true, &lk) != 0) return -1;
    int rc = create_locked(s, name, spec, progress, user);
    store_lock_release(&lk);
    return rc;
}

static int create_locked(store *s, const char *name, const create_spec *spec, create_progress_fn progress, void *user) {
    store_name sn;
    if (store_name_parse(name, &sn) != 0) return -1;
    if (!spec || !spec->from || !*spec->from) { anv_set_error("create: no FROM model given"); return -1; }
    if (spec->messages_json && check_messages(spec->messages_json) != 0) return -1;
    store_entry base;
    memset(&base, 0, sizeof base);
    char model_digest[DIGEST_STR_LEN + 1] = "";
    uint64_t model_size = 0;
    char *model_path = NULL;  /* what to quantize / read the config from */
    bool reused = false;      /* model_path is a store blob taken as is: re-hash it */
    int rc = -1;
    say(progress, user, "gathering model components");
    if (!strncmp(spec->from, "sha256:", 7)) {
        model_path = store_find_blob(s, spec->from);
        struct stat st;
        if (!model_path) anv_set_error("FROM %s: no such blob (upload it first)", spec->from);
        else if (stat(model_path, &st) != 0) anv_set_error("cannot stat %s: %s", model_path, strerror(errno));
        else { snprintf(model_digest, sizeof model_digest, "%s", spec->from); model_size = (uint64_t)st.st_size; rc = 0; reused = true; }
    } else if (!spec->from_store_only && from_is_path(spec->from)) {
        model_path = strdup(spec->from);
        gguf_file *g = model_path ? gguf_open(model_path) : NULL;  /* a GGUF at all? */
        if (g) rc = 0;
        gguf_close(g);
        if (rc == 0 && !spec->quantize) {
            rc = digest_file(model_path, model_digest, &model_size);
            bool had = rc == 0 && store_has_blob(s, model_digest);
            if (rc == 0 && !had) {
                say(progress, user, "copying file %s", model_path);
                rc = store_import_file(s, model_path, model_digest, &model_size);
            }
            if (rc == 0 && had) { /* the store's copy is what the manifest will name: re-hash it */
                char *blob = store_find_blob(s, model_digest);
                if (!blob) anv_set_error("create: blob %s vanished from the store", model_digest);
                rc = blob ? store_verify_blob_file(blob, model_digest, "create") : -1;
                free(blob);
            }
            if (rc == 0) say(progress, user, "%s layer %s", had ? "using existing" : "creating new", model_digest);
        }
    } else if (store_lookup(s, spec->from, &base) == 0) {
        model_path = strdup(base.model_path);
        snprintf(model_digest, sizeof model_digest, "%s", base.model_digest);
        struct stat st;
        model_size = stat(model_path, &st) == 0 ? (uint64_t)st.st_size : 0;
        rc = 0;
        if (!spec->quantize) say(progress, user, "using existing layer %s", model_digest);
        reused = true;
    }
    /* A blob reused from the store is re-hashed first (as Ollama's verifyBlob): one corrupted
     * in place would otherwise be copied or referenced by the new model silently. */
    if (rc == 0 && reused) {
        say(progress, user, "verifying sha256 digest");
        rc = store_verify_blob_file(model_path, model_digest, "create");
    }
    if (rc == 0 && spec->quantize)
        rc = quantize_into_store(s, model_path, spec->quantize, model_digest, &model_size, progress, user);
    char *params = NULL;
    if (rc == 0 && !(params = merge_params(base.params_json, spec->params_json))) rc = -1;
    store_layer layers[7];
    char digests[7][DIGEST_STR_LEN + 1];
    int n = 0;
    if (rc == 0) layers[n++] = (store_layer){STORE_MT_MODEL, model_digest, model_size};
    if (rc == 0 && spec->projector) {   /* a second FROM: the projector file as a layer of its own */
        uint64_t psize = 0;
        rc = digest_file(spec->projector, digests[n], &psize);
        if (rc == 0 && !store_has_blob(s, digests[n])) {
            say(progress, user, "copying file %s", spec->projector);
            rc = store_import_file(s, spec->projector, digests[n], &psize);
        }
        if (rc == 0) { layers[n] = (store_layer){STORE_MT_PROJECTOR, digests[n], psize}; n++; }
    } else if (rc == 0 && base.projector_digest) {   /* FROM a vision model: keep its projector */
        struct stat pst;
        snprintf(digests[n], sizeof digests[n], "%s", base.projector_digest);
        layers[n] = (store_layer){STORE_MT_PROJECTOR, digests[n], stat(base.projector_path, &pst) == 0 ? (uint64_t)pst.st_size : 0};
        n++;
    }
    const char *texts[5] = {
        spec->template_text ? spec->template_text : base.template_text,
        spec->system ? spec->system : base.system,
        spec->license ? spec->license : base.license,
        params,
        spec->messages_json ? spec->messages_json : base.messages_json,
    };
    const char *types[5] = {STORE_MT_TEMPLATE, STORE_MT_SYSTEM, STORE_MT_LICENSE, STORE_MT_PARAMS, STORE_MT_MESSAGES};
    for (int i = 0; rc == 0 && i < 5; i++) {
        int r = text_layer(s, types[i], texts[i], &layers[n], digests[n], progress, user);
        if (r < 0) rc = -1;
        n += r > 0;
    }
    store_layer config;
    char config_digest[DIGEST_STR_LEN + 1];
    char *blob = rc == 0 ? store_find_blob(s, model_digest) : NULL;
    if (rc == 0 && (!blob || store_make_config(s, blob, &config, config_digest) != 0)) rc = -1;
    free(blob);
    if (rc == 0) {
        say(progress, user, "writing manifest");
        rc = store_write_manifest(s, name, &config, layers, n);
    }
    if (rc == 0) say(progress, user, "success");
    free(params);
    free(model_path);
    store_entry_clear(&base);
    return rc;
}
