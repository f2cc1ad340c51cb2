/* vk_fused: the optional fused ops of backend.h for decode, fewer dispatches per token.
 * matmul_glu: gate and up weights in one mat-vec dispatch (mul_mat_vec.comp MV_GLU), the glu
 * applied on the two row sums; each sum is the one the plain mat-vec kernel makes (same
 * order, same rows-per-workgroup choice), so results equal matmul, matmul, glu bit for bit.
 * Covered: every weight type with a mat-vec kernel (the GGUF layout and vk_wide.c's repacked
 * one, "_w"), n_tok <= the mat-vec limit, both weights of one type, shape and layout split
 * into the same row chunks, x and out each in one buffer. Not covered (returns false: the
 * caller issues the unfused ops): a weight the unfused matmul gives the integer-dot mat-vec
 * (its quantized activations differ from the float kernel's), a "_w" kernel without a fused twin (the uvec4
 * Q4_K/Q5_K mat-vec), the tiled mat-mat sizes, devices without
 * shaderStorageBufferArrayDynamicIndexing.
 * rope_store: rope of q in place, rope of k into the K cache and v into the V cache in one
 * dispatch (rope_store.comp), F32/F16/Q8_0/Q4_0 caches as store_rows; the rope angles and
 * conversions are the shaders' shared includes, so the bits equal rope, rope, store_rows,
 * store_rows. Not covered (false): a tensor range spanning two device buffers.
 * Both return false when ANVIL_VK_DISABLE names "fuse". */
#include <math.h>
#include "quant.h"
#include "vk_internal.h"
#include "vk_wide.h"
#include "vk_int8.h"

#define FUSE_MAX_SEGS 64
#define FUSE_MAX_GROUPS 65535u

typedef struct { vk_chunk *ch; int64_t r0, r1; size_t local; } fuse_seg;

/* Rows [0, n_rows) of weight t as pieces inside one chunk each (storage rows: vk_wide.c's
 * stride for a repacked weight); -1 if a row straddles chunks. */
static int segments(const be_tensor *t, int64_t n_rows, fuse_seg *segs) {
    vk_storage *s = t->storage;
    const size_t rb = vkw_stride(t), base = vkw_base(t);
    if (base == SIZE_MAX) return -1;
    int n = 0;
    for (int64_t r = 0; r < n_rows;) {
        const size_t off = base + (size_t)r * rb;
        vk_chunk *ch = vk_storage_find(s, off, rb);
        if (!ch || n == FUSE_MAX_SEGS) return -1;
        const int64_t fit = (int64_t)((ch->begin + ch->size - off) / rb);
        const int64_t r1 = r + fit < n_rows ? r + fit : n_rows;
        segs[n++] = (fuse_seg){ ch, r, r1, off - ch->begin };
        r = r1;
    }
    return n;
}

/* The chunk holding bytes [t->offset + off, + n) of t, or NULL (no error: the caller falls back). */
static vk_chunk *one_chunk(const be_tensor *t, size_t off, size_t n, size_t *local) {
    vk_storage *s = t->storage;
    const size_t lo = t->offset + off;
    if (lo + n > s->total) return NULL;
    vk_chunk *ch = vk_storage_find(s, lo, n);
    if (ch) *local = lo - ch->begin;
    return ch;
}

static bool f32_of(const vk_ctx *c, const be_tensor *t) {
    return t && t->be == &c->base && t->type == QT_F32 && t->offset % 4 == 0;
}

/* The fused twin of the mat-vec kernel the unfused matmul runs on w (vkw_pick: the "_w"
 * kernels of the repacked layout), or -1: none (declined). */
static int glu_pipe(const be_tensor *w, int ti) {
    const int plain = vkw_pick(w, VKP_MMV + ti);
    if (plain == VKP_MMV + ti) return VKP_MMV_GLU + ti;
    if (plain >= VKP_MMV_W && plain < VKP_MMV_W + VKW_N_TYPES) return VKP_MMV_GLU_W + (plain - VKP_MMV_W);
    return -1;
}

bool vk_op_matmul_glu(backend *be, const be_tensor *wg, const be_tensor *wu, const be_tensor *x, be_tensor *out, int n_tok,
                      be_glu_kind kind) {
    vk_ctx *c = vk_of(be);
    if (!c->use_fuse || be_failed(&c->base) || n_tok <= 0 || n_tok > c->mv_max_tok) return false;
    if (wg->be != be || wu->be != be || !f32_of(c, x) || !f32_of(c, out)) return false;
    if (kind != BE_GLU_SILU && kind != BE_GLU_GELU_TANH && kind != BE_GLU_SWIGLU_OAI) return false;
    const int64_t K = wg->cols, N = wg->rows;
    const int ti = vkp_type_index(wg->type);
    if (ti < 0 || wu->type != wg->type || wu->cols != K || wu->rows != N) return false;
    const int pipe = glu_pipe(wg, ti), plain = vkw_pick(wg, VKP_MMV + ti);
    if (pipe < 0 || glu_pipe(wu, ti) != pipe || vkw_stride(wu) != vkw_stride(wg)) return false;
    if (vkq_matmul_pipe(c, wg, K) >= 0) return false; /* the unfused matmul takes the integer-dot path (vk_int8.c) */
    if (x->cols < K || out->cols < N || x->rows < n_tok || out->rows < n_tok) return false;
    fuse_seg gs[FUSE_MAX_SEGS], us[FUSE_MAX_SEGS];
    const int ng = segments(wg, N, gs), nu = segments(wu, N, us);
    if (ng < 0 || nu != ng) return false;
    for (int s = 0; s < ng; s++)
        if (gs[s].r0 != us[s].r0 || gs[s].r1 != us[s].r1) return false;
    size_t x_local, o_local;
    vk_chunk *xc = one_chunk(x, 0, (size_t)n_tok * be_row_bytes(x), &x_local);
    vk_chunk *oc = one_chunk(out, 0, (size_t)n_tok * be_row_bytes(out), &o_local);
    if (!xc || !oc) return false;
    const size_t rb = vkw_stride(wg);
    for (int t0 = 0; t0 < n_tok; t0 += 8) { /* the mat-vec kernels take 8 tokens per pass */
        const int nt = n_tok - t0 < 8 ? n_tok - t0 : 8;
        const size_t xl = x_local + (size_t)t0 * be_row_bytes(x), ol = o_local + (size_t)t0 * be_row_bytes(out);
        for (int s = 0; s < ng; s++) {
            const uint32_t nrows = (uint32_t)(gs[s].r1 - gs[s].r0);
            uint32_t pc[12] = { (uint32_t)K, nrows, (uint32_t)nt, (uint32_t)gs[s].local, (uint32_t)rb, (uint32_t)(xl / 4),
                                (uint32_t)x->cols, (uint32_t)(ol / 4 + (size_t)gs[s].r0), (uint32_t)out->cols, 0, 0,
                                (uint32_t)us[s].local };
            /* the plain kernel's rows per workgroup (autotuned on it; the sums do not depend on it) */
            vk_binding pb[3] = { { gs[s].ch, false }, { xc, false }, { oc, true } };
            const uint32_t rows = vk_tune_mv_rows(c, plain, pb, pc, nrows, (uint64_t)nrows * rb);
            uint32_t gx, gy;
            const uint32_t groups = (nrows + rows - 1) / rows;
            gx = groups < FUSE_MAX_GROUPS ? groups : FUSE_MAX_GROUPS;
            gy = (groups + gx - 1) / gx;
            pc[9] = (uint32_t)kind;
            pc[10] = gx;
            vk_binding b[4] = { { gs[s].ch, false }, { us[s].ch, false }, { xc, false }, { oc, true } };
            vk_dispatch(c, pipe, vkp_mv_variant(nt, rows), b, 4, pc, gx, gy, 1,
                        2 * (uint64_t)nrows * rb + (uint64_t)nt * (uint64_t)K * 4 + (uint64_t)nt * nrows * 4);
        }
    }
    return true;
}

bool vk_op_rope_store(backend *be, be_tensor *q, const be_tensor *k, const be_tensor *v, be_tensor *kc, be_tensor *vc, int n_tok,
                      int n_head, int n_kv_head, int head_dim, int pos0, const be_rope_params *p) {
    vk_ctx *c = vk_of(be);
    if (!c->use_fuse || be_failed(&c->base) || n_tok <= 0) return false;
    if (!f32_of(c, q) || !f32_of(c, k) || !f32_of(c, v) || kc->be != be || vc->be != be || kc->type != vc->type) return false;
    if (p->freq_factors && !f32_of(c, p->freq_factors)) return false;
    const int pipe = kc->type == QT_F32 ? VKP_ROPE_STORE_F32 : kc->type == QT_F16 ? VKP_ROPE_STORE_F16
                   : kc->type == QT_Q8_0 ? VKP_ROPE_STORE_Q8_0 : kc->type == QT_Q4_0 ? VKP_ROPE_STORE_Q4_0 : -1;
    const bool quant = kc->type == QT_Q8_0 || kc->type == QT_Q4_0;
    if (pipe < 0 || p->n_rot <= 0 || p->n_rot > head_dim || p->n_rot % 2 || n_head <= 0 || n_kv_head <= 0 || pos0 < 0 ||
        (quant && head_dim % 32))
        return false;
    const int64_t kvd = (int64_t)n_kv_head * head_dim;
    if (kc->cols != kvd || vc->cols != kvd || (int64_t)n_head * head_dim > q->cols || k->cols < kvd || v->cols < kvd ||
        q->rows < n_tok || k->rows < n_tok || v->rows < n_tok || (int64_t)pos0 + n_tok > kc->rows || (int64_t)pos0 + n_tok > vc->rows)
        return false;
    const size_t crb = be_row_bytes(kc);
    size_t ql, kl, vl, kcl, vcl, fl = 0;
    vk_chunk *qch = one_chunk(q, 0, (size_t)n_tok * be_row_bytes(q), &ql);
    vk_chunk *kch = one_chunk(k, 0, (size_t)n_tok * be_row_bytes(k), &kl);
    vk_chunk *vch = one_chunk(v, 0, (size_t)n_tok * be_row_bytes(v), &vl);
    vk_chunk *kcc = one_chunk(kc, (size_t)pos0 * crb, (size_t)n_tok * crb, &kcl);
    vk_chunk *vcc = one_chunk(vc, (size_t)pos0 * crb, (size_t)n_tok * crb, &vcl);
    vk_chunk *fch = p->freq_factors ? one_chunk(p->freq_factors, 0, (size_t)(p->n_rot / 2) * 4, &fl) : NULL;
    if (!qch || !kch || !vch || !kcc || !vcc || (p->freq_factors && !fch)) return false;
    const size_t align = kc->type == QT_F32 ? 4 : 2;
    if (kcl % align || vcl % align || crb % align) return false;
    const float theta_scale = powf(p->freq_base, -2.0f / (float)p->n_rot);
    float mscale = p->attn_factor != 0.0f ? p->attn_factor : 1.0f; /* YaRN (backend.h), as op_rope */
    if (p->ext_factor != 0.0f) mscale *= 1.0f + 0.1f * logf(1.0f / p->freq_scale);
    const uint32_t slots = (uint32_t)(n_head + 2 * n_kv_head);
    const int tok_per = (int)(FUSE_MAX_GROUPS / slots);
    if (tok_per < 1) return false;
    for (int t0 = 0; t0 < n_tok; t0 += tok_per) {
        const int nt = n_tok - t0 < tok_per ? n_tok - t0 : tok_per;
        struct { uint32_t n_head, n_kv_head, head_dim, pos0, n_rot, neox, q_off, q_stride, k_off, k_stride, v_off, v_stride;
                 uint32_t kc_off, kc_stride, vc_off, vc_stride, ff_off, has_ff;
                 float theta_scale, freq_scale, ext_factor, mscale, corr_lo, corr_hi; } pc = {
            (uint32_t)n_head, (uint32_t)n_kv_head, (uint32_t)head_dim, (uint32_t)(pos0 + t0), (uint32_t)p->n_rot,
            p->mode == BE_ROPE_NEOX ? 1u : 0u,
            (uint32_t)(ql / 4 + (size_t)t0 * (size_t)q->cols), (uint32_t)q->cols,
            (uint32_t)(kl / 4 + (size_t)t0 * (size_t)k->cols), (uint32_t)k->cols,
            (uint32_t)(vl / 4 + (size_t)t0 * (size_t)v->cols), (uint32_t)v->cols,
            (uint32_t)(kcl + (size_t)t0 * crb), (uint32_t)crb, (uint32_t)(vcl + (size_t)t0 * crb), (uint32_t)crb,
            (uint32_t)(fl / 4), fch ? 1u : 0u, theta_scale, p->freq_scale, p->ext_factor, mscale, p->corr_lo, p->corr_hi };
        vk_binding b[6] = { { qch, true }, { kch, false }, { vch, false }, { kcc, true }, { vcc, true }, { fch ? fch : qch, false } };
        const uint64_t bytes = (uint64_t)nt * ((uint64_t)n_head * (uint64_t)p->n_rot * 8 + 2 * (uint64_t)kvd * 4 + 2 * crb);
        vk_dispatch(c, pipe, 0, b, 6, &pc, (uint32_t)((head_dim + 63) / 64), (uint32_t)nt * slots, 1, bytes);
    }
    return true;
}
