/* cmd_show: `anvil show MODEL`: architecture, parameters, context length, quantization,
 * tensor count, tokenizer and chat format, like `ollama show`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "cli.h"
#include "error.h"
#include "quant.h"
#include "quantize_model.h"

/* "1.2B", "268M" like Ollama. */
static void human_count(uint64_t n, char *buf, size_t cap) {
    if (n >= 1000000000ull) snprintf(buf, cap, "%.1fB", n / 1e9);
    else if (n >= 1000000ull) snprintf(buf, cap, "%.0fM", n / 1e6);
    else snprintf(buf, cap, "%.0fK", n / 1e3);
}

int cmd_show(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        puts("usage: anvil show MODEL");
        return argc < 2 ? 2 : 0;
    }
    anv_log_enabled = 0;
    cli_model_opts mo;
    cli_model_opts_default(&mo);
    mo.n_threads = 1;
    model *m = cli_load_model(argv[1], &mo, NULL);
    anv_log_enabled = 1;
    const model_hparams *hp = &m->hp;
    const gguf_file *f = m->gguf;
    /* the quantization: the most common type among 2-D weights, by bytes */
    uint64_t bytes_by_type[QT_COUNT] = {0};
    for (uint64_t i = 0; i < f->n_tensors; i++)
        if (f->tensors[i].n_dims >= 2 && f->tensors[i].type < QT_COUNT) bytes_by_type[f->tensors[i].type] += f->tensors[i].nbytes;
    int main_type = 0;
    for (int t = 0; t < QT_COUNT; t++) if (bytes_by_type[t] > bytes_by_type[main_type]) main_type = t;
    char params[32];
    human_count(model_n_params(m), params, sizeof params);
    char *name = gguf_get_str_dup(f, "general.name");
    printf("  Model\n");
    if (name) printf("    %-20s %s\n", "name", name);
    printf("    %-20s %s\n", "architecture", hp->arch_name);
    printf("    %-20s %s\n", "parameters", params);
    printf("    %-20s %d\n", "context length", hp->n_ctx_train);
    printf("    %-20s %d\n", "embedding length", hp->n_embd);
    printf("    %-20s %d\n", "layers", hp->n_layer);
    printf("    %-20s %d / %d (head dim %d)\n", "heads (q / kv)", hp->n_head, hp->n_head_kv, hp->head_dim_k);
    printf("    %-20s %d\n", "feed-forward length", hp->n_ff);
    uint32_t ftype;
    const char *ftype_name = gguf_get_u32(f, "general.file_type", &ftype) ? quant_ftype_name((int)ftype) : NULL;
    if (ftype_name) printf("    %-20s %s\n", "quantization", ftype_name);
    else printf("    %-20s %s (most bytes)\n", "quantization", qtype_get((uint32_t)main_type) ? qtype_get((uint32_t)main_type)->name : "?");
    printf("    %-20s %llu (%.1f MiB)\n", "tensors", (unsigned long long)f->n_tensors, (double)f->size / 1048576.0);
    printf("    %-20s %s, %d tokens\n", "tokenizer", tokenizer_kind(m->tok) == TOK_KIND_SPM ? "SentencePiece (llama)" : "byte-level BPE (gpt2)", tokenizer_n_vocab(m->tok));
    printf("    %-20s %s%s\n", "chat format", chat_format_name(chat_detect(m->chat_template, hp->arch_name)), m->chat_template ? "" : " (no template in the file: from the architecture)");
    printf("  Tensor types\n");
    for (int t = 0; t < QT_COUNT; t++) {
        int count = 0;
        for (uint64_t i = 0; i < f->n_tensors; i++) count += f->tensors[i].type == (uint32_t)t;
        if (count) printf("    %-20s %d tensors, %.1f MiB\n", qtype_get((uint32_t)t)->name, count, bytes_by_type[t] / 1048576.0);
    }
    free(name);
    model_free(m);
    return 0;
}
