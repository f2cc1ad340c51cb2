/* reply_gemma4: Gemma 4's reply split into content, thinking and tool calls (reply_gemma4.h),
 * a state machine over the text held since the last emit:
 *   CONTENT   up to the earliest <|channel> or <|tool_call>;
 *   THINKING  up to <channel|> (the channel name "thought\n" cut first);
 *   CALL      up to <tool_call|>, then parsed;
 *   AFTER     after a call: whitespace, <tool_call|> and <|tool_response> dropped.
 * A tail that could begin the marker the state looks for is held back, with the whitespace
 * before it (dropped if the marker follows). */
#include "reply_gemma4.h"

#include "bytebuf.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

enum { G4_CONTENT, G4_THINKING, G4_CALL, G4_AFTER };

static const char CH_OPEN[] = "<|channel>", CH_CLOSE[] = "<channel|>", CALL_OPEN[] = "<|tool_call>",
                  CALL_CLOSE[] = "<tool_call|>", RESP_OPEN[] = "<|tool_response>";

struct gemma4_parser {
    bool thinking;         /* keep the thought channel (else it is dropped) */
    bool tools;            /* the request offered tools: calls are parsed (else they are content) */
    cJSON *tool_list;      /* the request's tools (the repairs read their schemas), NULL if none */
    int state;
    bool strip_name;       /* just entered the channel: "thought\n" to cut */
    bool trim_leading;     /* just left the channel: whitespace to drop */
    bytebuf held;
};

gemma4_parser *gemma4_parser_new(bool thinking, bool tools, const char *tools_json) {
    gemma4_parser *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->thinking = thinking;
    g->tools = tools;
    g->tool_list = tools_json ? cJSON_Parse(tools_json) : NULL;   /* not JSON: no schemas */
    return g;
}

void gemma4_parser_free(gemma4_parser *g) {
    if (!g) return;
    bytebuf_free(&g->held);
    cJSON_Delete(g->tool_list);
    free(g);
}

static bool is_space(char c) { return isspace((unsigned char)c) != 0; }

static void held_drop(gemma4_parser *g, size_t n) {
    memmove(g->held.data, g->held.data + n, g->held.len - n);
    g->held.len -= n;
    g->held.data[g->held.len] = 0;
}

/* The longest tail of s[0..n) that is a proper prefix of marker. */
static size_t partial_tail(const char *s, size_t n, const char *marker) {
    size_t m = strlen(marker);
    for (size_t k = m - 1; k > 0; k--)
        if (k <= n && !memcmp(s + n - k, marker, k)) return k;
    return 0;
}

/* How much of s[0..n) can go out now: all but a partial marker and the whitespace before it
 * (or trailing whitespace alone). */
static size_t safe_len(const char *s, size_t n, const char *m1, const char *m2) {
    size_t keep = partial_tail(s, n, m1);
    if (m2) {
        size_t k = partial_tail(s, n, m2);
        if (k > keep) keep = k;
    }
    size_t end = n - keep;
    while (end && is_space(s[end - 1])) end--;
    return end;
}

static const char *find(const char *s, size_t n, const char *m) { return memmem(s, n, m, strlen(m)); }

/* One call body; true with the call added, false when it is not a call (*oom on failure). */
static bool add_call(reply_delta *d, const char *s, size_t n, const cJSON *tools, bool *oom) {
    static const char PREFIX[] = "call:";
    if (n < strlen(PREFIX) || memcmp(s, PREFIX, strlen(PREFIX))) return false;
    s += strlen(PREFIX);
    n -= strlen(PREFIX);
    const char *brace = memchr(s, '{', n);
    if (!brace) return false;
    const char *a = s, *b = brace;
    while (a < b && is_space(*a)) a++;
    while (b > a && is_space(b[-1])) b--;
    if (a == b) return false;
    char *name = strndup(a, (size_t)(b - a));
    if (!name) { *oom = true; return false; }
    char *args = gemma4_args_to_json(brace, (size_t)(s + n - brace), name, tools);
    if (!args) { free(name); return false; }
    bool ok = reply_delta_add_call(d, name, args);
    if (!ok) *oom = true;
    free(name);
    free(args);
    return ok;
}

/* A body that is not a call: content, with its markers. */
static bool call_as_content(reply_delta *d, const char *s, size_t n, bool closed) {
    return bytebuf_add(&d->content, CALL_OPEN, strlen(CALL_OPEN)) && (!n || bytebuf_add(&d->content, s, n)) &&
           (!closed || bytebuf_add(&d->content, CALL_CLOSE, strlen(CALL_CLOSE)));
}

/* ---- the state machine --------------------------------------------------------------- */

static bool run(gemma4_parser *g, reply_delta *d, bool at_end) {
    for (;;) {
        char *s = g->held.data;
        size_t n = g->held.len;
        if (!n) return true;
        if (g->state == G4_CONTENT) {
            if (g->trim_leading) {
                size_t i = 0;
                while (i < n && is_space(s[i])) i++;
                held_drop(g, i);
                if (i == n) return true;
                g->trim_leading = false;
                continue;
            }
            const char *ch = find(s, n, CH_OPEN), *call = g->tools ? find(s, n, CALL_OPEN) : NULL;
            const char *hit = ch && (!call || ch < call) ? ch : call;
            if (hit) {
                size_t pre = (size_t)(hit - s);
                while (pre && is_space(s[pre - 1])) pre--;
                if (pre && !bytebuf_add(&d->content, s, pre)) return false;
                held_drop(g, (size_t)(hit - s) + strlen(hit == ch ? CH_OPEN : CALL_OPEN));
                g->state = hit == ch ? G4_THINKING : G4_CALL;
                g->strip_name = hit == ch;
                continue;
            }
            size_t out = at_end ? n : safe_len(s, n, CH_OPEN, g->tools ? CALL_OPEN : NULL);
            if (out && !bytebuf_add(&d->content, s, out)) return false;
            held_drop(g, out);
            return true;
        }
        if (g->state == G4_THINKING) {
            if (g->strip_name) {
                static const char NAME[] = "thought\n";
                if (n >= strlen(NAME) && !memcmp(s, NAME, strlen(NAME))) {
                    held_drop(g, strlen(NAME));
                } else if (!at_end && n < strlen(NAME) && !memcmp(s, NAME, n)) {
                    return true;   /* "thou.." so far */
                }
                g->strip_name = false;
                continue;
            }
            bytebuf *to = g->thinking ? &d->thinking : NULL;
            const char *hit = find(s, n, CH_CLOSE);
            if (hit) {
                size_t pre = (size_t)(hit - s);
                while (pre && is_space(s[pre - 1])) pre--;
                if (to && pre && !bytebuf_add(to, s, pre)) return false;
                held_drop(g, (size_t)(hit - s) + strlen(CH_CLOSE));
                g->state = G4_CONTENT;
                g->trim_leading = true;
                continue;
            }
            size_t out = at_end ? n : safe_len(s, n, CH_CLOSE, NULL);
            if (to && out && !bytebuf_add(to, s, out)) return false;
            held_drop(g, out);
            return true;
        }
        if (g->state == G4_CALL) {
            const char *hit = find(s, n, CALL_CLOSE);
            if (!hit && !at_end) return true;
            size_t body = hit ? (size_t)(hit - s) : n;
            bool oom = false;
            if (!add_call(d, s, body, g->tool_list, &oom)) {
                if (oom || !call_as_content(d, s, body, hit != NULL)) return false;
            }
            held_drop(g, hit ? body + strlen(CALL_CLOSE) : n);
            g->state = G4_AFTER;
            continue;
        }
        /* G4_AFTER: drop whitespace and stray markers after a call */
        size_t i = 0;
        for (;;) {
            while (i < n && is_space(s[i])) i++;
            if (n - i >= strlen(CALL_CLOSE) && !memcmp(s + i, CALL_CLOSE, strlen(CALL_CLOSE))) i += strlen(CALL_CLOSE);
            else if (n - i >= strlen(RESP_OPEN) && !memcmp(s + i, RESP_OPEN, strlen(RESP_OPEN))) i += strlen(RESP_OPEN);
            else break;
        }
        held_drop(g, i);
        n -= i;
        if (!n) return true;
        bool maybe = (n < strlen(CALL_CLOSE) && !memcmp(s, CALL_CLOSE, n)) ||
                     (n < strlen(RESP_OPEN) && !memcmp(s, RESP_OPEN, n));
        if (maybe && !at_end) return true;
        if (maybe) { held_drop(g, n); return true; }
        g->state = G4_CONTENT;
    }
}

bool gemma4_parser_feed(gemma4_parser *g, const char *text, size_t len, bool at_end, reply_delta *d) {
    if (len && !bytebuf_add(&g->held, text, len)) return false;
    if (!g->held.data && !bytebuf_add(&g->held, "", 0)) return false;
    return run(g, d, at_end) && !d->content.oom && !d->thinking.oom;
}
