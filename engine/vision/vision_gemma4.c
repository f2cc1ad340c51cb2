/* vision_gemma4: gemma4's vision encoder (llama.cpp's projector type "gemma4v", written by
 * conversion/gemma.py Gemma4VisionAudioModel; graph tools/mtmd/models/gemma4v.cpp):
 *  - variable resolution: the image keeps its aspect ratio, resized (bicubic, centred on black)
 *    to a size aligned to patch * pool that holds 70 .. 1120 output tokens (mtmd's dyn_size);
 *  - pixels scaled to [-1, 1] after the file's mean / std, patch embedding without bias, learned
 *    x and y position tables (v.position_embd [2][pos_size][n_embd]) added per patch;
 *  - RMS-norm ViT blocks: q / k RMS norms, a 2-D neox rope (first half of each head by the
 *    patch's column, second half by its row, theta 100), V RMS-normed without weight, attention
 *    scale 1, post-attention and post-FFN norms, a gated FFN (GELU quick unless clip.use_gelu),
 *    optional per-block output scale;
 *  - k x k average pool of the patch grid, times sqrt(n_embd), optional (x - std_bias) * std_scale,
 *    an RMS norm without weight and mm.input_projection.
 * The 2-D rope is built from existing backend ops (no new op): rope(x) = x * C + (x R^T) * S,
 * R the rotate-half permutation (one matmul) and C, S the per-row cos / sin tables.
 * Gemma4ClippableLinear: a linear's input and output are clamped (backend clamp op) where the
 * file has its scalars (<name>.input_min / input_max / output_min / output_max, F32 [1]; a
 * missing one is +-FLT_MAX, as llama.cpp). */
#include "vision_impl.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "quant.h"

#define G4_THETA 100.0f
#define G4_MIN_TOKENS 70
#define G4_MAX_TOKENS 1120

/* A linear's clamps (Gemma4ClippableLinear); in / out false: none in the file. */
typedef struct { float in_lo, in_hi, out_lo, out_hi; bool in, out; } g4_clip;

enum { G4_Q, G4_K, G4_V, G4_O, G4_GATE, G4_UP, G4_DOWN, G4_N_LIN };
static const char *const g4_lin_names[G4_N_LIN] = {"attn_q", "attn_k", "attn_v", "attn_out", "ffn_gate", "ffn_up", "ffn_down"};

typedef struct {
    be_tensor *ln1, *ln2, *attn_post, *ffn_post, *q_norm, *k_norm, *out_scale;
    be_tensor *w[G4_N_LIN];
    g4_clip clip[G4_N_LIN];
} g4_layer;

struct vision_gemma4 {
    g4_layer *layers;
    const float *pos_tbl;   /* [2][pos_size][n_embd]: x table, then y table */
    float *pos_copy;        /* the F32 copy when the file stores it F16 */
    int pos_size;
    int qk_norm_len;        /* row length of q_norm / k_norm: head_dim (per head) or n_embd */
    be_tensor *patch_w, *post_ln, *rot, *in_proj, *std_scale;
    g4_clip in_proj_clip;
    float *rot_host, *std_bias;   /* std_bias on the host (the pooled rows are there) */
    int64_t min_pixels, max_pixels;
};

/* The rotate-half matrix of the 2-D neox rope: per head, per half (base b, quarter q):
 * (R x)[b + i] = -x[b + i + q], (R x)[b + i + q] = x[b + i], i < q. */
static float *rotate_half_matrix(int e, int hd) {
    float *r = calloc((size_t)e * e, sizeof *r);
    if (!r) return NULL;
    const int q = hd / 4;
    for (int h = 0; h < e / hd; h++)
        for (int b = 0; b < hd; b += hd / 2)
            for (int i = 0; i < q; i++) {
                const int lo = h * hd + b + i, hi = lo + q;
                r[(size_t)lo * e + hi] = -1.0f;
                r[(size_t)hi * e + lo] = 1.0f;
            }
    return r;
}

/* One clamp scalar next to a linear (base + suffix): F32 [1]; 0 with *out set or left (absent), -1 + error. */
static int clip_scalar(const vision_model *v, const char *base, const char *suffix, float *out, bool *found) {
    char name[128];
    snprintf(name, sizeof name, "%s.%s", base, suffix);
    const gguf_tensor *t = gguf_find_tensor(v->gguf, name);
    if (!t) return 0;
    if (t->type != QT_F32 || t->ne[0] != 1 || t->ne[1] != 1 || t->ne[2] != 1 || t->ne[3] != 1 || !isfinite(*(const float *)t->data)) {
        anv_set_error("%s: tensor '%s' must hold one finite F32 value", v->gguf->path, name);
        return -1;
    }
    *out = *(const float *)t->data;
    *found = true;
    return 0;
}

/* The clamps of the linear <base>.weight (llama.cpp's clamp_info_map), block il's linear k (il -1:
 * the projector); Ollama's single file packs them in v.clamp_data (vision_ollama.c). */
static int read_clip(const vision_model *v, const char *base, int il, int k, g4_clip *c) {
    *c = (g4_clip){-FLT_MAX, FLT_MAX, -FLT_MAX, FLT_MAX, false, false};
    if (v->ollama) {
        float b[4];
        bool present = false;
        if (vision_ollama_clamps(v, il, k, G4_N_LIN, b, &present) != 0) return -1;
        if (present) *c = (g4_clip){b[0], b[1], b[2], b[3], true, true};
    } else if (clip_scalar(v, base, "input_min", &c->in_lo, &c->in) != 0 || clip_scalar(v, base, "input_max", &c->in_hi, &c->in) != 0 ||
        clip_scalar(v, base, "output_min", &c->out_lo, &c->out) != 0 || clip_scalar(v, base, "output_max", &c->out_hi, &c->out) != 0)
        return -1;
    if (c->in_lo > c->in_hi || c->out_lo > c->out_hi) {
        anv_set_error("%s: clamp bounds of '%s' are reversed (min above max)", v->gguf->path, base);
        return -1;
    }
    return 0;
}

/* Tensors llama.cpp's ViT would use that gemma4's converter never writes: refused rather than ignored. */
static int refuse_unexpected(const vision_model *v) {
    static const char *const names[] = {"v.pre_ln.weight", "v.patch_embd.bias", "v.post_ln.bias", "v.blk.0.attn_q.bias", "v.blk.0.attn_k.bias",
                                        "v.blk.0.attn_v.bias", "v.blk.0.attn_out.bias", "v.blk.0.ffn_up.bias", "v.blk.0.ffn_gate.bias",
                                        "v.blk.0.ffn_down.bias", "v.blk.0.ln1.bias", "v.blk.0.ln2.bias", "v.blk.0.ls1.weight",
                                        "v.blk.0.ls2.weight", "v.blk.0.attn_qkv.weight"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (gguf_find_tensor(v->gguf, names[i])) {
            anv_set_error("%s: gemma4v projector with tensor '%s' is not supported", v->gguf->path, names[i]);
            return -1;
        }
    return 0;
}

int gemma4v_info(vision_model *v) {
    const int64_t e = v->n_embd, hd = v->n_embd / v->n_head;
    if (hd % 4) {
        anv_set_error("%s: gemma4v head dimension %lld is not a multiple of 4 (2-D rope)", v->gguf->path, (long long)hd);
        return -1;
    }
    if (refuse_unexpected(v) != 0) return -1;
    struct vision_gemma4 *g = calloc(1, sizeof *g);
    if (!g) { anv_set_error("out of memory"); return -1; }
    v->g4 = g;
    const int64_t area = (int64_t)v->patch_size * v->patch_size * v->merge * v->merge;
    g->min_pixels = G4_MIN_TOKENS * area;
    g->max_pixels = G4_MAX_TOKENS * area;
    const gguf_tensor *pt = gguf_find_tensor(v->gguf, "v.position_embd.weight");
    if (!pt || pt->ne[0] != e || pt->ne[1] < 1 || pt->ne[1] > (1 << 20) || pt->ne[2] != 2 || pt->ne[3] != 1 ||
        (pt->type != QT_F32 && pt->type != QT_F16)) {
        anv_set_error("%s: tensor 'v.position_embd.weight' is %s, expected [%lld, positions, 2] F32/F16", v->gguf->path,
                      pt ? "misshapen" : "missing", (long long)e);
        return -1;
    }
    g->pos_size = (int)pt->ne[1];
    v->out_dim = v->proj_dim;
    return 0;
}

int gemma4v_load(vision_model *v) {
    const int64_t e = v->n_embd, ff = v->n_ff, hd = v->n_embd / v->n_head;
    struct vision_gemma4 *g = v->g4;
    if (!(g->layers = calloc((size_t)v->n_layer, sizeof *g->layers))) { anv_set_error("out of memory"); return -1; }
    bool fail = false;
    const gguf_tensor *pw = gguf_find_tensor(v->gguf, "v.patch_embd.weight");
    if (!pw || pw->ne[0] != v->patch_size || pw->ne[1] != v->patch_size || pw->ne[2] != 3 || pw->ne[3] != e ||
        (pw->type != QT_F32 && pw->type != QT_F16)) {
        anv_set_error("%s: tensor 'v.patch_embd.weight' is %s, expected [%d, %d, 3, %lld] F32/F16", v->gguf->path,
                      pw ? "misshapen" : "missing", v->patch_size, v->patch_size, (long long)e);
        return -1;
    }
    /* the conv kernel [out][in 3][ky][kx] read as [e][3 p p]: one matmul over unfolded patches */
    if (!(g->patch_w = v->be->ops->weight_new(v->be, pw->type, 3LL * v->patch_size * v->patch_size, e, pw->data))) return -1;
    const gguf_tensor *pt = gguf_find_tensor(v->gguf, "v.position_embd.weight");   /* checked by gemma4v_info */
    if (pt->type == QT_F16) {
        const int64_t n = 2 * pt->ne[1] * e;
        if (!(g->pos_copy = malloc((size_t)n * sizeof(float)))) { anv_set_error("out of memory"); return -1; }
        dequantize_row(QT_F16, pt->data, g->pos_copy, n);
        g->pos_tbl = g->pos_copy;
    } else {
        g->pos_tbl = (const float *)pt->data;
    }
    /* Q / K norms per head (ne[0] == head_dim) or over the whole row */
    const gguf_tensor *qn = gguf_find_tensor(v->gguf, "v.blk.0.attn_q_norm.weight");
    g->qk_norm_len = qn && qn->ne[0] == hd ? (int)hd : (int)e;
    for (int il = 0; il < v->n_layer && !fail; il++) {
        g4_layer *L = &g->layers[il];
        L->ln1 = vision_put_l(v, il, "ln1.weight", e, 1, true, &fail);
        L->ln2 = vision_put_l(v, il, "ln2.weight", e, 1, true, &fail);
        L->attn_post = vision_put_l(v, il, "attn_post_norm.weight", e, 1, false, &fail);
        L->ffn_post = vision_put_l(v, il, "ffn_post_norm.weight", e, 1, false, &fail);
        L->q_norm = vision_put_l(v, il, "attn_q_norm.weight", g->qk_norm_len, 1, false, &fail);
        L->k_norm = vision_put_l(v, il, "attn_k_norm.weight", g->qk_norm_len, 1, false, &fail);
        L->out_scale = vision_put_l(v, il, "out_scale.weight", 1, 1, false, &fail);
        for (int k = 0; k < G4_N_LIN && !fail; k++) {
            char base[48], wname[48];
            snprintf(base, sizeof base, "v.blk.%d.%s", il, g4_lin_names[k]);
            snprintf(wname, sizeof wname, "%s.weight", g4_lin_names[k]);
            const int64_t in = k == G4_DOWN ? ff : e, out = k == G4_GATE || k == G4_UP ? ff : e;
            L->w[k] = vision_put_l(v, il, wname, in, out, true, &fail);
            if (!fail && read_clip(v, base, il, k, &L->clip[k]) != 0) return -1;
        }
    }
    g->post_ln = vision_put(v, "v.post_ln.weight", e, 1, false, &fail);
    g->in_proj = vision_put(v, "mm.input_projection.weight", e, v->proj_dim, true, &fail);
    if (!fail && read_clip(v, "mm.input_projection", -1, 0, &g->in_proj_clip) != 0) return -1;
    g->std_scale = vision_put(v, "v.std_scale", e, 1, false, &fail);
    if (fail) return -1;
    const gguf_tensor *sb = gguf_find_tensor(v->gguf, "v.std_bias");
    if (!sb != !g->std_scale || (sb && (sb->type != QT_F32 || sb->ne[0] != e || sb->ne[1] != 1 || sb->ne[2] != 1))) {
        anv_set_error("%s: tensors 'v.std_bias' and 'v.std_scale' must both be F32 [%lld] or both absent", v->gguf->path, (long long)e);
        return -1;
    }
    g->std_bias = sb ? (float *)sb->data : NULL;
    if (!(g->rot_host = rotate_half_matrix((int)e, (int)hd))) { anv_set_error("out of memory"); return -1; }
    if (!(g->rot = v->be->ops->weight_new(v->be, QT_F32, e, e, g->rot_host))) return -1;
    return 0;
}

void gemma4v_free(vision_model *v) {
    struct vision_gemma4 *g = v->g4;
    if (!g) return;
    for (int il = 0; g->layers && il < v->n_layer; il++) {
        g4_layer *L = &g->layers[il];
        be_tensor *ts[] = {L->ln1, L->ln2, L->attn_post, L->ffn_post, L->q_norm, L->k_norm, L->out_scale};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) be_tensor_free(ts[i]);
        for (int k = 0; k < G4_N_LIN; k++) be_tensor_free(L->w[k]);
    }
    be_tensor *ts[] = {g->patch_w, g->post_ln, g->rot, g->in_proj, g->std_scale};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) be_tensor_free(ts[i]);
    free(g->layers);
    free(g->pos_copy);
    free(g->rot_host);
    free(g);
    v->g4 = NULL;
}

/* ---- preprocessing (mtmd's dyn_size: calc_size_preserved_ratio, then a PAD_CEIL resize) ---- */

int gemma4v_max_tokens(const vision_model *v) {
    (void)v;
    return G4_MAX_TOKENS;   /* max_pixels is this many tokens' area, and the layout stays within it */
}

int gemma4v_layout(const vision_model *v, int width, int height, vision_layout *out) {
    const struct vision_gemma4 *g = v->g4;
    int w, h;
    vision_dyn_size(v->patch_size * v->merge, g->min_pixels, g->max_pixels, width, height, &w, &h);
    const int nx = w / v->patch_size, ny = h / v->patch_size;
    if ((int64_t)w * h > 4 * g->max_pixels || nx > g->pos_size || ny > g->pos_size) {
        anv_set_error("image of %d x %d pixels has too extreme an aspect ratio for the gemma4 encoder (%d x %d patches, %d positions)",
                      width, height, nx, ny, g->pos_size);
        return -1;
    }
    *out = (vision_layout){.n_tokens = (nx / v->merge) * (ny / v->merge), .grid_w = nx / v->merge, .grid_h = ny / v->merge,
                           .width = w, .height = h};
    return 0;
}

int gemma4v_preprocess(const vision_model *v, const uint8_t *rgb, int width, int height, const vision_layout *lay, uint8_t *out) {
    return vision_resize_padded_wh(rgb, width, height, out, lay->width, lay->height, v->resize, v->pad);   /* PAD_CEIL, black */
}

/* ---- the encoder ---- */

typedef struct {
    be_tensor *patches, *x, *xn, *t2, *q, *k, *v, *att, *gate, *up, *gq, *cos, *sin, *pooled, *proj;
    be_tensor *cx;   /* a clamped linear input (max(n_embd, n_ff) per row), NULL without clamps */
} g4_scratch;

static void g4_scratch_free(g4_scratch *s) {
    be_tensor *ts[] = {s->patches, s->x, s->xn, s->t2, s->q, s->k, s->v, s->att, s->gate, s->up, s->gq, s->cos, s->sin, s->pooled, s->proj,
                       s->cx};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) be_tensor_free(ts[i]);
}

/* x = x * C + (x R^T) * S over n rows of n_embd (tmp: the rotated copy). */
static void rope_2d(const vision_model *v, g4_scratch *s, be_tensor *x, int n) {
    backend *be = v->be;
    const int64_t ne = (int64_t)n * v->n_embd;
    be->ops->matmul(be, v->g4->rot, x, s->t2, n, false);
    be->ops->mul(be, x, s->cos, x, ne, ne);
    be->ops->mul(be, s->t2, s->sin, s->t2, ne, ne);
    be->ops->add(be, x, s->t2, x, ne, ne);
}

/* out = w x over n rows, with the linear's clamps (llama.cpp's gemma4v build_mm). */
static void linear(const vision_model *v, g4_scratch *s, const be_tensor *w, const g4_clip *c, const be_tensor *x, be_tensor *out, int n) {
    backend *be = v->be;
    be_tensor cx;
    if (c->in) {
        cx = be_view_reshape(s->cx, w->cols, n);
        be->ops->clamp(be, x, &cx, w->cols * n, c->in_lo, c->in_hi);
        x = &cx;
    }
    be->ops->matmul(be, w, x, out, n, false);
    if (c->out) be->ops->clamp(be, out, out, w->rows * n, c->out_lo, c->out_hi);
}

static void g4_block(const vision_model *v, const g4_layer *L, g4_scratch *s, int n) {
    backend *be = v->be;
    const backend_ops *op = be->ops;
    const int64_t e = v->n_embd, ne = (int64_t)n * e, nf = (int64_t)n * v->n_ff;
    const int hd = v->n_embd / v->n_head, qn = v->g4->qk_norm_len;
    op->rms_norm(be, s->x, L->ln1, s->xn, n, e, v->eps);
    linear(v, s, L->w[G4_Q], &L->clip[G4_Q], s->xn, s->q, n);
    linear(v, s, L->w[G4_K], &L->clip[G4_K], s->xn, s->k, n);
    linear(v, s, L->w[G4_V], &L->clip[G4_V], s->xn, s->v, n);
    if (L->q_norm) op->rms_norm(be, s->q, L->q_norm, s->q, ne / qn, qn, v->eps);
    if (L->k_norm) op->rms_norm(be, s->k, L->k_norm, s->k, ne / qn, qn, v->eps);
    rope_2d(v, s, s->q, n);
    rope_2d(v, s, s->k, n);
    op->rms_norm(be, s->v, NULL, s->v, (int64_t)n * v->n_head, hd, v->eps);
    be_attn_params ap = {.n_tok = n, .pos0 = 0, .n_head = v->n_head, .n_kv_head = v->n_head, .head_dim = hd, .scale = 1.0f,
                         .noncausal = true};
    op->attention(be, s->q, s->k, s->v, s->att, &ap);
    linear(v, s, L->w[G4_O], &L->clip[G4_O], s->att, s->t2, n);
    if (L->attn_post) op->rms_norm(be, s->t2, L->attn_post, s->t2, n, e, v->eps);
    op->add(be, s->x, s->t2, s->x, ne, ne);
    op->rms_norm(be, s->x, L->ln2, s->xn, n, e, v->eps);
    linear(v, s, L->w[G4_GATE], &L->clip[G4_GATE], s->xn, s->gate, n);
    linear(v, s, L->w[G4_UP], &L->clip[G4_UP], s->xn, s->up, n);
    be_tensor *h = s->gate;
    if (!v->gelu_quick) {
        op->glu(be, s->gate, s->up, s->gate, nf, BE_GLU_GELU_TANH);
    } else {   /* gelu_quick(g) * up = sigmoid(1.702 g) * g * up */
        op->store_rows(be, s->gate, s->gq, 0, n);
        op->scale(be, s->gq, nf, 1.702f);
        op->glu(be, s->gq, s->gate, s->gq, nf, BE_GLU_SIGMOID);
        op->mul(be, s->gq, s->up, s->gq, nf, nf);
        h = s->gq;
    }
    linear(v, s, L->w[G4_DOWN], &L->clip[G4_DOWN], h, s->t2, n);
    if (L->ffn_post) op->rms_norm(be, s->t2, L->ffn_post, s->t2, n, e, v->eps);
    op->add(be, s->x, s->t2, s->x, ne, ne);
    if (L->out_scale) op->mul(be, s->x, L->out_scale, s->x, ne, 1);
}

/* The host inputs of one image: the unfolded patches ([n][3 p p], scaled to [-1, 1]), the summed
 * x / y position rows and the rope's cos / sin tables ([n][n_embd] each). */
static void host_inputs(const vision_model *v, const uint8_t *img, int nx, int ny, float *patches, float *pos, float *cs, float *sn,
                        float *c_row) {
    const struct vision_gemma4 *g = v->g4;
    const int p = v->patch_size, W = nx * p, e = v->n_embd, hd = e / v->n_head, q = hd / 4;
    const float theta_scale = powf(G4_THETA, -2.0f / (float)(hd / 2));
    for (int py = 0; py < ny; py++)
        for (int px = 0; px < nx; px++) {
            const size_t t = (size_t)py * nx + px;
            float *row = patches + t * 3 * p * p;
            for (int c = 0; c < 3; c++)
                for (int ky = 0; ky < p; ky++)
                    for (int kx = 0; kx < p; kx++) {
                        const uint8_t u = img[(((size_t)py * p + ky) * W + (size_t)px * p + kx) * 3 + c];
                        row[((size_t)c * p + ky) * p + kx] = ((float)u / 255.0f - v->mean[c]) / v->std[c] * 2.0f - 1.0f;
                    }
            const float *tx = g->pos_tbl + (size_t)px * e, *ty = g->pos_tbl + ((size_t)g->pos_size + py) * e;
            for (int i = 0; i < e; i++) pos[t * e + i] = tx[i] + ty[i];
            /* ggml's rope cache: theta_i = pos * theta_scale^i, accumulated in float */
            const int at[2] = {px, py};
            for (int half = 0; half < 2; half++) {
                float th = (float)at[half];
                for (int i = 0; i < q; i++) {
                    c_row[2 * i] = cosf(th);
                    c_row[2 * i + 1] = sinf(th);
                    th *= theta_scale;
                }
                for (int h = 0; h < v->n_head; h++)
                    for (int i = 0; i < q; i++) {
                        const size_t lo = t * e + (size_t)h * hd + (size_t)half * (hd / 2) + i;
                        cs[lo] = cs[lo + q] = c_row[2 * i];
                        sn[lo] = sn[lo + q] = c_row[2 * i + 1];
                    }
            }
        }
}

/* k x k average pool of the nx x ny grid (host), times sqrt(n_embd), then (x - std_bias) * std_scale
 * (the scale on the backend). */
static void pool(const vision_model *v, const float *x, int nx, int ny, float *out) {
    const int k = v->merge, ox_n = nx / k, oy_n = ny / k, e = v->n_embd;
    const float inv = 1.0f / (float)(k * k), mul = sqrtf((float)e);
    const float *bias = v->g4->std_bias;
    for (int oy = 0; oy < oy_n; oy++)
        for (int ox = 0; ox < ox_n; ox++) {
            float *o = out + ((size_t)oy * ox_n + ox) * e;
            for (int c = 0; c < e; c++) o[c] = 0;
            for (int ky = 0; ky < k; ky++)
                for (int kx = 0; kx < k; kx++) {
                    const float *r = x + ((size_t)(oy * k + ky) * nx + (size_t)ox * k + kx) * e;
                    for (int c = 0; c < e; c++) o[c] += r[c];
                }
            for (int c = 0; c < e; c++) {
                o[c] = o[c] * inv * mul;
                if (bias) o[c] -= bias[c];
            }
        }
}

int gemma4v_encode(vision_model *v, const uint8_t *rgb, int width, int height, float *out) {
    vision_layout lay;
    if (gemma4v_layout(v, width, height, &lay) != 0) return -1;
    const int p = v->patch_size, nx = lay.width / p, ny = lay.height / p, n = nx * ny, n_out = lay.n_tokens;
    const int64_t e = v->n_embd, pp3 = 3LL * p * p, ne = (int64_t)n * e;
    backend *be = v->be;
    const backend_ops *op = be->ops;
    g4_scratch s = {0};
    int rc = -1;
    uint8_t *img = malloc((size_t)lay.width * lay.height * 3);
    float *patches = malloc((size_t)n * pp3 * sizeof(float)), *pos = malloc((size_t)ne * sizeof(float));
    float *cs = malloc((size_t)ne * sizeof(float)), *sn = malloc((size_t)ne * sizeof(float));
    float *pooled = malloc((size_t)n_out * e * sizeof(float)), *c_row = malloc((size_t)e * sizeof(float));
    if (!img || !patches || !pos || !cs || !sn || !pooled || !c_row) { anv_set_error("out of memory"); goto done; }
    if (gemma4v_preprocess(v, rgb, width, height, &lay, img) != 0) goto done;
    host_inputs(v, img, nx, ny, patches, pos, cs, sn, c_row);
    s.patches = be_tensor_new(be, QT_F32, pp3, n);
    s.x = be_tensor_new(be, QT_F32, e, n);
    s.xn = be_tensor_new(be, QT_F32, e, n);
    s.t2 = be_tensor_new(be, QT_F32, e, n);
    s.q = be_tensor_new(be, QT_F32, e, n);
    s.k = be_tensor_new(be, QT_F32, e, n);
    s.v = be_tensor_new(be, QT_F32, e, n);
    s.att = be_tensor_new(be, QT_F32, e, n);
    s.gate = be_tensor_new(be, QT_F32, v->n_ff, n);
    s.up = be_tensor_new(be, QT_F32, v->n_ff, n);
    s.gq = be_tensor_new(be, QT_F32, v->n_ff, n);
    s.cos = be_tensor_new(be, QT_F32, e, n);
    s.sin = be_tensor_new(be, QT_F32, e, n);
    s.pooled = be_tensor_new(be, QT_F32, e, n_out);
    s.proj = be_tensor_new(be, QT_F32, v->out_dim, n_out);
    s.cx = be_tensor_new(be, QT_F32, v->n_ff > e ? v->n_ff : e, n);
    if (!s.cx || !s.patches || !s.x || !s.xn || !s.t2 || !s.q || !s.k || !s.v || !s.att || !s.gate || !s.up || !s.gq || !s.cos || !s.sin ||
        !s.pooled || !s.proj)
        goto done;
    be_upload(s.patches, 0, patches, (size_t)n * pp3 * sizeof(float));
    be_upload(s.xn, 0, pos, (size_t)ne * sizeof(float));
    be_upload(s.cos, 0, cs, (size_t)ne * sizeof(float));
    be_upload(s.sin, 0, sn, (size_t)ne * sizeof(float));
    op->matmul(be, v->g4->patch_w, s.patches, s.x, n, false);
    op->add(be, s.x, s.xn, s.x, ne, ne);
    for (int il = 0; il < v->n_layer; il++) g4_block(v, &v->g4->layers[il], &s, n);
    if (v->g4->post_ln) op->rms_norm(be, s.x, v->g4->post_ln, s.x, n, e, v->eps);
    be_download(s.x, 0, pos, (size_t)ne * sizeof(float));   /* pos: [n][e], free again */
    if (be_error(be)) { anv_set_error("%s", be_error(be)); goto done; }
    pool(v, pos, nx, ny, pooled);
    be_upload(s.pooled, 0, pooled, (size_t)n_out * e * sizeof(float));
    if (v->g4->std_scale) op->mul(be, s.pooled, v->g4->std_scale, s.pooled, (int64_t)n_out * e, e);
    op->rms_norm(be, s.pooled, NULL, s.pooled, n_out, e, v->eps);
    linear(v, &s, v->g4->in_proj, &v->g4->in_proj_clip, s.pooled, s.proj, n_out);
    be_download(s.proj, 0, out, (size_t)n_out * v->out_dim * sizeof(float));
    if (be_error(be)) { anv_set_error("%s", be_error(be)); goto done; }
    rc = 0;
done:
    g4_scratch_free(&s);
    free(img);
    free(patches);
    free(pos);
    free(cs);
    free(sn);
    free(pooled);
    free(c_row);
    return rc;
}
