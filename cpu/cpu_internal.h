/* cpu_internal: what the CPU backend's files share: the per-backend context (thread
 * pool, chosen kernel table, scratch memory) and the op entry points on host pointers. */
#ifndef ANVIL_CPU_INTERNAL_H
#define ANVIL_CPU_INTERNAL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "backend.h"
#include "cpu_backend.h"
#include "cpu_kernels.h"
#include "repack.h"
#include "threadpool.h"
#include "weight_cache.h"

typedef enum { CPU_SIMD_SCALAR = 0, CPU_SIMD_AVX2 = 1, CPU_SIMD_AVX512 = 2 } cpu_simd_level;

/* A weight noted between weights_begin and weights_end (repack_load.c), packed at the end. */
typedef struct { const void *orig; uint32_t type; int64_t cols, rows; int refs; } cpu_pending;

typedef struct {
    bool active;           /* between weights_begin and weights_end */
    int depth;             /* weights_begin calls not yet ended */
    be_weight_file file;   /* the model file (path copied below) */
    char path[4096];
    cpu_pending *items;
    int n, cap;
} cpu_load;

typedef struct cpu_ctx {
    threadpool *tp;
    int n_threads;
    cpu_simd_level simd;
    mm_kernels kernels;
    uint8_t *scratch;      /* 64-byte aligned, grown on demand; one op uses it at a time */
    size_t scratch_cap;
    bool repack;           /* weights of the types kernels.packed has are repacked at load */
    cpu_packed_set packed; /* the repacked weights (repack.h) */
    wcache_config cache;   /* ANVIL_REPACK_CACHE* (engine/base/weight_cache.h) */
    const char *kernels_isa; /* "avx512": part of the cache key */
    cpu_load load;
    cpu_repack_info info;  /* the last load's */
} cpu_ctx;

/* repack_load.c: the packed weights of one model load (backend_ops weights_begin/end). */
void cpu_load_begin(cpu_ctx *c, const be_weight_file *f);
/* 1: noted, to be packed at the end; 0: not from the model file (pack it now); -1 + error. */
int cpu_load_defer(cpu_ctx *c, uint32_t type, const void *data, int64_t cols, int64_t rows);
/* A noted weight freed before the end. */
void cpu_load_forget(cpu_ctx *c, const void *data);
int cpu_load_end(cpu_ctx *c, bool ok);
void cpu_load_free(cpu_ctx *c);

/* Level picked for this CPU, after ANVIL_CPU_SIMD (scalar|avx2|avx512, capped by the
 * hardware) is applied: 0, or -1 with anv_last_error() naming the variable when its value
 * is none of those. */
int cpu_simd_detect(cpu_simd_level *out);
/* At least n bytes of scratch (contents undefined), NULL + error on allocation failure. */
void *cpu_scratch(cpu_ctx *c, size_t n);

/* Ops on host data (pointers already include the tensor offsets); -1 + error on bad input. */
int cpu_matmul(cpu_ctx *c, uint32_t wtype, const void *w, int64_t cols, int64_t rows, const float *x, float *out, int n_tok, bool accumulate);
/* One of cpu_matmul_many's matmuls (no accumulate). */
typedef struct { uint32_t wtype; const void *w; int64_t cols, rows; const float *x; float *out; int n_tok; } cpu_mm_item;
#define CPU_MM_MANY_MAX 64
/* The n (<= CPU_MM_MANY_MAX) matmuls as one pool job: the same results as cpu_matmul on each. */
int cpu_matmul_many(cpu_ctx *c, const cpu_mm_item *items, int n);
int cpu_attention(cpu_ctx *c, const float *q, uint32_t kv_type, const void *k, const void *v, float *out, const be_attn_params *p);
void cpu_rms_norm(cpu_ctx *c, const float *x, const float *w, float *out, int64_t n_rows, int64_t row_len, float eps);
void cpu_add(cpu_ctx *c, const float *a, const float *b, float *out, int64_t n, int64_t b_n);
void cpu_mul(cpu_ctx *c, const float *a, const float *b, float *out, int64_t n, int64_t b_n);
void cpu_scale(cpu_ctx *c, float *x, int64_t n, float s);
void cpu_clamp(cpu_ctx *c, const float *x, float *out, int64_t n, float lo, float hi);
void cpu_rope_rows(cpu_ctx *c, float *x, const float *table, int n_tok, int n_head, int head_dim, int n_rot);
void cpu_rope(cpu_ctx *c, float *x, int n_tok, int n_head, int head_dim, int pos0, const be_rope_params *p, const float *freq_factors);
void cpu_glu(cpu_ctx *c, const float *gate, const float *up, float *out, int64_t n, be_glu_kind kind);
int cpu_get_rows(cpu_ctx *c, uint32_t type, const void *table, int64_t cols, const int32_t *ids, int n_ids, float *out);
int cpu_store_rows(cpu_ctx *c, const float *src, uint32_t dst_type, void *dst, int64_t cols, int64_t row0, int64_t n_rows);
/* cpu_recurrent.c: backend.h conv1d_state and delta_net on host arrays (shapes checked). */
void cpu_conv1d_state(cpu_ctx *c, const float *x, float *state, const float *w, float *out, int n_tok, int64_t ch, int k);
void cpu_delta_net(cpu_ctx *c, const float *qkv, const float *alpha, const float *beta, const float *dt_bias,
                   const float *a, float *state, float *out, const be_delta_params *p);
#endif
