/* cmd_quantize: `anvil quantize IN.gguf OUT.gguf TYPE`: re-quantizes a model's weight
 * matrices (engine/gguf/quantize_model.c does the work). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "clock.h"
#include "error.h"
#include "quant.h"
#include "quantize_model.h"

int cmd_quantize(int argc, char **argv) {
    int n_threads = 0;
    bool pure = false;
    const char *pos[3] = {0};
    int n_pos = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            puts("usage: anvil quantize IN.gguf OUT.gguf TYPE [-t N] [--pure]\n"
                 "  TYPE: F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K_S Q3_K_M Q3_K_L Q4_K_S Q4_K_M\n"
                 "        Q5_K_S Q5_K_M Q6_K (q4_K = Q4_K_M etc., as llama-quantize)\n"
                 "  --pure: every weight gets TYPE's tensor type (no Q4_K_M-style mix)");
            return 0;
        }
        if (!strcmp(argv[i], "--pure")) pure = true;
        else if (!strcmp(argv[i], "-t")) n_threads = cli_int("-t", cli_value(argc, argv, &i), 1, 1024);
        else if (n_pos < 3) pos[n_pos++] = argv[i];
        else anv_die("quantize: unexpected argument '%s'", argv[i]);
    }
    if (n_pos != 3) anv_die("usage: anvil quantize IN.gguf OUT.gguf TYPE");
    /* llama-quantize's names: file types (Q4_K_M) first, then tensor types (q4_K = Q4_K_M). */
    int ftype = quant_ftype_from_name(pos[2]);
    if (ftype < 0) {
        int type = qtype_from_name(pos[2]);
        if (type >= 0) ftype = quant_ftype_from_qtype((qtype)type);
    }
    if (ftype < 0) anv_die("quantize: unknown or unsupported target type '%s'", pos[2]);
    quantize_opts qo = {.n_threads = n_threads, .pure = pure};
    double t0 = anv_mono_s();
    if (quantize_model_ftype(pos[0], pos[1], (quant_ftype)ftype, &qo) != 0) anv_die("%s", anv_last_error());
    printf("wrote %s (%s) in %.1f s\n", pos[1], quant_ftype_name(ftype), anv_mono_s() - t0);
    return 0;
}
