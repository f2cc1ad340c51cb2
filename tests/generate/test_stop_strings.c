/* test_stop_strings: the streaming stop-string matcher: stops split across feeds,
 * overlapping prefixes, several stops, UTF-8, flush, empty stop lists, which stop hit. */
#include <stdlib.h>
#include <string.h>

#include "stop_strings.h"
#include "testutil.h"

typedef struct {
    char out[1024];
    int n;
    bool stopped;
    int feeds_after_stop;
} run_result;

/* Feeds the pieces in order (stopping at the first true) then flushes; collects output. */
static run_result run(char *const *stops, int n_stops, const char *const *pieces, int n_pieces) {
    run_result r = {0};
    stop_matcher *m = stop_matcher_new(stops, n_stops);
    if (!m) return r;
    for (int i = 0; i < n_pieces && !r.stopped; i++) {
        const char *e;
        int el;
        r.stopped = stop_matcher_feed(m, pieces[i], (int)strlen(pieces[i]), &e, &el);
        memcpy(r.out + r.n, e, (size_t)el);
        r.n += el;
    }
    if (!r.stopped) {
        const char *e;
        int el;
        stop_matcher_flush(m, &e, &el);
        memcpy(r.out + r.n, e, (size_t)el);
        r.n += el;
    }
    r.out[r.n] = 0;
    stop_matcher_free(m);
    return r;
}

/* Splits text into one-byte pieces. */
static run_result run_bytes(char *const *stops, int n_stops, const char *text) {
    static char bytes[512][2];
    const char *pieces[512];
    int n = (int)strlen(text);
    for (int i = 0; i < n; i++) {
        bytes[i][0] = text[i];
        bytes[i][1] = 0;
        pieces[i] = bytes[i];
    }
    return run(stops, n_stops, pieces, n);
}

static void test_no_stops(void) {
    const char *p[] = {"hello ", "world"};
    run_result r = run(NULL, 0, p, 2);
    CHECK(!r.stopped);
    CHECK(strcmp(r.out, "hello world") == 0);
    /* Empty strings in the list are ignored: nothing is held back or matched. */
    char *empty[] = {"", ""};
    stop_matcher *m = stop_matcher_new(empty, 2);
    CHECK(m != NULL);
    const char *e;
    int el;
    CHECK(!stop_matcher_feed(m, "abc", 3, &e, &el));
    CHECK(el == 3 && memcmp(e, "abc", 3) == 0);
    stop_matcher_flush(m, &e, &el);
    CHECK(el == 0);
    stop_matcher_free(m);
}

static void test_split_and_holdback(void) {
    char *stops[] = {"STOP"};
    const char *p[] = {"abc S", "T", "OP tail"};
    run_result r = run(stops, 1, p, 3);
    CHECK(r.stopped);
    CHECKF(strcmp(r.out, "abc ") == 0, "got '%s'", r.out);

    /* What is held back is released once it cannot be a stop any more. */
    stop_matcher *m = stop_matcher_new(stops, 1);
    const char *e;
    int el;
    CHECK(!stop_matcher_feed(m, "xST", 3, &e, &el));
    CHECK(el == 1 && e[0] == 'x');
    CHECK(!stop_matcher_feed(m, "x", 1, &e, &el));
    CHECK(el == 3 && memcmp(e, "STx", 3) == 0);
    /* A partial stop at the end is released by flush. */
    CHECK(!stop_matcher_feed(m, "STO", 3, &e, &el));
    CHECK(el == 0);
    stop_matcher_flush(m, &e, &el);
    CHECK(el == 3 && memcmp(e, "STO", 3) == 0);
    stop_matcher_flush(m, &e, &el);
    CHECK(el == 0);
    stop_matcher_free(m);

    /* Byte-at-a-time feeds. */
    r = run_bytes(stops, 1, "one STOP two");
    CHECK(r.stopped && strcmp(r.out, "one ") == 0);
    r = run_bytes(stops, 1, "one STO two");
    CHECK(!r.stopped && strcmp(r.out, "one STO two") == 0);
}

static void test_overlapping_prefixes(void) {
    char *stops[] = {"aab"};
    run_result r = run_bytes(stops, 1, "xaaab");
    CHECK(r.stopped);
    CHECKF(strcmp(r.out, "xa") == 0, "got '%s'", r.out);
    r = run_bytes(stops, 1, "aaaaab!");
    CHECK(r.stopped && strcmp(r.out, "aaa") == 0);
    r = run_bytes(stops, 1, "aaaa");
    CHECK(!r.stopped && strcmp(r.out, "aaaa") == 0);

    char *two[] = {"ab", "aab"};
    r = run_bytes(two, 2, "zaab");
    CHECK(r.stopped);
    CHECKF(strcmp(r.out, "z") == 0, "got '%s'", r.out); /* earliest start wins: "aab" at 1 */
    const char *p[] = {"zaa", "b"};
    r = run(two, 2, p, 2);
    CHECK(r.stopped && strcmp(r.out, "z") == 0);
}

static void test_several_stops(void) {
    char *stops[] = {"</s>", "\n\n", "User:"};
    const char *p[] = {"Hello", "\n", "there", " User", ":", " more"};
    run_result r = run(stops, 3, p, 6);
    CHECK(r.stopped);
    CHECKF(strcmp(r.out, "Hello\nthere ") == 0, "got '%s'", r.out);
    const char *p2[] = {"a</", "s", ">"};
    r = run(stops, 3, p2, 3);
    CHECK(r.stopped && strcmp(r.out, "a") == 0);
    /* Two stops in one piece: the earlier one ends it. */
    const char *p3[] = {"x\n\ny</s>"};
    r = run(stops, 3, p3, 1);
    CHECK(r.stopped && strcmp(r.out, "x") == 0);
    /* The stop at the very start: nothing emitted. */
    const char *p4[] = {"User:", "ignored"};
    r = run(stops, 3, p4, 2);
    CHECK(r.stopped && r.n == 0);
}

static void test_utf8(void) {
    char *stops[] = {"\xc3\xa9t\xc3\xa9"};   /* "été" */
    const char *p[] = {"un \xc3\xa9", "t", "\xc3\xa9 chaud"};
    run_result r = run(stops, 1, p, 3);
    CHECK(r.stopped && strcmp(r.out, "un ") == 0);
    /* A held-back multi-byte prefix comes out whole. */
    const char *p2[] = {"\xc3\xa9", "l\xc3\xa8ve"};
    r = run(stops, 1, p2, 2);
    CHECK(!r.stopped && strcmp(r.out, "\xc3\xa9l\xc3\xa8ve") == 0);
    stop_matcher *m = stop_matcher_new(stops, 1);
    const char *e;
    int el;
    CHECK(!stop_matcher_feed(m, "ab\xc3\xa9", 4, &e, &el));
    CHECK(el == 2);  /* "é" held, never half a character */
    stop_matcher_free(m);
    /* An emoji stop. */
    char *emoji[] = {"\xf0\x9f\x98\x80"};
    const char *p3[] = {"hi \xf0\x9f\x98\x80 there"};
    r = run(emoji, 1, p3, 1);
    CHECK(r.stopped && strcmp(r.out, "hi ") == 0);
}

static void test_after_stop(void) {
    char *stops[] = {"X"};
    stop_matcher *m = stop_matcher_new(stops, 1);
    const char *e;
    int el;
    CHECK(stop_matcher_feed(m, "abXcd", 5, &e, &el));
    CHECK(el == 2 && memcmp(e, "ab", 2) == 0);
    CHECK(stop_matcher_feed(m, "more", 4, &e, &el));
    CHECK(el == 0);
    stop_matcher_flush(m, &e, &el);
    CHECK(el == 0);
    stop_matcher_free(m);
    stop_matcher_free(NULL);
}

/* A long stream: the output equals the input cut at the first stop, for random splits. */
static void test_random_splits(void) {
    char *stops[] = {"<|end|>", "<|e", "ndx"};
    const char *text = "some text <|en and <|endx more <|end|> after";
    /* The earliest complete match is "<|e" at the first "<|en". */
    const char *expect = "some text ";
    uint64_t st = 42;
    int ok = 0;
    for (int trial = 0; trial < 200; trial++) {
        const char *pieces[64];
        char store[64][64];
        int n = 0, pos = 0, len = (int)strlen(text);
        while (pos < len && n < 64) {
            int k = 1 + (int)(tu_rand_u64(&st) % 6);
            if (k > len - pos) k = len - pos;
            memcpy(store[n], text + pos, (size_t)k);
            store[n][k] = 0;
            pieces[n] = store[n];
            n++;
            pos += k;
        }
        run_result r = run(stops, 3, pieces, n);
        if (!r.stopped || strcmp(r.out, expect) != 0) {
            fprintf(stderr, "trial %d got '%s'\n", trial, r.out);
            break;
        }
        ok++;
    }
    CHECK(ok == 200);
    ok = 0;
    char *one[] = {"<|end|>"};
    for (int trial = 0; trial < 200; trial++) {
        const char *pieces[64];
        char store[64][64];
        int n = 0, pos = 0, len = (int)strlen(text);
        while (pos < len && n < 64) {
            int k = 1 + (int)(tu_rand_u64(&st) % 5);
            if (k > len - pos) k = len - pos;
            memcpy(store[n], text + pos, (size_t)k);
            store[n][k] = 0;
            pieces[n] = store[n];
            n++;
            pos += k;
        }
        run_result r = run(one, 1, pieces, n);
        if (!r.stopped || strcmp(r.out, "some text <|en and <|endx more ") != 0) {
            fprintf(stderr, "trial %d got '%s'\n", trial, r.out);
            break;
        }
        ok++;
    }
    CHECK(ok == 200);
}

/* stop_matcher_hit names the stop that ended generation (the earliest in the text, not the
 * first in the list; empty stops skipped), NULL before and without one. */
static void test_which_stop(void) {
    char *stops[] = {"", "LATE", "ab", "b"};
    stop_matcher *m = stop_matcher_new(stops, 4);
    const char *e;
    int el;
    CHECK(stop_matcher_hit(m) == NULL);
    CHECK(!stop_matcher_feed(m, "xx a", 4, &e, &el));
    CHECK(el == 3 && memcmp(e, "xx ", 3) == 0);   /* "a" held: it may start "ab" */
    CHECK(stop_matcher_hit(m) == NULL);
    CHECK(stop_matcher_feed(m, "b LATE", 6, &e, &el));   /* "ab" at 3 and "b" at 4: "ab" starts first */
    CHECKF(stop_matcher_hit(m) && strcmp(stop_matcher_hit(m), "ab") == 0, "hit '%s'", stop_matcher_hit(m));
    CHECK(el == 0);
    stop_matcher_free(m);
    m = stop_matcher_new(stops, 4);
    CHECK(stop_matcher_feed(m, "..LATE..b", 9, &e, &el));
    CHECKF(stop_matcher_hit(m) && strcmp(stop_matcher_hit(m), "LATE") == 0, "hit '%s'", stop_matcher_hit(m));
    stop_matcher_flush(m, &e, &el);
    CHECK(stop_matcher_hit(m) && strcmp(stop_matcher_hit(m), "LATE") == 0);
    stop_matcher_free(m);
    m = stop_matcher_new(stops, 4);
    CHECK(!stop_matcher_feed(m, "none here", 9, &e, &el));
    stop_matcher_flush(m, &e, &el);
    CHECK(stop_matcher_hit(m) == NULL);
    stop_matcher_free(m);
    CHECK(stop_matcher_hit(NULL) == NULL);
}

int main(void) {
    test_no_stops();
    test_which_stop();
    test_split_and_holdback();
    test_overlapping_prefixes();
    test_several_stops();
    test_utf8();
    test_after_stop();
    test_random_splits();
    return tu_finish();
}
