/* cmd_quantize: `anvil quantize IN.gguf OUT.gguf TYPE`: re-quantizes a model's weight
 * matrices (engine/quantize_model.c does the work). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "error.h"
#include "quant.h"
#include "quantize_model.h"

int cmd_quantize(int argc, char **argv) {
    int n_threads = 0;
    const char *pos[3] = {0};
    int n_pos = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            puts("usage: anvil quantize IN.gguf OUT.gguf TYPE [-t N]\n"
                 "  TYPE: f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q2_K q3_K q4_K q5_K q6_K");
            return 0;
        }
        if (!strcmp(argv[i], "-t")) n_threads = cli_int("-t", cli_value(argc, argv, &i), 1, 1024);
        else if (n_pos < 3) pos[n_pos++] = argv[i];
        else anv_die("quantize: unexpected argument '%s'", argv[i]);
    }
    if (n_pos != 3) anv_die("usage: anvil quantize IN.gguf OUT.gguf TYPE");
    int type = qtype_from_name(pos[2]);
    if (type < 0 || !qtype_get((uint32_t)type) || !qtype_get((uint32_t)type)->can_quantize)
        anv_die("quantize: unknown or unsupported target type '%s'", pos[2]);
    double t0 = cli_now();
    if (quantize_model(pos[0], pos[1], (qtype)type, n_threads) != 0) anv_die("%s", anv_last_error());
    printf("wrote %s (%s) in %.1f s\n", pos[1], qtype_get((uint32_t)type)->name, cli_now() - t0);
    return 0;
}
