/* pull_http: the HTTP half of `store_pull` (internal to pull.c): libcurl settings shared
 * by every request, a small GET with retries (manifests), and the download of one blob in
 * parallel Range parts into "<blob>-partial", with each part's progress saved in
 * "<blob>-partial-N" so an interrupted pull resumes where it stopped. */
#ifndef ANVIL_PULL_HTTP_H
#define ANVIL_PULL_HTTP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "pull.h"

typedef struct {
    bool insecure;         /* skip TLS verification */
    int max_parts;         /* parallel parts per blob */
    int max_retries;       /* per part / per request */
    uint64_t min_part;     /* smallest part (100 MB; ANVIL_PULL_PART_SIZE) */
    uint64_t max_part;     /* largest part (1 GB, never below min_part) */
    int retry_base_ms;     /* first backoff (1000; ANVIL_PULL_RETRY_BASE_MS), doubling, capped at 30 s */
    int stall_s;           /* a part that receives nothing this long is retried (30; ANVIL_PULL_STALL_S) */
    pull_progress_fn progress;
    void *user;
} pull_http_cfg;

/* Fills cfg from the options and the environment. */
void pull_http_cfg_init(pull_http_cfg *cfg, const pull_opts *o);

/* GET url into a malloc'd, NUL-terminated buffer (at most max_len bytes). Connection
 * errors and 5xx/429 answers are retried with backoff. Returns the final HTTP status
 * (*body set only for 2xx), or -1 + anv_last_error() when no answer came. */
long pull_http_get(const pull_http_cfg *cfg, const char *url, const char *accept, size_t max_len,
                   char **body, size_t *len);

/* Outcome of a blob download. */
enum { PULL_BLOB_OK = 0, PULL_BLOB_FAILED = -1, PULL_BLOB_CANCELLED = -2 };

/* Downloads the blob at url (size bytes, digest for progress and messages) into
 * partial_path, resuming from its part files. On OK the file is complete (not yet
 * verified) and the part files are still there (pull_http_discard_state removes them). */
int pull_http_blob(const pull_http_cfg *cfg, const char *url, const char *partial_path,
                   const char *digest, uint64_t size);

/* Removes the part state files of partial_path ("<partial_path>-N"). */
void pull_http_discard_state(const char *partial_path);
#endif
