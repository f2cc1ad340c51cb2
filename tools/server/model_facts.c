/* model_facts: a model's details, metadata and tensor list from its GGUF header, in the
 * shapes Ollama's /api/tags, /api/show and /api/ps use. */
#include "model_facts.h"

#include "chat.h"
#include "prompt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "quant.h"
#include "quantize_model.h"

void facts_unknown(model_facts *f) {
    memset(f, 0, sizeof *f);
    snprintf(f->family, sizeof f->family, "unknown");
    snprintf(f->parameter_size, sizeof f->parameter_size, "unknown");
    snprintf(f->quantization, sizeof f->quantization, "unknown");
}

void facts_close(model_facts *f) {
    gguf_close(f->file);
    f->file = NULL;
}

void facts_human_number(uint64_t n, char *buf, size_t cap) {
    double v;
    if (n >= 1000000000ull) {
        v = (double)n / 1e9;
        snprintf(buf, cap, v == floor(v) ? "%.0fB" : "%.1fB", v);
    } else if (n >= 1000000ull) {
        v = (double)n / 1e6;
        snprintf(buf, cap, v == floor(v) ? "%.0fM" : "%.2fM", v);
    } else if (n >= 1000ull) {
        snprintf(buf, cap, "%.0fK", (double)n / 1e3);
    } else {
        snprintf(buf, cap, "%llu", (unsigned long long)n);
    }
}

void facts_format_number(double v, char *buf, size_t cap) {
    if (v == floor(v) && fabs(v) < 1e15) { snprintf(buf, cap, "%.0f", v); return; }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) return;
    }
}

/* The shortest text that reads back as the float32 f. */
static void format_float32(float f, char *buf, size_t cap) {
    if (!isfinite(f)) { snprintf(buf, cap, "0"); return; }   /* JSON has no inf/nan */
    for (int prec = 1; prec <= 9; prec++) {
        snprintf(buf, cap, "%.*g", prec, (double)f);
        if ((float)strtod(buf, NULL) == f) return;
    }
}

void facts_rfc3339(int64_t unix_s, char *buf, size_t cap) {
    time_t t = (time_t)unix_s;
    struct tm tm;
    if (!localtime_r(&t, &tm)) { snprintf(buf, cap, "1970-01-01T00:00:00Z"); return; }
    size_t n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
#ifdef _WIN32
    struct tm utc = tm;
    long off = (long)((_mkgmtime(&utc) - t) / 60); /* msvcrt's struct tm has no tm_gmtoff */
#else
    long off = tm.tm_gmtoff / 60;
#endif
    if (off == 0) snprintf(buf + n, cap - n, "Z");
    else snprintf(buf + n, cap - n, "%c%02ld:%02ld", off < 0 ? '-' : '+', labs(off) / 60, labs(off) % 60);
}

int facts_read(const char *path, model_facts *f) {
    facts_unknown(f);
    if (!path) { anv_set_error("model has no GGUF file"); return -1; }
    gguf_file *g = gguf_open(path);
    if (!g) return -1;
    f->file = g;
    gguf_str arch;
    if (gguf_get_str(g, "general.architecture", &arch) && arch.len < sizeof f->family)
        snprintf(f->family, sizeof f->family, "%.*s", (int)arch.len, arch.ptr);
    uint64_t n = 0;
    uint64_t bytes_by_type[QT_COUNT] = {0};
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const gguf_tensor *t = &g->tensors[i];
        n += (uint64_t)(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]);
        if (t->n_dims >= 2 && t->type < QT_COUNT) bytes_by_type[t->type] += t->nbytes;
    }
    f->n_params = n;
    facts_human_number(n, f->parameter_size, sizeof f->parameter_size);
    uint32_t ftype;
    const char *qname = NULL;
    if (gguf_find(g, "general.file_type") && gguf_get_u32(g, "general.file_type", &ftype))
        qname = quant_ftype_name((int)ftype);
    if (!qname) {   /* no file type: the type holding most of the 2-D weights */
        int main_type = -1;
        for (int t = 0; t < QT_COUNT; t++)
            if (bytes_by_type[t] && (main_type < 0 || bytes_by_type[t] > bytes_by_type[main_type])) main_type = t;
        const qtype_info *qi = main_type >= 0 ? qtype_get((uint32_t)main_type) : NULL;
        qname = qi ? qi->name : NULL;
    }
    if (qname) {
        snprintf(f->quantization, sizeof f->quantization, "%s", qname);
        for (char *c = f->quantization; *c; c++) if (*c >= 'a' && *c <= 'z') *c = (char)(*c - 'a' + 'A');
    }
    return 0;
}

cJSON *facts_details_json(const model_facts *f) {
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "parent_model", "");
    cJSON_AddStringToObject(d, "format", "gguf");
    cJSON_AddStringToObject(d, "family", f->family);
    cJSON *fams = cJSON_AddArrayToObject(d, "families");
    cJSON_AddItemToArray(fams, cJSON_CreateString(f->family));
    cJSON_AddStringToObject(d, "parameter_size", f->parameter_size);
    cJSON_AddStringToObject(d, "quantization_level", f->quantization);
    return d;
}

static cJSON *gstr_json(gguf_str s) {
    char *c = malloc(s.len + 1);
    if (!c) return cJSON_CreateNull();
    memcpy(c, s.ptr, s.len);
    c[s.len] = 0;
    cJSON *j = cJSON_CreateString(c);
    free(c);
    return j;
}

/* One numeric element of type t at p (little-endian, maybe unaligned). */
static cJSON *number_json(gguf_type t, const uint8_t *p) {
    union { uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32;
            float f32; uint64_t u64; int64_t i64; double f64; } v;
    static const size_t size[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    if ((unsigned)t >= sizeof size / sizeof size[0] || !size[t]) return cJSON_CreateNull();
    memcpy(&v, p, size[t]);
    char buf[40];
    switch (t) {
    case GGUF_UINT8: return cJSON_CreateNumber(v.u8);
    case GGUF_INT8: return cJSON_CreateNumber(v.i8);
    case GGUF_UINT16: return cJSON_CreateNumber(v.u16);
    case GGUF_INT16: return cJSON_CreateNumber(v.i16);
    case GGUF_UINT32: return cJSON_CreateNumber(v.u32);
    case GGUF_INT32: return cJSON_CreateNumber(v.i32);
    case GGUF_UINT64: return cJSON_CreateNumber((double)v.u64);
    case GGUF_INT64: return cJSON_CreateNumber((double)v.i64);
    case GGUF_BOOL: return cJSON_CreateBool(v.u8 != 0);
    case GGUF_FLOAT32: format_float32(v.f32, buf, sizeof buf); return cJSON_CreateRaw(buf);
    case GGUF_FLOAT64: return cJSON_CreateNumber(isfinite(v.f64) ? v.f64 : 0);
    default: return cJSON_CreateNull();
    }
}

static cJSON *kv_json(const gguf_kv *kv, bool full_arrays) {
    char buf[40];
    switch (kv->type) {
    case GGUF_STRING: return gstr_json(kv->v.str);
    case GGUF_BOOL: return cJSON_CreateBool(kv->v.b);
    case GGUF_FLOAT32: format_float32((float)kv->v.f64, buf, sizeof buf); return cJSON_CreateRaw(buf);
    case GGUF_FLOAT64: return cJSON_CreateNumber(isfinite(kv->v.f64) ? kv->v.f64 : 0);
    case GGUF_INT8: case GGUF_INT16: case GGUF_INT32: case GGUF_INT64:
        return cJSON_CreateNumber((double)kv->v.i64);
    case GGUF_UINT8: case GGUF_UINT16: case GGUF_UINT32: case GGUF_UINT64:
        return cJSON_CreateNumber((double)kv->v.u64);
    case GGUF_ARRAY: break;
    default: return cJSON_CreateNull();
    }
    cJSON *arr = cJSON_CreateArray();
    if (!full_arrays) return arr;
    static const size_t size[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    for (uint64_t i = 0; i < kv->arr_len; i++) {
        cJSON *item;
        if (kv->arr_type == GGUF_STRING) item = kv->arr_strs ? gstr_json(kv->arr_strs[i]) : cJSON_CreateNull();
        else if ((unsigned)kv->arr_type < sizeof size / sizeof size[0] && size[kv->arr_type])
            item = number_json(kv->arr_type, (const uint8_t *)kv->arr_data + i * size[kv->arr_type]);
        else item = cJSON_CreateNull();   /* nested arrays: not in any model we read */
        cJSON_AddItemToArray(arr, item);
    }
    return arr;
}

cJSON *facts_model_info_json(const model_facts *f, bool verbose) {
    cJSON *info = cJSON_CreateObject();
    const gguf_file *g = f->file;
    if (!g) return info;
    bool have_count = false;
    for (uint64_t i = 0; i < g->n_kv; i++) {
        const gguf_kv *kv = &g->kv[i];
        if (gguf_str_eq(kv->key, "general.name") || gguf_str_eq(kv->key, "tokenizer.chat_template")) continue;
        have_count |= gguf_str_eq(kv->key, "general.parameter_count");
        char key[256];
        if (kv->key.len >= sizeof key) continue;
        snprintf(key, sizeof key, "%.*s", (int)kv->key.len, kv->key.ptr);
        /* the token tables (and anything as long) only when verbose */
        bool full = verbose || (kv->arr_len <= 1024 && strncmp(key, "tokenizer.ggml.", 15));
        cJSON_AddItemToObject(info, key, kv_json(kv, full));
    }
    if (!have_count) cJSON_AddNumberToObject(info, "general.parameter_count", (double)f->n_params);
    return info;
}

cJSON *facts_tensors_json(const model_facts *f) {
    cJSON *arr = cJSON_CreateArray();
    const gguf_file *g = f->file;
    for (uint64_t i = 0; g && i < g->n_tensors; i++) {
        const gguf_tensor *t = &g->tensors[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "name", gstr_json(t->name));
        const qtype_info *qi = qtype_get(t->type);
        char tname[16];
        if (qi) snprintf(tname, sizeof tname, "%s", qi->name);
        else snprintf(tname, sizeof tname, "type%u", t->type);
        for (char *c = tname; *c; c++) if (*c >= 'a' && *c <= 'z') *c = (char)(*c - 'a' + 'A');
        cJSON_AddStringToObject(o, "type", tname);
        cJSON *shape = cJSON_AddArrayToObject(o, "shape");
        for (uint32_t d = 0; d < t->n_dims; d++) cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->ne[d]));
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

void facts_capabilities(const model_facts *f, const char *template_go, bool vision, cJSON *caps) {
    if (f->file) {   /* Ollama's rule: {arch}.pooling_type present -> an embedding model, nothing else */
        char key[96];
        snprintf(key, sizeof key, "%s.pooling_type", f->family);
        if (gguf_find(f->file, key)) {
            cJSON_AddItemToArray(caps, cJSON_CreateString("embedding"));
            return;
        }
    }
    cJSON_AddItemToArray(caps, cJSON_CreateString("completion"));
    if (vision) cJSON_AddItemToArray(caps, cJSON_CreateString("vision"));   /* Ollama's order */
    bool tools = false, thinking = false, insert = false;
    if (template_go && *template_go) {
        thinking = strstr(template_go, ".Think") != NULL;   /* Ollama: the names the template uses */
        tools = strstr(template_go, ".Tools") != NULL;
        insert = strstr(template_go, ".Suffix") != NULL;
    } else if (f->file) {
        gguf_str t = {0};
        char *tmpl = NULL;
        if (gguf_get_str(f->file, "tokenizer.chat_template", &t)) tmpl = strndup(t.ptr, t.len);
        const char *arch = strcmp(f->family, "unknown") ? f->family : NULL;
        chat_format fmt = !tmpl && prompt_gguf_is_base(f->file) ? CHAT_RAW : chat_detect(tmpl, arch);
        tools = chat_format_has_tools(fmt, tmpl);
        thinking = chat_format_has_thinking(fmt, tmpl, arch);
        free(tmpl);
    }
    if (tools) cJSON_AddItemToArray(caps, cJSON_CreateString("tools"));
    if (insert) cJSON_AddItemToArray(caps, cJSON_CreateString("insert"));
    if (thinking) cJSON_AddItemToArray(caps, cJSON_CreateString("thinking"));
}
