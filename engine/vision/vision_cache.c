/* vision_cache: the per-model cache of encoded images by digest (vision_cache.h). A doubly
 * linked list in recency order (head: most recent); lookups scan it (a few hundred entries
 * at most under any sane bound, each lookup saves an encoder run). */
#include "vision_cache.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "settings.h"

typedef struct entry {
    struct entry *prev, *next;
    uint8_t sha256[32];
    uint64_t projector;
    vision_layout lay;
    size_t bytes;
    float *rows;
} entry;

struct vision_cache {
    entry *head, *tail;
    size_t bytes, max_bytes;
    int entries;
    uint64_t hits, misses, evictions;
};

int vision_cache_bytes_setting(size_t *out) {
    uint64_t v = VISION_CACHE_DEFAULT_BYTES;
    if (anv_setting_u64("ANVIL_VISION_CACHE", 0, (uint64_t)1 << 44, &v) < 0) return -1;
    *out = (size_t)v;
    return 0;
}

vision_cache *vision_cache_new(size_t max_bytes) {
    vision_cache *c = calloc(1, sizeof *c);
    if (c) c->max_bytes = max_bytes;
    return c;
}

static void unlink_entry(vision_cache *c, entry *e) {
    if (e->prev) e->prev->next = e->next; else c->head = e->next;
    if (e->next) e->next->prev = e->prev; else c->tail = e->prev;
    e->prev = e->next = NULL;
}

static void push_front(vision_cache *c, entry *e) {
    e->prev = NULL;
    e->next = c->head;
    if (c->head) c->head->prev = e; else c->tail = e;
    c->head = e;
}

static void drop(vision_cache *c, entry *e) {
    unlink_entry(c, e);
    c->bytes -= e->bytes;
    c->entries--;
    free(e->rows);
    free(e);
}

void vision_cache_free(vision_cache *c) {
    if (!c) return;
    while (c->head) drop(c, c->head);
    free(c);
}

static entry *find(const vision_cache *c, const uint8_t sha256[32], uint64_t projector) {
    for (entry *e = c->head; e; e = e->next)
        if (e->projector == projector && memcmp(e->sha256, sha256, 32) == 0) return e;
    return NULL;
}

const float *vision_cache_get(vision_cache *c, const uint8_t sha256[32], uint64_t projector, vision_layout *lay) {
    entry *e = find(c, sha256, projector);
    if (!e) { c->misses++; return NULL; }
    c->hits++;
    unlink_entry(c, e);
    push_front(c, e);
    *lay = e->lay;
    return e->rows;
}

int vision_cache_put(vision_cache *c, const uint8_t sha256[32], uint64_t projector, const vision_layout *lay,
                     const float *rows, size_t n_floats) {
    const size_t bytes = n_floats * sizeof(float);
    entry *old = find(c, sha256, projector);
    if (old) drop(c, old);   /* the same image again: the newer rows */
    if (bytes > c->max_bytes) return 0;
    entry *e = calloc(1, sizeof *e);
    float *copy = malloc(bytes ? bytes : 1);
    if (!e || !copy) { free(e); free(copy); anv_set_error("out of memory"); return -1; }
    memcpy(copy, rows, bytes);
    memcpy(e->sha256, sha256, 32);
    e->projector = projector;
    e->lay = *lay;
    e->bytes = bytes;
    e->rows = copy;
    while (c->tail && c->bytes + bytes > c->max_bytes) {
        drop(c, c->tail);
        c->evictions++;
    }
    push_front(c, e);
    c->bytes += bytes;
    c->entries++;
    return 0;
}

void vision_cache_get_stats(const vision_cache *c, vision_cache_stats *out) {
    *out = (vision_cache_stats){.hits = c->hits, .misses = c->misses, .evictions = c->evictions, .bytes = c->bytes,
                                .max_bytes = c->max_bytes, .entries = c->entries};
}

const float *vision_cache_encode(vision_cache *c, vision_model *v, const vision_image *img, const uint8_t *sha256, vision_layout *lay,
                                 float **scratch, size_t *scratch_cap, int *encoded) {
    if (encoded) *encoded = 0;
    const uint64_t proj = vision_model_id(v);
    if (c && sha256) {
        const float *hit = vision_cache_get(c, sha256, proj, lay);
        if (hit) return hit;
    }
    if (vision_image_layout(v, img->width, img->height, lay) != 0) return NULL;
    const size_t n = (size_t)lay->n_tokens * (size_t)vision_n_embd(v);
    if (n > *scratch_cap) {
        float *p = realloc(*scratch, n * sizeof(float));
        if (!p) { anv_set_error("out of memory"); return NULL; }
        *scratch = p;
        *scratch_cap = n;
    }
    if (vision_encode(v, img->rgb, img->width, img->height, *scratch) != 0) return NULL;
    if (encoded) *encoded = 1;
    if (c && sha256 && vision_cache_put(c, sha256, proj, lay, *scratch, n) != 0) return NULL;
    return *scratch;
}
