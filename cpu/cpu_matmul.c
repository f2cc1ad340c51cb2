/* cpu_matmul: the matmul driver (activation quantization once per call, rows split over
 * threads, tiles of tokens per pass over a block of weight rows) and the
 * scalar dot kernels of every weight type. SIMD kernels live in matmul_avx2.c/_avx512.c. */
#include "cpu_internal.h"
#include "cpu_kernels.h"
#include "error.h"
#include "fp16.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- activation quantizers (scalar) ---- */

static void quant_q8x_scalar(const float *x, void *yv, int64_t n) {
    blk_q8x *y = yv;
    for (int64_t b = 0; b < n / 32; b++) {
        const float *xb = x + b * 32;
        float amax = 0;
        for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(xb[i]));
        const float d = amax / 127.0f, id = d > 0 ? 1.0f / d : 0.0f;
        int sum = 0;
        for (int i = 0; i < 32; i++) { y[b].qs[i] = (int8_t)lrintf(xb[i] * id); sum += y[b].qs[i]; }
        y[b].d = d;
        y[b].s = d * (float)sum;
    }
}

static void quant_q8k_scalar(const float *x, void *yv, int64_t n) {
    block_q8_K *y = yv;
    for (int64_t b = 0; b < n / QK_K; b++) {
        const float *xb = x + b * QK_K;
        float amax = 0;
        for (int i = 0; i < QK_K; i++) amax = fmaxf(amax, fabsf(xb[i]));
        const float d = amax / 127.0f, id = d > 0 ? 1.0f / d : 0.0f;
        for (int i = 0; i < QK_K; i++) y[b].qs[i] = (int8_t)lrintf(xb[i] * id);
        for (int j = 0; j < QK_K / 16; j++) {
            int s = 0;
            for (int i = 0; i < 16; i++) s += y[b].qs[j * 16 + i];
            y[b].bsums[j] = (int16_t)s;
        }
        y[b].d = d;
    }
}

/* ---- scalar dot kernels: 32-element types against blk_q8x ---- */

#define ACT_ROW(x, xs, t) ((const void *)((const uint8_t *)(x) + (size_t)(t) * (xs)))

static void dot_q4_0(int64_t n, const void *w, const void *x, size_t xs, int nt, float *res) {
    const block_q4_0 *b = w;
    for (int t = 0; t < nt; t++) {
        const blk_q8x *y = ACT_ROW(x, xs, t);
        float acc = 0;
        for (int64_t i = 0; i < n / 32; i++) {
            int s = 0;
            for (int j = 0; j < 16; j++)
                s += ((b[i].qs[j] & 0xF) - 8) * y[i].qs[j] + ((b[i].qs[j] >> 4) - 8) * y[i].qs[j + 16];
            acc += fp16_to_fp32(b[i].d) * y[i].d * (float)s;
        }
        res[t] = acc;
    }
}

static void dot_q4_1(int64_t n, const void *w, const void *x, size_t xs, int nt, float *res) {
    const block_q4_1 *b = w;
    for (int t = 0; t < nt; t++) {
        const blk_q8x *y = ACT_ROW(x, xs, t);
        float acc = 0;
        for (int64_t i = 0; i < n / 32; i++) {
            int s = 0;
            for (int j = 0; j < 16; j++) s += (b[i].qs[j] & 0xF) * y[i].qs[j] + (b[i].qs[j] >> 4) * y[i].qs[j + 16];
            acc += fp16_to_fp32(b[i].d) * y[i].d * (float)s + fp16_to_fp32(b[i].m) * y[i].s;
        }
        res[t] = acc;
    }
}

/* 5-bit quant j (0..31) of a Q5_0/Q5_1 block: nibble plus bit j of qh. */
static inline int q5_value(const uint8_t *qs, const uint8_t *qh4, int j) {
    uint32_t qh;
    memcpy(&qh, qh4, 4);
    const int nib = j < 16 ? (qs[j] & 0xF) : (qs[j - 16] >> 4);
    return nib | (int)(((qh >> j) & 1u) << 4);
}

static void dot_q5_0(int64_t n, const void *w, const void *x, size_t xs, int nt, float *res) {
    const block_q5_0 *b = w;
    for (int t = 0; t < nt; t++) {
        const blk_q8x *y = ACT_ROW(x, xs, t);
        float acc = 0;
        for (int64_t i = 0; i < n / 32; i++) {
            int s = 0;
            for (int j = 0; j < 32; j++) s += (q5_value(b[i].qs, b[i].qh, j) - 16) * y[i].qs[j];
            acc += fp16_to_fp32(b[i].d) * y[i].d * (float)s;
        }
        res[t] = acc;
    }
}

static void dot_q5_1(int64_t n, const void *w, const void *x, size_t xs, int nt, float *res) {
    const block_q5_1 *b = w;
    for (int t = 0; t < nt; t++) {
        const blk_q8x *y = ACT_ROW(x, xs, t);
        float acc = 0;
        for (int64_t i = 0; i < n / 32; i++) {
            int s = 0;
            for (int j = 0; j < 32; j++) s += q5_value(b[i].qs, b[i].qh, j) * y[i].qs[j];
            acc += fp16_to_fp32(b[i].d) * y[i].d * (float)s + fp16_to_fp32(b[i].m) * y[i].s;
        }
        res[t] = acc;
    }
}

static void dot_q8_0(int64_t n, const void *w, const void *x, size_t xs, int nt, float *res) {
    const block_q8_0 *b = w;
    for (int t = 0; t < nt; t++) {
        const blk_q8x *y = ACT_ROW(x, xs, t);
        float acc = 0;
        for (int64_t i = 0; i < n / 32; i++) {
            int s = 0;
            for (int j = 0; j < 32; j++) s += b[i].qs[j] * y[i].qs[j];
            acc += fp16_to_fp32(b[i].d) * y[i].d * (float)s;
        }
        res[t] = acc;
    }
}

/* ---- scalar dot kernels: K-quants, via one generic decoded form ----
 * A block decodes to w[i] = d * sc[i/16] * q[i] - dmin * m[i/16], so
 * dot = dx * (d * sum_j sc_j * (q_j . y_j) - dmin * sum_j m_j * bsum_j). */

typedef struct { float d, dmin; int8_t q[QK_K]; int16_t sc[16], m[16]; } kdecoded;

static void decode_q2_K(const void *blk, kdecoded *o) {
    const block_q2_K *b = blk;
    o->d = fp16_to_fp32(b->d);
    o->dmin = fp16_to_fp32(b->dmin);
    for (int j = 0; j < 16; j++) { o->sc[j] = b->scales[j] & 0xF; o->m[j] = b->scales[j] >> 4; }
    int8_t *q = o->q;
    for (int half = 0; half < 2; half++) {
        const uint8_t *qs = b->qs + 32 * half;
        for (int shift = 0; shift < 8; shift += 2)
            for (int l = 0; l < 32; l++) *q++ = (int8_t)((qs[l] >> shift) & 3);
    }
}

static void decode_q3_K(const void *blk, kdecoded *o) {
    const block_q3_K *b = blk;
    int8_t sc[16];
    q3k_scales(b->scales, sc);
    o->d = fp16_to_fp32(b->d);
    o->dmin = 0;
    for (int j = 0; j < 16; j++) { o->sc[j] = sc[j]; o->m[j] = 0; }
    int8_t *q = o->q;
    uint8_t m = 1;
    for (int half = 0; half < 2; half++) {
        const uint8_t *qs = b->qs + 32 * half;
        for (int shift = 0; shift < 8; shift += 2, m = (uint8_t)(m << 1))
            for (int l = 0; l < 32; l++) *q++ = (int8_t)(((qs[l] >> shift) & 3) - ((b->hmask[l] & m) ? 0 : 4));
    }
}

/* Q4_K/Q5_K: eight 6-bit (scale, min) pairs, each shared by two 16-element groups. */
static void decode_k_scales_mins(const uint8_t *scales, kdecoded *o) {
    for (int j = 0; j < 8; j++) {
        uint8_t sc, m;
        kq_scale_min(j, scales, &sc, &m);
        o->sc[2 * j] = o->sc[2 * j + 1] = sc;
        o->m[2 * j] = o->m[2 * j + 1] = m;
    }
}

static void decode_q4_K(const void *blk, kdecoded *o) {
    const block_q4_K *b = blk;
    o->d = fp16_to_fp32(b->d);
    o->dmin = fp16_to_fp32(b->dmin);
    decode_k_scales_mins(b->scales, o);
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) {
            o->q[64 * c + l] = (int8_t)(b->qs[32 * c + l] & 0xF);
            o->q[64 * c + 32 + l] = (int8_t)(b->qs[32 * c + l] >> 4);
        }
}

static void decode_q5_K(const void *blk, kdecoded *o) {
    const block_q5_K *b = blk;
    o->d = fp16_to_fp32(b->d);
    o->dmin = fp16_to_fp32(b->dmin);
    decode_k_scales_mins(b->scales, o);
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) {
            o->q[64 * c + l] = (int8_t)((b->qs[32 * c + l] & 0xF) | (((b->qh[l] >> (2 * c)) & 1) << 4));
            o->q[64 * c + 32 + l] = (int8_t)((b->qs[32 * c + l] >> 4) | (((b->qh[l] >> (2 * c + 1)) & 1) << 4));
        }
}

static void decode_q6_K(const void *blk, kdecoded *o) {
    const block_q6_K *b = blk;
    o->d = fp16_to_fp32(b->d);
    o->dmin = 0;
    for (int j = 0; j < 16; j++) { o->sc[j] = b->scales[j]; o->m[j] = 0; }
    for (int half = 0; half < 2; half++) {
        const uint8_t *ql = b->ql + 64 * half, *qh = b->qh + 32 * half;
        int8_t *q = o->q + 128 * half;
        for (int l = 0; l < 32; l++) {
            q[l] = (int8_t)(((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
            q[l + 32] = (int8_t)(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
            q[l + 64] = (int8_t)(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
            q[l + 96] = (int8_t)(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
        }
    }
}

typedef void (*kdecode_fn)(const void *blk, kdecoded *o);

static void dot_kquant(kdecode_fn decode, size_t bsize, int64_t n, const void *w, const void *x, size_t xs, int nt, float *res) {
    float acc[MM_MAX_TOK] = {0};
    kdecoded k;
    for (int64_t i = 0; i < n / QK_K; i++) {
        decode((const uint8_t *)w + (size_t)i * bsize, &k);
        for (int t = 0; t < nt; t++) {
            const block_q8_K *y = (const block_q8_K *)ACT_ROW(x, xs, t) + i;
            int32_t sum = 0, msum = 0;
            for (int j = 0; j < 16; j++) {
                int32_t s = 0;
                for (int l = 0; l < 16; l++) s += k.q[16 * j + l] * y->qs[16 * j + l];
                sum += k.sc[j] * s;
                msum += k.m[j] * y->bsums[j];
            }
            acc[t] += y->d * (k.d * (float)sum - k.dmin * (float)msum);
        }
    }
    for (int t = 0; t < nt; t++) res[t] = acc[t];
}

#define KQ_DOT(name, blk)                                                                        \
    static void dot_##name(int64_t n, const void *w, const void *x, size_t xs, int nt, float *res) { \
        dot_kquant(decode_##name, sizeof(blk), n, w, x, xs, nt, res);                          \
    }
KQ_DOT(q2_K, block_q2_K)
KQ_DOT(q3_K, block_q3_K)
KQ_DOT(q4_K, block_q4_K)
KQ_DOT(q5_K, block_q5_K)
KQ_DOT(q6_K, block_q6_K)

/* ---- scalar dot kernels: float weights against F32 activations ---- */

static void dot_f32(int64_t n, const void *w, const void *x, size_t xs, int nt, float *res) {
    const float *a = w;
    for (int t = 0; t < nt; t++) {
        const float *y = ACT_ROW(x, xs, t);
        float acc = 0;
        for (int64_t i = 0; i < n; i++) acc += a[i] * y[i];
        res[t] = acc;
    }
}

static void dot_f16(int64_t n, const void *w, const void *x, size_t xs, int nt, float *res) {
    const uint16_t *a = w;
    for (int t = 0; t < nt; t++) {
        const float *y = ACT_ROW(x, xs, t);
        float acc = 0;
        for (int64_t i = 0; i < n; i++) acc += fp16_to_fp32(a[i]) * y[i];
        res[t] = acc;
    }
}

static void dot_bf16(int64_t n, const void *w, const void *x, size_t xs, int nt, float *res) {
    const uint16_t *a = w;
    for (int t = 0; t < nt; t++) {
        const float *y = ACT_ROW(x, xs, t);
        float acc = 0;
        for (int64_t i = 0; i < n; i++) acc += bf16_to_fp32(a[i]) * y[i];
        res[t] = acc;
    }
}

static float vec_dot_f32_scalar(const float *a, const float *b, int64_t n) {
    float acc[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) acc[l] += a[i + l] * b[i + l];
    for (; i < n; i++) acc[0] += a[i] * b[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

static void vec_mad_f32_scalar(float *y, const float *x, float a, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] += a * x[i];
}

static void cvt_f16_f32_scalar(const uint16_t *src, float *dst, int64_t n) {
    for (int64_t i = 0; i < n; i++) dst[i] = fp16_to_fp32(src[i]);
}

void mm_kernels_scalar(mm_kernels *k) {
    memset(k, 0, sizeof *k);
    const struct { qtype t; act_kind a; mm_dot_fn f; } tab[] = {
        {QT_F32, ACT_F32, dot_f32},   {QT_F16, ACT_F32, dot_f16},   {QT_BF16, ACT_F32, dot_bf16},
        {QT_Q4_0, ACT_Q8X, dot_q4_0}, {QT_Q4_1, ACT_Q8X, dot_q4_1}, {QT_Q5_0, ACT_Q8X, dot_q5_0},
        {QT_Q5_1, ACT_Q8X, dot_q5_1}, {QT_Q8_0, ACT_Q8X, dot_q8_0}, {QT_Q2_K, ACT_Q8K, dot_q2_K},
        {QT_Q3_K, ACT_Q8K, dot_q3_K}, {QT_Q4_K, ACT_Q8K, dot_q4_K}, {QT_Q5_K, ACT_Q8K, dot_q5_K},
        {QT_Q6_K, ACT_Q8K, dot_q6_K},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) { k->act[tab[i].t] = tab[i].a; k->dot[tab[i].t] = tab[i].f; }
    k->quant_q8x = quant_q8x_scalar;
    k->quant_q8k = quant_q8k_scalar;
    k->vec_dot_f32 = vec_dot_f32_scalar;
    k->vec_mad_f32 = vec_mad_f32_scalar;
    k->cvt_f16_f32 = cvt_f16_f32_scalar;
    attn_tile_install_scalar(k);
}

/* ---- driver ---- */

/* Weight rows per cache tile: all token tiles pass over them while they sit in L1/L2. */
#define MM_ROW_TILE 16

typedef struct {
    mm_dot_fn dot;
    mm_dot4_fn dot4;
    int dot4_nt;
    mm_gemm_fn gemm;
    int gemm_rows;
    mm_quant_fn quant;
    const uint8_t *w;
    size_t w_rb;
    int64_t cols, rows;
    const float *x;
    uint8_t *xq;         /* quantized activations (or NULL: dot reads x) */
    size_t xq_rb;
    float *out;
    int n_tok;
    bool accumulate;
    int64_t rows_per_chunk;
} mm_job;

static void mm_quant_chunk(void *ctx, int64_t t, int ith) {
    (void)ith;
    mm_job *j = ctx;
    j->quant(j->x + t * j->cols, j->xq + (size_t)t * j->xq_rb, j->cols);
}

/* One chunk = row tiles of MM_ROW_TILE weight rows against every token: groups of four rows
 * go through dot4 (dot4_nt tokens per call) where the type has one, the rest through dot
 * (MM_MAX_TOK tokens per call). */
static void mm_chunk(void *ctx, int64_t chunk, int ith) {
    (void)ith;
    mm_job *j = ctx;
    const uint8_t *act = j->xq ? j->xq : (const uint8_t *)j->x;
    const size_t act_rb = j->xq ? j->xq_rb : (size_t)j->cols * sizeof(float);
    const int64_t r0 = chunk * j->rows_per_chunk;
    const int64_t r1 = r0 + j->rows_per_chunk < j->rows ? r0 + j->rows_per_chunk : j->rows;
    for (int64_t rb = r0; rb < r1; rb += MM_ROW_TILE) {
        const int64_t re = rb + MM_ROW_TILE < r1 ? rb + MM_ROW_TILE : r1;
        int64_t r4 = rb; /* rows [rb, r4) go through gemm or dot4 */
        if (j->gemm) {
            r4 = rb + (re - rb) / j->gemm_rows * j->gemm_rows;
            for (int64_t r = rb; r < r4; r += j->gemm_rows)
                j->gemm(j->cols, j->w + (size_t)r * j->w_rb, j->w_rb, act, act_rb, j->n_tok, j->out + r, j->rows, j->accumulate);
        } else if (j->dot4) {
            r4 = rb + (re - rb) / 4 * 4;
            float res4[4 * MM_MAX_TOK4];
            for (int t0 = 0; t0 < j->n_tok; t0 += j->dot4_nt) {
                const int nt = j->n_tok - t0 < j->dot4_nt ? j->n_tok - t0 : j->dot4_nt;
                for (int64_t r = rb; r < r4; r += 4) {
                    j->dot4(j->cols, j->w + (size_t)r * j->w_rb, j->w_rb, act + (size_t)t0 * act_rb, act_rb, nt, res4);
                    for (int t = 0; t < nt; t++) {
                        float *o = j->out + (int64_t)(t0 + t) * j->rows + r;
                        for (int k = 0; k < 4; k++) o[k] = j->accumulate ? o[k] + res4[4 * t + k] : res4[4 * t + k];
                    }
                }
            }
        }
        float res[MM_MAX_TOK];
        for (int t0 = 0; t0 < j->n_tok && r4 < re; t0 += MM_MAX_TOK) {
            const int nt = j->n_tok - t0 < MM_MAX_TOK ? j->n_tok - t0 : MM_MAX_TOK;
            for (int64_t r = r4; r < re; r++) {
                j->dot(j->cols, j->w + (size_t)r * j->w_rb, act + (size_t)t0 * act_rb, act_rb, nt, res);
                float *o = j->out + (int64_t)t0 * j->rows + r;
                for (int t = 0; t < nt; t++, o += j->rows) *o = j->accumulate ? *o + res[t] : res[t];
            }
        }
    }
}

/* ---- driver for repacked weights (repack.h): chunks of whole 16-row groups ---- */

#define PK_MIN_TOK_Q5 4

typedef struct {
    mm_packed_fn fn;
    const uint8_t *pk;
    size_t group_bytes;
    int64_t nb, rows, groups_per_chunk;
    const uint8_t *xq;
    size_t xq_rb;        /* what the kernel gets as act_rb */
    size_t tile_bytes;   /* activation bytes per token tile */
    float *out;
    int n_tok, tile;     /* tokens, tokens per kernel call */
    bool accumulate;
} pk_job;

/* One chunk = groups of 16 rows; per group all token tiles pass while the group's weights
 * (a few KiB to tens of KiB) stay in L1/L2. */
static void pk_chunk(void *ctx, int64_t chunk, int ith) {
    (void)ith;
    const pk_job *j = ctx;
    const int64_t n_groups = (j->rows + PK_ROWS - 1) / PK_ROWS;
    const int64_t g0 = chunk * j->groups_per_chunk;
    const int64_t g1 = g0 + j->groups_per_chunk < n_groups ? g0 + j->groups_per_chunk : n_groups;
    for (int64_t g = g0; g < g1; g++) {
        const int64_t r0 = g * PK_ROWS, nr = j->rows - r0 < PK_ROWS ? j->rows - r0 : PK_ROWS;
        const uint32_t mask = nr == PK_ROWS ? 0xFFFFu : (1u << nr) - 1u;
        for (int t0 = 0; t0 < j->n_tok; t0 += j->tile) {
            const int nt = j->n_tok - t0 < j->tile ? j->n_tok - t0 : j->tile;
            j->fn(j->nb, j->pk + (size_t)g * j->group_bytes, j->xq + (size_t)(t0 / j->tile) * j->tile_bytes, j->xq_rb, nt,
                  j->out + (int64_t)t0 * j->rows + r0, j->rows, mask, j->accumulate);
        }
    }
}

typedef struct { mm_quant_fn quant; const float *x; int64_t cols; uint8_t *xq; size_t xq_rb; int n_tok; } pk_quant_job;

static void pk_quant_chunk(void *ctx, int64_t t, int ith) {
    (void)ith;
    const pk_quant_job *q = ctx;
    q->quant(q->x + t * q->cols, q->xq + (size_t)t * q->xq_rb, q->cols);
}

/* Float kernels: token tile `tile` of the F32 rows transposed to [k][PKF_MAX_TOK]. */
static void pk_transpose_chunk(void *ctx, int64_t tile, int ith) {
    (void)ith;
    const pk_quant_job *q = ctx;
    float *dst = (float *)(void *)q->xq + (size_t)tile * (size_t)q->cols * PKF_MAX_TOK;
    const int t0 = (int)tile * PKF_MAX_TOK, nt = q->n_tok - t0 < PKF_MAX_TOK ? q->n_tok - t0 : PKF_MAX_TOK;
    for (int t = 0; t < nt; t++) {
        const float *src = q->x + (int64_t)(t0 + t) * q->cols;
        for (int64_t k = 0; k < q->cols; k++) dst[(size_t)k * PKF_MAX_TOK + (size_t)t] = src[k];
    }
}

/* Scratch bytes a packed matmul's activations take (0: the kernel reads x as it is). */
static size_t pk_scratch_bytes(const cpu_packed *p, int n_tok) {
    const bool kq = p->type == QT_Q4_K || p->type == QT_Q5_K || p->type == QT_Q6_K; /* 256-element superblocks */
    if (p->type == QT_F16 || p->type == QT_BF16) {
        if (n_tok < 4) return 0;
        return (size_t)p->cols * PKF_MAX_TOK * sizeof(float) * (size_t)((n_tok + PKF_MAX_TOK - 1) / PKF_MAX_TOK);
    }
    const int64_t nb = kq ? p->cols / QK_K : p->cols / 32;
    return (size_t)nb * (kq ? sizeof(blk_q8ks) : sizeof(blk_q8s)) * (size_t)n_tok;
}

/* Converts the activations into xq (pk_scratch_bytes of them) and fills *j; returns the
 * chunk count (about `chunks` of them, whole groups). */
static int64_t pk_prepare(cpu_ctx *c, const cpu_packed *p, const float *x, float *out, int n_tok, bool accumulate, uint8_t *xq,
                          int64_t chunks, pk_job *j) {
    const mm_kernels *k = &c->kernels;
    const bool kq = p->type == QT_Q4_K || p->type == QT_Q5_K || p->type == QT_Q6_K;
    const bool fl = p->type == QT_F16 || p->type == QT_BF16; /* F32 activations as they are; nb = columns */
    const int64_t nb = fl ? p->cols : kq ? p->cols / QK_K : p->cols / 32;
    pk_quant_job q = {.quant = kq ? k->quant_q8ks : k->quant_q8s, .x = x, .cols = p->cols, .n_tok = n_tok,
                      .xq_rb = fl ? (size_t)p->cols * sizeof(float) : (size_t)nb * (kq ? sizeof(blk_q8ks) : sizeof(blk_q8s))};
    const int tile = k->packed_nt[p->type] ? k->packed_nt[p->type] : PK_MAX_TOK;
    size_t tile_bytes = q.xq_rb * (size_t)tile;
    if (fl && n_tok < 4) {
        q.xq = (uint8_t *)(uintptr_t)x; /* the rows as they are */
    } else if (fl) {
        const int64_t tiles = (n_tok + PKF_MAX_TOK - 1) / PKF_MAX_TOK;
        tile_bytes = (size_t)p->cols * PKF_MAX_TOK * sizeof(float);
        q.xq = xq;
        if (tiles == 1) pk_transpose_chunk(&q, 0, 0);
        else tp_run(c->tp, pk_transpose_chunk, &q, tiles);
        q.xq_rb = 0;
    } else {
        q.xq = xq;
        if (n_tok <= MM_MAX_TOK) {
            for (int t = 0; t < n_tok; t++) pk_quant_chunk(&q, t, 0);
        } else {
            tp_run(c->tp, pk_quant_chunk, &q, n_tok);
        }
    }
    const int64_t n_groups = (p->rows + PK_ROWS - 1) / PK_ROWS;
    int64_t gpc = n_groups / (chunks > 0 ? chunks : 1);
    if (gpc < 1) gpc = 1;
    *j = (pk_job){.fn = k->packed[p->type], .pk = p->data, .group_bytes = p->group_bytes, .nb = nb, .rows = p->rows,
                  .groups_per_chunk = gpc, .xq = q.xq, .xq_rb = q.xq_rb, .tile_bytes = tile_bytes, .out = out, .n_tok = n_tok,
                  .tile = tile, .accumulate = accumulate};
    return (n_groups + gpc - 1) / gpc;
}

static int cpu_matmul_packed(cpu_ctx *c, const cpu_packed *p, const float *x, float *out, int n_tok, bool accumulate) {
    const size_t sb = pk_scratch_bytes(p, n_tok);
    uint8_t *xq = sb ? cpu_scratch(c, sb) : NULL;
    if (sb && !xq) return -1;
    pk_job j;
    const int64_t n_chunks = pk_prepare(c, p, x, out, n_tok, accumulate, xq, 8 * (int64_t)c->n_threads, &j);
    tp_run(c->tp, pk_chunk, &j, n_chunks);
    return 0;
}

/* Checks a matmul's type and shape: 0, or -1 + error. */
static int mm_check(const mm_kernels *k, uint32_t wtype, int64_t cols, int n_tok) {
    const qtype_info *qi = qtype_get(wtype);
    if (!qi || wtype >= QT_COUNT || !k->dot[wtype]) {
        anv_set_error("cpu matmul: weight type %s not supported", qi ? qi->name : "(unknown id)");
        return -1;
    }
    if (cols % qi->block_size != 0 || n_tok < 0) {
        anv_set_error("cpu matmul: %lld columns is not a multiple of the %s block size %d", (long long)cols, qi->name, qi->block_size);
        return -1;
    }
    return 0;
}

/* Whether the matmul goes through the packed weight (found into *p). The general packed
 * Q5_K kernel below PK_MIN_TOK_Q5 tokens is no faster than the file-layout one (which
 * reads the original bytes, mapped anyway); the 1-3 token mat-vec (matmul_pkq5_avx512.c,
 * packed_gemv) and Q6_K's (pk_q6k_gemv_body) are. */
static bool mm_use_packed(cpu_ctx *c, uint32_t wtype, const void *w, int64_t cols, int64_t rows, int n_tok, cpu_packed *p) {
    const bool q56_small = wtype == QT_Q5_K && n_tok < PK_MIN_TOK_Q5 && !c->kernels.packed_gemv[QT_Q5_K];
    return c->packed.n > 0 && !q56_small && packed_set_find(&c->packed, w, wtype, cols, rows, p);
}

/* Scratch bytes the file-layout matmul's quantized activations take. */
static size_t mm_scratch_bytes(const mm_kernels *k, uint32_t wtype, int64_t cols, int n_tok) {
    return k->act[wtype] == ACT_F32 ? 0 : mm_act_row_bytes(k->act[wtype], cols) * (size_t)n_tok;
}

/* The file-layout matmul: quantizes the activations into xq (mm_scratch_bytes) and fills
 * *j; returns the chunk count (about `chunks`, whole row tiles). */
static int64_t mm_prepare(cpu_ctx *c, uint32_t wtype, const void *w, int64_t cols, int64_t rows, const float *x, float *out, int n_tok,
                          bool accumulate, uint8_t *xq, int64_t chunks, mm_job *j) {
    const mm_kernels *k = &c->kernels;
    /* Up to MM_MAX_TOK tokens (decode steps of a few batched sequences: memory-bound) one
     * sequential weight stream with the tokens in registers beats four interleaved rows. */
    const bool rows4 = n_tok > 2 * MM_MAX_TOK && k->dot4_nt[wtype] > 0;
    *j = (mm_job){.dot = k->dot[wtype], .dot4 = rows4 ? k->dot4[wtype] : NULL, .dot4_nt = k->dot4_nt[wtype],
                  .gemm = n_tok > 2 * MM_MAX_TOK ? k->gemm[wtype] : NULL, .gemm_rows = k->gemm_rows[wtype], .w = w, .w_rb = qtype_row_size((qtype)wtype, cols), .cols = cols, .rows = rows,
                  .x = x, .out = out, .n_tok = n_tok, .accumulate = accumulate};
    const act_kind a = k->act[wtype];
    if (a != ACT_F32) {
        j->quant = a == ACT_Q8X ? k->quant_q8x : k->quant_q8k;
        j->xq_rb = mm_act_row_bytes(a, cols);
        j->xq = xq;
        if (n_tok <= MM_MAX_TOK) {   /* a few rows: waking the pool costs more than it saves */
            for (int t = 0; t < n_tok; t++) mm_quant_chunk(j, t, 0);
        } else {
            tp_run(c->tp, mm_quant_chunk, j, n_tok);
        }
    }
    const int64_t tiles = (rows + MM_ROW_TILE - 1) / MM_ROW_TILE;
    int64_t tiles_per_chunk = tiles / (chunks > 0 ? chunks : 1);
    if (tiles_per_chunk < 1) tiles_per_chunk = 1;
    j->rows_per_chunk = tiles_per_chunk * MM_ROW_TILE;
    return (rows + j->rows_per_chunk - 1) / j->rows_per_chunk;
}

int cpu_matmul(cpu_ctx *c, uint32_t wtype, const void *w, int64_t cols, int64_t rows, const float *x, float *out, int n_tok, bool accumulate) {
    const mm_kernels *k = &c->kernels;
    if (mm_check(k, wtype, cols, n_tok) != 0) return -1;
    if (n_tok == 0 || rows == 0) return 0;
    cpu_packed p;
    if (mm_use_packed(c, wtype, w, cols, rows, n_tok, &p)) return cpu_matmul_packed(c, &p, x, out, n_tok, accumulate);
    const size_t sb = mm_scratch_bytes(k, wtype, cols, n_tok);
    uint8_t *xq = sb ? cpu_scratch(c, sb) : NULL;
    if (sb && !xq) return -1;
    mm_job j;
    /* ~8 chunks per thread (whole row tiles): enough to rebalance when a thread is slow or
     * descheduled, few enough that claiming them costs nothing. */
    const int64_t n_chunks = mm_prepare(c, wtype, w, cols, rows, x, out, n_tok, accumulate, xq, 8 * (int64_t)c->n_threads, &j);
    tp_run(c->tp, mm_chunk, &j, n_chunks);
    return 0;
}

/* ---- several independent matmuls in one pool job (cpu_matmul_many) ---- */

typedef struct {
    bool packed;
    pk_job pk;
    mm_job mm;
    int64_t first; /* the job's first chunk */
} mm_part;

typedef struct { mm_part *parts; int n; } mm_multi;

static void multi_chunk(void *ctx, int64_t chunk, int ith) {
    const mm_multi *m = ctx;
    int i = 0;
    while (i + 1 < m->n && chunk >= m->parts[i + 1].first) i++;
    mm_part *p = &m->parts[i];
    if (p->packed) pk_chunk(&p->pk, chunk - p->first, ith);
    else mm_chunk(&p->mm, chunk - p->first, ith);
}

int cpu_matmul_many(cpu_ctx *c, const cpu_mm_item *items, int n) {
    const mm_kernels *k = &c->kernels;
    if (n <= 0) return 0;
    if (n > CPU_MM_MANY_MAX) { anv_set_error("cpu matmul_many: %d matmuls (at most %d)", n, CPU_MM_MANY_MAX); return -1; }
    mm_part parts[CPU_MM_MANY_MAX];
    cpu_packed pk[CPU_MM_MANY_MAX];
    size_t off[CPU_MM_MANY_MAX + 1];
    int64_t total_rows = 0;
    off[0] = 0;
    for (int i = 0; i < n; i++) {
        const cpu_mm_item *it = &items[i];
        if (mm_check(k, it->wtype, it->cols, it->n_tok) != 0) return -1;
        parts[i].packed = mm_use_packed(c, it->wtype, it->w, it->cols, it->rows, it->n_tok, &pk[i]);
        const size_t sb = parts[i].packed ? pk_scratch_bytes(&pk[i], it->n_tok) : mm_scratch_bytes(k, it->wtype, it->cols, it->n_tok);
        off[i + 1] = off[i] + (sb + 63) / 64 * 64;
        total_rows += it->n_tok > 0 ? it->rows : 0;
    }
    uint8_t *scratch = off[n] ? cpu_scratch(c, off[n]) : NULL;
    if (off[n] && !scratch) return -1;
    /* ~8 chunks per thread over all of them, each matmul's share by its rows */
    int64_t n_chunks = 0;
    int m = 0;
    for (int i = 0; i < n; i++) {
        const cpu_mm_item *it = &items[i];
        if (it->n_tok == 0 || it->rows == 0) continue;
        const int64_t want = 8 * (int64_t)c->n_threads * it->rows / (total_rows > 0 ? total_rows : 1);
        mm_part *p = &parts[m];
        p->packed = parts[i].packed;
        if (p->packed && m != i) pk[m] = pk[i];
        const int64_t nc = p->packed ? pk_prepare(c, &pk[m], it->x, it->out, it->n_tok, false, scratch + off[i], want, &p->pk)
                                     : mm_prepare(c, it->wtype, it->w, it->cols, it->rows, it->x, it->out, it->n_tok, false,
                                                  scratch + off[i], want, &p->mm);
        p->first = n_chunks;
        n_chunks += nc;
        m++;
    }
    mm_multi job = {parts, m};
    tp_run(c->tp, multi_chunk, &job, n_chunks);
    return 0;
}
