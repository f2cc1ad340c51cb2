/* model: loads a GGUF model (llama incl. mixtral-style MoE, mistral3, qwen2, qwen3, gemma3, qwen2moe, qwen3moe,
 * gpt-oss, the hybrid qwen35 (qwen35.c, delta_net.c), gemma4 (gemma4.c); the embedding models gemma-embedding, and bert / nomic-bert through encoder.c) into
 * per-layer backends and runs the one forward pass (forward.c, its blocks attention.c,
 * feed_forward.c, moe.c, gemma4_block.c over pass.h) over a KV cache. */
#ifndef ANVIL_MODEL_H
#define ANVIL_MODEL_H
#include <stdbool.h>
#include <stdint.h>
#include "backend.h"
#include "gguf.h"
#include "tokenizer.h"

typedef enum { ARCH_LLAMA, ARCH_QWEN2, ARCH_QWEN3, ARCH_GEMMA3, ARCH_BERT, ARCH_NOMIC_BERT,
              ARCH_QWEN2MOE, ARCH_QWEN3MOE, ARCH_GPTOSS, ARCH_QWEN35, ARCH_GEMMA4 } model_arch;
/* How an embedding is pooled from the final hidden states (llama.cpp's pooling_type values). */
typedef enum { MODEL_POOL_NONE = 0, MODEL_POOL_MEAN = 1, MODEL_POOL_CLS = 2, MODEL_POOL_LAST = 3 } model_pooling;

#define MODEL_MAX_LAYERS 512   /* llama.cpp's LLAMA_MAX_LAYERS: the longest per-layer array key */

typedef struct {
    model_arch arch;
    const char *arch_name;
    int n_vocab, n_ctx_train, n_embd, n_layer, n_ff, n_head, n_kv_head, head_dim_k, head_dim_v;
    float norm_eps;
    float rope_base, rope_base_swa, rope_scale, rope_scale_swa;
    /* YaRN (rope.scaling.type yarn, yarn.c): ext_factor 0 = off; attn_factor as llama.cpp's
     * cparams.yarn_attn_factor; the correction dims come from orig_ctx and the betas */
    float yarn_ext_factor, yarn_attn_factor, yarn_beta_fast, yarn_beta_slow;
    int yarn_orig_ctx;
    int n_rot;
    be_rope_mode rope_mode;
    /* M-RoPE (qwen35, ggml's multi-section rope): rope_sect_mode 0 = none, else a rope_table.h
     * rope_sect_mode + 1, with rope.dimension_sections; text rows rotate as NEOX at their position,
     * image rows (model_eval_embd_grid) by their (t, h, w) positions */
    int rope_sect_mode;
    int rope_sections[4];
    bool rope_text_table;         /* text rows too rope by table (a pair in the 'e' section: qwenvl_text.c) */
    int n_deepstack;              /* qwen3vl: image rows carry n_embd * (1 + n_deepstack) floats (qwenvl_text.c) */
    /* Sliding-window layers ({arch}.attention.sliding_window_pattern, llama.cpp's
     * load_swa_pattern): the key is either a period (gemma3 6, gpt-oss 2: layer il slides iff
     * il % pattern < pattern - 1; 0 = no layer slides) or one bool per layer, kept in swa_mask
     * (swa_by_mask). swa_window 0: no sliding window at all. */
    int swa_window, swa_pattern;
    bool swa_by_mask;
    uint64_t swa_mask[MODEL_MAX_LAYERS / 64];
    float attn_scale;
    /* mistral3's llama 4-style query temperature: the query at position p is multiplied by
     * 1 + attn_temp_scale * ln(floor(p / attn_temp_floor) + 1); attn_temp_scale 0 = off */
    float attn_temp_scale;
    int attn_temp_floor;
    float final_softcap;
    bool embd_scale;              /* gemma: x *= sqrt(n_embd) after lookup */
    bool noncausal;               /* bidirectional attention (encoders, gemma-embedding) */
    bool embedding_only;          /* no generation (bert, nomic-bert, gemma-embedding) */
    model_pooling pooling;        /* {arch}.pooling_type; MEAN when absent */
    /* MoE (moe.c): n_expert = 0 for a dense model */
    int n_expert, n_expert_used, n_ff_exp, n_ff_shexp;
    bool expert_norm;             /* renormalise the top-k weights to sum 1 */
    float expert_scale;           /* multiply the weights (0 or 1 = off) */
    int expert_gating;            /* llama.cpp's expert_gating_func: 1 softmax, 2 sigmoid,
                                   * 3 softmax over the top-k logits (gpt-oss) */
    /* qwen35 (qwen35.c): the gated DeltaNet layers (recr_mask bit il set) between gated
     * full-attention layers; n_layer excludes the MTP (nextn) layers, which are not run */
    int ssm_d_conv, ssm_d_inner, ssm_d_state, ssm_n_v_head, ssm_n_k_head, n_layer_nextn;
    uint64_t recr_mask[MODEL_MAX_LAYERS / 64];
    /* Per-layer shapes (gemma4.c): the sliding layers' head size and rotated dims (0 = as the
     * full layers), each layer's KV heads and FFN width (0 = n_kv_head / n_ff), the first layer
     * that reuses an earlier layer's KV cache (0 = none does), per-layer embedding width. Read
     * them through the model_layer_* helpers below. */
    int head_dim_swa, n_rot_swa, n_layer_kv, n_embd_per_layer;
    int layer_n_kv_head[MODEL_MAX_LAYERS], layer_n_ff[MODEL_MAX_LAYERS], layer_n_ff_exp[MODEL_MAX_LAYERS];
} model_hparams;

/* One decoder layer's weights, on its backend. Shapes [rows][cols] as the ops use them (a weight
 * [out][in] maps an activation row of in to one of out); hd = head_dim_k; NULL = absent. */
typedef struct {
    /* attention (attention.c) */
    be_tensor *attn_norm;            /* [n_embd] */
    be_tensor *wq, *wk, *wv;         /* [n_head*hd][n_embd], [n_kv_head*hd][n_embd] x2 */
    be_tensor *wo;                   /* [n_embd][n_head*hd] */
    be_tensor *bq, *bk, *bv;         /* qwen2: [n_head*hd], [n_kv_head*hd] x2 */
    be_tensor *q_norm, *k_norm;      /* qwen3, gemma3: per head [hd] */
    be_tensor *post_attn_norm;       /* gemma: [n_embd] on the block output */
    /* feed-forward (feed_forward.c) */
    be_tensor *ffn_norm;             /* [n_embd] */
    be_tensor *w_gate, *w_up;        /* [n_ff][n_embd] */
    be_tensor *w_down;               /* [n_embd][n_ff] */
    be_tensor *post_ffn_norm;        /* gemma: [n_embd] */
    /* MoE (moe.c): router [n_expert][n_embd], one 2-D weight per expert cut from the 3-D
     * GGUF tensors ([n_ff_exp][n_embd], down [n_embd][n_ff_exp]), the shared expert
     * ([n_ff_shexp][n_embd]...) and its sigmoid gate [1][n_embd] (qwen2moe) */
    be_tensor *moe_router, **exp_gate, **exp_up, **exp_down;
    be_tensor *sh_gate, *sh_up, *sh_down, *sh_router;
    /* gpt-oss (gptoss.c): output bias [n_embd], attention sinks [n_head], router bias
     * [n_expert], per-expert biases */
    be_tensor *bo, *attn_sinks, *moe_router_b, **exp_gate_b, **exp_up_b, **exp_down_b;
    /* qwen35 (qwen35.c): the attention output gate wq_gate (attn_q's gate rows; wq then holds
     * its query rows, both aliasing q_host), and a recurrent layer's gated DeltaNet: fused
     * qkv and z projections, conv kernel F32 [conv channels][d_conv], dt bias, a = -exp(A_log),
     * beta and alpha projections, gated norm [d_state], output projection */
    be_tensor *wq_gate;
    be_tensor *ssm_qkv, *ssm_z, *ssm_conv, *ssm_dt_bias, *ssm_a, *ssm_beta, *ssm_alpha, *ssm_norm, *ssm_out;
    void *q_host;
    /* gemma4 (gemma4.c): per-layer input gate [n_embd_per_layer][n_embd], projection
     * [n_embd][n_embd_per_layer] and post-norm; the layer output scale (0 = none); wv NULL
     * where V = K (no attn_v) */
    be_tensor *pl_gate, *pl_proj, *pl_post_norm;
    float out_scale;
    /* gemma4 MoE layers: the router input scale [n_embd], the experts' input norm, the dense
     * FFN's and the experts' output norms; a per-expert output scale on the host (moe.c) */
    be_tensor *router_scale, *pre_norm_2, *post_norm_1, *post_norm_2;
    float *exp_scale;
    backend *be;
} model_layer;

typedef struct model {
    gguf_file *gguf;
    model_hparams hp;
    tokenizer *tok;
    char *chat_template;       /* tokenizer.chat_template or NULL */
    be_tensor *tok_embd;       /* always on the CPU (host lookup) */
    be_tensor *output_norm, *output; /* on the last layer's backend; output may alias tok_embd */
    be_tensor *rope_freqs, *rope_freqs_gpu; /* llama3 rope_freqs on the CPU / on the GPU backend */
    backend *gpu;              /* GPU backend holding the last layers, or NULL */
    bool owns_gpu;             /* model_free destroys gpu (model_load_placed) */
    bool owns_cpu;             /* model_free destroys cpu (model_load_placed) */
    model_layer *layers;
    backend *cpu;              /* the CPU backend (holds the embeddings; the layers not on gpu) */
    backend *out_be;           /* backend of the output head */
    uint64_t weight_bytes;
    struct encoder_weights *enc; /* bert / nomic-bert: encoder.c's own weights, else NULL */
    be_tensor *dense2, *dense3;  /* gemma-embedding's sentence-transformers projections (CPU) or NULL */
    uint64_t host_reserved;      /* host bytes its placement admitted it for (model_reserve_host) */
    int default_ctx;             /* the context of a request without num_ctx (model_load_placed: by the
                                  * GPU's memory, model_place.h); 0 = min(4096, n_ctx_train) */
    struct gemma4_weights *g4;   /* gemma4's per-layer token embeddings (gemma4.c), else NULL */
} model;

/* The caller creates the backends and passes them in (the model never includes a backend's
 * folder); they must outlive the model unless owns_cpu / owns_gpu hand them over. */
typedef struct {
    backend *cpu;        /* required: the CPU backend (cpu_backend_new) */
    int n_gpu_layers;    /* last N layers on the GPU backend (if any); -1 = all that fit */
    backend *gpu;        /* optional GPU backend for offloaded layers */
} model_load_opts;

/* True if layer il is a recurrent (gated DeltaNet) layer of a hybrid model (qwen35). */
static inline bool model_layer_is_recurrent(const model_hparams *hp, int il) {
    return il >= 0 && il < MODEL_MAX_LAYERS && (hp->recr_mask[il / 64] >> (il % 64) & 1);
}
/* Reads "<arch>.<suffix>" as a u32 (at most 2^30) into *out; absent: *out kept, or an error when
 * required; a wrong type or range: false + a one-line error naming the key (the families'
 * hyperparameter readers: model.c, gemma4.c, qwen35.c). */
bool model_read_u32(const gguf_file *f, const char *arch, const char *suffix, int *out, bool required);
/* qwenvl_text.c: the qwen3vl / qwen2vl text archs' M-RoPE sections and deepstack count. */
int qwenvl_read_hparams(const gguf_file *f, const char *arch, model_hparams *hp);
/* True if layer il uses the sliding window (and the local RoPE base). */
bool model_layer_is_swa(const model_hparams *hp, int il);
/* Layer il's head size, rotated dims, KV heads, FFN width (per layer in gemma4, else the
 * scalars) and the layer whose KV cache it attends over (il itself unless it shares one). */
int model_layer_head_dim(const model_hparams *hp, int il);
int model_layer_n_rot(const model_hparams *hp, int il);
int model_layer_n_kv_head(const model_hparams *hp, int il);
int model_layer_n_ff(const model_hparams *hp, int il);
int model_layer_kv_source(const model_hparams *hp, int il);
/* Reads {arch}.attention.sliding_window_pattern (a period or a per-layer bool array; absent:
 * default_pattern) into hp; -1 + error naming the key if it is malformed. */
int model_read_swa_pattern(const gguf_file *f, model_hparams *hp, int default_pattern);

/* Ollama's rule, from the header alone: a file with {arch}.pooling_type set embeds and does not
 * complete (one slot in the server; `run` prints its embedding). */
bool model_file_embeds_only(const gguf_file *f);

model *model_load(const char *path, const model_load_opts *opts);
void model_free(model *m);
/* The host memory ledger of ANVIL_MAX_HOST_MEMORY: a placed model holds the bytes its
 * admission counted (KV caches on the host, compute buffers) until model_free. */
void model_reserve_host(model *m, uint64_t bytes);
uint64_t model_host_reserved_total(void);
/* Count of parameters (elements of all weight tensors). */
uint64_t model_n_params(const model *m);

typedef struct model_ctx model_ctx;
/* kv_type: QT_F16 (default) / QT_F32 / QT_Q8_0 / QT_Q4_0 (quantized: head_dim % 32 == 0). */
model_ctx *model_ctx_new(model *m, int n_ctx, uint32_t kv_type);
void model_ctx_free(model_ctx *c);
int model_ctx_n_past(const model_ctx *c);
model *model_ctx_model(const model_ctx *c);
int model_ctx_n_ctx(const model_ctx *c);
void model_ctx_reset(model_ctx *c);
/* The tokens in the cache (model_ctx_n_past of them). */
const int32_t *model_ctx_history(const model_ctx *c);
/* Forgets every token after the first n (prefix reuse between requests). A hybrid model's
 * recurrent layers (qwen35) cannot un-apply tokens: the context keeps state checkpoints (after
 * every evaluation of >= 2 tokens of a sequence, i.e. each prompt or prompt chunk; a ring of 3;
 * none after single-token decode steps), and truncate rolls back to the newest one at a
 * position <= n, or to 0 if there is none. n_past may therefore end below n: callers re-read
 * model_ctx_n_past and evaluate the tokens from there (generate.c and the server do). */
void model_ctx_truncate(model_ctx *c, int n);
/* Runs n tokens at positions n_past.. and advances n_past. logits: n_vocab floats of the
 * last token, or n * n_vocab if all_logits. Returns 0, or -1 with anv_last_error(). */
int model_eval(model_ctx *c, const int32_t *tokens, int n, float *logits, bool all_logits);

/* Runs n rows of input embeddings (n * n_embd floats, e.g. an image's from engine/vision) in
 * place of token lookups at positions n_past.. (no embedding scale): causal rows in passes of
 * model_ctx_n_batch, bidirectional ones in one pass (the batch grows to n first:
 * model_ctx_reserve_batch). bidirectional: the n rows attend to each other both ways (gemma3's
 * image tokens; sliding layers keep their window backwards, as llama.cpp's non-causal mask,
 * also for more rows than the window).
 * The cache history records them as MODEL_TOKEN_EMBD. logits as model_eval. 0 or -1 + error. */
#define MODEL_TOKEN_EMBD (-1)
int model_eval_embd(model_ctx *c, const float *embd, int n, bool bidirectional, float *logits, bool all_logits);
/* Floats per embedding row model_eval_embd takes: n_embd, times 1 + n_deepstack for qwen3vl. */
int model_n_embd_inp(const model *m);
/* The same for an image's rows laid out as a grid_w x grid_h raster (n == grid_w * grid_h). In a
 * model with M-RoPE (hp.rope_sect_mode) row i gets llama.cpp's mtmd positions (t, h, w, e) =
 * (p0, p0 + i / grid_w, p0 + i % grid_w, 0) with p0 the next text position, and the text after
 * it continues at p0 + max(grid_w, grid_h): the KV slots (n_past) advance by n, the rope
 * positions by max(grid_w, grid_h) (model_ctx_next_pos). Other models: model_eval_embd. */
int model_eval_embd_grid(model_ctx *c, const float *embd, int n, int grid_w, int grid_h, bool bidirectional, float *logits,
                         bool all_logits);
/* The rope position the next row evaluated at slot n_past gets (== n_past unless images with
 * M-RoPE came before). */
int model_ctx_next_pos(const model_ctx *c);

/* A context with its own KV cache and history that borrows parent's activation scratch
 * (server slots: one scratch for all of a model's slots). parent must outlive it, and
 * contexts sharing a scratch must not be evaluated concurrently. */
model_ctx *model_ctx_new_shared(model_ctx *parent, int n_ctx, uint32_t kv_type);
/* Most tokens one forward pass takes (model_eval splits longer inputs; model_eval_multi
 * does not). */
int model_ctx_n_batch(const model_ctx *c);
/* Grows c's activation scratch (a shared one: for every context sharing it) to hold passes of
 * at least n_rows rows (capped at c's context size), e.g. the largest bidirectional image of a
 * projector (vision_batch_rows), which goes in one pass. Costs the scratch's bytes per row
 * (activations of the widest layer, a few n_embd and n_ff wide) times the rows added; the old
 * scratch is freed after the new one is made. Must not run during another context's pass on
 * the same scratch. 0 (also when already large enough), or -1 + error (the old one kept). */
int model_ctx_reserve_batch(model_ctx *c, int n_rows);
/* Continuous batching: one forward pass over n_seq independent sequences; sequence i
 * appends n_tokens[i] (>= 1) tokens to ctxs[i] at its own positions and attends only to
 * its own cache. Every ctx must share ctxs[0]'s scratch (model_ctx_new_shared or ctxs[0]
 * itself) and the total must be <= model_ctx_n_batch. logits (if not NULL): n_seq rows of
 * n_vocab floats, the last token of each sequence. Returns 0 or -1 + anv_last_error(). */
int model_eval_multi(model_ctx *const *ctxs, const int32_t *const *tokens, const int *n_tokens,
                     int n_seq, float *logits);
/* Embedding: evaluates tokens (appended at n_past like model_eval) and writes the model's
 * pooling (mean, CLS = first, last token) of the final hidden state (final-normed for the
 * decoder families), then the dense projections if the file has them: n_embd floats, not
 * normalised. An encoder or noncausal model takes all n tokens in one pass. */
int model_embed(model_ctx *c, const int32_t *tokens, int n, float *out);
#endif
