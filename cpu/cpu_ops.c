/* cpu_ops: the CPU backend's element-wise and row ops: rms_norm, add, mul, scale, rope,
 * glu, get_rows, store_rows. Large inputs are split over the thread pool; small ones
 * (token generation) run inline because a pool round-trip would cost more. */
#include "cpu_internal.h"
#include "error.h"
#include "fp16.h"
#include "kv_cache.h"
#include "quant.h"

#include <math.h>
#include <string.h>

/* Below this many elements an op runs on the calling thread. */
#define PAR_MIN_ELEMS 32768

typedef void (*range_fn)(void *ctx, int64_t begin, int64_t end);
typedef struct { range_fn fn; void *ctx; int64_t n, per_chunk; } range_job;

static void range_chunk(void *ctx, int64_t chunk, int ith) {
    (void)ith;
    range_job *j = ctx;
    const int64_t b = chunk * j->per_chunk, e = b + j->per_chunk < j->n ? b + j->per_chunk : j->n;
    j->fn(j->ctx, b, e);
}

/* Runs fn over [0, n) in chunks (multiples of align, ~4 per thread); `work` estimates
 * the elements touched, to keep small ops on the calling thread. */
static void par_range(cpu_ctx *c, range_fn fn, void *ctx, int64_t n, int64_t align, int64_t work) {
    if (work < PAR_MIN_ELEMS || c->n_threads == 1 || n <= align) { fn(ctx, 0, n); return; }
    int64_t per = (n + 4 * c->n_threads - 1) / (4 * c->n_threads);
    per = (per + align - 1) / align * align;
    range_job j = {fn, ctx, n, per};
    tp_run(c->tp, range_chunk, &j, (n + per - 1) / per);
}

/* ---- rms_norm ---- */
typedef struct { const float *x, *w; float *out; int64_t row_len; float eps; } norm_args;

static void norm_range(void *ctx, int64_t r0, int64_t r1) {
    const norm_args *a = ctx;
    for (int64_t r = r0; r < r1; r++) {
        const float *x = a->x + r * a->row_len;
        float *o = a->out + r * a->row_len;
        double sum = 0;
        for (int64_t i = 0; i < a->row_len; i++) sum += (double)(x[i] * x[i]);
        const float mean = (float)(sum / (double)a->row_len);
        const float scale = 1.0f / sqrtf(mean + a->eps);
        if (a->w) for (int64_t i = 0; i < a->row_len; i++) o[i] = x[i] * scale * a->w[i];
        else for (int64_t i = 0; i < a->row_len; i++) o[i] = x[i] * scale;
    }
}

void cpu_rms_norm(cpu_ctx *c, const float *x, const float *w, float *out, int64_t n_rows, int64_t row_len, float eps) {
    norm_args a = {x, w, out, row_len, eps};
    par_range(c, norm_range, &a, n_rows, 1, n_rows * row_len);
}

/* ---- add / mul / scale ---- */
typedef struct { const float *a, *b; float *out; int64_t b_n; float s, s2; } ew_args;

static void add_range(void *ctx, int64_t i0, int64_t i1) {
    const ew_args *e = ctx;
    int64_t i = i0;
    while (i < i1) { /* walk b in runs so the inner loop has no modulo */
        const int64_t bi = i % e->b_n, run = (e->b_n - bi) < (i1 - i) ? (e->b_n - bi) : (i1 - i);
        const float *a = e->a + i, *b = e->b + bi;
        float *o = e->out + i;
        for (int64_t k = 0; k < run; k++) o[k] = a[k] + b[k];
        i += run;
    }
}

static void mul_range(void *ctx, int64_t i0, int64_t i1) {
    const ew_args *e = ctx;
    int64_t i = i0;
    while (i < i1) {
        const int64_t bi = i % e->b_n, run = (e->b_n - bi) < (i1 - i) ? (e->b_n - bi) : (i1 - i);
        const float *a = e->a + i, *b = e->b + bi;
        float *o = e->out + i;
        for (int64_t k = 0; k < run; k++) o[k] = a[k] * b[k];
        i += run;
    }
}

static void scale_range(void *ctx, int64_t i0, int64_t i1) {
    const ew_args *e = ctx;
    for (int64_t i = i0; i < i1; i++) e->out[i] *= e->s;
}

static void clamp_range(void *ctx, int64_t i0, int64_t i1) {
    const ew_args *e = ctx;
    for (int64_t i = i0; i < i1; i++) {
        const float v = e->a[i] < e->s2 ? e->a[i] : e->s2;
        e->out[i] = v > e->s ? v : e->s;
    }
}

void cpu_add(cpu_ctx *c, const float *a, const float *b, float *out, int64_t n, int64_t b_n) {
    ew_args e = {a, b, out, b_n, 0, 0};
    par_range(c, add_range, &e, n, 16, n);
}

void cpu_mul(cpu_ctx *c, const float *a, const float *b, float *out, int64_t n, int64_t b_n) {
    ew_args e = {a, b, out, b_n, 0, 0};
    par_range(c, mul_range, &e, n, 16, n);
}

void cpu_scale(cpu_ctx *c, float *x, int64_t n, float s) {
    ew_args e = {NULL, NULL, x, 1, s, 0};
    par_range(c, scale_range, &e, n, 16, n);
}

void cpu_clamp(cpu_ctx *c, const float *x, float *out, int64_t n, float lo, float hi) {
    ew_args e = {x, NULL, out, 1, lo, hi};
    par_range(c, clamp_range, &e, n, 16, n);
}

/* ---- rope ---- */
typedef struct { float *x; int n_head, head_dim, pos0, n_rot; bool neox; float theta_scale, freq_scale; const float *ff;
                 float ext_factor, mscale, corr_lo, corr_hi; /* YaRN (backend.h) */ } rope_args;

static void rope_range(void *ctx, int64_t t0, int64_t t1) {
    const rope_args *a = ctx;
    const int half = a->n_rot / 2;
    float cs[512], sn[512]; /* half <= 512: checked by the caller */
    for (int64_t t = t0; t < t1; t++) {
        /* ggml_rope_cache_init's recurrence, so angles round exactly like llama.cpp. */
        float theta = (float)(a->pos0 + t);
        for (int i = 0; i < half; i++) {
            const float extrap = theta / (a->ff ? a->ff[i] : 1.0f);
            float th = a->freq_scale * extrap;
            if (a->ext_factor != 0.0f) { /* ggml's rope_yarn ramp */
                const float y = ((float)i - a->corr_lo) / fmaxf(0.001f, a->corr_hi - a->corr_lo);
                const float mix = (1.0f - fminf(1.0f, fmaxf(0.0f, y))) * a->ext_factor;
                th = th * (1.0f - mix) + extrap * mix;
            }
            cs[i] = cosf(th) * a->mscale;
            sn[i] = sinf(th) * a->mscale;
            theta *= a->theta_scale;
        }
        for (int h = 0; h < a->n_head; h++) {
            float *v = a->x + (t * a->n_head + h) * (int64_t)a->head_dim;
            if (a->neox) {
                for (int i = 0; i < half; i++) {
                    const float x0 = v[i], x1 = v[i + half];
                    v[i] = x0 * cs[i] - x1 * sn[i];
                    v[i + half] = x0 * sn[i] + x1 * cs[i];
                }
            } else {
                for (int i = 0; i < half; i++) {
                    const float x0 = v[2 * i], x1 = v[2 * i + 1];
                    v[2 * i] = x0 * cs[i] - x1 * sn[i];
                    v[2 * i + 1] = x0 * sn[i] + x1 * cs[i];
                }
            }
        }
    }
}

void cpu_rope(cpu_ctx *c, float *x, int n_tok, int n_head, int head_dim, int pos0, const be_rope_params *p, const float *freq_factors) {
    rope_args a = {x, n_head, head_dim, pos0, p->n_rot, p->mode == BE_ROPE_NEOX,
                   powf(p->freq_base, -2.0f / (float)p->n_rot), p->freq_scale, freq_factors,
                   p->ext_factor, p->attn_factor != 0.0f ? p->attn_factor : 1.0f, p->corr_lo, p->corr_hi};
    if (p->ext_factor != 0.0f) a.mscale *= 1.0f + 0.1f * logf(1.0f / p->freq_scale);
    par_range(c, rope_range, &a, n_tok, 1, (int64_t)n_tok * n_head * p->n_rot * 4);
}

/* rope_rows: the rotation from a per-token table of (cos, sin), NEOX pairs */
typedef struct { float *x; const float *table; int n_head, head_dim, n_rot; } rope_rows_args;

static void rope_rows_range(void *ctx, int64_t t0, int64_t t1) {
    const rope_rows_args *a = ctx;
    const int half = a->n_rot / 2;
    for (int64_t t = t0; t < t1; t++) {
        const float *cs = a->table + t * a->n_rot;
        for (int h = 0; h < a->n_head; h++) {
            float *v = a->x + (t * a->n_head + h) * (int64_t)a->head_dim;
            for (int i = 0; i < half; i++) {
                const float x0 = v[i], x1 = v[i + half];
                v[i] = x0 * cs[2 * i] - x1 * cs[2 * i + 1];
                v[i + half] = x0 * cs[2 * i + 1] + x1 * cs[2 * i];
            }
        }
    }
}

void cpu_rope_rows(cpu_ctx *c, float *x, const float *table, int n_tok, int n_head, int head_dim, int n_rot) {
    rope_rows_args a = {x, table, n_head, head_dim, n_rot};
    par_range(c, rope_rows_range, &a, n_tok, 1, (int64_t)n_tok * n_head * n_rot * 4);
}

/* ---- glu ---- */
typedef struct {
    const float *gate, *up;
    float *out;
    be_glu_kind kind;
    void (*simd)(const float *gate, const float *up, float *out, int64_t n); /* NULL: scalar */
} glu_args;

static void glu_range(void *ctx, int64_t i0, int64_t i1) {
    const glu_args *a = ctx;
    if (a->simd) a->simd(a->gate + i0, a->up + i0, a->out + i0, i1 - i0);
    else if (a->kind == BE_GLU_SWIGLU_OAI) { /* ggml_swiglu_oai */
        for (int64_t i = i0; i < i1; i++) {
            const float x = fminf(a->gate[i], BE_GLU_OAI_LIMIT), y = fminf(fmaxf(a->up[i], -BE_GLU_OAI_LIMIT), BE_GLU_OAI_LIMIT);
            a->out[i] = x / (1.0f + expf(-BE_GLU_OAI_ALPHA * x)) * (y + 1.0f);
        }
    } else if (a->kind == BE_GLU_SIGMOID) {
        for (int64_t i = i0; i < i1; i++) a->out[i] = a->up[i] / (1.0f + expf(-a->gate[i]));
    } else if (a->kind == BE_GLU_SILU) {
        for (int64_t i = i0; i < i1; i++) { const float g = a->gate[i]; a->out[i] = g / (1.0f + expf(-g)) * a->up[i]; }
    } else {
        for (int64_t i = i0; i < i1; i++) {
            const float g = a->gate[i];
            a->out[i] = 0.5f * g * (1.0f + tanhf(0.79788456080286535587989211986876f * g * (1.0f + 0.044715f * g * g))) * a->up[i];
        }
    }
}

void cpu_glu(cpu_ctx *c, const float *gate, const float *up, float *out, int64_t n, be_glu_kind kind) {
    glu_args a = {gate, up, out, kind, kind == BE_GLU_SILU ? c->kernels.glu_silu : kind == BE_GLU_GELU_TANH ? c->kernels.glu_gelu : NULL};
    par_range(c, glu_range, &a, n, 16, n * 8);
}

/* ---- get_rows / store_rows ---- */

int cpu_get_rows(cpu_ctx *c, uint32_t type, const void *table, int64_t cols, const int32_t *ids, int n_ids, float *out) {
    (void)c;
    const qtype_info *qi = qtype_get(type);
    if (!qi || !qi->can_dequantize) { anv_set_error("cpu get_rows: cannot read table of type %s", qi ? qi->name : "(unknown id)"); return -1; }
    const size_t rb = qtype_row_size((qtype)type, cols);
    for (int i = 0; i < n_ids; i++) {
        const uint8_t *row = (const uint8_t *)table + (size_t)ids[i] * rb;
        if (type == QT_F32) memcpy(out + (int64_t)i * cols, row, (size_t)cols * sizeof(float));
        else if (type == QT_F16) c->kernels.cvt_f16_f32((const uint16_t *)row, out + (int64_t)i * cols, cols);
        else dequantize_row((qtype)type, row, out + (int64_t)i * cols, cols);
    }
    return 0;
}

int cpu_store_rows(cpu_ctx *c, const float *src, uint32_t dst_type, void *dst, int64_t cols, int64_t row0, int64_t n_rows) {
    (void)c;
    if (!kv_type_supported(dst_type)) {
        const qtype_info *qi = qtype_get(dst_type);
        anv_set_error("cpu store_rows: destination type %s not supported (f32, f16, q8_0, q4_0)", qi ? qi->name : "(unknown id)");
        return -1;
    }
    if ((dst_type == QT_Q8_0 || dst_type == QT_Q4_0) && cols % 32 != 0) {
        anv_set_error("cpu store_rows: a %s row needs a multiple of 32 columns (%lld)", qtype_get(dst_type)->name, (long long)cols);
        return -1;
    }
    const size_t rb = qtype_row_size((qtype)dst_type, cols);
    for (int64_t r = 0; r < n_rows; r++) {
        const float *s = src + r * cols;
        uint8_t *d = (uint8_t *)dst + (size_t)(row0 + r) * rb;
        if (dst_type == QT_F32) memcpy(d, s, (size_t)cols * sizeof(float));
        else if (dst_type == QT_F16) {
            uint16_t *h = (uint16_t *)(void *)d;
            for (int64_t i = 0; i < cols; i++) h[i] = fp32_to_fp16(s[i]);
        } else quantize_row((qtype)dst_type, s, d, cols);
    }
    return 0;
}
