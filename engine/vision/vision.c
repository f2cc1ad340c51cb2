/* vision: the projector file (loader and checks), the ViT encoder over backend.h (patch
 * embedding as one matmul over the unfolded patches, learned positions, pre-LN blocks with
 * non-causal attention and a GELU MLP, post-LN) and the gemma3 projector (k x k average pool
 * on the host, RMS soft-embedding norm, input projection); finding a model's projector file.
 * LayerNorm is built from existing ops as encoder.c does: centering as a matmul by
 * C = I - 1/n, then rms_norm with the weight, then the bias. */
#include "vision_impl.h"

#include <dirent.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"
#include "quant.h"

/* ---- loading ---- */

static bool read_u32(const gguf_file *f, const char *key, int *out, bool required) {
    uint32_t v;
    if (gguf_get_u32(f, key, &v)) {
        if (v > (1u << 24)) { anv_set_error("%s: metadata %s = %u is out of range", f->path, key, v); return false; }
        *out = (int)v;
        return true;
    }
    if (gguf_find(f, key)) return false;   /* wrong type: the getter set the error */
    if (required) { anv_set_error("%s: missing metadata key %s", f->path, key); return false; }
    return true;
}

static bool read_f32x3(const gguf_file *f, const char *key, float out[3]) {
    const gguf_kv *kv = gguf_get_arr(f, key, GGUF_FLOAT32);
    if (!kv || kv->arr_len < 3) { anv_set_error("%s: metadata %s must be an array of 3 floats", f->path, key); return false; }
    memcpy(out, kv->arr_data, 3 * sizeof(float));
    return true;
}

/* A tensor by llama.cpp's clip name, in either layout. */
static const gguf_tensor *find_tensor(const vision_model *v, const char *name) { return vision_tensor(v, name); }
/* The name a tensor has in v's file (for errors). */
static const char *file_name(const vision_model *v, const char *name, char *buf, size_t cap) {
    return vision_tensor_name(v, name, buf, cap);
}

be_tensor *vision_put(vision_model *v, const char *name, int64_t ne0, int64_t ne1, bool required, bool *fail) {
    if (*fail) return NULL;
    const gguf_tensor *t = find_tensor(v, name);
    if (!t && !required) return NULL;
    char fn[160];
    const qtype_info *qi = t ? qtype_get(t->type) : NULL;
    if (!t) {
        anv_set_error("%s: tensor '%s' is missing", v->gguf->path, file_name(v, name, fn, sizeof fn));
        *fail = true;
        return NULL;
    }
    if (t->ne[0] != ne0 || t->ne[1] != ne1 || t->ne[2] != 1 || t->ne[3] != 1 || !qi || !qi->is_weight || (ne1 == 1 && t->type != QT_F32)) {
        anv_set_error("%s: tensor '%s' is misshapen: [%lld, %lld, %lld] %s, expected [%lld, %lld]%s", v->gguf->path,
                      file_name(v, name, fn, sizeof fn), (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2],
                      qi ? qi->name : "?", (long long)ne0, (long long)ne1, ne1 == 1 ? " F32" : "");
        *fail = true;
        return NULL;
    }
    be_tensor *bt = v->be->ops->weight_new(v->be, t->type, ne0, ne1, t->data);
    if (!bt) *fail = true;
    return bt;
}

be_tensor *vision_put_l(vision_model *v, int il, const char *suffix, int64_t ne0, int64_t ne1, bool required, bool *fail) {
    char name[160];
    snprintf(name, sizeof name, "v.blk.%d.%s", il, suffix);
    return vision_put(v, name, ne0, ne1, required, fail);
}

/* The projector kind of a clip file, as vision_load takes it: 0 with *out set, or -1 with
 * anv_last_error() saying why the file is not a projector Anvil runs. */
static int projector_kind(const gguf_file *f, vision_proj_type *out) {
    gguf_str s;
    if (vision_ollama_detect(f)) {   /* a model file holding its vision tower (Ollama's library) */
        *out = vision_ollama_proj(f);
        return 0;
    }
    if (!gguf_get_str(f, "general.architecture", &s) || !gguf_str_eq(s, "clip")) {
        anv_set_error("%s: not a projector file (general.architecture is not 'clip')", f->path);
        return -1;
    }
    bool has_vision = false;
    if (!gguf_get_bool(f, "clip.has_vision_encoder", &has_vision) || !has_vision) {
        anv_set_error("%s: the projector file has no vision encoder (clip.has_vision_encoder)", f->path);
        return -1;
    }
    if (!gguf_get_str(f, "clip.projector_type", &s) && !gguf_get_str(f, "clip.vision.projector_type", &s)) {
        anv_set_error("%s: missing metadata key clip.projector_type", f->path);
        return -1;
    }
    if (gguf_str_eq(s, "gemma3")) {
        *out = VISION_PROJ_GEMMA3;
    } else if (gguf_str_eq(s, "mlp")) {
        *out = VISION_PROJ_MLP;
        const char *unsupported[] = {"clip.vision.image_grid_pinpoints", "clip.vision.feature_layer"};
        for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++)
            if (gguf_find(f, unsupported[i])) {
                anv_set_error("%s: mlp projector with %s (llava-1.6 tiling, explicit feature layers) is not supported", f->path, unsupported[i]);
                return -1;
            }
    } else if (gguf_str_eq(s, "gemma4v")) {
        *out = VISION_PROJ_GEMMA4;
    } else if (gguf_str_eq(s, "qwen3vl_merger")) {
        *out = VISION_PROJ_QWEN3VL;
    } else if (gguf_str_eq(s, "qwen2.5vl_merger")) {
        *out = VISION_PROJ_QWEN25VL;
    } else if (gguf_str_eq(s, "pixtral")) {
        *out = VISION_PROJ_PIXTRAL;
    } else {
        anv_set_error("%s: projector type '%.*s' is not supported (supported: gemma3, gemma4v, mlp, qwen3vl_merger, qwen2.5vl_merger, pixtral)",
                      f->path, (int)(s.len > 64 ? 64 : s.len), s.ptr);
        return -1;
    }
    return 0;
}

static int load_hparams(vision_model *v) {
    const gguf_file *f = v->gguf;
    if (projector_kind(f, &v->proj) != 0) return -1;
    v->n_layer = v->n_embd = v->n_head = v->n_ff = 0;
    int n_head_kv = -1;
    v->eps = 1e-6f;
    bool gelu = false;
    v->ollama = vision_ollama_detect(f);
    if (v->ollama) {
        if (vision_ollama_hparams(v) != 0) return -1;
        gelu = true;
        goto check;
    }
    if (!read_u32(f, "clip.vision.embedding_length", &v->n_embd, true) || !read_u32(f, "clip.vision.attention.head_count", &v->n_head, true) ||
        !read_u32(f, "clip.vision.feed_forward_length", &v->n_ff, true) || !read_u32(f, "clip.vision.block_count", &v->n_layer, true) ||
        !read_u32(f, "clip.vision.projection_dim", &v->proj_dim, true) || !read_u32(f, "clip.vision.image_size", &v->image_size, true) ||
        !read_u32(f, "clip.vision.patch_size", &v->patch_size, true) || !read_u32(f, "clip.vision.attention.head_count_kv", &n_head_kv, false) ||
        !read_f32x3(f, "clip.vision.image_mean", v->mean) || !read_f32x3(f, "clip.vision.image_std", v->std))
        return -1;
    if (!gguf_get_f32(f, "clip.vision.attention.layer_norm_epsilon", &v->eps)) {
        if (!gguf_find(f, "clip.vision.attention.layer_norm_epsilon"))
            anv_set_error("%s: missing metadata key clip.vision.attention.layer_norm_epsilon", f->path);
        return -1;
    }
    if (gguf_find(f, "clip.use_gelu") && !gguf_get_bool(f, "clip.use_gelu", &gelu)) return -1;
    if (v->proj == VISION_PROJ_GEMMA3) {
        v->merge = 4;   /* gemma3's default pooling (patches per side / 4) */
        v->resize = VISION_RESIZE_BILINEAR;
        memset(v->pad, 0, 3);
        if (!read_u32(f, "clip.vision.projector.scale_factor", &v->merge, false)) return -1;
        v->n_layer_run = v->n_layer;
    } else if (v->proj == VISION_PROJ_GEMMA4) {   /* clip.cpp's GEMMA4V defaults (pooling 3, bicubic) */
        v->merge = 3;
        v->resize = VISION_RESIZE_BICUBIC;
        memset(v->pad, 0, 3);
        if (!read_u32(f, "clip.vision.projector.scale_factor", &v->merge, false)) return -1;
        v->n_layer_run = v->n_layer;
    } else if (vision_is_qwen(v)) {
        if (vision_qwen_hparams(v) != 0) return -1;
    } else if (v->proj == VISION_PROJ_PIXTRAL) {
        if (vision_pixtral_hparams(v) != 0) return -1;
    } else {   /* llava-1.5 (llama.cpp's defaults for mlp without pinpoints) */
        v->merge = 1;
        v->resize = VISION_RESIZE_BICUBIC;
        const uint8_t pad[3] = {122, 116, 104};
        memcpy(v->pad, pad, 3);
        v->n_layer_run = v->n_layer - 1;   /* the output of the second to last block */
    }
    v->gelu_quick = !gelu;
check:;
    const int pps = v->patch_size > 0 ? v->image_size / v->patch_size : 0;
    if (v->n_embd < 1 || v->n_head < 1 || v->n_ff < 1 || v->n_layer_run < 1 || v->proj_dim < 1 || v->patch_size < 1 ||
        v->image_size < v->patch_size || (v->proj != VISION_PROJ_PIXTRAL && v->image_size % v->patch_size) || v->n_embd % v->n_head || v->merge < 1 ||
        (v->proj != VISION_PROJ_GEMMA4 && v->proj != VISION_PROJ_PIXTRAL && !vision_is_qwen(v) && pps % v->merge) ||
        (n_head_kv >= 0 && n_head_kv != v->n_head) || v->image_size > 4096) {
        anv_set_error("%s: invalid vision shape (embedding %d, heads %d, ffn %d, blocks %d, projection %d, image %d, patch %d, merge %d)",
                      f->path, v->n_embd, v->n_head, v->n_ff, v->n_layer, v->proj_dim, v->image_size, v->patch_size, v->merge);
        return -1;
    }
    if (!gelu && v->proj == VISION_PROJ_GEMMA3) {
        anv_set_error("%s: gemma3 projector without clip.use_gelu = true is not supported", f->path);
        return -1;
    }
    if (!isfinite(v->eps) || v->eps <= 0) { anv_set_error("%s: layer_norm_epsilon %g is invalid", f->path, (double)v->eps); return -1; }
    for (int c = 0; c < 3; c++)
        if (!isfinite(v->mean[c]) || !isfinite(v->std[c]) || v->std[c] == 0) {
            anv_set_error("%s: image_mean / image_std hold an invalid value", f->path);
            return -1;
        }
    return v->proj == VISION_PROJ_GEMMA4 ? gemma4v_info(v) : 0;   /* its layout needs a few more facts */
}

static int load_weights(vision_model *v) {
    const int64_t e = v->n_embd, ff = v->n_ff, pp3 = 3LL * v->patch_size * v->patch_size;
    bool fail = false;
    const gguf_tensor *ce = find_tensor(v, "v.class_embd");
    if (ce && (ce->type != QT_F32 || ce->ne[0] != e || ce->ne[1] != 1 || ce->ne[2] != 1 || ce->ne[3] != 1)) {
        anv_set_error("%s: tensor 'v.class_embd' must be F32 [%lld]", v->gguf->path, (long long)e);
        return -1;
    }
    v->class_embd = ce ? (const float *)ce->data : NULL;   /* the class token: appended after the patches */
    const int64_t n_pos = (int64_t)(v->image_size / v->patch_size) * (v->image_size / v->patch_size) + (ce ? 1 : 0);
    const gguf_tensor *pw = find_tensor(v, "v.patch_embd.weight");
    if (pw && (pw->ne[0] != v->patch_size || pw->ne[1] != v->patch_size || pw->ne[2] != 3 || pw->ne[3] != e ||
               (pw->type != QT_F32 && pw->type != QT_F16))) {
        anv_set_error("%s: tensor 'v.patch_embd.weight' has shape [%lld, %lld, %lld, %lld], expected [%d, %d, 3, %lld] F32/F16",
                      v->gguf->path, (long long)pw->ne[0], (long long)pw->ne[1], (long long)pw->ne[2], (long long)pw->ne[3],
                      v->patch_size, v->patch_size, (long long)e);
        return -1;
    }
    if (!pw) { anv_set_error("%s: missing tensor 'v.patch_embd.weight'", v->gguf->path); return -1; }
    /* the conv kernel [out][in 3][ky][kx] read as [e][3 p p]: one matmul over unfolded patches */
    v->patch_w = v->be->ops->weight_new(v->be, pw->type, pp3, e, pw->data);
    if (!v->patch_w) return -1;
    v->patch_b = vision_put(v, "v.patch_embd.bias", e, 1, false, &fail);
    const gguf_tensor *pt = find_tensor(v, "v.position_embd.weight");
    if (pt && pt->type == QT_F16 && pt->ne[0] == e && pt->ne[1] == n_pos && pt->ne[2] == 1 && pt->ne[3] == 1) {
        /* added as rows (llama.cpp: get_rows): an F32 copy for the add op */
        if (!(v->pos_host = malloc((size_t)n_pos * e * sizeof(float)))) { anv_set_error("out of memory"); return -1; }
        dequantize_row(QT_F16, pt->data, v->pos_host, n_pos * e);
        if (!(v->pos_embd = v->be->ops->weight_new(v->be, QT_F32, e, n_pos, v->pos_host))) return -1;
    } else {
        v->pos_embd = vision_put(v, "v.position_embd.weight", e, n_pos, true, &fail);
        if (v->pos_embd && v->pos_embd->type != QT_F32) {
            anv_set_error("%s: tensor 'v.position_embd.weight' must be F32 or F16", v->gguf->path);
            return -1;
        }
    }
    v->pre_ln_w = vision_put(v, "v.pre_ln.weight", e, 1, false, &fail);
    v->pre_ln_b = vision_put(v, "v.pre_ln.bias", e, 1, v->pre_ln_w != NULL, &fail);
    v->post_ln_w = vision_put(v, "v.post_ln.weight", e, 1, false, &fail);
    v->post_ln_b = vision_put(v, "v.post_ln.bias", e, 1, v->post_ln_w != NULL, &fail);
    if (fail) return -1;
    /* old files have fc1 / fc2 swapped into ffn_down / ffn_up (llama.cpp's is_ffn_swapped) */
    char name[96];
    snprintf(name, sizeof name, "v.blk.0.ffn_down.weight");
    const gguf_tensor *d0 = find_tensor(v, name);
    const bool swapped = d0 && d0->ne[0] == e && e != ff;
    const char *up = swapped ? "ffn_down" : "ffn_up", *down = swapped ? "ffn_up" : "ffn_down";
    for (int il = 0; il < v->n_layer_run && !fail; il++) {
        vision_layer *L = &v->layers[il];
        char w[64], b[64];
        L->ln1_w = vision_put_l(v, il, "ln1.weight", e, 1, true, &fail);
        L->ln1_b = vision_put_l(v, il, "ln1.bias", e, 1, true, &fail);
        L->ln2_w = vision_put_l(v, il, "ln2.weight", e, 1, true, &fail);
        L->ln2_b = vision_put_l(v, il, "ln2.bias", e, 1, true, &fail);
        L->wq = vision_put_l(v, il, "attn_q.weight", e, e, true, &fail);
        L->wk = vision_put_l(v, il, "attn_k.weight", e, e, true, &fail);
        L->wv = vision_put_l(v, il, "attn_v.weight", e, e, true, &fail);
        L->wo = vision_put_l(v, il, "attn_out.weight", e, e, true, &fail);
        L->bq = vision_put_l(v, il, "attn_q.bias", e, 1, false, &fail);
        L->bk = vision_put_l(v, il, "attn_k.bias", e, 1, false, &fail);
        L->bv = vision_put_l(v, il, "attn_v.bias", e, 1, false, &fail);
        L->bo = vision_put_l(v, il, "attn_out.bias", e, 1, false, &fail);
        snprintf(w, sizeof w, "%s.weight", up);
        snprintf(b, sizeof b, "%s.bias", up);
        L->w_up = vision_put_l(v, il, w, e, ff, true, &fail);
        L->b_up = vision_put_l(v, il, b, ff, 1, false, &fail);
        snprintf(w, sizeof w, "%s.weight", down);
        snprintf(b, sizeof b, "%s.bias", down);
        L->w_down = vision_put_l(v, il, w, ff, e, true, &fail);
        L->b_down = vision_put_l(v, il, b, e, 1, false, &fail);
    }
    if (fail) return -1;
    v->center_host = malloc((size_t)e * (size_t)e * sizeof(float));
    if (!v->center_host) { anv_set_error("out of memory"); return -1; }
    for (int64_t r = 0; r < e; r++)
        for (int64_t c = 0; c < e; c++) v->center_host[r * e + c] = (r == c ? 1.0f : 0.0f) - 1.0f / (float)e;
    if (!(v->center = v->be->ops->weight_new(v->be, QT_F32, e, e, v->center_host))) return -1;
    if (v->proj == VISION_PROJ_MLP) {   /* mm.0: [hidden][e], GELU, mm.2: [out][hidden] */
        const gguf_tensor *m0 = find_tensor(v, "mm.0.weight"), *m2 = find_tensor(v, "mm.2.weight");
        if (!m0 || !m2) { anv_set_error("%s: missing tensor '%s'", v->gguf->path, m0 ? "mm.2.weight" : "mm.0.weight"); return -1; }
        const int64_t hidden = m0->ne[1], out = m2->ne[1];
        if (hidden < 1 || hidden > (1 << 20) || out < 1 || out > (1 << 20)) {
            anv_set_error("%s: tensor 'mm.0.weight' / 'mm.2.weight' has an invalid shape", v->gguf->path);
            return -1;
        }
        v->mm0_w = vision_put(v, "mm.0.weight", e, hidden, true, &fail);
        v->mm0_b = vision_put(v, "mm.0.bias", hidden, 1, true, &fail);
        v->mm2_w = vision_put(v, "mm.2.weight", hidden, out, true, &fail);
        v->mm2_b = vision_put(v, "mm.2.bias", out, 1, true, &fail);
        v->out_dim = (int)out;
        return fail ? -1 : 0;
    }
    v->out_dim = v->proj_dim;
    v->soft_norm = vision_put(v, "mm.soft_emb_norm.weight", e, 1, true, &fail);
    if (fail) return -1;
    const gguf_tensor *ip = find_tensor(v, "mm.input_projection.weight");
    const qtype_info *qi = ip ? qtype_get(ip->type) : NULL;
    if (!ip || ip->ne[0] != v->proj_dim || ip->ne[1] != e || ip->ne[2] != 1 || ip->ne[3] != 1 || !qi || !qi->can_dequantize ||
        v->proj_dim % qi->block_size) {
        anv_set_error("%s: tensor 'mm.input_projection.weight' is %s, expected [%d, %lld]", v->gguf->path, ip ? "misshapen" : "missing",
                      v->proj_dim, (long long)e);
        return -1;
    }
    /* ggml_mul_mat(transpose(W), x): out[j] = sum_c W[c][j] x[c]; kept as W^T [proj][e] F32 */
    v->in_proj_host = malloc((size_t)v->proj_dim * (size_t)e * sizeof(float));
    float *row = malloc((size_t)v->proj_dim * sizeof(float));
    if (!v->in_proj_host || !row) { free(row); anv_set_error("out of memory"); return -1; }
    const size_t rb = qtype_row_size((qtype)ip->type, v->proj_dim);
    for (int64_t c = 0; c < e; c++) {
        dequantize_row((qtype)ip->type, (const uint8_t *)ip->data + (size_t)c * rb, row, v->proj_dim);
        for (int j = 0; j < v->proj_dim; j++) v->in_proj_host[(size_t)j * e + c] = row[j];
    }
    free(row);
    v->in_proj = v->be->ops->weight_new(v->be, QT_F32, e, v->proj_dim, v->in_proj_host);
    return v->in_proj ? 0 : -1;
}

static _Atomic uint64_t next_model_id = 1;

vision_model *vision_load_info(const char *path) {
    vision_model *v = calloc(1, sizeof *v);
    if (!v) { anv_set_error("out of memory"); return NULL; }
    v->id = atomic_fetch_add(&next_model_id, 1);
    if (!(v->gguf = gguf_open(path)) || load_hparams(v) != 0) {
        vision_free(v);
        return NULL;
    }
    return v;
}

uint64_t vision_model_id(const vision_model *v) { return v->id; }

vision_model *vision_load(const char *path, const vision_load_opts *opts) {
    if (!opts || !opts->cpu) { anv_set_error("vision_load: no CPU backend"); return NULL; }
    vision_model *v = calloc(1, sizeof *v);
    if (!v) { anv_set_error("out of memory"); return NULL; }
    v->id = atomic_fetch_add(&next_model_id, 1);
    v->cpu = opts->cpu;
    v->be = opts->gpu ? opts->gpu : opts->cpu;
    if (!(v->gguf = gguf_open(path)) || load_hparams(v) != 0) goto fail;
    if (!(v->layers = calloc((size_t)v->n_layer, sizeof *v->layers))) { anv_set_error("out of memory"); goto fail; }
    if ((v->proj == VISION_PROJ_GEMMA4       ? gemma4v_load(v)
         : vision_is_qwen(v)                 ? vision_qwen_load(v)
         : v->proj == VISION_PROJ_PIXTRAL    ? vision_pixtral_load(v)
                                             : load_weights(v)) != 0)
        goto fail;
    return v;
fail:
    vision_free(v);
    return NULL;
}

void vision_free(vision_model *v) {
    if (!v) return;
    gemma4v_free(v);
    vision_qwen_free(v);
    vision_pixtral_free(v);
    for (int il = 0; v->layers && il < v->n_layer_run; il++) {
        vision_layer *L = &v->layers[il];
        be_tensor *ts[] = {L->ln1_w, L->ln1_b, L->ln2_w, L->ln2_b, L->wq, L->wk, L->wv, L->wo, L->bq, L->bk, L->bv, L->bo,
                           L->w_up, L->b_up, L->w_down, L->b_down};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) be_tensor_free(ts[i]);
    }
    be_tensor *ts[] = {v->patch_w, v->patch_b, v->pos_embd, v->pre_ln_w, v->pre_ln_b, v->post_ln_w, v->post_ln_b,
                       v->center, v->soft_norm, v->in_proj, v->mm0_w, v->mm0_b, v->mm2_w, v->mm2_b};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) be_tensor_free(ts[i]);
    free(v->layers);
    free(v->center_host);
    free(v->in_proj_host);
    free(v->pos_host);
    if (v->gguf) gguf_close(v->gguf);
    free(v);
}

vision_proj_type vision_projector(const vision_model *v) { return v->proj; }
int vision_n_embd(const vision_model *v) { return v->out_dim; }
int vision_image_size(const vision_model *v) { return v->image_size; }
int vision_max_tokens(const vision_model *v) {
    if (v->proj == VISION_PROJ_GEMMA4) return gemma4v_max_tokens(v);
    if (vision_is_qwen(v)) return vision_qwen_max_tokens(v);
    const int side = v->image_size / v->patch_size / v->merge;
    return side * side;
}
int vision_batch_rows(const vision_model *v) { return vision_noncausal(v) ? vision_max_tokens(v) : 0; }
static int fixed_tokens(const vision_model *v) {
    const int side = v->image_size / v->patch_size / v->merge;
    return side * side;
}
static int check_image_size(int width, int height) {
    if (width < 1 || height < 1 || (int64_t)width * height > VISION_MAX_PIXELS) {
        anv_set_error("image of %d x %d pixels is empty or larger than the limit of %d pixels", width, height, VISION_MAX_PIXELS);
        return -1;
    }
    return 0;
}
int vision_image_layout(const vision_model *v, int width, int height, vision_layout *out) {
    if (check_image_size(width, height) != 0) return -1;
    if (v->proj == VISION_PROJ_GEMMA4) return gemma4v_layout(v, width, height, out);
    if (vision_is_qwen(v)) return vision_qwen_layout(v, width, height, out);
    if (v->proj == VISION_PROJ_PIXTRAL) return vision_pixtral_layout(v, width, height, out);
    const int side = v->image_size / v->patch_size / v->merge;
    *out = (vision_layout){.n_tokens = side * side, .grid_w = side, .grid_h = side, .width = v->image_size, .height = v->image_size};
    return 0;
}
const char *vision_image_begin(const vision_model *v) {
    return v->proj == VISION_PROJ_GEMMA3 ? "<start_of_image>" : v->proj == VISION_PROJ_GEMMA4 ? "<|image>" : vision_is_qwen(v) ? "<|vision_start|>" : "";
}
const char *vision_image_end(const vision_model *v) {
    return v->proj == VISION_PROJ_GEMMA3     ? "<end_of_image>"
           : v->proj == VISION_PROJ_GEMMA4   ? "<image|>"
           : vision_is_qwen(v)               ? "<|vision_end|>"
           : v->proj == VISION_PROJ_PIXTRAL  ? "[IMG_END]"
                                             : "";
}
/* mtmd_decode_use_non_causal: gemma4v is causal for E2B / E4B (output widths 1536, 2560) only */
bool vision_noncausal(const vision_model *v) {
    return v->proj == VISION_PROJ_GEMMA3 || (v->proj == VISION_PROJ_GEMMA4 && v->out_dim != 1536 && v->out_dim != 2560);
}

int vision_check_text_model(const vision_model *v, const model *m) {
    if (model_n_embd_inp(m) != v->out_dim) {
        anv_set_error("%s: the projector's output width %d does not match the text model's input width %d", v->gguf->path, v->out_dim,
                      model_n_embd_inp(m));
        return -1;
    }
    return 0;
}

/* ---- preprocessing ---- */

int vision_preprocess_rgb(const vision_model *v, const uint8_t *rgb, int width, int height, uint8_t *out) {
    if (!rgb || check_image_size(width, height) != 0) return -1;
    if (v->proj == VISION_PROJ_GEMMA4) {
        vision_layout lay;
        return gemma4v_layout(v, width, height, &lay) != 0 ? -1 : gemma4v_preprocess(v, rgb, width, height, &lay, out);
    }
    if (vision_is_qwen(v) || v->proj == VISION_PROJ_PIXTRAL) {
        vision_layout lay;
        if (vision_image_layout(v, width, height, &lay) != 0) return -1;
        return vision_resize_padded_wh(rgb, width, height, out, lay.width, lay.height, v->resize, v->pad);
    }
    /* llama.cpp's PAD_CEIL: gemma3 pads black (the default colour), llava (122, 116, 104) */
    return vision_resize_padded(rgb, width, height, out, v->image_size, v->resize, v->pad);
}

/* The normalised pixels unfolded into rows of one patch each: [n_patch][3][p][p]. */
static void unfold_patches(const vision_model *v, const uint8_t *img, float *out) {
    const int S = v->image_size, p = v->patch_size, pps = S / p;
    for (int py = 0; py < pps; py++)
        for (int px = 0; px < pps; px++) {
            float *row = out + ((size_t)py * pps + px) * 3 * p * p;
            for (int c = 0; c < 3; c++)
                for (int ky = 0; ky < p; ky++)
                    for (int kx = 0; kx < p; kx++) {
                        const uint8_t u = img[(((size_t)py * p + ky) * S + (size_t)px * p + kx) * 3 + c];
                        row[((size_t)c * p + ky) * p + kx] = ((float)u / 255.0f - v->mean[c]) / v->std[c];
                    }
        }
}

/* ---- the encoder ---- */

typedef struct {
    be_tensor *patches, *x, *xn, *tmp, *q, *k, *v, *att, *up, *gq, *ones, *pooled, *proj, *hid;
} vision_scratch;

static void scratch_free(vision_scratch *s) {
    be_tensor *ts[] = {s->patches, s->x, s->xn, s->tmp, s->q, s->k, s->v, s->att, s->up, s->gq, s->ones, s->pooled, s->proj, s->hid};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) be_tensor_free(ts[i]);
}

/* y = LayerNorm(x) * w + b over n rows (tmp: the centred rows). */
static void layer_norm(const vision_model *v, const be_tensor *x, be_tensor *tmp, be_tensor *y, const be_tensor *w,
                       const be_tensor *b, int n) {
    backend *be = v->be;
    be->ops->matmul(be, v->center, x, tmp, n, false);
    be->ops->rms_norm(be, tmp, w, y, n, v->n_embd, v->eps);
    if (b) be->ops->add(be, y, b, y, (int64_t)n * v->n_embd, v->n_embd);
}

/* The block's activation of h (n elements) in place, or into gq (quick GELU: sigmoid(1.702 h) * h
 * through the sigmoid GLU on a scaled copy); returns the tensor holding the result. */
static be_tensor *activate(const vision_model *v, vision_scratch *s, be_tensor *h, int rows, int64_t n) {
    backend *be = v->be;
    if (!v->gelu_quick) {
        be->ops->glu(be, h, s->ones, h, n, BE_GLU_GELU_TANH);
        return h;
    }
    be->ops->store_rows(be, h, s->gq, 0, rows);
    be->ops->scale(be, s->gq, n, 1.702f);
    be->ops->glu(be, s->gq, h, s->gq, n, BE_GLU_SIGMOID);
    return s->gq;
}

static void run_block(const vision_model *v, const vision_layer *L, vision_scratch *s, int n) {
    backend *be = v->be;
    const backend_ops *op = be->ops;
    const int64_t e = v->n_embd, ne = (int64_t)n * e, nf = (int64_t)n * v->n_ff;
    layer_norm(v, s->x, s->tmp, s->xn, L->ln1_w, L->ln1_b, n);
    op->matmul(be, L->wq, s->xn, s->q, n, false);
    op->matmul(be, L->wk, s->xn, s->k, n, false);
    op->matmul(be, L->wv, s->xn, s->v, n, false);
    if (L->bq) op->add(be, s->q, L->bq, s->q, ne, e);
    if (L->bk) op->add(be, s->k, L->bk, s->k, ne, e);
    if (L->bv) op->add(be, s->v, L->bv, s->v, ne, e);
    const int hd = v->n_embd / v->n_head;
    be_attn_params ap = {.n_tok = n, .pos0 = 0, .n_head = v->n_head, .n_kv_head = v->n_head, .head_dim = hd,
                         .scale = 1.0f / sqrtf((float)hd), .noncausal = true};
    op->attention(be, s->q, s->k, s->v, s->att, &ap);
    op->matmul(be, L->wo, s->att, s->x, n, true);
    if (L->bo) op->add(be, s->x, L->bo, s->x, ne, e);
    layer_norm(v, s->x, s->tmp, s->xn, L->ln2_w, L->ln2_b, n);
    op->matmul(be, L->w_up, s->xn, s->up, n, false);
    if (L->b_up) op->add(be, s->up, L->b_up, s->up, nf, v->n_ff);
    be_tensor *h = activate(v, s, s->up, n, nf);
    op->matmul(be, L->w_down, h, s->x, n, true);
    if (L->b_down) op->add(be, s->x, L->b_down, s->x, ne, e);
}

/* gemma3's k x k average pool of the pps x pps patch grid (host): [n_out][e]. */
static void avg_pool(const vision_model *v, const float *x, float *out) {
    const int pps = v->image_size / v->patch_size, k = v->merge, side = pps / k, e = v->n_embd;
    const float inv = 1.0f / (float)(k * k);
    for (int oy = 0; oy < side; oy++)
        for (int ox = 0; ox < side; ox++) {
            float *o = out + ((size_t)oy * side + ox) * e;
            for (int c = 0; c < e; c++) o[c] = 0;
            for (int ky = 0; ky < k; ky++)
                for (int kx = 0; kx < k; kx++) {
                    const float *r = x + ((size_t)(oy * k + ky) * pps + (size_t)ox * k + kx) * e;
                    for (int c = 0; c < e; c++) o[c] += r[c];
                }
            for (int c = 0; c < e; c++) o[c] *= inv;
        }
}

/* gemma3: pool (host), soft-embedding RMS norm, input projection into out. */
static int project_gemma3(vision_model *v, vision_scratch *s, float *host, float *pooled, int n, float *out) {
    backend *be = v->be;
    const int64_t e = v->n_embd;
    const int n_out = fixed_tokens(v);
    be_download(s->x, 0, host, (size_t)n * e * sizeof(float));
    if (be_error(be)) { anv_set_error("%s", be_error(be)); return -1; }
    avg_pool(v, host, pooled);
    be_upload(s->pooled, 0, pooled, (size_t)n_out * e * sizeof(float));
    be->ops->rms_norm(be, s->pooled, v->soft_norm, s->pooled, n_out, e, v->eps);
    be->ops->matmul(be, v->in_proj, s->pooled, s->proj, n_out, false);
    be_download(s->proj, 0, out, (size_t)n_out * v->out_dim * sizeof(float));
    return 0;
}

/* llava's mlp: the rows llama.cpp's graph takes (1 .. n_patch of [patches, class]), mm.0, GELU, mm.2. */
static void project_mlp(vision_model *v, vision_scratch *s, int n_patch, float *out) {
    backend *be = v->be;
    const backend_ops *op = be->ops;
    const int64_t hidden = v->mm0_w->rows;
    const be_tensor rows = be_view_rows(s->x, v->class_embd ? 1 : 0, n_patch);
    op->matmul(be, v->mm0_w, &rows, s->hid, n_patch, false);
    op->add(be, s->hid, v->mm0_b, s->hid, n_patch * hidden, hidden);
    op->glu(be, s->hid, s->ones, s->hid, n_patch * hidden, BE_GLU_GELU_TANH);
    op->matmul(be, v->mm2_w, s->hid, s->proj, n_patch, false);
    op->add(be, s->proj, v->mm2_b, s->proj, (int64_t)n_patch * v->out_dim, v->out_dim);
    be_download(s->proj, 0, out, (size_t)n_patch * v->out_dim * sizeof(float));
}

int vision_encode(vision_model *v, const uint8_t *rgb, int width, int height, float *out) {
    if (!v->be) { anv_set_error("vision_encode: the projector was opened for its layout only (vision_load_info)"); return -1; }
    if (v->proj == VISION_PROJ_GEMMA4) return !rgb || check_image_size(width, height) != 0 ? -1 : gemma4v_encode(v, rgb, width, height, out);
    if (vision_is_qwen(v)) return !rgb || check_image_size(width, height) != 0 ? -1 : vision_qwen_encode(v, rgb, width, height, out);
    if (v->proj == VISION_PROJ_PIXTRAL) return !rgb || check_image_size(width, height) != 0 ? -1 : vision_pixtral_encode(v, rgb, width, height, out);
    const int S = v->image_size, p = v->patch_size, n_patch = (S / p) * (S / p), n_out = fixed_tokens(v);
    const int n = n_patch + (v->class_embd ? 1 : 0);   /* positions: the patches, then the class token */
    const int64_t e = v->n_embd, pp3 = 3LL * p * p, hidden = v->mm0_w ? v->mm0_w->rows : 1;
    const int64_t wide = v->n_ff > hidden ? v->n_ff : hidden;
    backend *be = v->be;
    vision_scratch s = {0};
    int rc = -1;
    uint8_t *img = malloc((size_t)S * S * 3);
    const size_t host_cols = (size_t)(pp3 > e ? pp3 : e) > (size_t)wide ? (size_t)(pp3 > e ? pp3 : e) : (size_t)wide;
    float *host = malloc((size_t)n * host_cols * sizeof(float)), *pooled = malloc((size_t)n_out * e * sizeof(float));
    if (!img || !host || !pooled) { anv_set_error("out of memory"); goto done; }
    if (vision_preprocess_rgb(v, rgb, width, height, img) != 0) goto done;
    s.patches = be_tensor_new(be, QT_F32, pp3, n_patch);
    s.x = be_tensor_new(be, QT_F32, e, n);
    s.xn = be_tensor_new(be, QT_F32, e, n);
    s.tmp = be_tensor_new(be, QT_F32, e, n);
    s.q = be_tensor_new(be, QT_F32, e, n);
    s.k = be_tensor_new(be, QT_F32, e, n);
    s.v = be_tensor_new(be, QT_F32, e, n);
    s.att = be_tensor_new(be, QT_F32, e, n);
    s.up = be_tensor_new(be, QT_F32, v->n_ff, n);
    s.gq = be_tensor_new(be, QT_F32, v->n_ff, n);
    s.ones = be_tensor_new(be, QT_F32, wide, n);
    s.pooled = be_tensor_new(be, QT_F32, e, n_out);
    s.proj = be_tensor_new(be, QT_F32, v->out_dim, n_out);
    s.hid = be_tensor_new(be, QT_F32, hidden, n_out);
    if (!s.patches || !s.x || !s.xn || !s.tmp || !s.q || !s.k || !s.v || !s.att || !s.up || !s.gq || !s.ones || !s.pooled ||
        !s.proj || !s.hid)
        goto done;
    for (size_t i = 0; i < (size_t)n * wide; i++) host[i] = 1.0f;   /* the unit "up" of the GELU */
    be_upload(s.ones, 0, host, (size_t)n * wide * sizeof(float));
    unfold_patches(v, img, host);
    be_upload(s.patches, 0, host, (size_t)n_patch * pp3 * sizeof(float));
    const backend_ops *op = be->ops;
    be_tensor patch_rows = be_view_rows(s.x, 0, n_patch);
    op->matmul(be, v->patch_w, s.patches, &patch_rows, n_patch, false);
    if (v->patch_b) op->add(be, &patch_rows, v->patch_b, &patch_rows, n_patch * e, e);
    if (v->class_embd) be_upload(s.x, (size_t)n_patch * e * sizeof(float), v->class_embd, (size_t)e * sizeof(float));
    op->add(be, s.x, v->pos_embd, s.x, n * e, n * e);
    if (v->pre_ln_w) {
        layer_norm(v, s.x, s.tmp, s.xn, v->pre_ln_w, v->pre_ln_b, n);
        op->store_rows(be, s.xn, s.x, 0, n);
    }
    for (int il = 0; il < v->n_layer_run; il++) run_block(v, &v->layers[il], &s, n);
    if (v->post_ln_w) {
        layer_norm(v, s.x, s.tmp, s.xn, v->post_ln_w, v->post_ln_b, n);
        op->store_rows(be, s.xn, s.x, 0, n);
    }
    if (v->proj == VISION_PROJ_GEMMA3) {
        if (project_gemma3(v, &s, host, pooled, n, out) != 0) goto done;
    } else {
        project_mlp(v, &s, n_patch, out);
    }
    if (be_error(be)) { anv_set_error("%s", be_error(be)); goto done; }
    rc = 0;
done:
    scratch_free(&s);
    free(img);
    free(host);
    free(pooled);
    return rc;
}

int vision_eval_image(model_ctx *c, const vision_model *v, const float *embd, const vision_layout *lay, float *logits) {
    if (vision_check_text_model(v, model_ctx_model(c)) != 0) return -1;
    return model_eval_embd_grid(c, embd, lay->n_tokens, lay->grid_w, lay->grid_h, vision_noncausal(v), logits, false);
}

/* ---- finding the projector ---- */

static bool is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

char *vision_find_projector(const char *model_path, const char *mmproj) {
    if (mmproj && mmproj[0]) {
        if (!is_file(mmproj)) { anv_set_error("%s: projector file not found", mmproj); return NULL; }
        return strdup(mmproj);
    }
    if (!model_path) return NULL;
    gguf_file *self = gguf_open(model_path);   /* Ollama's single file: the model holds its vision tower */
    const bool holds_vision = self && vision_ollama_detect(self);
    gguf_close(self);
    if (holds_vision) return strdup(model_path);
    const char *slash = strrchr(model_path, '/');
    size_t dl = slash ? (size_t)(slash - model_path) : 1;
    char *dir = malloc(dl + 1);
    if (!dir) return NULL;
    if (slash) memcpy(dir, model_path, dl); else dir[0] = '.';
    dir[dl] = 0;
    char *best = NULL;
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            const size_t len = strlen(de->d_name);
            if (strncmp(de->d_name, "mmproj", 6) || len < 11 || strcmp(de->d_name + len - 5, ".gguf")) continue;
            if (best && strcmp(de->d_name, best) >= 0) continue;
            free(best);
            best = strdup(de->d_name);
        }
        closedir(d);
    }
    char *path = NULL;
    if (best) {
        const size_t n = dl + 1 + strlen(best) + 1;
        if ((path = malloc(n))) snprintf(path, n, "%s/%s", dir, best);
        if (path && !is_file(path)) { free(path); path = NULL; }
    }
    free(best);
    free(dir);
    return path;
}

bool model_has_vision(const char *model_path, const char *mmproj) {
    char *p = vision_find_projector(model_path, mmproj);
    if (!p) return false;
    gguf_file *f = gguf_open(p);
    free(p);
    if (!f) return false;
    vision_proj_type kind;
    const bool ok = projector_kind(f, &kind) == 0;   /* exactly the files vision_load takes */
    gguf_close(f);
    return ok;
}
