/* quant: the GGUF tensor element types: ids, block layouts (byte-exact with ggml's),
 * and the scalar reference dequantizer and quantizer of every supported type.
 * Everything else (CPU SIMD kernels, Vulkan shaders) is tested against these. */
#ifndef ANVIL_QUANT_H
#define ANVIL_QUANT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Type ids as stored in GGUF files (ggml_type). */
typedef enum {
    QT_F32 = 0, QT_F16 = 1, QT_Q4_0 = 2, QT_Q4_1 = 3, QT_Q5_0 = 6, QT_Q5_1 = 7,
    QT_Q8_0 = 8, QT_Q8_1 = 9, QT_Q2_K = 10, QT_Q3_K = 11, QT_Q4_K = 12, QT_Q5_K = 13,
    QT_Q6_K = 14, QT_Q8_K = 15, QT_IQ2_XXS = 16, QT_IQ2_XS = 17, QT_IQ3_XXS = 18, QT_IQ1_S = 19,
    QT_IQ4_NL = 20, QT_IQ3_S = 21, QT_IQ2_S = 22, QT_IQ4_XS = 23, QT_IQ1_M = 29, QT_BF16 = 30,
    QT_TQ1_0 = 34, QT_TQ2_0 = 35, QT_MXFP4 = 39, /* block layouts of these: quant_iq.h */
    QT_COUNT = 40 /* upper bound of ids we know by name */
} qtype;

#define QK4_0 32
#define QK4_1 32
#define QK5_0 32
#define QK5_1 32
#define QK8_0 32
#define QK_K 256
#define K_SCALE_SIZE 12

typedef struct { uint16_t d; uint8_t qs[QK4_0 / 2]; } block_q4_0;                 /* 18 B */
typedef struct { uint16_t d, m; uint8_t qs[QK4_1 / 2]; } block_q4_1;              /* 20 B */
typedef struct { uint16_t d; uint8_t qh[4]; uint8_t qs[QK5_0 / 2]; } block_q5_0;  /* 22 B */
typedef struct { uint16_t d, m; uint8_t qh[4]; uint8_t qs[QK5_1 / 2]; } block_q5_1; /* 24 B */
typedef struct { uint16_t d; int8_t qs[QK8_0]; } block_q8_0;                      /* 34 B */
typedef struct { uint16_t d, s; int8_t qs[QK8_0]; } block_q8_1;                   /* 36 B */
typedef struct { uint8_t scales[QK_K / 16]; uint8_t qs[QK_K / 4]; uint16_t d, dmin; } block_q2_K; /* 84 B */
typedef struct { uint8_t hmask[QK_K / 8]; uint8_t qs[QK_K / 4]; uint8_t scales[12]; uint16_t d; } block_q3_K; /* 110 B */
typedef struct { uint16_t d, dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qs[QK_K / 2]; } block_q4_K; /* 144 B */
typedef struct { uint16_t d, dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; } block_q5_K; /* 176 B */
typedef struct { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; uint16_t d; } block_q6_K; /* 210 B */
typedef struct { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; } block_q8_K; /* 292 B */

typedef struct {
    const char *name;      /* "q4_K" etc., as llama.cpp prints it */
    int block_size;        /* elements per block */
    size_t type_size;      /* bytes per block */
    bool can_dequantize;   /* reference dequantizer exists */
    bool can_quantize;     /* reference quantizer exists */
    bool is_weight;        /* every backend's matmul takes it as a weight (q8_1 and q8_K are
                              activation formats: ggml has no weight kernel for them either) */
} qtype_info;

/* Info for a type id, or NULL for an id Anvil does not know (callers name the id). */
const qtype_info *qtype_get(uint32_t type);
/* Type by name ("q4_0", "Q4_K", "f16"...; case-insensitive), -1 if unknown. */
int qtype_from_name(const char *name);
/* Bytes of n elements of type t; n must be a multiple of the block size (returns 0 if not). */
size_t qtype_row_size(qtype t, int64_t n);

/* Reference dequantizer: n elements (a multiple of the block size) from src to dst. */
void dequantize_row(qtype t, const void *src, float *dst, int64_t n);
/* Reference quantizer, byte-exact with ggml's reference (quantize_row_*_ref) for the
 * same input; returns bytes written. */
size_t quantize_row(qtype t, const float *src, void *dst, int64_t n);
#endif
