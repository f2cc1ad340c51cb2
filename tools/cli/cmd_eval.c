/* cmd_eval: the evaluation tools model developers use to trust an engine:
 *  `anvil eval` writes next-token log-probabilities of every position and the greedy
 *  continuation as logprobs-v1 JSON (the format of the llama.cpp oracle), and
 *  `anvil perplexity` scores a text file, optionally against a reference dump (KL). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "clock.h"
#include "error.h"
#include "readfile.h"

/* log-softmax of n logits into out (double accumulation). */
static void log_softmax(const float *logits, int n, double *out) {
    double mx = -INFINITY;
    for (int i = 0; i < n; i++) if (logits[i] > mx) mx = logits[i];
    double sum = 0;
    for (int i = 0; i < n; i++) sum += exp((double)logits[i] - mx);
    double lse = mx + log(sum);
    for (int i = 0; i < n; i++) out[i] = (double)logits[i] - lse;
}

static int argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++) if (x[i] > x[best]) best = i;
    return best;
}

/* Parses "1,2,3" into a malloc'd array. */
static int32_t *parse_ids(const char *s, int *n_out) {
    int cap = 16, n = 0;
    int32_t *ids = malloc(sizeof *ids * (size_t)cap);
    const char *p = s;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > INT32_MAX) anv_die("--tokens: '%s' is not a comma-separated list of token ids", s);
        if (n == cap) ids = realloc(ids, sizeof *ids * (size_t)(cap *= 2));
        ids[n++] = (int32_t)v;
        p = end;
        if (*p == ',') p++;
        else if (*p) anv_die("--tokens: unexpected '%c' in '%s'", *p, s);
    }
    if (n == 0) anv_die("--tokens: no token ids given");
    *n_out = n;
    return ids;
}

static void write_json_ids(FILE *f, const int32_t *ids, int n) {
    fputc('[', f);
    for (int i = 0; i < n; i++) fprintf(f, "%s%d", i ? "," : "", ids[i]);
    fputc(']', f);
}

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static void eval_usage(void) {
    puts("usage: anvil eval MODEL (--prompt TEXT | --tokens 1,2,3) [--n-gen N] [--no-bos] --dump FILE.json\n"
         "  Evaluates the sequence and writes, for every position, the log-probabilities of the\n"
         "  next token over the whole vocabulary, plus the greedy continuation of N tokens, in\n"
         "  the logprobs-v1 format of the llama.cpp oracle (compare with compare_logprobs.py).\n"
         "  --prompt is tokenized with BOS (unless --no-bos), special-token text is not parsed.\n"
         "  -t N  --ctx N  --kv-type f16|f32|q8_0|q4_0");
}

int cmd_eval(int argc, char **argv) {
    cli_model_opts mo;
    cli_model_opts_default(&mo);
    const char *model_path = NULL, *prompt = NULL, *tokens_arg = NULL, *dump = NULL;
    int n_gen = 0;
    bool no_bos = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_parse_model_opt(&mo, argc, argv, &i)) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { eval_usage(); return 0; }
        else if (!strcmp(a, "--prompt")) prompt = cli_value(argc, argv, &i);
        else if (!strcmp(a, "--tokens")) tokens_arg = cli_value(argc, argv, &i);
        else if (!strcmp(a, "--n-gen")) n_gen = cli_int(a, cli_value(argc, argv, &i), 0, 1 << 20);
        else if (!strcmp(a, "--dump")) dump = cli_value(argc, argv, &i);
        else if (!strcmp(a, "--no-bos")) no_bos = true;
        else if (a[0] == '-') anv_die("eval: unknown option '%s'", a);
        else if (!model_path) model_path = a;
        else anv_die("eval: unexpected argument '%s'", a);
    }
    if (!model_path || (!prompt == !tokens_arg) || !dump) { eval_usage(); return 2; }
    model *m = cli_load_model(model_path, &mo, NULL);
    int n = 0;
    int32_t *toks;
    if (tokens_arg) {
        toks = parse_ids(tokens_arg, &n);
    } else {
        toks = tokenizer_encode(m->tok, prompt, strlen(prompt), false, false, &n);
        if (!toks) anv_die("%s", anv_last_error());
        int32_t bos = tokenizer_bos(m->tok);
        if (!no_bos && bos >= 0 && (n == 0 || toks[0] != bos)) {
            toks = realloc(toks, sizeof *toks * (size_t)(n + 1));
            memmove(toks + 1, toks, sizeof *toks * (size_t)n);
            toks[0] = bos;
            n++;
        }
        if (n == 0) anv_die("eval: the prompt gives no tokens");
    }
    if (mo.n_ctx == 0) mo.n_ctx = n + n_gen + 1;
    model_ctx *ctx = model_ctx_new(m, mo.n_ctx, mo.kv_type);
    if (!ctx) anv_die("%s", anv_last_error());
    const int nv = m->hp.n_vocab;
    float *logits = malloc((size_t)n * nv * sizeof(float));
    double *lp = malloc((size_t)nv * sizeof(double));
    int32_t *gen = malloc(sizeof *gen * (size_t)(n_gen + 1));
    if (!logits || !lp || !gen) anv_die("out of memory");
    if (model_eval(ctx, toks, n, logits, true) != 0) anv_die("%s", anv_last_error());
    FILE *f = fopen(dump, "w");
    if (!f) anv_die("cannot write %s", dump);
    fprintf(f, "{\"format\": \"logprobs-v1\", \"engine\": \"anvil\", \"backend\": \"%s\", \"model\": \"%s\", \"n_vocab\": %d,\n \"tokens\": ",
            m->layers[0].be->name, base_name(model_path), nv);
    write_json_ids(f, toks, n);
    fputs(",\n \"positions\": [", f);
    for (int p = 0; p < n; p++) {
        log_softmax(logits + (size_t)p * nv, nv, lp);
        fprintf(f, "%s\n  {\"pos\": %d, \"input_token\": %d, \"logprobs\": [", p ? "," : "", p, toks[p]);
        for (int j = 0; j < nv; j++) {
            if (isfinite(lp[j])) fprintf(f, "%s%.7g", j ? "," : "", lp[j]);
            else fprintf(f, "%snull", j ? "," : "");
        }
        fputs("]}", f);
    }
    /* greedy continuation: EOS does not stop it, exactly n_gen tokens */
    float *last = logits + (size_t)(n - 1) * nv;
    for (int g = 0; g < n_gen; g++) {
        gen[g] = argmax(last, nv);
        if (g + 1 < n_gen && model_eval(ctx, &gen[g], 1, last, false) != 0) anv_die("%s", anv_last_error());
    }
    fputs("],\n \"generated\": ", f);
    write_json_ids(f, gen, n_gen);
    fputs("}\n", f);
    if (fclose(f) != 0) anv_die("error writing %s", dump);
    printf("evaluated %d tokens, generated %d, wrote %s\n", n, n_gen, dump);
    free(logits); free(lp); free(gen); free(toks);
    model_ctx_free(ctx);
    model_free(m);
    return 0;
}

/* Reads a logprobs-v1 reference: token ids and per-position log-probabilities. */
typedef struct { int32_t *tokens; int n_tokens; int n_vocab; int n_pos; float *logprobs; } ref_dump;

static void load_ref(const char *path, ref_dump *r) {
    char *buf = anv_read_file(path, (size_t)1 << 30, NULL);
    if (!buf) anv_die("reference: %s", anv_last_error());
    cJSON *j = cJSON_Parse(buf);
    free(buf);
    if (!j) anv_die("%s: not valid JSON", path);
    cJSON *fmt = cJSON_GetObjectItem(j, "format");
    cJSON *toks = cJSON_GetObjectItem(j, "tokens");
    cJSON *pos = cJSON_GetObjectItem(j, "positions");
    cJSON *nv = cJSON_GetObjectItem(j, "n_vocab");
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, "logprobs-v1") || !cJSON_IsArray(toks) || !cJSON_IsArray(pos) || !cJSON_IsNumber(nv))
        anv_die("%s: not a logprobs-v1 dump", path);
    r->n_vocab = nv->valueint;
    r->n_tokens = cJSON_GetArraySize(toks);
    r->tokens = malloc(sizeof(int32_t) * (size_t)r->n_tokens);
    for (int i = 0; i < r->n_tokens; i++) r->tokens[i] = cJSON_GetArrayItem(toks, i)->valueint;
    r->n_pos = cJSON_GetArraySize(pos);
    r->logprobs = malloc(sizeof(float) * (size_t)r->n_pos * r->n_vocab);
    for (int p = 0; p < r->n_pos; p++) {
        cJSON *e = cJSON_GetArrayItem(pos, p);
        cJSON *lp = cJSON_GetObjectItem(e, "logprobs");
        cJSON *pp = cJSON_GetObjectItem(e, "pos");
        if (!cJSON_IsArray(lp) || cJSON_GetArraySize(lp) != r->n_vocab || !cJSON_IsNumber(pp) || pp->valueint != p)
            anv_die("%s: position %d is not a full-vocabulary entry", path, p);
        int k = 0;
        for (cJSON *v = lp->child; v; v = v->next, k++)
            r->logprobs[(size_t)p * r->n_vocab + k] = cJSON_IsNumber(v) ? (float)v->valuedouble : -INFINITY;
    }
    cJSON_Delete(j);
}

static void ppl_usage(void) {
    puts("usage: anvil perplexity MODEL FILE.txt [--ctx N] [--kl-ref REF.json]\n"
         "  Perplexity over FILE in chunks of N tokens (default 512; each chunk starts with BOS and\n"
         "  its second half is scored, as llama-perplexity does).\n"
         "  --kl-ref REF.json: instead, evaluate the token sequence of a logprobs-v1 dump (e.g. from\n"
         "  llama.cpp) and report the KL divergence KL(ref || anvil) and top-1 agreement per position.\n"
         "  -t N  --kv-type f16|f32|q8_0|q4_0");
}

static int kl_against_ref(model *m, const cli_model_opts *mo, const char *ref_path) {
    ref_dump r;
    load_ref(ref_path, &r);
    const int nv = m->hp.n_vocab;
    if (r.n_vocab != nv) anv_die("%s: n_vocab %d does not match the model's %d", ref_path, r.n_vocab, nv);
    model_ctx *ctx = model_ctx_new(m, r.n_tokens + 1, mo->kv_type);
    if (!ctx) anv_die("%s", anv_last_error());
    float *logits = malloc((size_t)r.n_tokens * nv * sizeof(float));
    double *lp = malloc((size_t)nv * sizeof(double));
    if (model_eval(ctx, r.tokens, r.n_tokens, logits, true) != 0) anv_die("%s", anv_last_error());
    double kl_sum = 0, kl_max = 0;
    int agree = 0;
    for (int p = 0; p < r.n_pos; p++) {
        log_softmax(logits + (size_t)p * nv, nv, lp);
        const float *ref = r.logprobs + (size_t)p * nv;
        double kl = 0;
        int ra = 0, aa = 0;
        for (int j = 0; j < nv; j++) {
            if (ref[j] > ref[ra]) ra = j;
            if (lp[j] > lp[aa]) aa = j;
            if (isfinite(ref[j])) kl += exp(ref[j]) * (ref[j] - lp[j]);
        }
        agree += ra == aa;
        kl_sum += kl;
        if (kl > kl_max) kl_max = kl;
        printf("pos %3d  KL %.3e  top1 ref %d anvil %d%s\n", p, kl, ra, aa, ra == aa ? "" : "  (differs)");
    }
    printf("positions %d  mean KL %.3e  max KL %.3e  top-1 agreement %d/%d\n", r.n_pos, kl_sum / r.n_pos, kl_max, agree, r.n_pos);
    free(logits); free(lp); free(r.tokens); free(r.logprobs);
    model_ctx_free(ctx);
    return 0;
}

int cmd_perplexity(int argc, char **argv) {
    cli_model_opts mo;
    cli_model_opts_default(&mo);
    const char *model_path = NULL, *text_path = NULL, *ref = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_parse_model_opt(&mo, argc, argv, &i)) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { ppl_usage(); return 0; }
        else if (!strcmp(a, "--kl-ref")) ref = cli_value(argc, argv, &i);
        else if (a[0] == '-') anv_die("perplexity: unknown option '%s'", a);
        else if (!model_path) model_path = a;
        else if (!text_path) text_path = a;
        else anv_die("perplexity: unexpected argument '%s'", a);
    }
    if (!model_path || (!text_path && !ref)) { ppl_usage(); return 2; }
    model *m = cli_load_model(model_path, &mo, NULL);
    if (ref) { int rc = kl_against_ref(m, &mo, ref); model_free(m); return rc; }

    FILE *f = fopen(text_path, "rb");
    if (!f) anv_die("cannot open %s", text_path);
    char *text = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&text, &len);
    char buf[65536];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, k, mf);
    fclose(mf);
    fclose(f);
    int n_tok = 0;
    int32_t *toks = tokenizer_encode(m->tok, text, len, false, false, &n_tok);
    free(text);
    if (!toks) anv_die("%s", anv_last_error());
    int n_ctx = mo.n_ctx > 0 ? mo.n_ctx : 512;
    if (n_tok < 2 * 16 || n_ctx < 16) anv_die("perplexity: %s has %d tokens; need at least 2 chunks of --ctx %d", text_path, n_tok, n_ctx);
    if (n_tok < n_ctx) n_ctx = n_tok;
    int n_chunks = n_tok / n_ctx;
    model_ctx *ctx = model_ctx_new(m, n_ctx, mo.kv_type);
    if (!ctx) anv_die("%s", anv_last_error());
    const int nv = m->hp.n_vocab;
    float *logits = malloc((size_t)n_ctx * nv * sizeof(float));
    double *lp = malloc((size_t)nv * sizeof(double));
    int32_t *chunk = malloc(sizeof *chunk * (size_t)n_ctx);
    double nll = 0, nll2 = 0;
    long count = 0;
    int32_t bos = tokenizer_bos(m->tok);
    double t0 = anv_mono_s();
    for (int c = 0; c < n_chunks; c++) {
        memcpy(chunk, toks + (size_t)c * n_ctx, sizeof *chunk * (size_t)n_ctx);
        if (bos >= 0 && tokenizer_add_bos(m->tok)) chunk[0] = bos;
        model_ctx_reset(ctx);
        if (model_eval(ctx, chunk, n_ctx, logits, true) != 0) anv_die("%s", anv_last_error());
        for (int p = n_ctx / 2; p < n_ctx - 1; p++) {
            log_softmax(logits + (size_t)p * nv, nv, lp);
            double v = -lp[toks[(size_t)c * n_ctx + p + 1]];
            nll += v;
            nll2 += v * v;
            count++;
        }
        printf("[%d] %.4f\n", c + 1, exp(nll / count));
        fflush(stdout);
    }
    double mean = nll / count, var = nll2 / count - mean * mean;
    double ppl = exp(mean), err = ppl * sqrt(var > 0 ? var / (count - 1) : 0);
    printf("perplexity: %.4f +/- %.4f over %ld tokens in %d chunks of %d (%.1f s)\n", ppl, err, count, n_chunks, n_ctx, anv_mono_s() - t0);
    free(logits); free(lp); free(chunk); free(toks);
    model_ctx_free(ctx);
    model_free(m);
    return 0;
}
