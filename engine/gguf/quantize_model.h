/* quantize_model: re-quantizes a GGUF model file the way llama.cpp's llama-quantize does
 * (without an importance matrix): the same choice of which tensors are quantized, the same
 * per-tensor type rules of the "mixes" (Q4_K_M etc.), the same fallbacks for rows that are
 * not a multiple of the block size, the same bytes (reference quantizers, see quant.h), the
 * same tensor order and metadata (general.file_type, general.quantization_version = 2).
 *
 * Differences from llama-quantize, on purpose:
 *  - input tensors of any type Anvil can dequantize are accepted; re-quantizing an already
 *    quantized tensor is allowed (llama-quantize needs --allow-requantize) and logged once;
 *  - the IQ*, TQ*, MXFP4 and Q2_K_S file types (which need grids or an importance matrix)
 *    are not offered, nor llama.cpp's special case for 70B llama models (attn_v of Q3_K/Q4_K
 *    raised to Q5_K), which needs llama.cpp's model-size classification. */
#ifndef ANVIL_QUANTIZE_MODEL_H
#define ANVIL_QUANTIZE_MODEL_H
#include <stdbool.h>
#include <stdint.h>
#include "gguf.h"
#include "quant.h"

/* llama.cpp's llama_ftype values (what general.file_type holds). */
typedef enum {
    QFT_ALL_F32 = 0, QFT_F16 = 1, QFT_Q4_0 = 2, QFT_Q4_1 = 3, QFT_Q8_0 = 7, QFT_Q5_0 = 8,
    QFT_Q5_1 = 9, QFT_Q2_K = 10, QFT_Q3_K_S = 11, QFT_Q3_K_M = 12, QFT_Q3_K_L = 13,
    QFT_Q4_K_S = 14, QFT_Q4_K_M = 15, QFT_Q5_K_S = 16, QFT_Q5_K_M = 17, QFT_Q6_K = 18,
    QFT_BF16 = 32,
} quant_ftype;

/* File type by llama-quantize's name, case-insensitive: "Q4_K_M", "q4_0", "F16", "BF16",
 * "F32", ... and its aliases "Q3_K" = Q3_K_M, "Q4_K" = Q4_K_M, "Q5_K" = Q5_K_M. -1 if unknown. */
int quant_ftype_from_name(const char *name);
/* "Q4_K_M" etc., or NULL for a value not in quant_ftype. */
const char *quant_ftype_name(int ftype);
/* The file type llama-quantize means by a tensor type name: q4_0 -> Q4_0, q4_K -> Q4_K_M,
 * q3_K -> Q3_K_M, q5_K -> Q5_K_M, f16 -> F16 ...; -1 if that type is not a file type. */
int quant_ftype_from_qtype(qtype t);

typedef struct {
    int n_threads; /* <= 0: all online CPUs */
    bool pure;     /* llama-quantize --pure: no mix rules, every quantizable tensor (output and
                      token_embd included) gets the file type's default tensor type */
    /* optional: called after each tensor with the share of the input's bytes done (0..1] */
    void (*progress)(double done, void *user);
    void *user;
} quantize_opts;

/* Per-tensor plan: the output type of every tensor of f (types[i] for f->tensors[i]), by
 * llama-quantize's rules. Logs fallbacks. Returns 0, or -1 with anv_last_error(). */
int quantize_model_plan(const gguf_file *f, quant_ftype ftype, bool pure, uint32_t *types);

/* Re-quantizes in_path to out_path (written in full or not at all). Returns 0 or -1. */
int quantize_model_ftype(const char *in_path, const char *out_path, quant_ftype ftype,
                         const quantize_opts *opts);
/* The brief's entry point: quantize_model_ftype(in, out, quant_ftype_from_qtype(type)),
 * i.e. what `llama-quantize IN OUT TYPE` does for that type name. */
int quantize_model(const char *in_path, const char *out_path, qtype type, int n_threads);
#endif
