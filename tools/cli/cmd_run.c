/* cmd_run: `anvil run MODEL [PROMPT]`: one-shot generation or an interactive chat
 * (Ollama's REPL: repl.c; this file gives it the replies, in process or from a server,
 * and applies its /set parameter, /set format and /load), streamed. MODEL
 * is a GGUF path or a store name; a store model's Modelfile (PARAMETERs, TEMPLATE, SYSTEM,
 * MESSAGEs) applies, with the command-line flags on top. When an `anvil serve` is running
 * (ANVIL_HOST), the request goes to it (the model stays loaded between runs) unless
 * --local is given or a flag only the in-process path has (--template, --kv-type,
 * --tensor-split) is used. --format json|SCHEMA_FILE constrains the reply like the API's
 * "format" (the same grammar code; in process, the same generation step as the server). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sys/stat.h>

#include "api_images.h"
#include "chat.h"
#include "cli.h"
#include "chat_vision.h"
#include "cli_images.h"
#include "client.h"
#include "clock.h"
#include "error.h"
#include "generate.h"
#include "grammar.h"
#include "options.h"
#include "prompt.h"
#include "quant.h"
#include "readfile.h"
#include "repl.h"
#include "repl_input.h"
#include "reply_parse.h"
#include "stop_strings.h"
#include "store.h"
#include "vision.h"

/* A sampling/generation flag, applied by its Ollama option name after the model's params. */
typedef struct { const char *flag, *key, *value; } option_flag;

#define MAX_FLAGS 64

typedef struct {
    cli_model_opts mo;
    option_flag flags[MAX_FLAGS];
    int n_flags;
    const char *stops[OPTIONS_MAX_STOP];  /* --stop: replace the model's stop strings */
    int n_stops;
    run_options ro;       /* defaults < the model's params < the flags */
    const char *system;
    const char *template_go; /* the model's TEMPLATE (NULL: the GGUF's chat template) */
    const char *messages_json;
    bool raw;
    bool interactive;     /* -i: chat on stdin even when it is not a terminal */
    bool local;           /* --local: never use a running server */
    int think;            /* --think[=false|low|medium|high]: CHAT_THINK_* */
    bool hide_thinking;   /* --hidethinking: think, but do not print the trace */
    int chat_fmt;         /* chat_format, -1 = detect */
    char *format;         /* --format: "json" or the schema file's text (the API's "format") */
    const char *keep_alive; /* --keepalive: how long the server keeps the model loaded */
    int truncate;         /* --truncate[=false] (embedding models): -1 unset */
    int dimensions;       /* --dimensions N (embedding models) */
    grammar *grammar;     /* built from format */
    const char *mmproj;   /* --mmproj FILE: the projector (default: mmproj*.gguf next to the model) */
    const char *image;    /* --image FILE: an image for the one-shot prompt (before the ones it names) */
    vision_model *vision; /* loaded when the one-shot prompt has images */
    anv_image *decoded;   /* the prompt's images, numbered as their [img-N] markers */
    int n_decoded;
    vision_image *imgs;   /* the same in the order of their markers in the prompt (vision_eval_prompt) */
    int n_imgs;
} run_opts;

#ifdef ANVIL_HAVE_LIBEDIT
#define ANVIL_LINE_INPUT "libedit (line editing, arrow-up history in ~/.anvil/history)"
#else
#define ANVIL_LINE_INPUT "plain reads (built without libedit: no line editing or history)"
#endif

static void run_usage(void) {
    puts("usage: anvil run MODEL [PROMPT] [options]\n"
         "  -n, --num-predict N   tokens to generate (default -1: until the model stops)\n"
         "  --temp T  --top-k K  --top-p P  --min-p P  --repeat-penalty R  --repeat-last-n N\n"
         "  --presence-penalty P  --frequency-penalty P  --seed S   (Ollama's defaults)\n"
         "  --stop TEXT           end the reply at TEXT (repeatable; replaces the model's stops)\n"
         "  --format json|FILE    structured output: any JSON object, or JSON valid against the\n"
         "                        JSON Schema in FILE (like the API's \"format\")\n"
         "  --system TEXT         system prompt\n"
         "  --raw                 no chat template: the prompt is given to the model as is\n"
         "  -i, --interactive     chat line by line on stdin even when it is not a terminal\n"
         "  --template NAME       gemma | llama3 | chatml | mistral | llama2 (default: the model's\n"
         "                        TEMPLATE, else detected from the GGUF; a base model without a\n"
         "                        template runs as a completion, like Ollama's {{ .Prompt }})\n"
         "  -t N  --ctx N  -ngl N  --kv-type f16|f32|q8_0|q4_0  --verbose  (-ngl 99/999: all layers)\n"
         "  --local               run in this process even when an anvil server is running\n"
         "  --think[=false|low|medium|high]  thinking on (or off) for a model that can think\n"
         "  --hidethinking        think, but print only the answer\n"
         "  --keepalive DURATION  how long a running server keeps the model loaded (5m, 1h, 0, -1)\n"
         "  --truncate[=false]    embedding models: cut an input longer than the context (default)\n"
         "  --dimensions N        embedding models: keep the first N dimensions (renormalised)\n"
         "  --image FILE          an image for the prompt (JPEG, PNG, WebP, GIF, PPM; needs a projector;\n"
         "                        image paths in PROMPT work too, as in Ollama: \"what is in ./cat.jpg\")\n"
         "  --mmproj FILE         the vision projector (default: mmproj*.gguf next to the model)\n"
         "  --nowordwrap  --insecure   accepted for Ollama's scripts (Anvil does not wrap; run\n"
         "                        does not pull)\n"
         "Without PROMPT: a chat (type /? for its commands: /set parameter|system|format|verbose|think,\n"
         "/show, /load, /save, /clear, /bye; Ctrl+C stops a reply, Ctrl+D exits); this build reads\n"
         "lines with " ANVIL_LINE_INPUT ".\n"
         "A store model's PARAMETERs (num_predict, stop, seed, num_ctx, num_gpu, num_thread ...)\n"
         "apply first; the flags given here replace them.");
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

typedef struct {
    FILE *reply;
    reply_parser *rp;     /* splits out the thinking (NULL with --think=false) */
    reply_delta dl;
    bool hide_thinking, in_thinking;
} stream_target;

/* Ollama's CLI shape for a reasoning trace: "Thinking...", the trace, "...done thinking."
 * (on stderr-free stdout, dimmed on a terminal), then the answer. */
static void thinking_print(bool *in_thinking, bool hide, const char *text, size_t len) {
    if (hide || !len) return;
    bool tty = isatty(STDOUT_FILENO);
    if (!*in_thinking) {
        fputs(tty ? "\033[2mThinking...\n" : "Thinking...\n", stdout);
        *in_thinking = true;
    }
    fwrite(text, 1, len, stdout);
}

static void thinking_end(bool *in_thinking) {
    if (!*in_thinking) return;
    fputs(isatty(STDOUT_FILENO) ? "\n...done thinking.\n\n\033[0m" : "\n...done thinking.\n\n", stdout);
    *in_thinking = false;
}

/* Prints reply text and keeps it for the conversation. NUL bytes (a byte token a
 * model can emit) are dropped: a terminal shows nothing for them, and the text must be the
 * same as through a server, whose JSON a C client reads as NUL-terminated strings. */
static void emit(stream_target *t, const char *text, int len) {
    for (int i = 0; i < len;) {
        int j = i;
        while (j < len && text[j]) j++;
        if (j > i) {
            fwrite(text + i, 1, (size_t)(j - i), stdout);
            if (t->reply) fwrite(text + i, 1, (size_t)(j - i), t->reply);
        }
        i = j + 1;
    }
    fflush(stdout);
}

/* The reply text, through the thinking split when there is one. */
static void deliver_reply(stream_target *t) {
    thinking_print(&t->in_thinking, t->hide_thinking, bytebuf_str(&t->dl.thinking), t->dl.thinking.len);
    if (t->dl.content.len) {
        thinking_end(&t->in_thinking);
        emit(t, bytebuf_str(&t->dl.content), (int)t->dl.content.len);
    }
    reply_delta_reset(&t->dl);
    fflush(stdout);
}

/* Returns false (stop) after Ctrl+C in the interactive chat. */
static bool stream_and_capture(const char *text, int len, void *user) {
    stream_target *t = user;
    if (!t->rp) { emit(t, text, len); return !repl_interrupted(); }
    if (!reply_parser_feed(t->rp, text, (size_t)len, &t->dl)) anv_die("out of memory");
    deliver_reply(t);
    return !repl_interrupted();
}

/* The interactive chat's images (NULL in a one-shot run): each message's, the chat's vision
 * state, the projector file and what happened to the images this turn. */
typedef struct {
    const repl_msg_images *images;
    chat_vision *cv;
    const char *projector;
    vision_eval_counts counts;
} chat_images;

/* Renders the conversation, generates the reply (streamed) and returns it (malloc'd);
 * NULL when Ctrl+C stopped it (the interactive chat) or generation failed (anv_last_error(),
 * e.g. a prompt longer than the context or a bad image in the chat; repl_interrupted() tells
 * the two apart). */
static char *answer(model *m, model_ctx *ctx, sampler *smp, grammar_matcher *gm, const run_opts *o,
                    const chat_message *hist, int n_hist, gen_stats *st, chat_images *ci) {
    prompt_spec ps = {
        .template_go = o->template_go, .system = o->system, .messages_json = o->messages_json,
        .msgs = hist, .n_msgs = n_hist, .raw = o->raw, .chat_format_override = o->chat_fmt, .think = o->think,
    };
    const bool chat_imgs = ci && chat_vision_any(ci->images, n_hist);
    chat_message *tagged = chat_imgs ? chat_vision_tag(hist, ci->images, n_hist) : NULL;
    if (chat_imgs && !tagged) return NULL;
    if (tagged) ps.msgs = tagged;
    char *text = prompt_build(m, &ps);
    chat_vision_untag(tagged, n_hist);
    if (!text) anv_die("%s", anv_last_error());
    int n_tok = 0;
    int32_t *toks = NULL;
    if (chat_imgs) {   /* the chat's images: the prefix the context holds reused, new images encoded */
        toks = chat_vision_eval(ci->cv, m, ctx, ci->projector, text, ci->images, n_hist, &n_tok, &ci->counts);
        if (!toks) { free(text); return NULL; }
    } else if (o->vision) {   /* text and image chunks evaluated here; generate_seq reuses all but the last token */
        if (vision_eval_prompt(ctx, o->vision, text, NULL, o->imgs, o->n_imgs, &toks, &n_tok) != 0) toks = NULL;
    } else {
        toks = tokenizer_encode(m->tok, text, strlen(text), tokenizer_add_bos(m->tok), !o->raw, &n_tok);
    }
    free(text);
    if (!toks) anv_die("%s", anv_last_error());
    char *reply = NULL;
    size_t reply_len = 0;
    stream_target t = {.reply = open_memstream(&reply, &reply_len), .hide_thinking = o->hide_thinking};
    reply_parse_opts rpo = {.thinking = true};
    prompt_reply_style(m, &ps, &rpo);   /* gpt-oss: harmony channels (its trace cannot be turned off) */
    if (rpo.gemma4) rpo.thinking = CHAT_THINK_IS_ON(o->think);   /* Gemma 4: the thought channel is dropped unless on */
    if (!o->raw && (o->think != CHAT_THINK_OFF || rpo.harmony || rpo.gemma4) && !(t.rp = reply_parser_new(&rpo)))
        anv_die("out of memory");
    stop_matcher *stop = NULL;
    if (o->ro.n_stop && !(stop = stop_matcher_new(o->ro.stop, o->ro.n_stop))) anv_die("out of memory");
    if (gm) grammar_matcher_reset(gm);
    gen_seq_config cfg = {.tok = m->tok, .smp = smp, .gm = gm, .stop = stop, .num_predict = o->ro.num_predict,
                          .shown_specials = o->raw ? NULL : prompt_shown_specials(m),
                          .on_text = stream_and_capture, .user = &t};
    int rc = generate_seq(ctx, &cfg, toks, n_tok, st);
    if (t.rp) {
        if (!reply_parser_finish(t.rp, &t.dl)) anv_die("out of memory");
        deliver_reply(&t);
        thinking_end(&t.in_thinking);
        reply_parser_free(t.rp);
        reply_delta_free(&t.dl);
    }
    stop_matcher_free(stop);
    fclose(t.reply);
    free(toks);
    if (rc != 0 || repl_interrupted()) { free(reply); return NULL; }
    return reply;
}

static void add_flag(run_opts *o, const char *flag, const char *key, const char *value) {
    if (o->n_flags == MAX_FLAGS) anv_die("run: too many options");
    o->flags[o->n_flags++] = (option_flag){flag, key, value};
}

/* The option layers: defaults, the model's params, then the flags; then what the options
 * say about loading, unless a loading flag was given. */
static int resolve_options(run_opts *o, const store_entry *e) {
    char msg[600];
    options_default(&o->ro);
    if (e->params_json && options_apply_json_text(&o->ro, e->params_json, NULL) != 0) {
        snprintf(msg, sizeof msg, "model '%s': its parameters: %s", e->name, anv_last_error());
        anv_set_error("%s", msg);
        return -1;
    }
    for (int i = 0; i < o->n_flags; i++)
        if (options_set_text(&o->ro, o->flags[i].key, o->flags[i].value) != 0) {
            snprintf(msg, sizeof msg, "%s: %s", o->flags[i].flag, anv_last_error());
            anv_set_error("%s", msg);
            return -1;
        }
    if (o->n_stops) {
        run_options fresh;
        options_default(&fresh);
        for (int i = 0; i < o->n_stops; i++)
            if (options_set_text(&fresh, "stop", o->stops[i]) != 0) {
                snprintf(msg, sizeof msg, "--stop: %s", anv_last_error());
                anv_set_error("%s", msg);
                options_clear(&fresh);
                return -1;
            }
        options_clear(&o->ro);
        memcpy(o->ro.stop, fresh.stop, sizeof fresh.stop);
        o->ro.n_stop = fresh.n_stop;
    }
    if (!o->mo.n_ctx_set && o->ro.num_ctx > 0) o->mo.n_ctx = o->ro.num_ctx;
    if (!o->mo.n_threads_set && o->ro.num_thread > 0) o->mo.n_threads = o->ro.num_thread;
    if (!o->mo.n_gpu_layers_set) o->mo.n_gpu_layers = o->ro.num_gpu < 0 ? -1 : o->ro.num_gpu;
    return 0;
}

/* ---- through a running server ---- */

/* The flags as an Ollama options map (the server applies the model's params first). */
static char *flags_as_options_json(const run_opts *o) {
    cJSON *obj = cJSON_CreateObject();
    for (int i = 0; i < o->n_flags; i++)
        cJSON_AddNumberToObject(obj, o->flags[i].key, strtod(o->flags[i].value, NULL));
    if (o->n_stops) {
        cJSON *arr = cJSON_AddArrayToObject(obj, "stop");
        for (int i = 0; i < o->n_stops; i++) cJSON_AddItemToArray(arr, cJSON_CreateString(o->stops[i]));
    }
    if (o->mo.n_ctx_set) cJSON_AddNumberToObject(obj, "num_ctx", o->mo.n_ctx);
    if (o->mo.n_threads_set) cJSON_AddNumberToObject(obj, "num_thread", o->mo.n_threads);
    if (o->mo.n_gpu_layers_set) cJSON_AddNumberToObject(obj, "num_gpu", o->mo.n_gpu_layers);
    char *text = cJSON_PrintUnformatted(obj);
    cJSON_Delete(obj);
    return text;
}

static bool print_piece(const char *text, size_t len, void *user) {
    stream_target *t = user;
    thinking_end(&t->in_thinking);
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    return !repl_interrupted();   /* Ctrl+C in the chat: the request is cancelled */
}

static bool print_thinking(const char *text, size_t len, void *user) {
    stream_target *t = user;
    thinking_print(&t->in_thinking, t->hide_thinking, text, len);
    fflush(stdout);
    return !repl_interrupted();
}

static void print_remote_stats(const client_gen_result *r) {
    gen_stats st = {.n_prompt_eval = r->prompt_eval_count, .t_prompt = r->prompt_eval_ns * 1e-9,
                    .n_gen = r->eval_count, .t_gen = r->eval_ns * 1e-9};
    print_stats(r->load_ns * 1e-9, &st, r->total_ns * 1e-9);
}

/* One reply from the server for the conversation so far (exits on an error); NULL when
 * Ctrl+C cancelled it. */
static char *remote_answer(const run_opts *o, const char *model, const char *options_json,
                           const chat_message *hist, const repl_msg_images *images, int n_hist) {
    client_gen_request q = {.model = model, .system = o->system, .options_json = options_json, .images = images,
                            .format = o->format, .raw = o->raw, .on_text = print_piece, .keep_alive = o->keep_alive,
                            .on_thinking = print_thinking, .think = o->think};
    stream_target t = {.hide_thinking = o->hide_thinking};
    q.user = &t;
    client_gen_result res;
    int rc;
    if (o->raw) {
        q.prompt = hist[n_hist - 1].content;
        rc = client_generate(&q, &res);
    } else {
        q.messages = hist;
        q.n_messages = n_hist;
        rc = client_chat(&q, &res);
    }
    thinking_end(&t.in_thinking);
    if (rc != 0) {
        client_gen_result_clear(&res);
        anv_die("%s", anv_last_error());
    }
    if (repl_interrupted()) { client_gen_result_clear(&res); return NULL; }
    if (o->mo.verbose) print_remote_stats(&res);
    char *reply = res.text;
    res.text = NULL;
    client_gen_result_clear(&res);
    return reply;
}

/* ---- the interactive chat's replies (repl.c), through a server ---- */

typedef struct {
    run_opts *o;
    char *model;          /* the server's name for it (a file: its absolute path) */
    char *options_json;   /* the flags, then /set parameter */
} remote_chat;

static char *remote_reply(void *user, const repl_session *s, const chat_message *hist, const repl_msg_images *images,
                          int n_hist) {
    remote_chat *rc = user;
    run_opts eff = *rc->o;
    eff.system = s->system;   /* NULL: the server applies the model's SYSTEM */
    eff.think = s->think;
    eff.mo.verbose = s->verbose;
    eff.format = s->json_format ? (rc->o->format ? rc->o->format : "json") : NULL;
    return remote_answer(&eff, rc->model, rc->options_json, hist, images, n_hist);
}

static int remote_apply(void *user, const repl_session *s) {
    remote_chat *rc = user;
    char *flags = flags_as_options_json(rc->o);
    cJSON *obj = cJSON_Parse(flags);
    free(flags);
    const cJSON *it;
    cJSON_ArrayForEach(it, s->params) {
        cJSON_DeleteItemFromObject(obj, it->string);
        cJSON_AddItemToObject(obj, it->string, cJSON_Duplicate(it, 1));
    }
    free(rc->options_json);
    rc->options_json = cJSON_PrintUnformatted(obj);
    cJSON_Delete(obj);
    return 0;
}

/* An embedding model cannot chat: /load refuses it with this error. */
static int refuse_embedding_model(const repl_session *s) {
    gguf_file *header = gguf_open(s->entry.model_path);
    bool embeds = header && model_file_embeds_only(header);
    gguf_close(header);
    if (!embeds) return 0;
    anv_set_error("'%s' is an embedding model: it does not chat", s->model);
    return -1;
}

static int remote_load(void *user, const repl_session *s) {
    remote_chat *rc = user;
    if (refuse_embedding_model(s) != 0) return -1;
    char *abs = s->entry.model_digest ? NULL : realpath(s->entry.model_path, NULL);
    char *name = strdup(abs ? abs : s->model);
    free(abs);
    client_gen_request q = {.model = name, .prompt = "", .keep_alive = rc->o->keep_alive};   /* load only */
    client_gen_result res;
    int r = client_generate(&q, &res);
    client_gen_result_clear(&res);
    if (r != 0) { free(name); return -1; }
    free(rc->model);
    rc->model = name;
    return 0;
}

static repl_session session_start(const run_opts *o, const char *model, store_entry *entry, const char *cli_system,
                                  bool remote) {
    repl_session s = {.model = strdup(model), .entry = *entry, .system = cli_system ? strdup(cli_system) : NULL,
                      .params = cJSON_CreateObject(), .json_format = o->format != NULL, .verbose = o->mo.verbose,
                      .think = o->think, .remote = remote, .mmproj = o->mmproj};
    memset(entry, 0, sizeof *entry);   /* the session owns it now */
    return s;
}

static void session_run(repl_session *s, const repl_backend *b) {
    char *history = repl_history_path();
    repl_run(s, b, history, !repl_history_disabled_by_env());
    free(history);
    free(s->model);
    free(s->system);
    cJSON_Delete(s->params);
    store_entry_clear(&s->entry);
}

static int run_remote(run_opts *o, const char *model, char *prompt, store_entry *entry, const char *cli_system) {
    char *options_json = flags_as_options_json(o);
    if (o->mo.verbose) anv_log("using the running anvil server (--local to run in this process)");
    if (prompt) {
        chat_message msg = {.role = "user", .content = prompt};
        free(remote_answer(o, model, options_json, &msg, NULL, 1));
        fputc('\n', stdout);
        free(prompt);
        free(options_json);
        return 0;
    }
    remote_chat rc = {o, strdup(model), options_json};
    repl_session s = session_start(o, model, entry, cli_system, true);
    repl_backend b = {.reply = remote_reply, .apply = remote_apply, .load = remote_load, .user = &rc};
    session_run(&s, &b);
    free(rc.model);
    free(rc.options_json);
    return 0;
}

/* --format: "json" or a JSON Schema file; o->format gets the API's "format" text and
 * o->grammar its grammar. Exits with a one-line error. */
static void load_format(run_opts *o, const char *arg) {
    if (!strcmp(arg, "json")) {
        o->format = strdup("json");
        o->grammar = grammar_json_object();
    } else {
        size_t len = 0;
        if (!(o->format = anv_read_file(arg, 16u << 20, &len)))
            anv_die("--format: %s (give json or a JSON Schema file)", anv_last_error());
        if (strlen(o->format) != len) anv_die("--format: %s holds a NUL byte, not a JSON Schema", arg);
        o->grammar = grammar_json_schema(o->format);
    }
    if (!o->grammar) anv_die("--format %s: %s", arg, anv_last_error());
}

/* ---- the interactive chat's replies (repl.c), in this process ---- */

typedef struct {
    run_opts *o;
    cli_model_opts cli_mo;   /* the command line's model flags (before the model's params) */
    bool cli_raw;            /* --raw */
    model *m;
    model_ctx *ctx;
    sampler *smp;
    grammar_matcher *gm;     /* NULL: no format */
    grammar *json_grammar;   /* /set format json without --format */
    bool no_format;          /* /set noformat */
    chat_vision *cv;         /* the chat's images: projector, cache (chat_vision.h) */
} local_chat;

static grammar *local_grammar(local_chat *lc) {
    if (lc->no_format) return NULL;
    return lc->o->grammar ? lc->o->grammar : lc->json_grammar;
}

static void local_teardown(local_chat *lc) {
    chat_vision_reset(lc->cv);   /* the projector lives on the model's backends */
    sampler_free(lc->smp);
    grammar_matcher_free(lc->gm);
    model_ctx_free(lc->ctx);
    model_free(lc->m);
    lc->smp = NULL;
    lc->gm = NULL;
    lc->ctx = NULL;
    lc->m = NULL;
}

/* Loads e's model with the options in lc->o (exits with a one-line error when it cannot)
 * and picks its chat format. */
static void local_setup(local_chat *lc, const store_entry *e, double *load_s) {
    run_opts *o = lc->o;
    o->raw = lc->cli_raw;
    o->template_go = o->chat_fmt < 0 ? e->template_text : NULL;   /* --template picks a built-in format */
    o->messages_json = e->messages_json;
    model *m = lc->m = cli_load_model(e->model_path, &o->mo, load_s);
    if (!(lc->ctx = model_ctx_new(m, o->mo.n_ctx, o->mo.kv_type))) anv_die("%s", anv_last_error());
    lc->smp = sampler_new(&o->ro.sp, m->hp.n_vocab);
    grammar *g = local_grammar(lc);
    if (g && !(lc->gm = grammar_matcher_new(g, m->tok))) anv_die("--format: %s", anv_last_error());
    if (!o->template_go) {
        chat_format fmt = o->chat_fmt >= 0 ? (chat_format)o->chat_fmt : prompt_detect_format(m);
        /* a base model keeps the prompt path: Ollama's {{ .Prompt }} renders the user turns of
         * an interactive session one after another (one prompt: the prompt as is) */
        bool base = o->chat_fmt < 0 && prompt_model_is_base(m);
        if (fmt == CHAT_RAW && !base) o->raw = true;
        if (o->mo.verbose)
            anv_log("chat format: %s", base ? "none, a base model: completion ({{ .Prompt }})"
                                           : o->raw ? "raw" : chat_format_name(fmt));
    } else if (o->mo.verbose) {
        anv_log("chat format: %s", o->raw ? "raw" : "the model's TEMPLATE");
    }
}

/* The option layers again for the chat: the command line's, the model's params, the
 * session's /set parameter values (which also replace --ctx, -t and -ngl). */
static int local_options(local_chat *lc, const repl_session *s) {
    run_opts *o = lc->o;
    o->mo = lc->cli_mo;
    options_clear(&o->ro);
    if (resolve_options(o, &s->entry) != 0) return -1;
    if (options_apply_cjson(&o->ro, s->params, NULL) != 0) return -1;
    if (cJSON_GetObjectItem(s->params, "num_ctx")) o->mo.n_ctx = o->ro.num_ctx;
    if (cJSON_GetObjectItem(s->params, "num_thread")) o->mo.n_threads = o->ro.num_thread;
    if (cJSON_GetObjectItem(s->params, "num_gpu")) o->mo.n_gpu_layers = o->ro.num_gpu < 0 ? -1 : o->ro.num_gpu;
    return 0;
}

static char *local_reply(void *user, const repl_session *s, const chat_message *hist, const repl_msg_images *images,
                         int n_hist) {
    local_chat *lc = user;
    run_opts *o = lc->o;
    o->system = s->system ? s->system : s->entry.system;
    o->think = s->think;
    gen_stats st;
    double t0 = anv_mono_s();
    chat_images ci = {.images = images, .cv = lc->cv};
    char *proj = NULL;
    if (chat_vision_any(images, n_hist)) {
        if (!lc->cv && !(ci.cv = lc->cv = chat_vision_new())) anv_die("out of memory");
        proj = vision_find_projector(s->entry.model_path, s->mmproj ? s->mmproj : s->entry.projector_path);
        if (!proj) {
            printf("error: %s\n", s->mmproj ? anv_last_error() : "images need a projector: --mmproj FILE (none found next to the model)");
            return NULL;
        }
        ci.projector = proj;
    }
    char *reply = answer(lc->m, lc->ctx, lc->smp, lc->gm, o, hist, n_hist, &st, &ci);
    free(proj);
    if (!reply && !repl_interrupted()) printf("error: %s\n", anv_last_error());   /* the chat goes on */
    if (reply && s->verbose) {
        print_stats(0, &st, anv_mono_s() - t0);
        if (ci.projector)
            fprintf(stderr, "images:               %d encoded, %d from the cache, %d already in the context\n", ci.counts.encoded,
                    ci.counts.cached, ci.counts.reused);
    }
    return reply;
}

/* /set parameter and /set [no]format: new sampler settings at once; num_ctx makes a new
 * context, num_thread and num_gpu load the model again. */
static int local_apply(void *user, const repl_session *s) {
    local_chat *lc = user;
    run_opts *o = lc->o;
    cli_model_opts before = o->mo;
    if (local_options(lc, s) != 0) return -1;
    lc->no_format = !s->json_format;
    if (s->json_format && !o->grammar && !lc->json_grammar && !(lc->json_grammar = grammar_json_object()))
        return -1;
    if (before.n_threads != o->mo.n_threads || before.n_gpu_layers != o->mo.n_gpu_layers) {
        local_teardown(lc);
        local_setup(lc, &s->entry, NULL);
        return 0;
    }
    if (before.n_ctx != o->mo.n_ctx) {
        model_ctx *ctx = model_ctx_new(lc->m, o->mo.n_ctx, o->mo.kv_type);
        if (!ctx) return -1;
        model_ctx_free(lc->ctx);
        lc->ctx = ctx;
    }
    sampler_free(lc->smp);
    lc->smp = sampler_new(&o->ro.sp, lc->m->hp.n_vocab);
    grammar *g = local_grammar(lc);
    grammar_matcher_free(lc->gm);
    lc->gm = NULL;
    if (g && !(lc->gm = grammar_matcher_new(g, lc->m->tok))) return -1;
    return 0;
}

/* /load: the new model with the session's settings (the old one is unloaded first). */
static int local_load(void *user, const repl_session *s) {
    local_chat *lc = user;
    if (refuse_embedding_model(s) != 0) return -1;
    if (local_options(lc, s) != 0) return -1;
    local_teardown(lc);
    local_setup(lc, &s->entry, NULL);
    return 0;
}

/* Decodes one image file into o->decoded (engine/image: JPEG, PNG, WebP, GIF, PPM). Exits
 * with one line on a bad file. */
static void add_image_file(run_opts *o, const char *path, const uint8_t *data, size_t size) {
    size_t n = size;
    char *owned = NULL;
    if (!data) {
        owned = anv_read_file(path, image_limits_default().max_bytes + 1, &n);
        if (!owned) anv_die("run: %s", anv_last_error());
        data = (const uint8_t *)owned;
    }
    anv_image *grown = realloc(o->decoded, (size_t)(o->n_decoded + 1) * sizeof *grown);
    if (!grown) anv_die("out of memory");
    o->decoded = grown;
    if (image_decode(data, n, NULL, &o->decoded[o->n_decoded]) != 0) anv_die("run: %s: %s", path, anv_last_error());
    o->n_decoded++;
    free(owned);
}

/* The prompt's images: loads the projector on the model's backends, places the markers as
 * Ollama does (api_image_tag_text: "[img-N]" for an "[img]" placeholder, else before the text)
 * and turns them into vision_eval_prompt's marker and image order. */
static void load_vision(run_opts *o, local_chat *lc, const char *model_path, char **prompt) {
    char *proj = vision_find_projector(model_path, o->mmproj);
    if (!proj) anv_die("%s", o->mmproj ? anv_last_error() : "run: images need a projector: --mmproj FILE (none found next to the model)");
    vision_load_opts vo = {.cpu = lc->m->cpu, .gpu = lc->m->gpu};
    o->vision = vision_load(proj, &vo);
    free(proj);
    if (!o->vision || vision_check_text_model(o->vision, lc->m) != 0) anv_die("%s", anv_last_error());
    /* a batch for the projector's largest bidirectional image (evaluated in one pass) */
    if (model_ctx_reserve_batch(lc->ctx, vision_batch_rows(o->vision)) != 0) anv_die("run: %s", anv_last_error());
    char *tagged = api_image_tag_text(*prompt, 0, o->n_decoded);
    int *order = malloc((size_t)o->n_decoded * sizeof *order);
    o->imgs = malloc((size_t)o->n_decoded * sizeof *o->imgs);
    if (!tagged || !order || !o->imgs) anv_die("out of memory");
    char *text = api_images_to_marker(tagged, VISION_MARKER, o->n_decoded, order, &o->n_imgs);
    if (!text) anv_die("run: %s", anv_last_error());
    for (int i = 0; i < o->n_imgs; i++)
        o->imgs[i] = (vision_image){o->decoded[order[i]].rgb, o->decoded[order[i]].width, o->decoded[order[i]].height};
    free(order);
    free(tagged);
    free(*prompt);
    *prompt = text;
}

int cmd_run(int argc, char **argv) {
    run_opts o = {.chat_fmt = -1, .truncate = -1};
    const char *format_arg = NULL;
    cli_model_opts_default(&o.mo);
    const char *model_arg = NULL;
    char *prompt = NULL;
    static const struct { const char *flag, *alias, *key; } option_flags[] = {
        {"-n", "--num-predict", "num_predict"}, {"--temp", "--temperature", "temperature"},
        {"--top-k", NULL, "top_k"}, {"--top-p", NULL, "top_p"}, {"--min-p", NULL, "min_p"},
        {"--repeat-penalty", NULL, "repeat_penalty"}, {"--repeat-last-n", NULL, "repeat_last_n"},
        {"--presence-penalty", NULL, "presence_penalty"}, {"--frequency-penalty", NULL, "frequency_penalty"},
        {"--seed", NULL, "seed"},
    };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_parse_model_opt(&o.mo, argc, argv, &i)) continue;
        bool taken = false;
        for (size_t k = 0; k < sizeof option_flags / sizeof option_flags[0] && !taken; k++) {
            if (strcmp(a, option_flags[k].flag) && (!option_flags[k].alias || strcmp(a, option_flags[k].alias))) continue;
            add_flag(&o, a, option_flags[k].key, cli_value(argc, argv, &i));
            taken = true;
        }
        if (taken) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { run_usage(); return 0; }
        else if (!strcmp(a, "--stop")) {
            if (o.n_stops == OPTIONS_MAX_STOP) anv_die("--stop: at most %d stop strings", OPTIONS_MAX_STOP);
            o.stops[o.n_stops++] = cli_value(argc, argv, &i);
        }
        else if (!strcmp(a, "--system")) o.system = cli_value(argc, argv, &i);
        else if (!strcmp(a, "--format")) format_arg = cli_value(argc, argv, &i);
        else if (!strcmp(a, "--raw")) o.raw = true;
        else if (!strcmp(a, "--think") || !strncmp(a, "--think=", 8)) {
            const char *v = a[7] == '=' ? a + 8 : "true";
            if (!strcmp(v, "false")) o.think = CHAT_THINK_OFF;
            else if (!strcmp(v, "true")) o.think = CHAT_THINK_ON;
            else if (!strcmp(v, "low")) o.think = CHAT_THINK_LOW;     /* levels: gpt-oss's Reasoning */
            else if (!strcmp(v, "medium")) o.think = CHAT_THINK_MEDIUM;
            else if (!strcmp(v, "high")) o.think = CHAT_THINK_HIGH;
            else anv_die("--think: '%s' is not true, false, low, medium or high", v);
        }
        else if (!strcmp(a, "--hidethinking")) o.hide_thinking = true;
        else if (!strcmp(a, "--keepalive")) o.keep_alive = cli_value(argc, argv, &i);
        else if (!strcmp(a, "--truncate") || !strncmp(a, "--truncate=", 11)) {
            const char *v = a[10] == '=' ? a + 11 : "true";
            if (strcmp(v, "true") && strcmp(v, "false")) anv_die("--truncate: '%s' is not true or false", v);
            o.truncate = !strcmp(v, "true");
        }
        else if (!strcmp(a, "--dimensions")) o.dimensions = cli_int(a, cli_value(argc, argv, &i), 1, 1 << 20);
        else if (!strcmp(a, "--nowordwrap") || !strcmp(a, "--insecure")) continue;
        else if (!strcmp(a, "--local")) o.local = true;
        else if (!strcmp(a, "--mmproj")) o.mmproj = cli_value(argc, argv, &i);
        else if (!strcmp(a, "--image")) o.image = cli_value(argc, argv, &i);
        else if (!strcmp(a, "-i") || !strcmp(a, "--interactive")) o.interactive = true;
        else if (!strcmp(a, "--template")) {
            const char *v = cli_value(argc, argv, &i);
            o.chat_fmt = chat_format_from_name(v);
            if (o.chat_fmt < 0) anv_die("--template: unknown chat format '%s' (gemma, llama3, chatml, mistral, llama2, raw)", v);
        } else if (a[0] == '-' && a[1]) anv_die("run: unknown option '%s'", a);
        else if (!model_arg) model_arg = a;
        else if (!prompt) prompt = strdup(a);
        else anv_die("run: unexpected argument '%s' (quote the prompt)", a);
    }
    if (!model_arg) { run_usage(); return 2; }
    if (format_arg) load_format(&o, format_arg);  /* a bad schema fails before the model loads */
    store_entry entry;
    if (store_resolve(NULL, model_arg, &entry) != 0) anv_die("%s", anv_last_error());
    const cli_model_opts cli_mo = o.mo;        /* before the model's params: the chat's /set parameter and /load start here */
    const char *cli_system = o.system;
    if (resolve_options(&o, &entry) != 0) {
        options_clear(&o.ro);
        store_entry_clear(&entry);
        free(prompt);
        anv_die("%s", anv_last_error());
    }
    if (!o.system) o.system = entry.system;
    if (o.chat_fmt < 0) o.template_go = entry.template_text;  /* --template picks a built-in format */
    o.messages_json = entry.messages_json;
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
    if (o.image && !o.mmproj) o.mmproj = entry.projector_path;   /* a store model's projector layer */
    if (o.image) {
        if (!prompt) anv_die("run: --image needs a prompt");
        add_image_file(&o, o.image, NULL, 0);
    }
    if (prompt) {   /* image files the prompt names (Ollama's rules, cli_images.h) */
        cli_images imgs;
        char *rest = cli_images_extract(prompt, &imgs);
        if (!rest) anv_die("run: %s", anv_last_error());
        /* a --mmproj given is loaded as it is (its own errors name it); else the model needs a projector */
        if (imgs.n && !o.mmproj && !model_has_vision(entry.model_path, entry.projector_path))
            anv_die("model '%s' does not support image input (it is a text-only model): '%s'", model_arg,
                    imgs.files[0].path);
        if (imgs.n) {
            if (!o.mmproj) o.mmproj = entry.projector_path;
            for (int i = 0; i < imgs.n; i++) {
                fprintf(stderr, "Added image '%s'\n", imgs.files[i].path);
                add_image_file(&o, imgs.files[i].path, imgs.files[i].data, imgs.files[i].size);
            }
            free(prompt);
            prompt = rest;
        } else {
            free(rest);
        }
        cli_images_free(&imgs);
    }
    /* A running server keeps the model loaded between runs; flags it cannot honour keep
     * the run in this process (images: the server does not evaluate them yet). */
    bool local_only = o.local || o.chat_fmt >= 0 || o.mo.kv_type != QT_F16 || o.mo.tensor_split || o.n_decoded > 0;
    gguf_file *header = gguf_open(entry.model_path);
    const bool embeds = header && model_file_embeds_only(header);
    gguf_close(header);
    if (embeds) {
        char *abs = entry.model_digest ? NULL : realpath(entry.model_path, NULL);
        const bool remote = !local_only && client_server_up();
        run_embed_opts eo = {.model = abs ? abs : model_arg, .model_path = entry.model_path, .mo = &o.mo, .text = prompt,
                             .remote = remote, .keep_alive = o.keep_alive, .truncate = o.truncate,
                             .dimensions = o.dimensions};
        int rc = run_embedding(&eo);
        free(abs);
        free(prompt);
        grammar_free(o.grammar);
        free(o.format);
        options_clear(&o.ro);
        store_entry_clear(&entry);
        return rc;
    }
    if (!local_only && client_server_up()) {
        /* a file path goes to the server as an absolute path (its working directory differs) */
        char *abs = entry.model_digest ? NULL : realpath(entry.model_path, NULL);
        int rc = run_remote(&o, abs ? abs : model_arg, prompt, &entry, cli_system);
        free(abs);
        grammar_free(o.grammar);
        free(o.format);
        options_clear(&o.ro);
        store_entry_clear(&entry);
        return rc;
    }
    double t_start = anv_mono_s(), load_s = 0;
    local_chat lc = {.o = &o, .cli_mo = cli_mo, .cli_raw = o.raw};
    local_setup(&lc, &entry, &load_s);
    if (o.n_decoded) load_vision(&o, &lc, entry.model_path, &prompt);
    if (prompt) {
        chat_message msg = {.role = "user", .content = prompt};
        gen_stats st;
        char *reply = answer(lc.m, lc.ctx, lc.smp, lc.gm, &o, &msg, 1, &st, NULL);
        if (!reply) anv_die("%s", anv_last_error());
        free(reply);
        fputc('\n', stdout);
        if (o.mo.verbose) print_stats(load_s, &st, anv_mono_s() - t_start);
        free(prompt);
    } else {
        if (o.chat_fmt < 0 && !o.template_go && prompt_model_is_base(lc.m))   /* once, before the first turn */
            fprintf(stderr, "anvil: this is a base model (no chat template): it continues the text you type "
                    "rather than answering it (--template NAME chats in a format)\n");
        repl_session s = session_start(&o, model_arg, &entry, cli_system, false);
        repl_backend b = {.reply = local_reply, .apply = local_apply, .load = local_load, .user = &lc};
        session_run(&s, &b);
    }
    vision_free(o.vision);
    for (int i = 0; i < o.n_decoded; i++) image_free(&o.decoded[i]);
    free(o.decoded);
    free(o.imgs);
    local_teardown(&lc);
    chat_vision_free(lc.cv);
    grammar_free(lc.json_grammar);
    grammar_free(o.grammar);
    free(o.format);
    options_clear(&o.ro);
    store_entry_clear(&entry);
    return 0;
}
