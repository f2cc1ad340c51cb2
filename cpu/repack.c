/* repack: the portable half of weight repacking: the packed layouts (see repack.h) and
 * the set of packed weights a CPU backend holds, looked up by the weight's data pointer. */
#include "repack.h"
#include "error.h"
#include "quant.h"

#include <stdlib.h>
#include <string.h>

bool repack_supported(uint32_t type) { return type == QT_Q4_0 || type == QT_Q8_0; }

size_t repack_group_bytes(uint32_t type, int64_t cols) {
    return (size_t)PK_ROWS * qtype_row_size((qtype)type, cols);
}

/* Q4_0 group block: 16 x fp16 d, then 4 steps k of 16 rows x 4 bytes qs[4k..4k+3] (low
 * nibbles: elements 4k..4k+3, high: 16+4k..). Q8_0: 16 x fp16 d, then 8 steps k of 16 rows
 * x 4 bytes qs[4k..4k+3]. */
void repack_rows(uint32_t type, const void *src, int64_t cols, int64_t rows, uint8_t *dst) {
    const int64_t nb = cols / 32, groups = (rows + PK_ROWS - 1) / PK_ROWS;
    const size_t rb = qtype_row_size((qtype)type, cols);
    const bool q4 = type == QT_Q4_0;
    const size_t blk = q4 ? sizeof(block_q4_0) : sizeof(block_q8_0), qbytes = q4 ? 16 : 32;
    const size_t pblk = PK_ROWS * blk;
    for (int64_t g = 0; g < groups; g++) {
        uint8_t *gd = dst + (size_t)g * (size_t)nb * pblk;
        for (int64_t i = 0; i < nb; i++) {
            uint8_t *pb = gd + (size_t)i * pblk;
            memset(pb, 0, pblk);
            for (int r = 0; r < PK_ROWS; r++) {
                const int64_t row = g * PK_ROWS + r;
                if (row >= rows) break;
                const uint8_t *b = (const uint8_t *)src + (size_t)row * rb + (size_t)i * blk;
                memcpy(pb + 2 * r, b, 2); /* d: first member of both block types */
                for (size_t k = 0; k < qbytes / 4; k++) memcpy(pb + 2 * PK_ROWS + k * 4 * PK_ROWS + 4 * (size_t)r, b + 2 + 4 * k, 4);
            }
        }
    }
}

void packed_set_init(cpu_packed_set *s) {
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->lock, NULL);
}

void packed_set_free(cpu_packed_set *s) {
    for (int i = 0; i < s->n; i++) free(s->items[i].data);
    free(s->items);
    pthread_mutex_destroy(&s->lock);
    memset(s, 0, sizeof *s);
}

int packed_set_add(cpu_packed_set *s, uint32_t type, const void *data, int64_t cols, int64_t rows) {
    const size_t gb = repack_group_bytes(type, cols);
    const size_t n = gb * (size_t)((rows + PK_ROWS - 1) / PK_ROWS);
    uint8_t *p = aligned_alloc(64, (n + 63) / 64 * 64);
    if (!p) { anv_set_error("cpu backend: out of memory repacking a %zu-byte weight", n); return -1; }
    repack_rows(type, data, cols, rows, p);
    pthread_mutex_lock(&s->lock);
    if (s->n == s->cap) {
        const int cap = s->cap ? 2 * s->cap : 64;
        cpu_packed *it = realloc(s->items, (size_t)cap * sizeof *it);
        if (!it) {
            pthread_mutex_unlock(&s->lock);
            free(p);
            anv_set_error("cpu backend: out of memory");
            return -1;
        }
        s->items = it;
        s->cap = cap;
    }
    s->items[s->n++] = (cpu_packed){.orig = data, .type = type, .cols = cols, .rows = rows, .group_bytes = gb, .data = p};
    s->bytes += n;
    pthread_mutex_unlock(&s->lock);
    return 0;
}

void packed_set_remove(cpu_packed_set *s, const void *data) {
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->n; i++)
        if (s->items[i].orig == data) {
            s->bytes -= s->items[i].group_bytes * (size_t)((s->items[i].rows + PK_ROWS - 1) / PK_ROWS);
            free(s->items[i].data);
            s->items[i] = s->items[--s->n];
            break;
        }
    pthread_mutex_unlock(&s->lock);
}

/* A linear scan: a model registers a few hundred weights, and one compare per weight costs
 * nothing next to a matmul. The packed data is never freed while a matmul on it runs (the model
 * frees its weights only after its last op). */
bool packed_set_find(cpu_packed_set *s, const void *data, uint32_t type, int64_t cols, int64_t rows, cpu_packed *out) {
    bool found = false;
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->n; i++)
        if (s->items[i].orig == data) {
            if (s->items[i].type == type && s->items[i].cols == cols && s->items[i].rows == rows) { *out = s->items[i]; found = true; }
            break;
        }
    pthread_mutex_unlock(&s->lock);
    return found;
}
