/* hip_args: the one definition of every HIP kernel's argument block, shared by the device
 * code (hip_kernels.hip, C++), the host side (hip_backend.c, C) and the fake runtime of the
 * tests (tests/hip/fake_hip.c, C, which runs cpu/ref_ops.c for each launch). Every kernel
 * takes exactly one of these structs by value, so a launch passes kernelParams = {&args}
 * and the two sides cannot disagree on the order of scalar arguments. Device addresses are
 * uint64_t (already including the tensor's view offset). Kernel names: "anv_<op>_<type>". */
#ifndef ANVIL_HIP_ARGS_H
#define ANVIL_HIP_ARGS_H
#include <stdint.h>

/* Weight types with device kernels (GGUF type ids, as qtype in engine/gguf/quant.h). */
#define ANV_HIP_TYPES(X) \
    X(f32, 0) X(f16, 1) X(q4_0, 2) X(q4_1, 3) X(q5_0, 6) X(q5_1, 7) X(q8_0, 8) \
    X(q2_K, 10) X(q3_K, 11) X(q4_K, 12) X(q5_K, 13) X(q6_K, 14) X(bf16, 30)

/* Launch geometry shared by host and device. */
#define ANV_WARP 32            /* RDNA wave32; NVIDIA warps */
#define ANV_MV_WAVES 4         /* mat-vec: waves per block */
#define ANV_MV_ROWS_PER_WAVE 2 /* mat-vec: rows per wave (8 rows per block) */
#define ANV_MV_MAX_TOK 4       /* mat-vec handles up to this many tokens per launch */
#define ANV_MM_TILE 64         /* tiled matmul: 64 rows x 64 tokens per block */
#define ANV_MM_K 32            /* tiled matmul: K step (one LDS tile) */
#define ANV_EW_BLOCK 256       /* element-wise ops */
#define ANV_ATT_BLOCK 128      /* attention: threads per (token, head) block; keys per chunk */
#define ANV_ATT_MAX_HEAD_DIM 256
#define ANV_NORM_BLOCK 256

typedef struct { uint64_t table, ids, out; int64_t cols, row_bytes; int32_t n_ids, type; } anv_get_rows_args;
typedef struct { uint64_t x, w, out; int64_t n_rows, row_len; float eps; int32_t has_w; } anv_rms_norm_args;
/* matvec and matmul share one block: out[t][r] (+)= sum_c W[r][c] * x[t][c]. */
typedef struct { uint64_t w, x, out; int64_t cols, rows, row_bytes; int32_t n_tok, accumulate, type, pad; } anv_matmul_args;
/* op: 0 add, 1 mul, 2 scale (b unused, s), 3 glu silu, 4 glu gelu-tanh, 5 glu swiglu-oai (b = up),
 * 6 clamp to [s, s2] (b unused), 7 glu sigmoid (sigmoid(a) * b). */
typedef struct { uint64_t a, b, out; int64_t n, b_n; float s; int32_t op; float s2; int32_t pad; } anv_ew_args;
typedef struct {
    uint64_t x, freq_factors;
    int32_t n_tok, n_head, head_dim, pos0, n_rot, mode, has_ff, pad;
    float freq_base, freq_scale;
    float ext_factor, attn_factor, corr_lo, corr_hi; /* YaRN, as be_rope_params (backend.h) */
} anv_rope_args;
/* rope_rows (M-RoPE by table): row t's (cos, sin) pairs table[t][2i], table[t][2i + 1] rotate (i, i + n_rot / 2) of every head. */
typedef struct { uint64_t x, table; int32_t n_tok, n_head, head_dim, n_rot; } anv_rope_rows_args;
typedef struct { uint64_t src, dst; int64_t cols, row0, n_rows, dst_row_bytes; int32_t dst_type, pad; } anv_store_rows_args;
typedef struct {
    uint64_t q, k, v, out;
    int64_t kv_row_bytes;
    int32_t n_tok, pos0, n_head, n_kv_head, head_dim, window, kv_type, noncausal;
    float scale, softcap;
    uint64_t sinks;            /* F32 [n_head] attention sinks (gpt-oss) if has_sinks */
    int32_t has_sinks, pad;
} anv_attention_args;
#endif
