/* vision_cache: encoded images kept by image digest, so a conversation that resends its
 * images (every chat API resends the whole history each turn, and the REPL re-renders it)
 * encodes each image once. Key: the image's sha256 (anv_image.sha256, of the encoded bytes)
 * and the projector (vision_model_id: never reused within a process); value: the embedding
 * rows and their vision_layout. Bounded in bytes (the rows), least recently used entry out
 * first. One per loaded model (the server's lmodel, the REPL's session), used by one thread
 * at a time (no lock). */
#ifndef ANVIL_VISION_CACHE_H
#define ANVIL_VISION_CACHE_H
#include <stddef.h>
#include <stdint.h>

#include "vision.h"

typedef struct vision_cache vision_cache;

/* 256 MiB: ~80 gemma3 images at n_embd 3072 (256 rows x 12 KiB each). */
#define VISION_CACHE_DEFAULT_BYTES ((size_t)256 << 20)
/* The bound from ANVIL_VISION_CACHE (bytes; 0 turns the cache off), else the default; -1 +
 * anv_last_error() for a malformed value. */
int vision_cache_bytes_setting(size_t *out);

/* NULL only when out of memory; max_bytes 0: nothing is ever kept (every lookup misses). */
vision_cache *vision_cache_new(size_t max_bytes);
void vision_cache_free(vision_cache *c);

/* The rows stored for (sha256, projector) and their layout, or NULL (a miss). The pointer
 * stays valid until the next vision_cache_put or vision_cache_free. */
const float *vision_cache_get(vision_cache *c, const uint8_t sha256[32], uint64_t projector, vision_layout *lay);
/* Stores a copy of n_floats rows (lay->n_tokens x n_embd) under (sha256, projector),
 * evicting least recently used entries until it fits; an entry larger than the bound is not
 * kept. 0, or -1 + error (out of memory; the cache is unchanged). */
int vision_cache_put(vision_cache *c, const uint8_t sha256[32], uint64_t projector, const vision_layout *lay,
                     const float *rows, size_t n_floats);

typedef struct {
    uint64_t hits, misses, evictions;
    size_t bytes, max_bytes;
    int entries;
} vision_cache_stats;
void vision_cache_get_stats(const vision_cache *c, vision_cache_stats *out);

/* One image's rows: from the cache on a hit, else encoded (vision_encode) and stored; an
 * image without a digest (sha256 NULL) or a NULL cache is always encoded. *lay gets the
 * image's layout; *encoded (may be NULL) whether it was encoded. The rows stay valid until the
 * next call with the same cache or scratch. scratch: a caller-owned buffer grown as needed
 * (free it when done). NULL + error on a bad image or a backend failure. */
const float *vision_cache_encode(vision_cache *c, vision_model *v, const vision_image *img, const uint8_t *sha256, vision_layout *lay,
                                 float **scratch, size_t *scratch_cap, int *encoded);
#endif
