/* repack: the portable half of weight repacking: the packed layouts (see repack.h) and
 * the set of packed weights a CPU backend holds, looked up by the weight's data pointer,
 * each owning its copy or holding a reference to a shared region (repack_load.c). */
#include "repack.h"
#include "cpu_kernels.h"
#include "error.h"
#include "quant.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

bool repack_supported(uint32_t type) {
    return type == QT_Q4_0 || type == QT_IQ4_NL || type == QT_Q8_0 || type == QT_Q4_K || type == QT_Q5_K || type == QT_Q6_K ||
           type == QT_F16 || type == QT_BF16;
}

size_t repack_group_bytes(uint32_t type, int64_t cols) {
    if (type == QT_Q4_K) return (size_t)(cols / QK_K) * PK_Q4K_BYTES;
    if (type == QT_Q5_K) return (size_t)(cols / QK_K) * PK_Q5K_BYTES;
    if (type == QT_Q6_K) return (size_t)(cols / QK_K) * PK_Q6K_BYTES;
    if (type == QT_F16 || type == QT_BF16) return (size_t)cols * PK_ROWS * 2;
    return (size_t)PK_ROWS * qtype_row_size((qtype)type, cols);
}

/* Q4_K / Q5_K group superblock (offsets in repack.h): d, dmin, 6-bit scales [8][16 rows],
 * mins [4 pairs][16 rows][2], quants [chunk c][step k][16 rows][qs 32c+4k..+3], Q5_K: qh
 * [step k][16 rows][qh 4k..4k+3]. */
static void repack_k45(bool q5, const void *src, int64_t cols, int64_t rows, uint8_t *dst) {
    const int64_t nsb = cols / QK_K, groups = (rows + PK_ROWS - 1) / PK_ROWS;
    const size_t rb = qtype_row_size(q5 ? QT_Q5_K : QT_Q4_K, cols), sbb = q5 ? PK_Q5K_BYTES : PK_Q4K_BYTES;
    for (int64_t g = 0; g < groups; g++)
        for (int64_t i = 0; i < nsb; i++) {
            uint8_t *pb = dst + ((size_t)g * (size_t)nsb + (size_t)i) * sbb;
            memset(pb, 0, sbb);
            for (int r = 0; r < PK_ROWS && g * PK_ROWS + r < rows; r++) {
                const uint8_t *row = (const uint8_t *)src + (size_t)(g * PK_ROWS + r) * rb;
                const uint8_t *scales, *qs, *qh = NULL;
                uint16_t d, dmin;
                if (q5) {
                    const block_q5_K *b = (const block_q5_K *)(const void *)row + i;
                    d = b->d; dmin = b->dmin; scales = b->scales; qs = b->qs; qh = b->qh;
                } else {
                    const block_q4_K *b = (const block_q4_K *)(const void *)row + i;
                    d = b->d; dmin = b->dmin; scales = b->scales; qs = b->qs;
                }
                memcpy(pb + PK_K_D + 2 * r, &d, 2);
                memcpy(pb + PK_K_DMIN + 2 * r, &dmin, 2);
                for (int j = 0; j < 8; j++) {
                    uint8_t sc, m;
                    kq_scale_min(j, scales, &sc, &m);
                    pb[PK_K_SC + 16 * j + r] = sc;
                    pb[PK_K_MN + 32 * (j / 2) + 2 * r + (j % 2)] = m;
                }
                for (int c = 0; c < 4; c++)
                    for (int k = 0; k < 8; k++) memcpy(pb + PK_K_QS + (size_t)(c * 8 + k) * 64 + 4 * r, qs + 32 * c + 4 * k, 4);
                if (q5)
                    for (int k = 0; k < 8; k++) memcpy(pb + PK_Q5K_QH + (size_t)k * 64 + 4 * r, qh + 4 * k, 4);
            }
        }
}

/* Q6_K group superblock (offsets in repack.h): d, scales [16][16 rows], ql [2][16 steps]
 * [16 rows][4], qh [2][8 steps][16 rows][4]. */
static void repack_q6k(const void *src, int64_t cols, int64_t rows, uint8_t *dst) {
    const int64_t nsb = cols / QK_K, groups = (rows + PK_ROWS - 1) / PK_ROWS;
    const size_t rb = qtype_row_size(QT_Q6_K, cols);
    for (int64_t g = 0; g < groups; g++)
        for (int64_t i = 0; i < nsb; i++) {
            uint8_t *pb = dst + ((size_t)g * (size_t)nsb + (size_t)i) * PK_Q6K_BYTES;
            memset(pb, 0, PK_Q6K_BYTES);
            for (int r = 0; r < PK_ROWS && g * PK_ROWS + r < rows; r++) {
                const block_q6_K *b = (const block_q6_K *)(const void *)((const uint8_t *)src + (size_t)(g * PK_ROWS + r) * rb) + i;
                memcpy(pb + PK_Q6K_D + 2 * r, &b->d, 2);
                for (int j = 0; j < 16; j++) pb[PK_Q6K_SC + 16 * j + r] = (uint8_t)b->scales[j];
                for (int h = 0; h < 2; h++) {
                    for (int k = 0; k < 16; k++) memcpy(pb + PK_Q6K_QL(h, k / 8, k % 8) + 4 * r, b->ql + 64 * h + 4 * k, 4);
                    for (int k = 0; k < 8; k++) memcpy(pb + PK_Q6K_QH(h, k) + 4 * r, b->qh + 32 * h + 4 * k, 4);
                }
            }
        }
}

/* F16 / BF16 group: [column k][16 rows] of 16-bit values (a transpose of 16 rows). */
static void repack_f16(const void *src, int64_t cols, int64_t rows, uint8_t *dst) {
    const int64_t groups = (rows + PK_ROWS - 1) / PK_ROWS;
    for (int64_t g = 0; g < groups; g++) {
        uint16_t *gd = (uint16_t *)(void *)(dst + (size_t)g * (size_t)cols * PK_ROWS * 2);
        const int nr = rows - g * PK_ROWS < PK_ROWS ? (int)(rows - g * PK_ROWS) : PK_ROWS;
        if (nr < PK_ROWS) memset(gd, 0, (size_t)cols * PK_ROWS * 2);
        for (int r = 0; r < nr; r++) {
            const uint16_t *row = (const uint16_t *)src + (size_t)(g * PK_ROWS + r) * (size_t)cols;
            for (int64_t k = 0; k < cols; k++) gd[(size_t)k * PK_ROWS + (size_t)r] = row[k];
        }
    }
}

/* Q4_0 (and IQ4_NL: the same block layout) group block: 16 x fp16 d, then 4 steps k of 16
 * rows x 4 bytes qs[4k..4k+3] (low nibbles: elements 4k..4k+3, high: 16+4k..). Q8_0: 16 x fp16 d, then 8 steps k of 16 rows
 * x 4 bytes qs[4k..4k+3]. */
void repack_rows(uint32_t type, const void *src, int64_t cols, int64_t rows, uint8_t *dst) {
    if (type == QT_Q4_K || type == QT_Q5_K) { repack_k45(type == QT_Q5_K, src, cols, rows, dst); return; }
    if (type == QT_Q6_K) { repack_q6k(src, cols, rows, dst); return; }
    if (type == QT_F16 || type == QT_BF16) { repack_f16(src, cols, rows, dst); return; }
    const int64_t nb = cols / 32, groups = (rows + PK_ROWS - 1) / PK_ROWS;
    const size_t rb = qtype_row_size((qtype)type, cols);
    const bool q4 = type == QT_Q4_0 || type == QT_IQ4_NL; /* block_iq4_nl has block_q4_0's layout */
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

size_t repack_bytes(uint32_t type, int64_t cols, int64_t rows) {
    return repack_group_bytes(type, cols) * (size_t)((rows + PK_ROWS - 1) / PK_ROWS);
}

/* Drops an item's hold on its memory (under the lock or at teardown). */
static void packed_release(cpu_packed *it) {
    cpu_packed_region *r = it->region;
    if (!r) { free(it->data); return; }
    if (--r->refs > 0) return;
    if (r->mapped) munmap(r->base, r->size);
    else free(r->base);
    free(r);
}

void packed_set_init(cpu_packed_set *s) {
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->lock, NULL);
}

void packed_set_free(cpu_packed_set *s) {
    for (int i = 0; i < s->n; i++) packed_release(&s->items[i]);
    free(s->items);
    pthread_mutex_destroy(&s->lock);
    memset(s, 0, sizeof *s);
}

/* Appends an item (takes the lock); 0 or -1 + error. */
static int packed_set_push(cpu_packed_set *s, const cpu_packed *item) {
    pthread_mutex_lock(&s->lock);
    if (s->n == s->cap) {
        const int cap = s->cap ? 2 * s->cap : 64;
        cpu_packed *it = realloc(s->items, (size_t)cap * sizeof *it);
        if (!it) {
            pthread_mutex_unlock(&s->lock);
            anv_set_error("cpu backend: out of memory");
            return -1;
        }
        s->items = it;
        s->cap = cap;
    }
    s->items[s->n++] = *item;
    if (item->region) item->region->refs++;
    s->bytes += repack_bytes(item->type, item->cols, item->rows);
    pthread_mutex_unlock(&s->lock);
    return 0;
}

int packed_set_add(cpu_packed_set *s, uint32_t type, const void *data, int64_t cols, int64_t rows) {
    const size_t n = repack_bytes(type, cols, rows);
    uint8_t *p = aligned_alloc(64, (n + 63) / 64 * 64);
    if (!p) { anv_set_error("cpu backend: out of memory repacking a %zu-byte weight", n); return -1; }
    repack_rows(type, data, cols, rows, p);
    const cpu_packed it = {.orig = data, .type = type, .cols = cols, .rows = rows, .group_bytes = repack_group_bytes(type, cols), .data = p};
    if (packed_set_push(s, &it) != 0) { free(p); return -1; }
    return 0;
}

int packed_set_add_ref(cpu_packed_set *s, uint32_t type, const void *orig, int64_t cols, int64_t rows, uint8_t *data,
                       cpu_packed_region *region) {
    const cpu_packed it = {.orig = orig, .type = type, .cols = cols, .rows = rows, .group_bytes = repack_group_bytes(type, cols),
                           .data = data, .region = region};
    return packed_set_push(s, &it);
}

void packed_set_remove(cpu_packed_set *s, const void *data) {
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->n; i++)
        if (s->items[i].orig == data) {
            s->bytes -= repack_bytes(s->items[i].type, s->items[i].cols, s->items[i].rows);
            packed_release(&s->items[i]);
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
