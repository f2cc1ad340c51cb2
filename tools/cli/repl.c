/* repl: Ollama's interactive chat commands over a conversation (see repl.h). The texts
 * (help, confirmations, errors) are Ollama's, so its users' habits and scripts carry over. */
#include "repl.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytebuf.h"
#include "cli.h"
#include "cli_images.h"
#include "client.h"
#include "error.h"
#include "gguf.h"
#include "image.h"
#include "model_create.h"
#include "options.h"
#include "repl_input.h"
#include "vision.h"

#define MAX_ARGS 64

/* ---- help ---- */

static void usage(void) {
    fputs("Available Commands:\n"
          "  /set            Set session variables\n"
          "  /show           Show model information\n"
          "  /load <model>   Load a session or model\n"
          "  /save <model>   Save your current session\n"
          "  /clear          Clear session context\n"
          "  /bye            Exit\n"
          "  /?, /help       Help for a command\n"
          "  /? shortcuts    Help for keyboard shortcuts\n"
          "\n"
          "Use \"\"\" to begin a multi-line message.\n\n", stderr);
}

static void usage_set(void) {
    fputs("Available Commands:\n"
          "  /set parameter ...     Set a parameter\n"
          "  /set system <string>   Set system message\n"
          "  /set history           Enable history\n"
          "  /set nohistory         Disable history\n"
          "  /set wordwrap          Enable wordwrap\n"
          "  /set nowordwrap        Disable wordwrap\n"
          "  /set format json       Enable JSON mode\n"
          "  /set noformat          Disable formatting\n"
          "  /set verbose           Show LLM stats\n"
          "  /set quiet             Disable LLM stats\n"
          "  /set think             Enable thinking\n"
          "  /set nothink           Disable thinking\n\n", stderr);
}

static void usage_shortcuts(void) {
    fprintf(stderr, "Available keyboard shortcuts (%s):\n"
          "  Ctrl + a            Move to the beginning of the line (Home)\n"
          "  Ctrl + e            Move to the end of the line (End)\n"
          "   Alt + b            Move back (left) one word\n"
          "   Alt + f            Move forward (right) one word\n"
          "  Ctrl + k            Delete the sentence after the cursor\n"
          "  Ctrl + u            Delete the sentence before the cursor\n"
          "  Ctrl + w            Delete the word before the cursor\n"
          "  Up / Down           Previous / next line of the history\n"
          "\n"
          "  Ctrl + l            Clear the screen\n"
          "  Ctrl + c            Stop the model from responding\n"
          "  Ctrl + d            Exit anvil (/bye)\n\n",
          !strcmp(repl_input_kind(), "libedit") ? "libedit line editing"
                                                : "this build reads plain lines: no editing keys or history");
}

static void usage_show(void) {
    fputs("Available Commands:\n"
          "  /show info         Show details for this model\n"
          "  /show license      Show model license\n"
          "  /show modelfile    Show Modelfile for this model\n"
          "  /show parameters   Show parameters for this model\n"
          "  /show system       Show system message\n"
          "  /show template     Show prompt template\n\n", stderr);
}

static void usage_parameters(void) {
    fputs("Available Parameters:\n"
          "  /set parameter seed <int>             Random number seed\n"
          "  /set parameter num_predict <int>      Max number of tokens to predict\n"
          "  /set parameter top_k <int>            Pick from top k num of tokens\n"
          "  /set parameter top_p <float>          Pick token based on sum of probabilities\n"
          "  /set parameter min_p <float>          Pick token based on top token probability * min_p\n"
          "  /set parameter num_ctx <int>          Set the context size\n"
          "  /set parameter temperature <float>    Set creativity level\n"
          "  /set parameter repeat_penalty <float> How strongly to penalize repetitions\n"
          "  /set parameter repeat_last_n <int>    Set how far back to look for repetitions\n"
          "  /set parameter num_gpu <int>          The number of layers to send to the GPU\n"
          "  /set parameter stop <string> <string> ...   Set the stop parameters\n\n", stderr);
}

/* ---- words ---- */

/* Splits line at whitespace into argv (pointers into the copy *buf, malloc'd). */
static int split_words(const char *line, char **buf, char **argv) {
    *buf = strdup(line);
    int n = 0;
    for (char *p = *buf; *p && n < MAX_ARGS;) {
        while (*p && isspace((unsigned char)*p)) p++;
        if (!*p) break;
        argv[n++] = p;
        while (*p && !isspace((unsigned char)*p)) p++;
        if (*p) *p++ = 0;
    }
    return n;
}

/* The text after the first n words of line (Ollama joins the rest with single spaces). */
static char *join_words(char **argv, int from, int n) {
    size_t len = 1;
    for (int i = from; i < n; i++) len += strlen(argv[i]) + 1;
    char *s = malloc(len);
    s[0] = 0;
    for (int i = from; i < n; i++) {
        if (i > from) strcat(s, " ");
        strcat(s, argv[i]);
    }
    return s;
}

static bool starts_with(const char *s, const char *p) { return !strncmp(s, p, strlen(p)); }
static bool ends_with(const char *s, const char *p) {
    size_t a = strlen(s), b = strlen(p);
    return a >= b && !strcmp(s + a - b, p);
}

/* ---- the conversation ---- */

typedef struct {
    chat_message *msgs;
    cli_images *imgs;          /* each message's image files (owned) */
    repl_msg_images *views;    /* the same for the backend */
    int n, cap;
} conversation;

/* Appends a message; its images (may be NULL) move into the conversation. */
static void conv_add(conversation *c, const char *role, char *content, cli_images *imgs) {
    if (c->n == c->cap) {
        c->cap = c->cap * 2 + 8;
        c->msgs = realloc(c->msgs, sizeof *c->msgs * (size_t)c->cap);
        c->imgs = realloc(c->imgs, sizeof *c->imgs * (size_t)c->cap);
        c->views = realloc(c->views, sizeof *c->views * (size_t)c->cap);
        if (!c->msgs || !c->imgs || !c->views) anv_die("out of memory");
    }
    c->imgs[c->n] = imgs ? *imgs : (cli_images){0};
    if (imgs) memset(imgs, 0, sizeof *imgs);
    c->msgs[c->n++] = (chat_message){.role = role, .content = content};
}

static void conv_drop_last(conversation *c) {
    c->n--;
    free((char *)c->msgs[c->n].content);
    cli_images_free(&c->imgs[c->n]);
}

static void conv_clear(conversation *c) {
    while (c->n) conv_drop_last(c);
}

/* ---- /set parameter ---- */

/* A parameter's value typed as Ollama's FormatParams does: stop takes every value as a
 * list; a number or true/false is typed; anything else stays text. The values are checked
 * by the same code as a Modelfile's PARAMETER. */
static cJSON *typed_param(const char *key, char **vals, int n) {
    run_options check;
    options_default(&check);
    for (int i = 0; i < n; i++)
        if (options_set_text(&check, key, vals[i]) != 0) { options_clear(&check); return NULL; }
    options_clear(&check);
    if (!strcmp(key, "stop")) {
        cJSON *arr = cJSON_CreateArray();
        for (int i = 0; i < n; i++) cJSON_AddItemToArray(arr, cJSON_CreateString(vals[i]));
        return arr;
    }
    if (!strcmp(vals[0], "true") || !strcmp(vals[0], "false")) return cJSON_CreateBool(!strcmp(vals[0], "true"));
    char *end;
    double d = strtod(vals[0], &end);
    if (end != vals[0] && !*end) return cJSON_CreateNumber(d);
    return cJSON_CreateString(vals[0]);
}

static void set_parameter(repl_session *s, const repl_backend *b, char **argv, int n) {
    if (n < 4) { usage_parameters(); return; }
    const char *key = argv[2];
    cJSON *v = typed_param(key, argv + 3, n - 3);
    if (!v) { printf("Couldn't set parameter: \"%s\"\n", anv_last_error()); return; }
    cJSON *old = cJSON_DetachItemFromObject(s->params, key);
    cJSON_AddItemToObject(s->params, key, v);
    if (b->apply(b->user, s) != 0) {
        printf("Couldn't set parameter: \"%s\"\n", anv_last_error());
        cJSON_DeleteItemFromObject(s->params, key);
        if (old) cJSON_AddItemToObject(s->params, key, old);
        b->apply(b->user, s);
        return;
    }
    cJSON_Delete(old);
    char *joined = join_words(argv, 3, n);
    for (char *p = joined; (p = strchr(p, ' ')); p++) {   /* Ollama joins the values with ", " */
        memmove(p + 1, p, strlen(p) + 1);
        *p = ',';
        p++;
    }
    printf("Set parameter '%s' to '%s'\n", key, joined);
    free(joined);
}

/* ---- /show ---- */

/* The model's params layer with the session's parameters over it (JSON text, malloc'd). */
static char *merged_params(const repl_session *s) {
    cJSON *p = s->entry.params_json ? cJSON_Parse(s->entry.params_json) : NULL;
    if (!cJSON_IsObject(p)) { cJSON_Delete(p); p = cJSON_CreateObject(); }
    const cJSON *it;
    cJSON_ArrayForEach(it, s->params) {
        cJSON_DeleteItemFromObject(p, it->string);
        cJSON_AddItemToObject(p, it->string, cJSON_Duplicate(it, 1));
    }
    char *t = cJSON_PrintUnformatted(p);
    cJSON_Delete(p);
    return t;
}

static void show(const repl_session *s, const char *what) {
    const store_entry *e = &s->entry;
    if (!strcmp(what, "info")) {
        char *argv[] = {"show", s->model, NULL};
        fflush(stdout);
        cmd_show(2, argv);
    } else if (!strcmp(what, "license")) {
        if (e->license && *e->license) cli_print_text(e->license);
        else puts("No license was specified for this model.");
    } else if (!strcmp(what, "modelfile")) {
        store_entry shown = *e;   /* the model as this session would save it */
        char *params = merged_params(s);
        shown.params_json = params;
        if (s->system) shown.system = s->system;
        char *mf = modelfile_render(&shown);
        if (mf) cli_print_text(mf);
        else printf("error: %s\n", anv_last_error());
        free(mf);
        free(params);
    } else if (!strcmp(what, "parameters")) {
        puts("Model defined parameters:");
        cJSON *p = e->params_json ? cJSON_Parse(e->params_json) : NULL;
        if (!p || !cJSON_GetArraySize(p)) puts("  No additional parameters were specified for this model.");
        else cli_print_params(p, "  ", 30);
        cJSON_Delete(p);
        putchar('\n');
        if (cJSON_GetArraySize(s->params)) {
            puts("User defined parameters:");
            cli_print_params(s->params, "  ", 30);
            putchar('\n');
        }
    } else if (!strcmp(what, "system")) {
        const char *sys = s->system ? s->system : e->system;
        if (sys && *sys) printf("%s\n\n", sys);
        else puts("No system message was specified for this model.");
    } else if (!strcmp(what, "template")) {
        char *t = NULL;
        if (e->template_text) t = strdup(e->template_text);
        else {
            gguf_file *g = gguf_open(e->model_path);
            if (g) t = gguf_get_str_dup(g, "tokenizer.chat_template");
            gguf_close(g);
        }
        if (t && *t) cli_print_text(t);
        else puts("No prompt template was specified for this model.");
        free(t);
    } else {
        printf("Unknown command '/show %s'. Type /? for help\n", what);
    }
}

/* ---- /save ---- */

/* The model's MESSAGEs, then this session's conversation (Ollama's LoadedMessages + Messages). */
static cJSON *saved_messages(const repl_session *s, const conversation *c) {
    cJSON *arr = s->entry.messages_json ? cJSON_Parse(s->entry.messages_json) : NULL;
    if (!cJSON_IsArray(arr)) { cJSON_Delete(arr); arr = cJSON_CreateArray(); }
    for (int i = 0; i < c->n; i++) {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", c->msgs[i].role);
        cJSON_AddStringToObject(m, "content", c->msgs[i].content);
        cJSON_AddItemToArray(arr, m);
    }
    return arr;
}

static void save_progress(const char *status, void *user) { (void)status; (void)user; }

static int save_local(const repl_session *s, const char *name, cJSON *messages) {
    create_spec spec = {0};
    spec.from = s->entry.model_digest ? strdup(s->model) : realpath(s->entry.model_path, NULL);
    if (s->system) spec.system = strdup(s->system);
    if (cJSON_GetArraySize(s->params)) spec.params_json = cJSON_PrintUnformatted(s->params);
    if (cJSON_GetArraySize(messages)) spec.messages_json = cJSON_PrintUnformatted(messages);
    store *st = store_open();
    int rc = st ? store_create(st, name, &spec, save_progress, NULL) : -1;
    store_close(st);
    create_spec_clear(&spec);
    return rc;
}

static int save_remote(const repl_session *s, const char *name, cJSON *messages) {
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "model", name);
    char *abs = s->entry.model_digest ? NULL : realpath(s->entry.model_path, NULL);   /* the server's cwd differs */
    cJSON_AddStringToObject(req, "from", abs ? abs : s->model);
    free(abs);
    if (s->system) cJSON_AddStringToObject(req, "system", s->system);
    if (cJSON_GetArraySize(s->params)) cJSON_AddItemToObject(req, "parameters", cJSON_Duplicate(s->params, 1));
    if (cJSON_GetArraySize(messages)) cJSON_AddItemToObject(req, "messages", cJSON_Duplicate(messages, 1));
    cJSON_AddBoolToObject(req, "stream", 0);
    char *body = cJSON_PrintUnformatted(req);
    cJSON_Delete(req);
    char *reply = NULL;
    int status = client_request("POST", "/api/create", body, &reply);
    free(body);
    int rc = 0;
    if (status < 0) rc = -1;
    else if (status / 100 != 2) {
        char *msg = client_error_message(status, reply);
        anv_set_error("%s", msg ? msg : "the server refused the create");
        free(msg);
        rc = -1;
    }
    free(reply);
    return rc;
}

static void save(const repl_session *s, const conversation *c, char **argv, int n) {
    if (n != 2) { puts("Usage:\n  /save <modelname>"); return; }
    store_name parsed;
    if (store_name_parse(argv[1], &parsed) != 0) {
        printf("error: The model name '%s' is invalid\n", argv[1]);
        return;
    }
    cJSON *messages = saved_messages(s, c);
    int rc = s->remote ? save_remote(s, argv[1], messages) : save_local(s, argv[1], messages);
    cJSON_Delete(messages);
    if (rc != 0) printf("error: %s\n", anv_last_error());
    else printf("Created new model '%s'\n", argv[1]);
}

/* ---- /load ---- */

static void load(repl_session *s, const repl_backend *b, conversation *c, char **argv, int n) {
    if (n != 2) { puts("Usage:\n  /load <modelname>"); return; }
    printf("Loading model '%s'\n", argv[1]);
    fflush(stdout);
    store_entry e;
    if (store_resolve(NULL, argv[1], &e) != 0) {
        printf("Couldn't find model '%s'\n", argv[1]);
        return;
    }
    store_entry old_entry = s->entry;
    char *old_model = s->model;
    s->entry = e;
    s->model = strdup(argv[1]);
    if (b->load(b->user, s) != 0) {
        printf("error: %s\n", anv_last_error());
        store_entry_clear(&s->entry);
        free(s->model);
        s->entry = old_entry;
        s->model = old_model;
        return;
    }
    store_entry_clear(&old_entry);
    free(old_model);
    s->mmproj = NULL;   /* --mmproj named the first model's projector */
    conv_clear(c);   /* nothing of the old conversation is kept */
}

/* ---- /set ---- */

typedef enum { ML_NONE, ML_PROMPT, ML_SYSTEM } multiline_state;

static void set_system(repl_session *s, const char *text) {
    free(s->system);
    s->system = strdup(text);
    puts("Set system message.");
}

static void set_cmd(repl_session *s, const repl_backend *b, repl_input *in, char **argv, int n,
                    multiline_state *ml, bytebuf *sb) {
    if (n < 2) { usage_set(); return; }
    const char *what = argv[1];
    if (!strcmp(what, "parameter")) set_parameter(s, b, argv, n);
    else if (!strcmp(what, "system")) {
        if (n < 3) { usage_set(); return; }
        /* the text as typed after "/set system " (Ollama joins the words with one space) */
        char *text = join_words(argv, 2, n);
        if (starts_with(text, "\"\"\"")) {
            char *rest = text + 3;
            if (strlen(rest) >= 3 && ends_with(rest, "\"\"\"")) {
                rest[strlen(rest) - 3] = 0;
                set_system(s, rest);
            } else {
                bytebuf_printf(sb, "%s\n", rest);
                *ml = ML_SYSTEM;
            }
        } else {
            set_system(s, text);
        }
        free(text);
    }
    else if (!strcmp(what, "history")) repl_input_save_history(in, true);
    else if (!strcmp(what, "nohistory")) repl_input_save_history(in, false);
    else if (!strcmp(what, "wordwrap")) puts("Set 'wordwrap' mode.");
    else if (!strcmp(what, "nowordwrap")) puts("Set 'nowordwrap' mode.");
    else if (!strcmp(what, "verbose")) { s->verbose = true; puts("Set 'verbose' mode."); }
    else if (!strcmp(what, "quiet")) { s->verbose = false; puts("Set 'quiet' mode."); }
    else if (!strcmp(what, "think")) {
        static const struct { const char *name; int value; } levels[] = {
            {"true", CHAT_THINK_ON}, {"low", CHAT_THINK_LOW}, {"medium", CHAT_THINK_MEDIUM}, {"high", CHAT_THINK_HIGH}};
        int think = -1;
        for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++)
            if (!strcmp(n > 2 ? argv[2] : "true", levels[i].name)) think = levels[i].value;
        if (think < 0) { printf("error: invalid think value '%s' (true, low, medium or high)\n", argv[2]); return; }
        s->think = think;
        if (n > 2) printf("Set 'think' mode to '%s'.\n", argv[2]);
        else puts("Set 'think' mode.");
    }
    else if (!strcmp(what, "nothink")) { s->think = CHAT_THINK_OFF; puts("Set 'nothink' mode."); }
    else if (!strcmp(what, "format")) {
        if (n < 3 || strcmp(argv[2], "json")) { puts("Invalid or missing format. For 'json' mode use '/set format json'"); return; }
        bool was = s->json_format;
        s->json_format = true;
        if (b->apply(b->user, s) != 0) { s->json_format = was; printf("error: %s\n", anv_last_error()); return; }
        puts("Set format to 'json' mode.");
    }
    else if (!strcmp(what, "noformat")) {
        s->json_format = false;
        b->apply(b->user, s);
        puts("Disabled format.");
    }
    else printf("Unknown command '/set %s'. Type /? for help\n", what);
}

/* ---- the loop ---- */

/* Handles a /command; returns false for /bye and /exit. */
static bool command(repl_session *s, const repl_backend *b, repl_input *in, conversation *c, const char *line,
                    multiline_state *ml, bytebuf *sb) {
    char *buf, *argv[MAX_ARGS];
    int n = split_words(line, &buf, argv);
    const char *cmd = argv[0];
    bool go_on = true;
    if (!strcmp(cmd, "/bye") || !strcmp(cmd, "/exit")) go_on = false;
    else if (!strcmp(cmd, "/clear")) { conv_clear(c); puts("Cleared session context"); }
    else if (!strcmp(cmd, "/?") || !strcmp(cmd, "/help")) {
        if (n < 2) usage();
        else if (!strcmp(argv[1], "set") || !strcmp(argv[1], "/set")) usage_set();
        else if (!strcmp(argv[1], "show") || !strcmp(argv[1], "/show")) usage_show();
        else if (!strcmp(argv[1], "shortcut") || !strcmp(argv[1], "shortcuts")) usage_shortcuts();
        else usage();
    }
    else if (!strcmp(cmd, "/set")) set_cmd(s, b, in, argv, n, ml, sb);
    else if (!strcmp(cmd, "/show")) { if (n < 2) usage_show(); else show(s, argv[1]); }
    else if (!strcmp(cmd, "/load")) load(s, b, c, argv, n);
    else if (!strcmp(cmd, "/save")) save(s, c, argv, n);
    else if (cli_line_names_image(line, cmd)) bytebuf_printf(sb, "%s", line);   /* "/tmp/cat.png what is it" */
    else printf("Unknown command '%s'. Type /? for help\n", cmd);
    fflush(stdout);
    free(buf);
    return go_on;
}

/* The image files the message names (Ollama's rules, cli_images.h), taken out of *text and
 * attached ("Added image '<path>'", as Ollama's CLI says). False (one line printed, nothing
 * sent) when a named file cannot be used or decoded (engine/image), or the model has no vision. */
static bool attach_images(const repl_session *s, char **text, cli_images *imgs) {
    char *rest = cli_images_extract(*text, imgs);
    if (!rest) {
        fprintf(stderr, "%s\n", anv_last_error());
        return false;
    }
    if (imgs->n == 0) { free(rest); return true; }
    if (model_has_vision(s->entry.model_path, s->mmproj ? s->mmproj : s->entry.projector_path)) {
        for (int i = 0; i < imgs->n; i++) {   /* decoded once here: a bad file is refused before it is sent */
            anv_image probe;
            if (image_decode(imgs->files[i].data, imgs->files[i].size, NULL, &probe) != 0) {
                fprintf(stderr, "%s: %s\n", imgs->files[i].path, anv_last_error());
                free(rest);
                cli_images_free(imgs);
                return false;
            }
            image_free(&probe);
        }
        for (int i = 0; i < imgs->n; i++) fprintf(stderr, "Added image '%s'\n", imgs->files[i].path);
        free(*text);
        *text = rest;
        return true;
    }
    fprintf(stderr, "model '%s' does not support image input (it is a text-only model)\n", s->model);
    free(rest);
    cli_images_free(imgs);
    return false;
}

static void send_message(repl_session *s, const repl_backend *b, conversation *c, char *text) {
    cli_images imgs = {0};
    if (!attach_images(s, &text, &imgs)) { free(text); return; }
    conv_add(c, "user", text, &imgs);
    repl_interrupt_clear();
    for (int i = 0; i < c->n; i++) c->views[i] = (repl_msg_images){c->imgs[i].files, c->imgs[i].n};
    char *reply = b->reply(b->user, s, c->msgs, c->views, c->n);
    if (reply) {
        conv_add(c, "assistant", reply, NULL);
        fputs("\n\n", stdout);
    } else if (repl_interrupted()) {
        fputc('\n', stdout);   /* stopped by Ctrl+C: the user's message stays, the partial reply not (Ollama) */
    } else {
        conv_drop_last(c);   /* failed (error printed): as if not sent */
    }
    fflush(stdout);
}

static void sb_reset(bytebuf *sb) {
    sb->len = 0;
    if (sb->data) sb->data[0] = 0;
}

void repl_run(repl_session *s, const repl_backend *b, const char *history_path, bool save_history) {
    repl_input *in = repl_input_new(history_path);
    if (!in) anv_die("out of memory");
    repl_input_save_history(in, save_history);
    conversation c = {0};
    multiline_state ml = ML_NONE;
    bytebuf sb = {0};   /* the message being typed (several lines between """) */
    for (;;) {
        char *line = NULL;
        repl_read_result r = repl_input_read(in, ml == ML_NONE ? ">>> " : "... ", &line);
        if (r == REPL_EOF) { fputc('\n', stdout); break; }
        if (r == REPL_INTERRUPT) {
            if (!line || !*line) puts("Use Ctrl + d or /bye to exit.");
            fflush(stdout);
            free(line);
            sb_reset(&sb);
            ml = ML_NONE;
            continue;
        }
        bool go_on = true;
        if (ml != ML_NONE) {
            bool done = ends_with(line, "\"\"\"");
            if (done) line[strlen(line) - 3] = 0;
            bytebuf_printf(&sb, "%s%s", line, done ? "" : "\n");
            free(line);
            if (!done) continue;
            if (ml == ML_SYSTEM) {
                set_system(s, bytebuf_str(&sb));
                sb_reset(&sb);
            }
            ml = ML_NONE;
        } else if (starts_with(line, "\"\"\"")) {
            char *rest = line + 3;
            bool done = strlen(rest) >= 3 && ends_with(rest, "\"\"\"");
            if (done) rest[strlen(rest) - 3] = 0;
            bytebuf_printf(&sb, "%s%s", rest, done ? "" : "\n");
            if (!done) ml = ML_PROMPT;
            free(line);
        } else if (line[0] == '/') {
            go_on = command(s, b, in, &c, line, &ml, &sb);
            free(line);
        } else {
            bytebuf_printf(&sb, "%s", line);
            free(line);
        }
        if (!go_on) break;
        if (sb.oom) anv_die("out of memory");
        if (sb.len && ml == ML_NONE) {
            char *text = strdup(bytebuf_str(&sb));
            sb_reset(&sb);
            send_message(s, b, &c, text);
        }
    }
    bytebuf_free(&sb);
    conv_clear(&c);
    free(c.msgs);
    free(c.imgs);
    free(c.views);
    repl_input_free(in);
}
