/* test_tokenizer_pre: every tokenizer.ggml.pre name against llama.cpp. The fixture
 * tokenizer_pre_models (make_pre_goldens.py --models) writes one vocabulary-only GGUF per name
 * llama.cpp accepts, all with the same byte-level BPE vocabulary, and the golden file: per name
 * llama-tokenize's ids for ~90 multilingual / code / number / emoji / whitespace strings (no
 * BOS, no special parsing) and for "Hello world" with BOS allowed. Every id must match; Anvil's
 * name table must be exactly llama.cpp's names (plus Anvil's "gpt2" alias); an unknown name is
 * a one-line error naming it. Prints one line per name (the README table).
 *
 * One-off mode: test_tokenizer_pre --vocab M.gguf --inp F.inp --out F.out compares with
 * llama.cpp's models/ggml-vocab-*.gguf test vectors (real vocabularies). */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "gguf.h"
#include "testutil.h"
#include "tokenizer.h"
#include "tokenizer_impl.h"

static const char *family_name(tok_pre pre) {
    static const char *const names[TOK_PRE_COUNT] = {
        [TOK_PRE_DEFAULT] = "default", [TOK_PRE_LLAMA3] = "llama3", [TOK_PRE_JAIS2] = "jais2",
        [TOK_PRE_DEEPSEEK_LLM] = "deepseek-llm", [TOK_PRE_DEEPSEEK3] = "deepseek3", [TOK_PRE_SPARK2_5] = "spark2_5",
        [TOK_PRE_YOUTU] = "youtu", [TOK_PRE_DEEPSEEK_CODER] = "deepseek-coder", [TOK_PRE_FALCON] = "falcon",
        [TOK_PRE_STARCODER] = "starcoder", [TOK_PRE_GPT2] = "gpt2", [TOK_PRE_QWEN2] = "qwen2",
        [TOK_PRE_QWEN35] = "qwen35", [TOK_PRE_BLOOM] = "bloom", [TOK_PRE_VIKING] = "viking",
        [TOK_PRE_TEKKEN] = "tekken", [TOK_PRE_CHAMELEON] = "chameleon", [TOK_PRE_GPT4O] = "gpt4o",
        [TOK_PRE_GRANITE_EMB_MULTI] = "granite-emb-multi", [TOK_PRE_TINY_AYA] = "tiny_aya", [TOK_PRE_KIMI_K2] = "kimi-k2",
        [TOK_PRE_SUPERBPE] = "superbpe", [TOK_PRE_BAILINGMOE] = "bailingmoe", [TOK_PRE_SEED_CODER] = "seed-coder",
        [TOK_PRE_UFAKZEKA] = "ufakzeka", [TOK_PRE_AFMOE] = "afmoe", [TOK_PRE_LAGUNA] = "laguna",
        [TOK_PRE_EXAONE_MOE] = "exaone-moe", [TOK_PRE_GEMMA4] = "gemma4", [TOK_PRE_SARVAM] = "sarvam",
        [TOK_PRE_MMBERT] = "mmbert", [TOK_PRE_MINICPM5] = "minicpm5", [TOK_PRE_WHITESPACE] = "whitespace",
    };
    return names[pre];
}

static void flags_text(unsigned f, char *buf, size_t cap) {
    snprintf(buf, cap, "%s%s%s%s%s%s%s", f & TOK_PREF_NO_CLEAN_SPACES ? "no-clean-spaces " : "",
             f & TOK_PREF_IGNORE_MERGES ? "ignore-merges " : "", f & TOK_PREF_ADD_BOS ? "add-bos " : "",
             f & TOK_PREF_FORCE_BOS ? "force-bos " : "", f & TOK_PREF_ESCAPE_WHITESPACE ? "escape-ws " : "",
             f & TOK_PREF_NO_BOS_ID ? "no-bos-id " : "", f & TOK_PREF_ADD_SEP ? "add-sep " : "");
    size_t n = strlen(buf);
    if (n) buf[n - 1] = 0;
    else snprintf(buf, cap, "-");
}

static int ids_equal(const int32_t *got, int n, const cJSON *want) {
    if (!cJSON_IsArray(want) || cJSON_GetArraySize(want) != n) return 0;
    for (int i = 0; i < n; i++)
        if (got[i] != (int32_t)cJSON_GetArrayItem(want, i)->valuedouble) return 0;
    return 1;
}

static void print_mismatch(const char *name, const char *text, const int32_t *got, int n, const cJSON *want) {
    fprintf(stderr, "%s: \"%.60s\"...\n  anvil   :", name, text);
    for (int i = 0; i < n && i < 40; i++) fprintf(stderr, " %d", got[i]);
    fprintf(stderr, "\n  llama.cpp:");
    for (int i = 0; i < cJSON_GetArraySize(want) && i < 40; i++)
        fprintf(stderr, " %d", (int)cJSON_GetArrayItem(want, i)->valuedouble);
    fputc('\n', stderr);
}

/* The golden ids of a name (following same_ids_as). */
static const cJSON *golden_ids(const cJSON *names, const cJSON *entry) {
    for (int hops = 0; entry && hops < 4; hops++) {
        const cJSON *ids = cJSON_GetObjectItemCaseSensitive(entry, "ids");
        if (ids) return ids;
        const cJSON *same = cJSON_GetObjectItemCaseSensitive(entry, "same_ids_as");
        entry = cJSON_IsString(same) ? cJSON_GetObjectItemCaseSensitive(names, same->valuestring) : NULL;
    }
    return NULL;
}

static void run_name(const char *dir, const cJSON *names, const cJSON *entry, const cJSON *strings, int *names_ok) {
    const char *name = entry->string;
    char path[1024];
    snprintf(path, sizeof(path), "%s/tok-pre-%s.gguf", dir, name);
    gguf_file *f = gguf_open(path);
    tokenizer *t = f ? tokenizer_load(f) : NULL;
    CHECKF(t != NULL, "%s: %s", name, anv_last_error());
    const cJSON *ids = golden_ids(names, entry);
    CHECKF(cJSON_IsArray(ids) && cJSON_GetArraySize(ids) == cJSON_GetArraySize(strings), "%s: golden ids", name);
    int same = 0, total = cJSON_GetArraySize(strings), printed = 0, aborts = 0;
    for (int i = 0; t && ids && i < total; i++) {
        const char *s = cJSON_GetArrayItem(strings, i)->valuestring;
        const cJSON *want = cJSON_GetArrayItem(ids, i);
        if (cJSON_IsNull(want)) { /* llama.cpp aborts on it (a GGML_ASSERT): nothing to compare */
            aborts++;
            continue;
        }
        int n = 0;
        int32_t *got = tokenizer_encode(t, s, strlen(s), false, false, &n);
        if (got && ids_equal(got, n, want)) same++;
        else if (printed++ < 2) print_mismatch(name, s, got ? got : (int32_t[]){0}, got ? n : 0, want);
        free(got);
    }
    total -= aborts;
    CHECKF(same == total, "%s: %d/%d strings give llama.cpp's ids", name, same, total);
    int bos_ok = 0;
    if (t) { /* BOS behaviour: add_special on */
        int n = 0;
        int32_t *got = tokenizer_encode(t, "Hello world", 11, true, false, &n);
        bos_ok = got && ids_equal(got, n, cJSON_GetObjectItemCaseSensitive(entry, "bos_hello"));
        CHECKF(bos_ok, "%s: 'Hello world' with BOS allowed differs from llama.cpp", name);
        free(got);
    }
    const tok_pre_name *info = tok_pre_find(name);
    char flags[160];
    flags_text(info ? info->flags : 0, flags, sizeof(flags));
    char note[64] = "";
    if (aborts) snprintf(note, sizeof(note), " (llama.cpp aborts on %d more)", aborts);
    printf("| `%s` | %s | %s | %d/%d %s%s |\n", name, info ? family_name(info->pre) : "?", flags, same, total,
           same == total && bos_ok ? "yes" : "NO", note);
    *names_ok += same == total && bos_ok;
    tokenizer_free(t);
    gguf_close(f);
}

/* Anvil's table holds exactly llama.cpp's names (and the "gpt2" alias). */
static void check_name_table(const cJSON *names) {
    size_t n;
    const tok_pre_name *all = tok_pre_names(&n);
    int missing = 0, extra = 0;
    for (const cJSON *e = names->child; e; e = e->next)
        if (!tok_pre_find(e->string)) {
            fprintf(stderr, "llama.cpp name '%s' is not in Anvil's table\n", e->string);
            missing++;
        }
    for (size_t i = 0; i < n; i++)
        if (!cJSON_GetObjectItemCaseSensitive(names, all[i].name) && strcmp(all[i].name, "gpt2") != 0) {
            fprintf(stderr, "Anvil name '%s' is not one llama.cpp accepts\n", all[i].name);
            extra++;
        }
    CHECKF(missing == 0 && extra == 0, "%d names missing, %d extra", missing, extra);
}

/* An unknown name: no tokenizer and one line naming it. */
static void check_unknown_name(const char *dir) {
    char path[1024];
    snprintf(path, sizeof(path), "%s/tok-pre-gpt-2.gguf", dir);
    size_t len = 0;
    char *buf = tu_read_file(path, &len);
    CHECK(buf != NULL);
    if (!buf) return;
    /* rename in place: same length keeps the GGUF valid */
    static const char len5[8] = {5, 0, 0, 0, 0, 0, 0, 0}; /* the string's u64 length */
    char *p = memmem(buf, len, "gpt-2", 5);
    while (p && (p - buf < 8 || memcmp(p - 8, len5, 8) != 0)) p = memmem(p + 1, len - (size_t)(p + 1 - buf), "gpt-2", 5);
    CHECK(p != NULL);
    if (p) memcpy(p, "zz-99", 5);
    gguf_file *f = gguf_open_memory(buf, len, "renamed.gguf");
    anv_set_error("%s", "");
    tokenizer *t = f ? tokenizer_load(f) : NULL;
    const char *err = anv_last_error();
    CHECKF(t == NULL && strstr(err, "'zz-99'") && strstr(err, "tokenizer.ggml.pre") && !strchr(err, '\n'), "error: %s", err);
    tokenizer_free(t);
    gguf_close(f);
    free(buf);
}

/* llama.cpp's test vectors: the .inp strings (separated by "\n__ggml_vocab_test__\n") and the
 * .out lines (space-separated ids). */
static int run_vectors(const char *vocab, const char *inp, const char *out) {
    size_t ni = 0, no = 0;
    char *si = tu_read_file(inp, &ni), *so = tu_read_file(out, &no);
    gguf_file *f = gguf_open(vocab);
    tokenizer *t = f ? tokenizer_load(f) : NULL;
    if (!si || !so || !t) {
        fprintf(stderr, "cannot load %s / %s / %s: %s\n", vocab, inp, out, anv_last_error());
        return 1;
    }
    static const char sep[] = "\n__ggml_vocab_test__\n";
    char *pi = si, *po = so;
    int total = 0, same = 0;
    while (pi < si + ni && po < so + no) {
        char *next = strstr(pi, sep);
        size_t len = next ? (size_t)(next - pi) : strlen(pi);
        char *eol = strchr(po, '\n');
        if (eol) *eol = 0;
        int32_t want[4096];
        int nw = 0;
        for (char *q = po; *q && nw < 4096;) {
            char *end;
            long v = strtol(q, &end, 10);
            if (end == q) break;
            want[nw++] = (int32_t)v;
            q = end;
        }
        int n = 0;
        int32_t *got = tokenizer_encode(t, pi, len, false, false, &n);
        total++;
        if (got && n == nw && memcmp(got, want, sizeof(int32_t) * (size_t)n) == 0) {
            same++;
        } else {
            fprintf(stderr, "differs: \"%.*s\"\n  anvil:", (int)(len < 60 ? len : 60), pi);
            for (int i = 0; got && i < n && i < 30; i++) fprintf(stderr, " %d", got[i]);
            fprintf(stderr, "\n  llama.cpp:");
            for (int i = 0; i < nw && i < 30; i++) fprintf(stderr, " %d", want[i]);
            fputc('\n', stderr);
        }
        free(got);
        if (!next) break;
        pi = next + sizeof(sep) - 1;
        po = eol ? eol + 1 : so + no;
    }
    printf("%s: %d/%d test vectors identical\n", vocab, same, total);
    tokenizer_free(t);
    gguf_close(f);
    free(si);
    free(so);
    return same == total ? 0 : 1;
}

int main(int argc, char **argv) {
    anv_log_enabled = 0;
    if (argc == 7 && strcmp(argv[1], "--vocab") == 0 && strcmp(argv[3], "--inp") == 0 && strcmp(argv[5], "--out") == 0)
        return run_vectors(argv[2], argv[4], argv[6]);
    const char *dir = getenv("ANVIL_TEST_MODELS");
    if (!dir) dir = ".";
    char path[1024];
    snprintf(path, sizeof(path), "%s/tokenizer-golden-pre.json", dir);
    char *text = tu_read_file(path, NULL);
    CHECKF(text != NULL, "%s missing (the tokenizer_pre_models fixture writes it)", path);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(root, "names");
    const cJSON *strings = cJSON_GetObjectItemCaseSensitive(root, "strings");
    CHECK(cJSON_IsObject(names) && cJSON_IsArray(strings));
    if (cJSON_IsObject(names) && cJSON_IsArray(strings)) {
        check_name_table(names);
        check_unknown_name(dir);
        printf("| pre name | family | flags | ids identical to llama-tokenize |\n|---|---|---|---|\n");
        int ok = 0, n = 0;
        for (const cJSON *e = names->child; e; e = e->next, n++) run_name(dir, names, e, strings, &ok);
        printf("%d/%d names give llama.cpp's ids on all %d strings and the BOS check\n", ok, n, cJSON_GetArraySize(strings));
    }
    cJSON_Delete(root);
    free(text);
    return tu_finish();
}
