/* cpu_backend: the backend_ops table of the CPU backend: memory (weights alias the host
 * data, tensors are 64-byte aligned heap blocks), argument checks with one-line errors,
 * and dispatch to cpu_ops.c / cpu_matmul.c / cpu_attention.c on the thread pool. */
#include "cpu_backend.h"
#include "cpu_internal.h"
#include "error.h"
#include "quant.h"
#include "settings.h"
#include "weight_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define CPU_ALIGN 64

/* ---- SIMD selection ---- */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
/* F16C is CPUID.1:ECX bit 29 (clang's __builtin_cpu_supports does not know "f16c"). */
static bool cpu_has_f16c(void) {
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
}
#endif

static cpu_simd_level cpu_simd_hw(void) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("fma") && cpu_has_f16c())
        return CPU_SIMD_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c()) return CPU_SIMD_AVX2;
#endif
    return CPU_SIMD_SCALAR;
}

static const char *const simd_names[] = {"scalar", "avx2", "avx512"};

int cpu_simd_detect(cpu_simd_level *out) {
    cpu_simd_level hw = cpu_simd_hw(), want = hw;
    const char *env = anv_setting_raw("ANVIL_CPU_SIMD");
    if (env && *env) {
        if (!strcasecmp(env, "scalar")) want = CPU_SIMD_SCALAR;
        else if (!strcasecmp(env, "avx2")) want = CPU_SIMD_AVX2;
        else if (!strcasecmp(env, "avx512")) want = CPU_SIMD_AVX512;
        else {
            anv_set_error("ANVIL_CPU_SIMD=%s is not one of scalar, avx2, avx512 (or unset it for the best this CPU has)", env);
            return -1;
        }
    }
    *out = want < hw ? want : hw;
    return 0;
}

const char *cpu_backend_simd(void) {
    cpu_simd_level level;
    return cpu_simd_detect(&level) == 0 ? simd_names[level] : NULL;
}

void *cpu_scratch(cpu_ctx *c, size_t n) {
    if (n <= c->scratch_cap) return c->scratch;
    size_t cap = (n + CPU_ALIGN - 1) / CPU_ALIGN * CPU_ALIGN;
    cap += cap / 4;
    cap = (cap + CPU_ALIGN - 1) / CPU_ALIGN * CPU_ALIGN;
    void *p = aligned_alloc(CPU_ALIGN, cap);
    if (!p) { anv_set_error("cpu backend: out of memory for %zu bytes of scratch", n); return NULL; }
    free(c->scratch);
    c->scratch = p;
    c->scratch_cap = cap;
    return p;
}

/* ---- memory ---- */

static cpu_ctx *ctx_of(backend *be) { return be->impl; }
static uint8_t *data_of(const be_tensor *t) { return (uint8_t *)t->storage + t->offset; }
static float *f32_of(const be_tensor *t) { return (float *)(void *)data_of(t); }
static int64_t elems_of(const be_tensor *t) { return t->cols * t->rows; }

static const char *type_name(uint32_t type) {
    const qtype_info *qi = qtype_get(type);
    return qi ? qi->name : "(unknown type)";
}

static be_tensor *new_header(backend *be, uint32_t type, int64_t cols, int64_t rows, const char *what) {
    const qtype_info *qi = qtype_get(type);
    if (!qi) { anv_set_error("cpu %s: unknown tensor type id %u", what, type); return NULL; }
    if (cols <= 0 || rows < 0 || cols % qi->block_size != 0) {
        anv_set_error("cpu %s: bad shape %lld x %lld for type %s", what, (long long)rows, (long long)cols, qi->name);
        return NULL;
    }
    be_tensor *t = calloc(1, sizeof *t);
    if (!t) { anv_set_error("cpu %s: out of memory", what); return NULL; }
    t->be = be;
    t->type = type;
    t->cols = cols;
    t->rows = rows;
    return t;
}

static be_tensor *cpu_tensor_new(backend *be, uint32_t type, int64_t cols, int64_t rows) {
    be_tensor *t = new_header(be, type, cols, rows, "tensor_new");
    if (!t) return NULL;
    size_t n = be_nbytes(t);
    n = (n + CPU_ALIGN - 1) / CPU_ALIGN * CPU_ALIGN;
    t->storage = aligned_alloc(CPU_ALIGN, n ? n : CPU_ALIGN);
    if (!t->storage) {
        anv_set_error("cpu tensor_new: out of memory for %zu bytes", n);
        free(t);
        return NULL;
    }
    /* Touched now, as llama.cpp clears its KV buffers: a reserved KV cache counts against
     * MemAvailable from the start, so the next model's admission sees it (untouched pages
     * let two 12 GiB caches both be admitted with 21 GiB free). */
    memset(t->storage, 0, n ? n : CPU_ALIGN);
    t->owned = true;
    return t;
}

static be_tensor *cpu_weight_new(backend *be, uint32_t type, int64_t cols, int64_t rows, const void *host_data) {
    if (!host_data) { anv_set_error("cpu weight_new: no host data"); return NULL; }
    be_tensor *t = new_header(be, type, cols, rows, "weight_new");
    if (!t) return NULL;
    t->storage = (void *)(uintptr_t)host_data; /* zero copy: aliases the mmap, never written */
    t->owned = false;
    /* Matmul weights of the types the kernel set has packed kernels for get an interleaved
     * copy as well (repack.h); the original stays for get_rows, views and row tails. */
    /* Those of the model file being loaded are packed together at its end (repack_load.c). */
    cpu_ctx *c = ctx_of(be);
    if (c->repack && rows >= 1 && type < QT_COUNT && c->kernels.packed[type] && repack_supported(type)) {
        const int deferred = cpu_load_defer(c, type, host_data, cols, rows);
        if (deferred < 0 || (deferred == 0 && packed_set_add(&c->packed, type, host_data, cols, rows) != 0)) {
            free(t);
            return NULL;
        }
    }
    return t;
}

static void cpu_tensor_free(backend *be, be_tensor *t) {
    if (!t) return;
    if (t->owned) free(t->storage);
    else if (t->offset == 0) {
        cpu_load_forget(ctx_of(be), t->storage);
        packed_set_remove(&ctx_of(be)->packed, t->storage);
    }
    free(t);
}

static void cpu_weights_begin(backend *be, const be_weight_file *f) { cpu_load_begin(ctx_of(be), f); }
static int cpu_weights_end(backend *be, bool ok) { return cpu_load_end(ctx_of(be), ok); }

void cpu_backend_repack_info(const backend *be, cpu_repack_info *out) { *out = ((const cpu_ctx *)be->impl)->info; }

static void cpu_upload(backend *be, be_tensor *t, size_t offset, const void *src, size_t n) {
    if (offset + n > be_nbytes(t)) { be_fail(be, "cpu upload: %zu bytes at %zu overflow a %zu-byte tensor", n, offset, be_nbytes(t)); return; }
    memcpy(data_of(t) + offset, src, n);
}

static void cpu_download(backend *be, const be_tensor *t, size_t offset, void *dst, size_t n) {
    if (offset + n > be_nbytes(t)) {
        be_fail(be, "cpu download: %zu bytes at %zu overflow a %zu-byte tensor", n, offset, be_nbytes(t));
        memset(dst, 0, n); /* as the Vulkan backend: never leave the caller's buffer unwritten */
        return;
    }
    memcpy(dst, data_of(t) + offset, n);
}

static void cpu_sync(backend *be) { (void)be; }

/* ---- op checks ---- */

static bool need_f32(const be_tensor *t, int64_t n, const char *op, const char *arg) {
    if (!t || t->type != QT_F32) { anv_set_error("cpu %s: %s must be an f32 tensor", op, arg); return false; }
    if (elems_of(t) < n) { anv_set_error("cpu %s: %s has %lld elements, needs %lld", op, arg, (long long)elems_of(t), (long long)n); return false; }
    return true;
}

/* ---- ops ---- */

static void cpu_op_get_rows(backend *be, const be_tensor *table, const int32_t *ids, int n_ids, be_tensor *out) {
    if (n_ids < 0 || !need_f32(out, (int64_t)n_ids * table->cols, "get_rows", "out")) { be_record_error(be); return; }
    for (int i = 0; i < n_ids; i++)
        if (ids[i] < 0 || ids[i] >= table->rows) {
            be_fail(be, "cpu get_rows: id %d out of range [0, %lld)", ids[i], (long long)table->rows);
            return;
        }
    if (cpu_get_rows(ctx_of(be), table->type, data_of(table), table->cols, ids, n_ids, f32_of(out)) != 0) be_record_error(be);
}

static void cpu_op_rms_norm(backend *be, const be_tensor *x, const be_tensor *w, be_tensor *out, int64_t n_rows, int64_t row_len, float eps) {
    const int64_t n = n_rows * row_len;
    if (n_rows < 0 || row_len <= 0 || !need_f32(x, n, "rms_norm", "x") || !need_f32(out, n, "rms_norm", "out")) { be_record_error(be); return; }
    if (w && !need_f32(w, row_len, "rms_norm", "w")) { be_record_error(be); return; }
    cpu_rms_norm(ctx_of(be), f32_of(x), w ? f32_of(w) : NULL, f32_of(out), n_rows, row_len, eps);
}

static void cpu_op_matmul(backend *be, const be_tensor *w, const be_tensor *x, be_tensor *out, int n_tok, bool accumulate) {
    if (n_tok < 0 || !need_f32(x, (int64_t)n_tok * w->cols, "matmul", "x") || !need_f32(out, (int64_t)n_tok * w->rows, "matmul", "out")) { be_record_error(be); return; }
    if (cpu_matmul(ctx_of(be), w->type, data_of(w), w->cols, w->rows, f32_of(x), f32_of(out), n_tok, accumulate) != 0) be_record_error(be);
}

static bool cpu_op_matmul_many(backend *be, const be_matmul_item *items, int n) {
    if (n > CPU_MM_MANY_MAX) return false;
    cpu_mm_item it[CPU_MM_MANY_MAX];
    for (int i = 0; i < n; i++) {
        const be_matmul_item *m = &items[i];
        if (m->n_tok < 0 || !need_f32(m->x, (int64_t)m->n_tok * m->w->cols, "matmul", "x") ||
            !need_f32(m->out, (int64_t)m->n_tok * m->w->rows, "matmul", "out")) { be_record_error(be); return true; }
        it[i] = (cpu_mm_item){m->w->type, data_of(m->w), m->w->cols, m->w->rows, f32_of(m->x), f32_of(m->out), m->n_tok};
    }
    if (cpu_matmul_many(ctx_of(be), it, n) != 0) be_record_error(be);
    return true;
}

static void cpu_op_add(backend *be, const be_tensor *a, const be_tensor *b, be_tensor *out, int64_t n, int64_t b_n) {
    if (n < 0 || b_n <= 0 || !need_f32(a, n, "add", "a") || !need_f32(b, b_n, "add", "b") || !need_f32(out, n, "add", "out")) { be_record_error(be); return; }
    cpu_add(ctx_of(be), f32_of(a), f32_of(b), f32_of(out), n, b_n);
}

static void cpu_op_mul(backend *be, const be_tensor *a, const be_tensor *b, be_tensor *out, int64_t n, int64_t b_n) {
    if (n < 0 || b_n <= 0 || !need_f32(a, n, "mul", "a") || !need_f32(b, b_n, "mul", "b") || !need_f32(out, n, "mul", "out")) { be_record_error(be); return; }
    cpu_mul(ctx_of(be), f32_of(a), f32_of(b), f32_of(out), n, b_n);
}

static void cpu_op_scale(backend *be, be_tensor *x, int64_t n, float s) {
    if (n < 0 || !need_f32(x, n, "scale", "x")) { be_record_error(be); return; }
    cpu_scale(ctx_of(be), f32_of(x), n, s);
}

static void cpu_op_clamp(backend *be, const be_tensor *x, be_tensor *out, int64_t n, float lo, float hi) {
    if (n < 0 || !need_f32(x, n, "clamp", "x") || !need_f32(out, n, "clamp", "out")) { be_record_error(be); return; }
    cpu_clamp(ctx_of(be), f32_of(x), f32_of(out), n, lo, hi);
}

static void cpu_op_rope(backend *be, be_tensor *x, int n_tok, int n_head, int head_dim, int pos0, const be_rope_params *p) {
    if (n_tok < 0 || n_head <= 0 || head_dim <= 0 || pos0 < 0) { be_fail(be, "cpu rope: bad shape"); return; }
    if (p->n_rot <= 0 || p->n_rot > head_dim || p->n_rot % 2 != 0 || p->n_rot > 1024) {
        be_fail(be, "cpu rope: n_rot %d must be even and in (0, head_dim %d]", p->n_rot, head_dim);
        return;
    }
    if (!need_f32(x, (int64_t)n_tok * n_head * head_dim, "rope", "x")) { be_record_error(be); return; }
    if (p->freq_factors && !need_f32(p->freq_factors, p->n_rot / 2, "rope", "freq_factors")) { be_record_error(be); return; }
    cpu_rope(ctx_of(be), f32_of(x), n_tok, n_head, head_dim, pos0, p, p->freq_factors ? f32_of(p->freq_factors) : NULL);
}

static void cpu_op_rope_rows(backend *be, be_tensor *x, const be_tensor *table, int n_tok, int n_head, int head_dim, int n_rot) {
    if (n_tok < 0 || n_head <= 0 || head_dim <= 0 || n_rot <= 0 || n_rot > head_dim || n_rot % 2 != 0) {
        be_fail(be, "cpu rope_rows: bad shape (n_rot %d, head_dim %d)", n_rot, head_dim);
        return;
    }
    if (!need_f32(x, (int64_t)n_tok * n_head * head_dim, "rope_rows", "x") || !need_f32(table, (int64_t)n_tok * n_rot, "rope_rows", "table")) {
        be_record_error(be);
        return;
    }
    cpu_rope_rows(ctx_of(be), f32_of(x), f32_of(table), n_tok, n_head, head_dim, n_rot);
}

static void cpu_op_glu(backend *be, const be_tensor *gate, const be_tensor *up, be_tensor *out, int64_t n, be_glu_kind kind) {
    if (n < 0 || !need_f32(gate, n, "glu", "gate") || !need_f32(up, n, "glu", "up") || !need_f32(out, n, "glu", "out")) { be_record_error(be); return; }
    if (kind != BE_GLU_SILU && kind != BE_GLU_GELU_TANH && kind != BE_GLU_SWIGLU_OAI && kind != BE_GLU_SIGMOID) { be_fail(be, "cpu glu: unknown activation %d", (int)kind); return; }
    cpu_glu(ctx_of(be), f32_of(gate), f32_of(up), f32_of(out), n, kind);
}

static void cpu_op_store_rows(backend *be, const be_tensor *src, be_tensor *dst, int64_t dst_row0, int64_t n_rows) {
    if (n_rows < 0 || dst_row0 < 0 || dst_row0 + n_rows > dst->rows) {
        be_fail(be, "cpu store_rows: rows [%lld, %lld) outside the %lld-row destination", (long long)dst_row0,
                      (long long)(dst_row0 + n_rows), (long long)dst->rows);
        return;
    }
    if (!need_f32(src, n_rows * dst->cols, "store_rows", "src")) { be_record_error(be); return; }
    if (cpu_store_rows(ctx_of(be), f32_of(src), dst->type, data_of(dst), dst->cols, dst_row0, n_rows) != 0) be_record_error(be);
}

static void cpu_op_attention(backend *be, const be_tensor *q, const be_tensor *k, const be_tensor *v, be_tensor *out, const be_attn_params *p) {
    if (p->n_tok < 0 || p->pos0 < 0 || p->n_head <= 0 || p->n_kv_head <= 0 || p->head_dim <= 0 || p->n_head % p->n_kv_head != 0) {
        be_fail(be, "cpu attention: bad heads (n_head %d, n_kv_head %d, head_dim %d)", p->n_head, p->n_kv_head, p->head_dim);
        return;
    }
    const int64_t q_elems = (int64_t)p->n_tok * p->n_head * p->head_dim, kv_cols = (int64_t)p->n_kv_head * p->head_dim;
    if (!need_f32(q, q_elems, "attention", "q") || !need_f32(out, q_elems, "attention", "out")) { be_record_error(be); return; }
    if (k->type != v->type || k->cols != kv_cols || v->cols != kv_cols) {
        be_fail(be, "cpu attention: k/v must share a type and have %lld cols (k %s %lld, v %s %lld)", (long long)kv_cols,
                      type_name(k->type), (long long)k->cols, type_name(v->type), (long long)v->cols);
        return;
    }
    if (k->rows < (int64_t)p->pos0 + p->n_tok || v->rows < (int64_t)p->pos0 + p->n_tok) {
        be_fail(be, "cpu attention: cache has %lld rows, needs %lld", (long long)k->rows, (long long)p->pos0 + p->n_tok);
        return;
    }
    if (p->sinks && (p->sinks->be != be || !need_f32(p->sinks, p->n_head, "attention", "sinks"))) {
        if (p->sinks->be != be) anv_set_error("cpu attention: sinks must live on the CPU backend");
        be_record_error(be);
        return;
    }
    if (cpu_attention(ctx_of(be), f32_of(q), k->type, data_of(k), data_of(v), f32_of(out), p) != 0) be_record_error(be);
}

static void cpu_op_conv1d_state(backend *be, const be_tensor *x, be_tensor *state, const be_tensor *w, be_tensor *out, int n_tok) {
    const int64_t ch = w->cols > 0 ? w->rows : 0;
    const int k = (int)w->cols;
    if (n_tok < 0 || k < 2 || k > 64 || w->type != QT_F32 || state->cols != ch || state->rows != k - 1) {
        be_fail(be, "cpu conv1d_state: kernel %s [%lld][%lld] and state [%lld][%lld] do not match (f32 kernel of 2..64 taps, state [k - 1][channels])",
                type_name(w->type), (long long)w->rows, (long long)w->cols, (long long)state->rows, (long long)state->cols);
        return;
    }
    if (!need_f32(x, n_tok * ch, "conv1d_state", "x") || !need_f32(out, n_tok * ch, "conv1d_state", "out") ||
        !need_f32(state, (k - 1) * ch, "conv1d_state", "state")) { be_record_error(be); return; }
    cpu_conv1d_state(ctx_of(be), f32_of(x), f32_of(state), f32_of(w), f32_of(out), n_tok, ch, k);
}

static void cpu_op_delta_net(backend *be, const be_tensor *qkv, const be_tensor *alpha, const be_tensor *beta, const be_tensor *dt_bias,
                             const be_tensor *a, be_tensor *state, be_tensor *out, const be_delta_params *p) {
    if (p->n_tok < 0 || p->n_k_head <= 0 || p->n_v_head <= 0 || p->n_v_head % p->n_k_head != 0 || p->head_dim <= 0 || p->head_dim > 512) {
        be_fail(be, "cpu delta_net: bad heads (n_k_head %d, n_v_head %d, head_dim %d)", p->n_k_head, p->n_v_head, p->head_dim);
        return;
    }
    const int64_t S = p->head_dim, Hv = p->n_v_head, nt = p->n_tok;
    if (!need_f32(qkv, nt * (2 * p->n_k_head + Hv) * S, "delta_net", "qkv") || !need_f32(alpha, nt * Hv, "delta_net", "alpha") ||
        !need_f32(beta, nt * Hv, "delta_net", "beta") || !need_f32(dt_bias, Hv, "delta_net", "dt_bias") ||
        !need_f32(a, Hv, "delta_net", "a") || !need_f32(state, Hv * S * S, "delta_net", "state") ||
        !need_f32(out, nt * Hv * S, "delta_net", "out")) { be_record_error(be); return; }
    cpu_delta_net(ctx_of(be), f32_of(qkv), f32_of(alpha), f32_of(beta), f32_of(dt_bias), f32_of(a), f32_of(state), f32_of(out), p);
}

static void cpu_destroy(backend *be) {
    if (!be) return;
    cpu_ctx *c = be->impl;
    if (c) {
        tp_free(c->tp);
        free(c->scratch);
        packed_set_free(&c->packed);
        cpu_load_free(c);
        free(c);
    }
    free((void *)be->device_desc);
    free(be);
}

static const backend_ops cpu_ops_table = {
    .destroy = cpu_destroy,
    .tensor_new = cpu_tensor_new,
    .weight_new = cpu_weight_new,
    .tensor_free = cpu_tensor_free,
    .weights_begin = cpu_weights_begin,
    .weights_end = cpu_weights_end,
    .upload = cpu_upload,
    .download = cpu_download,
    .sync = cpu_sync,
    .error = be_sticky_error,
    .get_rows = cpu_op_get_rows,
    .rms_norm = cpu_op_rms_norm,
    .matmul = cpu_op_matmul,
    .matmul_many = cpu_op_matmul_many,
    .add = cpu_op_add,
    .mul = cpu_op_mul,
    .scale = cpu_op_scale,
    .clamp = cpu_op_clamp,
    .rope = cpu_op_rope,
    .rope_rows = cpu_op_rope_rows,
    .glu = cpu_op_glu,
    .store_rows = cpu_op_store_rows,
    .attention = cpu_op_attention,
    .conv1d_state = cpu_op_conv1d_state,
    .delta_net = cpu_op_delta_net,
};

backend *cpu_backend_new(int n_threads) {
    if (n_threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = n > 0 ? (int)n : 1;
    }
    cpu_simd_level simd;
    if (cpu_simd_detect(&simd) != 0) return NULL; /* a bad ANVIL_CPU_SIMD: the caller reports it */
    bool repack = true;
    const char *rp = anv_setting_raw("ANVIL_CPU_REPACK");
    if (rp && *rp) {
        if (!strcmp(rp, "0")) repack = false;
        else if (strcmp(rp, "1") != 0) {
            anv_set_error("ANVIL_CPU_REPACK=%s is not 0 or 1 (0: keep weights in their file layout)", rp);
            return NULL;
        }
    }
    wcache_config cache;
    if (wcache_settings(&cache) != 0) return NULL;
    backend *be = calloc(1, sizeof *be);
    cpu_ctx *c = calloc(1, sizeof *c);
    char *desc = malloc(64);
    if (!be || !c || !desc) {
        free(be); free(c); free(desc);
        anv_set_error("cpu backend: out of memory");
        return NULL;
    }
    c->tp = tp_new(n_threads);
    if (!c->tp) { free(be); free(c); free(desc); return NULL; }
    c->n_threads = n_threads;
    c->simd = simd;
    c->repack = repack;
    c->cache = cache;
    c->kernels_isa = simd_names[simd];
    packed_set_init(&c->packed);
    mm_kernels_scalar(&c->kernels);
    mm_kernels_iq_scalar(&c->kernels);
    if (c->simd >= CPU_SIMD_AVX2) { mm_kernels_avx2(&c->kernels); mm_kernels_iq_avx2(&c->kernels); }
    if (c->simd >= CPU_SIMD_AVX512) { mm_kernels_avx512(&c->kernels); mm_kernels_iq_avx512(&c->kernels); }
    snprintf(desc, 64, "CPU, %d thread%s, %s kernels", n_threads, n_threads == 1 ? "" : "s", simd_names[c->simd]);
    be->ops = &cpu_ops_table;
    be->name = "cpu";
    be->device_desc = desc;
    be->impl = c;
    return be;
}

backend *cpu_backend_new_unpacked(int n_threads) {
    backend *be = cpu_backend_new(n_threads);
    if (be) ctx_of(be)->repack = false;
    return be;
}

int cpu_backend_threads(const backend *be) { return ((const cpu_ctx *)be->impl)->n_threads; }
bool cpu_backend_is(const backend *be) { return be && be->ops == &cpu_ops_table; }
