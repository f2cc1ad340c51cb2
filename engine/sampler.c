/* sampler: turns next-token logits into a token id. Implements engine/sampler.h with the
 * order of llama.cpp's default chain as Ollama configures it:
 *   penalties -> top_k -> top_p -> min_p -> temperature -> dist
 * top_p and min_p judge probabilities at temperature 1 (before temperature is applied),
 * exactly like llama.cpp. temperature <= 0 means greedy (argmax after the penalties).
 *
 * Cost per token is O(n_vocab): top-k is a partial selection (quickselect) plus a sort of
 * the k survivors; top-p without top-k sorts only the head of the distribution (256
 * candidates, growing x4 while the nucleus is not yet complete). NaN logits are treated
 * as -inf, +inf as FLT_MAX. The RNG is xoshiro256** seeded through splitmix64. */
#include "sampler.h"

#include "error.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    float logit;
    int32_t id;
} candidate;

struct sampler {
    sampler_params p;
    int32_t n_vocab;
    candidate *cand;   /* n_vocab scratch candidates */
    int32_t *counts;   /* occurrences of each token inside the penalty window */
    int32_t *ring;     /* last repeat_last_n accepted tokens (NULL when unbounded/disabled) */
    int32_t ring_len, ring_head;
    uint64_t rng[4];
    uint64_t pivot_state; /* quickselect pivots: separate from the sampling RNG */
};

/* ---- random numbers ------------------------------------------------------------------ */

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t rotl64(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t xoshiro_next(uint64_t s[4]) {
    uint64_t result = rotl64(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl64(s[3], 45);
    return result;
}

/* Uniform double in [0, 1) with 53 random bits. */
static double rng_uniform(sampler *s) { return (double)(xoshiro_next(s->rng) >> 11) * 0x1.0p-53; }

static uint64_t time_seed(const void *salt) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
    x ^= (uint64_t)getpid() << 32;
    x ^= (uint64_t)(uintptr_t)salt;
    return x ? x : 1;
}

static void seed_rng(sampler *s) {
    uint64_t x = s->p.seed ? s->p.seed : time_seed(s);
    for (int i = 0; i < 4; i++) s->rng[i] = splitmix64(&x);
    s->pivot_state = splitmix64(&x);
}

/* ---- parameters ---------------------------------------------------------------------- */

void sampler_params_default(sampler_params *p) {
    p->temperature = 0.8f;
    p->top_k = 40;
    p->top_p = 0.9f;
    p->min_p = 0.0f;
    p->repeat_penalty = 1.1f;
    p->repeat_last_n = 64;
    p->presence_penalty = 0.0f;
    p->frequency_penalty = 0.0f;
    p->seed = 0;
}

static int check_params(const sampler_params *p) {
    if (isnan(p->temperature) || isnan(p->top_p) || isnan(p->min_p) || isnan(p->presence_penalty) ||
        isnan(p->frequency_penalty) || isnan(p->repeat_penalty)) {
        anv_set_error("sampler: a sampling parameter is NaN");
        return -1;
    }
    if (!(p->repeat_penalty > 0.0f) || isinf(p->repeat_penalty)) {
        anv_set_error("sampler: repeat_penalty must be a positive finite number (got %g)", (double)p->repeat_penalty);
        return -1;
    }
    if (p->repeat_last_n < -1) {
        anv_set_error("sampler: repeat_last_n must be >= -1 (got %d)", p->repeat_last_n);
        return -1;
    }
    return 0;
}

sampler *sampler_new(const sampler_params *p, int32_t n_vocab) {
    sampler_params defaults;
    if (!p) {
        sampler_params_default(&defaults);
        p = &defaults;
    }
    if (n_vocab <= 0) {
        anv_set_error("sampler: vocabulary size must be positive (got %d)", n_vocab);
        return NULL;
    }
    if (check_params(p) != 0) return NULL;
    sampler *s = calloc(1, sizeof(*s));
    if (!s) goto oom;
    s->p = *p;
    s->n_vocab = n_vocab;
    s->cand = malloc((size_t)n_vocab * sizeof(*s->cand));
    s->counts = calloc((size_t)n_vocab, sizeof(*s->counts));
    if (!s->cand || !s->counts) goto oom;
    if (p->repeat_last_n > 0) {
        s->ring = malloc((size_t)p->repeat_last_n * sizeof(*s->ring));
        if (!s->ring) goto oom;
    }
    seed_rng(s);
    return s;
oom:
    sampler_free(s);
    anv_set_error("sampler: out of memory for a vocabulary of %d tokens", n_vocab);
    return NULL;
}

void sampler_free(sampler *s) {
    if (!s) return;
    free(s->cand);
    free(s->counts);
    free(s->ring);
    free(s);
}

void sampler_reset(sampler *s) {
    if (!s) return;
    memset(s->counts, 0, (size_t)s->n_vocab * sizeof(*s->counts));
    s->ring_len = 0;
    s->ring_head = 0;
}

/* ---- penalty history ----------------------------------------------------------------- */

void sampler_accept(sampler *s, int32_t token) {
    if (!s) return;
    if (token < 0 || token >= s->n_vocab) {
        anv_set_error("sampler: accepted token %d is outside the vocabulary (0..%d)", token, s->n_vocab - 1);
        return;
    }
    int last_n = s->p.repeat_last_n;
    if (last_n == 0) return;
    s->counts[token]++;
    if (last_n < 0) return; /* whole history: counts only grow until reset */
    if (s->ring_len == last_n) {
        int32_t old = s->ring[s->ring_head];
        s->counts[old]--;
        s->ring[s->ring_head] = token;
        s->ring_head = (s->ring_head + 1) % last_n;
    } else {
        s->ring[(s->ring_head + s->ring_len) % last_n] = token;
        s->ring_len++;
    }
}

static int penalties_enabled(const sampler_params *p) {
    return p->repeat_last_n != 0 &&
           (p->repeat_penalty != 1.0f || p->frequency_penalty != 0.0f || p->presence_penalty != 0.0f);
}

/* Repeat penalty divides positive logits and multiplies the others (llama.cpp); then
 * frequency (per occurrence) and presence (once) are subtracted, as in OpenAI's API. */
static void apply_penalties(const sampler *s, float *logits) {
    const sampler_params *p = &s->p;
    for (int32_t i = 0; i < s->n_vocab; i++) {
        int32_t c = s->counts[i];
        if (c == 0) continue;
        float l = logits[i];
        if (l <= 0) l *= p->repeat_penalty;
        else l /= p->repeat_penalty;
        l -= (float)c * p->frequency_penalty + p->presence_penalty;
        logits[i] = l;
    }
}

/* ---- candidate selection ------------------------------------------------------------- */

/* Strict order: higher logit first, lower id first among equal logits. */
static inline int better(const candidate *a, const candidate *b) {
    return a->logit > b->logit || (a->logit == b->logit && a->id < b->id);
}

static int cmp_candidates(const void *pa, const void *pb) {
    const candidate *a = pa, *b = pb;
    if (better(a, b)) return -1;
    if (better(b, a)) return 1;
    return 0;
}

static inline void swap_cand(candidate *a, candidate *b) {
    candidate t = *a;
    *a = *b;
    *b = t;
}

/* Rearranges c[0..n) so that c[0..k) holds the k best candidates (in no order).
 * Quickselect with random pivots: expected O(n); ids make all keys distinct. */
static void select_top(sampler *s, candidate *c, int32_t n, int32_t k) {
    int32_t lo = 0, hi = n - 1;
    while (lo < hi) {
        int32_t pi = lo + (int32_t)(splitmix64(&s->pivot_state) % (uint64_t)(hi - lo + 1));
        swap_cand(&c[pi], &c[hi]);
        candidate pivot = c[hi];
        int32_t store = lo;
        for (int32_t i = lo; i < hi; i++) {
            if (better(&c[i], &pivot)) swap_cand(&c[i], &c[store++]);
        }
        swap_cand(&c[store], &c[hi]);
        /* c[lo..store) better than pivot, c[store] = pivot, rest worse */
        if (store == k || store == k - 1) return;
        if (store < k) lo = store + 1;
        else hi = store - 1;
    }
}

/* Sorts the best `want` of c[from..n) into c[from..from+want). */
static void sort_head(sampler *s, candidate *c, int32_t from, int32_t n, int32_t want) {
    if (want < n - from) select_top(s, c + from, n - from, want);
    qsort(c + from, (size_t)want, sizeof(*c), cmp_candidates);
}

/* Keeps the smallest set of most probable candidates whose probability (at temperature 1)
 * reaches top_p. Returns the new count; c[0..count) is sorted on return. */
static int32_t apply_top_p(sampler *s, candidate *c, int32_t n, int sorted, float max_l) {
    double total = 0.0;
    for (int32_t i = 0; i < n; i++) total += exp((double)c[i].logit - max_l);
    double target = (double)s->p.top_p * total, cum = 0.0;
    int32_t done = sorted ? n : 0; /* c[0..done) is sorted */
    int32_t chunk = 256;
    for (int32_t i = 0; i < n; i++) {
        if (i == done) {
            int32_t want = n - done < chunk ? n - done : chunk;
            sort_head(s, c, done, n, want);
            done += want;
            chunk = chunk > n / 4 ? n : chunk * 4;
        }
        cum += exp((double)c[i].logit - max_l);
        if (cum >= target) return i + 1;
    }
    return n;
}

/* Keeps candidates with p >= min_p * p_max, i.e. logit >= max + log(min_p). Keeps order. */
static int32_t apply_min_p(const sampler *s, candidate *c, int32_t n, float max_l, int32_t best) {
    float min_logit = max_l + logf(s->p.min_p);
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++) {
        if (c[i].logit >= min_logit) c[m++] = c[i];
    }
    if (m == 0) { /* only when min_p > 1: keep the most probable token, like llama.cpp */
        c[0].logit = max_l;
        c[0].id = best;
        m = 1;
    }
    return m;
}

/* ---- sampling ------------------------------------------------------------------------ */

static float clean_logit(float l) {
    if (isnan(l)) return -INFINITY;
    if (l == INFINITY) return FLT_MAX;
    return l;
}

int32_t sampler_sample(sampler *s, float *logits) {
    if (!s || !logits) {
        anv_set_error("sampler: sampler_sample called with a NULL %s", s ? "logits array" : "sampler");
        return -1;
    }
    const sampler_params *p = &s->p;
    int32_t n_vocab = s->n_vocab;
    for (int32_t i = 0; i < n_vocab; i++) logits[i] = clean_logit(logits[i]);
    if (penalties_enabled(p)) apply_penalties(s, logits);

    /* candidates: every token that is not -inf; track the maximum */
    candidate *c = s->cand;
    int32_t n = 0, best = -1;
    float max_l = -INFINITY;
    for (int32_t i = 0; i < n_vocab; i++) {
        float l = clean_logit(logits[i]); /* penalties can overflow to +inf */
        if (l == -INFINITY) continue;
        if (l > max_l) {
            max_l = l;
            best = i;
        }
        c[n].logit = l;
        c[n].id = i;
        n++;
    }
    if (n == 0) {
        anv_set_error("sampler: every logit is -inf or NaN, no token can be sampled");
        return -1;
    }
    if (p->temperature <= 0.0f || n == 1) return best; /* greedy: first maximum */

    int sorted = 0;
    if (p->top_k > 0 && p->top_k < n) {
        sort_head(s, c, 0, n, p->top_k);
        n = p->top_k;
        sorted = 1;
    }
    if (p->top_p < 1.0f) {
        n = apply_top_p(s, c, n, sorted, max_l);
        sorted = 1;
    }
    if (p->min_p > 0.0f) n = apply_min_p(s, c, n, max_l, best);

    /* temperature + dist: p_i ~ exp((l_i - max) / T) */
    double inv_t = 1.0 / (double)p->temperature, total = 0.0;
    for (int32_t i = 0; i < n; i++) {
        float w = (float)exp(((double)c[i].logit - max_l) * inv_t);
        c[i].logit = w; /* reuse the slot for the weight */
        total += w;
    }
    double target = rng_uniform(s) * total, cum = 0.0;
    for (int32_t i = 0; i < n; i++) {
        cum += c[i].logit;
        if (cum > target) return c[i].id;
    }
    /* rounding left target at the very top: take the last candidate with weight */
    for (int32_t i = n - 1; i >= 0; i--) {
        if (c[i].logit > 0.0f) return c[i].id;
    }
    return best;
}
