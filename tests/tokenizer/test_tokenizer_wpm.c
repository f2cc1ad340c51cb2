/* test_tokenizer_wpm: the WordPiece (BERT) tokenizer against llama.cpp. The synthetic vocabulary
 * (tools/make_embed_model.py --vocab-only, lowercasing + accent stripping, and a --cased one)
 * and BGE's real vocabulary (--vocab bge, no normalizer key, as every converted file) are written into ANVIL_TEST_MODELS by the tokenizer_wpm_models fixture; every string of
 * data/tokenizer-golden-wpm*.json (tests/tokenizer/make_wpm_golden.py, llama-tokenize) must
 * encode to exactly llama.cpp's ids: no specials, specials parsed, and [CLS] ... [SEP] added.
 * Also: pieces of word-initial / continuation tokens, invalid UTF-8, and bad metadata. */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "gguf.h"
#include "testutil.h"
#include "tokenizer.h"

static int json_ids(const cJSON *arr, int32_t **out) {
    int n = cJSON_GetArraySize(arr);
    *out = malloc(sizeof(int32_t) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) (*out)[i] = (int32_t)cJSON_GetArrayItem(arr, i)->valuedouble;
    return n;
}

static void print_ids(const char *label, const int32_t *ids, int n) {
    fprintf(stderr, "  %s (%d):", label, n);
    for (int i = 0; i < n; i++) fprintf(stderr, " %d", ids[i]);
    fputc('\n', stderr);
}

static int check_case(const tokenizer *t, const char *text, const cJSON *want_j, bool add, bool parse, int *printed) {
    int n = -1;
    int32_t *got = tokenizer_encode(t, text, strlen(text), add, parse, &n), *want;
    int nw = json_ids(want_j, &want);
    int same = got && n == nw && memcmp(got, want, sizeof(int32_t) * (size_t)n) == 0;
    if (!same && (*printed)++ < 4) {
        fprintf(stderr, "mismatch (add_special=%d parse_special=%d) on \"%s\"\n", add, parse, text);
        print_ids("llama.cpp", want, nw);
        if (got) print_ids("anvil", got, n);
        else fprintf(stderr, "  anvil: error %s\n", anv_last_error());
    }
    free(got);
    free(want);
    return same;
}

static void run_golden(const char *name, const char *model_path, const char *golden_path) {
    CHECKF(access(model_path, R_OK) == 0, "%s missing (the tokenizer_wpm_models fixture writes it)", model_path);
    size_t glen;
    char *gtext = tu_read_file(golden_path, &glen);
    CHECKF(gtext != NULL, "cannot read %s", golden_path);
    cJSON *g = gtext ? cJSON_Parse(gtext) : NULL;
    free(gtext);
    gguf_file *f = gguf_open(model_path);
    tokenizer *t = f ? tokenizer_load(f) : NULL;
    CHECKF(t != NULL, "%s: %s", name, anv_last_error());
    if (f) gguf_close(f);
    if (!t || !g) { tokenizer_free(t); cJSON_Delete(g); return; }
    CHECK(tokenizer_kind(t) == TOK_KIND_WPM);
    CHECK(tokenizer_bos(t) == 101);
    CHECK(tokenizer_add_bos(t));
    const cJSON *c;
    int n = 0, ok[3] = {0, 0, 0}, printed = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(g, "cases")) {
        const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
        n++;
        ok[0] += check_case(t, text, cJSON_GetObjectItem(c, "plain"), false, false, &printed);
        ok[1] += check_case(t, text, cJSON_GetObjectItem(c, "special"), false, true, &printed);
        ok[2] += check_case(t, text, cJSON_GetObjectItem(c, "added"), true, true, &printed);
    }
    CHECKF(n >= 50, "%s: only %d cases", name, n);
    CHECKF(ok[0] == n && ok[1] == n && ok[2] == n, "%s: %d/%d/%d of %d strings match llama.cpp", name, ok[0], ok[1], ok[2], n);
    printf("%s: %d/%d strings (plain), %d/%d (special), %d/%d ([CLS] .. [SEP]) match llama.cpp\n", name, ok[0], n,
           ok[1], n, ok[2], n);

    /* pieces: word-initial tokens give " word", continuations the bare text, [CLS] only if special */
    int32_t hello = tokenizer_find(t, "\xE2\x96\x81hello"), ing = tokenizer_find(t, "ing");
    char buf[64];
    CHECK(hello >= 0 && ing >= 0);
    int k = tokenizer_token_to_piece(t, hello, buf, sizeof buf, false);
    CHECK(k == 6 && memcmp(buf, " hello", 6) == 0);
    k = tokenizer_token_to_piece(t, ing, buf, sizeof buf, false);
    CHECK(k == 3 && memcmp(buf, "ing", 3) == 0);
    CHECK(tokenizer_token_to_piece(t, 101, buf, sizeof buf, false) == 0);
    k = tokenizer_token_to_piece(t, 101, buf, sizeof buf, true);
    CHECK(k == 5 && memcmp(buf, "[CLS]", 5) == 0);

    /* invalid UTF-8 and a huge unknown word: no crash, [UNK] or dropped bytes */
    const char bad[] = "ab\xff\xfe\xc3 \xe2\x82 hello";
    int nb = 0;
    int32_t *ids = tokenizer_encode(t, bad, sizeof bad - 1, true, false, &nb);
    CHECK(ids && nb >= 3 && ids[0] == 101 && ids[nb - 1] == 102 && ids[nb - 2] == hello);
    free(ids);
    size_t big = 200000;
    char *s = malloc(big + 1);
    for (size_t i = 0; i < big; i++) s[i] = (char)("qzxjkv"[i % 6]);
    s[big] = 0;
    ids = tokenizer_encode(t, s, big, false, false, &nb);
    CHECK(ids && nb >= 1);
    free(ids);
    free(s);
    tokenizer_free(t);
    cJSON_Delete(g);
}

int main(void) {
    anv_log_enabled = 0;
    const char *models = getenv("ANVIL_TEST_MODELS");
    char path[1024];
    snprintf(path, sizeof path, "%s/tok-wpm.gguf", models ? models : ".");
    run_golden("wpm", path, "data/tokenizer-golden-wpm.json");
    snprintf(path, sizeof path, "%s/tok-wpm-cased.gguf", models ? models : ".");
    run_golden("wpm-cased", path, "data/tokenizer-golden-wpm-cased.json");
    snprintf(path, sizeof path, "%s/tok-wpm-bge.gguf", models ? models : ".");
    run_golden("wpm-bge", path, "data/tokenizer-golden-wpm-bge.json");
    return tu_finish();
}
