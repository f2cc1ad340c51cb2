/* test_sampler: checks engine/generate/sampler.c against an independent reference of llama.cpp's
 * chain (penalties -> top_k -> top_p -> min_p -> temperature -> dist): greedy, seeding,
 * empirical distributions (chi-square against the expected restricted softmax, with a
 * negative control proving the check has power), penalties, and edge cases. */
#include "error.h"
#include "sampler.h"
#include "testutil.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- reference model of the expected distribution ----------------------------------- */

static const float *g_sort_logits;

static int cmp_desc(const void *pa, const void *pb) {
    int a = *(const int *)pa, b = *(const int *)pb;
    float la = g_sort_logits[a], lb = g_sort_logits[b];
    if (la > lb) return -1;
    if (la < lb) return 1;
    return a - b; /* ties: lower id first (the sampler's documented tie-break) */
}

/* Fills probs[n] with the distribution the sampler should draw from (no penalties):
 * the top-k/top-p/min-p survivor set judged at temperature 1, then softmax(l / T). */
static void reference_probs(const float *logits, int n, const sampler_params *p, double *probs) {
    int *order = malloc((size_t)n * sizeof(int));
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (!isnan(logits[i]) && logits[i] != -INFINITY) order[m++] = i;
    }
    g_sort_logits = logits;
    qsort(order, (size_t)m, sizeof(int), cmp_desc);
    if (p->top_k > 0 && p->top_k < m) m = p->top_k;
    double max_l = logits[order[0]];
    if (p->top_p < 1.0f) {
        double total = 0, cum = 0;
        for (int i = 0; i < m; i++) total += exp(logits[order[i]] - max_l);
        for (int i = 0; i < m; i++) {
            cum += exp(logits[order[i]] - max_l) / total;
            if (cum >= p->top_p) {
                m = i + 1;
                break;
            }
        }
    }
    if (p->min_p > 0.0f) {
        int keep = 0;
        for (int i = 0; i < m; i++) {
            if (logits[order[i]] >= (float)max_l + logf(p->min_p)) order[keep++] = order[i];
        }
        m = keep;
    }
    memset(probs, 0, (size_t)n * sizeof(double));
    double total = 0;
    for (int i = 0; i < m; i++) total += exp((logits[order[i]] - max_l) / p->temperature);
    for (int i = 0; i < m; i++) probs[order[i]] = exp((logits[order[i]] - max_l) / p->temperature) / total;
    free(order);
}

/* Pearson chi-square of counts against probs, tokens grouped (most probable first) into
 * bins of >= 10 expected draws. Returns the statistic, *crit = the Wilson-Hilferty
 * critical value at z = 4.5 (false-alarm rate ~3e-6), *outside = draws of p = 0 tokens. */
static double chi_square(const int *counts, const double *probs, int n, int draws, double *crit, int *outside) {
    int *order = malloc((size_t)n * sizeof(int));
    float *key = malloc((size_t)n * sizeof(float));
    for (int i = 0; i < n; i++) {
        order[i] = i;
        key[i] = (float)probs[i];
    }
    g_sort_logits = key;
    qsort(order, (size_t)n, sizeof(int), cmp_desc);
    *outside = 0;
    double chi2 = 0, e = 0, o = 0;
    int bins = 0;
    for (int r = 0; r < n; r++) {
        int t = order[r];
        if (probs[t] == 0.0) {
            *outside += counts[t];
            continue;
        }
        e += probs[t] * draws;
        o += counts[t];
        int last = (r + 1 == n) || probs[order[r + 1]] == 0.0;
        if (e >= 10.0 || last) {
            chi2 += (o - e) * (o - e) / e;
            bins++;
            e = o = 0;
        }
    }
    double df = bins > 1 ? bins - 1 : 1, z = 4.5;
    double a = 2.0 / (9.0 * df);
    *crit = df * pow(1.0 - a + z * sqrt(a), 3.0);
    free(order);
    free(key);
    return chi2;
}

static void fill_logits(float *l, int n, uint64_t seed, float lo, float hi) {
    uint64_t st = seed;
    for (int i = 0; i < n; i++) l[i] = tu_rand_f32(&st, lo, hi);
}

/* Draws `draws` tokens from logits (a fresh copy each time, empty history). */
static void draw_counts(sampler *s, const float *logits, int n, int draws, int *counts) {
    float *tmp = malloc((size_t)n * sizeof(float));
    memset(counts, 0, (size_t)n * sizeof(int));
    for (int d = 0; d < draws; d++) {
        memcpy(tmp, logits, (size_t)n * sizeof(float));
        int32_t t = sampler_sample(s, tmp);
        if (t >= 0 && t < n) counts[t]++;
    }
    free(tmp);
}

static sampler_params params(float temp, int top_k, float top_p, float min_p, uint64_t seed) {
    sampler_params p;
    sampler_params_default(&p);
    p.temperature = temp;
    p.top_k = top_k;
    p.top_p = top_p;
    p.min_p = min_p;
    p.seed = seed;
    return p;
}

/* Draws from the sampler and checks the counts against the reference distribution. With
 * `control`, the same counts must be rejected against the distribution at 1.5x the
 * temperature (proof that the check has the power to see a wrong temperature). */
static void check_distribution(const char *name, const float *logits, int n, sampler_params p, int draws,
                               int control) {
    int *counts = malloc((size_t)n * sizeof(int));
    double *probs = malloc((size_t)n * sizeof(double));
    sampler *s = sampler_new(&p, n);
    CHECK(s != NULL);
    draw_counts(s, logits, n, draws, counts);
    reference_probs(logits, n, &p, probs);
    double crit;
    int outside;
    double chi2 = chi_square(counts, probs, n, draws, &crit, &outside);
    CHECKF(outside == 0, "%s: %d draws outside the allowed set", name, outside);
    CHECKF(chi2 < crit, "%s: chi2 %.1f >= critical %.1f", name, chi2, crit);
    int in_set = 0;
    for (int i = 0; i < n; i++) in_set += probs[i] > 0;
    fprintf(stderr, "%s: %d tokens in set, chi2 %.1f (critical %.1f)\n", name, in_set, chi2, crit);

    if (control) {
        sampler_params wrong = p;
        wrong.temperature = p.temperature * 1.5f;
        reference_probs(logits, n, &wrong, probs);
        double chi2_wrong = chi_square(counts, probs, n, draws, &crit, &outside);
        CHECKF(chi2_wrong > crit, "%s: control (T x1.5) not rejected: chi2 %.1f < %.1f", name, chi2_wrong, crit);
        fprintf(stderr, "    control at T x1.5: chi2 %.1f\n", chi2_wrong);
    }
    sampler_free(s);
    free(counts);
    free(probs);
}

/* ---- tests --------------------------------------------------------------------------- */

static void test_defaults(void) {
    sampler_params p;
    sampler_params_default(&p);
    CHECK(p.temperature == 0.8f && p.top_k == 40 && p.top_p == 0.9f && p.min_p == 0.0f);
    CHECK(p.repeat_penalty == 1.0f && p.repeat_last_n == 64);
    CHECK(p.presence_penalty == 0.0f && p.frequency_penalty == 0.0f && p.seed == 0);
}

static int argmax(const float *l, int n) {
    int b = 0;
    for (int i = 1; i < n; i++) {
        if (l[i] > l[b]) b = i;
    }
    return b;
}

static void test_greedy(void) {
    enum { N = 5000 };
    static float logits[N], tmp[N];
    sampler_params p = params(0.0f, 40, 0.9f, 0.0f, 7);
    sampler *s = sampler_new(&p, N);
    sampler_params pneg = params(-1.0f, 0, 1.0f, 0.0f, 7);
    sampler *sneg = sampler_new(&pneg, N);
    sampler_params pk1 = params(0.8f, 1, 0.9f, 0.0f, 9);
    sampler *sk1 = sampler_new(&pk1, N);
    int ok = 1, ok_neg = 1, ok_k1 = 1;
    for (int trial = 0; trial < 20; trial++) {
        fill_logits(logits, N, 100 + trial, -10, 10);
        int want = argmax(logits, N);
        memcpy(tmp, logits, sizeof(tmp));
        ok &= sampler_sample(s, tmp) == want;
        memcpy(tmp, logits, sizeof(tmp));
        ok_neg &= sampler_sample(sneg, tmp) == want;
        memcpy(tmp, logits, sizeof(tmp));
        ok_k1 &= sampler_sample(sk1, tmp) == want; /* top_k = 1 is greedy at any temperature */
    }
    CHECK(ok);
    CHECK(ok_neg);
    CHECK(ok_k1);
    /* ties: the first maximum wins */
    for (int i = 0; i < N; i++) logits[i] = 1.0f;
    logits[17] = logits[4000] = 3.0f;
    CHECK(sampler_sample(s, logits) == 17);
    sampler_free(s);
    sampler_free(sneg);
    sampler_free(sk1);
}

static void sample_sequence(uint64_t seed, const float *logits, int n, int len, int32_t *out) {
    sampler_params p = params(1.0f, 0, 1.0f, 0.0f, seed);
    p.repeat_penalty = 1.0f;
    sampler *s = sampler_new(&p, n);
    float *tmp = malloc((size_t)n * sizeof(float));
    for (int i = 0; i < len; i++) {
        memcpy(tmp, logits, (size_t)n * sizeof(float));
        out[i] = sampler_sample(s, tmp);
        sampler_accept(s, out[i]);
    }
    free(tmp);
    sampler_free(s);
}

static void test_seeding(void) {
    enum { N = 1000, LEN = 200 };
    static float logits[N];
    static int32_t a[LEN], b[LEN], c[LEN];
    fill_logits(logits, N, 5, -1, 1);
    sample_sequence(1234, logits, N, LEN, a);
    sample_sequence(1234, logits, N, LEN, b);
    sample_sequence(1235, logits, N, LEN, c);
    CHECK(memcmp(a, b, sizeof(a)) == 0);
    int same = 0;
    for (int i = 0; i < LEN; i++) same += a[i] == c[i];
    CHECKF(same < LEN / 4, "seeds 1234 and 1235 agree on %d of %d draws", same, LEN);

    /* reset does not rewind the RNG but clears the history; seed 0 = time-based, and two
     * live samplers seeded from the clock still differ (their addresses salt the seed) */
    sampler_params p = params(1.0f, 0, 1.0f, 0.0f, 0);
    sampler *s0 = sampler_new(&p, N), *s1 = sampler_new(&p, N);
    float *tmp = malloc(N * sizeof(float));
    int differ = 0;
    for (int i = 0; i < LEN; i++) {
        memcpy(tmp, logits, sizeof(logits));
        int32_t x = sampler_sample(s0, tmp);
        memcpy(tmp, logits, sizeof(logits));
        int32_t y = sampler_sample(s1, tmp);
        CHECK(x >= 0 && x < N && y >= 0 && y < N);
        differ += x != y;
    }
    CHECKF(differ > LEN / 2, "two seed-0 samplers agree on %d of %d draws", LEN - differ, LEN);
    free(tmp);
    sampler_free(s0);
    sampler_free(s1);
}

static void test_distributions(void) {
    enum { N = 1000, DRAWS = 20000 };
    static float logits[N];
    fill_logits(logits, N, 42, -20, 20); /* top sets spanning a few units of logit */
    check_distribution("defaults T0.8 k40 p0.9", logits, N, params(0.8f, 40, 0.9f, 0.0f, 11), DRAWS, 1);
    check_distribution("T0.5 min_p0.05", logits, N, params(0.5f, 0, 1.0f, 0.05f, 14), DRAWS, 1);
    check_distribution("T1.2 k100 p0.95 min_p0.01", logits, N, params(1.2f, 100, 0.95f, 0.01f, 15), DRAWS, 1);
    fill_logits(logits, N, 43, -150, 150);
    check_distribution("T1 k10", logits, N, params(1.0f, 10, 1.0f, 0.0f, 12), DRAWS, 1);
    fill_logits(logits, N, 44, -3, 3); /* flat: a wide nucleus */
    check_distribution("T0.7 p0.95", logits, N, params(0.7f, 0, 0.95f, 0.0f, 13), DRAWS, 1);
    check_distribution("T1 full vocabulary", logits, N, params(1.0f, 0, 1.0f, 0.0f, 16), DRAWS, 1);

    /* Gemma-sized vocabulary: 1000 strong tokens over a flat background, then all flat */
    enum { BIG = 262144 };
    float *big = malloc(BIG * sizeof(float));
    fill_logits(big, BIG, 45, -2, 2);
    uint64_t st = 46;
    for (int i = 0; i < 1000; i++) big[(int)(tu_rand_u64(&st) % BIG)] = tu_rand_f32(&st, 0, 100);
    check_distribution("262144 vocab defaults", big, BIG, params(0.8f, 40, 0.9f, 0.0f, 17), 2000, 1);
    check_distribution("262144 vocab T0.6 p0.95", big, BIG, params(0.6f, 0, 0.95f, 0.0f, 18), 1500, 1);
    fill_logits(big, BIG, 47, -1, 1);
    check_distribution("262144 flat vocab T1 p0.5", big, BIG, params(1.0f, 0, 0.5f, 0.0f, 19), 1000, 0);
    free(big);
}

/* The exact top-p cut on a Gemma-sized vocabulary: 300 head tokens 0.001 apart (several
 * per histogram interval, so the boundary interval must be cut exactly), the rest far
 * below. At T = 1000 the kept set is drawn almost uniformly, so 2000 draws must hit
 * exactly the reference set (~20 draws per token; missing one has odds ~1e-7). */
static void test_top_p_boundary(void) {
    enum { BIG = 262144, HEAD = 300, DRAWS = 2000 };
    float *l = malloc(BIG * sizeof(float));
    int *counts = malloc(BIG * sizeof(int));
    double *probs = malloc(BIG * sizeof(double));
    for (int i = 0; i < BIG; i++) l[i] = -5.0f;
    uint64_t st = 77;
    for (int r = 0; r < HEAD;) {
        int id = (int)(tu_rand_u64(&st) % BIG);
        if (l[id] != -5.0f) continue;
        l[id] = 10.0f - 0.001f * (float)r++;
    }
    sampler_params p = params(1000.0f, 0, 0.33f, 0.0f, 21);
    sampler *s = sampler_new(&p, BIG);
    draw_counts(s, l, BIG, DRAWS, counts);
    reference_probs(l, BIG, &p, probs);
    int in_set = 0, wrong = 0;
    for (int i = 0; i < BIG; i++) {
        in_set += probs[i] > 0;
        wrong += (probs[i] > 0) != (counts[i] > 0);
    }
    CHECKF(wrong == 0 && in_set > 50 && in_set < HEAD, "top-p cut: %d tokens in set, %d mismatches", in_set, wrong);
    sampler_free(s);
    free(l);
    free(counts);
    free(probs);
}

static void test_penalties(void) {
    enum { N = 10 };
    float logits[N] = {2.0f, -1.0f, 3.0f, 0.5f, -2.0f, 4.0f, 1.0f, -0.5f, 0.0f, 1.5f};
    float l[N];
    sampler_params p = params(0.0f, 0, 1.0f, 0.0f, 1);
    p.repeat_penalty = 1.5f;
    p.repeat_last_n = 3;
    p.frequency_penalty = 0.25f;
    p.presence_penalty = 0.125f;
    sampler *s = sampler_new(&p, N);
    int32_t hist[] = {1, 3, 5, 5, 7}; /* window of the last 3: {5, 5, 7} */
    for (int i = 0; i < 5; i++) sampler_accept(s, hist[i]);
    memcpy(l, logits, sizeof(l));
    int32_t t = sampler_sample(s, l);
    for (int i = 0; i < N; i++) {
        float want = logits[i];
        if (i == 5) want = logits[5] / 1.5f - (2.0f * 0.25f + 0.125f); /* positive: divided */
        if (i == 7) want = logits[7] * 1.5f - (1.0f * 0.25f + 0.125f); /* negative: multiplied */
        CHECKF(l[i] == want, "token %d: %g, want %g", i, (double)l[i], (double)want);
    }
    CHECK(t == 2); /* 4.0 fell to 2.04 below token 2's 3.0 */

    sampler_accept(s, 9); /* window {5, 7, 9}: token 5 now counted once */
    memcpy(l, logits, sizeof(l));
    sampler_sample(s, l);
    CHECK(l[5] == logits[5] / 1.5f - (1.0f * 0.25f + 0.125f));
    CHECK(l[9] == logits[9] / 1.5f - (1.0f * 0.25f + 0.125f));
    CHECK(l[7] == logits[7] * 1.5f - (1.0f * 0.25f + 0.125f));
    CHECK(l[1] == logits[1] && l[3] == logits[3]);

    sampler_accept(s, -1); /* out of range: ignored with an error */
    sampler_accept(s, N);
    CHECK(strstr(anv_last_error(), "outside the vocabulary") != NULL);
    sampler_reset(s);
    memcpy(l, logits, sizeof(l));
    sampler_sample(s, l);
    CHECK(memcmp(l, logits, sizeof(l)) == 0);
    sampler_free(s);

    /* repeat_last_n = -1: the whole history; a zero logit is multiplied (stays 0) */
    p.repeat_last_n = -1;
    p.frequency_penalty = p.presence_penalty = 0.0f;
    s = sampler_new(&p, N);
    for (int i = 0; i < 100; i++) sampler_accept(s, 8);
    sampler_accept(s, 0);
    memcpy(l, logits, sizeof(l));
    sampler_sample(s, l);
    CHECK(l[8] == 0.0f && l[0] == logits[0] / 1.5f);
    for (int i = 1; i < 8; i++) CHECK(l[i] == logits[i]);
    sampler_free(s);

    /* repeat_last_n = 0 or all penalties neutral: nothing changes */
    p.repeat_last_n = 0;
    s = sampler_new(&p, N);
    sampler_accept(s, 5);
    memcpy(l, logits, sizeof(l));
    CHECK(sampler_sample(s, l) == 5 && memcmp(l, logits, sizeof(l)) == 0);
    sampler_free(s);
    p.repeat_last_n = 64;
    p.repeat_penalty = 1.0f;
    s = sampler_new(&p, N);
    sampler_accept(s, 5);
    memcpy(l, logits, sizeof(l));
    CHECK(sampler_sample(s, l) == 5 && memcmp(l, logits, sizeof(l)) == 0);
    sampler_free(s);

    /* a penalty of 1.1 over Ollama's default window, the last 64 tokens */
    sampler_params d;
    sampler_params_default(&d);
    d.temperature = 0.0f;
    d.repeat_penalty = 1.1f;
    s = sampler_new(&d, N);
    for (int i = 0; i < 64; i++) sampler_accept(s, i == 0 ? 2 : 4);
    memcpy(l, logits, sizeof(l));
    sampler_sample(s, l);
    CHECK(l[2] == 3.0f / 1.1f && l[4] == -2.0f * 1.1f);
    sampler_accept(s, 4); /* token 2 leaves the 64-token window */
    memcpy(l, logits, sizeof(l));
    sampler_sample(s, l);
    CHECK(l[2] == 3.0f && l[4] == -2.0f * 1.1f);
    sampler_free(s);
}

static void test_edge_cases(void) {
    enum { N = 50, DRAWS = 20000 };
    float l[N];
    int counts[N];
    double probs[N], crit;
    int outside;

    /* all-equal logits: greedy takes id 0; sampling is uniform over the kept set, and
     * top-k keeps the lowest ids among equal logits */
    for (int i = 0; i < N; i++) l[i] = 0.25f;
    sampler_params pg = params(0.0f, 40, 0.9f, 0.0f, 3);
    sampler *s = sampler_new(&pg, N);
    CHECK(sampler_sample(s, l) == 0);
    sampler_free(s);
    sampler_params pu = params(0.8f, 0, 1.0f, 0.0f, 4);
    s = sampler_new(&pu, N);
    draw_counts(s, l, N, DRAWS, counts);
    for (int i = 0; i < N; i++) probs[i] = 1.0 / N;
    double chi2 = chi_square(counts, probs, N, DRAWS, &crit, &outside);
    CHECKF(chi2 < crit && outside == 0, "uniform: chi2 %.1f crit %.1f", chi2, crit);
    sampler_free(s);
    sampler_params pk = params(0.8f, 20, 1.0f, 0.0f, 5);
    s = sampler_new(&pk, N);
    draw_counts(s, l, N, DRAWS, counts);
    for (int i = 0; i < N; i++) probs[i] = i < 20 ? 1.0 / 20 : 0.0;
    chi2 = chi_square(counts, probs, N, DRAWS, &crit, &outside);
    CHECKF(chi2 < crit && outside == 0, "uniform top-20: chi2 %.1f crit %.1f outside %d", chi2, crit, outside);
    sampler_free(s);
    sampler_params pp = params(1.0f, 0, 0.45f, 0.0f, 6); /* 10 equal tokens -> 5 kept */
    s = sampler_new(&pp, 10);
    draw_counts(s, l, 10, 5000, counts);
    int beyond = 0, hit = 0;
    for (int i = 0; i < 10; i++) {
        if (i >= 5) beyond += counts[i];
        else hit += counts[i] > 0;
    }
    CHECK(beyond == 0 && hit == 5);
    sampler_free(s);

    /* -inf and NaN logits are never drawn */
    for (int i = 0; i < N; i++) l[i] = (i % 3 == 0) ? -INFINITY : (i % 3 == 1 ? NAN : (float)i / N);
    s = sampler_new(&pu, N);
    draw_counts(s, l, N, 5000, counts);
    int bad = 0;
    for (int i = 0; i < N; i++) bad += (i % 3 != 2) ? counts[i] : 0;
    CHECK(bad == 0);
    /* a single finite logit among -inf: always that one, greedy or not */
    for (int i = 0; i < N; i++) l[i] = -INFINITY;
    l[33] = -1e30f;
    CHECK(sampler_sample(s, l) == 33);
    sampler_free(s);
    s = sampler_new(&pg, N);
    CHECK(sampler_sample(s, l) == 33);
    /* all -inf: no token, a clear error */
    for (int i = 0; i < N; i++) l[i] = -INFINITY;
    anv_set_error("%s", "");
    CHECK(sampler_sample(s, l) == -1);
    CHECK(strstr(anv_last_error(), "-inf") != NULL);
    sampler_free(s);
    /* +inf wins outright (treated as FLT_MAX), and extreme finite logits stay finite */
    for (int i = 0; i < N; i++) l[i] = (i % 2) ? FLT_MAX : -FLT_MAX;
    l[20] = INFINITY;
    s = sampler_new(&pu, N);
    int32_t t = sampler_sample(s, l);
    CHECK(t == 20 || (t % 2) == 1);
    sampler_free(s);
    /* top-p over extreme ranges: FLT_MAX against -FLT_MAX, and a range of one ulp */
    for (int i = 0; i < N; i++) l[i] = (i % 2) ? FLT_MAX : -FLT_MAX;
    sampler_params pe = params(1.0f, 0, 0.5f, 0.0f, 22);
    s = sampler_new(&pe, N);
    draw_counts(s, l, N, 2000, counts);
    bad = 0;
    for (int i = 0; i < N; i++) bad += (i % 2 == 0 || i > 25) ? counts[i] : 0;
    CHECK(bad == 0); /* 25 tokens tie at FLT_MAX: the 13 lowest ids reach p = 0.5 */
    for (int i = 0; i < N; i++) l[i] = i < 25 ? 1.0f : nextafterf(1.0f, 2.0f);
    draw_counts(s, l, N, 2000, counts);
    bad = hit = 0;
    for (int i = 0; i < N; i++) {
        if (i < 25) bad += counts[i];
        else hit += counts[i] > 0;
    }
    CHECK(bad == 0 && hit == 25);
    sampler_free(s);
    /* min_p > 1 keeps only the most probable token (llama.cpp does the same) */
    fill_logits(l, N, 8, -3, 3);
    sampler_params pm = params(1.0f, 0, 1.0f, 1.5f, 9);
    s = sampler_new(&pm, N);
    float tmp[N];
    memcpy(tmp, l, sizeof(tmp));
    CHECK(sampler_sample(s, tmp) == argmax(l, N));
    sampler_free(s);

    /* n_vocab = 1 */
    sampler_params d;
    sampler_params_default(&d);
    d.seed = 10;
    s = sampler_new(&d, 1);
    CHECK(s != NULL);
    int all0 = 1;
    for (int i = 0; i < 100; i++) {
        float one = (float)i - 50.0f;
        all0 &= sampler_sample(s, &one) == 0;
        sampler_accept(s, 0);
    }
    CHECK(all0);
    sampler_free(s);
}

static void test_bad_input(void) {
    sampler_params p;
    sampler_params_default(&p);
    CHECK(sampler_new(&p, 0) == NULL && strstr(anv_last_error(), "vocabulary") != NULL);
    CHECK(sampler_new(&p, -5) == NULL);
    p.repeat_penalty = 0.0f;
    CHECK(sampler_new(&p, 10) == NULL && strstr(anv_last_error(), "repeat_penalty") != NULL);
    sampler_params_default(&p);
    p.temperature = NAN;
    CHECK(sampler_new(&p, 10) == NULL && strstr(anv_last_error(), "NaN") != NULL);
    sampler_params_default(&p);
    p.repeat_last_n = -2;
    CHECK(sampler_new(&p, 10) == NULL);
    sampler *s = sampler_new(NULL, 10); /* NULL params = defaults */
    CHECK(s != NULL);
    CHECK(sampler_sample(s, NULL) == -1);
    CHECK(sampler_sample(NULL, NULL) == -1);
    sampler_free(s);
    sampler_free(NULL);
    sampler_accept(NULL, 3);
    sampler_reset(NULL);
}

int main(void) {
    test_defaults();
    test_greedy();
    test_seeding();
    test_distributions();
    test_top_p_boundary();
    test_penalties();
    test_edge_cases();
    test_bad_input();
    return tu_finish();
}
