/* options: Ollama's run-time options, from Modelfile text or JSON, layered. */
#include "options.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

typedef enum { OPT_FLOAT, OPT_INT, OPT_SEED, OPT_BOOL_IGNORED, OPT_NUM_IGNORED } opt_kind;

typedef struct {
    const char *name;
    opt_kind kind;
    size_t offset;   /* into run_options (float or int) */
    double lo, hi;   /* the accepted range (lo_open: lo itself excluded) */
    bool lo_open;
} opt_def;

#define F(field) offsetof(run_options, field)
#define ANY -1e300, 1e300, false
#define NUM_CTX_MAX 16777216  /* 16 Mi tokens: more than any model is trained for */
static const opt_def OPTS[] = {
    {"temperature", OPT_FLOAT, F(sp.temperature), 0, 1e6, false},
    {"top_k", OPT_INT, F(sp.top_k), ANY},
    {"top_p", OPT_FLOAT, F(sp.top_p), 0, 1, false},
    {"min_p", OPT_FLOAT, F(sp.min_p), 0, 1, false},
    {"repeat_penalty", OPT_FLOAT, F(sp.repeat_penalty), 0, 1e6, true},
    {"repeat_last_n", OPT_INT, F(sp.repeat_last_n), -1, 1 << 24, false},
    {"presence_penalty", OPT_FLOAT, F(sp.presence_penalty), -1e6, 1e6, false},
    {"frequency_penalty", OPT_FLOAT, F(sp.frequency_penalty), -1e6, 1e6, false},
    {"seed", OPT_SEED, 0, ANY},
    {"num_predict", OPT_INT, F(num_predict), ANY},
    {"num_ctx", OPT_INT, F(num_ctx), 0, NUM_CTX_MAX, false},
    {"num_batch", OPT_INT, F(num_batch), 1, 1 << 20, false},
    {"num_gpu", OPT_INT, F(num_gpu), -1, 1 << 20, false},
    {"num_thread", OPT_INT, F(num_thread), 0, 1 << 20, false},
    {"num_keep", OPT_INT, F(num_keep), ANY},
    /* accepted for compatibility, no effect in Anvil */
    {"typical_p", OPT_NUM_IGNORED, 0, ANY},
    {"main_gpu", OPT_NUM_IGNORED, 0, ANY},
    {"draft_num_predict", OPT_NUM_IGNORED, 0, ANY},
    {"use_mmap", OPT_BOOL_IGNORED, 0, ANY},
    {"use_mlock", OPT_BOOL_IGNORED, 0, ANY},
    {"numa", OPT_BOOL_IGNORED, 0, ANY},
    {"low_vram", OPT_BOOL_IGNORED, 0, ANY},
    {"penalize_newline", OPT_BOOL_IGNORED, 0, ANY},
};
#undef ANY
#undef F

static const opt_def *find_opt(const char *name) {
    for (size_t i = 0; i < sizeof OPTS / sizeof OPTS[0]; i++)
        if (!strcmp(OPTS[i].name, name)) return &OPTS[i];
    return NULL;
}

void options_default(run_options *o) {
    memset(o, 0, sizeof *o);
    sampler_params_default(&o->sp);
    o->num_predict = -1;
    o->num_ctx = 0;
    o->num_batch = 512;
    o->num_gpu = -1;
    o->num_thread = 0;
    o->num_keep = 4;
}

static void clear_stops(run_options *o) {
    for (int i = 0; i < o->n_stop; i++) free(o->stop[i]);
    o->n_stop = 0;
}

void options_clear(run_options *o) { clear_stops(o); }

void options_copy(run_options *dst, const run_options *src) {
    *dst = *src;
    for (int i = 0; i < src->n_stop; i++) dst->stop[i] = strdup(src->stop[i]);
}

static int add_stop(run_options *o, const char *s) {
    if (o->n_stop >= OPTIONS_MAX_STOP) {
        anv_set_error("too many stop strings (at most %d)", OPTIONS_MAX_STOP);
        return -1;
    }
    o->stop[o->n_stop] = strdup(s);
    if (!o->stop[o->n_stop]) { anv_set_error("out of memory"); return -1; }
    o->n_stop++;
    return 0;
}

/* Seeds: Ollama's -1 means random (our 0); seed s >= 0 is a fixed seed (our s + 1). */
static void set_seed(run_options *o, long long s) { o->sp.seed = s < 0 ? 0 : (uint64_t)s + 1; }

static int set_number(run_options *o, const opt_def *d, double v) {
    if (!isfinite(v)) { anv_set_error("option %s: value is not a finite number", d->name); return -1; }
    if (v < d->lo || (d->lo_open && v == d->lo) || v > d->hi) {
        if (d->hi >= 1e300) anv_set_error("option %s: %g is out of range (must be %s %g)", d->name, v, d->lo_open ? ">" : ">=", d->lo);
        else anv_set_error("option %s: %g is out of range (must be %s %g and <= %g)", d->name, v, d->lo_open ? ">" : ">=", d->lo, d->hi);
        return -1;
    }
    switch (d->kind) {
    case OPT_FLOAT:
        /* a positive value that rounds to float 0 (repeat_penalty 1e-320) is out of range too */
        if (d->lo_open && (float)v <= (float)d->lo) {
            anv_set_error("option %s: %g is out of range (must be > %g as a 32-bit float)", d->name, v, d->lo);
            return -1;
        }
        *(float *)((char *)o + d->offset) = (float)v;
        return 0;
    case OPT_INT:
        if (v != floor(v) || v < -2147483648.0 || v > 2147483647.0) {
            anv_set_error("option %s: %g is not an integer", d->name, v);
            return -1;
        }
        *(int *)((char *)o + d->offset) = (int)v;
        return 0;
    case OPT_SEED:
        if (v != floor(v) || fabs(v) > 9.2e18) { anv_set_error("option seed: %g is not an integer", v); return -1; }
        set_seed(o, (long long)v);
        return 0;
    default: return 0;
    }
}

int options_set_text(run_options *o, const char *key, const char *value) {
    if (!strcmp(key, "stop")) return add_stop(o, value);
    const opt_def *d = find_opt(key);
    if (!d) { anv_set_error("unknown parameter '%s'", key); return -1; }
    if (d->kind == OPT_BOOL_IGNORED) {
        if (strcmp(value, "true") && strcmp(value, "false")) {
            anv_set_error("parameter %s: '%s' is not true or false", key, value);
            return -1;
        }
        return 0;
    }
    errno = 0;
    char *end = NULL;
    double v = strtod(value, &end);
    if (end == value || *end || errno) {
        anv_set_error("parameter %s: '%s' is not a number", key, value);
        return -1;
    }
    return set_number(o, d, v);
}

static int append_unknown(char **unknown, const char *name) {
    if (!unknown) return 0;
    size_t old = *unknown ? strlen(*unknown) : 0;
    char *n = realloc(*unknown, old + strlen(name) + 3);
    if (!n) return -1;
    if (old) memcpy(n + old, ", ", 2), old += 2;
    strcpy(n + old, name);
    *unknown = n;
    return 0;
}

int options_apply_cjson(run_options *o, const void *cjson, char **unknown) {
    const cJSON *obj = cjson;
    if (!obj || cJSON_IsNull(obj)) return 0;
    if (!cJSON_IsObject(obj)) { anv_set_error("options must be a JSON object"); return -1; }
    const cJSON *it;
    cJSON_ArrayForEach(it, obj) {
        const char *k = it->string;
        if (!strcmp(k, "stop")) {
            if (cJSON_IsNull(it)) continue;
            if (!cJSON_IsString(it) && !cJSON_IsArray(it)) {
                anv_set_error("option stop: must be a string or an array of strings");
                return -1;
            }
            run_options tmp = {0};
            if (cJSON_IsString(it)) {
                if (add_stop(&tmp, it->valuestring) != 0) return -1;
            } else {
                const cJSON *s;
                cJSON_ArrayForEach(s, it) {
                    if (!cJSON_IsString(s)) {
                        clear_stops(&tmp);
                        anv_set_error("option stop: every element must be a string");
                        return -1;
                    }
                    if (add_stop(&tmp, s->valuestring) != 0) { clear_stops(&tmp); return -1; }
                }
            }
            clear_stops(o);
            memcpy(o->stop, tmp.stop, sizeof tmp.stop);
            o->n_stop = tmp.n_stop;
            continue;
        }
        const opt_def *d = find_opt(k);
        if (!d) { append_unknown(unknown, k); continue; }
        if (cJSON_IsNull(it)) continue;
        if (d->kind == OPT_BOOL_IGNORED) {
            if (!cJSON_IsBool(it)) { anv_set_error("option %s: must be true or false", k); return -1; }
            continue;
        }
        if (!cJSON_IsNumber(it)) { anv_set_error("option %s: must be a number", k); return -1; }
        if (set_number(o, d, it->valuedouble) != 0) return -1;
    }
    return 0;
}

int options_apply_json_text(run_options *o, const char *json, char **unknown) {
    if (!json || !*json) return 0;
    cJSON *obj = cJSON_Parse(json);
    if (!obj) { anv_set_error("parameters are not valid JSON"); return -1; }
    int rc = options_apply_cjson(o, obj, unknown);
    cJSON_Delete(obj);
    return rc;
}

char *options_to_json(const run_options *o) {
    run_options d;
    options_default(&d);
    cJSON *obj = cJSON_CreateObject();
    if (!obj) return NULL;
    if (o->n_stop) {
        cJSON *arr = cJSON_AddArrayToObject(obj, "stop");
        for (int i = 0; i < o->n_stop; i++) cJSON_AddItemToArray(arr, cJSON_CreateString(o->stop[i]));
    }
    for (size_t i = 0; i < sizeof OPTS / sizeof OPTS[0]; i++) {
        const opt_def *od = &OPTS[i];
        if (od->kind == OPT_FLOAT) {
            float a = *(const float *)((const char *)o + od->offset), b = *(const float *)((const char *)&d + od->offset);
            if (a != b) {
                char buf[32];  /* shortest text that reads back as the same float */
                snprintf(buf, sizeof buf, "%.9g", (double)a);
                for (int p = 1; p <= 9; p++) {
                    snprintf(buf, sizeof buf, "%.*g", p, (double)a);
                    if (strtof(buf, NULL) == a) break;
                }
                cJSON_AddItemToObject(obj, od->name, cJSON_CreateRaw(buf));
            }
        } else if (od->kind == OPT_INT) {
            int a = *(const int *)((const char *)o + od->offset), b = *(const int *)((const char *)&d + od->offset);
            if (a != b) cJSON_AddNumberToObject(obj, od->name, a);
        } else if (od->kind == OPT_SEED && o->sp.seed != d.sp.seed) {
            cJSON_AddNumberToObject(obj, "seed", (double)(o->sp.seed - 1));
        }
    }
    char *s = cJSON_PrintUnformatted(obj);
    cJSON_Delete(obj);
    return s;
}
