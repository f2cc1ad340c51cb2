/* gen_step: one sequence's sample/accept/stream step (gen_step.h). */
#include "gen_step.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "error.h"

void gen_seq_init(gen_seq *g, const gen_seq_config *c) {
    *g = (gen_seq){.c = *c};
}

static bool emit(gen_seq *g, const char *text, int len) {
    if (len <= 0 || !g->c.on_text) return true;
    return g->c.on_text(text, len, g->c.user);
}

/* Text through the stop matcher (if any) to the callback. False when the sequence ends
 * here (stop string or callback). */
static bool pass_on(gen_seq *g, const char *text, int len) {
    const char *e = text;
    int el = len;
    bool stopped = false;
    if (g->c.stop) stopped = stop_matcher_feed(g->c.stop, text, len, &e, &el);
    if (!emit(g, e, el)) { g->cancelled = true; return false; }
    if (stopped) { g->stop_hit = true; return false; }
    return true;
}

static gen_status done(gen_seq *g, const char *reason) {
    g->done_reason = reason;
    return GEN_DONE;
}

static gen_status fail(gen_seq *g, const char *what) {
    char msg[480];
    snprintf(msg, sizeof msg, "%s", anv_last_error());
    anv_set_error("%s: %s", what, msg);
    g->failed = true;
    g->done_reason = "stop";
    return GEN_ERROR;
}

static bool at_limit(const gen_seq *g) { return g->c.num_predict >= 0 && g->n_gen >= g->c.num_predict; }

/* The log-softmax normaliser of the raw logits and their n_top largest (insertion into a
 * sorted list: n_top <= 20). */
static void raw_top(const float *logits, int n_vocab, int n_top, double *lse_out, gen_logprobs *lp) {
    float mx = -INFINITY;
    for (int i = 0; i < n_vocab; i++)
        if (logits[i] > mx) mx = logits[i];
    double sum = 0;
    for (int i = 0; i < n_vocab; i++) sum += exp((double)logits[i] - mx);
    *lse_out = (double)mx + log(sum);
    lp->n_top = 0;
    for (int i = 0; i < n_vocab && n_top > 0; i++) {
        const float v = logits[i];
        if (lp->n_top == n_top && v <= lp->top[n_top - 1].logprob) continue;
        int k = lp->n_top < n_top ? lp->n_top++ : n_top - 1;
        while (k > 0 && lp->top[k - 1].logprob < v) { lp->top[k] = lp->top[k - 1]; k--; }
        lp->top[k] = (gen_token_logprob){i, v};
    }
}

gen_status gen_seq_step(gen_seq *g, float *logits, int n_past, int n_ctx) {
    g->has_pending = false;
    if (at_limit(g)) return done(g, "length");   /* num_predict 0 */
    const bool want_lp = g->c.on_logprob && g->c.raw_scratch && g->c.n_logits > 0;
    const int n_vocab = want_lp ? g->c.n_logits : 0;
    if (want_lp) memcpy(g->c.raw_scratch, logits, (size_t)n_vocab * sizeof *logits);   /* before mask and sampler */
    int32_t id;
    if (g->c.forced) {   /* a replayed reply (tests of what parses it): no mask, no sampling */
        if (g->n_gen >= g->c.n_forced) return done(g, "stop");
        id = g->c.forced[g->n_gen];
    } else {
        if (g->c.gm && grammar_matcher_mask(g->c.gm, logits) != 0) {
            g->bad_format = true;
            return fail(g, "format");
        }
        id = sampler_sample(g->c.smp, logits);
        if (id < 0) return fail(g, "sampling");
    }
    if (tokenizer_is_eog(g->c.tok, id)) return done(g, "stop");
    if (g->c.gm && !g->c.forced && grammar_matcher_accept(g->c.gm, id) != 0) return fail(g, "format");
    if (want_lp && id >= 0 && id < n_vocab) {
        gen_logprobs lp;
        double lse;
        const int n_top = g->c.top_logprobs < 0 ? 0 : g->c.top_logprobs > GEN_MAX_TOP_LOGPROBS ? GEN_MAX_TOP_LOGPROBS : g->c.top_logprobs;
        raw_top(g->c.raw_scratch, n_vocab, n_top, &lse, &lp);
        for (int k = 0; k < lp.n_top; k++) lp.top[k].logprob = (float)(lp.top[k].logprob - lse);
        lp.chosen = (gen_token_logprob){id, (float)(g->c.raw_scratch[id] - lse)};
        g->c.on_logprob(&lp, g->c.tok, g->c.user);
    }
    sampler_accept(g->c.smp, id);
    g->n_gen++;
    g->pending = id;
    g->has_pending = true;
    char text[256];
    int len = tok_stream_push(&g->ts, g->c.tok, id, text, (int)sizeof text);
    if (len == 0 && g->c.shown_specials) {   /* a control token (no text): printed if it is one asked for */
        int sl = tokenizer_token_to_piece(g->c.tok, id, text, (int)sizeof text - 1, true);
        bool shown = false;
        if (sl > 0 && sl < (int)sizeof text) {
            text[sl] = 0;
            for (const char *const *s = g->c.shown_specials; *s && !shown; s++) shown = !strcmp(*s, text);
        }
        len = shown ? sl : 0;
    }
    if (len > (int)sizeof text) len = (int)sizeof text;
    if (len > 0 && !pass_on(g, text, len)) return done(g, "stop");
    if (g->c.gm && grammar_matcher_done(g->c.gm)) return done(g, "stop");
    if (at_limit(g)) return done(g, "length");
    if (n_past >= n_ctx) return done(g, "length");   /* no room to evaluate pending */
    return GEN_CONTINUE;
}

void gen_seq_finish(gen_seq *g) {
    if (g->flushed || g->failed || g->cancelled) return;
    g->flushed = true;
    char text[64];
    int len = tok_stream_flush(&g->ts, text, (int)sizeof text);
    if (len > (int)sizeof text) len = (int)sizeof text;
    if (g->stop_hit) return;
    if (len > 0 && !pass_on(g, text, len)) return;
    if (g->c.stop) {
        const char *e;
        int el;
        stop_matcher_flush(g->c.stop, &e, &el);
        emit(g, e, el);
    }
}
