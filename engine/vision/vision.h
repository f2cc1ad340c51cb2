/* vision: image encoders and their projectors, loaded from a projector GGUF as llama.cpp's
 * converter writes one (general.architecture = clip, clip.projector_type, clip.vision.*,
 * v.* / mm.* tensors), written once against backend.h; and the text side of an image: its
 * embeddings evaluated into a text model's context (model_eval_embd).
 *
 * Supported projector types: gemma3 (SigLIP ViT, average pool, soft-embedding norm, input
 * projection), llava-1.5's mlp (CLIP ViT with a class token, pre-LN, quick GELU, the second
 * to last layer's output, a two-layer GELU MLP; llama.cpp's legacy converter's files),
 * gemma4v (variable resolution, 2-D rope RMS-norm ViT, vision_gemma4.c), qwen3vl (qwen3-vl and
 * qwen3.5: dynamic resolution, 2-D rope, 2x2 merger, deepstack rows), qwen2.5vl (window
 * attention, RMSNorm, SwiGLU; both vision_qwen.c) and pixtral (mistral3: Mistral Small 3.x,
 * pixtral-12b; dynamic resolution, 2-D rope, optional patch merger, [IMG_BREAK] rows:
 * vision_pixtral.c); the variable-size ones give a layout per image. Every other type (and llava-1.6's grid pinpoints, explicit feature layers) is refused
 * at load with one line naming it.
 *
 * Use (the server / CLI side):
 *   char *p = vision_find_projector(model_path, mmproj_or_NULL);   // or store_entry.projector_path
 *   vision_model *v = vision_load(p, &(vision_load_opts){.cpu = m->cpu, .gpu = m->gpu});
 *   vision_check_text_model(v, m);                 // widths agree
 * then either the whole prompt at once (rendered text with one VISION_MARKER per image):
 *   vision_eval_prompt(ctx, v, text, NULL, images, n_images, &toks, &n);  generate_seq(ctx, .., toks, n, ..)
 * or piecewise (a per-image embedding cache keyed by the image digest sits between the two):
 *   vision_image_layout(v, w, h, &lay);            // lay.n_tokens rows of vision_n_embd(v)
 *   vision_encode(v, rgb, w, h, embd);
 *   vision_eval_image(ctx, v, embd, &lay, NULL);   // the caller evaluates the begin / end text around it
 */
#ifndef ANVIL_VISION_H
#define ANVIL_VISION_H
#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "model.h"

typedef enum {
    VISION_PROJ_GEMMA3 = 0, VISION_PROJ_MLP = 1, VISION_PROJ_GEMMA4 = 2, VISION_PROJ_QWEN3VL = 3, VISION_PROJ_QWEN25VL = 4,
    VISION_PROJ_PIXTRAL = 5
} vision_proj_type;

typedef struct vision_model vision_model;

typedef struct {
    backend *cpu;   /* required: the CPU backend (preprocessing and pooling run on the host) */
    backend *gpu;   /* optional: the whole encoder runs there (NULL = on cpu) */
} vision_load_opts;

/* Opens and checks a projector file; NULL + a one-line anv_last_error() naming the file and the
 * problem (not a clip file, unsupported projector type, missing key or tensor, bad shape). */
vision_model *vision_load(const char *path, const vision_load_opts *opts);
void vision_free(vision_model *v);
/* The header and hyperparameters only (no weights, no backend): enough for vision_image_layout,
 * the begin / end text and vision_noncausal (planning and counting a prompt without encoding);
 * vision_encode refuses it. NULL + error as vision_load. */
vision_model *vision_load_info(const char *path);
/* A number naming this loaded projector, never reused within the process (the cache key's half). */
uint64_t vision_model_id(const vision_model *v);

vision_proj_type vision_projector(const vision_model *v);
/* Width of one output embedding (the text model's n_embd: gemma3's projection_dim, mm.2's rows). */
int vision_n_embd(const vision_model *v);
/* Where one image's embedding rows go: n_tokens rows, a grid_w x grid_h raster in row-major
 * order (after the projector's merge or pooling), from an image preprocessed to width x height
 * pixels. Fixed-size encoders (gemma3, mlp) give the same layout for every image; dynamic-
 * resolution ones (qwen-vl) depend on the image. The text side uses the grid for M-RoPE. */
typedef struct {
    int n_tokens;        /* embedding rows (gemma3: (image_size / patch_size / merge)^2; mlp: one per patch) */
    int grid_w, grid_h;  /* n_tokens == grid_w * grid_h (pixtral: grid_w counts the [IMG_BREAK]
                          * column, which the last row lacks: n_tokens == grid_w * grid_h - 1) */
    int width, height;   /* the preprocessed image's pixels */
} vision_layout;
/* The layout of an image of width x height source pixels; -1 + error (empty or over VISION_MAX_PIXELS). */
int vision_image_layout(const vision_model *v, int width, int height, vision_layout *out);
/* The nominal square side (clip.vision.image_size): every image for fixed-size encoders. */
int vision_image_size(const vision_model *v);
/* The most embedding rows any image can become under the projector's limits: fixed-size
 * encoders their count (gemma3 256 for 896 / 14 / 4), gemma4 its token budget's maximum (1120,
 * as clip.cpp), the qwen-vl encoders theirs (4096 merged patches). */
int vision_max_tokens(const vision_model *v);
/* Rows a text context's batch must hold for this projector's images: vision_max_tokens where
 * the image is bidirectional (evaluated in one pass: gemma3, gemma4 26B / 31B), else 0 (causal
 * images go in parts of any batch). Give it to model_ctx_reserve_batch when the projector loads. */
int vision_batch_rows(const vision_model *v);
/* The text that opens / closes an image in the prompt (gemma3: "<start_of_image>",
 * "<end_of_image>"; llama.cpp's mtmd wraps the embeddings in them), or "" where none. */
const char *vision_image_begin(const vision_model *v);
const char *vision_image_end(const vision_model *v);
/* Whether the text model attends bidirectionally among one image's tokens (gemma3). */
bool vision_noncausal(const vision_model *v);
/* 0, or -1 + error when the projector's output width is not the text model's n_embd. */
int vision_check_text_model(const vision_model *v, const model *m);

/* The preprocessing alone (tests): rgb (width x height RGB8, rows top to bottom) resized as
 * llama.cpp does for this projector into out: the layout's width x height RGB8 (image_size^2
 * for fixed-size encoders; gemma4 and the qwen-vl encoders: their variable size). */
int vision_preprocess_rgb(const vision_model *v, const uint8_t *rgb, int width, int height, uint8_t *out);
/* Encodes one image: out gets vision_image_layout(v, width, height).n_tokens rows of vision_n_embd(v) floats. -1 +
 * error for a bad image (empty, larger than VISION_MAX_PIXELS) or a backend failure. */
#define VISION_MAX_PIXELS (64 * 1024 * 1024)
int vision_encode(vision_model *v, const uint8_t *rgb, int width, int height, float *out);
/* Evaluates one image's embeddings (lay->n_tokens rows of n_embd, from vision_encode) into c at
 * n_past, bidirectionally among themselves where vision_noncausal(v); logits as model_eval_embd. */
int vision_eval_image(model_ctx *c, const vision_model *v, const float *embd, const vision_layout *lay, float *logits);

/* A prompt of text and images (llama.cpp's mtmd chunking): prompt holds one marker per image
 * (NULL or "" marker: VISION_MARKER), images[i] (RGB8, rows top to bottom) goes at marker i,
 * wrapped in vision_image_begin / end. Clears c, then evaluates every chunk but the prompt's
 * last token, and returns in *tokens_out (malloc'd) the whole prompt as tokens, each image's
 * rows as MODEL_TOKEN_EMBD: pass it to generate_seq, which then reuses all but the last token
 * and evaluates that one for the first logits. *n_out counts the image rows too (Ollama's
 * prompt_eval_count). 0, or -1 + error (marker count != n_images, a bad image, a prompt that
 * ends with an image, the model's errors). */
#define VISION_MARKER "<__media__>"
typedef struct { const uint8_t *rgb; int width, height; } vision_image;
int vision_eval_prompt(model_ctx *c, vision_model *v, const char *prompt, const char *marker, const vision_image *images,
                       int n_images, int32_t **tokens_out, int *n_out);

/* The projector for a model file: mmproj if given (checked to exist), else the model file itself
 * when it holds its vision tower (Ollama's single-file gemma3: vision_ollama.c), else a file next
 * to the model named mmproj*.gguf (the first in name order). Returns a malloc'd path or NULL
 * (none found: no error set). */
char *vision_find_projector(const char *model_path, const char *mmproj);
/* capabilities: whether the model can take images (a projector is found for it). */
bool model_has_vision(const char *model_path, const char *mmproj);
#endif
