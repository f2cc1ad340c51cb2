/* cmd_run: `anvil run MODEL [PROMPT]`: one-shot generation or an interactive chat
 * (multi-line input between """ lines, /bye to quit, /clear to forget), streamed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chat.h"
#include "cli.h"
#include "error.h"
#include "generate.h"

typedef struct {
    cli_model_opts mo;
    sampler_params sp;
    int n_predict;
    const char *system;
    bool raw;
    bool interactive;     /* -i: chat on stdin even when it is not a terminal */
    int format;           /* chat_format, -1 = detect */
} run_opts;

static void run_usage(void) {
    puts("usage: anvil run MODEL [PROMPT] [options]\n"
         "  -n, --num-predict N   tokens to generate (default -1: until the model stops)\n"
         "  --temp T  --top-k K  --top-p P  --min-p P  --repeat-penalty R  --repeat-last-n N\n"
         "  --presence-penalty P  --frequency-penalty P  --seed S   (Ollama's defaults)\n"
         "  --system TEXT         system prompt\n"
         "  --raw                 no chat template: the prompt is given to the model as is\n"
         "  -i, --interactive     chat line by line on stdin even when it is not a terminal\n"
         "  --template NAME       gemma | llama3 | chatml | mistral | llama2 (default: detected)\n"
         "  -t N  --ctx N  --kv-type f16|f32|q8_0  --verbose");
}

static void print_stats(double load_s, const gen_stats *st, double total_s) {
    fprintf(stderr, "\ntotal duration:       %.3fs\n", total_s);
    fprintf(stderr, "load duration:        %.3fs\n", load_s);
    fprintf(stderr, "prompt eval count:    %d token(s)\n", st->n_prompt_eval);
    fprintf(stderr, "prompt eval duration: %.3fs\n", st->t_prompt);
    fprintf(stderr, "prompt eval rate:     %.2f tokens/s\n", st->t_prompt > 0 ? st->n_prompt_eval / st->t_prompt : 0.0);
    fprintf(stderr, "eval count:           %d token(s)\n", st->n_gen);
    fprintf(stderr, "eval duration:        %.3fs\n", st->t_gen);
    fprintf(stderr, "eval rate:            %.2f tokens/s\n", st->t_gen > 0 ? st->n_gen / st->t_gen : 0.0);
}

typedef struct { FILE *reply; } stream_target;

static bool stream_and_capture(const char *text, int len, void *user) {
    stream_target *t = user;
    fwrite(text, 1, (size_t)len, stdout);
    fflush(stdout);
    if (t->reply) fwrite(text, 1, (size_t)len, t->reply);
    return true;
}

/* Renders the conversation, generates the reply (streamed) and returns it (malloc'd). */
static char *answer(model *m, model_ctx *ctx, sampler *smp, const run_opts *o, chat_format fmt,
                    const chat_message *hist, int n_hist, gen_stats *st) {
    char *text = o->raw ? strdup(hist[n_hist - 1].content) : chat_apply(fmt, hist, n_hist, true);
    if (!text) anv_die("out of memory");
    int n_tok = 0;
    int32_t *toks = tokenizer_encode(m->tok, text, strlen(text), tokenizer_add_bos(m->tok), !o->raw, &n_tok);
    free(text);
    if (!toks) anv_die("%s", anv_last_error());
    char *reply = NULL;
    size_t reply_len = 0;
    stream_target t = {open_memstream(&reply, &reply_len)};
    int rc = generate(ctx, smp, toks, n_tok, o->n_predict, stream_and_capture, &t, st);
    fclose(t.reply);
    free(toks);
    if (rc != 0) { free(reply); anv_die("%s", anv_last_error()); }
    return reply;
}

/* Reads one user message: a line, or the lines between two """ lines. NULL at EOF. */
static char *read_message(void) {
    static char line[65536];
    if (!fgets(line, sizeof line, stdin)) return NULL;
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
    if (strncmp(line, "\"\"\"", 3) != 0) return strdup(line);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fputs(line + 3, f);
    bool first = line[3] == 0;
    while (fgets(line, sizeof line, stdin)) {
        char *end = strstr(line, "\"\"\"");
        if (end) { *end = 0; fputs(line, f); break; }
        if (!first) fputc('\n', f);
        first = false;
        n = strlen(line);
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
        fputs(line, f);
    }
    fclose(f);
    return buf;
}

static void interactive(model *m, model_ctx *ctx, sampler *smp, const run_opts *o, chat_format fmt) {
    chat_message *hist = NULL;
    int n_hist = 0, cap = 0;
    bool tty = isatty(0);
    if (o->system) {
        hist = realloc(hist, sizeof *hist * (cap = 8));
        hist[n_hist++] = (chat_message){"system", strdup(o->system)};
    }
    for (;;) {
        if (tty) { fputs(">>> ", stdout); fflush(stdout); }
        char *msg = read_message();
        if (!msg) break;
        if (!strcmp(msg, "/bye")) { free(msg); break; }
        if (!strcmp(msg, "/clear")) {
            for (int i = o->system ? 1 : 0; i < n_hist; i++) free((char *)hist[i].content);
            n_hist = o->system ? 1 : 0;
            free(msg);
            puts("Cleared session context");
            continue;
        }
        if (!strcmp(msg, "/?") || !strcmp(msg, "/help")) {
            puts("  /bye      exit\n  /clear    forget the conversation\n  \"\"\"       begin/end a multi-line message");
            free(msg);
            continue;
        }
        if (!msg[0]) { free(msg); continue; }
        if (n_hist + 2 > cap) hist = realloc(hist, sizeof *hist * (cap = cap * 2 + 8));
        hist[n_hist++] = (chat_message){"user", msg};
        gen_stats st;
        char *reply = answer(m, ctx, smp, o, fmt, hist, n_hist, &st);
        hist[n_hist++] = (chat_message){"assistant", reply};
        fputs("\n\n", stdout);
        if (o->mo.verbose) print_stats(0, &st, st.t_prompt + st.t_gen);
    }
    for (int i = 0; i < n_hist; i++) free((char *)hist[i].content);
    free(hist);
}

int cmd_run(int argc, char **argv) {
    run_opts o = {.n_predict = -1, .format = -1};
    cli_model_opts_default(&o.mo);
    sampler_params_default(&o.sp);
    const char *model_path = NULL;
    char *prompt = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_parse_model_opt(&o.mo, argc, argv, &i)) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { run_usage(); return 0; }
        else if (!strcmp(a, "-n") || !strcmp(a, "--num-predict")) o.n_predict = cli_int(a, cli_value(argc, argv, &i), -1, 1 << 30);
        else if (!strcmp(a, "--temp") || !strcmp(a, "--temperature")) o.sp.temperature = (float)cli_float(a, cli_value(argc, argv, &i));
        else if (!strcmp(a, "--top-k")) o.sp.top_k = cli_int(a, cli_value(argc, argv, &i), 0, 1 << 30);
        else if (!strcmp(a, "--top-p")) o.sp.top_p = (float)cli_float(a, cli_value(argc, argv, &i));
        else if (!strcmp(a, "--min-p")) o.sp.min_p = (float)cli_float(a, cli_value(argc, argv, &i));
        else if (!strcmp(a, "--repeat-penalty")) o.sp.repeat_penalty = (float)cli_float(a, cli_value(argc, argv, &i));
        else if (!strcmp(a, "--repeat-last-n")) o.sp.repeat_last_n = cli_int(a, cli_value(argc, argv, &i), -1, 1 << 30);
        else if (!strcmp(a, "--presence-penalty")) o.sp.presence_penalty = (float)cli_float(a, cli_value(argc, argv, &i));
        else if (!strcmp(a, "--frequency-penalty")) o.sp.frequency_penalty = (float)cli_float(a, cli_value(argc, argv, &i));
        else if (!strcmp(a, "--seed")) o.sp.seed = (uint64_t)cli_float(a, cli_value(argc, argv, &i));
        else if (!strcmp(a, "--system")) o.system = cli_value(argc, argv, &i);
        else if (!strcmp(a, "--raw")) o.raw = true;
        else if (!strcmp(a, "-i") || !strcmp(a, "--interactive")) o.interactive = true;
        else if (!strcmp(a, "--template")) {
            const char *v = cli_value(argc, argv, &i);
            o.format = chat_format_from_name(v);
            if (o.format < 0) anv_die("--template: unknown chat format '%s' (gemma, llama3, chatml, mistral, llama2, raw)", v);
        } else if (a[0] == '-' && a[1]) anv_die("run: unknown option '%s'", a);
        else if (!model_path) model_path = a;
        else if (!prompt) prompt = strdup(a);
        else anv_die("run: unexpected argument '%s' (quote the prompt)", a);
    }
    if (!model_path) { run_usage(); return 2; }
    if (!prompt && !o.interactive && !isatty(0)) {
        /* A piped prompt: read stdin whole (like `echo hi | ollama run m`). */
        size_t len = 0;
        FILE *f = open_memstream(&prompt, &len);
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, stdin)) > 0) fwrite(buf, 1, n, f);
        fclose(f);
        while (len && (prompt[len - 1] == '\n' || prompt[len - 1] == '\r')) prompt[--len] = 0;
        if (!len) { free(prompt); prompt = NULL; }
    }
    double t_start = cli_now(), load_s = 0;
    model *m = cli_load_model(model_path, &o.mo, &load_s);
    model_ctx *ctx = model_ctx_new(m, o.mo.n_ctx, o.mo.kv_type);
    if (!ctx) anv_die("%s", anv_last_error());
    sampler *smp = sampler_new(&o.sp, m->hp.n_vocab);
    chat_format fmt = o.format >= 0 ? (chat_format)o.format : chat_detect(m->chat_template, m->hp.arch_name);
    if (fmt == CHAT_RAW) o.raw = true;
    if (o.mo.verbose) anv_log("chat format: %s", o.raw ? "raw" : chat_format_name(fmt));
    if (prompt) {
        chat_message msgs[2];
        int n = 0;
        if (o.system) msgs[n++] = (chat_message){"system", o.system};
        msgs[n++] = (chat_message){"user", prompt};
        gen_stats st;
        free(answer(m, ctx, smp, &o, fmt, msgs, n, &st));
        fputc('\n', stdout);
        if (o.mo.verbose) print_stats(load_s, &st, cli_now() - t_start);
        free(prompt);
    } else {
        interactive(m, ctx, smp, &o, fmt);
    }
    sampler_free(smp);
    model_ctx_free(ctx);
    model_free(m);
    return 0;
}
