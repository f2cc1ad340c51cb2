/* cli: what the anvil subcommands share: option parsing helpers, model loading with
 * the common flags (-t, --ctx, -ngl, --kv-type), clocks, and the subcommand entry points. */
#ifndef ANVIL_CLI_H
#define ANVIL_CLI_H
#include <stdbool.h>
#include <stdint.h>
#include "error.h"
#include "model.h"
#include "model_create.h"

typedef struct {
    int n_threads;      /* -t */
    int n_ctx;          /* --ctx */
    int n_gpu_layers;   /* -ngl, -1 = all that fit */
    uint32_t kv_type;   /* --kv-type */
    const char *tensor_split; /* --tensor-split */
    bool verbose;
    bool n_threads_set, n_ctx_set, n_gpu_layers_set; /* given on the command line */
} cli_model_opts;

/* Prints "anvil: <msg>" to stderr and exits with status 1. The CLI's alone: the engine
 * and the server report errors to their caller (anv_set_error) and never exit. */
_Noreturn void anv_die(const char *fmt, ...) ANV_PRINTF(1, 2);

void cli_model_opts_default(cli_model_opts *o);
/* If argv[*i] is one of the common model flags, consumes it (and its value) and returns
 * true; a bad value exits with a one-line error. */
bool cli_parse_model_opt(cli_model_opts *o, int argc, char **argv, int *i);
/* Loads a model (a GGUF path, or a model name looked up in the store) and prints where its
 * layers run. Exits with a one-line error on failure. */
model *cli_load_model(const char *path, const cli_model_opts *o, double *load_seconds);
/* The value after a flag, or exits naming the flag. */
const char *cli_value(int argc, char **argv, int *i);
/* Every device, probed, with the environment's selection applied (device.h); NULL after
 * printing the one-line error. */
struct device_list *cli_devices_selected(void);
int cli_int(const char *flag, const char *s, long lo, long hi);
/* Ollama's format.HumanBytes ("253 MB", "1.5 GB") and format.HumanTime of a past moment
 * ("2 minutes ago", "About an hour ago"; 0: "Unknown"). */
void cli_human_bytes(uint64_t b, char *buf, size_t cap);
void cli_human_ago(int64_t then, char *buf, size_t cap);
/* p names a regular file here. */
bool cli_path_is_file(const char *p);
/* What `show` prints, the local, remote and interactive ones alike: a parameters object as Ollama
 * lists it ("key value", a list's values a line each, padded to width), a titled section of a
 * text's first max_lines lines ("..." when cut), a text with its final newline. */
struct cJSON;
void cli_print_params(const struct cJSON *params, const char *indent, int width);
void cli_print_section(const char *title, const char *text, int max_lines);
void cli_print_text(const char *text);
double cli_float(const char *flag, const char *s);

int cmd_run(int argc, char **argv);
/* cmd_remote.c: the store commands against the server of ANVIL_HOST / OLLAMA_HOST
 * (client_store_remote); each exits with the server's one-line error. */
int remote_list(void);
int remote_rm(int n, char **names);
int remote_cp(const char *src, const char *dst);
int remote_show(const char *name, const char *only_flag, bool verbose);
int remote_create(const char *name, const create_spec *spec);
/* cmd_run_embed.c: `anvil run` of an embedding model (Ollama's {arch}.pooling_type rule). */
typedef struct {
    const char *model;            /* as the user named it (the server's name for it) */
    const char *model_path;       /* the GGUF (in-process) */
    const cli_model_opts *mo;
    const char *text;
    bool remote;                  /* through the running server's /api/embed */
    const char *keep_alive;       /* --keepalive (remote) */
    int truncate;                 /* --truncate[=false]: -1 unset (true), 0, 1 */
    int dimensions;               /* --dimensions: 0 = all */
} run_embed_opts;
int run_embedding(const run_embed_opts *o);
int cmd_show(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_perplexity(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_devices(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_ps(int argc, char **argv);    /* cmd_ps.c: a running server's loaded models */
int cmd_stop(int argc, char **argv);  /* cmd_ps.c: unload a model now */
int cmd_list(int argc, char **argv);
int cmd_rm(int argc, char **argv);
int cmd_cp(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_create(int argc, char **argv);
int cmd_pull(int argc, char **argv);
#endif
