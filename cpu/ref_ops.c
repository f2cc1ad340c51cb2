/* ref_ops: the scalar reference of every backend op (see ref_ops.h). Obvious loops,
 * double accumulators, dequantize_row() for every quantized read. Rounding choices
 * follow ggml-cpu where they are observable (rope theta recurrence, rms_norm eps). */
#include "ref_ops.h"
#include "error.h"
#include "fp16.h"
#include "quant.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* NULL with anv_last_error() when out of memory: the reference ops that allocate return
 * -1 then (out not written), like every other library function; no abort. */
static float *alloc_floats(const char *op, int64_t n) {
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (!p) anv_set_error("%s: out of memory for %lld floats", op, (long long)n);
    return p;
}

void ref_get_rows(uint32_t type, const void *table, int64_t cols, const int32_t *ids, int n_ids, float *out) {
    const size_t rb = qtype_row_size((qtype)type, cols);
    for (int i = 0; i < n_ids; i++)
        dequantize_row((qtype)type, (const uint8_t *)table + (size_t)ids[i] * rb, out + (int64_t)i * cols, cols);
}

void ref_rms_norm(const float *x, const float *w, float *out, int64_t n_rows, int64_t row_len, float eps) {
    for (int64_t r = 0; r < n_rows; r++) {
        const float *xr = x + r * row_len;
        float *o = out + r * row_len;
        double sum = 0;
        for (int64_t i = 0; i < row_len; i++) sum += (double)xr[i] * xr[i];
        const float mean = (float)(sum / (double)row_len);
        const float scale = 1.0f / sqrtf(mean + eps);
        for (int64_t i = 0; i < row_len; i++) o[i] = xr[i] * scale * (w ? w[i] : 1.0f);
    }
}

int ref_matmul(uint32_t type, const void *w, int64_t cols, int64_t rows, const float *x, float *out, int n_tok, bool accumulate) {
    const size_t rb = qtype_row_size((qtype)type, cols);
    float *wr = alloc_floats("ref_matmul", cols);
    if (!wr) return -1;
    for (int64_t r = 0; r < rows; r++) {
        dequantize_row((qtype)type, (const uint8_t *)w + (size_t)r * rb, wr, cols);
        for (int t = 0; t < n_tok; t++) {
            const float *xt = x + (int64_t)t * cols;
            double acc = 0;
            for (int64_t c = 0; c < cols; c++) acc += (double)wr[c] * xt[c];
            float *o = &out[(int64_t)t * rows + r];
            *o = accumulate ? *o + (float)acc : (float)acc;
        }
    }
    free(wr);
    return 0;
}

void ref_add(const float *a, const float *b, float *out, int64_t n, int64_t b_n) {
    for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i % b_n];
}

void ref_mul(const float *a, const float *b, float *out, int64_t n, int64_t b_n) {
    for (int64_t i = 0; i < n; i++) out[i] = a[i] * b[i % b_n];
}

void ref_scale(float *x, int64_t n, float s) {
    for (int64_t i = 0; i < n; i++) x[i] *= s;
}

void ref_clamp(const float *x, float *out, int64_t n, float lo, float hi) {
    for (int64_t i = 0; i < n; i++) out[i] = fmaxf(fminf(x[i], hi), lo);
}

/* Angles of the n_rot/2 pairs at position pos, computed as ggml_rope_cache_init does:
 * theta_i = freq_scale * (pos * base^(-2/n_rot)^i, by float recurrence) / factor_i, and
 * with YaRN (ext_factor != 0) ggml's rope_yarn mix of that and the unscaled angle. */
static void rope_angles(int pos, const be_rope_params *p, const float *ff, float *cs, float *sn) {
    const int n_rot = p->n_rot;
    const float theta_scale = powf(p->freq_base, -2.0f / (float)n_rot);
    float mscale = p->attn_factor != 0.0f ? p->attn_factor : 1.0f;
    if (p->ext_factor != 0.0f) mscale *= 1.0f + 0.1f * logf(1.0f / p->freq_scale);
    float theta = (float)pos;
    for (int i = 0; i < n_rot / 2; i++) {
        const float f = ff ? ff[i] : 1.0f;
        const float extrap = theta / f;
        float th = p->freq_scale * extrap;
        if (p->ext_factor != 0.0f) {
            const float y = ((float)i - p->corr_lo) / fmaxf(0.001f, p->corr_hi - p->corr_lo);
            const float mix = (1.0f - fminf(1.0f, fmaxf(0.0f, y))) * p->ext_factor;
            th = th * (1.0f - mix) + extrap * mix;
        }
        cs[i] = cosf(th) * mscale;
        sn[i] = sinf(th) * mscale;
        theta *= theta_scale;
    }
}

int ref_rope_ext(float *x, int n_tok, int n_head, int head_dim, int pos0, const be_rope_params *p, const float *freq_factors) {
    const int n_rot = p->n_rot;
    const be_rope_mode mode = p->mode;
    float *cs = alloc_floats("ref_rope", n_rot / 2 + 1), *sn = alloc_floats("ref_rope", n_rot / 2 + 1);
    if (!cs || !sn) { free(cs); free(sn); return -1; }
    for (int t = 0; t < n_tok; t++) {
        rope_angles(pos0 + t, p, freq_factors, cs, sn);
        for (int h = 0; h < n_head; h++) {
            float *v = x + ((int64_t)t * n_head + h) * head_dim;
            for (int i = 0; i < n_rot / 2; i++) {
                const int i0 = mode == BE_ROPE_NEOX ? i : 2 * i;
                const int i1 = mode == BE_ROPE_NEOX ? i + n_rot / 2 : 2 * i + 1;
                const float a = v[i0], b = v[i1];
                v[i0] = a * cs[i] - b * sn[i];
                v[i1] = a * sn[i] + b * cs[i];
            }
        }
    }
    free(cs);
    free(sn);
    return 0;
}

int ref_rope(float *x, int n_tok, int n_head, int head_dim, int pos0, int n_rot, be_rope_mode mode, float freq_base, float freq_scale, const float *freq_factors) {
    be_rope_params p = {.n_rot = n_rot, .mode = mode, .freq_base = freq_base, .freq_scale = freq_scale};
    return ref_rope_ext(x, n_tok, n_head, head_dim, pos0, &p, freq_factors);
}

void ref_rope_rows(float *x, const float *table, int n_tok, int n_head, int head_dim, int n_rot) {
    const int half = n_rot / 2;
    for (int t = 0; t < n_tok; t++)
        for (int h = 0; h < n_head; h++) {
            float *v = x + ((int64_t)t * n_head + h) * head_dim;
            const float *cs = table + (int64_t)t * n_rot;
            for (int i = 0; i < half; i++) {
                const float a = v[i], b = v[i + half];
                v[i] = a * cs[2 * i] - b * cs[2 * i + 1];
                v[i + half] = a * cs[2 * i + 1] + b * cs[2 * i];
            }
        }
}

void ref_glu(const float *gate, const float *up, float *out, int64_t n, be_glu_kind kind) {
    for (int64_t i = 0; i < n; i++) {
        const float g = gate[i];
        float a;
        if (kind == BE_GLU_SWIGLU_OAI) { /* ggml_swiglu_oai */
            const float x = fminf(g, BE_GLU_OAI_LIMIT), y = fminf(fmaxf(up[i], -BE_GLU_OAI_LIMIT), BE_GLU_OAI_LIMIT);
            out[i] = x / (1.0f + expf(-BE_GLU_OAI_ALPHA * x)) * (y + 1.0f);
            continue;
        }
        if (kind == BE_GLU_SIGMOID) a = 1.0f / (1.0f + expf(-g));
        else if (kind == BE_GLU_SILU) a = g / (1.0f + expf(-g));
        else a = 0.5f * g * (1.0f + tanhf(0.79788456080286535587989211986876f * g * (1.0f + 0.044715f * g * g)));
        out[i] = a * up[i];
    }
}

void ref_conv1d_state(const float *x, float *state, const float *w, float *out, int n_tok, int64_t ch, int k) {
    for (int t = 0; t < n_tok; t++)
        for (int64_t c = 0; c < ch; c++) {
            double sum = 0;
            for (int j = 0; j < k; j++) {
                const int tau = t - k + 1 + j;   /* input time; < 0 reads the state */
                const float in = tau >= 0 ? x[(int64_t)tau * ch + c] : state[(int64_t)(k - 1 + tau) * ch + c];
                sum += (double)w[c * k + j] * in;
            }
            const float s = (float)sum;
            out[(int64_t)t * ch + c] = s / (1.0f + expf(-s));
        }
    /* the new state: the last k - 1 inputs of (state, x) */
    for (int r = 0; r < k - 1; r++) {
        const int tau = n_tok - (k - 1) + r;   /* time of new state row r */
        for (int64_t c = 0; c < ch; c++)
            state[(int64_t)r * ch + c] = tau >= 0 ? x[(int64_t)tau * ch + c] : state[(int64_t)(k - 1 + tau) * ch + c];
    }
}

void ref_delta_net(const float *qkv, const float *alpha, const float *beta, const float *dt_bias, const float *a,
                   float *state, float *out, const be_delta_params *p) {
    const int S = p->head_dim, Hk = p->n_k_head, Hv = p->n_v_head;
    const int64_t row = (int64_t)(2 * Hk + Hv) * S;
    for (int t = 0; t < p->n_tok; t++) {
        const float *x = qkv + t * row;
        for (int h = 0; h < Hv; h++) {
            const int kh = h % Hk;
            double qs = 0, ks = 0;
            for (int i = 0; i < S; i++) {
                qs += (double)x[kh * S + i] * x[kh * S + i];
                ks += (double)x[(Hk + kh) * S + i] * x[(Hk + kh) * S + i];
            }
            const double qn = 1.0 / sqrt(qs + p->eps), kn = 1.0 / sqrt(ks + p->eps);
            const float *v = x + (int64_t)(2 * Hk + h) * S;
            const double decay = exp((double)be_softplus(alpha[t * Hv + h] + dt_bias[h]) * a[h]);
            const double b = 1.0 / (1.0 + exp(-(double)beta[t * Hv + h]));
            float *M = state + (int64_t)h * S * S;
            for (int j = 0; j < S; j++) {
                float *Mj = M + (int64_t)j * S;
                double mk = 0;
                for (int i = 0; i < S; i++) { Mj[i] = (float)(Mj[i] * decay); mk += (double)Mj[i] * x[(Hk + kh) * S + i] * kn; }
                const double d = (v[j] - mk) * b;
                double o = 0;
                for (int i = 0; i < S; i++) {
                    Mj[i] = (float)(Mj[i] + d * x[(Hk + kh) * S + i] * kn);
                    o += (double)Mj[i] * x[kh * S + i] * qn;
                }
                out[(int64_t)t * Hv * S + (int64_t)h * S + j] = (float)(o / sqrt((double)S));
            }
        }
    }
}

void ref_store_rows(const float *src, uint32_t dst_type, void *dst, int64_t cols, int64_t row0, int64_t n_rows) {
    const size_t rb = qtype_row_size((qtype)dst_type, cols);
    for (int64_t r = 0; r < n_rows; r++) {
        const float *s = src + r * cols;
        uint8_t *d = (uint8_t *)dst + (size_t)(row0 + r) * rb;
        if (dst_type == QT_F32) memcpy(d, s, (size_t)cols * sizeof(float));
        else if (dst_type == QT_F16)
            for (int64_t c = 0; c < cols; c++) { uint16_t h = fp32_to_fp16(s[c]); memcpy(d + 2 * c, &h, 2); }
        else quantize_row((qtype)dst_type, s, d, cols);
    }
}

int ref_attention(const float *q, uint32_t kv_type, const void *k, const void *v, float *out, const be_attn_params *p) {
    return ref_attention_sinks(q, kv_type, k, v, NULL, out, p);
}

int ref_attention_sinks(const float *q, uint32_t kv_type, const void *k, const void *v, const float *sinks, float *out,
                        const be_attn_params *p) {
    const int64_t kv_cols = (int64_t)p->n_kv_head * p->head_dim, q_cols = (int64_t)p->n_head * p->head_dim;
    const int n_ctx = p->pos0 + p->n_tok;
    const size_t rb = qtype_row_size((qtype)kv_type, kv_cols);
    float *kf = alloc_floats("ref_attention", (int64_t)n_ctx * kv_cols), *vf = alloc_floats("ref_attention", (int64_t)n_ctx * kv_cols);
    double *s = malloc((size_t)(n_ctx > 0 ? n_ctx : 1) * sizeof(double));
    double *acc = malloc((size_t)(p->head_dim > 0 ? p->head_dim : 1) * sizeof(double));
    if (!kf || !vf || !s || !acc) {
        free(kf); free(vf); free(s); free(acc);
        anv_set_error("ref_attention: out of memory for a %d-position cache", n_ctx);
        return -1;
    }
    for (int j = 0; j < n_ctx; j++) {
        dequantize_row((qtype)kv_type, (const uint8_t *)k + (size_t)j * rb, kf + (int64_t)j * kv_cols, kv_cols);
        dequantize_row((qtype)kv_type, (const uint8_t *)v + (size_t)j * rb, vf + (int64_t)j * kv_cols, kv_cols);
    }
    const int group = p->n_head / p->n_kv_head;
    for (int t = 0; t < p->n_tok; t++) {
        const int pos = p->pos0 + t;
        for (int h = 0; h < p->n_head; h++) {
            const float *qh = q + (int64_t)t * q_cols + (int64_t)h * p->head_dim;
            const int64_t koff = (int64_t)(h / group) * p->head_dim;
            double smax = -INFINITY;
            const int j_end = p->noncausal ? n_ctx - 1 : pos;
            for (int j = 0; j <= j_end; j++) {
                if (!be_attn_visible(p, pos, j)) { s[j] = -INFINITY; continue; }
                double d = 0;
                for (int c = 0; c < p->head_dim; c++) d += (double)qh[c] * kf[(int64_t)j * kv_cols + koff + c];
                d *= p->scale;
                if (p->softcap > 0) d = p->softcap * tanh(d / p->softcap);
                s[j] = d;
                if (d > smax) smax = d;
            }
            if (sinks && sinks[h] > smax) smax = sinks[h];  /* the sink joins the max and the sum */
            double denom = sinks ? exp((double)sinks[h] - smax) : 0;
            for (int c = 0; c < p->head_dim; c++) acc[c] = 0;
            for (int j = 0; j <= j_end; j++) {
                if (s[j] == -INFINITY) continue;
                const double e = exp(s[j] - smax);
                denom += e;
                for (int c = 0; c < p->head_dim; c++) acc[c] += e * vf[(int64_t)j * kv_cols + koff + c];
            }
            float *o = out + (int64_t)t * q_cols + (int64_t)h * p->head_dim;
            for (int c = 0; c < p->head_dim; c++) o[c] = (float)(acc[c] / denom);
        }
    }
    free(s);
    free(acc);
    free(kf);
    free(vf);
    return 0;
}
