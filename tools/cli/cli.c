/* cli: shared option parsing and model loading (by path or store name) for the anvil
 * subcommands. */
#include "cli.h"

#include "device.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "clock.h"
#include "device_extras.h"
#include "error.h"
#include "model_place.h"
#include "quant.h"
#include "settings.h"
#include "store.h"

void anv_die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("anvil: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

const char *cli_value(int argc, char **argv, int *i) {
    if (*i + 1 >= argc) anv_die("option %s needs a value", argv[*i]);
    return argv[++*i];
}

int cli_int(const char *flag, const char *s, long lo, long hi) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) anv_die("%s: '%s' is not an integer in [%ld, %ld]", flag, s, lo, hi);
    return (int)v;
}

double cli_float(const char *flag, const char *s) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end) anv_die("%s: '%s' is not a number", flag, s);
    return v;
}

void cli_model_opts_default(cli_model_opts *o) {
    memset(o, 0, sizeof *o);
    o->n_threads = 0;
    o->n_ctx = 0;
    o->n_gpu_layers = -1;
    o->kv_type = QT_F16;
}

bool cli_parse_model_opt(cli_model_opts *o, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    if (!strcmp(a, "-t") || !strcmp(a, "--threads")) o->n_threads = cli_int(a, cli_value(argc, argv, i), 1, 1024), o->n_threads_set = true;
    else if (!strcmp(a, "-c") || !strcmp(a, "--ctx")) o->n_ctx = cli_int(a, cli_value(argc, argv, i), 1, 1 << 24), o->n_ctx_set = true;
    else if (!strcmp(a, "-ngl") || !strcmp(a, "--n-gpu-layers")) o->n_gpu_layers = cli_int(a, cli_value(argc, argv, i), -1, 100000), o->n_gpu_layers_set = true;
    else if (!strcmp(a, "--kv-type")) {
        const char *v = cli_value(argc, argv, i);
        int t = qtype_from_name(v);
        if (t != QT_F16 && t != QT_F32 && t != QT_Q8_0 && t != QT_Q4_0) anv_die("--kv-type: '%s' is not one of f16, f32, q8_0, q4_0", v);
        o->kv_type = (uint32_t)t;
    } else if (!strcmp(a, "--tensor-split") || !strcmp(a, "-ts")) o->tensor_split = cli_value(argc, argv, i);
    else if (!strcmp(a, "--verbose") || !strcmp(a, "-v")) o->verbose = true;
    else return false;
    return true;
}

model *cli_load_model(const char *path, const cli_model_opts *o, double *load_seconds) {
    double t0 = anv_mono_s();
    anv_env_warn_ollama(stderr);   /* OLLAMA_* settings that do nothing here: one line each */
    store_entry entry;  /* a model name: its GGUF blob */
    if (store_resolve(NULL, path, &entry) != 0) anv_die("%s", anv_last_error());
    model_place_opts po = {
        .n_threads = o->n_threads, .n_ctx = o->n_ctx, .kv_type = o->kv_type,
        .n_gpu_layers = o->n_gpu_layers, .tensor_split = o->tensor_split, .quiet = !anv_log_enabled,
    };
    model *m = model_load_placed(entry.model_path, &po);
    store_entry_clear(&entry);
    if (!m) anv_die("%s", anv_last_error());
    if (load_seconds) *load_seconds = anv_mono_s() - t0;
    char desc[256];
    if (o->verbose && device_describe(m->cpu, desc, sizeof desc) > 0) anv_log("%s", desc);
    return m;
}

device_list *cli_devices_selected(void) {
    device_list *l = device_list_probe();
    if (!l) { fprintf(stderr, "anvil: %s\n", anv_last_error()); return NULL; }
    device_env env;
    device_env_from_process(&env);
    if (device_list_select(l, &env) != 0) {
        fprintf(stderr, "anvil: %s\n", anv_last_error());
        device_list_free(l);
        return NULL;
    }
    return l;
}

/* Ollama's format.HumanBytes: decimal units, "253 MB", "1.5 GB", "12 KB". */
void cli_human_bytes(uint64_t b, char *buf, size_t cap) {
    static const char *units[] = {"TB", "GB", "MB", "KB"};
    static const double scale[] = {1e12, 1e9, 1e6, 1e3};
    for (int i = 0; i < 4; i++) {
        if ((double)b < scale[i]) continue;
        double v = (double)b / scale[i];
        if (v >= 10 || v == (double)(uint64_t)v) snprintf(buf, cap, "%d %s", (int)v, units[i]);
        else snprintf(buf, cap, "%.1f %s", v, units[i]);
        return;
    }
    snprintf(buf, cap, "%llu B", (unsigned long long)b);
}

/* Ollama's format.HumanTime for a past moment: "2 minutes ago", "About an hour ago". */
void cli_human_ago(int64_t then, char *buf, size_t cap) {
    if (then <= 0) { snprintf(buf, cap, "Unknown"); return; }
    int64_t now = (int64_t)time(NULL);
    bool future = then > now;
    int64_t secs = future ? then - now : now - then;
    const char *suffix = future ? "from now" : "ago";
    int64_t mins = secs / 60, hours = (secs + 1800) / 3600;
    if (secs < 1) snprintf(buf, cap, "Less than a second %s", suffix);
    else if (secs == 1) snprintf(buf, cap, "1 second %s", suffix);
    else if (secs < 60) snprintf(buf, cap, "%lld seconds %s", (long long)secs, suffix);
    else if (mins == 1) snprintf(buf, cap, "About a minute %s", suffix);
    else if (mins < 60) snprintf(buf, cap, "%lld minutes %s", (long long)mins, suffix);
    else if (hours == 1) snprintf(buf, cap, "About an hour %s", suffix);
    else if (hours < 48) snprintf(buf, cap, "%lld hours %s", (long long)hours, suffix);
    else if (hours < 24 * 7 * 2) snprintf(buf, cap, "%lld days %s", (long long)(hours / 24), suffix);
    else if (hours < 24 * 30 * 2) snprintf(buf, cap, "%lld weeks %s", (long long)(hours / 24 / 7), suffix);
    else if (hours < 24 * 365 * 2) snprintf(buf, cap, "%lld months %s", (long long)(hours / 24 / 30), suffix);
    else snprintf(buf, cap, "%lld years %s", (long long)(secs / 3600 / 24 / 365), suffix);
}

bool cli_path_is_file(const char *p) {
    struct stat st;
    return p && stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

void cli_print_params(const cJSON *params, const char *indent, int width) {
    const cJSON *it;
    cJSON_ArrayForEach(it, params) {
        const cJSON *items = cJSON_IsArray(it) ? it->child : it;
        for (const cJSON *v = items; v; v = cJSON_IsArray(it) ? v->next : NULL) {
            char *t = cJSON_PrintUnformatted(v);
            printf("%s%-*s %s\n", indent, width, it->string, t ? t : "");
            free(t);
        }
    }
}

void cli_print_section(const char *title, const char *text, int max_lines) {
    if (!text || !*text) return;
    printf("\n  %s\n", title);
    const char *p = text;
    for (int line = 0; *p && line < max_lines; line++) {
        const char *nl = strchr(p, '\n');
        int len = nl ? (int)(nl - p) : (int)strlen(p);
        printf("    %.*s\n", len, p);
        p = nl ? nl + 1 : p + len;
    }
    if (*p) printf("    ...\n");
}

void cli_print_text(const char *text) {
    if (!text) return;
    fputs(text, stdout);
    if (*text && text[strlen(text) - 1] != '\n') fputc('\n', stdout);
}
