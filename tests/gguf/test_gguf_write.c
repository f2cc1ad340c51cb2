/* test_gguf_write: the GGUF writer (engine/gguf/gguf_write.h): metadata of every type (string and
 * numeric arrays, empty ones too), tensors of several types read back through gguf_open;
 * general.alignment; streaming in odd chunks; copying a whole file (metadata + tensors) is
 * byte-identical; one-line errors and removal of partial files; the process tag its temporaries
 * are named by (anv_process_tag: the pid alone collides between containers, each server pid 1
 * on a shared volume). With `--write PATH` it only writes the sample file
 * (tests/gguf/quant/check_gguf_write.py reads it with gguf-py); `--tag` prints the tag. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "error.h"
#include "gguf.h"
#include "gguf_write.h"
#include "hash.h"
#include "quant.h"
#include "testutil.h"

static char g_dir[256];

static const char *tmp_path(const char *name) {
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", g_dir, name);
    return buf[k];
}

static bool file_exists(const char *p) { return access(p, F_OK) == 0; }

/* The sample tensors: a 2-D F32 [48 x 3], a 1-D F16 [10], a Q8_0 [64 x 2] and a 3-D Q4_K. */
static float g_f32[48 * 3];
static uint16_t g_f16[10];
static uint8_t g_q8[2 * 68];
static uint8_t *g_q4k;
static const int64_t NE_F32[2] = {48, 3}, NE_F16[1] = {10}, NE_Q8[2] = {64, 2}, NE_Q4K[3] = {256, 2, 3};

static void make_tensor_data(void) {
    uint64_t s = 7;
    for (int i = 0; i < 48 * 3; i++) g_f32[i] = tu_rand_f32(&s, -1, 1);
    for (int i = 0; i < 10; i++) g_f16[i] = (uint16_t)(0x3C00 + i);
    float tmp[256 * 6];
    for (int i = 0; i < 256 * 6; i++) tmp[i] = tu_rand_f32(&s, -2, 2);
    quantize_row(QT_Q8_0, tmp, g_q8, 128);
    g_q4k = malloc(qtype_row_size(QT_Q4_K, 256 * 6));
    quantize_row(QT_Q4_K, tmp, g_q4k, 256 * 6);
}

static const char *const STRS[] = {"hello", "", "wörld", "a b c"};

/* Writes the sample file; alignment 0 = default. streamed: data via write_data in odd chunks. */
static int write_sample(const char *path, uint32_t alignment, bool streamed) {
    gguf_writer *w = gguf_writer_new(path);
    if (!w) return -1;
    const uint8_t u8s[3] = {1, 2, 255};
    const int8_t i8s[2] = {-128, 127};
    const uint16_t u16s[2] = {0, 65535};
    const int16_t i16s[2] = {-32768, 5};
    const uint32_t u32s[3] = {7, 8, 4000000000u};
    const int32_t i32s[2] = {-1, 2147483647};
    const uint64_t u64s[1] = {18446744073709551615ull};
    const int64_t i64s[2] = {-9223372036854775807ll - 1, 42};
    const float f32s[3] = {1.5f, -0.0f, INFINITY};
    const double f64s[2] = {3.141592653589793, -1e300};
    const uint8_t bools[3] = {1, 0, 1};
    int rc = 0;
    rc |= gguf_writer_set_str(w, "general.architecture", "test");
    rc |= gguf_writer_set_u8(w, "t.u8", 200);
    rc |= gguf_writer_set_i8(w, "t.i8", -100);
    rc |= gguf_writer_set_u16(w, "t.u16", 60000);
    rc |= gguf_writer_set_i16(w, "t.i16", -30000);
    rc |= gguf_writer_set_u32(w, "t.u32", 4000000000u);
    rc |= gguf_writer_set_i32(w, "t.i32", -2000000000);
    rc |= gguf_writer_set_u64(w, "t.u64", 1ull << 60);
    rc |= gguf_writer_set_i64(w, "t.i64", -(1ll << 60));
    rc |= gguf_writer_set_f32(w, "t.f32", 0.25f);
    rc |= gguf_writer_set_f64(w, "t.f64", 1e-300);
    rc |= gguf_writer_set_bool(w, "t.bool", true);
    rc |= gguf_writer_set_str(w, "t.str", "a string");
    rc |= gguf_writer_set_str(w, "t.str_empty", "");
    rc |= gguf_writer_set_arr(w, "t.arr_u8", GGUF_UINT8, u8s, 3);
    rc |= gguf_writer_set_arr(w, "t.arr_i8", GGUF_INT8, i8s, 2);
    rc |= gguf_writer_set_arr(w, "t.arr_u16", GGUF_UINT16, u16s, 2);
    rc |= gguf_writer_set_arr(w, "t.arr_i16", GGUF_INT16, i16s, 2);
    rc |= gguf_writer_set_arr(w, "t.arr_u32", GGUF_UINT32, u32s, 3);
    rc |= gguf_writer_set_arr(w, "t.arr_i32", GGUF_INT32, i32s, 2);
    rc |= gguf_writer_set_arr(w, "t.arr_u64", GGUF_UINT64, u64s, 1);
    rc |= gguf_writer_set_arr(w, "t.arr_i64", GGUF_INT64, i64s, 2);
    rc |= gguf_writer_set_arr(w, "t.arr_f32", GGUF_FLOAT32, f32s, 3);
    rc |= gguf_writer_set_arr(w, "t.arr_f64", GGUF_FLOAT64, f64s, 2);
    rc |= gguf_writer_set_arr(w, "t.arr_bool", GGUF_BOOL, bools, 3);
    rc |= gguf_writer_set_arr(w, "t.arr_empty", GGUF_INT32, NULL, 0);
    rc |= gguf_writer_set_str_arr(w, "t.arr_str", STRS, 4);
    rc |= gguf_writer_set_str_arr(w, "t.arr_str_empty", NULL, 0);
    /* replace keeps the position, changes value and type */
    rc |= gguf_writer_set_u32(w, "t.replaced", 1);
    rc |= gguf_writer_set_str(w, "t.replaced", "now a string");
    rc |= gguf_writer_set_u32(w, "t.removed", 5);
    rc |= gguf_writer_remove_kv(w, "t.removed");
    if (alignment) rc |= gguf_writer_set_u32(w, "general.alignment", alignment);
    rc |= gguf_writer_add_tensor(w, "w.f32", QT_F32, 2, NE_F32, streamed ? NULL : g_f32);
    rc |= gguf_writer_add_tensor(w, "n.f16", QT_F16, 1, NE_F16, streamed ? NULL : g_f16);
    rc |= gguf_writer_add_tensor(w, "w.q8", QT_Q8_0, 2, NE_Q8, streamed ? NULL : g_q8);
    rc |= gguf_writer_add_tensor(w, "w.q4k", QT_Q4_K, 3, NE_Q4K, streamed ? NULL : g_q4k);
    if (rc) { gguf_writer_abort(w); return -1; }
    if (streamed) {
        /* all tensors' bytes as one stream, written in chunks of 7 bytes */
        const void *parts[4] = {g_f32, g_f16, g_q8, g_q4k};
        const char *names[4] = {"w.f32", "n.f16", "w.q8", "w.q4k"};
        if (gguf_writer_write_header(w) != 0) { gguf_writer_abort(w); return -1; }
        for (int p = 0; p < 4; p++) {
            const uint64_t nb = gguf_writer_tensor_nbytes(w, names[p]);
            for (uint64_t off = 0; off < nb; off += 7) {
                const size_t k = nb - off < 7 ? (size_t)(nb - off) : 7;
                if (gguf_writer_write_data(w, (const uint8_t *)parts[p] + off, k) != 0) {
                    gguf_writer_abort(w);
                    return -1;
                }
            }
        }
    }
    return gguf_writer_finish(w);
}

static bool str_is(gguf_str s, const char *c) { return gguf_str_eq(s, c); }

static void check_sample(const char *path, uint64_t alignment) {
    gguf_file *f = gguf_open(path);
    CHECKF(f != NULL, "reopen %s: %s", path, anv_last_error());
    if (!f) return;
    CHECK(f->version == 3);
    CHECK(f->alignment == alignment);
    CHECK(f->data_offset % alignment == 0);
    CHECK(f->n_kv == 29 + (alignment != 32));
    /* order: as first set */
    CHECK(str_is(f->kv[0].key, "general.architecture") && str_is(f->kv[1].key, "t.u8"));
    uint32_t u32;
    int64_t i64;
    float f32;
    bool b;
    gguf_str s;
    CHECK(gguf_get_u32(f, "t.u8", &u32) && u32 == 200);
    CHECK(gguf_get_i64(f, "t.i8", &i64) && i64 == -100);
    CHECK(gguf_get_u32(f, "t.u16", &u32) && u32 == 60000);
    CHECK(gguf_get_i64(f, "t.i16", &i64) && i64 == -30000);
    CHECK(gguf_get_u32(f, "t.u32", &u32) && u32 == 4000000000u);
    CHECK(gguf_get_i64(f, "t.i32", &i64) && i64 == -2000000000);
    CHECK(gguf_get_i64(f, "t.u64", &i64) && i64 == 1ll << 60);
    CHECK(gguf_get_i64(f, "t.i64", &i64) && i64 == -(1ll << 60));
    CHECK(gguf_get_f32(f, "t.f32", &f32) && f32 == 0.25f);
    const gguf_kv *kv = gguf_find(f, "t.f64");
    CHECK(kv && kv->type == GGUF_FLOAT64 && kv->v.f64 == 1e-300);
    CHECK(gguf_get_bool(f, "t.bool", &b) && b);
    CHECK(gguf_get_str(f, "t.str", &s) && str_is(s, "a string"));
    CHECK(gguf_get_str(f, "t.str_empty", &s) && s.len == 0);
    CHECK(gguf_get_str(f, "t.replaced", &s) && str_is(s, "now a string"));
    CHECK(gguf_find(f, "t.removed") == NULL);
    static const struct { const char *key; gguf_type t; uint64_t n; size_t es; } arrs[] = {
        {"t.arr_u8", GGUF_UINT8, 3, 1}, {"t.arr_i8", GGUF_INT8, 2, 1}, {"t.arr_u16", GGUF_UINT16, 2, 2},
        {"t.arr_i16", GGUF_INT16, 2, 2}, {"t.arr_u32", GGUF_UINT32, 3, 4}, {"t.arr_i32", GGUF_INT32, 2, 4},
        {"t.arr_u64", GGUF_UINT64, 1, 8}, {"t.arr_i64", GGUF_INT64, 2, 8}, {"t.arr_f32", GGUF_FLOAT32, 3, 4},
        {"t.arr_f64", GGUF_FLOAT64, 2, 8}, {"t.arr_bool", GGUF_BOOL, 3, 1}, {"t.arr_empty", GGUF_INT32, 0, 4},
    };
    for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) {
        kv = gguf_get_arr(f, arrs[i].key, (int)arrs[i].t);
        CHECKF(kv && kv->arr_len == arrs[i].n, "%s", arrs[i].key);
    }
    kv = gguf_get_arr(f, "t.arr_u32", GGUF_UINT32);
    if (kv) {
        uint32_t v[3];
        memcpy(v, kv->arr_data, sizeof v);
        CHECK(v[0] == 7 && v[1] == 8 && v[2] == 4000000000u);
    }
    kv = gguf_get_arr(f, "t.arr_f64", GGUF_FLOAT64);
    if (kv) {
        double v[2];
        memcpy(v, kv->arr_data, sizeof v);
        CHECK(v[0] == 3.141592653589793 && v[1] == -1e300);
    }
    kv = gguf_get_arr(f, "t.arr_str", GGUF_STRING);
    CHECK(kv && kv->arr_len == 4);
    if (kv && kv->arr_len == 4)
        for (int i = 0; i < 4; i++) CHECKF(str_is(kv->arr_strs[i], STRS[i]), "string %d", i);
    kv = gguf_get_arr(f, "t.arr_str_empty", GGUF_STRING);
    CHECK(kv && kv->arr_len == 0);

    CHECK(f->n_tensors == 4);
    const gguf_tensor *t = gguf_find_tensor(f, "w.f32");
    CHECK(t && t->type == QT_F32 && t->n_dims == 2 && t->ne[0] == 48 && t->ne[1] == 3 && t->ne[2] == 1);
    CHECK(t && t->nbytes == sizeof g_f32 && memcmp(t->data, g_f32, sizeof g_f32) == 0);
    t = gguf_find_tensor(f, "n.f16");
    CHECK(t && t->type == QT_F16 && t->n_dims == 1 && t->ne[0] == 10 && memcmp(t->data, g_f16, sizeof g_f16) == 0);
    t = gguf_find_tensor(f, "w.q8");
    CHECK(t && t->type == QT_Q8_0 && t->nbytes == sizeof g_q8 && memcmp(t->data, g_q8, sizeof g_q8) == 0);
    t = gguf_find_tensor(f, "w.q4k");
    CHECK(t && t->type == QT_Q4_K && t->n_dims == 3 && t->ne[2] == 3 && t->nbytes == 144 * 6 &&
          memcmp(t->data, g_q4k, 144 * 6) == 0);
    for (uint64_t i = 0; i < f->n_tensors; i++) CHECK(f->tensors[i].offset % alignment == 0);
    gguf_close(f);
}

/* Copies every key and tensor of src into dst (borrowing src's mapping). */
static int copy_file(const char *src, const char *dst) {
    gguf_file *f = gguf_open(src);
    if (!f) return -1;
    gguf_writer *w = gguf_writer_new(dst);
    int rc = w ? gguf_writer_copy_all_kv(w, f) : -1;
    for (uint64_t i = 0; rc == 0 && i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        rc = gguf_writer_add_tensor(w, name, t->type, t->n_dims, t->ne, t->data);
    }
    if (rc == 0) rc = gguf_writer_finish(w);
    else gguf_writer_abort(w);
    gguf_close(f);
    return rc;
}

static uint8_t *read_all(const char *p, size_t *n) {
    FILE *f = fopen(p, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(*n ? *n : 1);
    if (b && fread(b, 1, *n, f) != *n) { free(b); b = NULL; }
    fclose(f);
    return b;
}

static void test_roundtrip(void) {
    const char *a = tmp_path("a.gguf"), *b = tmp_path("b.gguf"), *c = tmp_path("c.gguf");
    CHECKF(write_sample(a, 0, false) == 0, "%s", anv_last_error());
    check_sample(a, 32);
    CHECKF(write_sample(b, 64, true) == 0, "%s", anv_last_error());
    check_sample(b, 64);
    /* a copy through reader + writer is byte-identical */
    CHECKF(copy_file(a, c) == 0, "%s", anv_last_error());
    size_t na = 0, nc = 0;
    uint8_t *ba = read_all(a, &na), *bc = read_all(c, &nc);
    CHECK(ba && bc && na == nc && memcmp(ba, bc, na) == 0);
    free(ba);
    free(bc);
    /* streamed and borrowed writes give the same bytes */
    CHECKF(write_sample(c, 0, true) == 0, "%s", anv_last_error());
    ba = read_all(a, &na);
    bc = read_all(c, &nc);
    CHECK(ba && bc && na == nc && memcmp(ba, bc, na) == 0);
    free(ba);
    free(bc);
    remove(a);
    remove(b);
    remove(c);
}

static void test_errors(void) {
    const char *p = tmp_path("err.gguf");
    const int64_t ne[2] = {32, 2}, bad_ne[2] = {33, 2}, neg_ne[2] = {32, -1};
    float data[64] = {0};

    CHECK(gguf_writer_new(tmp_path("no/such/dir/x.gguf")) == NULL && strstr(anv_last_error(), "cannot create"));
    CHECK(gguf_writer_new("") == NULL);

    gguf_writer *w = gguf_writer_new(p);
    CHECK(w != NULL);
    if (!w) return;
    CHECK(gguf_writer_add_tensor(w, "x", QT_F32, 2, ne, data) == 0);
    CHECK(gguf_writer_add_tensor(w, "x", QT_F32, 2, ne, data) == -1 && strstr(anv_last_error(), "duplicate"));
    CHECK(gguf_writer_add_tensor(w, "q", QT_Q4_0, 2, bad_ne, NULL) == -1 && strstr(anv_last_error(), "block size"));
    CHECK(gguf_writer_add_tensor(w, "n", QT_F32, 2, neg_ne, NULL) == -1);
    CHECK(gguf_writer_add_tensor(w, "t", 99, 2, ne, NULL) == -1 && strstr(anv_last_error(), "unknown type"));
    CHECK(gguf_writer_add_tensor(w, "d", QT_F32, 5, ne, NULL) == -1);
    CHECK(gguf_writer_add_tensor(w, "", QT_F32, 2, ne, NULL) == -1);
    char longname[100];
    memset(longname, 'a', 99);
    longname[99] = 0;
    CHECK(gguf_writer_add_tensor(w, longname, QT_F32, 2, ne, NULL) == -1);
    CHECK(gguf_writer_set_u32(w, "", 1) == -1);
    CHECK(gguf_writer_set_arr(w, "k", GGUF_STRING, data, 1) == -1);
    const uint8_t bad_bool = 2;
    CHECK(gguf_writer_set_arr(w, "k", GGUF_BOOL, &bad_bool, 1) == -1);
    CHECK(gguf_writer_n_kv(w) == 0);
    CHECK(gguf_writer_add_tensor(w, "y", QT_F32, 2, ne, NULL) == 0); /* streamed, never written */
    CHECK(gguf_writer_write_header(w) == 0);
    CHECK(gguf_writer_set_u32(w, "late", 1) == -1 && strstr(anv_last_error(), "after the header"));
    CHECK(gguf_writer_add_tensor(w, "late", QT_F32, 2, ne, NULL) == -1);
    /* x (borrowed) is first: stream its bytes ourselves, then too many bytes */
    CHECK(gguf_writer_write_data(w, data, sizeof data) == 0);
    CHECK(gguf_writer_write_data(w, data, 100) == 0); /* 100 of y's 256 bytes */
    CHECK(gguf_writer_finish(w) == -1 && strstr(anv_last_error(), "'y' got 100 of its 256 bytes"));
    CHECK(!file_exists(p)); /* removed */

    w = gguf_writer_new(p);
    CHECK(gguf_writer_add_tensor(w, "x", QT_F32, 2, ne, data) == 0);
    CHECK(gguf_writer_write_header(w) == 0);
    CHECK(gguf_writer_write_data(w, data, sizeof data + 4) == -1 && strstr(anv_last_error(), "more than"));
    gguf_writer_abort(w);
    CHECK(!file_exists(p));

    w = gguf_writer_new(p);
    CHECK(gguf_writer_set_u32(w, "general.alignment", 48) == 0);
    CHECK(gguf_writer_finish(w) == -1 && strstr(anv_last_error(), "power of two"));
    CHECK(!file_exists(p));

    w = gguf_writer_new(p);
    CHECK(gguf_writer_add_tensor(w, "x", QT_F32, 2, ne, NULL) == 0);
    CHECK(gguf_writer_write_data(w, data, 4) == -1 && strstr(anv_last_error(), "before the header"));
    gguf_writer_abort(w);
    gguf_writer_abort(NULL);
    CHECK(gguf_writer_finish(NULL) == -1);

    /* an empty file (no keys, no tensors) is valid */
    w = gguf_writer_new(p);
    CHECK(gguf_writer_finish(w) == 0);
    gguf_file *f = gguf_open(p);
    CHECK(f && f->n_kv == 0 && f->n_tensors == 0);
    gguf_close(f);
    remove(p);
}

/* Entries of g_dir other than . and .. (temporaries a writer left behind). */
static int dir_entries(void) {
    DIR *d = opendir(g_dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d) closedir(d);
    return n;
}

/* A writer never damages what is at its path until it has a complete file: a failed or aborted
 * write leaves an existing file as it was and no temporary beside it; a successful one
 * replaces it; a path that is not a regular file (folder, FIFO, device) is refused. */
static void test_replace_safely(void) {
    const char *p = tmp_path("keep.gguf");
    const int64_t ne[2] = {32, 2};
    float data[64] = {0};
    FILE *fp = fopen(p, "wb");
    CHECK(fp && fputs("precious", fp) >= 0 && fclose(fp) == 0);
    gguf_writer *w = gguf_writer_new(p);
    CHECK(w && gguf_writer_add_tensor(w, "y", QT_F32, 2, ne, NULL) == 0 && gguf_writer_write_header(w) == 0);
    CHECK(gguf_writer_finish(w) == -1);           /* y got none of its bytes */
    struct stat st;
    CHECK(stat(p, &st) == 0 && st.st_size == 8);  /* untouched */
    CHECK(dir_entries() == 1);
    w = gguf_writer_new(p);
    CHECK(w && gguf_writer_set_u32(w, "k", 7) == 0);
    gguf_writer_abort(w);
    CHECK(stat(p, &st) == 0 && st.st_size == 8 && dir_entries() == 1);
    w = gguf_writer_new(p);
    CHECK(w && gguf_writer_add_tensor(w, "x", QT_F32, 2, ne, data) == 0 && gguf_writer_finish(w) == 0);
    gguf_file *f = gguf_open(p);
    CHECK(f && f->n_tensors == 1 && dir_entries() == 1);
    gguf_close(f);
    remove(p);
    const char *d = tmp_path("folder.gguf");
    CHECK(mkdir(d, 0755) == 0);
    CHECK(gguf_writer_new(d) == NULL && strstr(anv_last_error(), "not a regular file"));
    rmdir(d);
#ifndef _WIN32
    const char *fifo = tmp_path("fifo.gguf");
    CHECK(mkfifo(fifo, 0644) == 0);
    CHECK(gguf_writer_new(fifo) == NULL && strstr(anv_last_error(), "not a regular file"));
    remove(fifo);
    CHECK(gguf_writer_new("/dev/null") == NULL && strstr(anv_last_error(), "not a regular file"));
#endif
    CHECK(dir_entries() == 0);
}

/* The tag is "<pid>-<12 hex digits>", stable in a process, and its digits differ between two
 * runs (they are random, not derived from the pid or the clock's seconds). */
static void test_process_tag(const char *argv0) {
    const char *tag = anv_process_tag();
    char want_prefix[32];
    snprintf(want_prefix, sizeof want_prefix, "%ld-", (long)getpid());
    CHECKF(!strncmp(tag, want_prefix, strlen(want_prefix)) && strlen(tag) == strlen(want_prefix) + 12 &&
               strspn(tag + strlen(want_prefix), "0123456789abcdef") == 12, "process tag [%s]", tag);
    CHECK(anv_process_tag() == tag);
#ifndef _WIN32
    char digits[2][32] = {"", ""}, cmd[600];
    snprintf(cmd, sizeof cmd, "'%s' --tag", argv0);
    for (int i = 0; i < 2; i++) {
        FILE *p = popen(cmd, "r");
        char line[64] = "";
        if (p && fgets(line, sizeof line, p)) {
            const char *dash = strchr(line, '-');
            snprintf(digits[i], sizeof digits[i], "%.12s", dash ? dash + 1 : "");
        }
        if (p) pclose(p);
    }
    CHECKF(strlen(digits[0]) == 12 && strcmp(digits[0], digits[1]) != 0, "two processes' tag digits [%s] [%s] differ",
           digits[0], digits[1]);
#else
    (void)argv0;
#endif
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--tag") == 0) {
        puts(anv_process_tag());
        return 0;
    }
    make_tensor_data();
    if (argc == 3 && strcmp(argv[1], "--write") == 0) {
        const int rc = write_sample(argv[2], 0, false);
        if (rc) fprintf(stderr, "%s\n", anv_last_error());
        free(g_q4k);
        return rc ? 1 : 0;
    }
    snprintf(g_dir, sizeof g_dir, "/tmp/anvil_gguf_write_XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    anv_log_enabled = 0;
    test_roundtrip();
    test_errors();
    test_replace_safely();
    test_process_tag(argv[0]);
    rmdir(g_dir);
    free(g_q4k);
    return tu_finish();
}
