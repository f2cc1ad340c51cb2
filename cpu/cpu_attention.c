/* cpu_attention: causal GQA attention over the KV cache (F32/F16/Q8_0/Q4_0), flash-style:
 * keys and values are converted to F32 in chunks and folded into an online softmax, so
 * memory stays O(chunk) at any context length. Work items are (token tile, kv head,
 * its query heads): each chunk of K/V is converted once per item and reused by every
 * token and query head of the item (GQA); groups are split only to feed idle threads. */
#include "cpu_internal.h"
#include "error.h"
#include "kv_cache.h"
#include "quant.h"

#include <math.h>
#include <string.h>

#define ATT_TOK_TILE 8
#define ATT_KV_CHUNK 64

typedef struct {
    cpu_ctx *c;
    const float *q;
    uint32_t kv_type;
    const uint8_t *k, *v;
    size_t kv_rb;        /* bytes per cache row */
    kv_dequant_fn deq;   /* quantized caches: block decoder (kv_cache.h) */
    float *out;
    const be_attn_params *p;
    int n_items, n_tiles;
    int heads_per_item, n_sub; /* query heads per item, items per kv head and tile */
    size_t per_thread;   /* floats of scratch per thread */
    float *scratch;
} att_job;

/* Head slice kvh of cache rows [j0, j0 + n) to F32 dst [n][head_dim]. */
static void load_rows(const att_job *a, const uint8_t *cache, int j0, int n, int kvh, float *dst) {
    const int hd = a->p->head_dim;
    for (int j = 0; j < n; j++) {
        const uint8_t *row = cache + (size_t)(j0 + j) * a->kv_rb;
        float *d = dst + (size_t)j * hd;
        if (a->kv_type == QT_F32) memcpy(d, (const float *)(const void *)row + (size_t)kvh * hd, (size_t)hd * sizeof(float));
        else if (a->kv_type == QT_F16) a->c->kernels.cvt_f16_f32((const uint16_t *)(const void *)row + (size_t)kvh * hd, d, hd);
        else a->deq(row + (size_t)kvh * qtype_row_size((qtype)a->kv_type, hd), d, hd);
    }
}

/* Item = (token tile, kv head, a subset of the query heads that share it). */
static void att_item(const att_job *a, int item, float *buf) {
    const be_attn_params *p = a->p;
    const mm_kernels *kk = &a->c->kernels;
    const int hd = p->head_dim, group = p->n_head / p->n_kv_head;
    const int tile = item / (p->n_kv_head * a->n_sub), rem = item % (p->n_kv_head * a->n_sub);
    const int kvh = rem / a->n_sub, sub = rem % a->n_sub;
    const int h0 = kvh * group + sub * a->heads_per_item;
    const int nh = (kvh + 1) * group - h0 < a->heads_per_item ? (kvh + 1) * group - h0 : a->heads_per_item;
    const int t0 = tile * ATT_TOK_TILE, nt = p->n_tok - t0 < ATT_TOK_TILE ? p->n_tok - t0 : ATT_TOK_TILE;
    const int64_t q_cols = (int64_t)p->n_head * hd;
    const int nq = nh * nt; /* query rows of this item: index qi = hi * nt + t */
    float *kb = buf, *vb = kb + (size_t)ATT_KV_CHUNK * hd, *acc = vb + (size_t)ATT_KV_CHUNK * hd;
    float *s = acc + (size_t)nq * hd, *mx = s + (size_t)ATT_KV_CHUNK, *sum = mx + nq;
    for (int qi = 0; qi < nq; qi++) { mx[qi] = -INFINITY; sum[qi] = 0; }
    memset(acc, 0, (size_t)nq * hd * sizeof(float));

    const int first_pos = p->pos0 + t0, last_pos = first_pos + nt - 1;
    int j_lo = p->window > 0 && first_pos - p->window + 1 > 0 ? first_pos - p->window + 1 : 0, j_hi = last_pos;
    if (p->noncausal) {   /* every key, or the symmetric window around the tile */
        const int half = p->window / 2, n_kv = p->pos0 + p->n_tok;
        j_lo = p->window > 0 && first_pos - half > 0 ? first_pos - half : 0;
        j_hi = p->window > 0 && last_pos + half < n_kv - 1 ? last_pos + half : n_kv - 1;
    }
    for (int cj = j_lo; cj <= j_hi; cj += ATT_KV_CHUNK) {
        const int nj = j_hi + 1 - cj < ATT_KV_CHUNK ? j_hi + 1 - cj : ATT_KV_CHUNK;
        load_rows(a, a->k, cj, nj, kvh, kb);
        load_rows(a, a->v, cj, nj, kvh, vb);
        for (int qi = 0; qi < nq; qi++) {
            const int hi = qi / nt, t = qi % nt, pos = first_pos + t;
            const float *qt = a->q + (int64_t)(t0 + t) * q_cols + (int64_t)(h0 + hi) * hd;
            float cmax = -INFINITY;
            for (int jj = 0; jj < nj; jj++) {
                const int j = cj + jj;
                if (!be_attn_visible(p, pos, j)) { s[jj] = -INFINITY; continue; }
                float d = kk->vec_dot_f32(qt, kb + (size_t)jj * hd, hd) * p->scale;
                if (p->softcap > 0) d = p->softcap * tanhf(d / p->softcap);
                s[jj] = d;
                if (d > cmax) cmax = d;
            }
            if (cmax == -INFINITY) continue;
            float *at = acc + (size_t)qi * hd;
            if (cmax > mx[qi]) {
                const float corr = expf(mx[qi] - cmax); /* 0 on the first visible chunk */
                sum[qi] *= corr;
                for (int c = 0; c < hd; c++) at[c] *= corr;
                mx[qi] = cmax;
            }
            for (int jj = 0; jj < nj; jj++) {
                if (s[jj] == -INFINITY) continue;
                const float e = expf(s[jj] - mx[qi]);
                sum[qi] += e;
                kk->vec_mad_f32(at, vb + (size_t)jj * hd, e, hd);
            }
        }
    }
    /* attention sinks (gpt-oss): head h's logit joins the denominator, as ggml's soft_max */
    const float *sinks = p->sinks ? (const float *)(const void *)((const uint8_t *)p->sinks->storage + p->sinks->offset) : NULL;
    for (int qi = 0; qi < nq; qi++) {
        const int hi = qi / nt, t = qi % nt;
        float *o = a->out + (int64_t)(t0 + t) * q_cols + (int64_t)(h0 + hi) * hd;
        if (sinks) {
            const float sk = sinks[h0 + hi];
            if (sk > mx[qi]) { /* rescale to the sink as the max */
                const float corr = expf(mx[qi] - sk);
                for (int c = 0; c < hd; c++) acc[(size_t)qi * hd + c] *= corr;
                sum[qi] = sum[qi] * corr + 1.0f;
            } else {
                sum[qi] += expf(sk - mx[qi]);
            }
        }
        const float inv = sum[qi] > 0 ? 1.0f / sum[qi] : 0.0f;
        for (int c = 0; c < hd; c++) o[c] = acc[(size_t)qi * hd + c] * inv;
    }
}

static void att_chunk(void *ctx, int64_t item, int ith) {
    const att_job *a = ctx;
    /* Last token tiles first: they see the most keys, so threads finish together. */
    att_item(a, a->n_items - 1 - (int)item, a->scratch + (size_t)ith * a->per_thread);
}

int cpu_attention(cpu_ctx *c, const float *q, uint32_t kv_type, const void *k, const void *v, float *out, const be_attn_params *p) {
    if (!kv_type_supported(kv_type)) {
        const qtype_info *qi = qtype_get(kv_type);
        anv_set_error("cpu attention: KV cache type %s not supported (f32, f16, q8_0, q4_0)", qi ? qi->name : "(unknown id)");
        return -1;
    }
    if (kv_check_head_dim("cpu attention", kv_type, p->head_dim) != 0) return -1;
    if (p->n_tok <= 0) return 0;
    att_job a = {.c = c, .q = q, .kv_type = kv_type, .k = k, .v = v, .out = out, .p = p,
                 .kv_rb = qtype_row_size((qtype)kv_type, (int64_t)p->n_kv_head * p->head_dim), .deq = kv_dequant_for(kv_type, c->simd)};
    a.n_tiles = (p->n_tok + ATT_TOK_TILE - 1) / ATT_TOK_TILE;
    /* All query heads of a kv head in one item, so each K/V chunk is converted once for
     * the group; split the group only when that leaves threads idle (few kv heads). */
    const int group = p->n_head / p->n_kv_head;
    a.heads_per_item = group;
    while (a.heads_per_item > 1 && (int64_t)p->n_kv_head * a.n_tiles * ((group + a.heads_per_item - 1) / a.heads_per_item) < 2 * c->n_threads)
        a.heads_per_item = (a.heads_per_item + 1) / 2;
    a.n_sub = (group + a.heads_per_item - 1) / a.heads_per_item;
    a.n_items = a.n_tiles * p->n_kv_head * a.n_sub;
    const size_t nq = (size_t)a.heads_per_item * ATT_TOK_TILE;
    /* kb + vb + acc + scores + max + sum, rounded to 64-byte multiples per thread. */
    a.per_thread = ((size_t)2 * ATT_KV_CHUNK * p->head_dim + nq * p->head_dim + ATT_KV_CHUNK + 2 * nq + 15) / 16 * 16;
    a.scratch = cpu_scratch(c, a.per_thread * sizeof(float) * (size_t)c->n_threads);
    if (!a.scratch) return -1;
    tp_run(c->tp, att_chunk, &a, a.n_items);
    return 0;
}
