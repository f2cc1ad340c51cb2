/* settings: the one table of every environment variable Anvil reads (its ANVIL_* settings,
 * the OLLAMA_* names it accepts or warns about, and the foreign variables of the OS, the
 * Vulkan loader and ROCm it consults), and the only place that reads the environment.
 * Each entry has its name, its Ollama alias, type, allowed range, default, a one-line help
 * and its scope (read once per process, at each model load, or per request). Readers ask
 * by name; a name that is not in the table reads as unset (tests/base/check_settings.py
 * fails the build's tests on such a name and on any getenv outside settings.c). The typed
 * readers share one error style: "NAME='value' is not <what> (allowed: <range>)".
 * `anvil serve --help`, `anvil help env` and README.md's variable tables print from it. */
#ifndef ANVIL_SETTINGS_H
#define ANVIL_SETTINGS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum {
    ANV_SET_TEXT,      /* any text */
    ANV_SET_BOOL,      /* 0 / 1 (what counts as on: see anv_setting_on) */
    ANV_SET_INT,       /* a decimal integer in a range */
    ANV_SET_BYTES,     /* a byte count */
    ANV_SET_DECIMAL,   /* a decimal number (sizes in GB / MB) */
    ANV_SET_CHOICE,    /* one of the names of its range */
    ANV_SET_LIST,      /* a comma separated list */
    ANV_SET_DURATION,  /* seconds or a Go duration (5m, 1h30m, -1) */
    ANV_SET_PATH,      /* a file or folder */
} anv_setting_type;

typedef enum {
    ANV_SCOPE_PROCESS,   /* read once when the process (or its server, backend) starts */
    ANV_SCOPE_MODEL,     /* read at each model load */
    ANV_SCOPE_REQUEST,   /* read per request */
} anv_setting_scope;

enum {
    ANV_SETTING_FOREIGN = 1 << 0,   /* not Anvil's: the OS's, the loader's, ROCm's, llama.cpp's */
    ANV_SETTING_TEST = 1 << 1,      /* a test hook */
    ANV_SETTING_OLLAMA = 1 << 2,    /* an OLLAMA_* name Anvil has no setting for: help says why */
    ANV_SETTING_SERVE = 1 << 3,     /* listed by `anvil serve --help` */
};

typedef struct {
    const char *name;
    const char *ollama;       /* the OLLAMA_* name read when this one is unset, or NULL */
    anv_setting_type type;
    const char *range;        /* what values are allowed, in words */
    const char *def;          /* the default, in words */
    anv_setting_scope scope;
    const char *group;        /* server, store, device, cpu, vulkan, hip, cli, test, ollama, foreign */
    unsigned flags;           /* ANV_SETTING_* */
    const char *help;         /* one line */
} anv_setting;

/* The table, and its number of entries. */
const anv_setting *anv_settings(size_t *n);
/* The entry of that name, or NULL. */
const anv_setting *anv_setting_find(const char *name);
/* Names of a type and scope, for the tables ("integer", "model"). */
const char *anv_setting_type_name(anv_setting_type t);
const char *anv_setting_scope_name(anv_setting_scope s);

/* The variable's value as the environment has it (NULL when unset; "" when set empty).
 * NULL too for a name that is not in the table (an entry's name or its Ollama alias). On Windows HOME and XDG_CACHE_HOME fall
 * back to %USERPROFILE% and %LOCALAPPDATA%. */
const char *anv_setting_raw(const char *name);
/* The value when set and non-empty, else NULL. */
const char *anv_setting_get(const char *name);
/* Set, non-empty and not "0". */
bool anv_setting_on(const char *name);
/* Set to exactly "0". */
bool anv_setting_off(const char *name);
/* $name when set and non-empty, else its Ollama alias's value (translated: OLLAMA_IGPU_ENABLE
 * true -> 1, OLLAMA_LLM_LIBRARY rocm -> hip, OLLAMA_DEBUG 2 -> 1) when set, else what $name
 * holds (NULL or ""). used_name, if given, receives the name that was read. */
const char *anv_setting_value(const char *name, const char **used_name);

/* Typed readers: 0 when unset or empty (out untouched), 1 when read into out, -1 with a
 * one-line anv_last_error() "NAME='value' is not ... (allowed: ...)" when malformed or out of
 * range. Ollama aliases are read like anv_setting_value. */
int anv_setting_long(const char *name, long long lo, long long hi, long long *out);
int anv_setting_int(const char *name, int lo, int hi, int *out);
int anv_setting_u64(const char *name, uint64_t lo, uint64_t hi, uint64_t *out);

/* The user's cache folder: $XDG_CACHE_HOME, else $HOME/.cache; false when neither is set. */
bool anv_user_cache_dir(char *out, size_t cap);

/* Prints to out one line per OLLAMA_* variable that is set but has no effect here (a setting
 * Anvil does not have, or a value it cannot map, e.g. OLLAMA_LLM_LIBRARY=cuda_v12), or is
 * overridden by its ANVIL_* twin. Returns the number of lines. */
int anv_env_warn_ollama(FILE *out);

/* The table as text, one entry a line (name, default, help), of the entries of that group
 * ("" or NULL: any) with all of the flags in `with` and none in `without`. */
void anv_settings_print_text(FILE *out, const char *group, unsigned with, unsigned without);
/* `anvil help env`: every entry, by group, with its Ollama alias, values, default and scope. */
void anv_settings_print_groups(FILE *out);
/* The table as a markdown table, of the entries of that group ("" or NULL: all of them). */
void anv_settings_print_markdown(FILE *out, const char *group);
#endif
