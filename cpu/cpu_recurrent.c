/* cpu_recurrent: the CPU backend's recurrent-layer ops (backend.h conv1d_state and
 * delta_net, qwen35's gated DeltaNet) on host data. The conv splits channels over the
 * thread pool; the delta rule splits value heads (each head's state row j is independent,
 * so a head is one chunk: all its tokens in order). Inner loops are plain float loops the
 * compiler vectorises (dot, axpy over head_dim). */
#include "cpu_internal.h"

#include <math.h>
#include <string.h>

/* Below this much work an op runs on the calling thread (a pool round-trip costs more). */
#define REC_PAR_MIN_WORK 16384

/* ---- conv1d_state ---- */
typedef struct { const float *x, *w; float *state, *out; int n_tok, k; int64_t ch, per; } conv_args;

static void conv_chunk(void *ctx, int64_t chunk, int ith) {
    (void)ith;
    const conv_args *a = ctx;
    const int64_t c0 = chunk * a->per, c1 = c0 + a->per < a->ch ? c0 + a->per : a->ch;
    const int k = a->k;
    for (int t = 0; t < a->n_tok; t++) {
        float *o = a->out + (int64_t)t * a->ch;
        for (int64_t c = c0; c < c1; c++) o[c] = 0.0f;
        for (int j = 0; j < k; j++) {
            const int tau = t - k + 1 + j;
            const float *in = tau >= 0 ? a->x + (int64_t)tau * a->ch : a->state + (int64_t)(k - 1 + tau) * a->ch;
            for (int64_t c = c0; c < c1; c++) o[c] += a->w[c * k + j] * in[c];
        }
        for (int64_t c = c0; c < c1; c++) o[c] = o[c] / (1.0f + expf(-o[c]));
    }
    for (int r = 0; r < k - 1; r++) {   /* rows move down: row r reads row n_tok + r >= r */
        const int tau = a->n_tok - (k - 1) + r;
        const float *src = tau >= 0 ? a->x + (int64_t)tau * a->ch : a->state + (int64_t)(k - 1 + tau) * a->ch;
        float *dst = a->state + (int64_t)r * a->ch;
        for (int64_t c = c0; c < c1; c++) dst[c] = src[c];
    }
}

void cpu_conv1d_state(cpu_ctx *c, const float *x, float *state, const float *w, float *out, int n_tok, int64_t ch, int k) {
    conv_args a = {x, w, state, out, n_tok, k, ch, ch};
    const int64_t work = (int64_t)n_tok * ch * k;
    if (work < REC_PAR_MIN_WORK || c->n_threads == 1 || ch < 64) { conv_chunk(&a, 0, 0); return; }
    int64_t per = (ch + 2 * c->n_threads - 1) / (2 * c->n_threads);
    a.per = (per + 15) / 16 * 16;
    tp_run(c->tp, conv_chunk, &a, (ch + a.per - 1) / a.per);
}

/* ---- delta_net ---- */
typedef struct {
    const float *qkv, *alpha, *beta, *dt_bias, *a;
    float *state, *out;
    be_delta_params p;
} delta_args;

/* Sums in 8 lanes (then added pairwise): a shape the compiler vectorises without -ffast-math. */
#define LANES 8
static float lanes_sum(const float *l) {
    return ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]));
}

static float dot(const float *x, const float *y, int n) {
    float l[LANES] = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int u = 0; u < LANES; u++) l[u] += x[i + u] * y[i + u];
    float s = lanes_sum(l);
    for (; i < n; i++) s += x[i] * y[i];
    return s;
}

/* m *= decay; returns m . k (the decayed row against the key). */
static float decay_dot(float *m, float decay, const float *k, int n) {
    float l[LANES] = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int u = 0; u < LANES; u++) { m[i + u] *= decay; l[u] += m[i + u] * k[i + u]; }
    float s = lanes_sum(l);
    for (; i < n; i++) { m[i] *= decay; s += m[i] * k[i]; }
    return s;
}

/* m += d k; returns m . q (the updated row against the query). */
static float axpy_dot(float *m, float d, const float *k, const float *q, int n) {
    float l[LANES] = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int u = 0; u < LANES; u++) { m[i + u] += d * k[i + u]; l[u] += m[i + u] * q[i + u]; }
    float s = lanes_sum(l);
    for (; i < n; i++) { m[i] += d * k[i]; s += m[i] * q[i]; }
    return s;
}

static void delta_head(void *ctx, int64_t h, int ith) {
    (void)ith;
    const delta_args *a = ctx;
    const int S = a->p.head_dim, Hk = a->p.n_k_head, Hv = a->p.n_v_head, kh = (int)h % Hk;
    const int64_t row = (int64_t)(2 * Hk + Hv) * S;
    float *M = a->state + h * S * S;
    float q[512], k[512];   /* head_dim <= 512: checked by the caller */
    const float out_scale = 1.0f / sqrtf((float)S);
    for (int t = 0; t < a->p.n_tok; t++) {
        const float *x = a->qkv + t * row;
        const float *qs = x + kh * S, *ks = x + (Hk + kh) * S, *v = x + (int64_t)(2 * Hk + h) * S;
        const float qn = 1.0f / sqrtf(dot(qs, qs, S) + a->p.eps), kn = 1.0f / sqrtf(dot(ks, ks, S) + a->p.eps);
        for (int i = 0; i < S; i++) { q[i] = qs[i] * qn * out_scale; k[i] = ks[i] * kn; }
        const float decay = expf(be_softplus(a->alpha[t * Hv + h] + a->dt_bias[h]) * a->a[h]);
        const float b = 1.0f / (1.0f + expf(-a->beta[t * Hv + h]));
        float *o = a->out + (int64_t)t * Hv * S + h * S;
        for (int j = 0; j < S; j++) {
            float *Mj = M + (int64_t)j * S;
            const float d = (v[j] - decay_dot(Mj, decay, k, S)) * b;
            o[j] = axpy_dot(Mj, d, k, q, S);
        }
    }
}

void cpu_delta_net(cpu_ctx *c, const float *qkv, const float *alpha, const float *beta, const float *dt_bias,
                   const float *a, float *state, float *out, const be_delta_params *p) {
    delta_args d = {qkv, alpha, beta, dt_bias, a, state, out, *p};
    const int64_t work = (int64_t)p->n_tok * p->n_v_head * p->head_dim * p->head_dim;
    if (work < REC_PAR_MIN_WORK || c->n_threads == 1 || p->n_v_head == 1) {
        for (int h = 0; h < p->n_v_head; h++) delta_head(&d, h, 0);
        return;
    }
    tp_run(c->tp, delta_head, &d, p->n_v_head);
}
