/* store: the content-addressed model store, in Ollama's layout so both tools share
 * models: <root>/manifests/<host>/<namespace>/<model>/<tag> (Docker distribution v2
 * manifest JSON) and <root>/blobs/sha256-<hex>. The writable root is $ANVIL_MODELS, else
 * $OLLAMA_MODELS (Ollama's service files), else ~/.anvil/models; another $OLLAMA_MODELS,
 * or ~/.ollama/models, when it exists, is also listed
 * and runnable, read-only, without copying. Model names parse like Ollama's:
 * [host/][namespace/]model[:tag], defaults registry.ollama.ai, library, latest. A name
 * can never address a file outside the store. */
#ifndef ANVIL_STORE_H
#define ANVIL_STORE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "digest.h"

#define STORE_DEFAULT_HOST "registry.ollama.ai"
#define STORE_DEFAULT_NAMESPACE "library"
#define STORE_DEFAULT_TAG "latest"

/* Layer media types (Ollama's). */
#define STORE_MT_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define STORE_MT_CONFIG   "application/vnd.docker.container.image.v1+json"
#define STORE_MT_MODEL    "application/vnd.ollama.image.model"
#define STORE_MT_TEMPLATE "application/vnd.ollama.image.template"
#define STORE_MT_SYSTEM   "application/vnd.ollama.image.system"
#define STORE_MT_PARAMS   "application/vnd.ollama.image.params"
#define STORE_MT_LICENSE  "application/vnd.ollama.image.license"
#define STORE_MT_MESSAGES "application/vnd.ollama.image.messages"
#define STORE_MT_PROJECTOR "application/vnd.ollama.image.projector"

typedef struct {
    char host[256];       /* may carry a port: "127.0.0.1:8080" */
    char ns[128];
    char model[128];
    char tag[128];
} store_name;

/* Parses and validates a name: each part non-empty, only [A-Za-z0-9._-] (host also ':'
 * for a port), no part "." or "..", no leading '.' or '-', lengths bounded. Rejects
 * absolute paths, "..", backslashes, control characters, too many '/' with a one-line
 * error naming the problem. Returns 0 or -1 + anv_last_error(). */
int store_name_parse(const char *text, store_name *out);
/* The short display form Ollama prints: "gemma3:270m" for the default host and
 * namespace, "user/model:tag" for another namespace, "host/ns/model:tag" otherwise. */
void store_name_display(const store_name *n, char *buf, size_t cap);

typedef struct store store;

/* Opens the store from the environment (see the top of the file). Creates nothing until
 * something is written. NULL + anv_last_error() if no home directory can be found. */
store *store_open(void);
/* Explicit roots (tests); ollama_root may be NULL. */
store *store_open_at(const char *root, const char *ollama_root);
void store_close(store *s);
const char *store_root(const store *s);          /* the writable root */
const char *store_ollama_root(const store *s);   /* the read-only root, or NULL */

typedef struct {
    char *name;            /* display name (store_name_display) */
    store_name parsed;
    char *manifest_digest; /* "sha256:<hex>" of the manifest file (ollama list's ID = hex[0..12]) */
    uint64_t size;         /* sum of the layers' sizes */
    int64_t modified;      /* manifest mtime, Unix seconds */
    bool read_only;        /* found in the Ollama store */
    char *manifest_path;
    char *model_path;      /* absolute path of the GGUF blob (or the GGUF file itself) */
    char *model_digest;    /* digest of the model layer, NULL for a plain path */
    char *template_text;   /* TEMPLATE layer (Go template text) or NULL */
    char *system;          /* SYSTEM layer or NULL */
    char *license;         /* LICENSE layer(s) or NULL */
    char *params_json;     /* params layer (JSON object text) or NULL */
    char *messages_json;   /* messages layer (JSON array of {role, content}) or NULL */
    char *projector_path;  /* the first projector layer's blob (a vision model's mmproj) or NULL */
    char *projector_digest; /* its digest, or NULL */
} store_entry;

void store_entry_clear(store_entry *e);

/* Every model of both roots (a name in both: the writable one wins), sorted by
 * modification time, newest first. */
int store_list(store *s, store_entry **out, int *n_out);
void store_entries_free(store_entry *e, int n);
/* Finds a model by name (writable root first, then the Ollama root). -1 + "model 'x'
 * not found (try 'anvil pull x')" when absent; a damaged manifest or a missing blob is
 * an error naming the file. */
int store_lookup(store *s, const char *name, store_entry *out);
/* What `anvil run ARG` and the server accept: an existing file path (a GGUF, used as
 * is: only model_path and name are set) or a store name. Opens the default store when
 * s is NULL. */
int store_resolve(store *s, const char *arg, store_entry *out);

/* Deletes a model's manifest from the writable root (a read-only Ollama model gives a
 * clear error) and prunes blobs no manifest references any more. Every blob deleted here
 * or by the prunes below takes its repack cache files along (weight_cache.h). */
int store_remove(store *s, const char *name);
/* Copies a manifest (from either root) under a new name in the writable root. */
int store_copy(store *s, const char *src, const char *dst);
/* Under the exclusive lock: deletes blobs of the writable root that no manifest references
 * and that are older than STORE_GRACE_SECONDS (an upload waiting for its create is younger),
 * stale temporaries (store_clean_temporaries) and partial downloads older than a day.
 * Returns the number removed, or -1. */
int store_prune(store *s);
/* Deletes those of the given blobs (a replaced or removed manifest's layers) that no
 * manifest references any more. Unlike store_prune, it cannot touch a blob another pull or
 * create has just written and not yet referenced. Returns the number removed, or -1. */
int store_prune_layers(store *s, const char *const *digests, int n);
/* The digests (config + layers) a manifest file references, for store_prune_layers:
 * malloc'd array of n_out malloc'd strings (free with store_digests_free). */
int store_manifest_digests(const char *manifest_json, size_t len, char ***out, int *n_out);
void store_digests_free(char **d, int n);

/* The store lock: flock on <root>/.anvil-lock, shared by threads and processes using the
 * same root (store_lock.c). Shared: lookups, listings and writers (a create or pull holds it
 * from its first blob until its manifest is committed); exclusive: pruning and remove. A
 * nested take by the same thread on the same store is counted; asking for the exclusive lock
 * while holding the shared one fails. create: make the root if it is missing. */
typedef struct {
    int fd;
    bool nested, tracked;
} store_lk;
int store_lock_acquire(store *s, bool exclusive, bool create, store_lk *lk);
/* The exclusive lock without waiting: 0 taken, 1 busy (another holder), -1 error. */
int store_lock_try_exclusive(store *s, store_lk *lk);
void store_lock_release(store_lk *lk);
/* Whether another open file holds a flock on path (a live writer's temporary). */
bool store_file_held(const char *path);
/* Removes the temporaries (".anvil-tmp-*", the server's ".upload-*" spool files) of the root,
 * its blobs and its manifests that no live writer holds (flock) and that are older than
 * max_age_s seconds (0: any age). Under the exclusive store lock (store_prune,
 * store_startup_clean) an unheld temporary is stale at once: its writer holds either its
 * flock (uploads, store_blobs.c) or the shared store lock (a create's quantize output) for
 * as long as it lives. Returns the number removed. */
int store_clean_temporaries(store *s, int64_t max_age_s);
/* Seconds an unreferenced blob (an upload no create has used yet) or an unlocked temporary is
 * kept before store_prune removes it. */
#define STORE_GRACE_SECONDS 3600
/* Server housekeeping, at start-up and on a timer: stale temporaries, and unless ANVIL_NOPRUNE
 * or OLLAMA_NOPRUNE is set, store_prune. Does not wait for the lock (another process busy with
 * the store: skipped). Returns the number of files removed, or -1. */
int store_startup_clean(store *s);
/* The server's timer: the stale temporaries alone (what a killed create, pull or upload of
 * another process left), when the exclusive lock is free at once. Returns the number removed. */
int store_clean_stale(store *s);

/* Blobs (always in the writable root). digest is "sha256:<hex>", validated. */
/* The path of a blob, whether or not it exists (malloc'd); NULL + error on a bad digest. */
char *store_blob_path(store *s, const char *digest);
/* True if the blob exists in either root (read-only blobs are not copied). */
bool store_has_blob(store *s, const char *digest);
/* Path of an existing blob in either root (malloc'd) or NULL. */
char *store_find_blob(store *s, const char *digest);
/* Copies a file into the blob store (hashing it on the way); digest_out gets its
 * digest, size_out its size. Already present: nothing is copied. */
int store_import_file(store *s, const char *path, char digest_out[DIGEST_STR_LEN + 1], uint64_t *size_out);
/* Writes bytes as a blob. */
int store_put_bytes(store *s, const void *data, size_t n, char digest_out[DIGEST_STR_LEN + 1]);

typedef struct {
    const char *media_type;
    const char *digest;    /* "sha256:<hex>" of an existing blob */
    uint64_t size;
} store_layer;

/* Writes a v2 manifest (config + layers) for name, atomically (temporary file +
 * rename). The config blob is created from the model's GGUF facts by the caller. */
int store_write_manifest(store *s, const char *name, const store_layer *config,
                         const store_layer *layers, int n_layers);
/* Writes manifest bytes as received from a registry (after checking they parse and
 * every layer's blob is present). */
int store_write_manifest_raw(store *s, const char *name, const char *json, size_t len);
/* Creates the config blob Ollama writes ({"model_format":"gguf","model_family":...,
 * "file_type":...}) from a GGUF file; fills *out (digest stored in digest_buf). */
int store_make_config(store *s, const char *gguf_path, store_layer *out, char digest_buf[DIGEST_STR_LEN + 1]);
#endif
