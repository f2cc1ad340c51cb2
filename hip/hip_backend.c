/* hip_backend: the backend_ops table of the HIP backend: device memory through the loaded
 * runtime (weights are copied to the GPU; every allocation is accounted), the code object
 * of the device's gfx target loaded with hipModuleLoadData, argument checks with one-line
 * errors, and one kernel launch per op on the null stream (in order; results visible after
 * download/sync). A failed allocation is a NULL with "out of device memory" in
 * anv_last_error() (the placement retries with fewer layers); a failed launch is sticky.
 * The kernels launched are recorded for `anvil doctor --verify` (hip_backend_take_kernels);
 * ANVIL_HIP_TEST_BREAK=<kernel> plants a wrong kernel (its launch is skipped) for its tests. */
#include "hip_backend.h"
#include "hip_args.h"
#include "hip_codeobj.h"
#include "hip_loader.h"
#include "error.h"
#include "quant.h"
#include "settings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HIP_ALIGN 256

typedef struct {
    const anv_hip_api *api;
    int dev;
    char target[48];
    anv_hip_module mod;
    anv_hip_func matvec[QT_COUNT], matmul[QT_COUNT], get_rows[QT_COUNT];
    anv_hip_func rms_norm, ew, rope, rope_rows, store_rows, att_f32, att_f16, att_q8_0, att_q4_0;
    void *ids;          /* device scratch for get_rows ids */
    size_t ids_cap;
    uint64_t allocated; /* device bytes held */
    char ran[192];      /* kernels launched since the last hip_backend_take_kernels */
    char test_break[64];
    char name[16];
    char desc[320];
} hip_ctx;

/* The HIP current device is per host thread (the server calls from several): every entry
 * point binds this backend's device first (cheap in the runtime). */
static hip_ctx *ctx_of(backend *be) {
    hip_ctx *c = be->impl;
    if (c->api) c->api->hipSetDevice(c->dev);
    return c;
}
static uint64_t addr_of(const be_tensor *t) { return (uint64_t)(uintptr_t)t->storage + t->offset; }
static int64_t elems_of(const be_tensor *t) { return t->cols * t->rows; }

static bool type_has_kernels(uint32_t type) {
#define ANV_T(name, id) if (type == id) return true;
    ANV_HIP_TYPES(ANV_T)
#undef ANV_T
    return false;
}

/* ---- memory ---- */

static void *dev_alloc(backend *be, size_t n, const char *what) {
    hip_ctx *c = ctx_of(be);
    n = (n + HIP_ALIGN - 1) / HIP_ALIGN * HIP_ALIGN;
    if (!n) n = HIP_ALIGN;
    void *p = NULL;
    anv_hip_err e = c->api->hipMalloc(&p, n);
    if (e != 0 || !p) {
        size_t fr = 0, tot = 0;
        c->api->hipMemGetInfo(&fr, &tot);
        anv_set_error("%s %s: out of device memory for %.1f MiB (anvil holds %.1f MiB, %.1f MiB free): %s", c->name, what,
                      n / 1048576.0, c->allocated / 1048576.0, fr / 1048576.0, anv_hip_strerror(c->api, e));
        return NULL;
    }
    c->allocated += n;
    return p;
}

static void dev_free(backend *be, void *p, size_t n) {
    hip_ctx *c = ctx_of(be);
    if (!p) return;
    n = (n + HIP_ALIGN - 1) / HIP_ALIGN * HIP_ALIGN;
    if (!n) n = HIP_ALIGN;
    c->api->hipFree(p);
    c->allocated -= n < c->allocated ? n : c->allocated;
}

static be_tensor *new_header(backend *be, uint32_t type, int64_t cols, int64_t rows, const char *what) {
    const qtype_info *qi = qtype_get(type);
    if (!qi) { anv_set_error("%s %s: unknown tensor type id %u", ctx_of(be)->name, what, type); return NULL; }
    if (cols <= 0 || rows < 0 || cols % qi->block_size != 0) {
        anv_set_error("%s %s: bad shape %lld x %lld for type %s", ctx_of(be)->name, what, (long long)rows, (long long)cols, qi->name);
        return NULL;
    }
    be_tensor *t = calloc(1, sizeof *t);
    if (!t) { anv_set_error("%s %s: out of memory", ctx_of(be)->name, what); return NULL; }
    t->be = be;
    t->type = type;
    t->cols = cols;
    t->rows = rows;
    return t;
}

static be_tensor *hip_tensor_new(backend *be, uint32_t type, int64_t cols, int64_t rows) {
    be_tensor *t = new_header(be, type, cols, rows, "tensor_new");
    if (!t) return NULL;
    t->storage = dev_alloc(be, be_nbytes(t), "tensor_new");
    if (!t->storage) { free(t); return NULL; }
    t->owned = true;
    return t;
}

static be_tensor *hip_weight_new(backend *be, uint32_t type, int64_t cols, int64_t rows, const void *host_data) {
    hip_ctx *c = ctx_of(be);
    if (!host_data) { anv_set_error("%s weight_new: no host data", c->name); return NULL; }
    if (!type_has_kernels(type)) {
        const qtype_info *qi = qtype_get(type);
        anv_set_error("%s weight_new: type %s has no HIP kernels", c->name, qi ? qi->name : "(unknown)");
        return NULL;
    }
    be_tensor *t = hip_tensor_new(be, type, cols, rows);
    if (!t) return NULL;
    anv_hip_err e = c->api->hipMemcpyHtoD(t->storage, host_data, be_nbytes(t));
    if (e != 0) {
        anv_set_error("%s weight_new: hipMemcpyHtoD of %zu bytes failed: %s", c->name, be_nbytes(t), anv_hip_strerror(c->api, e));
        dev_free(be, t->storage, be_nbytes(t));
        free(t);
        return NULL;
    }
    return t;
}

static void hip_tensor_free(backend *be, be_tensor *t) {
    if (!t) return;
    if (t->owned) dev_free(be, t->storage, be_nbytes(t));
    free(t);
}

static void hip_upload(backend *be, be_tensor *t, size_t offset, const void *src, size_t n) {
    hip_ctx *c = ctx_of(be);
    if (be_failed(be)) return;
    if (offset + n > be_nbytes(t)) { be_fail(be, "%s upload: %zu bytes at %zu overflow a %zu-byte tensor", c->name, n, offset, be_nbytes(t)); return; }
    anv_hip_err e = c->api->hipMemcpyHtoD((void *)(uintptr_t)(addr_of(t) + offset), src, n);
    if (e != 0) be_fail(be, "%s upload: hipMemcpyHtoD failed: %s", c->name, anv_hip_strerror(c->api, e));
}

static void hip_download(backend *be, const be_tensor *t, size_t offset, void *dst, size_t n) {
    hip_ctx *c = ctx_of(be);
    if (offset + n > be_nbytes(t)) {
        be_fail(be, "%s download: %zu bytes at %zu overflow a %zu-byte tensor", c->name, n, offset, be_nbytes(t));
        memset(dst, 0, n);
        return;
    }
    anv_hip_err e = be_failed(be) ? 0 : c->api->hipMemcpyDtoH(dst, (void *)(uintptr_t)(addr_of(t) + offset), n);
    if (be_failed(be) || e != 0) {
        if (e != 0) be_fail(be, "%s download: hipMemcpyDtoH failed: %s", c->name, anv_hip_strerror(c->api, e));
        memset(dst, 0, n);
    }
}

static void hip_sync(backend *be) {
    hip_ctx *c = ctx_of(be);
    if (be_failed(be)) return;
    anv_hip_err e = c->api->hipDeviceSynchronize();
    if (e != 0) be_fail(be, "%s sync: %s", c->name, anv_hip_strerror(c->api, e));
}

/* ---- launches ---- */

/* Adds kernel `k` (op, with the weight type for the per-type kernels) to c->ran once. */
static void note_kernel(hip_ctx *c, const char *k) {
    const size_t kl = strlen(k), n = strlen(c->ran);
    for (const char *p = strstr(c->ran, k); p; p = strstr(p + 1, k))
        if ((p == c->ran || p[-1] == ',') && (p[kl] == ',' || p[kl] == 0)) return;
    if (n + kl + 2 < sizeof c->ran) snprintf(c->ran + n, sizeof c->ran - n, "%s%s", n ? "," : "", k);
}

static void launch_typed(backend *be, const char *op, uint32_t type, anv_hip_func f, unsigned gx, unsigned gy, unsigned block, void *args) {
    hip_ctx *c = ctx_of(be);
    if (be_failed(be) || gx == 0 || gy == 0) return;
    if (!f) { be_fail(be, "%s %s: no kernel for these types in the %s code object", c->name, op, c->target); return; }
    char k[64];
    const qtype_info *qi = type < QT_COUNT ? qtype_get(type) : NULL;
    snprintf(k, sizeof k, "%s%s%s", op, qi ? "_" : "", qi ? qi->name : "");
    note_kernel(c, k);
    if (c->test_break[0] && !strcmp(c->test_break, k)) return; /* ANVIL_HIP_TEST_BREAK */
    void *params[] = {args};
    anv_hip_err e = c->api->hipModuleLaunchKernel(f, gx, gy, 1, block, 1, 1, 0, NULL, params, NULL);
    if (e != 0) be_fail(be, "%s %s: kernel launch failed: %s", c->name, op, anv_hip_strerror(c->api, e));
}

static void launch(backend *be, const char *op, anv_hip_func f, unsigned gx, unsigned gy, unsigned block, void *args) {
    launch_typed(be, op, UINT32_MAX, f, gx, gy, block, args);
}

static unsigned blocks_for(int64_t n, int64_t per) {
    int64_t b = (n + per - 1) / per;
    return (unsigned)(b > 65535 * 16 ? 65535 * 16 : b);
}

static bool need_f32(backend *be, const be_tensor *t, int64_t n, const char *op, const char *arg) {
    const char *nm = ctx_of(be)->name;
    if (!t || t->type != QT_F32) { be_fail(be, "%s %s: %s must be an f32 tensor", nm, op, arg); return false; }
    if (t->be != be) { be_fail(be, "%s %s: %s belongs to another backend", nm, op, arg); return false; }
    if (elems_of(t) < n) { be_fail(be, "%s %s: %s has %lld elements, needs %lld", nm, op, arg, (long long)elems_of(t), (long long)n); return false; }
    return true;
}

static void hip_op_get_rows(backend *be, const be_tensor *table, const int32_t *ids, int n_ids, be_tensor *out) {
    hip_ctx *c = ctx_of(be);
    if (n_ids < 0 || !need_f32(be, out, (int64_t)n_ids * table->cols, "get_rows", "out") || n_ids == 0) return;
    for (int i = 0; i < n_ids; i++)
        if (ids[i] < 0 || ids[i] >= table->rows) { be_fail(be, "%s get_rows: id %d out of range [0, %lld)", c->name, ids[i], (long long)table->rows); return; }
    const size_t need = (size_t)n_ids * sizeof(int32_t);
    if (need > c->ids_cap) {
        dev_free(be, c->ids, c->ids_cap);
        c->ids_cap = 0;
        c->ids = dev_alloc(be, need * 2, "get_rows");
        if (!c->ids) { be_record_error(be); return; }
        c->ids_cap = need * 2;
    }
    anv_hip_err e = c->api->hipMemcpyHtoD(c->ids, ids, need);
    if (e != 0) { be_fail(be, "%s get_rows: hipMemcpyHtoD failed: %s", c->name, anv_hip_strerror(c->api, e)); return; }
    anv_get_rows_args a = {.table = addr_of(table), .ids = (uint64_t)(uintptr_t)c->ids, .out = addr_of(out), .cols = table->cols,
                           .row_bytes = (int64_t)be_row_bytes(table), .n_ids = n_ids, .type = (int32_t)table->type};
    launch_typed(be, "get_rows", table->type, table->type < QT_COUNT ? c->get_rows[table->type] : NULL, blocks_for(table->cols, ANV_EW_BLOCK),
           (unsigned)n_ids, ANV_EW_BLOCK, &a);
}

static void hip_op_rms_norm(backend *be, const be_tensor *x, const be_tensor *w, be_tensor *out, int64_t n_rows, int64_t row_len, float eps) {
    const int64_t n = n_rows * row_len;
    if (n_rows < 0 || row_len <= 0) { be_fail(be, "%s rms_norm: bad shape", ctx_of(be)->name); return; }
    if (!need_f32(be, x, n, "rms_norm", "x") || !need_f32(be, out, n, "rms_norm", "out")) return;
    if (w && !need_f32(be, w, row_len, "rms_norm", "w")) return;
    if (n_rows > 0x7fffffff) { be_fail(be, "%s rms_norm: %lld rows is too many", ctx_of(be)->name, (long long)n_rows); return; }
    anv_rms_norm_args a = {.x = addr_of(x), .w = w ? addr_of(w) : 0, .out = addr_of(out), .n_rows = n_rows, .row_len = row_len, .eps = eps, .has_w = w != NULL};
    launch(be, "rms_norm", ctx_of(be)->rms_norm, (unsigned)n_rows, 1, ANV_NORM_BLOCK, &a);
}

static void hip_op_matmul(backend *be, const be_tensor *w, const be_tensor *x, be_tensor *out, int n_tok, bool accumulate) {
    hip_ctx *c = ctx_of(be);
    if (n_tok < 0) { be_fail(be, "%s matmul: n_tok %d", c->name, n_tok); return; }
    if (w->be != be) { be_fail(be, "%s matmul: the weight belongs to another backend", c->name); return; }
    if (!need_f32(be, x, (int64_t)n_tok * w->cols, "matmul", "x") || !need_f32(be, out, (int64_t)n_tok * w->rows, "matmul", "out")) return;
    if (n_tok == 0 || w->rows == 0) return;
    anv_matmul_args a = {.w = addr_of(w), .x = addr_of(x), .out = addr_of(out), .cols = w->cols, .rows = w->rows,
                         .row_bytes = (int64_t)be_row_bytes(w), .n_tok = n_tok, .accumulate = accumulate, .type = (int32_t)w->type};
    const int rows_per_block = ANV_MV_WAVES * ANV_MV_ROWS_PER_WAVE;
    if (n_tok <= ANV_MV_MAX_TOK)
        launch_typed(be, "matvec", w->type, w->type < QT_COUNT ? c->matvec[w->type] : NULL, blocks_for(w->rows, rows_per_block), 1, ANV_MV_WAVES * ANV_WARP, &a);
    else
        launch_typed(be, "matmul", w->type, w->type < QT_COUNT ? c->matmul[w->type] : NULL, blocks_for(w->rows, ANV_MM_TILE), blocks_for(n_tok, ANV_MM_TILE), 256, &a);
}

static void ew2(backend *be, const char *op, int code, const be_tensor *a, const be_tensor *b, be_tensor *out, int64_t n, int64_t b_n, float s,
                float s2) {
    if (n < 0 || (b && b_n <= 0)) { be_fail(be, "%s %s: bad sizes", ctx_of(be)->name, op); return; }
    if (!need_f32(be, a, n, op, "a") || (b && !need_f32(be, b, b_n, op, "b")) || !need_f32(be, out, n, op, "out")) return;
    anv_ew_args args = {.a = addr_of(a), .b = b ? addr_of(b) : 0, .out = addr_of(out), .n = n, .b_n = b_n > 0 ? b_n : 1, .s = s, .op = code,
                        .s2 = s2};
    launch(be, op, ctx_of(be)->ew, blocks_for(n, ANV_EW_BLOCK), 1, ANV_EW_BLOCK, &args);
}
static void ew(backend *be, const char *op, int code, const be_tensor *a, const be_tensor *b, be_tensor *out, int64_t n, int64_t b_n, float s) {
    ew2(be, op, code, a, b, out, n, b_n, s, 0.0f);
}

static void hip_op_add(backend *be, const be_tensor *a, const be_tensor *b, be_tensor *out, int64_t n, int64_t b_n) { ew(be, "add", 0, a, b, out, n, b_n, 0); }
static void hip_op_mul(backend *be, const be_tensor *a, const be_tensor *b, be_tensor *out, int64_t n, int64_t b_n) { ew(be, "mul", 1, a, b, out, n, b_n, 0); }
static void hip_op_scale(backend *be, be_tensor *x, int64_t n, float s) { ew(be, "scale", 2, x, NULL, x, n, 0, s); }
static void hip_op_clamp(backend *be, const be_tensor *x, be_tensor *out, int64_t n, float lo, float hi) {
    ew2(be, "clamp", 6, x, NULL, out, n, 0, lo, hi);
}

static void hip_op_rope_rows(backend *be, be_tensor *x, const be_tensor *table, int n_tok, int n_head, int head_dim, int n_rot) {
    hip_ctx *c = ctx_of(be);
    if (n_tok < 0 || n_head <= 0 || head_dim <= 0 || n_rot <= 0 || n_rot > head_dim || n_rot % 2 != 0) {
        be_fail(be, "%s rope_rows: bad shape (n_rot %d, head_dim %d)", c->name, n_rot, head_dim);
        return;
    }
    if (!need_f32(be, x, (int64_t)n_tok * n_head * head_dim, "rope_rows", "x") ||
        !need_f32(be, table, (int64_t)n_tok * n_rot, "rope_rows", "table") || n_tok == 0)
        return;
    anv_rope_rows_args a = {.x = addr_of(x), .table = addr_of(table), .n_tok = n_tok, .n_head = n_head, .head_dim = head_dim, .n_rot = n_rot};
    launch(be, "rope_rows", c->rope_rows, blocks_for((int64_t)n_tok * n_head * (n_rot / 2), ANV_EW_BLOCK), 1, ANV_EW_BLOCK, &a);
}

static void hip_op_glu(backend *be, const be_tensor *gate, const be_tensor *up, be_tensor *out, int64_t n, be_glu_kind kind) {
    if (kind != BE_GLU_SILU && kind != BE_GLU_GELU_TANH && kind != BE_GLU_SWIGLU_OAI && kind != BE_GLU_SIGMOID) {
        be_fail(be, "%s glu: unknown activation %d", ctx_of(be)->name, (int)kind);
        return;
    }
    if (!need_f32(be, up, n, "glu", "up")) return;
    ew(be, "glu", kind == BE_GLU_SILU ? 3 : kind == BE_GLU_GELU_TANH ? 4 : kind == BE_GLU_SIGMOID ? 7 : 5, gate, up, out, n, n, 0);
}

static void hip_op_rope(backend *be, be_tensor *x, int n_tok, int n_head, int head_dim, int pos0, const be_rope_params *p) {
    hip_ctx *c = ctx_of(be);
    if (n_tok < 0 || n_head <= 0 || head_dim <= 0 || pos0 < 0) { be_fail(be, "%s rope: bad shape", c->name); return; }
    if (p->n_rot <= 0 || p->n_rot > head_dim || p->n_rot % 2 != 0 || p->n_rot > 1024) {
        be_fail(be, "%s rope: n_rot %d must be even and in (0, head_dim %d]", c->name, p->n_rot, head_dim);
        return;
    }
    if (!need_f32(be, x, (int64_t)n_tok * n_head * head_dim, "rope", "x")) return;
    if (p->freq_factors && !need_f32(be, p->freq_factors, p->n_rot / 2, "rope", "freq_factors")) return;
    anv_rope_args a = {.x = addr_of(x), .freq_factors = p->freq_factors ? addr_of(p->freq_factors) : 0, .n_tok = n_tok, .n_head = n_head,
                       .head_dim = head_dim, .pos0 = pos0, .n_rot = p->n_rot, .mode = (int32_t)p->mode, .has_ff = p->freq_factors != NULL,
                       .freq_base = p->freq_base, .freq_scale = p->freq_scale, .ext_factor = p->ext_factor,
                       .attn_factor = p->attn_factor, .corr_lo = p->corr_lo, .corr_hi = p->corr_hi};
    launch(be, "rope", c->rope, blocks_for((int64_t)n_tok * n_head * (p->n_rot / 2), ANV_EW_BLOCK), 1, ANV_EW_BLOCK, &a);
}

static void hip_op_store_rows(backend *be, const be_tensor *src, be_tensor *dst, int64_t dst_row0, int64_t n_rows) {
    hip_ctx *c = ctx_of(be);
    if (n_rows < 0 || dst_row0 < 0 || dst_row0 + n_rows > dst->rows) {
        be_fail(be, "%s store_rows: rows [%lld, %lld) outside the %lld-row destination", c->name, (long long)dst_row0,
                (long long)(dst_row0 + n_rows), (long long)dst->rows);
        return;
    }
    if (dst->type != QT_F32 && dst->type != QT_F16 && dst->type != QT_Q8_0 && dst->type != QT_Q4_0) {
        be_fail(be, "%s store_rows: destination type %s (f32, f16, q8_0 or q4_0 only)", c->name, qtype_get(dst->type) ? qtype_get(dst->type)->name : "?");
        return;
    }
    if (!need_f32(be, src, n_rows * dst->cols, "store_rows", "src")) return;
    const int64_t per_row = dst->type == QT_Q8_0 || dst->type == QT_Q4_0 ? dst->cols / 32 : dst->cols;
    anv_store_rows_args a = {.src = addr_of(src), .dst = addr_of(dst), .cols = dst->cols, .row0 = dst_row0, .n_rows = n_rows,
                             .dst_row_bytes = (int64_t)be_row_bytes(dst), .dst_type = (int32_t)dst->type};
    launch(be, "store_rows", c->store_rows, blocks_for(per_row * n_rows, ANV_EW_BLOCK), 1, ANV_EW_BLOCK, &a);
}

static void hip_op_attention(backend *be, const be_tensor *q, const be_tensor *k, const be_tensor *v, be_tensor *out, const be_attn_params *p) {
    hip_ctx *c = ctx_of(be);
    if (p->n_tok < 0 || p->pos0 < 0 || p->n_head <= 0 || p->n_kv_head <= 0 || p->head_dim <= 0 || p->n_head % p->n_kv_head != 0) {
        be_fail(be, "%s attention: bad heads (n_head %d, n_kv_head %d, head_dim %d)", c->name, p->n_head, p->n_kv_head, p->head_dim);
        return;
    }
    if (p->head_dim > ANV_ATT_MAX_HEAD_DIM) { be_fail(be, "%s attention: head_dim %d > %d", c->name, p->head_dim, ANV_ATT_MAX_HEAD_DIM); return; }
    const int64_t q_elems = (int64_t)p->n_tok * p->n_head * p->head_dim, kv_cols = (int64_t)p->n_kv_head * p->head_dim;
    if (!need_f32(be, q, q_elems, "attention", "q") || !need_f32(be, out, q_elems, "attention", "out")) return;
    if (k->type != v->type || k->cols != kv_cols || v->cols != kv_cols) {
        be_fail(be, "%s attention: k/v must share a type and have %lld cols", c->name, (long long)kv_cols);
        return;
    }
    if (k->rows < (int64_t)p->pos0 + p->n_tok || v->rows < (int64_t)p->pos0 + p->n_tok) {
        be_fail(be, "%s attention: cache has %lld rows, needs %lld", c->name, (long long)k->rows, (long long)p->pos0 + p->n_tok);
        return;
    }
    anv_hip_func f = k->type == QT_F32 ? c->att_f32 : k->type == QT_F16 ? c->att_f16 : k->type == QT_Q8_0 ? c->att_q8_0
                   : k->type == QT_Q4_0 ? c->att_q4_0 : NULL;
    if (!f) { be_fail(be, "%s attention: KV cache type %s (f32, f16, q8_0 or q4_0 only)", c->name, qtype_get(k->type) ? qtype_get(k->type)->name : "?"); return; }
    if ((k->type == QT_Q8_0 || k->type == QT_Q4_0) && p->head_dim % 32) {
        be_fail(be, "%s attention: a %s KV cache needs head_dim %% 32 == 0 (head_dim %d)", c->name, qtype_get(k->type)->name, p->head_dim);
        return;
    }
    anv_attention_args a = {.q = addr_of(q), .k = addr_of(k), .v = addr_of(v), .out = addr_of(out), .kv_row_bytes = (int64_t)be_row_bytes(k),
                            .n_tok = p->n_tok, .pos0 = p->pos0, .n_head = p->n_head, .n_kv_head = p->n_kv_head, .head_dim = p->head_dim,
                            .window = p->window, .kv_type = (int32_t)k->type, .noncausal = p->noncausal,
                            .scale = p->scale, .softcap = p->softcap};
    if (p->sinks) { /* gpt-oss attention sinks */
        if (!need_f32(be, p->sinks, p->n_head, "attention", "sinks")) return;
        a.sinks = addr_of(p->sinks);
        a.has_sinks = 1;
    }
    launch(be, "attention", f, (unsigned)p->n_tok, (unsigned)p->n_head, ANV_ATT_BLOCK, &a);
}

/* ---- lifetime ---- */

static void hip_destroy(backend *be) {
    if (!be) return;
    hip_ctx *c = be->impl;
    if (c) {
        if (c->api) {
            c->api->hipDeviceSynchronize();
            dev_free(be, c->ids, c->ids_cap);
            if (c->mod) c->api->hipModuleUnload(c->mod);
        }
        free(c);
    }
    free(be);
}

static const backend_ops hip_ops_table = {
    .destroy = hip_destroy, .tensor_new = hip_tensor_new, .weight_new = hip_weight_new, .tensor_free = hip_tensor_free,
    .upload = hip_upload, .download = hip_download, .sync = hip_sync, .error = be_sticky_error,
    .get_rows = hip_op_get_rows, .rms_norm = hip_op_rms_norm, .matmul = hip_op_matmul, .add = hip_op_add, .mul = hip_op_mul,
    .scale = hip_op_scale, .clamp = hip_op_clamp, .rope = hip_op_rope, .rope_rows = hip_op_rope_rows, .glu = hip_op_glu, .store_rows = hip_op_store_rows, .attention = hip_op_attention,
};

/* The code object for gfx: an exact match of the processor name (features dropped). */
static const anv_hip_codeobj *pick_codeobj(const char *gfx) {
    char base[48];
    size_t n = strcspn(gfx, ":");
    if (n >= sizeof base) n = sizeof base - 1;
    memcpy(base, gfx, n);
    base[n] = 0;
    for (int i = 0; i < anv_hip_n_codeobjs; i++)
        if (!strcmp(anv_hip_codeobjs[i].target, base)) return &anv_hip_codeobjs[i];
    return NULL;
}

static int get_fn(hip_ctx *c, anv_hip_func *f, const char *name) {
    anv_hip_err e = c->api->hipModuleGetFunction(f, c->mod, name);
    if (e != 0) { anv_set_error("%s: kernel %s missing from the %s code object: %s", c->name, name, c->target, anv_hip_strerror(c->api, e)); return -1; }
    return 0;
}

static int load_kernels(hip_ctx *c) {
    char nm[64];
#define ANV_T(tn, id)                                                                  \
    anv_hip_fmt(nm, sizeof nm, "anv_matvec_%s", #tn); if (get_fn(c, &c->matvec[id], nm)) return -1;     \
    anv_hip_fmt(nm, sizeof nm, "anv_matmul_%s", #tn); if (get_fn(c, &c->matmul[id], nm)) return -1;     \
    anv_hip_fmt(nm, sizeof nm, "anv_get_rows_%s", #tn); if (get_fn(c, &c->get_rows[id], nm)) return -1;
    ANV_HIP_TYPES(ANV_T)
#undef ANV_T
    if (get_fn(c, &c->rms_norm, "anv_rms_norm") || get_fn(c, &c->ew, "anv_ew") || get_fn(c, &c->rope, "anv_rope") ||
        get_fn(c, &c->rope_rows, "anv_rope_rows") ||
        get_fn(c, &c->store_rows, "anv_store_rows") || get_fn(c, &c->att_f32, "anv_attention_f32") ||
        get_fn(c, &c->att_f16, "anv_attention_f16") || get_fn(c, &c->att_q8_0, "anv_attention_q8_0") ||
        get_fn(c, &c->att_q4_0, "anv_attention_q4_0"))
        return -1;
    return 0;
}

backend *hip_backend_new(int index, const char *gfx) {
    char why[512];
    const anv_hip_api *api = anv_hip_api_get(why, sizeof why);
    if (!api) { anv_set_error("hip: %s", why); return NULL; }
    int n = 0;
    if (api->hipGetDeviceCount(&n) != 0 || index < 0 || index >= n) { anv_set_error("hip: there is no HIP device %d (%d visible)", index, n); return NULL; }
    const anv_hip_codeobj *co = gfx ? pick_codeobj(gfx) : NULL;
    if (!co) { anv_set_error("hip%d: no code object for %s in this build (targets: %s)", index, gfx ? gfx : "(unknown)", anv_hip_targets); return NULL; }
    backend *be = calloc(1, sizeof *be);
    hip_ctx *c = calloc(1, sizeof *c);
    if (!be || !c) { free(be); free(c); anv_set_error("hip: out of memory"); return NULL; }
    c->api = api;
    c->dev = index;
    anv_hip_fmt(c->name, sizeof c->name, "hip%d", index);
    anv_hip_fmt(c->target, sizeof c->target, "%s", co->target);
    be->ops = &hip_ops_table;
    be->name = c->name;
    be->impl = c;
    anv_hip_err e = api->hipSetDevice(index);
    if (e != 0) { anv_set_error("%s: hipSetDevice failed: %s", c->name, anv_hip_strerror(api, e)); hip_destroy(be); return NULL; }
    e = api->hipModuleLoadData(&c->mod, co->data);
    if (e != 0) {
        c->mod = NULL;
        anv_set_error("%s: hipModuleLoadData of the %s code object failed: %s", c->name, co->target, anv_hip_strerror(api, e));
        hip_destroy(be);
        return NULL;
    }
    if (load_kernels(c) != 0) { hip_destroy(be); return NULL; }
    const char *brk = anv_setting_raw("ANVIL_HIP_TEST_BREAK");
    anv_hip_fmt(c->test_break, sizeof c->test_break, "%s", brk ? brk : "");
    char dname[256] = "";
    api->hipDeviceGetName(dname, (int)sizeof dname, index);
    dname[sizeof dname - 1] = 0;
    anv_hip_fmt(c->desc, sizeof c->desc, "%s, %s, HIP %d.%d", dname, co->target, api->runtime_version / 10000000, api->runtime_version / 100000 % 100);
    be->device_desc = c->desc;
    return be;
}

uint64_t hip_backend_allocated(const backend *be) { return ((const hip_ctx *)be->impl)->allocated; }
const char *hip_backend_target(const backend *be) { return ((const hip_ctx *)be->impl)->target; }

void hip_backend_take_kernels(backend *be, char *out, size_t out_len) {
    hip_ctx *c = be->impl;
    anv_hip_fmt(out, out_len, "%s", c->ran);
    c->ran[0] = 0;
}
uint32_t hip_kernels_digest(void) {
    static uint32_t digest;
    if (!digest) {
        uint32_t h = 2166136261u;
        for (int k = 0; k < anv_hip_n_codeobjs; k++)
            for (size_t i = 0; i < anv_hip_codeobjs[k].size; i++) h = (h ^ anv_hip_codeobjs[k].data[i]) * 16777619u;
        digest = h ? h : 1;
    }
    return digest;
}
bool hip_backend_is(const backend *be) { return be && be->ops == &hip_ops_table; }
