/* sampler: turns next-token logits into a token id. Implements engine/generate/sampler.h with the
 * order of llama.cpp's default chain as Ollama configures it:
 *   penalties -> top_k -> top_p -> min_p -> temperature -> dist
 * top_p and min_p judge probabilities at temperature 1 (before temperature is applied),
 * exactly like llama.cpp. temperature <= 0 means greedy (argmax after the penalties).
 *
 * Cost per token is O(n_vocab), not a sort of the vocabulary: top-k is one pass with a
 * k-entry heap; top-p without top-k histograms the probability mass over logit intervals
 * and sorts only the interval where the nucleus ends; penalties visit only the window.
 * (~0.4 ms per token for 262144 logits with the defaults on one core.)
 * Ties are broken by the lower token id. NaN logits count as -inf, +inf as FLT_MAX.
 * The RNG is xoshiro256** seeded through splitmix64 (seed 0: clock, pid and address). */
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
    candidate *cand2;  /* n_vocab scratch: the top-p boundary bin */
    int32_t *counts;   /* occurrences of each token inside the penalty window */
    int32_t *ring;     /* last repeat_last_n accepted tokens (NULL when unbounded/disabled) */
    int32_t ring_len, ring_head;
    uint64_t rng[4];
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
}

/* ---- parameters ---------------------------------------------------------------------- */

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
    s->cand2 = malloc((size_t)n_vocab * sizeof(*s->cand2));
    s->counts = calloc((size_t)n_vocab, sizeof(*s->counts));
    if (!s->cand || !s->cand2 || !s->counts) goto oom;
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
    free(s->cand2);
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
static float penalize(const sampler_params *p, float l, int32_t count) {
    if (l <= 0) l *= p->repeat_penalty;
    else l /= p->repeat_penalty;
    return l - ((float)count * p->frequency_penalty + p->presence_penalty);
}

static void apply_penalties(sampler *s, float *logits) {
    if (s->p.repeat_last_n < 0) { /* unbounded history: scan the whole vocabulary */
        for (int32_t i = 0; i < s->n_vocab; i++) {
            if (s->counts[i] > 0) logits[i] = penalize(&s->p, logits[i], s->counts[i]);
        }
        return;
    }
    /* O(window): visit each distinct token of the window once, marking it by negating its
     * count, then restore the counts */
    int32_t last_n = s->p.repeat_last_n;
    for (int32_t j = 0; j < s->ring_len; j++) {
        int32_t t = s->ring[(s->ring_head + j) % last_n];
        if (s->counts[t] > 0) {
            logits[t] = penalize(&s->p, logits[t], s->counts[t]);
            s->counts[t] = -s->counts[t];
        }
    }
    for (int32_t j = 0; j < s->ring_len; j++) {
        int32_t t = s->ring[(s->ring_head + j) % last_n];
        if (s->counts[t] < 0) s->counts[t] = -s->counts[t];
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

/* Min-heap (worst candidate at the root) of the k best seen so far. */
static void heap_sift_down(candidate *h, int32_t k, int32_t i) {
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < k && better(&h[w], &h[l])) w = l;
        if (r < k && better(&h[w], &h[r])) w = r;
        if (w == i) return;
        candidate t = h[i];
        h[i] = h[w];
        h[w] = t;
        i = w;
    }
}

/* top_k: the k best finite logits, sorted best first, into c[0..k). One pass with a
 * k-heap; most tokens cost one comparison against the heap's worst entry. */
static void select_top_k(candidate *c, const float *logits, int32_t n_vocab, int32_t k) {
    int32_t m = 0;
    int32_t i = 0;
    for (; i < n_vocab && m < k; i++) {
        if (logits[i] == -INFINITY) continue;
        c[m].logit = logits[i];
        c[m].id = i;
        m++;
    }
    for (int32_t j = k / 2 - 1; j >= 0; j--) heap_sift_down(c, k, j);
    for (; i < n_vocab; i++) {
        float l = logits[i];
        if (l > c[0].logit) { /* equal logits lose: a later id is worse */
            c[0].logit = l;
            c[0].id = i;
            heap_sift_down(c, k, 0);
        }
    }
    qsort(c, (size_t)k, sizeof(*c), cmp_candidates);
}

/* top_p on sorted candidates: the shortest prefix whose probability (temperature 1)
 * reaches top_p. */
static int32_t top_p_sorted(const candidate *c, int32_t n, float top_p, float max_l) {
    double total = 0.0, cum = 0.0;
    for (int32_t i = 0; i < n; i++) total += expf(c[i].logit - max_l);
    double target = (double)top_p * total;
    for (int32_t i = 0; i < n; i++) {
        cum += expf(c[i].logit - max_l);
        if (cum >= target) return i + 1;
    }
    return n;
}

/* top_p on unsorted candidates in O(n): histogram the probability mass over TOP_P_BINS
 * equal logit intervals, keep every bin above the one where the mass reaches top_p, and
 * sort only that boundary bin to cut it exactly. Same set as sorting everything. */
enum { TOP_P_BINS = 2048 };

static inline int32_t bin_of(float l, float max_l, float scale) {
    float f = (max_l - l) * scale; /* may be +inf for extreme ranges: clamped */
    return f < (float)(TOP_P_BINS - 1) ? (int32_t)f : TOP_P_BINS - 1;
}

static int32_t top_p_unsorted(sampler *s, candidate *c, int32_t n, float top_p, float max_l) {
    float min_l = max_l;
    for (int32_t i = 0; i < n; i++) min_l = c[i].logit < min_l ? c[i].logit : min_l;
    double range = (double)max_l - (double)min_l;
    if (!(range > 1e-30)) {
        /* all equal: c is in id order, which is already the sorted order; a spread of a
         * few denormals (too narrow to histogram) is sorted outright */
        if (range > 0.0) qsort(c, (size_t)n, sizeof(*c), cmp_candidates);
        return top_p_sorted(c, n, top_p, max_l);
    }
    float scale = (float)((TOP_P_BINS - 1) / range); /* finite and > 0 */
    double mass[TOP_P_BINS] = {0};
    double total = 0.0;
    for (int32_t i = 0; i < n; i++) {
        float w = expf(c[i].logit - max_l);
        mass[bin_of(c[i].logit, max_l, scale)] += w;
        total += w;
    }
    double target = (double)top_p * total, cum = 0.0;
    int32_t b = 0;
    while (b < TOP_P_BINS - 1 && cum + mass[b] < target) cum += mass[b++];
    /* one pass: bins above b move to the front, bin b is gathered, the rest dropped */
    int32_t keep = 0, nb = 0;
    candidate *bin = s->cand2;
    for (int32_t i = 0; i < n; i++) {
        int32_t bi = bin_of(c[i].logit, max_l, scale);
        if (bi < b) c[keep++] = c[i];
        else if (bi == b) bin[nb++] = c[i];
    }
    qsort(bin, (size_t)nb, sizeof(*bin), cmp_candidates);
    for (int32_t j = 0; j < nb; j++) {
        c[keep++] = bin[j];
        cum += expf(bin[j].logit - max_l);
        if (cum >= target) break;
    }
    return keep;
}

/* min_p: keeps candidates with p >= min_p * p_max, i.e. logit >= max + log(min_p). */
static int32_t apply_min_p(candidate *c, int32_t n, float min_p, float max_l, int32_t best) {
    float min_logit = max_l + logf(min_p);
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
    if (penalties_enabled(p)) apply_penalties(s, logits);

    /* one pass: clean the logits (NaN -> -inf, +inf -> FLT_MAX, also where a penalty
     * overflowed), count the finite ones, find the first maximum */
    int32_t n = 0, best = -1;
    float max_l = -INFINITY;
    for (int32_t i = 0; i < n_vocab; i++) {
        float l = clean_logit(logits[i]);
        logits[i] = l;
        n += l != -INFINITY;
        if (l > max_l) {
            max_l = l;
            best = i;
        }
    }
    if (n == 0) {
        anv_set_error("sampler: every logit is -inf or NaN, no token can be sampled");
        return -1;
    }
    if (p->temperature <= 0.0f || n == 1) return best; /* greedy: the first maximum */

    candidate *c = s->cand;
    if (p->top_k > 0 && p->top_k < n) {
        n = p->top_k;
        select_top_k(c, logits, n_vocab, n);
        if (p->top_p < 1.0f) n = top_p_sorted(c, n, p->top_p, max_l);
    } else {
        int32_t m = 0;
        for (int32_t i = 0; i < n_vocab; i++) {
            if (logits[i] == -INFINITY) continue;
            c[m].logit = logits[i];
            c[m].id = i;
            m++;
        }
        if (p->top_p < 1.0f) n = top_p_unsorted(s, c, n, p->top_p, max_l);
    }
    if (p->min_p > 0.0f) n = apply_min_p(c, n, p->min_p, max_l, best);

    /* temperature + dist: p_i ~ exp((l_i - max) / T) */
    float inv_t = 1.0f / p->temperature;
    double total = 0.0;
    for (int32_t i = 0; i < n; i++) {
        float d = c[i].logit - max_l;
        float w = d == 0.0f ? 1.0f : expf(d * inv_t); /* inv_t may be inf for tiny T */
        c[i].logit = w; /* the slot now holds the weight */
        total += w;
    }
    double target = rng_uniform(s) * total, cum = 0.0;
    for (int32_t i = 0; i < n; i++) {
        cum += c[i].logit;
        if (cum > target) return c[i].id;
    }
    /* rounding left the target at the very top: the last candidate with weight */
    for (int32_t i = n - 1; i >= 0; i--) {
        if (c[i].logit > 0.0f) return c[i].id;
    }
    return best;
}
