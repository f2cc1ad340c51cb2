/* cpu_kernels: the internal contract between the CPU matmul driver (cpu_matmul.c) and
 * its per-ISA dot-product kernels (cpu_matmul.c scalar, matmul_avx2.c, matmul_avx512.c).
 * Activations are quantized once per matmul: to blk_q8x (32-element types) or Q8_K
 * (K-quants); float weight types read the F32 activations directly. */
#ifndef ANVIL_CPU_KERNELS_H
#define ANVIL_CPU_KERNELS_H
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "quant.h"

/* Q8 activation block for the 32-element weight types: x ~= d * qs, s = d * sum(qs). */
typedef struct { float d; float s; int8_t qs[32]; } blk_q8x;

typedef enum { ACT_F32 = 0, ACT_Q8X = 1, ACT_Q8K = 2 } act_kind;

/* Q8 activation block of the packed kernels: the same quants and d as blk_q8x, with the
 * exact integer sum of qs (the packed kernels fold weight offsets in as integers). */
typedef struct { float d; int32_t sum; int8_t qs[32]; } blk_q8s;
/* The packed K-quant kernels' activation: Q8_K's quants and d with the 16- and 32-element
 * sums as int16 (pairs of them are vpdpwssd broadcast operands). */
typedef struct { float d; int16_t bs16[16]; int16_t bs32[8]; int8_t qs[QK_K]; } blk_q8ks;

/* Tokens one kernel call handles against one weight row (weights decoded once). */
#define MM_MAX_TOK 4

/* res[t] = dot(weight row w of n elements, activation row t), t < nt <= MM_MAX_TOK.
 * Activation row t starts at (const uint8_t *)x + t * x_stride (F32, blk_q8x or block_q8_K). */
typedef void (*mm_dot_fn)(int64_t n, const void *w, const void *x, size_t x_stride, int nt, float *res);
typedef void (*mm_quant_fn)(const float *x, void *y, int64_t n);
/* Four weight rows (w + r * w_rb, r < 4) against nt <= dot4_nt[type] <= MM_MAX_TOK4 tokens:
 * res[t * 4 + r]. */
#define MM_MAX_TOK4 8
typedef void (*mm_dot4_fn)(int64_t n, const void *w, size_t w_rb, const void *x, size_t x_stride, int nt, float *res);

/* Prompt-sized batches: gemm_rows[type] weight rows (w + r * w_rb) against all n_tok
 * tokens, out[t * out_stride + r] (+)= row r . token t. The weights are decoded once per
 * slab of blocks and token chunk (not once per token tile), which is what the 256-element
 * i-quants' grid lookups need. */
typedef void (*mm_gemm_fn)(int64_t n, const void *w, size_t w_rb, const void *x, size_t x_stride, int n_tok, float *out,
                            int64_t out_stride, bool accumulate);

/* Packed weights (repack.h): one group of 16 rows (grp, nb blocks of 32) x nt <= PK_MAX_TOK
 * tokens of blk_q8s (token t at act + t * act_rb): out[t * out_stride + r] (+)= row r for the
 * rows set in mask. */
#define PK_MAX_TOK 8
/* The float kernels' token tile (F16/BF16 weights, F32 activations): act_rb > 0 (at most 3
 * tokens): the F32 rows; act_rb == 0: the tile transposed, x[t][k] at act[k * PKF_MAX_TOK + t]. */
#define PKF_MAX_TOK 16
typedef void (*mm_packed_fn)(int64_t nb, const uint8_t *grp, const void *act, size_t act_rb, int nt, float *out,
                             int64_t out_stride, uint32_t mask, bool accumulate);

typedef struct {
    act_kind act[QT_COUNT];
    mm_packed_fn packed[QT_COUNT]; /* NULL: the type is not repacked for this kernel set */
    uint8_t packed_nt[QT_COUNT];   /* tokens one packed call takes (0: PK_MAX_TOK) */
    bool packed_gemv[QT_COUNT];    /* Q5_K: the packed kernel is also the faster one below 4 tokens */
    mm_quant_fn quant_q8s;        /* activations of the packed 32-element kernels (NULL: none) */
    mm_quant_fn quant_q8ks;       /* activations of the packed K-quant kernels (NULL: none) */
    mm_dot_fn dot[QT_COUNT];   /* NULL: type not supported by matmul */
    mm_dot4_fn dot4[QT_COUNT]; /* optional 4-row form (NULL: rows go one by one) */
    uint8_t dot4_nt[QT_COUNT]; /* tokens one dot4 call takes at most (register budget) */
    mm_gemm_fn gemm[QT_COUNT];   /* optional, above 2 * MM_MAX_TOK tokens (before dot4) */
    uint8_t gemm_rows[QT_COUNT]; /* rows one gemm call takes (divides MM_ROW_TILE) */
    mm_quant_fn quant_q8x, quant_q8k;
    /* Float helpers (attention): dot, y += a * x, F16 -> F32. */
    float (*vec_dot_f32)(const float *a, const float *b, int64_t n);
    void (*vec_mad_f32)(float *y, const float *x, float a, int64_t n);
    void (*cvt_f16_f32)(const uint16_t *src, float *dst, int64_t n);
    /* Attention over many query rows (cpu_attention.c's tiles): c[r][j] (+)= sum_i a[r][i] *
     * b[i][j] for r < m, i < k, j < n; row r of a at a + r * lda, of b at b + i * ldb, of c at
     * c + r * ldc (a small row-major GEMM: Q.K^T on transposed keys, P.V on value rows). */
    void (*att_gemm)(const float *a, int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc, int m, int k, int n,
                     bool accumulate);
    /* x[j] *= scale for j < n; returns max_j x[j] (-INFINITY when n == 0 or every x[j] is). */
    float (*att_scale_max)(float *x, int n, float scale);
    /* x[j] = exp(x[j] - mx) (an x[j] of -INFINITY gives exactly 0) for j < n; returns their sum. */
    float (*att_exp_sum)(float *x, int n, float mx);
    /* GLU activations out = act(gate) * up (NULL: cpu_ops.c's scalar loop). */
    void (*glu_silu)(const float *gate, const float *up, float *out, int64_t n);
    void (*glu_gelu)(const float *gate, const float *up, float *out, int64_t n);
} mm_kernels;

/* Fill a table: scalar fills every type; the SIMD ones override what they implement. */
void mm_kernels_scalar(mm_kernels *k);
void mm_kernels_avx2(mm_kernels *k);
void mm_kernels_avx512(mm_kernels *k);
/* matmul_iq.c / matmul_iq_avx2.c / matmul_iq_avx512.c: MXFP4, the i-quants and the TQ types
 * (called by cpu_backend.c after the tables above: scalar always, AVX2 and AVX-512 where the
 * CPU has them). */
void mm_kernels_iq_scalar(mm_kernels *k);
void mm_kernels_iq_avx2(mm_kernels *k);
void mm_kernels_iq_avx512(mm_kernels *k);
/* matmul_iq.c: the IQ2_XS mat-vec lookup (matmul_iqk_x86.h): for each of the 65536 16-bit
 * qs words (9-bit grid index, 7-bit sign index) its 8 signed values v + 64 as bytes (0.5 MiB,
 * built on first use, thread-safe; the kernels call iq2xs_word_values once per row). */
extern const uint64_t *iq2xs_word_table; /* NULL until built */
const uint64_t *iq2xs_word_table_build(void);
static inline const uint64_t *iq2xs_word_values(void) {
    const uint64_t *t = __atomic_load_n(&iq2xs_word_table, __ATOMIC_ACQUIRE);
    return t ? t : iq2xs_word_table_build();
}
/* matmul_packed_avx512.c: the kernels on repacked weights (called by mm_kernels_avx512). */
void mm_packed_install_avx512(mm_kernels *k);
/* matmul_pkq5_avx512.c: the Q5_K mat-vec (1-3 tokens) on repacked weights (called by
 * mm_kernels_avx512 after mm_packed_install_avx512). */
void mm_packed_q5_install_avx512(mm_kernels *k);
/* matmul_pkf16_avx512.c: the kernels on repacked F16/BF16 weights (called by mm_kernels_avx512). */
void mm_packed_float_install_avx512(mm_kernels *k);
/* vecmath_avx2.c: the vectorized GLU activations (called by mm_kernels_avx2). */
void vecmath_install_avx2(mm_kernels *k);
/* attn_tile_avx2.c: att_gemm / att_scale_max / att_exp_sum with AVX2/FMA (called by mm_kernels_avx2). */
void attn_tile_install_avx2(mm_kernels *k);
/* attn_tile_avx512.c: att_gemm with AVX-512 (called by mm_kernels_avx512, after the AVX2 install). */
void attn_tile_install_avx512(mm_kernels *k);
/* cpu_attention.c: the scalar att_gemm / att_scale_max / att_exp_sum (called by mm_kernels_scalar). */
void attn_tile_install_scalar(mm_kernels *k);

/* Row bytes of the quantized activation of n elements. */
static inline size_t mm_act_row_bytes(act_kind a, int64_t n) {
    if (a == ACT_Q8X) return (size_t)(n / 32) * sizeof(blk_q8x);
    if (a == ACT_Q8K) return (size_t)(n / QK_K) * sizeof(block_q8_K);
    return (size_t)n * sizeof(float);
}

/* The 6-bit scale j and min j of a Q4_K/Q5_K block (ggml's get_scale_min_k4). */
static inline void kq_scale_min(int j, const uint8_t *q, uint8_t *sc, uint8_t *m) {
    if (j < 4) { *sc = q[j] & 63; *m = q[j + 4] & 63; }
    else { *sc = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4)); *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4)); }
}

/* The 16 signed 6-bit scales of a Q3_K block, already minus 32. */
static inline void q3k_scales(const uint8_t *packed, int8_t out[16]) {
    uint32_t aux[4];
    memcpy(aux, packed, 12);
    const uint32_t tmp = aux[2], k1 = 0x03030303u, k2 = 0x0f0f0f0fu;
    aux[2] = ((aux[0] >> 4) & k2) | (((tmp >> 4) & k1) << 4);
    aux[3] = ((aux[1] >> 4) & k2) | (((tmp >> 6) & k1) << 4);
    aux[0] = (aux[0] & k2) | (((tmp >> 0) & k1) << 4);
    aux[1] = (aux[1] & k2) | (((tmp >> 2) & k1) << 4);
    memcpy(out, aux, 16);
    for (int i = 0; i < 16; i++) out[i] = (int8_t)(out[i] - 32);
}
#endif
