/* settings: reads the environment for the whole program, through the table of
 * settings_table.c (settings.h): raw and typed reads with one error style, the OLLAMA_*
 * fallbacks and their warnings, and the printed forms of the table (help and README). */
#include "settings.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "error.h"
#include "settings_table.h"

#ifdef _WIN32
#undef getenv       /* anvil_win.h maps it to anvil_getenv (below): here it is the CRT's */
#define env_list _environ   /* MinGW's stdlib.h */
#else
extern char **environ;
#define env_list environ
#endif

const anv_setting *anv_settings(size_t *n) {
    if (n) *n = anv_settings_n_rows;
    return anv_settings_rows;
}

const anv_setting *anv_setting_find(const char *name) {
    if (!name) return NULL;
    for (size_t i = 0; i < anv_settings_n_rows; i++)
        if (!strcmp(anv_settings_rows[i].name, name)) return &anv_settings_rows[i];
    return NULL;
}

const char *anv_setting_type_name(anv_setting_type t) {
    static const char *const names[] = {"text", "0/1", "integer", "bytes", "decimal", "choice", "list", "duration", "path"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

const char *anv_setting_scope_name(anv_setting_scope s) {
    return s == ANV_SCOPE_MODEL ? "model" : s == ANV_SCOPE_REQUEST ? "request" : "process";
}

/* ---------------------------------------------------------------- reading */

/* The environment as the OS has it; on Windows HOME and XDG_CACHE_HOME as a Windows user has
 * them: %USERPROFILE% and %LOCALAPPDATA% (an explicit HOME still wins). */
static const char *os_getenv(const char *name) {
    const char *v = getenv(name);
#ifdef _WIN32
    if (v && *v) return v;
    if (!strcmp(name, "HOME")) return getenv("USERPROFILE");
    if (!strcmp(name, "XDG_CACHE_HOME")) return getenv("LOCALAPPDATA");
#endif
    return v;
}

#ifdef _WIN32
/* anvil_win.h's getenv for code that is not Anvil's own (kept for it: Anvil reads here). */
char *anvil_getenv(const char *name) { return (char *)os_getenv(name); }
#endif

/* A name of the table: an entry's, or an entry's Ollama alias. */
static bool known(const char *name) {
    if (!name) return false;
    for (size_t i = 0; i < anv_settings_n_rows; i++)
        if (!strcmp(anv_settings_rows[i].name, name) || (anv_settings_rows[i].ollama && !strcmp(anv_settings_rows[i].ollama, name)))
            return true;
    return false;
}

const char *anv_setting_raw(const char *name) {
    return known(name) ? os_getenv(name) : NULL;
}

const char *anv_setting_get(const char *name) {
    const char *v = anv_setting_raw(name);
    return v && *v ? v : NULL;
}

bool anv_setting_on(const char *name) {
    const char *v = anv_setting_get(name);
    return v && strcmp(v, "0") != 0;
}

bool anv_setting_off(const char *name) {
    const char *v = anv_setting_raw(name);
    return v && !strcmp(v, "0");
}

/* Ollama's boolean spellings (strconv.ParseBool): 1 t T TRUE true True / 0 f F FALSE false False. */
static int parse_bool(const char *v) {
    static const char *const yes[] = {"1", "t", "true"}, *const no[] = {"0", "f", "false"};
    for (int i = 0; i < 3; i++) {
        if (!strcasecmp(v, yes[i])) return 1;
        if (!strcasecmp(v, no[i])) return 0;
    }
    return -1;
}

/* An Ollama value in the ANVIL_ setting's terms, or NULL when it cannot map. */
static const char *translate(const char *ollama, const char *v) {
    if (!strcmp(ollama, "OLLAMA_IGPU_ENABLE")) {   /* enable integrated GPUs: 1 / 0 */
        const int b = parse_bool(v);
        return b < 0 ? NULL : b ? "1" : "0";
    }
    if (!strcmp(ollama, "OLLAMA_LLM_LIBRARY")) {   /* cpu, cpu_avx2 ..., rocm*, vulkan* */
        if (!strncasecmp(v, "cpu", 3)) return "cpu";
        if (!strncasecmp(v, "rocm", 4) || !strncasecmp(v, "hip", 3)) return "hip";
        if (!strncasecmp(v, "vulkan", 6)) return "vulkan";
        return NULL;   /* cuda_v12, metal ...: no such backend here */
    }
    if (!strcmp(ollama, "OLLAMA_DEBUG")) {   /* OLLAMA_DEBUG=1 / 2 / true: on */
        const int b = parse_bool(v);
        return b == 1 || (b < 0 && atoi(v) > 0) ? "1" : NULL;
    }
    return v;
}

/* Why an untranslatable Ollama value has no effect (NULL: say nothing). */
static const char *untranslatable_why(const char *ollama) {
    if (!strcmp(ollama, "OLLAMA_IGPU_ENABLE")) return "expected true or false";
    if (!strcmp(ollama, "OLLAMA_LLM_LIBRARY"))
        return "Anvil's backends are vulkan, hip (ROCm) and cpu; set ANVIL_BACKEND to one of them";
    return NULL;   /* OLLAMA_DEBUG=0: off, as meant */
}

const char *anv_setting_value(const char *name, const char **used_name) {
    if (used_name) *used_name = name;
    const anv_setting *s = anv_setting_find(name);
    if (!s) return NULL;
    const char *v = os_getenv(name);
    if (v && *v) return v;
    if (s->ollama) {
        const char *o = os_getenv(s->ollama);
        const char *t = o && *o ? translate(s->ollama, o) : NULL;
        if (t) {   /* an unmappable one: anv_env_warn_ollama says so */
            if (used_name) *used_name = s->ollama;
            return t;
        }
    }
    return v;
}

int anv_setting_long(const char *name, long long lo, long long hi, long long *out) {
    const char *used;
    const char *v = anv_setting_value(name, &used);
    if (!v || !*v) return 0;
    char *end = NULL;
    errno = 0;
    const long long x = strtoll(v, &end, 10);
    while (end && isspace((unsigned char)*end)) end++;
    if (errno || end == v || *end || x < lo || x > hi) {
        anv_set_error("%s='%.40s' is not an integer in %lld..%lld", used, v, lo, hi);
        return -1;
    }
    *out = x;
    return 1;
}

int anv_setting_int(const char *name, int lo, int hi, int *out) {
    long long x = 0;
    const int rc = anv_setting_long(name, lo, hi, &x);
    if (rc == 1) *out = (int)x;
    return rc;
}

int anv_setting_u64(const char *name, uint64_t lo, uint64_t hi, uint64_t *out) {
    const char *used;
    const char *v = anv_setting_value(name, &used);
    if (!v || !*v) return 0;
    char *end = NULL;
    errno = 0;
    const unsigned long long x = strtoull(v, &end, 10);
    if (errno || end == v || *end || v[0] == '-' || x < lo || x > hi) {
        anv_set_error("%s='%.40s' is not an integer in %llu..%llu", used, v, (unsigned long long)lo,
                      (unsigned long long)hi);
        return -1;
    }
    *out = x;
    return 1;
}

bool anv_user_cache_dir(char *out, size_t cap) {
    const char *xdg = anv_setting_raw("XDG_CACHE_HOME"), *home = anv_setting_raw("HOME");
    int n;
    if (xdg && *xdg) n = snprintf(out, cap, "%s", xdg);
    else if (home && *home) n = snprintf(out, cap, "%s/.cache", home);
    else return false;
    return n >= 0 && (size_t)n < cap;
}

/* ---------------------------------------------------------------- Ollama's names */

int anv_env_warn_ollama(FILE *out) {
    int n = 0;
    for (char **e = env_list; e && *e; e++) {
        if (strncmp(*e, "OLLAMA_", 7)) continue;
        const char *eq = strchr(*e, '=');
        if (!eq || !eq[1]) continue;
        const size_t len = (size_t)(eq - *e);
        const char *value = eq + 1;
        const anv_setting *mapped = NULL, *unsupported = NULL;
        for (size_t i = 0; i < anv_settings_n_rows; i++) {
            const anv_setting *s = &anv_settings_rows[i];
            if (!mapped && s->ollama && strlen(s->ollama) == len && !strncmp(s->ollama, *e, len)) mapped = s;
            if (!unsupported && (s->flags & ANV_SETTING_OLLAMA) && strlen(s->name) == len && !strncmp(s->name, *e, len))
                unsupported = s;
        }
        if (mapped) {
            const char *mine = os_getenv(mapped->name);
            const char *why = untranslatable_why(mapped->ollama);
            if (why && !translate(mapped->ollama, value)) {
                fprintf(out, "anvil: warning: %.*s=%s has no effect: %s\n", (int)len, *e, value, why);
                n++;
            } else if (mine && *mine && strcmp(mine, value)) {
                fprintf(out, "anvil: note: %.*s=%s is overridden by %s=%s\n", (int)len, *e, value, mapped->name, mine);
                n++;
            }
            continue;
        }
        if (unsupported && !strcmp(unsupported->name, "OLLAMA_VULKAN") && parse_bool(value) == 1) continue;   /* on anyway */
        fprintf(out, "anvil: warning: %.*s has no effect: %s\n", (int)len, *e,
                unsupported ? unsupported->help : "not a setting Anvil has (its ANVIL_* settings: anvil serve --help)");
        n++;
    }
    return n;
}

/* ---------------------------------------------------------------- printing */

void anv_settings_print_text(FILE *out, const char *group, unsigned with, unsigned without) {
    for (size_t i = 0; i < anv_settings_n_rows; i++) {
        const anv_setting *s = &anv_settings_rows[i];
        if ((group && *group && strcmp(s->group, group)) || (s->flags & with) != with || (s->flags & without)) continue;
        fprintf(out, "  %-27s %-18s %s\n", s->name, s->def, s->help);
    }
}

void anv_settings_print_groups(FILE *out) {
    const char *last = "";
    for (size_t i = 0; i < anv_settings_n_rows; i++) {
        const anv_setting *s = &anv_settings_rows[i];
        if (strcmp(s->group, last)) fprintf(out, "%s%s:\n", i ? "\n" : "", last = s->group);
        fprintf(out, "  %s", s->name);
        if (s->ollama) fprintf(out, " (or %s)", s->ollama);
        fprintf(out, "\n      %s%s\n      values: %s; default: %s; read per %s\n", s->flags & ANV_SETTING_TEST ? "tests: " : "",
                s->help, s->range, s->def, anv_setting_scope_name(s->scope));
    }
}

/* Text in a markdown cell: '|' escaped. */
static void md_cell(FILE *out, const char *s) {
    for (; *s; s++) {
        if (*s == '|') fputc('\\', out);
        fputc(*s, out);
    }
}

void anv_settings_print_markdown(FILE *out, const char *group) {
    fputs("| Variable | Values | Default | Scope | Meaning |\n|---|---|---|---|---|\n", out);
    for (size_t i = 0; i < anv_settings_n_rows; i++) {
        const anv_setting *s = &anv_settings_rows[i];
        if (group && *group && strcmp(s->group, group)) continue;
        fprintf(out, "| `%s`", s->name);
        if (s->ollama) fprintf(out, " (or `%s`)", s->ollama);
        fputs(" | ", out);
        md_cell(out, s->range);
        fputs(" | ", out);
        md_cell(out, s->def);
        fprintf(out, " | %s | ", anv_setting_scope_name(s->scope));
        if (s->flags & ANV_SETTING_TEST) fputs("Tests: ", out);
        md_cell(out, s->help);
        fputs(" |\n", out);
    }
}
