/* anvil: the command-line entry point; dispatches to the subcommands in tools/cmd_*.c. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "api.h" /* cmd_serve */
#include "settings.h"

static void usage(FILE *out) {
    fputs("usage: anvil COMMAND [ARGS]\n\n"
          "commands:\n"
          "  run MODEL [PROMPT]     generate text (interactive chat without a prompt)\n"
          "  show MODEL             architecture, parameters, context length, quantization\n"
          "  eval MODEL ...         next-token log-probabilities of a sequence (logprobs-v1 JSON)\n"
          "  perplexity MODEL FILE  perplexity of a text file (KL divergence given a reference)\n"
          "  quantize IN OUT TYPE   re-quantize a GGUF file (Q4_K_M, Q8_0, q4_0, q6_K, ...)\n"
          "  bench MODEL [...]      prompt-processing and generation speed (llama-bench flags)\n"
          "  devices [--json]       every device through every backend, and which ones are used\n"
          "  doctor                 checks the GPU stack and explains what to fix\n"
          "  ps                     models a running server has loaded (CPU/GPU, context, until)\n"
          "  stop MODEL             unload a model from the running server now\n"
          "  list, ls               models in the store (and, read-only, in Ollama's)\n"
          "  create NAME -f FILE    make a model from a Modelfile (-q TYPE to re-quantize)\n"
          "  cp SRC DST             copy a model under a new name\n"
          "  rm NAME...             remove models (and their blobs no other model uses)\n"
          "  verify NAME...         re-hash every blob of a model; exit 1 if one is corrupt\n"
          "  pull NAME              download a model from a registry (Ollama's, hf.co/...)\n"
          "  serve                  the Ollama- and OpenAI-compatible HTTP server (127.0.0.1:11434)\n"
          "  help env [--markdown [GROUP]]  every environment variable Anvil reads\n"
          "  -v, --version          print the version\n"
          "\nMODEL is a model name (gemma3:270m, user/model:tag) or a path to a GGUF file. 'anvil COMMAND --help' for the options.\n",
          out);
}

/* anvil help env [--markdown [GROUP]]: the settings table (engine/base/settings_table.c) as
 * text, or as README.md's markdown tables (tests/base/check_settings.py compares them). */
static int help_env(int argc, char **argv) {
    if (argc == 1) { anv_settings_print_groups(stdout); return 0; }
    if (!strcmp(argv[1], "--markdown") && argc <= 3) { anv_settings_print_markdown(stdout, argc == 3 ? argv[2] : NULL); return 0; }
    fprintf(stderr, "usage: anvil help env [--markdown [GROUP]]\n");
    return 2;
}

int main(int argc, char **argv) {
    if (argc < 2) { usage(stderr); return 2; }
    const char *cmd = argv[1];
    struct { const char *name; int (*fn)(int, char **); } cmds[] = {
        {"run", cmd_run}, {"show", cmd_show}, {"eval", cmd_eval},
        {"perplexity", cmd_perplexity}, {"quantize", cmd_quantize},
        {"devices", cmd_devices}, {"doctor", cmd_doctor}, {"bench", cmd_bench},
        {"ps", cmd_ps}, {"stop", cmd_stop},
        {"list", cmd_list}, {"ls", cmd_list}, {"rm", cmd_rm}, {"cp", cmd_cp}, {"create", cmd_create}, {"verify", cmd_verify},
        {"pull", cmd_pull}, {"serve", cmd_serve},
    };
    if (!strcmp(cmd, "help") && argc >= 3 && !strcmp(argv[2], "env")) return help_env(argc - 2, argv + 2);
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) { usage(stdout); return 0; }
    /* ollama -v / --version; llama.cpp --version */
    if (!strcmp(cmd, "-v") || !strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("anvil version %s\n", ANVIL_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(cmd, cmds[i].name)) return cmds[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "anvil: unknown command '%s' (try 'anvil --help')\n", cmd);
    return 2;
}
