/* vision_pixtral: mistral3's pixtral vision encoder over backend.h (llama.cpp's projector type
 * pixtral: Mistral Small 3.x, pixtral-12b). Facts from today's llama.cpp (tools/mtmd/models/
 * pixtral.cpp, clip.cpp's PIXTRAL hparams and build_rope_2d, mtmd.cpp, mtmd-image.cpp's dyn_size
 * preprocessor, conversion/llava.py, conversion/pixtral.py):
 *  - preprocessing: the image resized (Pillow bicubic, PAD_CEIL black) to a multiple of
 *    patch_size * merge per side within [8, 1024] merged tokens' pixels (calc_size_preserved_ratio);
 *  - the patch embedding (a conv kernel, no bias), no learned positions, RMSNorm v.pre_ln;
 *  - blocks: RMSNorm, Q / K / V without biases, a 2-D rope (ggml's normal mode on each half of
 *    a head: the first half's adjacent pairs by the patch row, the second half's by the column
 *    with the frequencies shifted by base^(-2 / head_dim), theta 10000 as clip.cpp fixes it),
 *    non-causal attention, output projection, RMSNorm, a SwiGLU FFN (clip.use_silu);
 *  - Mistral Small's patch merger (clip.vision.spatial_merge_size m > 1): RMSNorm by
 *    mm.input_norm, each m x m block of patches unfolded (channel-major: c * m^2 + dy * m + dx),
 *    mm.patch_merger; then mm.1, GELU, mm.2 (biases where the file has them);
 *  - the output rows in raster order with v.token_embd.img_break after every row but the last
 *    (the layout's n_tokens counts them); the text closes the image with "[IMG_END]".
 * How it maps onto backend ops (no new op):
 *  - the rope pairs adjacent dims (2i, 2i + 1); backend.h's rope_rows pairs (i, i + d/2). The
 *    rows of W_q and W_k are permuted per head on load (new i = old 2i, new i + d/2 = old 2i + 1),
 *    which leaves q . k unchanged, so rope_rows with a per-patch table does the 2-D rope;
 *  - patches run in merge-block order (block raster, then dy, dx inside a block), so a block's
 *    m^2 rows are one row of m^2 * n_embd; the merger's columns are permuted on load to match
 *    (new k * n_embd + c = old c * m^2 + k) and its output rows come out in raster order. */
#include "vision_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "quant.h"

struct vision_pixtral {
    int64_t min_pixels, max_pixels;
    be_tensor **gate_w;          /* each block's ffn_gate */
    void **qk_host;              /* the permuted W_q / W_k bytes per block (2 per block; the backend may alias them) */
    be_tensor *in_norm, *merger; /* merge > 1: mm.input_norm, mm.patch_merger [m^2 e] -> [e] (F32, columns permuted) */
    float *merger_host;
    be_tensor *mm1_w, *mm1_b, *mm2_w, *mm2_b;
    int n_hidden;                /* mm.1's rows */
    float *img_break;            /* [out_dim] host */
};

int vision_pixtral_hparams(vision_model *v) {
    const gguf_file *f = v->gguf;
    struct vision_pixtral *px = calloc(1, sizeof *px);
    if (!px) { anv_set_error("out of memory"); return -1; }
    v->pix = px;
    uint32_t merge = 1;   /* pixtral-12b: no merger; Mistral Small 3.x: 2 */
    if (gguf_find(f, "clip.vision.spatial_merge_size") && !gguf_get_u32(f, "clip.vision.spatial_merge_size", &merge)) return -1;
    if (merge < 1 || merge > 8) { anv_set_error("%s: pixtral spatial_merge_size %u is not supported (1..8)", f->path, merge); return -1; }
    v->merge = (int)merge;
    v->resize = VISION_RESIZE_BICUBIC;
    memset(v->pad, 0, 3);
    v->n_layer_run = v->n_layer;
    bool silu = false;
    if (!gguf_get_bool(f, "clip.use_silu", &silu) || !silu) {
        anv_set_error("%s: pixtral projector without clip.use_silu = true is not supported", f->path);
        return -1;
    }
    if (v->n_head < 1 || v->n_embd % v->n_head || (v->n_embd / v->n_head) % 4) {
        anv_set_error("%s: pixtral head size %d must be a multiple of 4 (2-D rope)", f->path, v->n_head ? v->n_embd / v->n_head : 0);
        return -1;
    }
    const int64_t patch_area = (int64_t)v->patch_size * v->patch_size * v->merge * v->merge;   /* set_limit_image_tokens(8, 1024) */
    px->min_pixels = 8 * patch_area;
    px->max_pixels = 1024 * patch_area;
    return 0;
}

static bool shape_is(const gguf_tensor *t, int64_t ne0, int64_t ne1) {
    return t && t->ne[0] == ne0 && t->ne[1] == ne1 && t->ne[2] == 1 && t->ne[3] == 1;
}

/* W_q / W_k [e][e] with each head's rows un-interleaved (new i = old 2i, new i + d/2 = old 2i + 1). */
static be_tensor *put_rope_permuted(vision_model *v, const char *name, void **host, bool *fail) {
    if (*fail) return NULL;
    const int64_t e = v->n_embd, hd = e / v->n_head;
    const gguf_tensor *t = gguf_find_tensor(v->gguf, name);
    const qtype_info *qi = t ? qtype_get(t->type) : NULL;
    if (!shape_is(t, e, e) || !qi || !qi->is_weight) {
        anv_set_error("%s: tensor '%s' is %s, expected [%lld, %lld]", v->gguf->path, name, t ? "misshapen" : "missing", (long long)e, (long long)e);
        *fail = true;
        return NULL;
    }
    const size_t rs = qtype_row_size((qtype)t->type, e);
    uint8_t *dst = malloc(rs * (size_t)e);
    if (!dst) { anv_set_error("out of memory"); *fail = true; return NULL; }
    *host = dst;
    const uint8_t *src = t->data;
    for (int64_t h = 0; h < v->n_head; h++)
        for (int64_t i = 0; i < hd / 2; i++) {
            memcpy(dst + (size_t)(h * hd + i) * rs, src + (size_t)(h * hd + 2 * i) * rs, rs);
            memcpy(dst + (size_t)(h * hd + hd / 2 + i) * rs, src + (size_t)(h * hd + 2 * i + 1) * rs, rs);
        }
    be_tensor *bt = v->be->ops->weight_new(v->be, t->type, e, e, dst);
    if (!bt) *fail = true;
    return bt;
}

int vision_pixtral_load(vision_model *v) {
    const gguf_file *f = v->gguf;
    struct vision_pixtral *px = v->pix;
    const int64_t e = v->n_embd, ff = v->n_ff, p = v->patch_size, pp3 = 3 * p * p, mm = (int64_t)v->merge * v->merge;
    bool fail = false;
    const gguf_tensor *pw = gguf_find_tensor(f, "v.patch_embd.weight");
    if (!pw || pw->ne[0] != p || pw->ne[1] != p || pw->ne[2] != 3 || pw->ne[3] != e || (pw->type != QT_F32 && pw->type != QT_F16)) {
        anv_set_error("%s: tensor 'v.patch_embd.weight' is %s, expected [%lld, %lld, 3, %lld] F32/F16", f->path, pw ? "misshapen" : "missing",
                      (long long)p, (long long)p, (long long)e);
        return -1;
    }
    if (!(v->patch_w = v->be->ops->weight_new(v->be, pw->type, pp3, e, pw->data))) return -1;
    v->patch_b = vision_put(v, "v.patch_embd.bias", e, 1, false, &fail);
    v->pre_ln_w = vision_put(v, "v.pre_ln.weight", e, 1, false, &fail);
    if (!(px->gate_w = calloc((size_t)v->n_layer, sizeof *px->gate_w)) || !(px->qk_host = calloc(2 * (size_t)v->n_layer, sizeof *px->qk_host))) {
        anv_set_error("out of memory");
        return -1;
    }
    char name[96];
    for (int il = 0; il < v->n_layer && !fail; il++) {
        vision_layer *L = &v->layers[il];
#define PN(s) (snprintf(name, sizeof name, "v.blk.%d.%s", il, s), name)
        static const char *const biases[] = {"attn_q.bias", "attn_k.bias", "attn_v.bias", "attn_out.bias", "ffn_gate.bias", "ffn_up.bias", "ffn_down.bias",
                                             "ln1.bias", "ln2.bias"};
        for (size_t i = 0; i < sizeof biases / sizeof biases[0]; i++)
            if (gguf_find_tensor(f, PN(biases[i]))) {
                anv_set_error("%s: pixtral block tensor '%s' (a bias) is not supported", f->path, name);
                return -1;
            }
        L->ln1_w = vision_put(v, PN("ln1.weight"), e, 1, true, &fail);
        L->ln2_w = vision_put(v, PN("ln2.weight"), e, 1, true, &fail);
        L->wq = put_rope_permuted(v, PN("attn_q.weight"), &px->qk_host[2 * il], &fail);
        L->wk = put_rope_permuted(v, PN("attn_k.weight"), &px->qk_host[2 * il + 1], &fail);
        L->wv = vision_put(v, PN("attn_v.weight"), e, e, true, &fail);
        L->wo = vision_put(v, PN("attn_out.weight"), e, e, true, &fail);
        px->gate_w[il] = vision_put(v, PN("ffn_gate.weight"), e, ff, true, &fail);
        L->w_up = vision_put(v, PN("ffn_up.weight"), e, ff, true, &fail);
        L->w_down = vision_put(v, PN("ffn_down.weight"), ff, e, true, &fail);
#undef PN
    }
    if (fail) return -1;
    /* the patch merger: columns permuted from (c, k) to (k, c) */
    const gguf_tensor *mt = gguf_find_tensor(f, "mm.patch_merger.weight");
    if (!mt && v->merge > 1) {
        anv_set_error("%s: pixtral with spatial_merge_size %d has no tensor 'mm.patch_merger.weight'", f->path, v->merge);
        return -1;
    }
    if (mt) {
        const qtype_info *qi = qtype_get(mt->type);
        if (!shape_is(mt, e * mm, e) || !qi || !qi->is_weight) {
            anv_set_error("%s: tensor 'mm.patch_merger.weight' is misshapen, expected [%lld, %lld]", f->path, (long long)(e * mm), (long long)e);
            return -1;
        }
        float *raw = malloc((size_t)(e * mm) * (size_t)e * sizeof(float));
        px->merger_host = malloc((size_t)(e * mm) * (size_t)e * sizeof(float));
        if (!raw || !px->merger_host) { free(raw); anv_set_error("out of memory"); return -1; }
        dequantize_row((qtype)mt->type, mt->data, raw, e * mm * e);
        for (int64_t r = 0; r < e; r++)
            for (int64_t k = 0; k < mm; k++)
                for (int64_t c = 0; c < e; c++) px->merger_host[r * e * mm + k * e + c] = raw[r * e * mm + c * mm + k];
        free(raw);
        if (!(px->merger = v->be->ops->weight_new(v->be, QT_F32, e * mm, e, px->merger_host))) return -1;
        px->in_norm = vision_put(v, "mm.input_norm.weight", e, 1, true, &fail);
    }
    const gguf_tensor *t1 = gguf_find_tensor(f, "mm.1.weight"), *t2 = gguf_find_tensor(f, "mm.2.weight");
    if (!t1 || !t2 || t1->ne[0] != e || t1->ne[1] < 1 || t1->ne[1] > (1 << 20) || t2->ne[0] != t1->ne[1] || t2->ne[1] < 1 || t2->ne[1] > (1 << 20)) {
        anv_set_error("%s: tensors 'mm.1.weight' / 'mm.2.weight' are missing or misshapen (expected [%lld, hidden], [hidden, text])", f->path, (long long)e);
        return -1;
    }
    px->n_hidden = (int)t1->ne[1];
    v->out_dim = (int)t2->ne[1];
    px->mm1_w = vision_put(v, "mm.1.weight", e, px->n_hidden, true, &fail);
    px->mm1_b = vision_put(v, "mm.1.bias", px->n_hidden, 1, false, &fail);
    px->mm2_w = vision_put(v, "mm.2.weight", px->n_hidden, v->out_dim, true, &fail);
    px->mm2_b = vision_put(v, "mm.2.bias", v->out_dim, 1, false, &fail);
    if (fail) return -1;
    const gguf_tensor *tb = gguf_find_tensor(f, "v.token_embd.img_break");
    const qtype_info *bi = tb ? qtype_get(tb->type) : NULL;
    if (!shape_is(tb, v->out_dim, 1) || !bi || !bi->is_weight) {
        anv_set_error("%s: tensor 'v.token_embd.img_break' is %s, expected [%d]", f->path, tb ? "misshapen" : "missing", v->out_dim);
        return -1;
    }
    if (!(px->img_break = malloc((size_t)v->out_dim * sizeof(float)))) { anv_set_error("out of memory"); return -1; }
    dequantize_row((qtype)tb->type, tb->data, px->img_break, v->out_dim);
    if (!v->be->ops->rope_rows) {
        anv_set_error("%s: the %s backend cannot run the pixtral encoder (no rope_rows op)", f->path, v->be->name);
        return -1;
    }
    return 0;
}

void vision_pixtral_free(vision_model *v) {
    struct vision_pixtral *px = v->pix;
    if (!px) return;
    for (int il = 0; il < v->n_layer && px->gate_w; il++) be_tensor_free(px->gate_w[il]);
    be_tensor *ts[] = {px->in_norm, px->merger, px->mm1_w, px->mm1_b, px->mm2_w, px->mm2_b};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) be_tensor_free(ts[i]);
    /* the blocks' W_q / W_k (vision_free frees them after this) may alias qk_host: free them here first */
    for (int il = 0; il < v->n_layer && v->layers && px->qk_host; il++) {
        be_tensor_free(v->layers[il].wq);
        be_tensor_free(v->layers[il].wk);
        v->layers[il].wq = v->layers[il].wk = NULL;
    }
    for (int i = 0; px->qk_host && i < 2 * v->n_layer; i++) free(px->qk_host[i]);
    free(px->qk_host);
    free(px->gate_w);
    free(px->merger_host);
    free(px->img_break);
    free(px);
    v->pix = NULL;
}

/* ---- preprocessing ---- */

int vision_pixtral_layout(const vision_model *v, int width, int height, vision_layout *out) {
    const int f = v->patch_size * v->merge;
    int w, h;
    vision_dyn_size(f, v->pix->min_pixels, v->pix->max_pixels, width, height, &w, &h);
    const int gw = w / f, gh = h / f;
    /* one [IMG_BREAK] row after each image row but the last: a (gw + 1) x gh raster less its last cell */
    *out = (vision_layout){.n_tokens = gw * gh + gh - 1, .grid_w = gw + 1, .grid_h = gh, .width = w, .height = h};
    return 0;
}

/* ---- the encoder ---- */

/* The 2-D rope's table for rope_rows (pairs (i, i + d/2) after the load's permutation): pair
 * i < d/4 rotates by the patch row with ggml's theta_scale = base^(-2 / (d/2)) recurrence, pair
 * d/4 + j by the column, the same recurrence times base^(-2 / d) (build_rope_2d's freq_scale_odd). */
static void rope_table_2d(float *table, const int32_t *row, const int32_t *col, int n, int hd, float base) {
    const float theta_scale = powf(base, -2.0f / (float)(hd / 2)), odd = powf(base, -2.0f / (float)hd);
    for (int t = 0; t < n; t++) {
        float *r = table + (size_t)t * hd;
        float th = (float)row[t];
        for (int j = 0; j < hd / 4; j++) {
            const float a = 1.0f * th;
            r[2 * j] = cosf(a);
            r[2 * j + 1] = sinf(a);
            th *= theta_scale;
        }
        th = (float)col[t];
        for (int j = 0; j < hd / 4; j++) {
            const float a = odd * th;
            r[hd / 2 + 2 * j] = cosf(a);
            r[hd / 2 + 2 * j + 1] = sinf(a);
            th *= theta_scale;
        }
    }
}

typedef struct {
    be_tensor *patches, *x, *xn, *q, *k, *v, *att, *gate, *up, *rope, *merged, *hid, *ones, *out;
} pix_scratch;

int vision_pixtral_encode(vision_model *v, const uint8_t *rgb, int width, int height, float *out) {
    struct vision_pixtral *P = v->pix;
    backend *be = v->be;
    const backend_ops *op = be->ops;
    vision_layout lay;
    if (vision_pixtral_layout(v, width, height, &lay) != 0) return -1;
    const int m = v->merge, W = lay.width, H = lay.height, p = v->patch_size, pw = W / p, ph = H / p, n = pw * ph, nm = n / (m * m);
    const int gw = pw / m, gh = ph / m;
    const int64_t e = v->n_embd, pp3 = 3LL * p * p, hd = e / v->n_head, T = v->out_dim, hidden = P->n_hidden;
    pix_scratch s = {0};
    int rc = -1;
    uint8_t *img = malloc((size_t)W * H * 3);
    int64_t host_cols = pp3 > hd ? pp3 : hd;
    if (T > host_cols) host_cols = T;
    if (hidden > host_cols) host_cols = hidden;
    float *host = malloc((size_t)n * host_cols * sizeof(float));
    int32_t *prow = malloc((size_t)n * sizeof(int32_t)), *pcol = malloc((size_t)n * sizeof(int32_t));
    if (!img || !host || !prow || !pcol) { anv_set_error("out of memory"); goto done; }
    if (vision_resize_padded_wh(rgb, width, height, img, W, H, v->resize, v->pad) != 0) goto done;
    s.patches = be_tensor_new(be, QT_F32, pp3, n);
    s.x = be_tensor_new(be, QT_F32, e, n);
    s.xn = be_tensor_new(be, QT_F32, e, n);
    s.q = be_tensor_new(be, QT_F32, e, n);
    s.k = be_tensor_new(be, QT_F32, e, n);
    s.v = be_tensor_new(be, QT_F32, e, n);
    s.att = be_tensor_new(be, QT_F32, e, n);
    s.gate = be_tensor_new(be, QT_F32, v->n_ff, n);
    s.up = be_tensor_new(be, QT_F32, v->n_ff, n);
    s.rope = be_tensor_new(be, QT_F32, hd, n);
    s.merged = P->merger ? be_tensor_new(be, QT_F32, e, nm) : NULL;
    s.hid = be_tensor_new(be, QT_F32, hidden, nm);
    s.ones = be_tensor_new(be, QT_F32, hidden, nm);
    s.out = be_tensor_new(be, QT_F32, T, nm);
    if (!s.patches || !s.x || !s.xn || !s.q || !s.k || !s.v || !s.att || !s.gate || !s.up || !s.rope || (P->merger && !s.merged) || !s.hid ||
        !s.ones || !s.out)
        goto done;
    for (int64_t i = 0; i < (int64_t)nm * hidden; i++) host[i] = 1.0f;   /* the unit "up" of the GELU */
    be_upload(s.ones, 0, host, (size_t)nm * hidden * sizeof(float));
    /* patches, normalised, in merge-block order; their rope positions (row, column) */
    for (int py = 0; py < ph; py++)
        for (int px = 0; px < pw; px++) {
            const int64_t t = ((int64_t)(py / m) * gw + px / m) * m * m + (py % m) * m + px % m;
            float *row = host + t * pp3;
            prow[t] = py;
            pcol[t] = px;
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
    rope_table_2d(host, prow, pcol, n, (int)hd, 10000.0f);
    be_upload(s.rope, 0, host, (size_t)n * hd * sizeof(float));
    if (v->pre_ln_w) {
        op->rms_norm(be, s.x, v->pre_ln_w, s.xn, n, e, v->eps);
        op->store_rows(be, s.xn, s.x, 0, n);
    }
    const be_attn_params ap = {.n_tok = n, .pos0 = 0, .n_head = v->n_head, .n_kv_head = v->n_head, .head_dim = (int)hd,
                               .scale = 1.0f / sqrtf((float)hd), .noncausal = true};
    for (int il = 0; il < v->n_layer_run; il++) {
        const vision_layer *L = &v->layers[il];
        op->rms_norm(be, s.x, L->ln1_w, s.xn, n, e, v->eps);
        op->matmul(be, L->wq, s.xn, s.q, n, false);
        op->matmul(be, L->wk, s.xn, s.k, n, false);
        op->matmul(be, L->wv, s.xn, s.v, n, false);
        op->rope_rows(be, s.q, s.rope, n, v->n_head, (int)hd, (int)hd);
        op->rope_rows(be, s.k, s.rope, n, v->n_head, (int)hd, (int)hd);
        op->attention(be, s.q, s.k, s.v, s.att, &ap);
        op->matmul(be, L->wo, s.att, s.x, n, true);
        op->rms_norm(be, s.x, L->ln2_w, s.xn, n, e, v->eps);
        op->matmul(be, P->gate_w[il], s.xn, s.gate, n, false);
        op->matmul(be, L->w_up, s.xn, s.up, n, false);
        op->glu(be, s.gate, s.up, s.up, (int64_t)n * v->n_ff, BE_GLU_SILU);
        op->matmul(be, L->w_down, s.up, s.x, n, true);
    }
    /* the patch merger: RMSNorm, each block's m^2 rows as one, mm.patch_merger */
    const be_tensor *feat = s.x;
    if (P->merger) {
        op->rms_norm(be, s.x, P->in_norm, s.xn, n, e, v->eps);
        const be_tensor blocks = be_view_reshape(s.xn, e * m * m, nm);
        op->matmul(be, P->merger, &blocks, s.merged, nm, false);
        feat = s.merged;
    }
    op->matmul(be, P->mm1_w, feat, s.hid, nm, false);
    if (P->mm1_b) op->add(be, s.hid, P->mm1_b, s.hid, (int64_t)nm * hidden, hidden);
    op->glu(be, s.hid, s.ones, s.hid, (int64_t)nm * hidden, BE_GLU_GELU_TANH);
    op->matmul(be, P->mm2_w, s.hid, s.out, nm, false);
    if (P->mm2_b) op->add(be, s.out, P->mm2_b, s.out, (int64_t)nm * T, T);
    if (be_error(be)) { anv_set_error("%s", be_error(be)); goto done; }
    /* raster rows, an [IMG_BREAK] after each image row but the last */
    be_download(s.out, 0, host, (size_t)nm * T * sizeof(float));
    for (int y = 0; y < gh; y++) {
        float *dst = out + (size_t)y * (gw + 1) * T;
        memcpy(dst, host + (size_t)y * gw * T, (size_t)gw * T * sizeof(float));
        if (y + 1 < gh) memcpy(dst + (size_t)gw * T, P->img_break, (size_t)T * sizeof(float));
    }
    if (be_error(be)) { anv_set_error("%s", be_error(be)); goto done; }
    rc = 0;
done:
    {
        be_tensor *ts[] = {s.patches, s.x, s.xn, s.q, s.k, s.v, s.att, s.gate, s.up, s.rope, s.merged, s.hid, s.ones, s.out};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) be_tensor_free(ts[i]);
    }
    free(img);
    free(host);
    free(prow);
    free(pcol);
    return rc;
}
