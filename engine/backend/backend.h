/* backend: the narrow interface the forward pass is written against once. A backend
 * (cpu/, engine/vulkan/, hip/) owns memory on one device and executes the ops below
 * in the order they are issued. GPU backends may record ops and run them later:
 * results are only guaranteed visible after be_download() or be_sync().
 *
 * Conventions
 *  - A tensor is 2-D: `rows` rows of `cols` elements of `type`, rows contiguous
 *    (row r starts at byte r * qtype_row_size(type, cols)). Activations are F32.
 *  - A view (be_view_rows) shares storage: `offset` is added to every access, so every
 *    op must honour t->offset (bytes).
 *  - Weights are [rows = output features][cols = input features] like GGUF's ne[1], ne[0];
 *    matmul computes out[t][r] = sum_c W[r][c] * x[t][c].
 *  - The KV cache is one tensor per layer for K and one for V: rows = context positions,
 *    cols = n_kv_head * head_dim, type F16 (default), F32, Q8_0 or Q4_0 (quantized caches:
 *    head_dim % 32 == 0, so every head starts on a block).
 */
#ifndef ANVIL_BACKEND_H
#define ANVIL_BACKEND_H
#include <stdbool.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include "error.h"

typedef struct backend backend;

typedef struct be_tensor {
    backend *be;
    uint32_t type;   /* qtype */
    int64_t cols;    /* elements per row */
    int64_t rows;
    size_t offset;   /* bytes from the start of the storage (views) */
    void *storage;   /* backend-private: CPU = host pointer to byte 0 of the allocation */
    bool owned;      /* storage freed with the tensor (false for views and aliased weights) */
} be_tensor;

/* SWIGLU_OAI (gpt-oss, ggml_swiglu_oai with alpha 1.702, limit 7): g = min(gate, 7),
 * u = clamp(up, -7, 7), out = g * sigmoid(1.702 g) * (u + 1). SIGMOID (qwen35's gated
 * attention output): out = sigmoid(gate) * up. */
typedef enum { BE_GLU_SILU = 0, BE_GLU_GELU_TANH = 1, BE_GLU_SWIGLU_OAI = 2, BE_GLU_SIGMOID = 3 } be_glu_kind;
#define BE_GLU_OAI_ALPHA 1.702f
#define BE_GLU_OAI_LIMIT 7.0f
typedef enum { BE_ROPE_NORMAL = 0, BE_ROPE_NEOX = 2 } be_rope_mode;

typedef struct {
    int n_rot;              /* rotated dims per head (<= head_dim; the rest pass through) */
    be_rope_mode mode;      /* NORMAL rotates pairs (2i, 2i+1); NEOX rotates (i, i + n_rot/2) */
    float freq_base;        /* theta_i = pos * freq_scale * base^(-2i/n_rot) / factor_i */
    float freq_scale;       /* 1 / linear scaling factor */
    const be_tensor *freq_factors; /* optional F32 [n_rot/2] (llama3 rope_freqs), NULL = all 1 */
    /* YaRN (ggml's rope_yarn; gpt-oss). ext_factor 0 = off. Pair i's angle is
     * theta_interp * (1 - mix) + theta_extrap * mix with theta_extrap = theta / freq_scale,
     * mix = ext_factor * (1 - clamp((i - corr_lo) / max(0.001, corr_hi - corr_lo), 0, 1));
     * cos and sin are multiplied by attn_factor (0 = 1), and by 1 + 0.1 ln(1 / freq_scale)
     * when ext_factor != 0. */
    float ext_factor, attn_factor, corr_lo, corr_hi;
} be_rope_params;

typedef struct {
    int n_tok;          /* queries: rows of q and out */
    int pos0;           /* position of query row 0; row t is at pos0 + t (causal) */
    int n_head, n_kv_head, head_dim; /* GQA: query head h reads kv head h / (n_head / n_kv_head) */
    float scale;        /* applied to q.k */
    int window;         /* sliding window: key j visible from query p iff p - j < window; 0 = off */
    float softcap;      /* if > 0: s = softcap * tanh(s / softcap) before softmax */
    bool noncausal;     /* encoders: every query sees keys [0, pos0 + n_tok), and a window > 0 is
                         * symmetric: key j visible from query p iff |p - j| <= window / 2 */
    const be_tensor *sinks; /* optional F32 [n_head] on the op's backend (gpt-oss attention sinks):
                             * head h's logit sinks[h] joins the softmax denominator (no value) */
} be_attn_params;

/* Whether key position j is visible from query position pos (the masks every backend applies). */
static inline bool be_attn_visible(const be_attn_params *p, int pos, int j) {
    if (p->noncausal) return p->window <= 0 || (pos - j <= p->window / 2 && j - pos <= p->window / 2);
    return j <= pos && (p->window <= 0 || pos - j < p->window);
}

/* The gated delta rule (qwen35's linear-attention layers, llama.cpp's ggml_gated_delta_net
 * with its gate and norm inputs fused in): n_v_head value heads of head_dim, n_k_head
 * query/key heads (value head h reads query/key head h % n_k_head, ggml's broadcast). */
typedef struct {
    int n_tok, n_k_head, n_v_head, head_dim;
    float eps;          /* L2 norm of q and k: x / sqrt(sum x^2 + eps) */
} be_delta_params;

/* Softplus as ggml_softplus: x above 20 passes through. */
static inline float be_softplus(float x) { return x > 20.0f ? x : logf(1.0f + expf(x)); }

/* The file one model's weights are loaded from (backend_ops.weights_begin): its path, the
 * bytes of the whole file as gguf_open has them, whether those are a read-only mapping of
 * the file (false: a heap copy, ANVIL_NO_MMAP) and its open descriptor (-1: none). */
typedef struct { const char *path; const void *base; size_t size; bool mapped; int fd; } be_weight_file;

/* One matmul of backend_ops.matmul_many: out[t][r] = sum_c w[r][c] * x[t][c], t < n_tok. */
typedef struct { const be_tensor *w, *x; be_tensor *out; int n_tok; } be_matmul_item;

typedef struct backend_ops {
    void (*destroy)(backend *be);
    /* Memory. weight_new may alias host_data (the caller keeps it alive: the mmap) or copy it. */
    be_tensor *(*tensor_new)(backend *be, uint32_t type, int64_t cols, int64_t rows);
    be_tensor *(*weight_new)(backend *be, uint32_t type, int64_t cols, int64_t rows, const void *host_data);
    void (*tensor_free)(backend *be, be_tensor *t);
    /* Optional (NULL = none): bracket the weight_new calls of one model load, so a backend
     * can treat the weights of one file together (the CPU backend repacks them in parallel
     * and keeps a cache file per model: cpu/repack_load.c). Between the two, weights whose
     * host data lies in f may not be usable by ops yet. weights_end(ok = false) drops what
     * was deferred (a failed load); weights_end returns 0, or -1 + error (out of memory). */
    void (*weights_begin)(backend *be, const be_weight_file *f);
    int (*weights_end)(backend *be, bool ok);
    void (*upload)(backend *be, be_tensor *t, size_t offset, const void *src, size_t n);
    void (*download)(backend *be, const be_tensor *t, size_t offset, void *dst, size_t n);
    void (*sync)(backend *be);
    /* The first error an op hit since the backend was created (ops cannot return one), or
     * NULL. Checked by the forward pass after each batch. Every backend sets this to
     * be_sticky_error and records failures with be_fail / be_record_error (below). */
    const char *(*error)(backend *be);

    /* Ops (all outputs F32 unless said). n = element counts; rows use t->cols. */
    /* out[i][:] = dequant(table row ids[i]), i < n_ids. */
    void (*get_rows)(backend *be, const be_tensor *table, const int32_t *ids, int n_ids, be_tensor *out);
    /* For each of n_rows rows of length row_len in x (consecutive): out = x / rms(x) * w
     * (w: F32 [row_len] or NULL). row_len may be smaller than x->cols (per-head QK-norm).
     * out may alias x (in place). */
    void (*rms_norm)(backend *be, const be_tensor *x, const be_tensor *w, be_tensor *out, int64_t n_rows, int64_t row_len, float eps);
    /* out[t][r] (+)= sum_c w[r][c] * x[t][c] for t < n_tok; accumulate adds to out (residual fusion). */
    void (*matmul)(backend *be, const be_tensor *w, const be_tensor *x, be_tensor *out, int n_tok, bool accumulate);
    /* Optional (NULL = none): the n independent matmuls items[i] (no accumulate) in one
     * dispatch, e.g. a MoE layer's few small experts of one decode step, split over the CPU
     * pool all at once. Returns false, having done nothing, where it does not cover them
     * (the caller then issues them one by one); true when done or its error recorded. */
    bool (*matmul_many)(backend *be, const be_matmul_item *items, int n);
    /* out[i] = a[i] + b[i % b_n] and a[i] * b[i % b_n], i < n (broadcast a row of b). out may alias a. */
    void (*add)(backend *be, const be_tensor *a, const be_tensor *b, be_tensor *out, int64_t n, int64_t b_n);
    void (*mul)(backend *be, const be_tensor *a, const be_tensor *b, be_tensor *out, int64_t n, int64_t b_n);
    /* x[i] *= s, i < n, in place. */
    void (*scale)(backend *be, be_tensor *x, int64_t n, float s);
    /* out[i] = min(max(x[i], lo), hi), i < n (ggml_clamp; gemma4v's clipped linears). out may alias x. */
    void (*clamp)(backend *be, const be_tensor *x, be_tensor *out, int64_t n, float lo, float hi);
    /* In place on x = [n_tok][n_head * head_dim]; row t has position pos0 + t. */
    void (*rope)(backend *be, be_tensor *x, int n_tok, int n_head, int head_dim, int pos0, const be_rope_params *p);
    /* out[i] = act(gate[i]) * up[i], i < n. out may alias gate. */
    void (*glu)(backend *be, const be_tensor *gate, const be_tensor *up, be_tensor *out, int64_t n, be_glu_kind kind);
    /* dst rows [dst_row0, dst_row0 + n_rows) = convert(src rows 0..n_rows) (F32 -> dst->type: F32/F16/Q8_0/Q4_0). */
    void (*store_rows)(backend *be, const be_tensor *src, be_tensor *dst, int64_t dst_row0, int64_t n_rows);
    /* Causal (or p->noncausal) attention of q [n_tok][n_head*head_dim] over cache rows
     * [0, pos0 + n_tok) of k, v ([ctx][n_kv_head*head_dim]); out [n_tok][n_head*head_dim]. */
    void (*attention)(backend *be, const be_tensor *q, const be_tensor *k, const be_tensor *v, be_tensor *out, const be_attn_params *p);

    /* Optional fused ops (NULL in backends without them): fewer dispatches per decoded token.
     * Each returns false, having done nothing, where it does not cover its arguments or its
     * path is off (Vulkan: ANVIL_VK_DISABLE=fuse); the caller then issues the unfused ops. */
    /* = matmul(w_gate, x, out), matmul(w_up, x, up), glu(out, up, out) in one pass over both
     * weights (same type and shape): out[t][r] = act(sum_c w_gate[r][c] x[t][c]) *
     * (sum_c w_up[r][c] x[t][c]), t < n_tok. */
    bool (*matmul_glu)(backend *be, const be_tensor *w_gate, const be_tensor *w_up, const be_tensor *x, be_tensor *out,
                       int n_tok, be_glu_kind kind);
    /* = rope(q), rope(k), store_rows(k, k_cache, pos0), store_rows(v, v_cache, pos0), except that
     * k is left as it is: q [n_tok][n_head * head_dim] is roped in place, k_cache rows
     * [pos0, pos0 + n_tok) = convert(rope(k)), v_cache rows = convert(v) (k, v: [n_tok][n_kv_head * head_dim]). */
    bool (*rope_store)(backend *be, be_tensor *q, const be_tensor *k, const be_tensor *v, be_tensor *k_cache, be_tensor *v_cache,
                       int n_tok, int n_head, int n_kv_head, int head_dim, int pos0, const be_rope_params *p);

    /* Rope by a per-row table (M-RoPE image positions in the text model, the 2-D rope of the
     * qwen-vl encoders): x [n_tok][n_head * head_dim] in place; for token t, every head and pair
     * i < n_rot / 2 (NEOX pairing): (x[i], x[i + n_rot/2]) rotated by cos = table[t][2i],
     * sin = table[t][2i + 1]; dims >= n_rot pass. table F32 [n_tok][n_rot] (rope_table.h builds
     * it as ggml's multi-section rope does). Optional: NULL where a backend lacks it (callers
     * refuse with one line). */
    void (*rope_rows)(backend *be, be_tensor *x, const be_tensor *table, int n_tok, int n_head, int head_dim, int n_rot);

    /* Recurrent-layer ops (qwen35's gated DeltaNet). Optional: NULL in a backend that cannot
     * run such a layer (the model refuses to place one there). Both take the n_tok tokens of
     * ONE sequence and that sequence's state, so a prompt chunk and a decode step are the
     * same call; several sequences are several calls on row views. */
    /* Causal depthwise conv1d over time with its state, then SiLU. x [n_tok][ch], state
     * [k - 1][ch] (the k - 1 inputs before x, oldest first), w F32 [ch][k]:
     * out[t][c] = silu(sum_j w[c][j] * in[t - k + 1 + j][c]) where in[-i] is state row k - 1 - i;
     * then state = the last k - 1 rows of (state, x). out must not alias x or state. */
    void (*conv1d_state)(backend *be, const be_tensor *x, be_tensor *state, const be_tensor *w, be_tensor *out, int n_tok);
    /* The gated delta rule over n_tok tokens. qkv [n_tok][(2 n_k_head + n_v_head) * head_dim]
     * (q heads, then k heads, then v heads), alpha and beta [n_tok][n_v_head] (raw
     * projections), dt_bias and a F32 [n_v_head], state F32 [n_v_head * head_dim][head_dim]
     * (row h * head_dim + j: value dim j of head h over the key dims, ggml's transposed S),
     * out [n_tok][n_v_head * head_dim]. Per token and value head h (kh = h % n_k_head):
     * q, k = L2-normed heads kh; decay = exp(softplus(alpha + dt_bias[h]) * a[h]);
     * b = sigmoid(beta); M = state head h: M *= decay; d[j] = (v[j] - M[j].k) * b;
     * M[j] += d[j] k; out[j] = M[j].q / sqrt(head_dim). state is updated in place. */
    void (*delta_net)(backend *be, const be_tensor *qkv, const be_tensor *alpha, const be_tensor *beta,
                      const be_tensor *dt_bias, const be_tensor *a, be_tensor *state, be_tensor *out,
                      const be_delta_params *p);
} backend_ops;

struct backend {
    const backend_ops *ops;
    const char *name;       /* "cpu", "vulkan0" */
    const char *device_desc;/* human description for placement logs */
    void *impl;
    char sticky_error[512]; /* first op failure, "<name>: <message>" (be_fail), "" if none */
};

/* Thin call helpers so model code reads as math. */
static inline be_tensor *be_tensor_new(backend *be, uint32_t type, int64_t cols, int64_t rows) { return be->ops->tensor_new(be, type, cols, rows); }
static inline void be_tensor_free(be_tensor *t) { if (t) t->be->ops->tensor_free(t->be, t); }
static inline void be_upload(be_tensor *t, size_t off, const void *src, size_t n) { t->be->ops->upload(t->be, t, off, src, n); }
static inline void be_download(const be_tensor *t, size_t off, void *dst, size_t n) { t->be->ops->download(t->be, t, off, dst, n); }
static inline void be_sync(backend *be) { be->ops->sync(be); }

/* Sticky errors, the one mechanism of every backend. An op that fails calls be_fail (or
 * anv_set_error then be_record_error): the message becomes anv_last_error(), and the first
 * failure since the backend was created is kept as "<be->name>: <message>" and logged once
 * (anv_log); later failures do not replace it. be_sticky_error, the backend_ops.error of
 * every backend, returns it (NULL if none); be_failed says whether there is one (GPU
 * backends stop recording work after the first failure). */
void be_fail(backend *be, const char *fmt, ...) ANV_PRINTF(2, 3);
void be_record_error(backend *be);
const char *be_sticky_error(backend *be);
static inline bool be_failed(const backend *be) { return be->sticky_error[0] != 0; }
/* The backend's sticky error through its ops table (what the forward pass checks). */
static inline const char *be_error(backend *be) { return be->ops->error(be); }

/* A view of rows [row0, row0 + n_rows) of t (no storage of its own; do not free). */
be_tensor be_view_rows(const be_tensor *t, int64_t row0, int64_t n_rows);
/* Same storage read as a different shape (cols * rows must cover the same bytes or fewer). */
be_tensor be_view_reshape(const be_tensor *t, int64_t cols, int64_t rows);
/* Bytes of one row / the whole tensor. */
size_t be_row_bytes(const be_tensor *t);
size_t be_nbytes(const be_tensor *t);
#endif
