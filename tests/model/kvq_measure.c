/* kvq_measure: what the KV cache type costs one model on one backend (a tool for the README
 * numbers of issue 19, not a ctest test; tests/model/kv_quant_kl.py is the test): the text's
 * first N tokens are evaluated with an f16 cache and again with q8_0 and q4_0 caches; over the
 * second half of the positions (as llama-perplexity scores a chunk) it prints KL(f16 || type)
 * mean / max, the share of positions whose top-1 token agrees with f16, the perplexity, and
 * the cache bytes per token per layer (K + V rows as allocated: qtype_row_size of the type).
 * Usage: kvq_measure MODEL.gguf TEXT.txt [--ctx N] [--vulkan] [-t THREADS]
 * (--vulkan: lavapipe, or Vulkan device $ANVIL_VK_TEST_DEVICE; every layer on it). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "model_place.h"
#include "quant.h"
#include "tokenizer.h"
#include "vk_testlib.h"

/* log-softmax of n logits in place */
static void log_softmax(float *l, int n) {
    double mx = -INFINITY, s = 0;
    for (int i = 0; i < n; i++) mx = l[i] > mx ? l[i] : mx;
    for (int i = 0; i < n; i++) s += exp((double)l[i] - mx);
    const double lse = mx + log(s);
    for (int i = 0; i < n; i++) l[i] = (float)((double)l[i] - lse);
}

static int argmax(const float *l, int n) {
    int b = 0;
    for (int i = 1; i < n; i++) if (l[i] > l[b]) b = i;
    return b;
}

/* Logprobs of positions [first, n - 1) (row r = position first + r), evaluating in chunks. */
static int eval_type(model *m, const int32_t *toks, int n, int first, uint32_t kv, float *lp) {
    const int V = m->hp.n_vocab;
    model_ctx *c = model_ctx_new(m, n, kv);
    if (!c) { fprintf(stderr, "kvq_measure: %s\n", anv_last_error()); return -1; }
    float *last = malloc((size_t)V * sizeof(float));
    int rc = last ? model_eval(c, toks, first, last, false) : -1;
    for (int p = first; rc == 0 && p < n - 1; p += 16) {
        const int k = n - 1 - p < 16 ? n - 1 - p : 16;
        rc = model_eval(c, toks + p, k, lp + (size_t)(p - first) * V, true);
    }
    if (rc != 0) fprintf(stderr, "kvq_measure: eval with %s KV: %s\n", qtype_get(kv)->name, anv_last_error());
    for (int r = 0; rc == 0 && r < n - 1 - first; r++) log_softmax(lp + (size_t)r * V, V);
    free(last);
    model_ctx_free(c);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: kvq_measure MODEL.gguf TEXT.txt [--ctx N] [--vulkan] [-t THREADS]\n"); return 2; }
    int n_ctx = 256, threads = 2;
    bool vulkan = false;
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--ctx") && i + 1 < argc) n_ctx = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-t") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--vulkan")) vulkan = true;
        else { fprintf(stderr, "kvq_measure: unknown argument %s\n", argv[i]); return 2; }
    }
    backend *gpu = NULL;
#ifdef ANVIL_HAVE_VULKAN
    if (vulkan && !(gpu = vkt_open_lavapipe())) return 1;
#else
    if (vulkan) { fprintf(stderr, "kvq_measure: built without Vulkan\n"); return 1; }
#endif
    model *m = model_load_with(argv[1], threads, gpu, -1);
    if (!m) { fprintf(stderr, "kvq_measure: %s: %s\n", argv[1], anv_last_error()); return 1; }
    if (gpu) m->owns_gpu = true;
    size_t len = 0;
    char *text = tu_read_file(argv[2], &len);
    int n_tok = 0;
    int32_t *toks = text ? tokenizer_encode(m->tok, text, len, true, false, &n_tok) : NULL;
    if (!toks || n_tok < n_ctx) { fprintf(stderr, "kvq_measure: %s has %d tokens, fewer than --ctx %d\n", argv[2], n_tok, n_ctx); return 1; }
    const int V = m->hp.n_vocab, first = n_ctx / 2, n_pos = n_ctx - 1 - first;
    const int64_t kvd = (int64_t)m->hp.n_kv_head * m->hp.head_dim_k;
    float *ref = malloc((size_t)n_pos * V * sizeof(float)), *lp = malloc((size_t)n_pos * V * sizeof(float));
    if (!ref || !lp || eval_type(m, toks, n_ctx, first, QT_F16, ref) != 0) return 1;
    printf("model %s, backend %s, %d positions scored of %d, vocab %d, %d layers, K/V row %lld elements\n", argv[1],
           gpu ? gpu->device_desc : "cpu", n_pos, n_ctx, V, m->hp.n_layer, (long long)kvd);
    const uint32_t types[3] = {QT_F16, QT_Q8_0, QT_Q4_0};
    for (int ti = 0; ti < 3; ti++) {
        if (ti > 0 && eval_type(m, toks, n_ctx, first, types[ti], lp) != 0) return 1;
        const float *cur = ti == 0 ? ref : lp;
        double kl_sum = 0, kl_max = 0, nll = 0;
        int agree = 0;
        for (int r = 0; r < n_pos; r++) {
            const float *a = ref + (size_t)r * V, *b = cur + (size_t)r * V;
            double kl = 0;
            for (int i = 0; i < V; i++) kl += exp((double)a[i]) * ((double)a[i] - b[i]);
            kl_sum += kl;
            kl_max = kl > kl_max ? kl : kl_max;
            agree += argmax(a, V) == argmax(b, V);
            nll -= b[toks[first + r + 1]];
        }
        printf("kv %-5s %4zu B/token/layer  KL vs f16 mean %.3e max %.3e  top-1 same %.1f%%  PPL %.4f\n", qtype_get(types[ti])->name,
               2 * qtype_row_size((qtype)types[ti], kvd), kl_sum / n_pos, kl_max, 100.0 * agree / n_pos, exp(nll / n_pos));
    }
    free(ref); free(lp); free(toks); free(text);
    model_free(m);
    return 0;
}
