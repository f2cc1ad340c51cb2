/* reply_harmony: the harmony reply state machine (reply_harmony.h):
 *   HEADER  the text before <|message|> (role, <|channel|>NAME, to=RECIPIENT,
 *           <|constrain|>TYPE), held until <|message|>; a leading <|start|> is skipped;
 *   BODY    the message, up to <|end|> / <|call|> / <|return|> / <|start|> or the end:
 *           analysis streams into thinking, final and commentary into content; a call
 *           (a functions.* recipient, tools offered) is held and parsed at its end;
 *   PLAIN   a reply that is not harmony: content as it is. */
#include "reply_harmony.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { H_HEADER, H_BODY, H_PLAIN };
enum { OUT_THINKING, OUT_CONTENT, OUT_CALL };

struct harmony_parser {
    bool tools;
    int state;
    int out;                  /* where the BODY goes */
    char recipient[160];      /* the call's function name (OUT_CALL) */
    bytebuf held;
};

static const char MSG[] = "<|message|>", START[] = "<|start|>", CHANNEL[] = "<|channel|>";
static const char *const BODY_END[] = {"<|end|>", "<|call|>", "<|return|>", "<|start|>"};
#define N_BODY_END 4
#define MAX_HEADER 512        /* a header longer than this is not one: the text is content */

harmony_parser *harmony_parser_new(bool tools) {
    harmony_parser *h = calloc(1, sizeof *h);
    if (h) h->tools = tools;
    return h;
}

void harmony_parser_free(harmony_parser *h) {
    if (!h) return;
    bytebuf_free(&h->held);
    free(h);
}

static void drop(harmony_parser *h, size_t n) {
    memmove(h->held.data, h->held.data + n, h->held.len - n + 1);
    h->held.len -= n;
}

static size_t partial_tail(const char *s, size_t n, const char *marker) {
    size_t m = strlen(marker);
    for (size_t k = m - 1; k > 0; k--)
        if (k <= n && !memcmp(s + n - k, marker, k)) return k;
    return 0;
}

/* The word after key in the header (up to a space, '<' or the end). */
static bool header_word(const char *hdr, size_t n, const char *key, char *out, size_t cap) {
    const char *k = memmem(hdr, n, key, strlen(key));
    if (!k) return false;
    const char *s = k + strlen(key), *e = s;
    while (e < hdr + n && *e != ' ' && *e != '<' && *e != '\n') e++;
    size_t len = (size_t)(e - s);
    if (len >= cap) len = cap - 1;
    memcpy(out, s, len);
    out[len] = 0;
    return true;
}

static void begin_body(harmony_parser *h, const char *hdr, size_t n) {
    char channel[64] = "", to[160] = "";
    header_word(hdr, n, CHANNEL, channel, sizeof channel);
    bool has_to = header_word(hdr, n, " to=", to, sizeof to) || (n >= 3 && !memcmp(hdr, "to=", 3) &&
                                                                 header_word(hdr, n, "to=", to, sizeof to));
    h->state = H_BODY;
    if (has_to && h->tools && *to && strcmp(to, "functions.")) {   /* Ollama: any recipient is a call */
        h->out = OUT_CALL;
        snprintf(h->recipient, sizeof h->recipient, "%s", strncmp(to, "functions.", 10) ? to : to + 10);
    } else {
        h->out = !strcmp(channel, "analysis") ? OUT_THINKING : OUT_CONTENT;
    }
}

/* Could the held text still be (the start of) a harmony header? */
static bool plausible_header(const char *s, size_t n) {
    if (n >= strlen(START) && !memcmp(s, START, strlen(START))) { s += strlen(START); n -= strlen(START); }
    else if (n < strlen(START) && !memcmp(s, START, n)) return true;
    static const char *const starts[] = {"assistant", "<|channel|>", " to=", "to=", "<|constrain|>", "<|message|>"};
    for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++) {
        size_t m = strlen(starts[i]);
        if (!memcmp(s, starts[i], n < m ? n : m)) return true;
    }
    return false;
}

static bool emit(harmony_parser *h, reply_delta *d, const char *s, size_t n) {
    if (!n) return true;
    if (h->out == OUT_THINKING) return bytebuf_add(&d->thinking, s, n);
    return bytebuf_add(&d->content, s, n);
}

/* A call's body is complete: its arguments, or the text as content when they are not JSON. */
static bool finish_call(harmony_parser *h, reply_delta *d, const char *s, size_t n) {
    char *t = strndup(s, n);
    if (!t) return false;
    cJSON *j = cJSON_Parse(t);
    free(t);
    bool ok;
    if (cJSON_IsObject(j)) {
        char *args = cJSON_PrintUnformatted(j);
        ok = args && reply_delta_add_call(d, h->recipient, args);
        free(args);
    } else {
        ok = bytebuf_add(&d->content, s, n);
    }
    cJSON_Delete(j);
    return ok;
}

bool harmony_parser_feed(harmony_parser *h, const char *text, size_t len, bool at_end, reply_delta *d) {
    if (len && !bytebuf_add(&h->held, text, len)) return false;
    for (;;) {
        char *s = h->held.data;
        size_t n = h->held.len;
        if (!n) return true;
        if (h->state == H_PLAIN) {
            if (!bytebuf_add(&d->content, s, n)) return false;
            drop(h, n);
            return true;
        }
        if (h->state == H_HEADER) {
            /* the same decisions however the text is cut: <|start|>, the start, then <|message|> */
            if (n >= strlen(START) && !memcmp(s, START, strlen(START))) { drop(h, strlen(START)); continue; }
            const char *hit = plausible_header(s, n) ? memmem(s, n, MSG, strlen(MSG)) : NULL;
            if (hit && (size_t)(hit - s) <= MAX_HEADER) {
                begin_body(h, s, (size_t)(hit - s));
                drop(h, (size_t)(hit - s) + strlen(MSG));
                continue;
            }
            if (!plausible_header(s, n) || n > MAX_HEADER + strlen(MSG) || at_end) {
                /* not harmony (or cut off before its message): the text is content */
                h->state = H_PLAIN;
                continue;
            }
            return true;
        }
        /* H_BODY */
        const char *best = NULL;
        size_t best_len = 0;
        for (int i = 0; i < N_BODY_END; i++) {
            const char *hit = memmem(s, n, BODY_END[i], strlen(BODY_END[i]));
            if (hit && (!best || hit < best)) { best = hit; best_len = strlen(BODY_END[i]); }
        }
        if (best) {
            size_t body = (size_t)(best - s);
            if (!(h->out == OUT_CALL ? finish_call(h, d, s, body) : emit(h, d, s, body))) return false;
            /* <|start|> begins the next header itself */
            drop(h, body + (best_len == strlen(START) && !memcmp(best, START, best_len) ? 0 : best_len));
            h->state = H_HEADER;
            continue;
        }
        if (h->out == OUT_CALL) {
            if (!at_end) return true;   /* held to its end */
            if (!finish_call(h, d, s, n)) return false;
            drop(h, n);
            return true;
        }
        size_t keep = 0;
        if (!at_end)
            for (int i = 0; i < N_BODY_END; i++) {
                size_t k = partial_tail(s, n, BODY_END[i]);
                if (k > keep) keep = k;
            }
        if (!emit(h, d, s, n - keep)) return false;
        drop(h, n - keep);
        return true;
    }
}
