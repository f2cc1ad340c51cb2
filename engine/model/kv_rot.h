/* kv_rot: the Walsh-Hadamard rotation of a quantized KV cache, as today's llama.cpp applies
 * it (llama-kv-cache.cpp attn_rot): with a Q8_0/Q4_0 cache and head_dim % 64 == 0, every head
 * of q and k is rotated in groups of n_k (the largest power of two >= 64 dividing head_dim) and
 * every head of v in groups of 64 before k and v are stored, and the attention output is
 * rotated back. H is orthonormal and symmetric, so q.k and the softmax are unchanged, while
 * the outliers of a head are spread over its group before 32-element blocks are quantized
 * (Gemma 3 270M, q4_0 cache: KL vs f16 0.31 plain, 0.17 rotated). ANVIL_KV_ROTATION=0 turns it
 * off. The rotation is a matmul by an F32 [n][n] weight on the layer's backend (no new op). */
#ifndef ANVIL_KV_ROT_H
#define ANVIL_KV_ROT_H
#include <stdbool.h>
#include <stdint.h>
#include "backend.h"
#include "model.h"

#define KV_ROT_MAX_BE 2

typedef struct {
    int n_k, n_v;                    /* group sizes; 0 = no rotation */
    int n_be;
    backend *be[KV_ROT_MAX_BE];
    be_tensor *hk[KV_ROT_MAX_BE], *hv[KV_ROT_MAX_BE]; /* H_{n_k}, H_{n_v} on be[i] */
    float *host_k, *host_v;          /* kept alive: a backend may alias weight data */
} kv_rot;

/* The head size the groups are sized for: the smallest layer's (gemma4's sliding and full
 * layers differ: 256 and 512 share groups of 256; the callers check every layer's divides). */
int kv_rot_head_dim(const model_hparams *hp);
/* The group sizes for a cache of kv_type and head_dim (0, 0 when not rotated). */
void kv_rot_sizes(uint32_t kv_type, int head_dim, int *n_k, int *n_v);
/* Sets r up for a cache of kv_type of model m (its head_dim, its layers' backends); 0, or -1
 * with an error. */
int kv_rot_init(kv_rot *r, uint32_t kv_type, const model *m);
void kv_rot_free(kv_rot *r);
/* out = x with each group of n consecutive elements multiplied by H_n (x, out: F32 views of
 * rows x cols, cols % n == 0, distinct storage); v selects H_{n_v}, else H_{n_k}. */
void kv_rot_apply(const kv_rot *r, backend *be, bool v, const be_tensor *x, be_tensor *out, int64_t rows);
/* H_n[i][j] = (-1)^popcount(i & j) / sqrt(n) (Sylvester order), n a power of two. */
void kv_rot_hadamard(float *h, int n);
#endif
