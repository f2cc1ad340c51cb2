/* gguf: the GGUF v2/v3 file reader. The file is memory-mapped; metadata strings and
 * tensor data point into the mapping (zero copy). Every field is validated on open
 * (magic, version, counts, lengths, types, alignment, offsets and sizes against the file
 * size, integer overflow); a bad file gives NULL and a one-line anv_last_error(). */
#ifndef ANVIL_GGUF_H
#define ANVIL_GGUF_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    GGUF_UINT8 = 0, GGUF_INT8 = 1, GGUF_UINT16 = 2, GGUF_INT16 = 3, GGUF_UINT32 = 4,
    GGUF_INT32 = 5, GGUF_FLOAT32 = 6, GGUF_BOOL = 7, GGUF_STRING = 8, GGUF_ARRAY = 9,
    GGUF_UINT64 = 10, GGUF_INT64 = 11, GGUF_FLOAT64 = 12,
} gguf_type;

/* A string inside the mapping: not NUL-terminated. */
typedef struct { const char *ptr; uint64_t len; } gguf_str;

typedef struct {
    gguf_str key;
    gguf_type type;
    /* Scalars (type != ARRAY): the value, widened. */
    union { uint64_t u64; int64_t i64; double f64; bool b; gguf_str str; } v;
    /* Arrays: element type, count, and the raw little-endian elements (numeric) or the
     * string table (strings, indexed once on open). */
    gguf_type arr_type;
    uint64_t arr_len;
    const void *arr_data;
    gguf_str *arr_strs;
} gguf_kv;

#define GGUF_MAX_DIMS 4
typedef struct {
    gguf_str name;
    uint32_t n_dims;
    int64_t ne[GGUF_MAX_DIMS]; /* ne[0] = elements per row (fastest), unused dims = 1 */
    uint32_t type;             /* qtype id */
    uint64_t offset;           /* relative to the data section */
    uint64_t nbytes;
    const void *data;          /* into the mapping */
} gguf_tensor;

typedef struct gguf_file {
    uint32_t version;
    uint64_t n_kv, n_tensors;
    gguf_kv *kv;
    gguf_tensor *tensors;
    uint64_t alignment;
    const uint8_t *base;  /* whole mapping */
    size_t size;
    size_t data_offset;   /* start of the tensor data section */
    bool mapped;          /* true: munmap on close */
    char *path;
} gguf_file;

/* Opens and validates a file; NULL + anv_last_error() ("model.gguf: tensor 'x' ... ") on failure. */
gguf_file *gguf_open(const char *path);
/* The file is memory-mapped (MAP_PRIVATE), unless ANVIL_NO_MMAP is set (not "0"): then it is
 * read into memory, which costs its size in RAM but cannot SIGBUS if the file is truncated
 * while loaded. */
/* Same over a caller-owned buffer (fuzzing, tests); the buffer must outlive the result. */
gguf_file *gguf_open_memory(const void *data, size_t size, const char *name);
void gguf_close(gguf_file *f);
/* A mapped file that shrank since it was opened (truncated in place) would SIGBUS on the
 * first access past its new end: 0 if it still covers the mapping (or is not mapped), -1 +
 * anv_last_error() naming the file and both sizes otherwise. One fstat; call it before using
 * a long-lived model (each request). */
int gguf_check_size(const gguf_file *f);
/* The open descriptor of a mapped file (its identity: fstat), or -1 (memory, ANVIL_NO_MMAP). */
int gguf_fd(const gguf_file *f);

/* Lookup; NULL if absent. */
const gguf_kv *gguf_find(const gguf_file *f, const char *key);
const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name);

/* Typed getters: return false if the key is absent; if present with an incompatible
 * type they set anv_last_error() naming the key and return false too (check
 * gguf_find first if absence is fine). Integer getters accept any integer type whose
 * value fits. */
bool gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out);
bool gguf_get_i64(const gguf_file *f, const char *key, int64_t *out);
bool gguf_get_f32(const gguf_file *f, const char *key, float *out);
bool gguf_get_bool(const gguf_file *f, const char *key, bool *out);
bool gguf_get_str(const gguf_file *f, const char *key, gguf_str *out);
/* Copies a string value into a malloc'd NUL-terminated string (NULL if absent/not a string). */
char *gguf_get_str_dup(const gguf_file *f, const char *key);
/* Array access: returns the kv if key is an array of elem_type (any type if elem_type < 0). */
const gguf_kv *gguf_get_arr(const gguf_file *f, const char *key, int elem_type);

/* The longest probe sequence (slots walked) in the key and tensor name indexes: what the
 * worst lookup costs. Bounded (tens) whatever names a file holds; for tests. */
size_t gguf_index_max_probe(const gguf_file *f);

/* Names for printing. */
const char *gguf_type_name(gguf_type t);
/* True if s equals the NUL-terminated c. */
bool gguf_str_eq(gguf_str s, const char *c);
#endif
