/* stop_strings: the streaming stop-string matcher (stop_strings.h). Text is buffered
 * only while its tail could still grow into a stop string; the earliest complete stop
 * ends generation and everything from it on is dropped. */
#include "stop_strings.h"

#include <stdlib.h>
#include <string.h>

struct stop_matcher {
    char **stops;
    int *lens;
    int n;
    char *buf;      /* pending text: emitted prefix + held-back tail */
    int len, cap;
    int emit_from;  /* the caller's *emit points here; moved out on the next call */
    bool stopped;
    int hit;        /* the stop that matched (index into stops) once stopped */
};

stop_matcher *stop_matcher_new(char *const *stops, int n) {
    stop_matcher *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    if (n > 0) {
        m->stops = calloc((size_t)n, sizeof *m->stops);
        m->lens = calloc((size_t)n, sizeof *m->lens);
        if (!m->stops || !m->lens) { stop_matcher_free(m); return NULL; }
    }
    for (int i = 0; i < n; i++) {
        if (!stops[i] || !stops[i][0]) continue;
        m->stops[m->n] = strdup(stops[i]);
        if (!m->stops[m->n]) { stop_matcher_free(m); return NULL; }
        m->lens[m->n] = (int)strlen(stops[i]);
        m->n++;
    }
    return m;
}

void stop_matcher_free(stop_matcher *m) {
    if (!m) return;
    if (m->stops)
        for (int i = 0; i < m->n; i++) free(m->stops[i]);
    free(m->stops);
    free(m->lens);
    free(m->buf);
    free(m);
}

/* Drops the text handed out by the previous call. */
static void discard_emitted(stop_matcher *m) {
    if (m->emit_from > 0) {
        memmove(m->buf, m->buf + m->emit_from, (size_t)(m->len - m->emit_from));
        m->len -= m->emit_from;
        m->emit_from = 0;
    }
}

static int reserve(stop_matcher *m, int need) {
    if (need <= m->cap) return 0;
    int cap = m->cap ? m->cap : 64;
    while (cap < need) cap *= 2;
    char *b = realloc(m->buf, (size_t)cap);
    if (!b) return -1;
    m->buf = b;
    m->cap = cap;
    return 0;
}

/* Length of the longest tail of buf[0..len) that is a proper prefix of some stop. */
static int held_tail(const stop_matcher *m) {
    int best = 0;
    for (int i = 0; i < m->n; i++) {
        int max = m->lens[i] - 1 < m->len ? m->lens[i] - 1 : m->len;
        for (int k = max; k > best; k--) {
            if (memcmp(m->buf + m->len - k, m->stops[i], (size_t)k) == 0) { best = k; break; }
        }
    }
    return best;
}

/* Start of the earliest complete stop in buf, or -1; which stop it is in *which. */
static int earliest_stop(const stop_matcher *m, int *which) {
    int best = -1;
    for (int i = 0; i < m->n; i++) {
        const char *p = memmem(m->buf, (size_t)m->len, m->stops[i], (size_t)m->lens[i]);
        if (p && (best < 0 || p - m->buf < best)) { best = (int)(p - m->buf); *which = i; }
    }
    return best;
}

const char *stop_matcher_hit(const stop_matcher *m) {
    return m && m->stopped ? m->stops[m->hit] : NULL;
}

bool stop_matcher_feed(stop_matcher *m, const char *text, int len, const char **emit, int *emit_len) {
    static const char empty[1] = "";
    *emit = empty;
    *emit_len = 0;
    if (m->stopped) return true;
    discard_emitted(m);
    if (len < 0) len = 0;
    if (len > 0) {
        if (reserve(m, m->len + len) != 0) {
            /* Out of memory: pass the text through unfiltered rather than lose it. */
            *emit = text;
            *emit_len = len;
            return false;
        }
        memcpy(m->buf + m->len, text, (size_t)len);
        m->len += len;
    }
    int which = 0;
    int at = earliest_stop(m, &which);
    if (at >= 0) {
        m->stopped = true;
        m->hit = which;
        *emit = m->buf ? m->buf : empty;
        *emit_len = at;
        m->len = at;
        m->emit_from = at;
        return true;
    }
    int safe = m->len - held_tail(m);
    *emit = m->buf ? m->buf : empty;
    *emit_len = safe;
    m->emit_from = safe;
    return false;
}

void stop_matcher_flush(stop_matcher *m, const char **emit, int *emit_len) {
    static const char empty[1] = "";
    if (m->stopped) {
        *emit = empty;
        *emit_len = 0;
        return;
    }
    discard_emitted(m);
    *emit = m->buf ? m->buf : empty;
    *emit_len = m->len;
    m->emit_from = m->len;
}
