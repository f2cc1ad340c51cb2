/* gguf_write: the GGUF v3 writer (see gguf_write.h). Each metadata value is serialized into
 * its own byte buffer when set (so a later set can replace it in place); the header,
 * metadata and tensor infos are written in one pass when the first data byte is due, the
 * tensor data after it, each tensor padded with zeros to the alignment. The bytes go to a
 * temporary file beside the output, renamed over it by a successful finish. */
#include "gguf_write.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "error.h"
#include "quant.h"
#include "hash.h"

#ifndef O_BINARY
#define O_BINARY 0
#endif
#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

#define GGUF_WRITE_VERSION 3
#define GGUF_WRITE_DEFAULT_ALIGNMENT 32
#define GGUF_WRITE_MAX_NAME 63 /* ggml's GGML_MAX_NAME - 1 */

typedef struct {
    char *key;
    uint8_t *val; /* u32 type + the value, as in the file */
    size_t len;
} wkv;

typedef struct {
    char *name;
    uint32_t type, n_dims;
    int64_t ne[GGUF_MAX_DIMS];
    uint64_t nbytes, offset;
    const void *data; /* borrowed, or NULL if streamed */
} wtensor;

struct gguf_writer {
    char *path;
    char *tmp_path;      /* what is written; renamed to path by a successful finish */
    FILE *fp;
    wkv *kv;
    size_t n_kv, cap_kv;
    wtensor *t;
    size_t n_t, cap_t;
    uint64_t alignment;
    bool header_done;
    size_t cur;          /* tensor receiving data */
    uint64_t cur_written; /* its bytes written so far */
    bool failed;         /* a write failed: only abort/finish (which fails) make sense */
};

/* ---- growable byte buffer for serializing one value ---- */

typedef struct { uint8_t *p; size_t len, cap; bool oom; } bbuf;

static void bb_put(bbuf *b, const void *src, size_t n) {
    if (b->oom || n == 0) return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n) cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) { b->oom = true; return; }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, src, n);
    b->len += n;
}
static void bb_u32(bbuf *b, uint32_t v) { bb_put(b, &v, 4); }
static void bb_u64(bbuf *b, uint64_t v) { bb_put(b, &v, 8); }
static void bb_str(bbuf *b, const char *s, uint64_t len) { bb_u64(b, len); bb_put(b, s, (size_t)len); }

static size_t scalar_size(gguf_type t) {
    switch (t) {
    case GGUF_UINT8: case GGUF_INT8: case GGUF_BOOL: return 1;
    case GGUF_UINT16: case GGUF_INT16: return 2;
    case GGUF_UINT32: case GGUF_INT32: case GGUF_FLOAT32: return 4;
    case GGUF_UINT64: case GGUF_INT64: case GGUF_FLOAT64: return 8;
    default: return 0;
    }
}

/* ---- writer lifetime ---- */

/* The output is written to a temporary file beside it (".anvil-tmp-gguf-<process tag>-<n>-<name>", locked
 * while written, the store's prefix so its clean-up knows it) and renamed over the path only
 * when complete: a failed or killed write never leaves a partial file under the name, and never
 * removes anything it did not create. An existing path that is not a regular file (a device, a
 * folder, a FIFO) is refused rather than replaced. */
static FILE *create_temp_beside(const char *path, char **tmp_out) {
    static int counter;
    const char *slash = strrchr(path, '/');
#ifdef _WIN32
    const char *bslash = strrchr(path, '\\');
    if (bslash && (!slash || bslash > slash)) slash = bslash;
#endif
    const int dir_len = slash ? (int)(slash - path) + 1 : 0;
    const char *base = slash ? slash + 1 : path;
    for (int attempt = 0; attempt < 100; attempt++) {
        const int n = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
        const size_t len = (size_t)dir_len + strlen(base) + 64;
        char *tmp = malloc(len);
        if (!tmp) { anv_set_error("%s: out of memory", path); return NULL; }
        snprintf(tmp, len, "%.*s.anvil-tmp-gguf-%s-%d-%s", dir_len, path, anv_process_tag(), n, base);
        const int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_BINARY, 0644);
        if (fd >= 0) {
            flock(fd, LOCK_EX);   /* held until closed: a stale-temporary sweep leaves it alone */
            FILE *fp = fdopen(fd, "wb");
            if (!fp) { close(fd); unlink(tmp); free(tmp); break; }
            *tmp_out = tmp;
            return fp;
        }
        const int e = errno;
        free(tmp);
        if (e != EEXIST) { anv_set_error("%s: cannot create a file in its folder: %s", path, strerror(e)); return NULL; }
    }
    anv_set_error("%s: cannot create a temporary file beside it", path);
    return NULL;
}

gguf_writer *gguf_writer_new(const char *path) {
    if (!path || !*path) {
        anv_set_error("gguf writer: empty output path");
        return NULL;
    }
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        anv_set_error("%s: exists and is not a regular file (refusing to replace it)", path);
        return NULL;
    }
    gguf_writer *w = calloc(1, sizeof *w);
    if (!w || !(w->path = strdup(path))) {
        free(w);
        anv_set_error("%s: out of memory", path);
        return NULL;
    }
    w->fp = create_temp_beside(path, &w->tmp_path);
    if (!w->fp) {
        free(w->path);
        free(w);
        return NULL;
    }
    w->alignment = GGUF_WRITE_DEFAULT_ALIGNMENT;
    return w;
}

static void writer_free(gguf_writer *w) {
    for (size_t i = 0; i < w->n_kv; i++) { free(w->kv[i].key); free(w->kv[i].val); }
    for (size_t i = 0; i < w->n_t; i++) free(w->t[i].name);
    free(w->kv);
    free(w->t);
    free(w->path);
    free(w->tmp_path);
    free(w);
}

void gguf_writer_abort(gguf_writer *w) {
    if (!w) return;
    if (w->fp) fclose(w->fp);
    unlink(w->tmp_path);   /* ours; the path itself was never touched */
    writer_free(w);
}

/* ---- metadata ---- */

static int check_open_for_meta(gguf_writer *w, const char *what) {
    if (w->header_done) {
        anv_set_error("%s: cannot %s after the header was written", w->path, what);
        return -1;
    }
    return 0;
}

static wkv *find_kv(const gguf_writer *w, const char *key) {
    for (size_t i = 0; i < w->n_kv; i++)
        if (strcmp(w->kv[i].key, key) == 0) return &w->kv[i];
    return NULL;
}

/* Takes ownership of b's buffer (freed on failure too). */
static int put_kv(gguf_writer *w, const char *key, bbuf *b) {
    if (b->oom) {
        free(b->p);
        anv_set_error("%s: out of memory for key '%s'", w->path, key ? key : "");
        return -1;
    }
    if (!key || !*key || check_open_for_meta(w, "set metadata") != 0) {
        if (!key || !*key) anv_set_error("%s: metadata key is empty", w->path);
        free(b->p);
        return -1;
    }
    wkv *kv = find_kv(w, key);
    if (kv) {
        free(kv->val);
        kv->val = b->p;
        kv->len = b->len;
        return 0;
    }
    if (w->n_kv == w->cap_kv) {
        size_t cap = w->cap_kv ? 2 * w->cap_kv : 32;
        wkv *p = realloc(w->kv, cap * sizeof *p);
        if (!p) { free(b->p); anv_set_error("%s: out of memory", w->path); return -1; }
        w->kv = p;
        w->cap_kv = cap;
    }
    char *k = strdup(key);
    if (!k) { free(b->p); anv_set_error("%s: out of memory", w->path); return -1; }
    w->kv[w->n_kv++] = (wkv){k, b->p, b->len};
    return 0;
}

static int set_scalar(gguf_writer *w, const char *key, gguf_type t, const void *v) {
    bbuf b = {0};
    bb_u32(&b, t);
    bb_put(&b, v, scalar_size(t));
    return put_kv(w, key, &b);
}

int gguf_writer_set_u8(gguf_writer *w, const char *k, uint8_t v) { return set_scalar(w, k, GGUF_UINT8, &v); }
int gguf_writer_set_i8(gguf_writer *w, const char *k, int8_t v) { return set_scalar(w, k, GGUF_INT8, &v); }
int gguf_writer_set_u16(gguf_writer *w, const char *k, uint16_t v) { return set_scalar(w, k, GGUF_UINT16, &v); }
int gguf_writer_set_i16(gguf_writer *w, const char *k, int16_t v) { return set_scalar(w, k, GGUF_INT16, &v); }
int gguf_writer_set_u32(gguf_writer *w, const char *k, uint32_t v) { return set_scalar(w, k, GGUF_UINT32, &v); }
int gguf_writer_set_i32(gguf_writer *w, const char *k, int32_t v) { return set_scalar(w, k, GGUF_INT32, &v); }
int gguf_writer_set_u64(gguf_writer *w, const char *k, uint64_t v) { return set_scalar(w, k, GGUF_UINT64, &v); }
int gguf_writer_set_i64(gguf_writer *w, const char *k, int64_t v) { return set_scalar(w, k, GGUF_INT64, &v); }
int gguf_writer_set_f32(gguf_writer *w, const char *k, float v) { return set_scalar(w, k, GGUF_FLOAT32, &v); }
int gguf_writer_set_f64(gguf_writer *w, const char *k, double v) { return set_scalar(w, k, GGUF_FLOAT64, &v); }
int gguf_writer_set_bool(gguf_writer *w, const char *k, bool v) {
    const uint8_t b = v ? 1 : 0;
    return set_scalar(w, k, GGUF_BOOL, &b);
}

int gguf_writer_set_strn(gguf_writer *w, const char *key, const char *v, uint64_t len) {
    if (!v && len) {
        anv_set_error("%s: NULL string for key '%s'", w->path, key ? key : "");
        return -1;
    }
    bbuf b = {0};
    bb_u32(&b, GGUF_STRING);
    bb_str(&b, v ? v : "", len);
    return put_kv(w, key, &b);
}

int gguf_writer_set_str(gguf_writer *w, const char *key, const char *v) {
    return gguf_writer_set_strn(w, key, v, v ? strlen(v) : 0);
}

int gguf_writer_set_arr(gguf_writer *w, const char *key, gguf_type elem_type, const void *data, uint64_t n) {
    const size_t es = scalar_size(elem_type);
    if (es == 0) {
        anv_set_error("%s: key '%s': array element type %d is not numeric/bool (use set_str_arr)",
                      w->path, key ? key : "", (int)elem_type);
        return -1;
    }
    if ((n && !data) || n > SIZE_MAX / es) {
        anv_set_error("%s: key '%s': bad array (%" PRIu64 " elements)", w->path, key ? key : "", n);
        return -1;
    }
    if (elem_type == GGUF_BOOL)
        for (uint64_t i = 0; i < n; i++)
            if (((const uint8_t *)data)[i] > 1) {
                anv_set_error("%s: key '%s': bool element %" PRIu64 " is not 0 or 1", w->path, key ? key : "", i);
                return -1;
            }
    bbuf b = {0};
    bb_u32(&b, GGUF_ARRAY);
    bb_u32(&b, elem_type);
    bb_u64(&b, n);
    if (n) bb_put(&b, data, (size_t)n * es);
    return put_kv(w, key, &b);
}

int gguf_writer_set_str_arr(gguf_writer *w, const char *key, const char *const *strs, uint64_t n) {
    if (n && !strs) {
        anv_set_error("%s: key '%s': NULL string array", w->path, key ? key : "");
        return -1;
    }
    bbuf b = {0};
    bb_u32(&b, GGUF_ARRAY);
    bb_u32(&b, GGUF_STRING);
    bb_u64(&b, n);
    for (uint64_t i = 0; i < n; i++) {
        const char *s = strs[i] ? strs[i] : "";
        bb_str(&b, s, strlen(s));
    }
    return put_kv(w, key, &b);
}

int gguf_writer_copy_kv(gguf_writer *w, const gguf_kv *kv) {
    char key[1024];
    if (!kv || kv->key.len == 0 || kv->key.len >= sizeof key) {
        anv_set_error("%s: cannot copy a key/value with an empty or over-long key", w->path);
        return -1;
    }
    memcpy(key, kv->key.ptr, (size_t)kv->key.len);
    key[kv->key.len] = 0;
    bbuf b = {0};
    bb_u32(&b, kv->type);
    switch (kv->type) {
    case GGUF_UINT8: { uint8_t v = (uint8_t)kv->v.u64; bb_put(&b, &v, 1); break; }
    case GGUF_INT8: { int8_t v = (int8_t)kv->v.i64; bb_put(&b, &v, 1); break; }
    case GGUF_UINT16: { uint16_t v = (uint16_t)kv->v.u64; bb_put(&b, &v, 2); break; }
    case GGUF_INT16: { int16_t v = (int16_t)kv->v.i64; bb_put(&b, &v, 2); break; }
    case GGUF_UINT32: { uint32_t v = (uint32_t)kv->v.u64; bb_put(&b, &v, 4); break; }
    case GGUF_INT32: { int32_t v = (int32_t)kv->v.i64; bb_put(&b, &v, 4); break; }
    case GGUF_UINT64: bb_put(&b, &kv->v.u64, 8); break;
    case GGUF_INT64: bb_put(&b, &kv->v.i64, 8); break;
    case GGUF_FLOAT32: { float v = (float)kv->v.f64; bb_put(&b, &v, 4); break; }
    case GGUF_FLOAT64: bb_put(&b, &kv->v.f64, 8); break;
    case GGUF_BOOL: { uint8_t v = kv->v.b ? 1 : 0; bb_put(&b, &v, 1); break; }
    case GGUF_STRING: bb_str(&b, kv->v.str.ptr, kv->v.str.len); break;
    case GGUF_ARRAY:
        bb_u32(&b, kv->arr_type);
        bb_u64(&b, kv->arr_len);
        if (kv->arr_type == GGUF_STRING) {
            for (uint64_t i = 0; i < kv->arr_len; i++) bb_str(&b, kv->arr_strs[i].ptr, kv->arr_strs[i].len);
        } else if (scalar_size(kv->arr_type) && kv->arr_len) {
            bb_put(&b, kv->arr_data, (size_t)(kv->arr_len * scalar_size(kv->arr_type)));
        } else if (kv->arr_len) {
            free(b.p);
            anv_set_error("%s: key '%s': cannot copy an array of %s", w->path, key, gguf_type_name(kv->arr_type));
            return -1;
        }
        break;
    default:
        free(b.p);
        anv_set_error("%s: key '%s': cannot copy a value of type %d", w->path, key, (int)kv->type);
        return -1;
    }
    return put_kv(w, key, &b);
}

int gguf_writer_copy_all_kv(gguf_writer *w, const gguf_file *f) {
    for (uint64_t i = 0; i < f->n_kv; i++)
        if (gguf_writer_copy_kv(w, &f->kv[i]) != 0) return -1;
    return 0;
}

int gguf_writer_remove_kv(gguf_writer *w, const char *key) {
    if (check_open_for_meta(w, "remove metadata") != 0) return -1;
    wkv *kv = key ? find_kv(w, key) : NULL;
    if (!kv) return 0;
    free(kv->key);
    free(kv->val);
    const size_t i = (size_t)(kv - w->kv);
    memmove(&w->kv[i], &w->kv[i + 1], (w->n_kv - i - 1) * sizeof *kv);
    w->n_kv--;
    return 0;
}

uint64_t gguf_writer_n_kv(const gguf_writer *w) { return w->n_kv; }

/* ---- tensors ---- */

static const wtensor *find_tensor(const gguf_writer *w, const char *name) {
    for (size_t i = 0; i < w->n_t; i++)
        if (strcmp(w->t[i].name, name) == 0) return &w->t[i];
    return NULL;
}

int gguf_writer_add_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                           const int64_t *ne, const void *data) {
    if (check_open_for_meta(w, "add tensors") != 0) return -1;
    if (!name || !*name || strlen(name) > GGUF_WRITE_MAX_NAME) {
        anv_set_error("%s: tensor name '%s' is empty or longer than %d bytes", w->path, name ? name : "",
                      GGUF_WRITE_MAX_NAME);
        return -1;
    }
    if (find_tensor(w, name)) {
        anv_set_error("%s: duplicate tensor '%s'", w->path, name);
        return -1;
    }
    const qtype_info *qi = qtype_get(type);
    if (!qi) {
        anv_set_error("%s: tensor '%s' has unknown type %u", w->path, name, type);
        return -1;
    }
    if (n_dims < 1 || n_dims > GGUF_MAX_DIMS || !ne) {
        anv_set_error("%s: tensor '%s' has %u dimensions (1..%d)", w->path, name, n_dims, GGUF_MAX_DIMS);
        return -1;
    }
    wtensor t = {.type = type, .n_dims = n_dims, .data = data};
    uint64_t n_rows = 1;
    for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++) {
        t.ne[d] = d < n_dims ? ne[d] : 1;
        if (t.ne[d] < 0 || (d > 0 && t.ne[d] && n_rows > (UINT64_MAX >> 8) / (uint64_t)t.ne[d])) {
            anv_set_error("%s: tensor '%s' dimension %u = %" PRId64 " is negative or too large", w->path,
                          name, d, t.ne[d]);
            return -1;
        }
        if (d > 0) n_rows *= (uint64_t)t.ne[d];
    }
    if (t.ne[0] % qi->block_size != 0) {
        anv_set_error("%s: tensor '%s' row length %" PRId64 " is not a multiple of the %s block size %d",
                      w->path, name, t.ne[0], qi->name, qi->block_size);
        return -1;
    }
    const uint64_t row = (uint64_t)t.ne[0] / (uint64_t)qi->block_size * qi->type_size;
    if (n_rows && row > UINT64_MAX / 2 / n_rows) {
        anv_set_error("%s: tensor '%s' is too large", w->path, name);
        return -1;
    }
    t.nbytes = row * n_rows;
    if (w->n_t == w->cap_t) {
        size_t cap = w->cap_t ? 2 * w->cap_t : 64;
        wtensor *p = realloc(w->t, cap * sizeof *p);
        if (!p) { anv_set_error("%s: out of memory", w->path); return -1; }
        w->t = p;
        w->cap_t = cap;
    }
    if (!(t.name = strdup(name))) { anv_set_error("%s: out of memory", w->path); return -1; }
    w->t[w->n_t++] = t;
    return 0;
}

uint64_t gguf_writer_tensor_nbytes(const gguf_writer *w, const char *name) {
    const wtensor *t = name ? find_tensor(w, name) : NULL;
    return t ? t->nbytes : 0;
}

/* ---- output ---- */

static int put(gguf_writer *w, const void *p, size_t n) {
    if (w->failed) return -1;
    if (n && fwrite(p, 1, n, w->fp) != n) {
        anv_set_error("%s: write failed: %s", w->path, strerror(errno));
        w->failed = true;
        return -1;
    }
    return 0;
}

static int put_zeros(gguf_writer *w, uint64_t n) {
    static const uint8_t zeros[256];
    while (n) {
        const size_t k = n < sizeof zeros ? (size_t)n : sizeof zeros;
        if (put(w, zeros, k) != 0) return -1;
        n -= k;
    }
    return 0;
}

static uint64_t pad_to(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

/* Takes general.alignment from the metadata if set (it must be a power-of-two uint32). */
static int resolve_alignment(gguf_writer *w) {
    const wkv *kv = find_kv(w, "general.alignment");
    if (!kv) return 0;
    uint32_t type, a = 0;
    memcpy(&type, kv->val, 4);
    if (type == GGUF_UINT32) memcpy(&a, kv->val + 4, 4);
    if (type != GGUF_UINT32 || a == 0 || (a & (a - 1)) != 0) {
        anv_set_error("%s: general.alignment must be a uint32 power of two", w->path);
        return -1;
    }
    w->alignment = a;
    return 0;
}

int gguf_writer_write_header(gguf_writer *w) {
    if (w->header_done) {
        anv_set_error("%s: header already written", w->path);
        return -1;
    }
    if (resolve_alignment(w) != 0) return -1;
    uint64_t off = 0;
    for (size_t i = 0; i < w->n_t; i++) {
        w->t[i].offset = off;
        off = pad_to(off + w->t[i].nbytes, w->alignment);
    }
    w->header_done = true;
    const uint32_t magic_version[2] = {0x46554747u /* "GGUF" */, GGUF_WRITE_VERSION};
    const uint64_t counts[2] = {w->n_t, w->n_kv};
    /* put() is a no-op once a write failed, so the calls can run unconditionally in order */
    put(w, magic_version, 8);
    put(w, counts, 16);
    uint64_t pos = 24;
    for (size_t i = 0; i < w->n_kv; i++) {
        const uint64_t kl = strlen(w->kv[i].key);
        put(w, &kl, 8);
        put(w, w->kv[i].key, (size_t)kl);
        put(w, w->kv[i].val, w->kv[i].len);
        pos += 8 + kl + w->kv[i].len;
    }
    for (size_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        const uint64_t nl = strlen(t->name);
        put(w, &nl, 8);
        put(w, t->name, (size_t)nl);
        put(w, &t->n_dims, 4);
        put(w, t->ne, 8 * (size_t)t->n_dims);
        put(w, &t->type, 4);
        put(w, &t->offset, 8);
        pos += 8 + nl + 4 + 8 * (uint64_t)t->n_dims + 4 + 8;
    }
    put_zeros(w, pad_to(pos, w->alignment) - pos);
    w->cur = 0;
    w->cur_written = 0;
    return w->failed ? -1 : 0;
}

/* Skips over tensors with no bytes left to receive (empty tensors). */
static void advance_full(gguf_writer *w) {
    while (w->cur < w->n_t && w->cur_written == w->t[w->cur].nbytes) {
        w->cur++;
        w->cur_written = 0;
    }
}

int gguf_writer_write_data(gguf_writer *w, const void *data, size_t n) {
    if (!w->header_done) {
        anv_set_error("%s: tensor data written before the header", w->path);
        return -1;
    }
    const uint8_t *p = data;
    while (n) {
        advance_full(w);
        if (w->cur >= w->n_t) {
            anv_set_error("%s: %zu bytes of tensor data more than the declared tensors hold", w->path, n);
            return -1;
        }
        const wtensor *t = &w->t[w->cur];
        const uint64_t left = t->nbytes - w->cur_written;
        const size_t k = left < n ? (size_t)left : n;
        if (put(w, p, k) != 0) return -1;
        p += k;
        n -= k;
        w->cur_written += k;
        if (w->cur_written == t->nbytes && put_zeros(w, pad_to(t->nbytes, w->alignment) - t->nbytes) != 0)
            return -1;
    }
    return 0;
}

int gguf_writer_finish(gguf_writer *w) {
    if (!w) return -1;
    int rc = w->failed ? -1 : 0;
    if (rc == 0 && !w->header_done) rc = gguf_writer_write_header(w);
    while (rc == 0) {
        advance_full(w);
        if (w->cur >= w->n_t) break;
        const wtensor *t = &w->t[w->cur];
        if (w->cur_written != 0 || !t->data) {
            anv_set_error("%s: tensor '%s' got %" PRIu64 " of its %" PRIu64 " bytes", w->path, t->name,
                          w->cur_written, t->nbytes);
            rc = -1;
            break;
        }
        rc = gguf_writer_write_data(w, t->data, (size_t)t->nbytes);
    }
    if (rc == 0 && (fflush(w->fp) != 0 || fsync(fileno(w->fp)) != 0)) {
        anv_set_error("%s: write failed: %s", w->path, strerror(errno));
        rc = -1;
    }
    const int close_rc = fclose(w->fp);
    w->fp = NULL;
    if (rc == 0 && close_rc != 0) {
        anv_set_error("%s: close failed: %s", w->path, strerror(errno));
        rc = -1;
    }
    if (rc == 0 && rename(w->tmp_path, w->path) != 0) {
        anv_set_error("%s: cannot replace it with the written file: %s", w->path, strerror(errno));
        rc = -1;
    }
    if (rc != 0) unlink(w->tmp_path);
    writer_free(w);
    return rc;
}
