/* vision_impl: what the files of engine/vision share (the loaded projector, the resampler).
 * Internal to engine/vision. */
#ifndef ANVIL_VISION_IMPL_H
#define ANVIL_VISION_IMPL_H
#include "vision.h"

typedef enum { VISION_RESIZE_BILINEAR = 0, VISION_RESIZE_BICUBIC = 1 } vision_resize_algo;

/* One ViT block's weights on the encoder's backend (biases and norms F32 [1][width]). */
typedef struct {
    be_tensor *ln1_w, *ln1_b, *ln2_w, *ln2_b;
    be_tensor *wq, *wk, *wv, *wo, *bq, *bk, *bv, *bo;
    be_tensor *w_up, *b_up, *w_down, *b_down;
} vision_layer;

struct vision_model {
    gguf_file *gguf;
    uint64_t id;                 /* vision_model_id */
    bool ollama;                 /* Ollama's single-file layout (vision_ollama.c): its names */
    backend *be;                 /* the encoder's backend (NULL: vision_load_info, no weights) */
    backend *cpu;
    vision_proj_type proj;
    int n_embd, n_head, n_ff, n_layer, image_size, patch_size, merge, proj_dim;
    int out_dim;                 /* width of an output row (the text model's n_embd) */
    int n_layer_run;             /* blocks run: mlp stops before the last (llama.cpp's llava graph) */
    bool gelu_quick;             /* x * sigmoid(1.702 x) (clip.use_gelu false), else GELU (tanh) */
    float eps, mean[3], std[3];
    vision_resize_algo resize;
    uint8_t pad[3];              /* the padded square's colour */
    const float *class_embd;     /* mlp: the class token (host, F32 [n_embd]) or NULL */
    float *pos_host;             /* position embeddings stored F16 (llava files): an F32 copy */
    be_tensor *patch_w, *patch_b, *pos_embd, *pre_ln_w, *pre_ln_b, *post_ln_w, *post_ln_b;
    be_tensor *center;           /* I - 1/n_embd: LayerNorm's centering as a matmul */
    float *center_host;
    vision_layer *layers;
    /* gemma3: the soft-embedding norm [n_embd] and the input projection, transposed on load
     * to [proj_dim][n_embd] F32 (the file has it [n_embd][proj_dim]) */
    be_tensor *soft_norm, *in_proj;
    float *in_proj_host;
    be_tensor *mm0_w, *mm0_b, *mm2_w, *mm2_b;   /* mlp: [hidden][n_embd], [out_dim][hidden] + biases */
    struct vision_gemma4 *g4;    /* gemma4v's own weights (vision_gemma4.c) */
    struct vision_qwen *qwen;    /* qwen3vl's own state (vision_qwen.c), else NULL */
    struct vision_pixtral *pix;  /* pixtral's own state (vision_pixtral.c), else NULL */
};

/* Ollama's single-file vision GGUFs (vision_ollama.c: gemma3, qwen25vl, qwen3vl, qwen35, gemma4): whether f is
 * one (the text architecture with its vision metadata and tensors), the projector it holds, its
 * hyperparameters into v (-1 + error), a tensor asked for by llama.cpp's clip name found under
 * Ollama's (NULL if absent), and the name Ollama's layout gives llama.cpp's (buf, or name itself). */
bool vision_ollama_detect(const gguf_file *f);
vision_proj_type vision_ollama_proj(const gguf_file *f);
int vision_ollama_hparams(vision_model *v);
const gguf_tensor *vision_ollama_tensor(const gguf_file *f, const char *name);
const char *vision_ollama_name(const gguf_file *f, const char *name, char *buf, size_t cap);
/* qwen3vl: the deepstack blocks (ds_of_layer[block] = its row slot, from
 * vision.deepstack_visual_indexes; ds_of_layer preset to -1), and the Conv3D patch kernel's two
 * temporal halves summed, malloc'd F32 [n_embd][3 p p] (NULL + error). */
int vision_ollama_deepstack(const vision_model *v, int *ds_of_layer, int *n_deepstack);
float *vision_ollama_qwen3vl_patch(const vision_model *v);
/* gemma4: the clamps of block il's linear k of n_lin (il -1: the projector) from v.clamp_data
 * (in min, in max, out min, out max; *present false without that tensor); -1 + error. */
int vision_ollama_clamps(const vision_model *v, int il, int k, int n_lin, float out[4], bool *present);
/* A tensor by llama.cpp's name in v's file, either layout; the name it has there (for errors). */
const gguf_tensor *vision_tensor(const vision_model *v, const char *name);
const char *vision_tensor_name(const vision_model *v, const char *name, char *buf, size_t cap);

/* A tensor of ne [ne0, ne1] (ne1 = 1: a vector, F32) by llama.cpp's clip name (either file layout:
 * vision_tensor), placed on the encoder's backend. Absent and optional: NULL, no failure; absent
 * and required, or misshapen: NULL, *fail set and a one-line error; nothing once *fail is set.
 * vision_put_l names a block's tensor ("v.blk.<il>.<suffix>"). */
be_tensor *vision_put(vision_model *v, const char *name, int64_t ne0, int64_t ne1, bool required, bool *fail);
be_tensor *vision_put_l(vision_model *v, int il, const char *suffix, int64_t ne0, int64_t ne1, bool required, bool *fail);
/* Pillow's resampling of RGB8 (w x h) to out_w x out_h; -1 + error (out of memory). */
int vision_resample(const uint8_t *src, int w, int h, uint8_t *dst, int out_w, int out_h, vision_resize_algo algo);
/* The aspect-preserving resize onto a size x size square filled with pad (llama.cpp's PAD_CEIL). */
int vision_resize_padded(const uint8_t *src, int w, int h, uint8_t *dst, int size, vision_resize_algo algo, const uint8_t pad[3]);
/* gemma4v (vision_gemma4.c): weights after the shared hparams, the per-image layout (variable
 * resolution), the resize to lay->width x lay->height RGB8, the encoder and projector. */
int gemma4v_info(vision_model *v);   /* from load_hparams: what the layout needs (vision_load_info too) */
int gemma4v_load(vision_model *v);   /* the weights, after gemma4v_info */
void gemma4v_free(vision_model *v);
int gemma4v_layout(const vision_model *v, int width, int height, vision_layout *out);
int gemma4v_max_tokens(const vision_model *v);   /* the token budget's maximum */
int gemma4v_preprocess(const vision_model *v, const uint8_t *rgb, int width, int height, const vision_layout *lay, uint8_t *out);
int gemma4v_encode(vision_model *v, const uint8_t *rgb, int width, int height, float *out);
/* The resize onto a tw x th canvas filled with pad (PAD_CEIL, centred; a copy when the sizes agree). */
int vision_resize_padded_wh(const uint8_t *src, int w, int h, uint8_t *dst, int tw, int th, vision_resize_algo algo, const uint8_t pad[3]);

/* The qwen-vl encoders (qwen3vl, qwen2.5vl: vision_qwen.c). */
static inline bool vision_is_qwen(const vision_model *v) { return v->proj == VISION_PROJ_QWEN3VL || v->proj == VISION_PROJ_QWEN25VL; }
/* qwen3vl / qwen2.5vl (vision_qwen.c): hyperparameters after the common ones, weights, free, layout, encode. */
int vision_qwen_hparams(vision_model *v);
/* The qwen state from hparams read either way: the spatial merge, the activation flag (use_silu /
 * use_gelu), and qwen2.5vl's n_wa_pattern and window_size in pixels. */
int vision_qwen_setup(vision_model *v, int merge, bool act_on, int wa_pattern, int window_px);
int vision_qwen_load(vision_model *v);
void vision_qwen_free(vision_model *v);
int vision_qwen_layout(const vision_model *v, int width, int height, vision_layout *out);
int vision_qwen_max_tokens(const vision_model *v);   /* merged patches of the largest image (max_pixels) */
int vision_qwen_encode(vision_model *v, const uint8_t *rgb, int width, int height, float *out);

/* pixtral (mistral3: vision_pixtral.c): hyperparameters after the common ones, weights, free,
 * layout ([IMG_BREAK] rows counted), encode. */
int vision_pixtral_hparams(vision_model *v);
int vision_pixtral_load(vision_model *v);
void vision_pixtral_free(vision_model *v);
int vision_pixtral_layout(const vision_model *v, int width, int height, vision_layout *out);
int vision_pixtral_encode(vision_model *v, const uint8_t *rgb, int width, int height, float *out);
/* clip.cpp's calc_size_preserved_ratio: width x height to multiples of f within [min, max] pixels. */
void vision_dyn_size(int f, int64_t min_pixels, int64_t max_pixels, int width, int height, int *ow, int *oh);
#endif
