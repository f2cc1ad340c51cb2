/* cli: shared option parsing and model loading (by path or store name) for the anvil
 * subcommands. */
#include "cli.h"

#include "device.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_backend.h"
#include "clock.h"
#include "envvar.h"
#include "error.h"
#include "model_place.h"
#include "quant.h"
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
    if (o->verbose)
        anv_log("cpu kernels: %s, %d threads", cpu_backend_simd(), cpu_backend_threads(m->cpu));
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
