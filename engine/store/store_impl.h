/* store_impl: what the store's own files (store_name.c, store.c, store_blobs.c,
 * model_create.c) share and nobody else needs: the store struct, path and file helpers,
 * and the parsed form of a manifest. */
#ifndef ANVIL_STORE_IMPL_H
#define ANVIL_STORE_IMPL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "readfile.h"
#include "store.h"

struct store {
    char *root;         /* writable */
    char *ollama_root;  /* read-only, NULL if absent */
};

/* Temporary files start with this prefix: names the listing and the pruning skip
 * (a leading '.' is never a valid name part nor a blob name). */
#define STORE_TMP_PREFIX ".anvil-tmp-"

/* malloc'd printf; NULL + error when out of memory. */
char *store_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* mkdir -p; 0 or -1 + error naming the directory. */
int store_mkdirs(const char *dir);
/* Writes a file atomically: a temporary file in the same directory (created with its
 * parents), fsync'd, renamed over path. 0 or -1 + error. */
int store_write_atomic(const char *path, const void *data, size_t n);

/* The manifest path of a parsed name under a root (malloc'd). */
char *store_manifest_path(const char *root, const store_name *n);

typedef struct {
    char media_type[128];
    char digest[DIGEST_STR_LEN + 1];
    uint64_t size;
} store_mlayer;

typedef struct {
    store_mlayer config;
    store_mlayer *layers;
    int n_layers;
} store_manifest;

/* Parses and validates manifest JSON; `what` names the file in error messages. */
int store_manifest_parse(const char *json, size_t len, const char *what, store_manifest *m);
void store_manifest_free(store_manifest *m);

/* Moves a file (normally a temporary file in the same file system) into the blob store
 * under its digest; the file is gone afterwards either way. */
int store_import_move(store *s, const char *path, char digest_out[DIGEST_STR_LEN + 1], uint64_t *size_out);
#endif
