/* vk_ops: the compute half of backend_ops for Vulkan: argument checks, splitting work
 * over the chunks a large tensor is made of (row ranges with separate bindings), push
 * constants with element offsets (views), choice of kernel (mat-vec / integer-dot
 * mat-vec / tiled mat-mat) and dispatch. Semantics are those of backend.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "quant.h"
#include "vk_coopmat.h"
#include "vk_int8.h"
#include "vk_internal.h"
#include "vk_wide.h"

#define MAX_SEGS 64
#define MAX_GROUPS 65535u

typedef struct { vk_chunk *ch; int64_t r0, r1; size_t local; } row_seg; /* rows [r0, r1), local byte offset of r0 */

/* Splits rows [0, n_rows) of t into pieces that each lie in one chunk; -1 if a row straddles
 * two chunks (a reshape view across a chunk boundary). */
static int row_segments(const be_tensor *t, int64_t n_rows, row_seg *segs) {
    vk_storage *s = t->storage;
    size_t rb = vkw_stride(t), base = vkw_base(t); /* repacked weights (vk_wide.c): their own row stride */
    if (base == SIZE_MAX) return -1;
    int n = 0;
    int64_t r = 0;
    while (r < n_rows) {
        size_t off = base + (size_t)r * rb;
        vk_chunk *ch = vk_storage_find(s, off, rb);
        if (!ch || n == MAX_SEGS) return -1;
        int64_t fit = (int64_t)((ch->begin + ch->size - off) / rb);
        int64_t r1 = r + fit < n_rows ? r + fit : n_rows;
        segs[n++] = (row_seg){ ch, r, r1, off - ch->begin };
        r = r1;
    }
    return n;
}

/* The one chunk holding bytes [t->offset + off, + n) of t, or NULL (sticky error). */
static vk_chunk *span(vk_ctx *c, const be_tensor *t, size_t off, size_t n, size_t *local, const char *op) {
    vk_storage *s = t->storage;
    size_t lo = t->offset + off;
    *local = 0;
    if (lo + n > s->total) { be_fail(&c->base, "vulkan %s: access of %zu bytes at %zu is past the end of a %zu-byte tensor", op, n, lo, s->total); return NULL; }
    vk_chunk *ch = vk_storage_find(s, lo, n);
    if (!ch) { be_fail(&c->base, "vulkan %s: the accessed range spans two device buffers (tensor larger than one binding)", op); return NULL; }
    *local = lo - ch->begin;
    return ch;
}

static bool same_be(vk_ctx *c, const be_tensor *t, const char *op) {
    if (t && t->be != &c->base) { be_fail(&c->base, "vulkan %s: tensor belongs to another backend", op); return false; }
    return true;
}

static bool f32_tensor(vk_ctx *c, const be_tensor *t, const char *op) {
    if (!same_be(c, t, op)) return false;
    if (t->type != QT_F32) { be_fail(&c->base, "vulkan %s: expected an F32 tensor, got type %u", op, t->type); return false; }
    if (t->offset % 4) { be_fail(&c->base, "vulkan %s: F32 view offset %zu not 4-byte aligned", op, t->offset); return false; }
    return true;
}

static void grid2(uint32_t groups, uint32_t *gx, uint32_t *gy) {
    *gx = groups < MAX_GROUPS ? groups : MAX_GROUPS;
    if (*gx == 0) *gx = 1;
    *gy = (groups + *gx - 1) / *gx;
}

/* Splits elements [0, n) (F32, 4 bytes each) into ranges whose bytes lie in one chunk of
 * every tensor in ts (NULL entries skipped); range ends are multiples of g. Returns the
 * number of ranges (bounds[0..count]) or -1 (sticky error). */
#define MAX_RANGES VK_MAX_RANGES
static int elem_ranges(vk_ctx *c, const be_tensor *const *ts, int nt, int64_t n, int64_t g, int64_t *bounds, const char *op) {
    int count = 0;
    bounds[0] = 0;
    for (int64_t e = 0; e < n;) {
        int64_t e1 = n;
        for (int k = 0; k < nt; k++) {
            if (!ts[k]) continue;
            const vk_storage *s = ts[k]->storage;
            size_t lo = ts[k]->offset + (size_t)e * 4;
            const vk_chunk *ch = NULL;
            for (int i = 0; i < s->n_chunks && !ch; i++)
                if (lo >= s->chunk[i].begin && lo < s->chunk[i].begin + s->chunk[i].size) ch = &s->chunk[i];
            if (!ch) { be_fail(&c->base, "vulkan %s: access past the end of a tensor", op); return -1; }
            int64_t lim = e + (int64_t)((ch->begin + ch->size - lo) / 4);
            if (lim < e1) e1 = lim;
        }
        if (e1 < n) e1 = e1 / g * g;
        if (e1 <= e || count == MAX_RANGES) { be_fail(&c->base, "vulkan %s: a %lld-element unit straddles two device buffers", op, (long long)g); return -1; }
        bounds[++count] = e1;
        e = e1;
    }
    return count;
}

/* ---- get_rows ---- */
static void op_get_rows(backend *be, const be_tensor *table, const int32_t *ids, int n_ids, be_tensor *out) {
    vk_ctx *c = vk_of(be);
    if (be_failed(&c->base) || n_ids <= 0) return;
    if (!same_be(c, table, "get_rows") || !f32_tensor(c, out, "get_rows")) return;
    int ti = vkp_type_index(table->type);
    if (ti < 0) { be_fail(&c->base, "vulkan get_rows: table type %u has no kernel", table->type); return; }
    for (int i = 0; i < n_ids; i++)
        if (ids[i] < 0 || ids[i] >= table->rows) { be_fail(&c->base, "vulkan get_rows: id %d out of range [0, %lld)", ids[i], (long long)table->rows); return; }
    row_seg segs[MAX_SEGS];
    int ns = row_segments(table, table->rows, segs);
    if (ns < 0) { be_fail(&c->base, "vulkan get_rows: table rows straddle device buffers"); return; }
    const size_t rb = vkw_stride(table);
    const size_t ids_off = vk_staging_put(c, ids, (size_t)n_ids * sizeof(int32_t));
    size_t d_local;
    vk_chunk *dch = span(c, out, 0, (size_t)n_ids * (size_t)out->cols * 4, &d_local, "get_rows");
    if (!dch) return;
    for (int s = 0; s < ns; s++) {
        for (int i0 = 0; i0 < n_ids; i0 += (int)MAX_GROUPS) {
            uint32_t n = (uint32_t)(n_ids - i0 < (int)MAX_GROUPS ? n_ids - i0 : (int)MAX_GROUPS);
            uint32_t pc[10] = { (uint32_t)table->cols, n, (uint32_t)segs[s].r0, (uint32_t)segs[s].r1, (uint32_t)segs[s].local,
                                (uint32_t)rb, (uint32_t)(ids_off / 4 + (size_t)i0),
                                (uint32_t)(d_local / 4 + (size_t)i0 * (size_t)out->cols), (uint32_t)out->cols, 0 };
            vk_binding b[3] = { { segs[s].ch, false }, { NULL, false }, { dch, true } };
            vk_dispatch(c, vkw_pick(table, VKP_GET_ROWS + ti), 0, b, 3, pc, (uint32_t)((table->cols + 255) / 256), n, 1,
                        (uint64_t)n * (rb + (uint64_t)table->cols * 4) / (uint64_t)ns);
        }
    }
}

/* ---- matmul ---- */
static vk_chunk *scratch_q8(vk_ctx *c, size_t bytes) {
    if (c->scratch_q8 && c->scratch_q8->total >= bytes) return &c->scratch_q8->chunk[0];
    if (c->scratch_q8) { vk_flush(c); vk_storage_free(c, c->scratch_q8); c->scratch_q8 = NULL; }
    size_t want = bytes < (1u << 20) ? (1u << 20) : bytes;
    if (want > c->max_binding / 2 && bytes <= c->max_binding / 2) want = bytes;
    c->scratch_q8 = vk_storage_new(c, want, 40, false);
    if (!c->scratch_q8 || c->scratch_q8->n_chunks != 1) {
        be_fail(&c->base, "vulkan matmul: cannot allocate %zu bytes of scratch in one buffer", want);
        return NULL;
    }
    return &c->scratch_q8->chunk[0];
}

static void op_matmul(backend *be, const be_tensor *w, const be_tensor *x, be_tensor *out, int n_tok, bool accumulate) {
    vk_ctx *c = vk_of(be);
    if (be_failed(&c->base) || n_tok <= 0) return;
    if (!same_be(c, w, "matmul") || !f32_tensor(c, x, "matmul") || !f32_tensor(c, out, "matmul")) return;
    int ti = vkp_type_index(w->type);
    if (ti < 0) { be_fail(&c->base, "vulkan matmul: weight type %u has no kernel", w->type); return; }
    const int64_t K = w->cols, N = w->rows;
    if (x->cols < K || out->cols < N || x->rows < n_tok || out->rows < n_tok) {
        be_fail(&c->base, "vulkan matmul: shapes do not match (w %lldx%lld, x %lldx%lld, out %lldx%lld, n_tok %d)",
                (long long)N, (long long)K, (long long)x->rows, (long long)x->cols, (long long)out->rows, (long long)out->cols, n_tok);
        return;
    }
    row_seg ws[MAX_SEGS], xs[MAX_SEGS], os[MAX_SEGS];
    int nw = row_segments(w, N, ws), nx = row_segments(x, n_tok, xs), no = row_segments(out, n_tok, os);
    if (vkw_base(w) == SIZE_MAX) { be_fail(&c->base, "vulkan matmul: a view of a repacked weight must select whole rows"); return; }
    if (nw < 0 || nx < 0 || no < 0) { be_fail(&c->base, "vulkan matmul: rows straddle device buffers"); return; }
    const size_t rb = vkw_stride(w);
    const int qpipe = vkq_matmul_pipe(c, w, K); /* vk_int8.c: the integer-dot mat-vec, or -1 */
    const bool int8 = qpipe >= 0;
    /* token ranges inside one x chunk and one out chunk */
    int ix = 0, io = 0;
    for (int64_t t0 = 0; t0 < n_tok;) {
        while (xs[ix].r1 <= t0) ix++;
        while (os[io].r1 <= t0) io++;
        int64_t t1 = xs[ix].r1 < os[io].r1 ? xs[ix].r1 : os[io].r1;
        const size_t x_local = xs[ix].local + (size_t)(t0 - xs[ix].r0) * be_row_bytes(x);
        const size_t o_local = os[io].local + (size_t)(t0 - os[io].r0) * be_row_bytes(out);
        for (int64_t ta = t0; ta < t1;) {
            const int64_t nt_all = t1 - ta;
            const bool vec = n_tok <= c->mv_max_tok;
            const int64_t nt = vec && nt_all > 8 ? 8 : nt_all; /* mat-vec: 8 tokens per pass; mat-mat: all */
            const size_t xl = x_local + (size_t)(ta - t0) * be_row_bytes(x);
            const size_t ol = o_local + (size_t)(ta - t0) * be_row_bytes(out);
            vk_chunk *qch = NULL;
            if (vec && int8) {
                const size_t qbytes = (size_t)nt * (size_t)(K / 32) * 40;
                qch = scratch_q8(c, qbytes);
                if (!qch) return;
                uint32_t qpc[5] = { (uint32_t)K, (uint32_t)nt, (uint32_t)(xl / 4), (uint32_t)x->cols, 0 };
                vk_binding qb[2] = { { xs[ix].ch, false }, { qch, true } };
                vk_dispatch(c, VKP_QUANT_Q8_1, 0, qb, 2, qpc, (uint32_t)((K / 32 + 63) / 64), (uint32_t)nt, 1,
                            (uint64_t)nt * (uint64_t)K * 4 + qbytes);
            }
            for (int s = 0; s < nw; s++) {
                const uint32_t nrows = (uint32_t)(ws[s].r1 - ws[s].r0);
                uint32_t pc[11] = { (uint32_t)K, nrows, (uint32_t)nt, (uint32_t)ws[s].local, (uint32_t)rb,
                                    (uint32_t)(xl / 4), (uint32_t)x->cols, (uint32_t)(ol / 4 + (size_t)ws[s].r0), (uint32_t)out->cols,
                                    accumulate ? 1u : 0u, 0 };
                const uint64_t bytes = (uint64_t)nrows * rb + (uint64_t)nt * (uint64_t)K * 4 + (uint64_t)nt * nrows * 4;
                if (vec) {
                    const int pipe = int8 ? qpipe : vkw_pick(w, VKP_MMV + ti);
                    vk_binding b[3] = { { ws[s].ch, false }, { int8 ? qch : xs[ix].ch, false }, { os[io].ch, true } };
                    if (int8) pc[5] = 0, pc[6] = 0;
                    const uint32_t rows = vk_tune_mv_rows(c, pipe, b, pc, nrows, (uint64_t)nrows * rb);
                    uint32_t gx, gy;
                    grid2((nrows + rows - 1) / rows, &gx, &gy);
                    pc[10] = gx;
                    vk_dispatch(c, pipe, vkp_mv_variant((int)nt, rows), b, 3, pc, gx, gy, 1, bytes);
                } else {
                    vk_binding b[3] = { { ws[s].ch, false }, { xs[ix].ch, false }, { os[io].ch, true } };
                    const int mm = vkw_pick(w, VKP_MM + ti);
                    int cm = c->use_coopmat ? vk_coopmat_pipe(mm) : -1;
                    if (cm >= 0 && !vk_tune_mm_coopmat(c, mm, cm, b, pc, nrows, (uint32_t)nt, bytes)) cm = -1; /* vk_tune.c: the faster */
                    if (cm >= 0) { /* matrix cores: vk_coopmat.c's tile of the advertised configuration */
                        const uint32_t bm = vk_coopmat_rows(&c->info), bn = vk_coopmat_toks(&c->info);
                        vk_dispatch(c, cm, 0, b, 3, pc, (nrows + bm - 1) / bm, (uint32_t)((nt + bn - 1) / bn), 1, bytes);
                    } else
                        vk_dispatch(c, mm, 0, b, 3, pc, (nrows + 63) / 64, (uint32_t)((nt + 63) / 64), 1, bytes);
                }
            }
            ta += nt;
        }
        t0 = t1;
    }
}

/* ---- rms_norm ---- */
static void op_rms_norm(backend *be, const be_tensor *x, const be_tensor *w, be_tensor *out, int64_t n_rows, int64_t row_len, float eps) {
    vk_ctx *c = vk_of(be);
    if (be_failed(&c->base) || n_rows <= 0) return;
    if (!f32_tensor(c, x, "rms_norm") || !f32_tensor(c, out, "rms_norm") || (w && !f32_tensor(c, w, "rms_norm"))) return;
    if (row_len <= 0) { be_fail(&c->base, "vulkan rms_norm: row_len %lld", (long long)row_len); return; }
    size_t wl = 0;
    vk_chunk *wc = w ? span(c, w, 0, (size_t)row_len * 4, &wl, "rms_norm") : NULL;
    if (w && !wc) return;
    const be_tensor *ts[2] = { x, out };
    int64_t bounds[MAX_RANGES + 1];
    int nr = elem_ranges(c, ts, 2, n_rows * row_len, row_len, bounds, "rms_norm");
    for (int r = 0; r < nr; r++) {
        const int64_t e0 = bounds[r], m = bounds[r + 1] - e0, rows = m / row_len;
        size_t xl, ol;
        vk_chunk *xc = span(c, x, (size_t)e0 * 4, (size_t)m * 4, &xl, "rms_norm"), *oc = span(c, out, (size_t)e0 * 4, (size_t)m * 4, &ol, "rms_norm");
        if (!xc || !oc) return;
        uint32_t gx, gy;
        grid2((uint32_t)rows, &gx, &gy);
        struct { uint32_t row_len, n_rows, x_off, w_off, has_w, d_off, groups_x; float eps; } pc = {
            (uint32_t)row_len, (uint32_t)rows, (uint32_t)(xl / 4), (uint32_t)(wl / 4), w ? 1u : 0u, (uint32_t)(ol / 4), gx, eps };
        vk_binding b[3] = { { xc, false }, { wc ? wc : xc, false }, { oc, true } };
        vk_dispatch(c, VKP_RMS_NORM, 0, b, 3, &pc, gx, gy, 1, 2 * (uint64_t)m * 4);
    }
}

/* ---- element-wise ---- */
static void binary(vk_ctx *c, int pipe, const be_tensor *a, const be_tensor *bt, be_tensor *out, int64_t n, int64_t b_n, float s, float s2,
                   const char *op) {
    if (be_failed(&c->base) || n <= 0) return;
    if (!f32_tensor(c, a, op) || !f32_tensor(c, bt, op) || !f32_tensor(c, out, op)) return;
    if (b_n <= 0) { be_fail(&c->base, "vulkan %s: b_n %lld", op, (long long)b_n); return; }
    const bool b_full = b_n >= n; /* b indexed like a: split it too */
    const be_tensor *ts[3] = { a, out, b_full ? bt : NULL };
    int64_t bounds[MAX_RANGES + 1];
    int nr = elem_ranges(c, ts, 3, n, 1, bounds, op);
    for (int r = 0; r < nr; r++) {
        const int64_t e0 = bounds[r], m = bounds[r + 1] - e0;
        size_t al, bl, ol;
        vk_chunk *ac = span(c, a, (size_t)e0 * 4, (size_t)m * 4, &al, op);
        vk_chunk *bc = b_full ? span(c, bt, (size_t)e0 * 4, (size_t)m * 4, &bl, op) : span(c, bt, 0, (size_t)b_n * 4, &bl, op);
        vk_chunk *oc = span(c, out, (size_t)e0 * 4, (size_t)m * 4, &ol, op);
        if (!ac || !bc || !oc) return;
        uint32_t gx, gy;
        grid2((uint32_t)((m + 255) / 256), &gx, &gy);
        struct { uint32_t n, b_n, a_off, b_off, d_off, groups_x; float s; uint32_t b_phase; float s2; } pc = {
            (uint32_t)m, (uint32_t)(b_full ? m : b_n), (uint32_t)(al / 4), (uint32_t)(bl / 4), (uint32_t)(ol / 4), gx, s,
            (uint32_t)(b_full ? 0 : e0 % b_n), s2 };   /* s2: OP_CLAMP's alone (pc_size 36, the others 32) */
        vk_binding b[3] = { { ac, false }, { bc, false }, { oc, true } };
        vk_dispatch(c, pipe, 0, b, 3, &pc, gx, gy, 1, (uint64_t)m * 12);
    }
}

static void op_add(backend *be, const be_tensor *a, const be_tensor *b, be_tensor *out, int64_t n, int64_t b_n) {
    binary(vk_of(be), VKP_ADD, a, b, out, n, b_n, 0.0f, 0.0f, "add");
}
static void op_mul(backend *be, const be_tensor *a, const be_tensor *b, be_tensor *out, int64_t n, int64_t b_n) {
    binary(vk_of(be), VKP_MUL, a, b, out, n, b_n, 0.0f, 0.0f, "mul");
}
static void op_scale(backend *be, be_tensor *x, int64_t n, float s) {
    binary(vk_of(be), VKP_SCALE, x, x, x, n, 1, s, 0.0f, "scale");
}
static void op_clamp(backend *be, const be_tensor *x, be_tensor *out, int64_t n, float lo, float hi) {
    binary(vk_of(be), VKP_CLAMP, x, x, out, n, n, lo, hi, "clamp");
}

static void op_glu(backend *be, const be_tensor *gate, const be_tensor *up, be_tensor *out, int64_t n, be_glu_kind kind) {
    vk_ctx *c = vk_of(be);
    if (be_failed(&c->base) || n <= 0) return;
    if (!f32_tensor(c, gate, "glu") || !f32_tensor(c, up, "glu") || !f32_tensor(c, out, "glu")) return;
    if (kind != BE_GLU_SILU && kind != BE_GLU_GELU_TANH && kind != BE_GLU_SWIGLU_OAI && kind != BE_GLU_SIGMOID) { be_fail(&c->base, "vulkan glu: unknown activation %d", (int)kind); return; }
    const be_tensor *ts[3] = { gate, up, out };
    int64_t bounds[MAX_RANGES + 1];
    int nr = elem_ranges(c, ts, 3, n, 1, bounds, "glu");
    for (int r = 0; r < nr; r++) {
        const int64_t e0 = bounds[r], m = bounds[r + 1] - e0;
        size_t gl, ul, ol;
        vk_chunk *gc = span(c, gate, (size_t)e0 * 4, (size_t)m * 4, &gl, "glu"), *uc = span(c, up, (size_t)e0 * 4, (size_t)m * 4, &ul, "glu");
        vk_chunk *oc = span(c, out, (size_t)e0 * 4, (size_t)m * 4, &ol, "glu");
        if (!gc || !uc || !oc) return;
        uint32_t gx, gy;
        grid2((uint32_t)((m + 255) / 256), &gx, &gy);
        uint32_t pc[5] = { (uint32_t)m, (uint32_t)(gl / 4), (uint32_t)(ul / 4), (uint32_t)(ol / 4), gx };
        vk_binding b[3] = { { gc, false }, { uc, false }, { oc, true } };
        vk_dispatch(c, kind == BE_GLU_GELU_TANH ? VKP_GLU_GELU : kind == BE_GLU_SWIGLU_OAI ? VKP_GLU_OAI : kind == BE_GLU_SIGMOID ? VKP_GLU_SIGMOID : VKP_GLU_SILU, 0, b, 3, pc,
                    gx, gy, 1, (uint64_t)m * 12);
    }
}

/* ---- rope ---- */
static void op_rope(backend *be, be_tensor *x, int n_tok, int n_head, int head_dim, int pos0, const be_rope_params *p) {
    vk_ctx *c = vk_of(be);
    if (be_failed(&c->base) || n_tok <= 0) return;
    if (!f32_tensor(c, x, "rope") || (p->freq_factors && !f32_tensor(c, p->freq_factors, "rope"))) return;
    if (p->n_rot <= 0 || p->n_rot > head_dim || p->n_rot % 2 || n_head <= 0 || pos0 < 0) {
        be_fail(&c->base, "vulkan rope: bad parameters (n_rot %d, head_dim %d, n_head %d, pos0 %d)", p->n_rot, head_dim, n_head, pos0);
        return;
    }
    const int half = p->n_rot / 2;
    size_t fl = 0;
    vk_chunk *fc = p->freq_factors ? span(c, p->freq_factors, 0, (size_t)half * 4, &fl, "rope") : NULL;
    if (p->freq_factors && !fc) return;
    if ((int64_t)n_head * head_dim > x->cols) { be_fail(&c->base, "vulkan rope: %d heads x %d > %lld columns", n_head, head_dim, (long long)x->cols); return; }
    const float theta_scale = powf(p->freq_base, -2.0f / (float)p->n_rot);
    float mscale = p->attn_factor != 0.0f ? p->attn_factor : 1.0f; /* YaRN (backend.h) */
    if (p->ext_factor != 0.0f) mscale *= 1.0f + 0.1f * logf(1.0f / p->freq_scale);
    const int tok_per = (int)(MAX_GROUPS / (uint32_t)n_head);
    const be_tensor *ts[1] = { x };
    int64_t bounds[MAX_RANGES + 1];
    int nr = elem_ranges(c, ts, 1, (int64_t)n_tok * x->cols, x->cols, bounds, "rope");
    for (int r = 0; r < nr; r++) {
        const int tb = (int)(bounds[r] / x->cols), te = (int)(bounds[r + 1] / x->cols);
        size_t xl;
        vk_chunk *xc = span(c, x, (size_t)bounds[r] * 4, (size_t)(bounds[r + 1] - bounds[r]) * 4, &xl, "rope");
        if (!xc) return;
        for (int t0 = tb; t0 < te; t0 += tok_per) {
            int nt = te - t0 < tok_per ? te - t0 : tok_per;
            struct { uint32_t n_tok, n_head, head_dim, pos0, n_rot, neox, x_off, x_stride, ff_off, has_ff; float theta_scale, freq_scale;
                     float ext_factor, mscale, corr_lo, corr_hi; } pc = {
                (uint32_t)nt, (uint32_t)n_head, (uint32_t)head_dim, (uint32_t)(pos0 + t0), (uint32_t)p->n_rot,
                p->mode == BE_ROPE_NEOX ? 1u : 0u, (uint32_t)(xl / 4 + (size_t)(t0 - tb) * (size_t)x->cols), (uint32_t)x->cols,
                (uint32_t)(fl / 4), fc ? 1u : 0u, theta_scale, p->freq_scale, p->ext_factor, mscale, p->corr_lo, p->corr_hi };
            vk_binding b[2] = { { xc, true }, { fc ? fc : xc, false } };
            vk_dispatch(c, VKP_ROPE, 0, b, 2, &pc, (uint32_t)((half + 63) / 64), (uint32_t)(nt * n_head), 1,
                        (uint64_t)nt * (uint64_t)n_head * (uint64_t)p->n_rot * 8);
        }
    }
}

/* ---- rope_rows: x and the table each in one device buffer ---- */
static void op_rope_rows(backend *be, be_tensor *x, const be_tensor *table, int n_tok, int n_head, int head_dim, int n_rot) {
    vk_ctx *c = vk_of(be);
    if (be_failed(&c->base) || n_tok <= 0) return;
    if (!f32_tensor(c, x, "rope_rows") || !f32_tensor(c, table, "rope_rows")) return;
    if (n_rot <= 0 || n_rot > head_dim || n_rot % 2 || n_head <= 0 || (int64_t)n_head * head_dim > x->cols || table->cols < n_rot) {
        be_fail(&c->base, "vulkan rope_rows: bad parameters (n_rot %d, head_dim %d, n_head %d, %lld columns)", n_rot, head_dim, n_head,
                (long long)x->cols);
        return;
    }
    size_t xl, tl;
    vk_chunk *xc = span(c, x, 0, (size_t)n_tok * (size_t)x->cols * 4, &xl, "rope_rows");
    vk_chunk *tc = span(c, table, 0, (size_t)n_tok * (size_t)table->cols * 4, &tl, "rope_rows");
    if (!xc || !tc) return;
    const int tok_per = (int)(MAX_GROUPS / (uint32_t)n_head);
    for (int t0 = 0; t0 < n_tok; t0 += tok_per) {
        const int nt = n_tok - t0 < tok_per ? n_tok - t0 : tok_per;
        uint32_t pc[6] = { (uint32_t)n_head, (uint32_t)head_dim, (uint32_t)n_rot, (uint32_t)(xl / 4 + (size_t)t0 * (size_t)x->cols),
                           (uint32_t)x->cols, (uint32_t)(tl / 4 + (size_t)t0 * (size_t)table->cols) };
        vk_binding b[2] = { { xc, true }, { tc, false } };
        vk_dispatch(c, VKP_ROPE_ROWS, 0, b, 2, pc, (uint32_t)((n_rot / 2 + 63) / 64), (uint32_t)(nt * n_head), 1,
                    (uint64_t)nt * (uint64_t)n_head * (uint64_t)n_rot * 12);
    }
}

/* ---- store_rows ---- */
static void op_store_rows(backend *be, const be_tensor *src, be_tensor *dst, int64_t dst_row0, int64_t n_rows) {
    vk_ctx *c = vk_of(be);
    if (be_failed(&c->base) || n_rows <= 0) return;
    if (!f32_tensor(c, src, "store_rows") || !same_be(c, dst, "store_rows")) return;
    int pipe = dst->type == QT_F32 ? VKP_STORE_F32 : dst->type == QT_F16 ? VKP_STORE_F16 : dst->type == QT_Q8_0 ? VKP_STORE_Q8_0
             : dst->type == QT_Q4_0 ? VKP_STORE_Q4_0 : -1;
    if (pipe < 0) { be_fail(&c->base, "vulkan store_rows: destination type %u unsupported (F32/F16/Q8_0/Q4_0)", dst->type); return; }
    if (dst_row0 < 0 || dst_row0 + n_rows > dst->rows || src->cols < dst->cols || src->rows < n_rows) {
        be_fail(&c->base, "vulkan store_rows: rows [%lld, %lld) outside the destination (%lld rows) or source too small",
                (long long)dst_row0, (long long)(dst_row0 + n_rows), (long long)dst->rows);
        return;
    }
    const size_t drb = be_row_bytes(dst);
    const uint32_t per_row = pipe == VKP_STORE_Q8_0 || pipe == VKP_STORE_Q4_0 ? (uint32_t)(dst->cols / 32) : (uint32_t)dst->cols;
    const be_tensor *ts[1] = { src };
    int64_t bounds[MAX_RANGES + 1];
    int nr = elem_ranges(c, ts, 1, n_rows * src->cols, src->cols, bounds, "store_rows");
    for (int r = 0; r < nr; r++) {
        const int64_t rb0 = bounds[r] / src->cols, rb1 = bounds[r + 1] / src->cols;
        size_t sl;
        vk_chunk *sc = span(c, src, (size_t)bounds[r] * 4, (size_t)(bounds[r + 1] - bounds[r]) * 4, &sl, "store_rows");
        if (!sc) return;
        be_tensor dv = be_view_rows(dst, dst_row0 + rb0, rb1 - rb0);
        row_seg segs[MAX_SEGS];
        int ns = row_segments(&dv, rb1 - rb0, segs);
        if (ns < 0) { be_fail(&c->base, "vulkan store_rows: destination rows straddle device buffers"); return; }
        for (int k = 0; k < ns; k++)
            for (int64_t r0 = segs[k].r0; r0 < segs[k].r1; r0 += MAX_GROUPS) {
                const uint32_t n = (uint32_t)(segs[k].r1 - r0 < MAX_GROUPS ? segs[k].r1 - r0 : MAX_GROUPS);
                const size_t dl = segs[k].local + (size_t)(r0 - segs[k].r0) * drb;
                if (dl % 2 || (pipe == VKP_STORE_F32 && dl % 4)) { be_fail(&c->base, "vulkan store_rows: misaligned destination"); return; }
                uint32_t pc[7] = { (uint32_t)dst->cols, n, (uint32_t)(sl / 4 + (size_t)r0 * (size_t)src->cols), (uint32_t)src->cols,
                                   (uint32_t)dl, (uint32_t)drb, 0 };
                vk_binding b[2] = { { sc, false }, { segs[k].ch, true } };
                vk_dispatch(c, pipe, 0, b, 2, pc, (per_row + 63) / 64, n, 1, (uint64_t)n * ((uint64_t)dst->cols * 4 + drb));
            }
    }
}

/* ---- argument helpers shared with vk_attention.c (vk_internal.h) ---- */
vk_chunk *vk_span(vk_ctx *c, const be_tensor *t, size_t off, size_t n, size_t *local, const char *op) { return span(c, t, off, n, local, op); }
bool vk_same_be(vk_ctx *c, const be_tensor *t, const char *op) { return same_be(c, t, op); }
bool vk_f32_tensor(vk_ctx *c, const be_tensor *t, const char *op) { return f32_tensor(c, t, op); }
void vk_grid2(uint32_t groups, uint32_t *gx, uint32_t *gy) { grid2(groups, gx, gy); }
int vk_elem_ranges(vk_ctx *c, const be_tensor *const *ts, int nt, int64_t n, int64_t g, int64_t *bounds, const char *op) {
    return elem_ranges(c, ts, nt, n, g, bounds, op);
}

const backend_ops vk_backend_ops = {
    .destroy = vkb_destroy,
    .tensor_new = vkb_tensor_new,
    .weight_new = vkb_weight_new,
    .tensor_free = vkb_tensor_free,
    .upload = vkb_upload,
    .download = vkb_download,
    .sync = vkb_sync,
    .error = be_sticky_error,
    .get_rows = op_get_rows,
    .rms_norm = op_rms_norm,
    .matmul = op_matmul,
    .add = op_add,
    .mul = op_mul,
    .scale = op_scale,
    .clamp = op_clamp,
    .rope = op_rope,
    .rope_rows = op_rope_rows,
    .glu = op_glu,
    .store_rows = op_store_rows,
    .attention = vk_op_attention, /* vk_attention.c */
    .matmul_glu = vk_op_matmul_glu, /* vk_fused.c */
    .rope_store = vk_op_rope_store,
    .conv1d_state = vk_op_conv1d_state, /* vk_recurrent.c */
    .delta_net = vk_op_delta_net,
};
