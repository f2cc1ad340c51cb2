/* gpu_verify_case: one case of the kernel self-check (gpu_verify.c) and what the fused ops'
 * cases (gpu_verify_fused.c) share with it: the case, its inputs, the upload and the KV rows'
 * dequantization. Internal to engine/device. */
#ifndef ANVIL_GPU_VERIFY_CASE_H
#define ANVIL_GPU_VERIFY_CASE_H
#include <stdbool.h>
#include <stdint.h>

#include "backend.h"

typedef enum { K_MATMUL, K_RMS, K_ROPE, K_ADD, K_GLU, K_STORE, K_ATTN, K_MMGLU, K_ROPESTORE } kind; /* the last two: backend.h's fused ops */

typedef struct {
    kind k;
    uint32_t type;        /* matmul: weight type; store, attention: KV type */
    const void *wdata;    /* matmul: weight rows; rms: F32 weight or NULL; rope: F32 freq factors or NULL */
    const void *wdata2;   /* matmul_glu: the up weight's rows (wdata the gate's) */
    int64_t a, b;         /* matmul: cols, rows; rms: row_len, n_rows; add: n, b_n; glu: n; store: cols, rows */
    int n_tok;            /* matmul, rope */
    bool accumulate;
    int n_head, head_dim, pos0; /* rope */
    int n_kv_head;        /* rope_store */
    be_rope_params rp;    /* rope (freq_factors unused: wdata) */
    be_attn_params ap;    /* attention */
    float eps;
    be_glu_kind glu;
    uint64_t seed;
    char shape[96];
} spec;

/* The case's inputs, identical for every call with the same spec. */
typedef struct { float *x, *y, *o0; void *kq, *vq; int64_t ctx, kvc; } inputs;

#define STORE_ROW0 3

/* A tensor of be filled with data (NULL: left as allocated). */
be_tensor *gv_up(backend *be, uint32_t type, int64_t cols, int64_t rows, const void *data);
/* Dequantized rows [row0, row0 + n) of a KV-typed buffer. */
void gv_dequant_rows(uint32_t type, const uint8_t *buf, int64_t cols, int64_t row0, int64_t n, float *out);

/* The fused ops' cases (gpu_verify_fused.c). t: 5 free slots the caller frees. */
int gvf_run_matmul_glu(backend *be, const spec *s, const inputs *in, const float *zeros, float *out, be_tensor **t);
int gvf_ref_matmul_glu(const spec *s, const inputs *in, float *out);
int gvf_run_rope_store(backend *be, const spec *s, const inputs *in, float *out, be_tensor **t);
int gvf_ref_rope_store(const spec *s, const inputs *in, float *out);
#endif
