/* anvil: the command-line entry point; dispatches to the subcommands in tools/cmd_*.c. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

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
          "\nMODEL is a path to a GGUF file. 'anvil COMMAND --help' for the options.\n",
          out);
}

int main(int argc, char **argv) {
    if (argc < 2) { usage(stderr); return 2; }
    const char *cmd = argv[1];
    struct { const char *name; int (*fn)(int, char **); } cmds[] = {
        {"run", cmd_run}, {"show", cmd_show}, {"eval", cmd_eval},
        {"perplexity", cmd_perplexity}, {"quantize", cmd_quantize},
        {"devices", cmd_devices}, {"doctor", cmd_doctor}, {"bench", cmd_bench},
    };
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) { usage(stdout); return 0; }
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(cmd, cmds[i].name)) return cmds[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "anvil: unknown command '%s' (try 'anvil --help')\n", cmd);
    return 2;
}
