/* cmd_show: `anvil show MODEL` (a store name or a GGUF path): architecture, parameters,
 * context length, quantization, tensor count, tokenizer and chat format, capabilities and
 * the Modelfile's parameters, system prompt and license, like `ollama show`; --modelfile,
 * --parameters, --template, --system, --license print just that. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "cli.h"
#include "client.h"
#include "prompt.h"
#include "error.h"
#include "gguf.h"
#include "model_create.h"
#include "quant.h"
#include "quantize_model.h"
#include "store.h"

/* "1.2B", "268M" like Ollama. */
static void human_count(uint64_t n, char *buf, size_t cap) {
    if (n >= 1000000000ull) snprintf(buf, cap, "%.1fB", n / 1e9);
    else if (n >= 1000000ull) snprintf(buf, cap, "%.0fM", n / 1e6);
    else snprintf(buf, cap, "%.0fK", n / 1e3);
}

/* -v: every metadata key of the file, as `ollama show -v` lists them (arrays by their length,
 * strings cut at 80 bytes of their first line). */
static void print_metadata(const gguf_file *f) {
    printf("\n  Metadata\n");
    for (uint64_t i = 0; i < f->n_kv; i++) {
        const gguf_kv *kv = &f->kv[i];
        printf("    %-40.*s ", (int)(kv->key.len > 200 ? 200 : kv->key.len), kv->key.ptr);
        switch (kv->type) {
        case GGUF_STRING: {
            uint64_t n = kv->v.str.len;
            const char *nl = memchr(kv->v.str.ptr, '\n', n);
            if (nl) n = (uint64_t)(nl - kv->v.str.ptr);
            printf("%.*s%s\n", (int)(n > 80 ? 80 : n), kv->v.str.ptr, n > 80 || nl ? "..." : "");
            break;
        }
        case GGUF_ARRAY: printf("[... %llu items]\n", (unsigned long long)kv->arr_len); break;
        case GGUF_FLOAT32: case GGUF_FLOAT64: printf("%g\n", kv->v.f64); break;
        case GGUF_BOOL: printf("%s\n", kv->v.b ? "true" : "false"); break;
        case GGUF_INT8: case GGUF_INT16: case GGUF_INT32: case GGUF_INT64: printf("%lld\n", (long long)kv->v.i64); break;
        default: printf("%llu\n", (unsigned long long)kv->v.u64); break;
        }
    }
}

/* The GGUF's own chat template (what a model without a TEMPLATE layer uses). */
static char *gguf_chat_template(const char *path) {
    gguf_file *g = gguf_open(path);
    if (!g) anv_die("%s", anv_last_error());
    char *t = gguf_get_str_dup(g, "tokenizer.chat_template");
    gguf_close(g);
    return t;
}

int cmd_show(int argc, char **argv) {
    const char *arg = NULL, *only = NULL;
    static const char *const only_flags[] = {"--modelfile", "--parameters", "--template", "--system", "--license"};
    bool verbose = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            puts("usage: anvil show MODEL [--modelfile | --parameters | --template | --system | --license] [-v]");
            return 0;
        }
        if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) { verbose = true; continue; }
        bool flag = false;
        for (size_t k = 0; k < sizeof only_flags / sizeof only_flags[0]; k++)
            if (!strcmp(argv[i], only_flags[k])) { only = only_flags[k]; flag = true; }
        if (flag) continue;
        if (argv[i][0] == '-' && argv[i][1]) anv_die("show: unknown option '%s'", argv[i]);
        if (arg) anv_die("show: unexpected argument '%s'", argv[i]);
        arg = argv[i];
    }
    if (!arg) { puts("usage: anvil show MODEL [--modelfile | --parameters | --template | --system | --license]"); return 2; }
    if (client_store_remote()) return remote_show(arg, only, verbose);
    store_entry e;
    if (store_resolve(NULL, arg, &e) != 0) anv_die("%s", anv_last_error());
    if (only) {
        if (!strcmp(only, "--modelfile")) {
            char *mf = modelfile_render(&e);
            if (!mf) anv_die("%s", anv_last_error());
            fputs(mf, stdout);
            free(mf);
        } else if (!strcmp(only, "--parameters")) {
            cJSON *p = e.params_json ? cJSON_Parse(e.params_json) : NULL;
            cli_print_params(p, "", 30);
            cJSON_Delete(p);
        } else if (!strcmp(only, "--template")) {
            char *t = e.template_text ? strdup(e.template_text) : gguf_chat_template(e.model_path);
            cli_print_text(t);
            free(t);
        } else {
            const char *t = !strcmp(only, "--system") ? e.system : e.license;
            cli_print_text(t);
        }
        store_entry_clear(&e);
        return 0;
    }
    anv_log_enabled = 0;
    cli_model_opts mo;
    cli_model_opts_default(&mo);
    mo.n_threads = 1;
    model *m = cli_load_model(e.model_path, &mo, NULL);
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
    printf("    %-20s %d / %d (head dim %d)\n", "heads (q / kv)", hp->n_head, hp->n_kv_head, hp->head_dim_k);
    printf("    %-20s %d\n", "feed-forward length", hp->n_ff);
    uint32_t ftype;
    const char *ftype_name = gguf_get_u32(f, "general.file_type", &ftype) ? quant_ftype_name((int)ftype) : NULL;
    if (ftype_name) printf("    %-20s %s\n", "quantization", ftype_name);
    else printf("    %-20s %s (most bytes)\n", "quantization", qtype_get((uint32_t)main_type) ? qtype_get((uint32_t)main_type)->name : "?");
    printf("    %-20s %llu (%.1f MiB)\n", "tensors", (unsigned long long)f->n_tensors, (double)f->size / 1048576.0);
    printf("    %-20s %s, %d tokens\n", "tokenizer", tokenizer_kind(m->tok) == TOK_KIND_SPM ? "SentencePiece (llama)" : tokenizer_kind(m->tok) == TOK_KIND_WPM ? "WordPiece (bert)" : "byte-level BPE (gpt2)", tokenizer_n_vocab(m->tok));
    const bool embeds = hp->embedding_only || model_file_embeds_only(f);
    if (embeds) printf("    %-20s none (an embedding model)\n", "chat format");
    else printf("    %-20s %s%s\n", "chat format", chat_format_name(prompt_detect_format(m)),
           prompt_model_is_base(m) ? " (a base model: no template and no instruct marker in its name; runs as a completion)"
           : !m->chat_template ? " (no template in the file: from the architecture)"
           : chat_template_unrecognised(m->chat_template) ? " (the file's template is not one Anvil knows: guessed from the architecture)" : "");
    printf("  Tensor types\n");
    for (int t = 0; t < QT_COUNT; t++) {
        int count = 0;
        for (uint64_t i = 0; i < f->n_tensors; i++) count += f->tensors[i].type == (uint32_t)t;
        if (count) printf("    %-20s %d tensors, %.1f MiB\n", qtype_get((uint32_t)t)->name, count, bytes_by_type[t] / 1048576.0);
    }
    /* Ollama's rule: a model with {arch}.pooling_type (or an encoder) embeds only; the others complete */
    printf("\n  Capabilities\n    %s\n", embeds ? "embedding" : "completion");
    if (!embeds) {   /* as /api/show: what the chat format's prompt and reply parsing support */
        prompt_caps caps = prompt_capabilities(m, e.template_text, -1);   /* the Modelfile's TEMPLATE, else the GGUF's */
        if (caps.tools) printf("    tools\n");
        if (caps.insert) printf("    insert\n");
        if (caps.thinking) printf("    thinking\n");
    }
    if (embeds) printf("    %-20s %s\n", "pooling", hp->pooling == MODEL_POOL_CLS ? "cls" : hp->pooling == MODEL_POOL_LAST ? "last" : "mean");
    if (e.params_json && strcmp(e.params_json, "{}")) {
        printf("\n  Parameters\n");
        cJSON *p = cJSON_Parse(e.params_json);
        cli_print_params(p, "    ", 14);
        cJSON_Delete(p);
    }
    cli_print_section("System", e.system, 4);
    cli_print_section("License", e.license, 2);
    if (verbose) print_metadata(f);
    free(name);
    model_free(m);
    store_entry_clear(&e);
    return 0;
}
