/* vk_wide: the repacked ("wide") weight layout (see vk_wide.h): the row stride helper,
 * packing and unpacking rows, weight creation and uploads / downloads of repacked tensors,
 * the mapping from a kernel to its "_w" twin (also the uvec4 mat-vec of Q4_K / Q5_K, which
 * keep the GGUF layout) and the descriptions of those pipelines.
 * Row layout for nb = cols / QK blocks of B bytes, Q quant bytes each (S = B - Q side bytes):
 *   [quants of block 0 .. nb-1: nb * Q][side bytes of block 0 .. nb-1: nb * S][0..15 zeros]
 * so every block's quants start 16-byte aligned (Q is 16, 32 or 192) and the row stride is
 * nb * B rounded up to 16: row splitting (vk_memory.c) keeps every chunk row-aligned.
 * The 32-element types' quants end their GGUF block (side bytes first: scale, min, high
 * bits); Q6_K's 192 quant bytes (ql[128], qh[64]) start it (side bytes: scales[16], d). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "quant.h"
#include "vk_internal.h"
#include "vk_wide.h"

/* qk: elements per block; qoff: the quants' offset in the GGUF block (the side bytes are
 * the block's other bytes, contiguous: [0, qoff) or [quants, block)). */
typedef struct { uint32_t type; uint32_t qk, block, quants, qoff; const char *name; } wide_type;
/* The order of the "_w" kernel ranges and of engine/vulkan/CMakeLists.txt. */
static const wide_type k_wide[VKW_N_TYPES] = {
    { QT_Q4_0, 32, 18, 16, 2, "q4_0" }, { QT_Q4_1, 32, 20, 16, 4, "q4_1" }, { QT_Q5_0, 32, 22, 16, 6, "q5_0" },
    { QT_Q5_1, 32, 24, 16, 8, "q5_1" }, { QT_Q8_0, 32, 34, 32, 2, "q8_0" }, { QT_Q6_K, 256, 210, 192, 0, "q6_k" },
};

#define PIECE_BYTES (4u << 20) /* host staging of one pack / unpack step */

int vkw_type_index(uint32_t qtype) {
    for (int i = 0; i < VKW_N_TYPES; i++)
        if (k_wide[i].type == qtype) return i;
    return -1;
}

size_t vkw_row_stride(uint32_t qtype, int64_t cols) {
    const int i = vkw_type_index(qtype);
    if (i < 0 || cols <= 0 || cols % k_wide[i].qk) return 0;
    return ((size_t)(cols / k_wide[i].qk) * k_wide[i].block + 15) & ~(size_t)15;
}

void vkw_pack_rows(uint32_t qtype, int64_t cols, const uint8_t *src, uint8_t *dst, int64_t n_rows) {
    const int wi = vkw_type_index(qtype);
    if (wi < 0) return;
    const wide_type *w = &k_wide[wi];
    const size_t nb = (size_t)(cols / w->qk), B = w->block, Q = w->quants, S = B - Q, stride = vkw_row_stride(qtype, cols);
    const size_t so = w->qoff ? 0 : Q; /* the side bytes' offset in the GGUF block */
    for (int64_t r = 0; r < n_rows; r++) {
        const uint8_t *s = src + (size_t)r * nb * B;
        uint8_t *d = dst + (size_t)r * stride;
        for (size_t b = 0; b < nb; b++) {
            memcpy(d + b * Q, s + b * B + w->qoff, Q);
            memcpy(d + nb * Q + b * S, s + b * B + so, S);
        }
        memset(d + nb * B, 0, stride - nb * B);
    }
}

void vkw_unpack_rows(uint32_t qtype, int64_t cols, const uint8_t *src, uint8_t *dst, int64_t n_rows) {
    const int wi = vkw_type_index(qtype);
    if (wi < 0) return;
    const wide_type *w = &k_wide[wi];
    const size_t nb = (size_t)(cols / w->qk), B = w->block, Q = w->quants, S = B - Q, stride = vkw_row_stride(qtype, cols);
    const size_t so = w->qoff ? 0 : Q; /* the side bytes' offset in the GGUF block */
    for (int64_t r = 0; r < n_rows; r++) {
        const uint8_t *s = src + (size_t)r * stride;
        uint8_t *d = dst + (size_t)r * nb * B;
        for (size_t b = 0; b < nb; b++) {
            memcpy(d + b * B + w->qoff, s + b * Q, Q);
            memcpy(d + b * B + so, s + nb * Q + b * S, S);
        }
    }
}

bool vkw_is_wide(const be_tensor *t) { return t && t->storage && ((const vk_storage *)t->storage)->wide_stride != 0; }

size_t vkw_stride(const be_tensor *t) {
    const vk_storage *s = t->storage;
    return s->wide_stride ? s->wide_stride : be_row_bytes(t);
}

size_t vkw_base(const be_tensor *t) {
    const vk_storage *s = t->storage;
    if (!s->wide_stride) return t->offset;
    const size_t rb = be_row_bytes(t);
    if (t->cols != s->wide_cols || t->offset % rb) return SIZE_MAX;
    return t->offset / rb * s->wide_stride;
}

int vkw_pick(const be_tensor *t, int pipe) {
    /* Q4_K / Q5_K: the GGUF layout, already 16-byte aligned (blocks of 144 / 176 bytes, every
     * row and chunk offset a multiple of them): the uvec4 mat-vec where the path is on */
    if ((t->type == QT_Q4_K || t->type == QT_Q5_K) && pipe == VKP_MMV + vkp_type_index(t->type) &&
        vk_of(t->be)->use_wide && vkw_base(t) % 16 == 0)
        return t->type == QT_Q4_K ? VKP_MMV_Q4_K_W : VKP_MMV_Q5_K_W;
    if (!vkw_is_wide(t)) return pipe;
    const int wi = vkw_type_index(t->type);
    if (pipe == VKP_MMVQ_Q4_0) return VKP_MMVQ_Q4_0_W;
    if (pipe == VKP_MMVQ_Q8_0) return VKP_MMVQ_Q8_0_W;
    if (pipe >= VKP_GET_ROWS && pipe < VKP_GET_ROWS + VKP_N_TYPES) return VKP_GET_ROWS_W + wi;
    if (pipe >= VKP_MMV && pipe < VKP_MMV + VKP_N_TYPES) return VKP_MMV_W + wi;
    if (pipe >= VKP_MM && pipe < VKP_MM + VKP_N_TYPES) return VKP_MM_W + wi;
    return pipe;
}

void vkw_describe(int id, vkp_desc *d) {
    if (id >= VKP_GET_ROWS_W && id < VKP_GET_ROWS_W + VKW_N_TYPES) {
        snprintf(d->name, sizeof d->name, "get_rows_%s_w", k_wide[id - VKP_GET_ROWS_W].name);
        d->n_bind = 3; d->pc_size = 40; d->spec = VKP_SPEC_NONE;
    } else if (id >= VKP_MMV_W && id < VKP_MMV_W + VKW_N_TYPES) {
        snprintf(d->name, sizeof d->name, "mul_mat_vec_%s_w", k_wide[id - VKP_MMV_W].name);
        d->n_bind = 3; d->pc_size = 44; d->spec = VKP_SPEC_MV; d->has_sg = true;
    } else if (id >= VKP_MM_W && id < VKP_MM_W + VKW_N_TYPES) {
        snprintf(d->name, sizeof d->name, "mul_mm_%s_w", k_wide[id - VKP_MM_W].name);
        d->n_bind = 3; d->pc_size = 44; d->spec = VKP_SPEC_MM; d->has_f16 = true;
    } else if (id == VKP_MMV_Q4_K_W || id == VKP_MMV_Q5_K_W) {
        snprintf(d->name, sizeof d->name, "mul_mat_vec_%s_w", id == VKP_MMV_Q4_K_W ? "q4_k" : "q5_k");
        d->n_bind = 3; d->pc_size = 44; d->spec = VKP_SPEC_MV; d->has_sg = true;
    } else if (id == VKP_MMVQ_Q4_0_W || id == VKP_MMVQ_Q8_0_W) {
        snprintf(d->name, sizeof d->name, "mul_mat_vecq_%s_w", id == VKP_MMVQ_Q4_0_W ? "q4_0" : "q8_0");
        d->n_bind = 3; d->pc_size = 44; d->spec = VKP_SPEC_MV; d->has_sg = true;
    }
}

/* Rows [r0, r1) of the storage that chunk ch holds. */
static void chunk_rows(const vk_storage *s, const vk_chunk *ch, int64_t *r0, int64_t *r1) {
    *r0 = (int64_t)(ch->begin / s->wide_stride);
    *r1 = (int64_t)((ch->begin + ch->size) / s->wide_stride);
}

/* Packs GGUF rows [row0, row0 + n) from src into the storage of t. */
static void put_rows(vk_ctx *c, const be_tensor *t, int64_t row0, int64_t n, const uint8_t *src) {
    vk_storage *s = t->storage;
    const size_t lrb = be_row_bytes(t), stride = s->wide_stride;
    const int64_t per_piece = PIECE_BYTES / stride > 0 ? (int64_t)(PIECE_BYTES / stride) : 1;
    uint8_t *tmp = NULL;
    for (int i = 0; i < s->n_chunks && !be_failed(&c->base); i++) {
        vk_chunk *ch = &s->chunk[i];
        int64_t c0, c1;
        chunk_rows(s, ch, &c0, &c1);
        const int64_t a = row0 > c0 ? row0 : c0, b = row0 + n < c1 ? row0 + n : c1;
        /* UMA and idle (the test of vk_cmd.c's direct write): pack straight into the mapped rows */
        const bool busy = c->recording && (ch->write_epoch >= c->cmd_epoch0 || ch->read_epoch >= c->cmd_epoch0);
        for (int64_t r = a; r < b && !be_failed(&c->base); r += per_piece) {
            const int64_t m = b - r < per_piece ? b - r : per_piece;
            const uint8_t *from = src + (size_t)(r - row0) * lrb;
            const size_t local = (size_t)(r - c0) * stride;
            if (ch->mapped && !busy) { vkw_pack_rows(t->type, t->cols, from, ch->mapped + local, m); continue; }
            if (!tmp && !(tmp = malloc((size_t)per_piece * stride))) { be_fail(&c->base, "out of host memory"); break; }
            vkw_pack_rows(t->type, t->cols, from, tmp, m);
            vk_record_upload(c, ch, local, tmp, (size_t)m * stride);
        }
    }
    free(tmp);
}

be_tensor *vkw_weight_new(vk_ctx *c, uint32_t type, int64_t cols, int64_t rows, const void *host) {
    const size_t stride = vkw_row_stride(type, cols);
    if (!stride || rows <= 0) { anv_set_error("vulkan: bad repacked weight shape %lld x %lld", (long long)rows, (long long)cols); return NULL; }
    if ((uint64_t)rows > SIZE_MAX / stride) { anv_set_error("vulkan: tensor too large"); return NULL; }
    be_tensor *t = calloc(1, sizeof *t);
    if (!t) { anv_set_error("out of host memory"); return NULL; }
    vk_storage *s = vk_storage_new(c, stride * (size_t)rows, stride, true);
    if (!s) { free(t); return NULL; }
    s->wide_stride = stride;
    s->wide_cols = cols;
    t->storage = s;
    t->be = &c->base; t->type = type; t->cols = cols; t->rows = rows; t->owned = true;
    if (host) put_rows(c, t, 0, rows, host);
    if (be_failed(&c->base)) { anv_set_error("%s", be_sticky_error(&c->base)); vk_storage_free(c, s); free(t); return NULL; }
    return t;
}

void vkw_upload(vk_ctx *c, be_tensor *t, size_t off, const void *src, size_t n) {
    const size_t lrb = be_row_bytes(t), lo = t->offset + off;
    const vk_storage *s = t->storage;
    if (lo % lrb || n % lrb || vkw_base(t) == SIZE_MAX) {
        be_fail(&c->base, "vulkan: an upload into a repacked weight must cover whole rows (%zu bytes at %zu, rows of %zu)", n, lo, lrb);
        return;
    }
    if ((lo + n) / lrb * s->wide_stride > s->total) { be_fail(&c->base, "vulkan: upload of %zu bytes at %zu past the end of a repacked weight", n, lo); return; }
    put_rows(c, t, (int64_t)(lo / lrb), (int64_t)(n / lrb), src);
}

void vkw_download(vk_ctx *c, const be_tensor *t, size_t off, void *dst, size_t n) {
    vk_storage *s = t->storage;
    const size_t lrb = be_row_bytes(t), stride = s->wide_stride, lo = t->offset + off, hi = lo + n;
    if (n == 0) return;
    if (t->cols != s->wide_cols || (hi + lrb - 1) / lrb * stride > s->total) {
        be_fail(&c->base, "vulkan: download of %zu bytes at %zu outside a repacked weight", n, lo);
        memset(dst, 0, n);
        return;
    }
    const int64_t row0 = (int64_t)(lo / lrb), row1 = (int64_t)((hi + lrb - 1) / lrb);
    const int64_t per_piece = PIECE_BYTES / stride > 0 ? (int64_t)(PIECE_BYTES / stride) : 1;
    uint8_t *packed = malloc((size_t)per_piece * stride), *rows = malloc((size_t)per_piece * lrb);
    if (!packed || !rows) be_fail(&c->base, "out of host memory");
    for (int i = 0; i < s->n_chunks && !be_failed(&c->base); i++) {
        vk_chunk *ch = &s->chunk[i];
        int64_t c0, c1;
        chunk_rows(s, ch, &c0, &c1);
        const int64_t a = row0 > c0 ? row0 : c0, b = row1 < c1 ? row1 : c1;
        for (int64_t r = a; r < b && !be_failed(&c->base); r += per_piece) {
            const int64_t m = b - r < per_piece ? b - r : per_piece;
            vk_record_download(c, ch, (size_t)(r - c0) * stride, packed, (size_t)m * stride);
            if (vk_flush(c) != 0) break;
            vkw_unpack_rows(t->type, t->cols, packed, rows, m);
            /* logical bytes [r * lrb, (r + m) * lrb) intersected with [lo, hi) */
            const size_t p0 = (size_t)r * lrb > lo ? (size_t)r * lrb : lo, p1 = (size_t)(r + m) * lrb < hi ? (size_t)(r + m) * lrb : hi;
            memcpy((uint8_t *)dst + (p0 - lo), rows + (p0 - (size_t)r * lrb), p1 - p0);
        }
    }
    free(packed);
    free(rows);
    if (be_failed(&c->base)) memset(dst, 0, n);
}
