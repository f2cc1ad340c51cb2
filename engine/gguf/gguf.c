/* gguf: the GGUF v2/v3 reader (see gguf.h). Owns parsing and validating the header,
 * the metadata key/values and the tensor infos, the name indexes (open-addressing hash
 * tables under a keyed hash, so crafted names cannot all collide) for keys and tensors, and the typed getters. Nothing is copied: strings,
 * numeric arrays and tensor data point into the mapping (or the caller's buffer).
 *
 * Decisions worth knowing:
 *  - Only little-endian files; v1 (32-bit counts) and byte-swapped (big-endian) files are
 *    rejected by name.
 *  - Arrays of arrays (allowed by the spec, written by nobody) are rejected cleanly.
 *  - Bool values must be 0 or 1. Keys and tensor names must be non-empty; duplicates of
 *    either are an error.
 *  - general.alignment must be a uint32 power of two >= GGUF_MIN_ALIGNMENT (8); default 32.
 *    llama.cpp accepts any power of two, 1 included, but then tensor data can start at an
 *    odd address and every f32/f16 load from the mapping is misaligned (UB; UBSan aborts).
 *    Every writer (gguf-py, llama.cpp, ollama) uses 32, so 8 rejects no real file. The
 *    base of the data is 8-aligned too: a page for a mapping, checked for a caller buffer.
 *  - Numeric array elements (arr_data) are in file order and may be unaligned: memcpy them.
 *  - Tensors need 1..4 dims, ne >= 0, a known qtype, ne[0] a multiple of the block size,
 *    an offset aligned to the alignment, and data inside the file. Overlap is allowed. */
#include "gguf.h"
#include "error.h"
#include "hash.h"
#include "quant.h"
#include "readfile.h"
#include "settings.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "gguf.c assumes a little-endian host"
#endif

#define GGUF_MAGIC "GGUF"
#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MIN_ALIGNMENT 8 /* the widest scalar a tensor holds (f64, i64) */
/* Smallest possible encodings, used to bound the header counts by the file size. */
#define GGUF_MIN_KV_BYTES 14     /* key length (8) + 1 key byte + value type (4) + a 1-byte value */
#define GGUF_MIN_TENSOR_BYTES 33 /* name length (8) + 1 name byte + n_dims (4) + ne (8) + type (4) + offset (8) */

/* ---- name index: open addressing over item indexes, slot = index + 1, 0 = empty ---- */

typedef struct {
    size_t *slots;
    size_t mask;
} name_index;

/* The private side of a gguf_file: the public struct comes first so the pointers convert. */
typedef struct {
    gguf_file pub;
    name_index kv_index;
    name_index tensor_index;
    int fd;      /* the mapped file, kept open so gguf_check_size can fstat it; -1 if none */
    void *owned; /* ANVIL_NO_MMAP: the whole file read into memory (freed on close) */
} gguf_file_impl;

/* Keyed (SipHash-1-3, per-process random key): a file cannot choose colliding names. */
static uint64_t hash_bytes(const char *p, uint64_t n) { return anv_hash(p, (size_t)n); }

static bool index_init(name_index *ix, uint64_t n_items) {
    uint64_t cap = 16;
    while (cap < n_items * 2) {
        if (cap > (uint64_t)SIZE_MAX / 2 / sizeof(size_t)) return false;
        cap *= 2;
    }
    ix->slots = calloc((size_t)cap, sizeof(size_t));
    ix->mask = (size_t)cap - 1;
    return ix->slots != NULL;
}

static const gguf_str *kv_name(const gguf_file *f, size_t i) { return &f->kv[i].key; }
static const gguf_str *tensor_name(const gguf_file *f, size_t i) { return &f->tensors[i].name; }
typedef const gguf_str *(*name_getter)(const gguf_file *f, size_t i);

/* Returns the index of the item named (p, n), or SIZE_MAX. */
static size_t index_lookup(const gguf_file *f, const name_index *ix, name_getter get,
                           const char *p, uint64_t n) {
    if (!ix->slots) return SIZE_MAX;
    for (size_t s = (size_t)hash_bytes(p, n) & ix->mask;; s = (s + 1) & ix->mask) {
        size_t slot = ix->slots[s];
        if (slot == 0) return SIZE_MAX;
        const gguf_str *name = get(f, slot - 1);
        if (name->len == n && memcmp(name->ptr, p, (size_t)n) == 0) return slot - 1;
    }
}

/* Inserts item i; returns the index of an earlier item with the same name, or SIZE_MAX. */
static size_t index_insert(const gguf_file *f, name_index *ix, name_getter get, size_t i) {
    const gguf_str *name = get(f, i);
    size_t s = (size_t)hash_bytes(name->ptr, name->len) & ix->mask;
    for (;; s = (s + 1) & ix->mask) {
        size_t slot = ix->slots[s];
        if (slot == 0) break;
        const gguf_str *other = get(f, slot - 1);
        if (other->len == name->len && memcmp(other->ptr, name->ptr, (size_t)name->len) == 0)
            return slot - 1;
    }
    ix->slots[s] = i + 1;
    return SIZE_MAX;
}

/* Longest probe sequence in ix: the most slots a lookup or insert walks (1 = direct hit). */
static size_t index_max_probe(const gguf_file *f, const name_index *ix, name_getter get) {
    size_t worst = 0;
    if (!ix->slots) return 0;
    for (size_t s = 0; s <= ix->mask; s++) {
        if (ix->slots[s] == 0) continue;
        const gguf_str *name = get(f, ix->slots[s] - 1);
        size_t home = (size_t)hash_bytes(name->ptr, name->len) & ix->mask;
        size_t probes = ((s - home) & ix->mask) + 1;
        if (probes > worst) worst = probes;
    }
    return worst;
}

size_t gguf_index_max_probe(const gguf_file *f) {
    if (!f) return 0;
    const gguf_file_impl *fi = (const gguf_file_impl *)f;
    size_t a = index_max_probe(f, &fi->kv_index, kv_name), b = index_max_probe(f, &fi->tensor_index, tensor_name);
    return a > b ? a : b;
}

/* ---- printing ---- */

const char *gguf_type_name(gguf_type t) {
    static const char *const names[] = {
        "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
        "bool", "string", "array", "uint64", "int64", "float64",
    };
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "unknown";
}

bool gguf_str_eq(gguf_str s, const char *c) {
    size_t n = strlen(c);
    return s.len == n && (n == 0 || memcmp(s.ptr, c, n) == 0);
}

/* A file-supplied name, made safe for a one-line message: at most 80 bytes, control
 * characters replaced by '?'. */
typedef struct { char s[96]; } safe_name;

static safe_name printable(const char *p, uint64_t n) {
    safe_name out;
    size_t limit = 80, k = 0;
    for (uint64_t i = 0; i < n && k < limit; i++) {
        unsigned char ch = (unsigned char)p[i];
        out.s[k++] = (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch;
    }
    if (n > limit) { memcpy(out.s + k, "...", 3); k += 3; }
    out.s[k] = '\0';
    return out;
}

static safe_name pstr(gguf_str s) { return printable(s.ptr, s.len); }

/* ---- cursor over the file bytes ---- */

typedef struct {
    const uint8_t *p;
    size_t size, pos;
    const char *file;  /* name used in messages */
    char what[160];    /* the item being read, e.g. "key 12 ('tokenizer.ggml.tokens')" */
    int64_t elem;      /* array element being read, or -1 */
} cursor;

static const char *elem_suffix(const cursor *c, char *buf, size_t cap) {
    if (c->elem < 0) return "";
    snprintf(buf, cap, " element %" PRId64, c->elem);
    return buf;
}

static bool need(cursor *c, uint64_t n) {
    if (n <= c->size - c->pos) return true;
    char eb[48];
    anv_set_error("%s: truncated while reading %s%s (needs %" PRIu64 " bytes at offset %zu, file size %zu)",
                  c->file, c->what, elem_suffix(c, eb, sizeof eb), n, c->pos, c->size);
    return false;
}

static bool read_bytes(cursor *c, void *dst, size_t n) {
    if (!need(c, n)) return false;
    memcpy(dst, c->p + c->pos, n);
    c->pos += n;
    return true;
}

static bool read_u32(cursor *c, uint32_t *v) { return read_bytes(c, v, 4); }
static bool read_u64(cursor *c, uint64_t *v) { return read_bytes(c, v, 8); }

static bool read_str(cursor *c, gguf_str *s) {
    uint64_t len;
    if (!read_u64(c, &len)) return false;
    if (len > c->size - c->pos) {
        char eb[48];
        anv_set_error("%s: truncated while reading %s%s: string length %" PRIu64
                      " but only %zu bytes left in the file (offset %zu)",
                      c->file, c->what, elem_suffix(c, eb, sizeof eb), len, c->size - c->pos, c->pos);
        return false;
    }
    s->ptr = (const char *)c->p + c->pos;
    s->len = len;
    c->pos += (size_t)len;
    return true;
}

/* Bytes of one scalar of type t; 0 for string, array and unknown ids. */
static size_t scalar_size(uint32_t t) {
    switch (t) {
    case GGUF_UINT8: case GGUF_INT8: case GGUF_BOOL: return 1;
    case GGUF_UINT16: case GGUF_INT16: return 2;
    case GGUF_UINT32: case GGUF_INT32: case GGUF_FLOAT32: return 4;
    case GGUF_UINT64: case GGUF_INT64: case GGUF_FLOAT64: return 8;
    default: return 0;
    }
}

static bool bad_bool(cursor *c, uint8_t b) {
    char eb[48];
    anv_set_error("%s: %s%s: bool value %u is not 0 or 1", c->file, c->what,
                  elem_suffix(c, eb, sizeof eb), (unsigned)b);
    return false;
}

/* Reads one scalar (not string/array) of a known type into kv->v. */
static bool read_scalar(cursor *c, gguf_type t, gguf_kv *kv) {
    uint8_t b[8];
    size_t n = scalar_size(t);
    if (!read_bytes(c, b, n)) return false;
    switch (t) {
    case GGUF_UINT8: kv->v.u64 = b[0]; break;
    case GGUF_INT8: { int8_t x; memcpy(&x, b, 1); kv->v.i64 = x; break; }
    case GGUF_UINT16: { uint16_t x; memcpy(&x, b, 2); kv->v.u64 = x; break; }
    case GGUF_INT16: { int16_t x; memcpy(&x, b, 2); kv->v.i64 = x; break; }
    case GGUF_UINT32: { uint32_t x; memcpy(&x, b, 4); kv->v.u64 = x; break; }
    case GGUF_INT32: { int32_t x; memcpy(&x, b, 4); kv->v.i64 = x; break; }
    case GGUF_UINT64: memcpy(&kv->v.u64, b, 8); break;
    case GGUF_INT64: memcpy(&kv->v.i64, b, 8); break;
    case GGUF_FLOAT32: { float x; memcpy(&x, b, 4); kv->v.f64 = x; break; }
    case GGUF_FLOAT64: memcpy(&kv->v.f64, b, 8); break;
    case GGUF_BOOL:
        if (b[0] > 1) return bad_bool(c, b[0]);
        kv->v.b = b[0] != 0;
        break;
    default: return false; /* unreachable: callers pass known scalar types */
    }
    return true;
}

static bool read_array(cursor *c, gguf_kv *kv) {
    uint32_t et;
    uint64_t n;
    if (!read_u32(c, &et) || !read_u64(c, &n)) return false;
    if (et == GGUF_ARRAY) {
        anv_set_error("%s: %s is an array of arrays (not supported)", c->file, c->what);
        return false;
    }
    if (et > GGUF_FLOAT64) {
        anv_set_error("%s: %s has unknown array element type %" PRIu32, c->file, c->what, et);
        return false;
    }
    kv->arr_type = (gguf_type)et;
    kv->arr_len = n;
    kv->arr_data = c->p + c->pos;
    size_t left = c->size - c->pos;
    if (et == GGUF_STRING) {
        if (n > left / 8) { /* every string needs at least its 8-byte length */
            anv_set_error("%s: truncated while reading %s: %" PRIu64
                          " strings cannot fit in the %zu bytes left in the file",
                          c->file, c->what, n, left);
            return false;
        }
        if (n == 0) return true;
        kv->arr_strs = malloc((size_t)n * sizeof(gguf_str));
        if (!kv->arr_strs) {
            anv_set_error("%s: out of memory for %s (%" PRIu64 " strings)", c->file, c->what, n);
            return false;
        }
        for (uint64_t i = 0; i < n; i++) {
            c->elem = (int64_t)i;
            if (!read_str(c, &kv->arr_strs[i])) return false;
        }
        c->elem = -1;
        return true;
    }
    size_t es = scalar_size(et);
    if (n > left / es) {
        anv_set_error("%s: truncated while reading %s: %" PRIu64 " elements of %s (%zu bytes each) "
                      "but only %zu bytes left in the file (offset %zu)",
                      c->file, c->what, n, gguf_type_name((gguf_type)et), es, left, c->pos);
        return false;
    }
    if (et == GGUF_BOOL) {
        for (uint64_t i = 0; i < n; i++) {
            uint8_t b = c->p[c->pos + i];
            if (b > 1) { c->elem = (int64_t)i; return bad_bool(c, b); }
        }
    }
    c->pos += (size_t)(n * es);
    return true;
}

static bool read_kv(cursor *c, uint64_t i, gguf_kv *kv) {
    snprintf(c->what, sizeof c->what, "key %" PRIu64, i);
    if (!read_str(c, &kv->key)) return false;
    snprintf(c->what, sizeof c->what, "key %" PRIu64 " ('%s')", i, pstr(kv->key).s);
    if (kv->key.len == 0) {
        anv_set_error("%s: key %" PRIu64 " has an empty name", c->file, i);
        return false;
    }
    uint32_t t;
    if (!read_u32(c, &t)) return false;
    if (t > GGUF_FLOAT64) {
        anv_set_error("%s: %s has unknown value type %" PRIu32, c->file, c->what, t);
        return false;
    }
    kv->type = (gguf_type)t;
    if (t == GGUF_STRING) return read_str(c, &kv->v.str);
    if (t == GGUF_ARRAY) return read_array(c, kv);
    return read_scalar(c, kv->type, kv);
}

/* ---- tensor infos ---- */

static bool read_tensor_info(cursor *c, uint64_t i, uint64_t alignment, gguf_tensor *t) {
    snprintf(c->what, sizeof c->what, "tensor info %" PRIu64, i);
    if (!read_str(c, &t->name)) return false;
    safe_name nm = pstr(t->name);
    snprintf(c->what, sizeof c->what, "tensor info %" PRIu64 " ('%s')", i, nm.s);
    if (t->name.len == 0) {
        anv_set_error("%s: tensor %" PRIu64 " has an empty name", c->file, i);
        return false;
    }
    if (!read_u32(c, &t->n_dims)) return false;
    if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS) {
        anv_set_error("%s: tensor '%s' has n_dims %" PRIu32 " (must be 1..%d)", c->file, nm.s,
                      t->n_dims, GGUF_MAX_DIMS);
        return false;
    }
    for (int d = 0; d < GGUF_MAX_DIMS; d++) t->ne[d] = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        if (!read_bytes(c, &t->ne[d], 8)) return false;
        if (t->ne[d] < 0) {
            anv_set_error("%s: tensor '%s' has negative dimension ne[%" PRIu32 "] = %" PRId64,
                          c->file, nm.s, d, t->ne[d]);
            return false;
        }
    }
    int64_t n_elem = 1;
    for (int d = 0; d < GGUF_MAX_DIMS; d++) {
        if (__builtin_mul_overflow(n_elem, t->ne[d], &n_elem)) {
            anv_set_error("%s: tensor '%s' dimensions [%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
                          "] overflow the element count", c->file, nm.s,
                          t->ne[0], t->ne[1], t->ne[2], t->ne[3]);
            return false;
        }
    }
    if (!read_u32(c, &t->type)) return false;
    const qtype_info *qi = qtype_get(t->type);
    if (!qi || qi->block_size <= 0 || qi->type_size == 0) {
        anv_set_error("%s: tensor '%s' has unknown type id %" PRIu32, c->file, nm.s, t->type);
        return false;
    }
    if (t->ne[0] % qi->block_size != 0) {
        anv_set_error("%s: tensor '%s': ne[0] = %" PRId64 " is not a multiple of the block size %d of type %s",
                      c->file, nm.s, t->ne[0], qi->block_size, qi->name);
        return false;
    }
    uint64_t rows = (uint64_t)(n_elem / (t->ne[0] ? t->ne[0] : 1));
    uint64_t row_bytes, nbytes;
    if (t->ne[0] == 0) {
        nbytes = 0;
    } else if (__builtin_mul_overflow((uint64_t)(t->ne[0] / qi->block_size), (uint64_t)qi->type_size, &row_bytes) ||
               __builtin_mul_overflow(row_bytes, rows, &nbytes)) {
        anv_set_error("%s: tensor '%s' byte size overflows", c->file, nm.s);
        return false;
    }
    t->nbytes = nbytes;
    if (!read_u64(c, &t->offset)) return false;
    if (t->offset % alignment != 0) {
        anv_set_error("%s: tensor '%s' offset %" PRIu64 " is not a multiple of the alignment %" PRIu64,
                      c->file, nm.s, t->offset, alignment);
        return false;
    }
    return true;
}

/* ---- open / close ---- */

static bool fail_oom(const char *file, const char *what) {
    anv_set_error("%s: out of memory allocating %s", file, what);
    return false;
}

static bool parse_alignment(gguf_file *f, const char *file) {
    f->alignment = GGUF_DEFAULT_ALIGNMENT;
    const gguf_kv *kv = gguf_find(f, "general.alignment");
    if (!kv) return true;
    if (kv->type != GGUF_UINT32) {
        anv_set_error("%s: general.alignment has type %s (must be uint32)", file, gguf_type_name(kv->type));
        return false;
    }
    uint64_t a = kv->v.u64;
    if (a < GGUF_MIN_ALIGNMENT || (a & (a - 1)) != 0) {
        anv_set_error("%s: general.alignment %" PRIu64 " is not a power of two >= %d (tensor data would be misaligned)",
                      file, a, GGUF_MIN_ALIGNMENT);
        return false;
    }
    f->alignment = a;
    return true;
}

static bool parse(gguf_file_impl *fi, const char *file) {
    gguf_file *f = &fi->pub;
    cursor c = { .p = f->base, .size = f->size, .pos = 0, .file = file, .elem = -1 };
    snprintf(c.what, sizeof c.what, "header");

    char magic[4];
    if (f->size < 4 || memcmp(f->base, GGUF_MAGIC, 4) != 0) {
        anv_set_error("%s: not a GGUF file (bad magic)", file);
        return false;
    }
    if (!read_bytes(&c, magic, 4) || !read_u32(&c, &f->version)) return false;
    if (f->version == 1) {
        anv_set_error("%s: GGUF version 1 is not supported (only versions 2 and 3)", file);
        return false;
    }
    if (f->version == 0x02000000u || f->version == 0x03000000u) {
        anv_set_error("%s: big-endian GGUF file (not supported)", file);
        return false;
    }
    if (f->version != 2 && f->version != 3) {
        anv_set_error("%s: unsupported GGUF version %" PRIu32 " (only versions 2 and 3)", file, f->version);
        return false;
    }
    if (!read_u64(&c, &f->n_tensors) || !read_u64(&c, &f->n_kv)) return false;
    size_t left = c.size - c.pos;
    if (f->n_kv > left / GGUF_MIN_KV_BYTES) {
        anv_set_error("%s: header claims %" PRIu64 " metadata keys (n_kv) but the %zu bytes left in the file can hold at most %zu",
                      file, f->n_kv, left, left / GGUF_MIN_KV_BYTES);
        return false;
    }
    if (f->n_tensors > left / GGUF_MIN_TENSOR_BYTES) {
        anv_set_error("%s: header claims %" PRIu64 " tensors (n_tensors) but the %zu bytes left in the file can hold at most %zu",
                      file, f->n_tensors, left, left / GGUF_MIN_TENSOR_BYTES);
        return false;
    }

    /* Counts are bounded by the file size, so these sizes cannot overflow. */
    if (f->n_kv && !(f->kv = calloc((size_t)f->n_kv, sizeof(gguf_kv)))) return fail_oom(file, "metadata");
    if (f->n_tensors && !(f->tensors = calloc((size_t)f->n_tensors, sizeof(gguf_tensor))))
        return fail_oom(file, "tensor infos");
    if (!index_init(&fi->kv_index, f->n_kv) || !index_init(&fi->tensor_index, f->n_tensors))
        return fail_oom(file, "name index");

    for (uint64_t i = 0; i < f->n_kv; i++) {
        if (!read_kv(&c, i, &f->kv[i])) return false;
        size_t prev = index_insert(f, &fi->kv_index, kv_name, (size_t)i);
        if (prev != SIZE_MAX) {
            anv_set_error("%s: duplicate key '%s' (keys %zu and %" PRIu64 ")", file,
                          pstr(f->kv[i].key).s, prev, i);
            return false;
        }
    }
    if (!parse_alignment(f, file)) return false;

    for (uint64_t i = 0; i < f->n_tensors; i++) {
        if (!read_tensor_info(&c, i, f->alignment, &f->tensors[i])) return false;
        size_t prev = index_insert(f, &fi->tensor_index, tensor_name, (size_t)i);
        if (prev != SIZE_MAX) {
            anv_set_error("%s: duplicate tensor name '%s' (tensors %zu and %" PRIu64 ")", file,
                          pstr(f->tensors[i].name).s, prev, i);
            return false;
        }
    }

    /* The data section starts at the next multiple of the alignment. A file without
     * tensors may end without that padding. */
    uint64_t data_off = ((uint64_t)c.pos + f->alignment - 1) / f->alignment * f->alignment;
    f->data_offset = data_off <= f->size ? (size_t)data_off : f->size;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        gguf_tensor *t = &f->tensors[i];
        uint64_t room = data_off <= f->size ? f->size - data_off : 0;
        if (data_off > f->size || t->offset > room || t->nbytes > room - t->offset) {
            uint64_t abs_off;
            if (__builtin_add_overflow(data_off, t->offset, &abs_off))
                anv_set_error("%s: tensor '%s' data [offset data+%" PRIu64 ", %" PRIu64 " bytes] extends past end of file (size %zu)",
                              file, pstr(t->name).s, t->offset, t->nbytes, f->size);
            else
                anv_set_error("%s: tensor '%s' data [offset %" PRIu64 ", %" PRIu64 " bytes] extends past end of file (size %zu)",
                              file, pstr(t->name).s, abs_off, t->nbytes, f->size);
            return false;
        }
        t->data = f->base + data_off + t->offset;
    }
    return true;
}

/* Takes ownership of nothing; on failure frees what it made (not the bytes). */
static gguf_file *open_bytes(const void *data, size_t size, const char *name, bool mapped) {
    gguf_file_impl *fi = calloc(1, sizeof *fi);
    char *path = strdup(name);
    if (!fi || !path) {
        free(fi);
        free(path);
        anv_set_error("%s: out of memory", name);
        return NULL;
    }
    fi->fd = -1;
    fi->pub.base = data;
    fi->pub.size = size;
    fi->pub.path = path;
    if (!parse(fi, name)) {
        fi->pub.mapped = false; /* the caller unmaps on failure */
        gguf_close(&fi->pub);
        return NULL;
    }
    fi->pub.mapped = mapped;
    return &fi->pub;
}

gguf_file *gguf_open_memory(const void *data, size_t size, const char *name) {
    if (!name) name = "<memory>";
    if (!data && size) {
        anv_set_error("%s: NULL buffer", name);
        return NULL;
    }
    if ((uintptr_t)data % GGUF_MIN_ALIGNMENT != 0) {
        anv_set_error("%s: buffer is not %d-byte aligned (tensor data would be misaligned)", name, GGUF_MIN_ALIGNMENT);
        return NULL;
    }
    static const uint64_t empty[1];
    return open_bytes(data ? data : empty, size, name, false);
}

static gguf_file *open_read(int fd, size_t size, const char *path);

gguf_file *gguf_open(const char *path) {
    if (!path) {
        anv_set_error("gguf_open: NULL path");
        return NULL;
    }
    long long fsize = 0;
    int fd = anv_open_regular(path, &fsize);  /* a FIFO or device is refused, never waited on */
    if (fd < 0) return NULL;
    struct stat st = {.st_size = (off_t)fsize};
    if (st.st_size == 0) {
        anv_set_error("%s: not a GGUF file (empty file)", path);
        close(fd);
        return NULL;
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        anv_set_error("%s: file too large to map", path);
        close(fd);
        return NULL;
    }
    size_t size = (size_t)st.st_size;
    if (anv_setting_on("ANVIL_NO_MMAP")) return open_read(fd, size, path);
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    int map_errno = errno;
    if (map == MAP_FAILED) {
        close(fd);
        anv_set_error("%s: cannot mmap %zu bytes: %s", path, size, strerror(map_errno));
        return NULL;
    }
    gguf_file *f = open_bytes(map, size, path, true);
    if (!f) {
        munmap(map, size);
        close(fd);
        return NULL;
    }
    ((gguf_file_impl *)f)->fd = fd;
    return f;
}

/* ANVIL_NO_MMAP: the file is read into memory, so truncating it later cannot SIGBUS us. */
static gguf_file *open_read(int fd, size_t size, const char *path) {
    size_t cap = (size + 63) / 64 * 64;
    uint8_t *buf = aligned_alloc(64, cap);
    if (!buf) {
        close(fd);
        anv_set_error("%s: out of memory reading %zu bytes (ANVIL_NO_MMAP)", path, size);
        return NULL;
    }
    for (size_t got = 0; got < size;) {
        ssize_t r = pread(fd, buf + got, size - got, (off_t)got);
        if (r <= 0) {
            anv_set_error("%s: read failed at byte %zu: %s", path, got, r < 0 ? strerror(errno) : "file shrank while reading");
            free(buf);
            close(fd);
            return NULL;
        }
        got += (size_t)r;
    }
    close(fd);
    gguf_file *f = open_bytes(buf, size, path, false);
    if (!f) {
        free(buf);
        return NULL;
    }
    ((gguf_file_impl *)f)->owned = buf;
    return f;
}

int gguf_check_size(const gguf_file *f) {
    const gguf_file_impl *fi = (const gguf_file_impl *)f;
    if (!f || !f->mapped || fi->fd < 0) return 0; /* memory: nothing can shrink under us */
    struct stat st;
    if (fstat(fi->fd, &st) != 0) {
        anv_set_error("%s: cannot stat the loaded file: %s", f->path, strerror(errno));
        return -1;
    }
    if ((uint64_t)st.st_size < (uint64_t)f->size) {
        anv_set_error("%s: the file shrank from %zu to %lld bytes since it was loaded (truncated in place?): "
                      "the model must be reloaded", f->path, f->size, (long long)st.st_size);
        return -1;
    }
    return 0;
}

int gguf_fd(const gguf_file *f) {
    return f && f->mapped ? ((const gguf_file_impl *)f)->fd : -1;
}

void gguf_close(gguf_file *f) {
    if (!f) return;
    gguf_file_impl *fi = (gguf_file_impl *)f;
    if (f->kv)
        for (uint64_t i = 0; i < f->n_kv; i++) free(f->kv[i].arr_strs);
    free(f->kv);
    free(f->tensors);
    free(fi->kv_index.slots);
    free(fi->tensor_index.slots);
    if (f->mapped) munmap((void *)f->base, f->size);
    if (fi->fd >= 0) close(fi->fd);
    free(fi->owned);
    free(f->path);
    free(fi);
}

/* ---- lookup and getters ---- */

const gguf_kv *gguf_find(const gguf_file *f, const char *key) {
    if (!f || !key) return NULL;
    size_t i = index_lookup(f, &((const gguf_file_impl *)f)->kv_index, kv_name, key, strlen(key));
    return i == SIZE_MAX ? NULL : &f->kv[i];
}

const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name) {
    if (!f || !name) return NULL;
    size_t i = index_lookup(f, &((const gguf_file_impl *)f)->tensor_index, tensor_name, name, strlen(name));
    return i == SIZE_MAX ? NULL : &f->tensors[i];
}

static bool is_signed_int(gguf_type t) {
    return t == GGUF_INT8 || t == GGUF_INT16 || t == GGUF_INT32 || t == GGUF_INT64;
}
static bool is_unsigned_int(gguf_type t) {
    return t == GGUF_UINT8 || t == GGUF_UINT16 || t == GGUF_UINT32 || t == GGUF_UINT64;
}

static bool wrong_type(const gguf_file *f, const char *key, gguf_type have, const char *want) {
    anv_set_error("%s: key '%s' has type %s, expected %s", f->path, key, gguf_type_name(have), want);
    return false;
}

bool gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv) return false;
    if (is_unsigned_int(kv->type) && kv->v.u64 <= UINT32_MAX) {
        *out = (uint32_t)kv->v.u64;
        return true;
    }
    if (is_signed_int(kv->type) && kv->v.i64 >= 0 && kv->v.i64 <= (int64_t)UINT32_MAX) {
        *out = (uint32_t)kv->v.i64;
        return true;
    }
    if (is_unsigned_int(kv->type) || is_signed_int(kv->type)) {
        anv_set_error("%s: key '%s' value %s%" PRIu64 " does not fit uint32", f->path, key,
                      is_signed_int(kv->type) && kv->v.i64 < 0 ? "-" : "",
                      is_signed_int(kv->type) && kv->v.i64 < 0 ? 0 - (uint64_t)kv->v.i64 : kv->v.u64);
        return false;
    }
    return wrong_type(f, key, kv->type, "an integer");
}

bool gguf_get_i64(const gguf_file *f, const char *key, int64_t *out) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv) return false;
    if (is_signed_int(kv->type)) {
        *out = kv->v.i64;
        return true;
    }
    if (is_unsigned_int(kv->type)) {
        if (kv->v.u64 > (uint64_t)INT64_MAX) {
            anv_set_error("%s: key '%s' value %" PRIu64 " does not fit int64", f->path, key, kv->v.u64);
            return false;
        }
        *out = (int64_t)kv->v.u64;
        return true;
    }
    return wrong_type(f, key, kv->type, "an integer");
}

bool gguf_get_f32(const gguf_file *f, const char *key, float *out) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv) return false;
    if (kv->type == GGUF_FLOAT32 || kv->type == GGUF_FLOAT64) *out = (float)kv->v.f64;
    else if (is_signed_int(kv->type)) *out = (float)kv->v.i64;
    else if (is_unsigned_int(kv->type)) *out = (float)kv->v.u64;
    else return wrong_type(f, key, kv->type, "a number");
    return true;
}

bool gguf_get_bool(const gguf_file *f, const char *key, bool *out) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv) return false;
    if (kv->type != GGUF_BOOL) return wrong_type(f, key, kv->type, "bool");
    *out = kv->v.b;
    return true;
}

bool gguf_get_str(const gguf_file *f, const char *key, gguf_str *out) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv) return false;
    if (kv->type != GGUF_STRING) return wrong_type(f, key, kv->type, "string");
    *out = kv->v.str;
    return true;
}

char *gguf_get_str_dup(const gguf_file *f, const char *key) {
    gguf_str s;
    if (!gguf_get_str(f, key, &s)) return NULL;
    if (s.len >= SIZE_MAX) return NULL;
    char *out = malloc((size_t)s.len + 1);
    if (!out) {
        anv_set_error("%s: out of memory copying key '%s'", f->path, key);
        return NULL;
    }
    if (s.len) memcpy(out, s.ptr, (size_t)s.len);
    out[s.len] = '\0';
    return out;
}

const gguf_kv *gguf_get_arr(const gguf_file *f, const char *key, int elem_type) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv) return NULL;
    if (kv->type != GGUF_ARRAY) {
        wrong_type(f, key, kv->type, "array");
        return NULL;
    }
    if (elem_type >= 0 && kv->arr_type != (gguf_type)elem_type) {
        anv_set_error("%s: key '%s' is an array of %s, expected an array of %s", f->path, key,
                      gguf_type_name(kv->arr_type), gguf_type_name((gguf_type)elem_type));
        return NULL;
    }
    return kv;
}
