/* store_verify: re-hashes blobs against the digests that name them, as Ollama's verifyBlob
 * does, to catch a blob corrupted in place (a bad disk, a stray write, a truncation): the
 * store otherwise trusts a blob whose file name says its digest. Works on both roots (the
 * read-only Ollama store included: it only reads). */
#ifndef ANVIL_STORE_VERIFY_H
#define ANVIL_STORE_VERIFY_H
#include <stdint.h>
#include "store.h"

typedef enum {
    STORE_VERIFY_OK = 0,
    STORE_VERIFY_MISSING,   /* no blob in either root */
    STORE_VERIFY_SIZE,      /* the size differs from the manifest's */
    STORE_VERIFY_DIGEST,    /* the content hashes to another digest */
    STORE_VERIFY_IO,        /* cannot read it (error in message) */
} store_verify_status;

typedef struct {
    const char *media_type;          /* the manifest's mediaType of the layer (or the config's) */
    const char *digest;              /* what the manifest says */
    uint64_t size;                   /* what the manifest says */
    const char *path;                /* the blob found, or NULL */
    store_verify_status status;
    char got[DIGEST_STR_LEN + 1];    /* the digest of the content (STORE_VERIFY_DIGEST/SIZE) */
    uint64_t got_size;
    const char *message;             /* one line for anything but OK */
} store_verify_layer;

typedef void (*store_verify_fn)(const store_verify_layer *l, void *user);

/* Re-hashes every blob (config and layers) of the manifest of name, calling fn (optional)
 * after each. Returns the number of bad blobs (0: all intact), or -1 + anv_last_error()
 * when the model cannot be found or its manifest read. */
int store_verify_model(store *s, const char *name, store_verify_fn fn, void *user);

/* Re-hashes the blob at path against digest: 0 matches, -1 + anv_last_error() ("what:
 * blob sha256:... is corrupt: its content hashes to sha256:...", or an I/O error). */
int store_verify_blob_file(const char *path, const char *digest, const char *what);
#endif
