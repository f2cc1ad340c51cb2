/* fuzz_gguf: libFuzzer target for the GGUF reader. Opens the input with
 * gguf_open_memory; on failure the message must be one non-empty line; on success it
 * calls every getter on every key, checks the name indexes agree with the arrays, and
 * reads every string and every byte of every tensor (ASan catches any out-of-bounds
 * pointer the reader hands out). Built by tests/gguf/fuzz.cmake with -DANVIL_FUZZ=ON. */
#include "error.h"
#include "gguf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static volatile uint8_t sink;

static uint8_t touch(const void *p, uint64_t n) {
    const uint8_t *b = p;
    uint8_t x = 0;
    for (uint64_t i = 0; i < n; i++) x ^= b[i];
    return x;
}

/* NUL-terminated copy of a name; NULL if it holds a NUL (then C-string lookup can't find it). */
static char *cname(gguf_str s) {
    if (memchr(s.ptr, 0, (size_t)s.len)) return NULL;
    char *c = malloc((size_t)s.len + 1);
    if (!c) abort();
    memcpy(c, s.ptr, (size_t)s.len);
    c[s.len] = '\0';
    return c;
}

static size_t elem_size(gguf_type t) {
    switch (t) {
    case GGUF_UINT8: case GGUF_INT8: case GGUF_BOOL: return 1;
    case GGUF_UINT16: case GGUF_INT16: return 2;
    case GGUF_UINT32: case GGUF_INT32: case GGUF_FLOAT32: return 4;
    case GGUF_UINT64: case GGUF_INT64: case GGUF_FLOAT64: return 8;
    default: return 0;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    anv_set_error("%s", "");
    gguf_file *f = gguf_open_memory(data, size, "fuzz.gguf");
    if (!f) {
        const char *e = anv_last_error();
        if (e[0] == '\0' || strchr(e, '\n') || strncmp(e, "fuzz.gguf: ", 11) != 0) abort();
        return 0;
    }
    if (f->data_offset > f->size || f->alignment == 0 || (f->alignment & (f->alignment - 1))) abort();
    uint8_t x = 0;
    for (uint64_t i = 0; i < f->n_kv; i++) {
        const gguf_kv *kv = &f->kv[i];
        x ^= touch(kv->key.ptr, kv->key.len);
        char *key = cname(kv->key);
        if (key) {
            if (gguf_find(f, key) != kv) abort();
            uint32_t u32; int64_t i64; float f32; bool b; gguf_str s;
            x ^= (uint8_t)gguf_get_u32(f, key, &u32);
            x ^= (uint8_t)gguf_get_i64(f, key, &i64);
            x ^= (uint8_t)gguf_get_f32(f, key, &f32);
            x ^= (uint8_t)gguf_get_bool(f, key, &b);
            if (gguf_get_str(f, key, &s)) x ^= touch(s.ptr, s.len);
            char *dup = gguf_get_str_dup(f, key);
            if (dup) x ^= (uint8_t)dup[0];
            free(dup);
            const gguf_kv *arr = gguf_get_arr(f, key, -1);
            if ((arr != NULL) != (kv->type == GGUF_ARRAY)) abort();
            if (arr && gguf_get_arr(f, key, (int)arr->arr_type) != arr) abort();
            free(key);
        }
        if (kv->type == GGUF_STRING) x ^= touch(kv->v.str.ptr, kv->v.str.len);
        if (kv->type == GGUF_ARRAY) {
            if (kv->arr_type == GGUF_STRING) {
                for (uint64_t j = 0; j < kv->arr_len; j++) x ^= touch(kv->arr_strs[j].ptr, kv->arr_strs[j].len);
            } else {
                x ^= touch(kv->arr_data, kv->arr_len * elem_size(kv->arr_type));
            }
        }
        x ^= (uint8_t)gguf_type_name(kv->type)[0];
    }
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        char *name = cname(t->name);
        if (name) {
            if (gguf_find_tensor(f, name) != t) abort();
            free(name);
        }
        if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS) abort();
        if ((const uint8_t *)t->data != f->base + f->data_offset + t->offset) abort();
        x ^= touch(t->data, t->nbytes);
    }
    sink = x;
    gguf_close(f);
    return 0;
}
