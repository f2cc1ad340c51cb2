/* repl_input: line editing, history and Ctrl+C for the interactive chat (see repl_input.h). */
#include "repl_input.h"
#include "settings.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef _WIN32
#include <windows.h>
#endif
#ifdef ANVIL_HAVE_LIBEDIT
#include <histedit.h>
#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <sys/stat.h>
#include <wchar.h>
#endif

static volatile sig_atomic_t interrupt_flag;

static void on_sigint(int sig) {
    (void)sig;
    interrupt_flag = 1;
#ifdef _WIN32
    signal(SIGINT, on_sigint);   /* the CRT resets the handler before calling it */
#endif
}

bool repl_interrupted(void) { return interrupt_flag != 0; }
void repl_interrupt_clear(void) { interrupt_flag = 0; }

struct repl_input {
    char *history_path;
    bool save_history;
    bool tty;
    const char *prompt;       /* shown by libedit's prompt callback */
#ifdef ANVIL_HAVE_LIBEDIT
    EditLine *el;
    History *hist;
    bool line_interrupted;    /* Ctrl+C ended the line being edited */
#endif
#ifdef _WIN32
    void (*old_handler)(int);
#else
    struct sigaction old_action;
#endif
};

const char *repl_input_kind(void) {
#ifdef ANVIL_HAVE_LIBEDIT
    return "libedit";
#else
    return "plain";
#endif
}

static bool env_true(const char *name) {
    const char *v = anv_setting_raw(name);
    return v && *v && strcmp(v, "0") && strcmp(v, "false") && strcmp(v, "FALSE");
}

bool repl_history_disabled_by_env(void) { return env_true("ANVIL_NOHISTORY") || env_true("OLLAMA_NOHISTORY"); }

char *repl_history_path(void) {
#ifdef ANVIL_HAVE_LIBEDIT
    const char *home = anv_setting_raw("HOME");
    if (!home || !*home) return NULL;
    size_t n = strlen(home) + 32;
    char *p = malloc(n);
    if (!p) return NULL;
    snprintf(p, n, "%s/.anvil", home);
    mkdir(p, 0755);   /* may exist */
    snprintf(p, n, "%s/.anvil/history", home);
    return p;
#else
    return NULL;
#endif
}

#ifdef ANVIL_HAVE_LIBEDIT
static char *edit_prompt(EditLine *el) {
    repl_input *in = NULL;
    el_get(el, EL_CLIENTDATA, &in);
    return (char *)(in && in->prompt ? in->prompt : "");
}

/* Ctrl+C while editing (the terminal's ISIG is off in edit mode, so it arrives as a key):
 * end the line and say it was interrupted. */
static unsigned char edit_interrupt(EditLine *el, int ch) {
    (void)ch;
    repl_input *in = NULL;
    el_get(el, EL_CLIENTDATA, &in);
    if (in) in->line_interrupted = true;
    return CC_NEWLINE;
}

/* libedit's character reader, ours so that Ctrl+C always ends the line: while the terminal
 * still delivers it as SIGINT (before libedit's edit mode is in place), the interrupted
 * read() gives a Ctrl+C key instead of being retried. Multi-byte characters are decoded
 * with the locale like libedit's own reader. Returns 1, 0 at end of input, -1 on error. */
static int edit_getc(EditLine *el, wchar_t *wc) {
    (void)el;
    char bytes[MB_LEN_MAX];
    size_t n = 0;
    mbstate_t st;
    memset(&st, 0, sizeof st);
    for (;;) {
        if (interrupt_flag) { interrupt_flag = 0; *wc = 3; return 1; }
        ssize_t r = read(STDIN_FILENO, bytes + n, 1);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) return 0;
        n++;
        wchar_t w;
        mbstate_t probe = st;
        size_t k = mbrtowc(&w, bytes, n, &probe);
        if (k == (size_t)-2 && n < sizeof bytes) continue;   /* more bytes of this character */
        if (k == (size_t)-1 || k == (size_t)-2) { *wc = (unsigned char)bytes[0]; return 1; }   /* not valid: as a byte */
        *wc = k == 0 ? 0 : w;
        return 1;
    }
}

static void edit_setup(repl_input *in) {
    in->el = el_init("anvil", stdin, stdout, stderr);
    in->hist = history_init();
    if (!in->el || !in->hist) {
        if (in->el) el_end(in->el);
        if (in->hist) history_end(in->hist);
        in->el = NULL;
        in->hist = NULL;
        return;
    }
    HistEvent ev;
    history(in->hist, &ev, H_SETSIZE, 1000);
    history(in->hist, &ev, H_SETUNIQUE, 1);
    if (in->history_path) history(in->hist, &ev, H_LOAD, in->history_path);   /* a missing file is fine */
    el_set(in->el, EL_CLIENTDATA, in);
    el_set(in->el, EL_PROMPT, edit_prompt);
    el_set(in->el, EL_EDITOR, "emacs");
    el_set(in->el, EL_HIST, history, in->hist);
    /* the wide form: libedit's narrow EL_ADDFN copies the two names and never frees them */
    el_wset(in->el, EL_ADDFN, L"anvil-interrupt", L"stop the line (Ctrl+C)", edit_interrupt);
    el_set(in->el, EL_BIND, "^C", "anvil-interrupt", NULL);
    el_set(in->el, EL_SETTY, "-d", "-isig", NULL);
    el_set(in->el, EL_GETCFN, edit_getc);
    el_source(in->el, NULL);   /* ~/.editrc, like other libedit programs */
}

static repl_read_result edit_read(repl_input *in, const char *prompt, char **line) {
    in->prompt = prompt;
    in->line_interrupted = false;
    int count = 0;
    const char *text = el_gets(in->el, &count);
    if (!in->line_interrupted && (!text || count <= 0)) return REPL_EOF;
    size_t n = text ? strlen(text) : 0;
    while (n && (text[n - 1] == '\n' || text[n - 1] == '\r')) n--;
    *line = strndup(text ? text : "", n);
    if (in->line_interrupted) return REPL_INTERRUPT;   /* *line: what was typed before Ctrl+C */
    if (n) {
        HistEvent ev;
        history(in->hist, &ev, H_ENTER, *line);
        if (in->save_history && in->history_path) history(in->hist, &ev, H_SAVE, in->history_path);
    }
    return REPL_LINE;
}
#endif

repl_input *repl_input_new(const char *history_path) {
    repl_input *in = calloc(1, sizeof *in);
    if (!in) return NULL;
    in->history_path = history_path ? strdup(history_path) : NULL;
    in->save_history = true;
    in->tty = isatty(STDIN_FILENO);
#ifdef ANVIL_HAVE_LIBEDIT
    if (in->tty) {
        /* libedit decodes keys with LC_CTYPE: the user's locale, else UTF-8 (what the models take) */
        const char *loc = setlocale(LC_CTYPE, "");
        if (!loc || strcmp(nl_langinfo(CODESET), "UTF-8")) setlocale(LC_CTYPE, "C.UTF-8");
        edit_setup(in);
    }
#endif
    interrupt_flag = 0;
#ifdef _WIN32
    in->old_handler = signal(SIGINT, on_sigint);
#else
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;   /* no SA_RESTART: a blocked fgets returns at Ctrl+C */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &in->old_action);
#endif
    return in;
}

void repl_input_free(repl_input *in) {
    if (!in) return;
#ifdef ANVIL_HAVE_LIBEDIT
    if (in->el) el_end(in->el);
    if (in->hist) history_end(in->hist);
#endif
#ifdef _WIN32
    signal(SIGINT, in->old_handler);
#else
    sigaction(SIGINT, &in->old_action, NULL);
#endif
    free(in->history_path);
    free(in);
}

void repl_input_save_history(repl_input *in, bool on) { in->save_history = on; }

/* The plain path: fgets, a line of any length; Ctrl+C at the prompt interrupts it. */
static repl_read_result plain_read(repl_input *in, const char *prompt, char **line) {
    if (in->tty) { fputs(prompt, stdout); fflush(stdout); }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    char chunk[4096];
    interrupt_flag = 0;
    for (;;) {
        if (!fgets(chunk, sizeof chunk, stdin)) {
#ifdef _WIN32
            /* a console read ends at Ctrl+C before the handler (another thread) has run */
            for (int i = 0; i < 20 && !interrupt_flag && in->tty; i++) Sleep(5);
#endif
            if (interrupt_flag || (ferror(stdin) && errno == EINTR)) {
                clearerr(stdin);
                interrupt_flag = 0;
                free(buf);
                fputc('\n', stdout);
                return REPL_INTERRUPT;
            }
            if (!len) { free(buf); return REPL_EOF; }
            break;
        }
        size_t n = strlen(chunk);
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            char *nb = realloc(buf, cap);
            if (!nb) { free(buf); return REPL_EOF; }
            buf = nb;
        }
        memcpy(buf + len, chunk, n + 1);
        len += n;
        if (len && buf[len - 1] == '\n') break;
    }
    while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r')) buf[--len] = 0;
    *line = buf;
    return REPL_LINE;
}

repl_read_result repl_input_read(repl_input *in, const char *prompt, char **line) {
    *line = NULL;
    if (interrupt_flag) {   /* Ctrl+C while no reply or line was being read (a command running) */
        interrupt_flag = 0;
        *line = strdup("");
        return REPL_INTERRUPT;
    }
#ifdef ANVIL_HAVE_LIBEDIT
    if (in->el) return edit_read(in, prompt, line);
#endif
    return plain_read(in, prompt, line);
}
