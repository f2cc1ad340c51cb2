/* pull: downloads a model into the store with the registry protocol Ollama uses
 * (GET /v2/<ns>/<model>/manifests/<tag>, then each blob by digest, following
 * redirects), in parallel HTTP Range parts, resuming from the partial file after an
 * interruption, retrying with backoff, verifying sha256 before the manifest is written.
 * hf.co/<user>/<repo>[:<quant>] names fetch a GGUF from a Hugging Face style repository.
 * libcurl does the HTTP; digest.h does the hashing. */
#ifndef ANVIL_PULL_H
#define ANVIL_PULL_H
#include <stdbool.h>
#include <stdint.h>
#include "store.h"

typedef struct {
    const char *status;   /* Ollama's strings: "pulling manifest", "pulling <digest hex[0..12]>",
                             "verifying sha256 digest", "writing manifest",
                             "removing any unused layers", "success" */
    const char *digest;   /* the layer being pulled ("sha256:..."), NULL otherwise */
    uint64_t total;       /* layer size (0 if unknown) */
    uint64_t completed;   /* bytes of the layer present so far (resumed bytes included) */
} pull_progress;

/* Called from the pulling thread; return false to cancel. */
typedef bool (*pull_progress_fn)(const pull_progress *p, void *user);

typedef struct {
    bool insecure;           /* plain http:// (and unverified TLS) for the registry host */
    int max_parts;           /* parallel Range parts per blob (default 16; small blobs get fewer) */
    int max_retries;         /* per part (default 6), exponential backoff */
    pull_progress_fn progress;
    void *user;
} pull_opts;

void pull_opts_default(pull_opts *o);
/* Pulls name into s. 0, or -1 + anv_last_error(): one line naming the model and the
 * cause ("model 'x' not found in registry 127.0.0.1:8080", "digest mismatch for layer
 * sha256:..., removed", "connection failed: ..."). Nothing is written to the manifest
 * unless every blob verified. Environment: ANVIL_HF_ENDPOINT (default https://<the name's
 * host>, i.e. https://hf.co) for hf.co and huggingface.co names, ANVIL_REGISTRY_INSECURE=1
 * like insecure; for tests ANVIL_PULL_PART_SIZE (smallest Range part, default 100 MB),
 * ANVIL_PULL_RETRY_BASE_MS (first backoff, default 1000), ANVIL_PULL_STALL_S (default 30). */
int store_pull(store *s, const char *name, const pull_opts *o);
#endif
