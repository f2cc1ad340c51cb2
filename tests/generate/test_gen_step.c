/* test_gen_step: the generation step (engine/generate/gen_step.h) that `anvil run` and the
 * server's slots share, on a tiny SentencePiece vocabulary written to a GGUF here. Logits
 * are made up (greedy sampling picks the scripted token), so every case is exact: a stop
 * string split across two tokens (and inside one), num_predict, end of generation, a full
 * context, the callback stopping, UTF-8 held across tokens and flushed, held stop-string
 * prefixes flushed at the end, sampling errors, and grammar-constrained random walks whose
 * output must parse and match the schema. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "error.h"
#include "gen_step.h"
#include "gguf.h"
#include "gguf_write.h"
#include "testutil.h"

/* ---------------------------------------------------------------- the vocabulary */

static const char *const k_toks[] = {
    "<unk>", "<s>", "</s>", "a", "b", "EN", "D", "zENDz", "<0xC3>", "<0xA9>",
    "{", "}", "\"", ":", ",", "\xe2\x96\x81", "n", "s", "0", "1", "2", "-", "x", "bEN",
    "u", "l", "t", "r", "e", "f", ".",   /* null true false 1.5e2: no walk can get stuck */
};
enum { T_EOS = 2, T_A = 3, T_B = 4, T_EN = 5, T_D = 6, T_ZENDZ = 7, T_C3 = 8, T_A9 = 9, T_BEN = 23 };
#define N_TOKS ((int)(sizeof k_toks / sizeof k_toks[0]))

static tokenizer *tok;
static gguf_file *tok_file;

static int load_vocab(const char *path) {
    int32_t types[N_TOKS];
    for (int i = 0; i < N_TOKS; i++) types[i] = 1;
    types[0] = 2;
    types[1] = types[2] = 3;
    types[T_C3] = types[T_A9] = 6;
    gguf_writer *w = gguf_writer_new(path);
    if (!w || gguf_writer_set_str(w, "general.architecture", "llama") != 0 ||
        gguf_writer_set_str(w, "tokenizer.ggml.model", "llama") != 0 ||
        gguf_writer_set_str_arr(w, "tokenizer.ggml.tokens", k_toks, N_TOKS) != 0 ||
        gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_INT32, types, N_TOKS) != 0 ||
        gguf_writer_finish(w) != 0)
        return -1;
    tok_file = gguf_open(path);
    tok = tok_file ? tokenizer_load(tok_file) : NULL;
    return tok ? 0 : -1;
}

/* ---------------------------------------------------------------- a scripted run */

typedef struct {
    char text[4096];
    int len;
    int calls;
    int cancel_at;           /* > 0: return false on this call */
} collect;

static bool on_text(const char *text, int len, void *user) {
    collect *c = user;
    if (c->len + len < (int)sizeof c->text) {
        memcpy(c->text + c->len, text, (size_t)len);
        c->len += len;
        c->text[c->len] = 0;
    }
    c->calls++;
    return !(c->cancel_at > 0 && c->calls >= c->cancel_at);
}

typedef struct {
    gen_status last;
    int steps;               /* gen_seq_step calls */
} run_result;

/* Steps through script (greedy: the scripted token gets the top logit) until the sequence
 * ends or the script does; n_ctx < 0: room for everything. */
static run_result run_script(gen_seq *g, const int32_t *script, int n, int n_past, int n_ctx) {
    float logits[N_TOKS];
    run_result r = {GEN_CONTINUE, 0};
    for (int i = 0; i < n && r.last == GEN_CONTINUE; i++) {
        for (int k = 0; k < N_TOKS; k++) logits[k] = 0.0f;
        logits[script[i]] = 10.0f;
        r.last = gen_seq_step(g, logits, n_past, n_ctx < 0 ? n_past + 1000 : n_ctx);
        r.steps++;
        if (r.last == GEN_CONTINUE) {
            if (g->pending != script[i]) r.last = GEN_ERROR;  /* the sampler ignored the script */
            n_past++;
        }
    }
    if (r.last == GEN_DONE) gen_seq_finish(g);
    return r;
}

static const char *reason(const gen_seq *g) { return g->done_reason ? g->done_reason : "(none)"; }

static sampler *greedy(void) {
    sampler_params p;
    sampler_params_default(&p);
    p.temperature = 0;
    p.seed = 1;
    return sampler_new(&p, N_TOKS);
}

static void config(gen_seq_config *c, sampler *smp, stop_matcher *stop, int num_predict, collect *out) {
    *c = (gen_seq_config){.tok = tok, .smp = smp, .stop = stop, .num_predict = num_predict,
                          .on_text = on_text, .user = out};
}

/* ---------------------------------------------------------------- cases */

static void test_stop_split_across_tokens(void) {
    char *stops[] = {"END"};
    stop_matcher *stop = stop_matcher_new(stops, 1);
    sampler *smp = greedy();
    collect out = {0};
    gen_seq_config c;
    config(&c, smp, stop, -1, &out);
    gen_seq g;
    gen_seq_init(&g, &c);
    const int32_t script[] = {T_A, T_B, T_EN, T_D, T_A, T_A};
    run_result r = run_script(&g, script, 3, 10, -1);
    CHECKF(r.last == GEN_CONTINUE && strcmp(out.text, "ab") == 0, "'EN' held back: got '%s'", out.text);
    r = run_script(&g, script + 3, 3, 13, -1);
    CHECK(r.last == GEN_DONE && r.steps == 1);
    CHECKF(strcmp(out.text, "ab") == 0, "cut exactly before the stop string: '%s'", out.text);
    CHECK(strcmp(reason(&g), "stop") == 0);
    CHECK(g.n_gen == 4 && g.has_pending && g.pending == T_D && g.stop_hit);
    stop_matcher_free(stop);

    /* a stop string inside one token */
    stop = stop_matcher_new(stops, 1);
    out = (collect){0};
    config(&c, smp, stop, -1, &out);
    gen_seq_init(&g, &c);
    const int32_t inside[] = {T_A, T_ZENDZ, T_A};
    r = run_script(&g, inside, 3, 0, -1);
    CHECKF(r.last == GEN_DONE && strcmp(out.text, "az") == 0 && strcmp(reason(&g), "stop") == 0,
           "stop inside a token: '%s'", out.text);
    stop_matcher_free(stop);

    /* a held prefix that never completes is flushed at the end */
    stop = stop_matcher_new(stops, 1);
    out = (collect){0};
    config(&c, smp, stop, -1, &out);
    gen_seq_init(&g, &c);
    const int32_t held[] = {T_A, T_EN, T_EOS};
    r = run_script(&g, held, 3, 0, -1);
    CHECKF(r.last == GEN_DONE && strcmp(out.text, "aEN") == 0 && strcmp(reason(&g), "stop") == 0 &&
           !g.has_pending, "held 'EN' flushed at eog: '%s'", out.text);
    gen_seq_finish(&g);  /* once only */
    CHECK(strcmp(out.text, "aEN") == 0);
    stop_matcher_free(stop);
    sampler_free(smp);
}

static void test_num_predict(void) {
    sampler *smp = greedy();
    const int32_t script[] = {T_A, T_B, T_A, T_B, T_A, T_B, T_A, T_B};
    for (int n = 0; n <= 5; n++) {
        collect out = {0};
        gen_seq_config c;
        config(&c, smp, NULL, n, &out);
        gen_seq g;
        gen_seq_init(&g, &c);
        run_result r = run_script(&g, script, 8, 0, -1);
        CHECKF(r.last == GEN_DONE && g.n_gen == n && out.len == n && strcmp(reason(&g), "length") == 0,
               "num_predict %d: %d tokens, text '%s', reason %s", n, g.n_gen, out.text, reason(&g));
        CHECK(g.has_pending == (n > 0));   /* the last token still belongs to the context */
        CHECK(r.steps == (n > 0 ? n : 1));
    }
    sampler_free(smp);
}

static void test_eog_and_context(void) {
    sampler *smp = greedy();
    collect out = {0};
    gen_seq_config c;
    config(&c, smp, NULL, -1, &out);
    gen_seq g;
    gen_seq_init(&g, &c);
    const int32_t script[] = {T_A, T_B, T_EOS, T_A};
    run_result r = run_script(&g, script, 4, 0, -1);
    CHECK(r.last == GEN_DONE && r.steps == 3 && g.n_gen == 2);
    CHECK(strcmp(out.text, "ab") == 0 && strcmp(reason(&g), "stop") == 0 && !g.has_pending);

    /* a full context: the token just sampled cannot be evaluated */
    out = (collect){0};
    gen_seq_init(&g, &c);
    const int32_t longer[] = {T_A, T_A, T_A, T_A, T_A, T_A};
    r = run_script(&g, longer, 6, 5, 8);   /* n_past 5, 6, 7 evaluated; 8 = full */
    CHECKF(r.last == GEN_DONE && g.n_gen == 4 && strcmp(reason(&g), "length") == 0 && g.has_pending,
           "context full after %d tokens (%s)", g.n_gen, reason(&g));
    CHECK(strcmp(out.text, "aaaa") == 0);
    sampler_free(smp);
}

/* Log-probabilities: the log-softmax of the raw logits, before the sampler's temperature and
 * top_k and the format mask (compared with double-precision arithmetic here), the chosen token
 * first-class, top alternatives most likely first, none for the end-of-generation token. */
typedef struct {
    collect out;   /* first: the text callback's view of the same user pointer */
    gen_logprobs got[8];
    int n;
} lp_box;
static void on_lp(const gen_logprobs *lp, const tokenizer *t, void *user) {
    lp_box *b = user;
    (void)t;
    if (b->n < 8) b->got[b->n++] = *lp;
}

static void test_logprobs(void) {
    sampler_params p;
    sampler_params_default(&p);
    p.temperature = 0.5f;   /* changes the sampled distribution, never the reported one */
    p.top_k = 2;
    p.seed = 3;
    sampler *smp = sampler_new(&p, N_TOKS);
    lp_box box = {0};
    float scratch[N_TOKS], logits[N_TOKS], raw[N_TOKS];
    gen_seq_config c = {.tok = tok, .smp = smp, .num_predict = -1, .on_text = on_text, .user = &box.out,
                        .on_logprob = on_lp, .top_logprobs = 3, .raw_scratch = scratch, .n_logits = N_TOKS};
    gen_seq g;
    gen_seq_init(&g, &c);
    for (int k = 0; k < N_TOKS; k++) raw[k] = (float)((k * 7) % 5) * 0.5f - 1.0f;
    raw[T_A] = 4.0f, raw[T_B] = 3.5f, raw[T_D] = 3.0f;
    memcpy(logits, raw, sizeof raw);
    gen_status st = gen_seq_step(&g, logits, 0, 100);
    double mx = raw[0], sum = 0;
    for (int k = 0; k < N_TOKS; k++) mx = raw[k] > mx ? raw[k] : mx;
    for (int k = 0; k < N_TOKS; k++) sum += exp((double)raw[k] - mx);
    const double lse = mx + log(sum);
    CHECKF(st == GEN_CONTINUE && box.n == 1, "one step, one report (%d)", box.n);
    const gen_logprobs *lp = &box.got[0];
    CHECKF(lp->chosen.id == g.pending && fabs(lp->chosen.logprob - (raw[g.pending] - lse)) < 1e-5,
           "chosen %d: %g vs %g", lp->chosen.id, lp->chosen.logprob, raw[g.pending] - lse);
    CHECKF(lp->n_top == 3 && lp->top[0].id == T_A && lp->top[1].id == T_B && lp->top[2].id == T_D &&
               fabs(lp->top[0].logprob - (4.0 - lse)) < 1e-5 && fabs(lp->top[2].logprob - (3.0 - lse)) < 1e-5,
           "top: %d %d %d", lp->top[0].id, lp->top[1].id, lp->top[2].id);
    /* an end of generation is not reported */
    for (int k = 0; k < N_TOKS; k++) logits[k] = 0;
    logits[T_EOS] = 20;
    st = gen_seq_step(&g, logits, 1, 100);
    CHECK(st == GEN_DONE && box.n == 1);
    sampler_free(smp);
}

static void test_callback_stops(void) {
    sampler *smp = greedy();
    collect out = {.cancel_at = 2};
    gen_seq_config c;
    config(&c, smp, NULL, -1, &out);
    gen_seq g;
    gen_seq_init(&g, &c);
    const int32_t script[] = {T_A, T_B, T_C3, T_A, T_A};
    run_result r = run_script(&g, script, 5, 0, -1);
    CHECK(r.last == GEN_DONE && r.steps == 2 && g.n_gen == 2 && g.cancelled);
    CHECK(strcmp(reason(&g), "stop") == 0 && g.has_pending && out.calls == 2);

    /* cancelled with a possible stop-string start held back: it is not flushed */
    char *stops[] = {"END"};
    stop_matcher *stop = stop_matcher_new(stops, 1);
    out = (collect){.cancel_at = 2};
    config(&c, smp, stop, -1, &out);
    gen_seq_init(&g, &c);
    const int32_t held[] = {T_A, T_BEN, T_A, T_A};
    r = run_script(&g, held, 4, 0, -1);
    CHECKF(r.last == GEN_DONE && r.steps == 2 && out.calls == 2 && strcmp(out.text, "ab") == 0 && g.cancelled,
           "cancel: %d calls '%s'", out.calls, out.text);
    gen_seq_finish(&g);
    CHECK(out.calls == 2 && strcmp(out.text, "ab") == 0);
    stop_matcher_free(stop);
    sampler_free(smp);
}

static void test_utf8(void) {
    sampler *smp = greedy();
    collect out = {0};
    gen_seq_config c;
    config(&c, smp, NULL, -1, &out);
    gen_seq g;
    gen_seq_init(&g, &c);
    const int32_t script[] = {T_A, T_C3, T_A9, T_C3, T_EOS};
    run_result r = run_script(&g, script, 5, 0, -1);
    /* "é" whole once its second byte comes; the dangling C3 becomes U+FFFD at the end */
    CHECKF(r.last == GEN_DONE && strcmp(out.text, "a\xc3\xa9\xef\xbf\xbd") == 0, "utf-8: '%s'", out.text);
    CHECK(out.calls == 3);
    sampler_free(smp);
}

static void test_sampling_error(void) {
    sampler *smp = greedy();
    collect out = {0};
    gen_seq_config c;
    config(&c, smp, NULL, -1, &out);
    gen_seq g;
    gen_seq_init(&g, &c);
    float logits[N_TOKS];
    for (int i = 0; i < N_TOKS; i++) logits[i] = -INFINITY;
    gen_status s = gen_seq_step(&g, logits, 0, 100);
    CHECKF(s == GEN_ERROR && strncmp(anv_last_error(), "sampling: ", 10) == 0, "error '%s'", anv_last_error());
    CHECK(g.failed && g.n_gen == 0 && !g.has_pending && strcmp(reason(&g), "stop") == 0);
    gen_seq_finish(&g);
    CHECK(out.calls == 0);
    sampler_free(smp);
}

/* Random logits (EOG always the favourite, so only the grammar keeps it out) through the
 * mask: the text must parse and match the schema, and end with reason "stop". */
static void test_grammar(void) {
    static const char schema[] =
        "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"},"
        "\"s\":{\"type\":\"string\",\"maxLength\":6}},\"required\":[\"n\",\"s\"],"
        "\"additionalProperties\":false}";
    grammar *gs = grammar_json_schema(schema);
    grammar *go = grammar_json_object();
    CHECKF(gs && go, "%s", anv_last_error());
    if (!gs || !go) { grammar_free(gs); grammar_free(go); return; }
    grammar_matcher *ms = grammar_matcher_new(gs, tok), *mo = grammar_matcher_new(go, tok);
    CHECKF(ms && mo, "%s", anv_last_error());
    sampler *smp = greedy();
    uint64_t rng = 42;
    int parsed = 0, valid = 0, walks = 40;
    for (int w = 0; w < walks; w++) {
        grammar_matcher *gm = w % 2 ? mo : ms;
        grammar_matcher_reset(gm);
        collect out = {0};
        gen_seq_config c;
        config(&c, smp, NULL, 400, &out);
        c.gm = gm;
        gen_seq g;
        gen_seq_init(&g, &c);
        gen_status s = GEN_CONTINUE;
        for (int i = 0; i < 400 && s == GEN_CONTINUE; i++) {
            float logits[N_TOKS];
            for (int k = 0; k < N_TOKS; k++) logits[k] = tu_rand_f32(&rng, 0.0f, 1.0f);
            logits[T_EOS] = 5.0f;
            s = gen_seq_step(&g, logits, i, 1000);
        }
        if (s == GEN_DONE) gen_seq_finish(&g);
        CHECKF(s == GEN_DONE && strcmp(reason(&g), "stop") == 0, "walk %d: status %d reason %s text '%s' (%s)",
               w, (int)s, reason(&g), out.text, anv_last_error());
        CHECK(grammar_matcher_done(gm));
        cJSON *doc = cJSON_Parse(out.text);
        if (doc && cJSON_IsObject(doc)) parsed++;
        else fprintf(stderr, "walk %d: not a JSON object: '%s'\n", w, out.text);
        if (w % 2 == 0 && doc) {
            const cJSON *n = cJSON_GetObjectItemCaseSensitive(doc, "n");
            const cJSON *str = cJSON_GetObjectItemCaseSensitive(doc, "s");
            int chars = 0;   /* maxLength counts characters */
            if (cJSON_IsString(str))
                for (const char *q = str->valuestring; *q; q++) chars += ((unsigned char)*q & 0xC0) != 0x80;
            bool ok = cJSON_GetArraySize(doc) == 2 && cJSON_IsNumber(n) && n->valuedouble == floor(n->valuedouble) &&
                      cJSON_IsString(str) && chars <= 6;
            if (ok) valid++;
            else fprintf(stderr, "walk %d: does not match the schema: '%s'\n", w, out.text);
        }
        cJSON_Delete(doc);
    }
    CHECKF(parsed == walks, "%d of %d walks parse as JSON objects", parsed, walks);
    CHECKF(valid == walks / 2, "%d of %d schema walks match", valid, walks / 2);
    sampler_free(smp);
    grammar_matcher_free(ms);
    grammar_matcher_free(mo);
    grammar_free(gs);
    grammar_free(go);
}

int main(void) {
    anv_log_enabled = 0;
    char path[] = "/tmp/anvil-gen-step-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) close(fd);
    int rc = load_vocab(path);
    CHECKF(rc == 0, "vocabulary: %s", anv_last_error());
    if (rc != 0) {
        if (tok_file) gguf_close(tok_file);
        unlink(path);
        return tu_finish();
    }
    test_stop_split_across_tokens();
    test_num_predict();
    test_eog_and_context();
    test_callback_stops();
    test_utf8();
    test_sampling_error();
    test_grammar();
    test_logprobs();
    tokenizer_free(tok);
    gguf_close(tok_file);
    unlink(path); /* after the close: Windows keeps a mapped file */
    return tu_finish();
}
