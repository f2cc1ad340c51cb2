/* vision_qwen: the qwen-vl vision encoders over backend.h: qwen3-vl / qwen3.5 (llama.cpp's
 * projector type qwen3vl) and qwen2.5-vl (qwen2.5vl). Facts from today's llama.cpp
 * (tools/mtmd/models/qwen3vl.cpp, qwen2vl.cpp, clip.cpp, mtmd-image.cpp's dyn_size preprocessor,
 * conversion/qwen3vl.py, conversion/qwenvl.py). qwen3vl:
 *  - preprocessing: the image resized (Pillow bicubic, PAD_CEIL onto the target) to a multiple
 *    of patch_size * merge per side within [8, 4096] merged tokens' pixels (calc_size_preserved_ratio);
 *  - the Conv3D patch embedding with temporal size 2 is stored as two Conv2D kernels
 *    (v.patch_embd.weight, .weight.1) over the same frame: one matmul by their sum, plus the bias;
 *  - patches are ordered in 2 x 2 merge blocks (block raster, then dy, dx inside a block);
 *  - the learned position embeddings (a square grid) are interpolated bilinearly with aligned
 *    corners to the patch grid, then put in the same order;
 *  - blocks: LayerNorm, fused QKV with bias, 2-D rope (ggml's vision mode: pairs (i, i + d/2),
 *    the first d/4 pairs rotate by the row, the next d/4 by the column), non-causal attention,
 *    output projection, LayerNorm, GELU MLP with biases;
 *  - deepstack layers (clip.vision.is_deepstack_layers): the block's output, 4 rows merged,
 *    LayerNorm, fc1, GELU, fc2, concatenated after the merger's output in each embedding row;
 *  - post-LayerNorm per patch, then the merger: 4 rows merged, mm.0, GELU, mm.2.
 * qwen2.5vl, the same but: no patch bias and no learned positions; RMSNorms (weight only);
 * separate Q, K, V with biases; a SwiGLU MLP with biases (clip.use_silu); window attention in
 * every block but each clip.vision.n_wa_pattern-th: the merged tokens are grouped by windows of
 * clip.vision.window_size px (default 112; smaller at the right and bottom edges), each window
 * attends within itself (one attention call per window on the window-ordered rows); the
 * merger's rows are put back in raster order; no deepstack. */
#include "vision_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "quant.h"
#include "rope_table.h"

#define QWEN_MIN_TOKENS 8      /* clip.cpp's set_limit_image_tokens(8, 4096) */
#define QWEN_MAX_TOKENS 4096

typedef struct {
    be_tensor *norm_w, *norm_b, *fc1_w, *fc1_b, *fc2_w, *fc2_b;
} qwen_deepstack;

struct vision_qwen {
    bool v25;                    /* qwen2.5vl (else qwen3vl) */
    int wa_pattern, window;      /* qwen2.5vl: every wa_pattern-th block is global; window side in merged tokens */
    be_tensor **gate_w, **gate_b;/* qwen2.5vl: each block's ffn_gate */
    int pos_side;                /* the learned position grid's side (qwen3vl) */
    float *pos_host;             /* F32 [pos_side^2][n_embd] */
    float *patch_host;           /* the summed conv kernels, F32 [n_embd][3 p p] */
    int min_pixels, max_pixels;
    int n_hidden;                /* mm.0's rows */
    int n_deepstack;
    int *ds_of_layer;            /* per block: index into ds[], or -1 */
    qwen_deepstack *ds;
    be_tensor *center4;          /* LayerNorm centering over 4 * n_embd (deepstack only) */
    float *center4_host;
    int out_text;                /* mm.2's rows (the text model's n_embd) */
};

static bool tensor_ok(const gguf_tensor *t, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3) {
    return t && t->ne[0] == ne0 && t->ne[1] == ne1 && t->ne[2] == ne2 && t->ne[3] == ne3;
}

/* Rows [r0, r0 + n) of a 2-D tensor (the fused QKV split into Q, K, V), or of a vector (n elements). */
static be_tensor *qput_part(vision_model *v, const char *name, int64_t cols, int64_t total_rows, int64_t r0, int64_t n, bool *fail) {
    if (*fail) return NULL;
    const gguf_tensor *t = vision_tensor(v, name);
    const bool vec = total_rows == 1;
    const qtype_info *qi = t ? qtype_get(t->type) : NULL;
    char fn[160];
    if (!tensor_ok(t, cols, total_rows, 1, 1) || !qi || !qi->is_weight || (vec && t->type != QT_F32)) {
        anv_set_error("%s: tensor '%s' is %s, expected [%lld, %lld]%s", v->gguf->path, vision_tensor_name(v, name, fn, sizeof fn),
                      t ? "misshapen" : "missing",
                      (long long)cols, (long long)total_rows, vec ? " F32" : "");
        *fail = true;
        return NULL;
    }
    be_tensor *bt = vec ? v->be->ops->weight_new(v->be, QT_F32, n, 1, (const float *)t->data + r0)
                        : v->be->ops->weight_new(v->be, t->type, cols, n,
                                                 (const uint8_t *)t->data + (size_t)r0 * qtype_row_size((qtype)t->type, cols));
    if (!bt) *fail = true;
    return bt;
}

static float *dequant_all(const gguf_tensor *t, int64_t n) {
    float *out = malloc((size_t)n * sizeof(float));
    if (!out) { anv_set_error("out of memory"); return NULL; }
    dequantize_row((qtype)t->type, t->data, out, n);
    return out;
}

int vision_qwen_hparams(vision_model *v) {
    const gguf_file *f = v->gguf;
    const bool v25 = v->proj == VISION_PROJ_QWEN25VL;
    uint32_t merge = 2, pat = 0, win = 112;   /* clip.cpp: n_wa_pattern required, window_size 112 unless given */
    if (gguf_find(f, "clip.vision.spatial_merge_size") && !gguf_get_u32(f, "clip.vision.spatial_merge_size", &merge)) return -1;
    bool on = false;
    if (!gguf_get_bool(f, v25 ? "clip.use_silu" : "clip.use_gelu", &on)) on = false;
    if (v25) {
        if (!gguf_get_u32(f, "clip.vision.n_wa_pattern", &pat)) {
            if (!gguf_find(f, "clip.vision.n_wa_pattern")) anv_set_error("%s: missing metadata key clip.vision.n_wa_pattern", f->path);
            return -1;
        }
        if (gguf_find(f, "clip.vision.window_size") && !gguf_get_u32(f, "clip.vision.window_size", &win)) return -1;
    }
    return vision_qwen_setup(v, merge > 64 ? 0 : (int)merge, on, pat > (1u << 20) ? -1 : (int)pat, win > (1u << 20) ? -1 : (int)win);
}

int vision_qwen_setup(vision_model *v, int merge, bool act_on, int wa_pattern, int window_px) {
    const gguf_file *f = v->gguf;
    struct vision_qwen *q = calloc(1, sizeof *q);
    if (!q) { anv_set_error("out of memory"); return -1; }
    v->qwen = q;
    q->v25 = v->proj == VISION_PROJ_QWEN25VL;
    const char *type = q->v25 ? "qwen2.5vl" : "qwen3vl";
    if (merge != 2) { anv_set_error("%s: %s with spatial_merge_size %d is not supported (2 only)", f->path, type, merge); return -1; }
    v->merge = 2;
    v->resize = VISION_RESIZE_BICUBIC;
    memset(v->pad, 0, 3);
    v->n_layer_run = v->n_layer;
    if (!act_on) {
        anv_set_error("%s: %s projector without %s = true is not supported", f->path, type, q->v25 ? "clip.use_silu" : "clip.use_gelu");
        return -1;
    }
    if (v->n_embd % v->n_head || (v->n_embd / v->n_head) % 4) {
        anv_set_error("%s: %s head size %d must be a multiple of 4", f->path, type, v->n_head ? v->n_embd / v->n_head : 0);
        return -1;
    }
    if (q->v25) {
        const int unit = v->patch_size * v->merge;
        if (wa_pattern < 1 || wa_pattern > 1024 || window_px < unit || window_px > (1 << 16)) {
            anv_set_error("%s: qwen2.5vl n_wa_pattern %d / window_size %d is invalid (window at least %d px)", f->path, wa_pattern, window_px, unit);
            return -1;
        }
        q->wa_pattern = wa_pattern;
        q->window = window_px / unit;
    }
    return 0;
}

int vision_qwen_load(vision_model *v) {
    const gguf_file *f = v->gguf;
    const int64_t e = v->n_embd, ff = v->n_ff, p = v->patch_size, pp3 = 3 * p * p, e4 = 4 * e;
    struct vision_qwen *q = v->qwen;
    const int patch_area = v->patch_size * v->patch_size * v->merge * v->merge;   /* clip.cpp set_limit_image_tokens(8, 4096) */
    q->min_pixels = QWEN_MIN_TOKENS * patch_area;
    q->max_pixels = QWEN_MAX_TOKENS * patch_area;
    bool fail = false;
    /* the temporal pair of conv kernels, summed (the frame is repeated); Ollama's qwen3vl: one Conv3D */
    const bool conv3d = v->ollama && !q->v25;
    const gguf_tensor *w0 = vision_tensor(v, "v.patch_embd.weight"), *w1 = vision_tensor(v, "v.patch_embd.weight.1");
    char fn[160];
    for (int k = 0; k < 2 && !conv3d; k++) {
        const gguf_tensor *w = k ? w1 : w0;
        if (!tensor_ok(w, p, p, 3, e) || (w->type != QT_F32 && w->type != QT_F16)) {
            anv_set_error("%s: tensor '%s' is %s, expected [%lld, %lld, 3, %lld] F32/F16", f->path,
                          vision_tensor_name(v, k ? "v.patch_embd.weight.1" : "v.patch_embd.weight", fn, sizeof fn),
                          w ? "misshapen" : "missing", (long long)p, (long long)p, (long long)e);
            return -1;
        }
    }
    float *a = conv3d ? vision_ollama_qwen3vl_patch(v) : dequant_all(w0, e * pp3), *b = conv3d ? NULL : dequant_all(w1, e * pp3);
    if (!a || (!conv3d && !b)) { free(a); free(b); return -1; }
    for (int64_t i = 0; b && i < e * pp3; i++) a[i] += b[i];
    free(b);
    q->patch_host = a;
    if (!(v->patch_w = v->be->ops->weight_new(v->be, QT_F32, pp3, e, a))) return -1;
    if (!q->v25) v->patch_b = vision_put(v, "v.patch_embd.bias", e, 1, true, &fail);   /* qwen2.5vl: none */
    /* learned positions (qwen3vl): a square grid, kept on the host for the interpolation */
    const gguf_tensor *pt = q->v25 ? NULL : vision_tensor(v, "v.position_embd.weight");
    if (!q->v25) {
        const int side = pt ? (int)lround(sqrt((double)pt->ne[1])) : 0;
        if (!pt || pt->ne[0] != e || side < 1 || (int64_t)side * side != pt->ne[1] || pt->ne[2] != 1 || pt->ne[3] != 1 ||
            (pt->type != QT_F32 && pt->type != QT_F16)) {
            anv_set_error("%s: tensor '%s' is %s, expected [%lld, side^2] F32/F16", f->path,
                          vision_tensor_name(v, "v.position_embd.weight", fn, sizeof fn), pt ? "misshapen" : "missing",
                          (long long)e);
            return -1;
        }
        q->pos_side = side;
        if (!(q->pos_host = dequant_all(pt, e * pt->ne[1]))) return -1;
    }
    if (vision_tensor(v, "v.pre_ln.weight")) {
        v->pre_ln_w = vision_put(v, "v.pre_ln.weight", e, 1, true, &fail);
        v->pre_ln_b = vision_put(v, "v.pre_ln.bias", e, 1, true, &fail);
    }
    v->post_ln_w = vision_put(v, "v.post_ln.weight", e, 1, true, &fail);
    if (!q->v25) v->post_ln_b = vision_put(v, "v.post_ln.bias", e, 1, true, &fail);   /* qwen2.5vl: RMSNorm */
    if (q->v25 && (!(q->gate_w = calloc((size_t)v->n_layer, sizeof *q->gate_w)) || !(q->gate_b = calloc((size_t)v->n_layer, sizeof *q->gate_b)))) {
        anv_set_error("out of memory");
        return -1;
    }
    if (fail) return -1;
    /* deepstack layers */
    if (!(q->ds_of_layer = malloc((size_t)v->n_layer * sizeof(int)))) { anv_set_error("out of memory"); return -1; }
    for (int il = 0; il < v->n_layer; il++) q->ds_of_layer[il] = -1;
    if (v->ollama && vision_ollama_deepstack(v, q->ds_of_layer, &q->n_deepstack) != 0) return -1;
    const gguf_kv *dk = !v->ollama && gguf_find(f, "clip.vision.is_deepstack_layers") ? gguf_get_arr(f, "clip.vision.is_deepstack_layers", GGUF_BOOL) : NULL;
    if (!v->ollama && gguf_find(f, "clip.vision.is_deepstack_layers") && !dk) return -1;
    if (dk) {
        if (dk->arr_len != (uint64_t)v->n_layer) {
            anv_set_error("%s: clip.vision.is_deepstack_layers has %llu entries for %d blocks", f->path, (unsigned long long)dk->arr_len, v->n_layer);
            return -1;
        }
        for (int il = 0; il < v->n_layer; il++)
            if (((const uint8_t *)dk->arr_data)[il]) q->ds_of_layer[il] = q->n_deepstack++;
    }
    const char *m0 = "mm.0.weight", *m2 = "mm.2.weight";
    const gguf_tensor *t0 = vision_tensor(v, m0), *t2 = vision_tensor(v, m2);
    if (!t0 || !t2 || t0->ne[0] != e4 || t2->ne[0] != t0->ne[1] || t0->ne[1] < 1 || t0->ne[1] > (1 << 20) || t2->ne[1] < 1 || t2->ne[1] > (1 << 20)) {
        char fn2[160];
        anv_set_error("%s: tensors '%s' / '%s' are missing or misshapen (expected [%lld, hidden], [hidden, text])", f->path,
                      vision_tensor_name(v, m0, fn, sizeof fn), vision_tensor_name(v, m2, fn2, sizeof fn2), (long long)e4);
        return -1;
    }
    q->n_hidden = (int)t0->ne[1];
    q->out_text = (int)t2->ne[1];
    v->mm0_w = vision_put(v, m0, e4, q->n_hidden, true, &fail);
    v->mm0_b = vision_put(v, "mm.0.bias", q->n_hidden, 1, true, &fail);
    v->mm2_w = vision_put(v, m2, q->n_hidden, q->out_text, true, &fail);
    v->mm2_b = vision_put(v, "mm.2.bias", q->out_text, 1, true, &fail);
    if (q->n_deepstack && !(q->ds = calloc((size_t)q->n_deepstack, sizeof *q->ds))) { anv_set_error("out of memory"); return -1; }
    char name[96];
    for (int il = 0; il < v->n_layer && !fail; il++) {
        vision_layer *L = &v->layers[il];
#define QN(s) (snprintf(name, sizeof name, "v.blk.%d.%s", il, s), name)
        L->ln1_w = vision_put(v, QN("ln1.weight"), e, 1, true, &fail);
        L->ln2_w = vision_put(v, QN("ln2.weight"), e, 1, true, &fail);
        if (!q->v25) {   /* LayerNorms */
            L->ln1_b = vision_put(v, QN("ln1.bias"), e, 1, true, &fail);
            L->ln2_b = vision_put(v, QN("ln2.bias"), e, 1, true, &fail);
        }
        if (q->v25 || v->ollama) {   /* Q, K, V apart (qwen2.5vl; Ollama's qwen3vl, split by its converter) */
            L->wq = vision_put(v, QN("attn_q.weight"), e, e, true, &fail);
            L->wk = vision_put(v, QN("attn_k.weight"), e, e, true, &fail);
            L->wv = vision_put(v, QN("attn_v.weight"), e, e, true, &fail);
            L->bq = vision_put(v, QN("attn_q.bias"), e, 1, true, &fail);
            L->bk = vision_put(v, QN("attn_k.bias"), e, 1, true, &fail);
            L->bv = vision_put(v, QN("attn_v.bias"), e, 1, true, &fail);
        } else {
            L->wq = qput_part(v, QN("attn_qkv.weight"), e, 3 * e, 0, e, &fail);
            L->wk = qput_part(v, name, e, 3 * e, e, e, &fail);
            L->wv = qput_part(v, name, e, 3 * e, 2 * e, e, &fail);
            L->bq = qput_part(v, QN("attn_qkv.bias"), 3 * e, 1, 0, e, &fail);
            L->bk = qput_part(v, name, 3 * e, 1, e, e, &fail);
            L->bv = qput_part(v, name, 3 * e, 1, 2 * e, e, &fail);
        }
        if (q->v25) {   /* a gated MLP */
            q->gate_w[il] = vision_put(v, QN("ffn_gate.weight"), e, ff, true, &fail);
            q->gate_b[il] = vision_put(v, QN("ffn_gate.bias"), ff, 1, true, &fail);
        }
        L->wo = vision_put(v, QN("attn_out.weight"), e, e, true, &fail);
        L->bo = vision_put(v, QN("attn_out.bias"), e, 1, true, &fail);
        L->w_up = vision_put(v, QN("ffn_up.weight"), e, ff, true, &fail);
        L->b_up = vision_put(v, QN("ffn_up.bias"), ff, 1, true, &fail);
        L->w_down = vision_put(v, QN("ffn_down.weight"), ff, e, true, &fail);
        L->b_down = vision_put(v, QN("ffn_down.bias"), e, 1, true, &fail);
#undef QN
        const int d = q->ds_of_layer[il];
        if (d < 0 || fail) continue;
        qwen_deepstack *D = &q->ds[d];
#define DN(s) (snprintf(name, sizeof name, "v.deepstack.%d.%s", il, s), name)
        const gguf_tensor *fc1 = vision_tensor(v, DN("fc1.weight"));
        const int64_t dh = fc1 ? fc1->ne[1] : 0;
        if (!fc1 || dh < 1 || dh > (1 << 20)) {
            anv_set_error("%s: tensor '%s' is missing or misshapen", f->path, vision_tensor_name(v, name, fn, sizeof fn));
            return -1;
        }
        D->norm_w = vision_put(v, DN("norm.weight"), e4, 1, true, &fail);
        D->norm_b = vision_put(v, DN("norm.bias"), e4, 1, true, &fail);
        D->fc1_w = vision_put(v, DN("fc1.weight"), e4, dh, true, &fail);
        D->fc1_b = vision_put(v, DN("fc1.bias"), dh, 1, true, &fail);
        D->fc2_w = vision_put(v, DN("fc2.weight"), dh, q->out_text, true, &fail);
        D->fc2_b = vision_put(v, DN("fc2.bias"), q->out_text, 1, true, &fail);
#undef DN
    }
    if (fail) return -1;
    v->center_host = malloc((size_t)e * (size_t)e * sizeof(float));
    if (!v->center_host) { anv_set_error("out of memory"); return -1; }
    for (int64_t r = 0; r < e; r++)
        for (int64_t c = 0; c < e; c++) v->center_host[r * e + c] = (r == c ? 1.0f : 0.0f) - 1.0f / (float)e;
    if (!(v->center = v->be->ops->weight_new(v->be, QT_F32, e, e, v->center_host))) return -1;
    if (q->n_deepstack) {
        if (!(q->center4_host = malloc((size_t)e4 * (size_t)e4 * sizeof(float)))) { anv_set_error("out of memory"); return -1; }
        for (int64_t r = 0; r < e4; r++)
            for (int64_t c = 0; c < e4; c++) q->center4_host[r * e4 + c] = (r == c ? 1.0f : 0.0f) - 1.0f / (float)e4;
        if (!(q->center4 = v->be->ops->weight_new(v->be, QT_F32, e4, e4, q->center4_host))) return -1;
    }
    v->out_dim = q->out_text * (1 + q->n_deepstack);
    if (!v->be->ops->rope_rows) {
        anv_set_error("%s: the %s backend cannot run the qwen-vl encoders (no rope_rows op)", f->path, v->be->name);
        return -1;
    }
    return 0;
}

void vision_qwen_free(vision_model *v) {
    struct vision_qwen *q = v->qwen;
    if (!q) return;
    for (int d = 0; d < q->n_deepstack && q->ds; d++) {
        qwen_deepstack *D = &q->ds[d];
        be_tensor *ts[] = {D->norm_w, D->norm_b, D->fc1_w, D->fc1_b, D->fc2_w, D->fc2_b};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) be_tensor_free(ts[i]);
    }
    be_tensor_free(q->center4);
    free(q->center4_host);
    free(q->ds);
    free(q->ds_of_layer);
    for (int il = 0; il < v->n_layer && q->gate_w; il++) {
        be_tensor_free(q->gate_w[il]);
        be_tensor_free(q->gate_b[il]);
    }
    free(q->gate_w);
    free(q->gate_b);
    free(q->pos_host);
    free(q->patch_host);
    free(q);
    v->qwen = NULL;
}

/* ---- preprocessing ---- */

/* clip.cpp's calc_size_preserved_ratio within the projector's pixel bounds (vision_dyn_size). */
static void smart_size(const vision_model *v, int width, int height, int *ow, int *oh) {
    vision_dyn_size(v->patch_size * v->merge, v->qwen->min_pixels, v->qwen->max_pixels, width, height, ow, oh);
}

int vision_qwen_max_tokens(const vision_model *v) {
    (void)v;
    return QWEN_MAX_TOKENS;   /* max_pixels is this many merged patches, and smart_size stays within it */
}

int vision_qwen_layout(const vision_model *v, int width, int height, vision_layout *out) {
    int w, h;
    smart_size(v, width, height, &w, &h);
    const int f = v->patch_size * v->merge;
    *out = (vision_layout){.n_tokens = (w / f) * (h / f), .grid_w = w / f, .grid_h = h / f, .width = w, .height = h};
    return 0;
}

/* ---- the encoder ---- */

/* y = LayerNorm(x) * w + b over n rows of `cols` (center: I - 1/cols). */
static void qln(backend *be, const be_tensor *center, const be_tensor *x, be_tensor *tmp, be_tensor *y, const be_tensor *w,
                const be_tensor *b, int n, int64_t cols, float eps) {
    be->ops->matmul(be, center, x, tmp, n, false);
    be->ops->rms_norm(be, tmp, w, y, n, cols, eps);
    be->ops->add(be, y, b, y, (int64_t)n * cols, cols);
}

/* qwen3vl: LayerNorm of n rows of n_embd; qwen2.5vl: RMSNorm (and the bias if any). */
static void qnorm(const vision_model *v, const be_tensor *x, be_tensor *tmp, be_tensor *y, const be_tensor *w, const be_tensor *b, int n) {
    if (!v->qwen->v25) { qln(v->be, v->center, x, tmp, y, w, b, n, v->n_embd, v->eps); return; }
    v->be->ops->rms_norm(v->be, x, w, y, n, v->n_embd, v->eps);
    if (b) v->be->ops->add(v->be, y, b, y, (int64_t)n * v->n_embd, v->n_embd);
}

/* The merge-block order of the ph x pw patch grid: patch (py, px) goes to row token_of(py, px);
 * merged token src (raster) sits at block order[src] (qwen2.5vl's window order, else src). */
static int64_t token_of(const int *order, int pw, int py, int px) {
    return ((int64_t)order[(py / 2) * (pw / 2) + px / 2] * 2 + py % 2) * 2 + px % 2;
}

/* clip.cpp's window grouping (qwen2.5vl): windows of win x win merged tokens in raster order of
 * windows (smaller at the right and bottom edges), each window's tokens raster inside it.
 * order[src] = the window-ordered position of merged token src; win_start[k] / win_len[k]: window
 * k's first merged row and its length; returns the number of windows. Identity (one window of
 * everything) when win <= 0. */
static int window_order(int gw, int gh, int win, int *order, int *win_start, int *win_len) {
    if (win <= 0) {
        for (int i = 0; i < gw * gh; i++) order[i] = i;
        win_start[0] = 0;
        win_len[0] = gw * gh;
        return 1;
    }
    int dst = 0, nw = 0;
    for (int y = 0; y < gh; y += win)
        for (int x = 0; x < gw; x += win) {
            const int wh = win < gh - y ? win : gh - y, ww = win < gw - x ? win : gw - x;
            win_start[nw] = dst;
            for (int dy = 0; dy < wh; dy++)
                for (int dx = 0; dx < ww; dx++) order[(y + dy) * gw + x + dx] = dst++;
            win_len[nw++] = wh * ww;
        }
    return nw;
}

typedef struct {
    be_tensor *patches, *x, *xn, *tmp, *q, *k, *v, *att, *up, *gate, *ones, *pos, *rope, *hid, *out, *x4n, *tmp4;
} qwen_scratch;

int vision_qwen_encode(vision_model *v, const uint8_t *rgb, int width, int height, float *out) {
    struct vision_qwen *Q = v->qwen;
    backend *be = v->be;
    const backend_ops *op = be->ops;
    vision_layout lay;
    if (vision_qwen_layout(v, width, height, &lay) != 0) return -1;
    const int W = lay.width, H = lay.height, p = v->patch_size, pw = W / p, ph = H / p, n = pw * ph, nm = n / 4;
    const int64_t e = v->n_embd, e4 = 4 * e, pp3 = 3LL * p * p, T = Q->out_text, hd = e / v->n_head;
    const int64_t hidden = Q->n_hidden;
    int64_t wide = v->n_ff > hidden ? v->n_ff : hidden;
    for (int d = 0; d < Q->n_deepstack; d++)
        if (Q->ds[d].fc1_w->rows > wide) wide = Q->ds[d].fc1_w->rows;
    qwen_scratch s = {0};
    int rc = -1;
    uint8_t *img = malloc((size_t)W * H * 3);
    int64_t host_cols = pp3 > e ? pp3 : e;
    if (hd > host_cols) host_cols = hd;
    if (wide > host_cols) host_cols = wide;
    float *host = malloc((size_t)n * host_cols * sizeof(float));
    float *part = malloc((size_t)nm * T * sizeof(float));
    int32_t *pos = malloc((size_t)n * 4 * sizeof(int32_t));
    int *order = malloc((size_t)nm * sizeof(int)), *win_start = malloc((size_t)nm * sizeof(int)), *win_len = malloc((size_t)nm * sizeof(int));
    if (!img || !host || !part || !pos || !order || !win_start || !win_len) { anv_set_error("out of memory"); goto done; }
    const int n_win = window_order(pw / 2, ph / 2, Q->v25 ? Q->window : 0, order, win_start, win_len);
    if (vision_resize_padded_wh(rgb, width, height, img, W, H, v->resize, v->pad) != 0) goto done;
    s.patches = be_tensor_new(be, QT_F32, pp3, n);
    s.x = be_tensor_new(be, QT_F32, e, n);
    s.xn = be_tensor_new(be, QT_F32, e, n);
    s.tmp = be_tensor_new(be, QT_F32, e, n);
    s.q = be_tensor_new(be, QT_F32, e, n);
    s.k = be_tensor_new(be, QT_F32, e, n);
    s.v = be_tensor_new(be, QT_F32, e, n);
    s.att = be_tensor_new(be, QT_F32, e, n);
    s.up = be_tensor_new(be, QT_F32, v->n_ff, n);
    s.gate = Q->v25 ? be_tensor_new(be, QT_F32, v->n_ff, n) : NULL;
    s.ones = be_tensor_new(be, QT_F32, wide, n);
    s.pos = be_tensor_new(be, QT_F32, e, n);
    s.rope = be_tensor_new(be, QT_F32, hd, n);
    s.hid = be_tensor_new(be, QT_F32, wide, nm);
    s.out = be_tensor_new(be, QT_F32, T, nm);
    s.x4n = be_tensor_new(be, QT_F32, e4, nm);
    s.tmp4 = be_tensor_new(be, QT_F32, e4, nm);
    if ((Q->v25 && !s.gate) || !s.patches || !s.x || !s.xn || !s.tmp || !s.q || !s.k || !s.v || !s.att || !s.up || !s.ones || !s.pos || !s.rope || !s.hid ||
        !s.out || !s.x4n || !s.tmp4)
        goto done;
    /* the unit "up" of the GELU glu */
    for (int64_t i = 0; i < (int64_t)n * wide; i++) host[i] = 1.0f;
    be_upload(s.ones, 0, host, (size_t)n * wide * sizeof(float));
    /* patches, normalised, in merge-block order */
    for (int py = 0; py < ph; py++)
        for (int px = 0; px < pw; px++) {
            float *row = host + token_of(order, pw, py, px) * pp3;
            for (int c = 0; c < 3; c++)
                for (int ky = 0; ky < p; ky++)
                    for (int kx = 0; kx < p; kx++) {
                        const uint8_t u = img[(((size_t)py * p + ky) * W + (size_t)px * p + kx) * 3 + c];
                        row[((size_t)c * p + ky) * p + kx] = ((float)u / 255.0f - v->mean[c]) / v->std[c];
                    }
        }
    be_upload(s.patches, 0, host, (size_t)n * pp3 * sizeof(float));
    op->matmul(be, v->patch_w, s.patches, s.x, n, false);
    if (v->patch_b) op->add(be, s.x, v->patch_b, s.x, (int64_t)n * e, e);
    /* learned positions (qwen3vl): bilinear, aligned corners, from the side x side grid to ph x pw (ggml_interpolate) */
    if (!Q->v25) {
        const int S = Q->pos_side;
        const bool same = ph == S && pw == S;
        const float sfx = pw > 1 && S > 1 ? (float)(pw - 1) / (float)(S - 1) : (float)pw / (float)S;
        const float sfy = ph > 1 && S > 1 ? (float)(ph - 1) / (float)(S - 1) : (float)ph / (float)S;
        for (int py = 0; py < ph; py++) {
            const float fy = (float)py / sfy;
            int y0 = (int)floorf(fy), y1 = y0 + 1;
            y0 = y0 < 0 ? 0 : y0 > S - 1 ? S - 1 : y0;
            y1 = y1 < 0 ? 0 : y1 > S - 1 ? S - 1 : y1;
            float dy = fy - (float)y0;
            dy = dy < 0 ? 0 : dy > 1 ? 1 : dy;
            for (int px = 0; px < pw; px++) {
                float *row = host + token_of(order, pw, py, px) * e;
                if (same) { memcpy(row, Q->pos_host + ((size_t)py * S + px) * e, (size_t)e * sizeof(float)); continue; }
                const float fx = (float)px / sfx;
                int x0 = (int)floorf(fx), x1 = x0 + 1;
                x0 = x0 < 0 ? 0 : x0 > S - 1 ? S - 1 : x0;
                x1 = x1 < 0 ? 0 : x1 > S - 1 ? S - 1 : x1;
                float dx = fx - (float)x0;
                dx = dx < 0 ? 0 : dx > 1 ? 1 : dx;
                const float *a = Q->pos_host + ((size_t)y0 * S + x0) * e, *b = Q->pos_host + ((size_t)y0 * S + x1) * e;
                const float *c = Q->pos_host + ((size_t)y1 * S + x0) * e, *d = Q->pos_host + ((size_t)y1 * S + x1) * e;
                for (int64_t j = 0; j < e; j++)
                    row[j] = a[j] * (1 - dx) * (1 - dy) + b[j] * dx * (1 - dy) + c[j] * (1 - dx) * dy + d[j] * dx * dy;
            }
        }
        be_upload(s.pos, 0, host, (size_t)n * e * sizeof(float));
        op->add(be, s.x, s.pos, s.x, (int64_t)n * e, (int64_t)n * e);
    }
    /* the 2-D rope table: positions (row, column, row, column) per patch, merge-block order */
    for (int py = 0; py < ph; py++)
        for (int px = 0; px < pw; px++) {
            const int64_t t = token_of(order, pw, py, px);
            pos[t] = py;
            pos[n + t] = px;
            pos[2 * n + t] = py;
            pos[3 * n + t] = px;
        }
    {
        const int sec[4] = {(int)hd / 4, (int)hd / 4, (int)hd / 4, (int)hd / 4};
        rope_table_fill(host, pos, n, (int)hd, sec, ROPE_SECT_VISION, 10000.0f, 1.0f);
        be_upload(s.rope, 0, host, (size_t)n * hd * sizeof(float));
    }
    if (v->pre_ln_w) {
        qnorm(v, s.x, s.tmp, s.xn, v->pre_ln_w, v->pre_ln_b, n);
        op->store_rows(be, s.xn, s.x, 0, n);
    }
    const be_tensor x4 = be_view_reshape(s.x, e4, nm);
    for (int il = 0; il < v->n_layer_run; il++) {
        const vision_layer *L = &v->layers[il];
        const int64_t ne = (int64_t)n * e, nf = (int64_t)n * v->n_ff;
        qnorm(v, s.x, s.tmp, s.xn, L->ln1_w, L->ln1_b, n);
        op->matmul(be, L->wq, s.xn, s.q, n, false);
        op->matmul(be, L->wk, s.xn, s.k, n, false);
        op->matmul(be, L->wv, s.xn, s.v, n, false);
        op->add(be, s.q, L->bq, s.q, ne, e);
        op->add(be, s.k, L->bk, s.k, ne, e);
        op->add(be, s.v, L->bv, s.v, ne, e);
        op->rope_rows(be, s.q, s.rope, n, v->n_head, (int)hd, (int)hd);
        op->rope_rows(be, s.k, s.rope, n, v->n_head, (int)hd, (int)hd);
        be_attn_params ap = {.n_tok = n, .pos0 = 0, .n_head = v->n_head, .n_kv_head = v->n_head, .head_dim = (int)hd,
                             .scale = 1.0f / sqrtf((float)hd), .noncausal = true};
        if (!Q->v25 || (il + 1) % Q->wa_pattern == 0) {
            op->attention(be, s.q, s.k, s.v, s.att, &ap);
        } else {   /* qwen2.5vl's window blocks: each window (4 rows per merged token) by itself */
            for (int w = 0; w < n_win; w++) {
                const int r0 = 4 * win_start[w], nr = 4 * win_len[w];
                be_tensor qw = be_view_rows(s.q, r0, nr), kw = be_view_rows(s.k, r0, nr), vw = be_view_rows(s.v, r0, nr);
                be_tensor aw = be_view_rows(s.att, r0, nr);
                ap.n_tok = nr;
                op->attention(be, &qw, &kw, &vw, &aw, &ap);
            }
        }
        op->matmul(be, L->wo, s.att, s.x, n, true);
        op->add(be, s.x, L->bo, s.x, ne, e);
        qnorm(v, s.x, s.tmp, s.xn, L->ln2_w, L->ln2_b, n);
        op->matmul(be, L->w_up, s.xn, s.up, n, false);
        op->add(be, s.up, L->b_up, s.up, nf, v->n_ff);
        if (Q->v25) {   /* SwiGLU: silu(x W_gate + b) * (x W_up + b) */
            op->matmul(be, Q->gate_w[il], s.xn, s.gate, n, false);
            op->add(be, s.gate, Q->gate_b[il], s.gate, nf, v->n_ff);
            op->glu(be, s.gate, s.up, s.up, nf, BE_GLU_SILU);
        } else {
            op->glu(be, s.up, s.ones, s.up, nf, BE_GLU_GELU_TANH);
        }
        op->matmul(be, L->w_down, s.up, s.x, n, true);
        op->add(be, s.x, L->b_down, s.x, ne, e);
        const int d = Q->ds_of_layer[il];
        if (d < 0) continue;
        /* deepstack: 4 rows merged, LayerNorm, fc1, GELU, fc2 -> the part d + 1 of every output row */
        const qwen_deepstack *D = &Q->ds[d];
        const int64_t dh = D->fc1_w->rows;
        qln(be, Q->center4, &x4, s.tmp4, s.x4n, D->norm_w, D->norm_b, nm, e4, v->eps);
        be_tensor hid = be_view_reshape(s.hid, dh, nm);
        op->matmul(be, D->fc1_w, s.x4n, &hid, nm, false);
        op->add(be, &hid, D->fc1_b, &hid, (int64_t)nm * dh, dh);
        op->glu(be, &hid, s.ones, &hid, (int64_t)nm * dh, BE_GLU_GELU_TANH);
        op->matmul(be, D->fc2_w, &hid, s.out, nm, false);
        op->add(be, s.out, D->fc2_b, s.out, (int64_t)nm * T, T);
        be_download(s.out, 0, part, (size_t)nm * T * sizeof(float));
        for (int t = 0; t < nm; t++) memcpy(out + ((size_t)t * (1 + Q->n_deepstack) + 1 + d) * T, part + (size_t)order[t] * T, (size_t)T * sizeof(float));
    }
    qnorm(v, s.x, s.tmp, s.xn, v->post_ln_w, v->post_ln_b, n);
    /* the merger: 4 rows merged, mm.0, GELU, mm.2 */
    {
        const be_tensor xn4 = be_view_reshape(s.xn, e4, nm);
        be_tensor hid = be_view_reshape(s.hid, hidden, nm);
        op->matmul(be, v->mm0_w, &xn4, &hid, nm, false);
        op->add(be, &hid, v->mm0_b, &hid, (int64_t)nm * hidden, hidden);
        op->glu(be, &hid, s.ones, &hid, (int64_t)nm * hidden, BE_GLU_GELU_TANH);
        op->matmul(be, v->mm2_w, &hid, s.out, nm, false);
        op->add(be, s.out, v->mm2_b, s.out, (int64_t)nm * T, T);
        be_download(s.out, 0, part, (size_t)nm * T * sizeof(float));
        /* back to raster order: output row src is merger row order[src] */
        for (int t = 0; t < nm; t++) memcpy(out + (size_t)t * (1 + Q->n_deepstack) * T, part + (size_t)order[t] * T, (size_t)T * sizeof(float));
    }
    if (be_error(be)) { anv_set_error("%s", be_error(be)); goto done; }
    rc = 0;
done:
    {
        be_tensor *ts[] = {s.patches, s.x, s.xn, s.tmp, s.q, s.k, s.v, s.att, s.up, s.gate, s.ones, s.pos, s.rope, s.hid, s.out, s.x4n, s.tmp4};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) be_tensor_free(ts[i]);
    }
    free(img);
    free(host);
    free(part);
    free(pos);
    free(order);
    free(win_start);
    free(win_len);
    return rc;
}
