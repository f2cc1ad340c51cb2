/* gguf_write: builds a GGUF v3 file: metadata key/values of every GGUF type (string and
 * numeric arrays included), tensor infos, and the tensor data, aligned as llama.cpp does
 * (general.alignment if set, else 32; every tensor's offset a multiple of it).
 *
 * Use: gguf_writer_new(path); set metadata (gguf_writer_set_*, or copy it from an opened
 * gguf_file); declare tensors with gguf_writer_add_tensor(); then either
 *   - gguf_writer_finish() alone, if every tensor was given its data (borrowed pointers that
 *     must stay valid until finish), or
 *   - stream: gguf_writer_write_header(), then gguf_writer_write_data() with each tensor's
 *     bytes in declaration order (any chunking), then gguf_writer_finish().
 * Every function returns 0 (or a pointer) on success and -1 (NULL) with a one-line
 * anv_last_error() naming the file on failure. finish() and abort() free the writer. The
 * file is written beside the path under a temporary name and renamed over it by a successful
 * finish(); a writer that does not finish removes only that temporary, never the path, and an
 * existing path that is not a regular file (device, folder, FIFO) is refused. */
#ifndef ANVIL_GGUF_WRITE_H
#define ANVIL_GGUF_WRITE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "gguf.h"

typedef struct gguf_writer gguf_writer;

gguf_writer *gguf_writer_new(const char *path);

/* Metadata. "set" adds the key, or replaces its value (and type) in place if it exists. */
int gguf_writer_set_u8(gguf_writer *w, const char *key, uint8_t v);
int gguf_writer_set_i8(gguf_writer *w, const char *key, int8_t v);
int gguf_writer_set_u16(gguf_writer *w, const char *key, uint16_t v);
int gguf_writer_set_i16(gguf_writer *w, const char *key, int16_t v);
int gguf_writer_set_u32(gguf_writer *w, const char *key, uint32_t v);
int gguf_writer_set_i32(gguf_writer *w, const char *key, int32_t v);
int gguf_writer_set_u64(gguf_writer *w, const char *key, uint64_t v);
int gguf_writer_set_i64(gguf_writer *w, const char *key, int64_t v);
int gguf_writer_set_f32(gguf_writer *w, const char *key, float v);
int gguf_writer_set_f64(gguf_writer *w, const char *key, double v);
int gguf_writer_set_bool(gguf_writer *w, const char *key, bool v);
int gguf_writer_set_str(gguf_writer *w, const char *key, const char *v);
/* Same with an explicit length (the string may hold any bytes). */
int gguf_writer_set_strn(gguf_writer *w, const char *key, const char *v, uint64_t len);
/* Numeric or bool array: n elements of elem_type, little-endian, packed (bool: 1 byte 0/1). */
int gguf_writer_set_arr(gguf_writer *w, const char *key, gguf_type elem_type, const void *data, uint64_t n);
int gguf_writer_set_str_arr(gguf_writer *w, const char *key, const char *const *strs, uint64_t n);
/* Copies one key/value of an opened file (any type), or all of them in file order. */
int gguf_writer_copy_kv(gguf_writer *w, const gguf_kv *kv);
int gguf_writer_copy_all_kv(gguf_writer *w, const gguf_file *f);
/* Removes a key; 0 whether or not it was there. */
int gguf_writer_remove_kv(gguf_writer *w, const char *key);
uint64_t gguf_writer_n_kv(const gguf_writer *w);

/* Declares a tensor: n_dims 1..4, ne[0] (row length) a multiple of the type's block size.
 * data: its bytes (borrowed until finish) or NULL to stream them with write_data. */
int gguf_writer_add_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                           const int64_t *ne, const void *data);
/* Bytes of a declared tensor's data (0 if no such tensor). */
uint64_t gguf_writer_tensor_nbytes(const gguf_writer *w, const char *name);

/* Streaming: writes the header, metadata and tensor infos (no changes to them after this). */
int gguf_writer_write_header(gguf_writer *w);
/* Appends n bytes of tensor data; a tensor is complete when all its bytes are written, and
 * the next bytes belong to the next declared tensor. */
int gguf_writer_write_data(gguf_writer *w, const void *data, size_t n);

/* Writes what is left (header and borrowed tensor data), checks every tensor got all its
 * bytes, closes the file and frees the writer. */
int gguf_writer_finish(gguf_writer *w);
/* Gives up: closes and removes the partial file, frees the writer (NULL is fine). */
void gguf_writer_abort(gguf_writer *w);
#endif
