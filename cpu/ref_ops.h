/* ref_ops: plain scalar C reference of every backend op, on host arrays. Slow on purpose
 * and written for obviousness: the CPU SIMD kernels and the Vulkan/HIP shaders are tested
 * against these, on odd shapes. Semantics are exactly those documented in backend.h. */
#ifndef ANVIL_REF_OPS_H
#define ANVIL_REF_OPS_H
#include <stdint.h>
#include "backend.h"

/* out[i][:] = dequant(row ids[i] of table (type, cols)). */
void ref_get_rows(uint32_t type, const void *table, int64_t cols, const int32_t *ids, int n_ids, float *out);
void ref_rms_norm(const float *x, const float *w, float *out, int64_t n_rows, int64_t row_len, float eps);
/* The three that need working memory return 0, or -1 with anv_last_error() when out of
 * memory (out then not written); the others cannot fail. */
/* w: rows x cols of `type`; x: n_tok x cols; out: n_tok x rows. Accumulates in double. */
int ref_matmul(uint32_t type, const void *w, int64_t cols, int64_t rows, const float *x, float *out, int n_tok, bool accumulate);
void ref_add(const float *a, const float *b, float *out, int64_t n, int64_t b_n);
void ref_mul(const float *a, const float *b, float *out, int64_t n, int64_t b_n);
void ref_scale(float *x, int64_t n, float s);
/* ggml_clamp: max(min(x, hi), lo). */
void ref_clamp(const float *x, float *out, int64_t n, float lo, float hi);
/* freq_factors: NULL or [n_rot/2] floats. */
int ref_rope(float *x, int n_tok, int n_head, int head_dim, int pos0, int n_rot, be_rope_mode mode, float freq_base, float freq_scale, const float *freq_factors);
/* The same with YaRN (p->ext_factor, attn_factor, corr_lo/hi; p->freq_factors is ignored). */
int ref_rope_ext(float *x, int n_tok, int n_head, int head_dim, int pos0, const be_rope_params *p, const float *freq_factors);
/* backend.h rope_rows: x [n_tok][n_head * head_dim] rotated by table [n_tok][n_rot] (cos, sin per pair). */
void ref_rope_rows(float *x, const float *table, int n_tok, int n_head, int head_dim, int n_rot);
void ref_glu(const float *gate, const float *up, float *out, int64_t n, be_glu_kind kind);
/* backend.h conv1d_state: x [n_tok][ch], state [k-1][ch] (updated), w [ch][k], out [n_tok][ch]. */
void ref_conv1d_state(const float *x, float *state, const float *w, float *out, int n_tok, int64_t ch, int k);
/* backend.h delta_net on host arrays (state updated in place); sums in double. */
void ref_delta_net(const float *qkv, const float *alpha, const float *beta, const float *dt_bias, const float *a,
                   float *state, float *out, const be_delta_params *p);
/* dst (type F32/F16/Q8_0/Q4_0, cols per row) rows [row0, row0+n_rows) = convert(src). */
void ref_store_rows(const float *src, uint32_t dst_type, void *dst, int64_t cols, int64_t row0, int64_t n_rows);
/* k, v: cache of kv_type with n_kv_head*head_dim cols; rows [0, pos0+n_tok) are read. */
int ref_attention(const float *q, uint32_t kv_type, const void *k, const void *v, float *out, const be_attn_params *p);
/* With attention sinks: sinks NULL or [n_head] logits that join each head's softmax
 * denominator (p->sinks is ignored: the reference takes host arrays). */
int ref_attention_sinks(const float *q, uint32_t kv_type, const void *k, const void *v, const float *sinks, float *out,
                        const be_attn_params *p);
#endif
