/* bench: bytes-per-token accounting and the pp/tg timing loops of `anvil bench` (see bench.h). */
#include "bench.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"
#include "error.h"
#include "quant.h"

static uint64_t tensor_bytes(const be_tensor *t) { return t ? (uint64_t)be_nbytes(t) : 0; }

void bench_weight_bytes_per_token(const model *m, bench_weight_bytes *out) {
    *out = (bench_weight_bytes){0};
    for (int il = 0; il < m->hp.n_layer; il++) {
        const model_layer *L = &m->layers[il];
        const be_tensor *ts[] = {L->attn_norm, L->wq, L->wk, L->wv, L->wo, L->bq, L->bk, L->bv, L->q_norm,
                                 L->k_norm, L->post_attn_norm, L->ffn_norm, L->w_gate, L->w_up, L->w_down,
                                 L->post_ffn_norm, L->pl_gate, L->pl_proj, L->pl_post_norm};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) out->layers += tensor_bytes(ts[i]);
    }
    out->output = tensor_bytes(m->output_norm) + tensor_bytes(m->output);
    out->embd_row = m->tok_embd ? (uint64_t)be_row_bytes(m->tok_embd) : 0;
    out->rope_freqs = tensor_bytes(m->rope_freqs);
    out->total = out->layers + out->output + out->embd_row + out->rope_freqs;
}

uint64_t bench_kv_bytes_at(const model_hparams *hp, uint32_t kv_type, int pos) {
    if (pos < 0) return 0;
    uint64_t total = 0;
    for (int il = 0; il < hp->n_layer; il++) {   /* each layer's own width (gemma4); a shared cache is read again */
        const uint64_t row = qtype_row_size((qtype)kv_type, (int64_t)model_layer_n_kv_head(hp, il) * model_layer_head_dim(hp, il));
        uint64_t rows = (uint64_t)pos + 1;
        if (model_layer_is_swa(hp, il) && hp->swa_window > 0 && rows > (uint64_t)hp->swa_window)
            rows = (uint64_t)hp->swa_window;
        total += 2 * rows * row;  /* K and V */
    }
    return total;
}

double bench_kv_bytes_mean(const model_hparams *hp, uint32_t kv_type, int depth, int n_gen) {
    if (n_gen <= 0) return 0;
    double sum = 0;
    for (int i = 0; i < n_gen; i++) sum += (double)bench_kv_bytes_at(hp, kv_type, depth + i);
    return sum / n_gen;
}

uint64_t bench_model_size(const model *m) {
    uint64_t n = 0;
    for (uint64_t i = 0; i < m->gguf->n_tensors; i++) n += m->gguf->tensors[i].nbytes;
    return n;
}

int bench_test_n_ctx(const bench_test *t) { return t->n_prompt + t->n_gen + t->n_depth; }


/* xorshift64*: the benchmark's token ids (any ids will do; they only must be valid). */
static int32_t next_token(uint64_t *s, int n_vocab) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return (int32_t)((*s * 2685821657736338717ull >> 33) % (uint64_t)n_vocab);
}

/* n tokens through model_eval in calls of n_batch, starting with BOS when first (and the
 * model has one); logits of each call's last token into logits. */
static int feed_prompt(model_ctx *c, int n, int n_batch, bool first, uint64_t *rng, int32_t *toks, float *logits) {
    const model *m = model_ctx_model(c);
    const int nv = m->hp.n_vocab;
    const int32_t bos = tokenizer_bos(m->tok);
    if (n_batch <= 0) n_batch = n;
    for (int done = 0; done < n;) {
        int nt = n - done < n_batch ? n - done : n_batch;
        for (int i = 0; i < nt; i++) toks[i] = next_token(rng, nv);
        if (first && done == 0 && bos >= 0 && tokenizer_add_bos(m->tok)) toks[0] = bos;
        if (model_eval(c, toks, nt, logits, false) != 0) return -1;
        done += nt;
    }
    return 0;
}

static int gen_tokens(model_ctx *c, int n, uint64_t *rng, float *logits) {
    const model *m = model_ctx_model(c);
    const int32_t bos = tokenizer_bos(m->tok);
    int32_t tok = bos >= 0 && tokenizer_add_bos(m->tok) ? bos : next_token(rng, m->hp.n_vocab);
    for (int i = 0; i < n; i++) {
        if (model_eval(c, &tok, 1, logits, false) != 0) return -1;
        tok = next_token(rng, m->hp.n_vocab);
    }
    return 0;
}

int bench_run(model_ctx *c, const bench_test *t, uint64_t *samples_ns) {
    if (t->reps < 1 || t->n_prompt < 0 || t->n_gen < 0 || t->n_depth < 0 || (t->n_prompt == 0) == (t->n_gen == 0)) {
        anv_set_error("bench: a test is either pp (n_prompt > 0) or tg (n_gen > 0), with reps >= 1");
        return -1;
    }
    if (bench_test_n_ctx(t) > model_ctx_n_ctx(c)) {
        anv_set_error("bench: the test needs a context of %d tokens, the cache has %d", bench_test_n_ctx(t), model_ctx_n_ctx(c));
        return -1;
    }
    const model *m = model_ctx_model(c);
    int max_batch = t->n_prompt > t->n_depth ? t->n_prompt : t->n_depth;
    if (t->n_batch > 0 && t->n_batch < max_batch) max_batch = t->n_batch;
    if (max_batch < 1) max_batch = 1;
    int32_t *toks = malloc(sizeof *toks * (size_t)max_batch);
    float *logits = malloc(sizeof *logits * (size_t)m->hp.n_vocab);
    if (!toks || !logits) {
        free(toks);
        free(logits);
        anv_set_error("out of memory");
        return -1;
    }
    uint64_t rng = t->seed ? t->seed : 0x9E3779B97F4A7C15ull;
    int rc = -1;
    if (!t->no_warmup) {
        model_ctx_reset(c);
        if (t->n_prompt > 0 ? feed_prompt(c, t->n_prompt, t->n_batch, true, &rng, toks, logits)
                            : gen_tokens(c, 1, &rng, logits))
            goto done;
    }
    for (int r = 0; r < t->reps; r++) {
        model_ctx_reset(c);
        if (t->n_depth > 0 && feed_prompt(c, t->n_depth, t->n_batch, true, &rng, toks, logits) != 0) goto done;
        const uint64_t t0 = (uint64_t)anv_mono_ns();
        if (t->n_prompt > 0 ? feed_prompt(c, t->n_prompt, t->n_batch, t->n_depth == 0, &rng, toks, logits)
                            : gen_tokens(c, t->n_gen, &rng, logits))
            goto done;
        samples_ns[r] = (uint64_t)anv_mono_ns() - t0;
        if (samples_ns[r] == 0) samples_ns[r] = 1;
    }
    rc = 0;
done:
    model_ctx_reset(c);
    free(toks);
    free(logits);
    return rc;
}

bench_stats bench_stats_of(const double *x, int n) {
    bench_stats s = {0, 0};
    if (n <= 0) return s;
    for (int i = 0; i < n; i++) s.mean += x[i];
    s.mean /= n;
    if (n > 1) {
        double ss = 0;
        for (int i = 0; i < n; i++) ss += (x[i] - s.mean) * (x[i] - s.mean);
        s.stddev = sqrt(ss / (n - 1));
    }
    return s;
}

void bench_samples_ts(const uint64_t *samples_ns, int n, int n_tokens, double *ts) {
    for (int i = 0; i < n; i++) ts[i] = 1e9 * n_tokens / (double)samples_ns[i];
}
