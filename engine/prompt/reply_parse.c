/* reply_parse: the streaming split of a reply into content, thinking and tool calls
 * (reply_parse.h). A small state machine over the text held since the last emit:
 *   TEXT      content; looks for "<think>", "<tool_call>", "[TOOL_CALLS]"; a reply whose
 *             first non-space byte is '{' or '[' (with tools) goes to JSON_REPLY;
 *   THINK     thinking up to "</think>";
 *   TAG_CALL  a Hermes call up to "</tool_call>";
 *   MISTRAL   everything after [TOOL_CALLS] (a JSON array, or name[ARGS]{..} runs, parsed at
 *             the end);
 *   JSON_REPLY the whole reply, held, parsed as calls at the end (else content);
 *   CUSTOM    everything after a Go template's own tool tag (opts.tool_tag), like MISTRAL.
 * A tail that is a proper prefix of a marker the state looks for is held back. */
#include "reply_parse.h"

#include "reply_gemma4.h"
#include "reply_harmony.h"
#include "reply_xml_call.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

enum { ST_TEXT, ST_THINK, ST_TAG_CALL, ST_MISTRAL, ST_JSON_REPLY, ST_CUSTOM };

struct reply_parser {
    reply_parse_opts o;
    int state;
    bytebuf held;             /* text not yet emitted */
    bool seen_content;        /* a non-space content byte was emitted (JSON_REPLY is only at the start) */
    bool trim_leading;        /* drop whitespace before the next content (after </think>) */
    bool trim_think;          /* drop whitespace at the start of the thinking (after <think>) */
    int n_calls;
    const char *tag;          /* opts.tool_tag when it is a marker of its own, else NULL */
    const char *think_open, *think_close;   /* <think> </think>, or a Go TEMPLATE's (opts) */
    harmony_parser *h;        /* opts.harmony: every byte goes there */
    gemma4_parser *g4;        /* opts.gemma4: every byte goes there */
    char *tools_json;         /* opts.tools_json, copied */
    bool open_again;          /* qwen35: a leading <think> in the thinking may still be dropped */
};

static const char THINK_OPEN[] = "<think>", THINK_CLOSE[] = "</think>";
static const char CALL_OPEN[] = "<tool_call>", CALL_CLOSE[] = "</tool_call>", MISTRAL_OPEN[] = "[TOOL_CALLS]";

reply_parser *reply_parser_new(const reply_parse_opts *o) {
    reply_parser *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->o = *o;
    if (o->harmony && !(p->h = harmony_parser_new(o->tools))) { free(p); return NULL; }
    if (o->gemma4 && !o->harmony && !(p->g4 = gemma4_parser_new(o->thinking, o->tools, o->tools_json))) { free(p); return NULL; }
    if (o->tools_json && !(p->tools_json = strdup(o->tools_json))) { reply_parser_free(p); return NULL; }
    p->o.tools_json = NULL;
    p->open_again = o->qwen35;
    p->state = o->thinking && o->start_in_thinking ? ST_THINK : ST_TEXT;
    p->think_open = p->o.think_open[0] && p->o.think_close[0] ? p->o.think_open : THINK_OPEN;
    p->think_close = p->o.think_open[0] && p->o.think_close[0] ? p->o.think_close : THINK_CLOSE;
    const char *t = p->o.tool_tag;
    if (o->tools && t[0] && strcmp(t, "{") && strcmp(t, "[") && strcmp(t, CALL_OPEN) && strcmp(t, MISTRAL_OPEN))
        p->tag = p->o.tool_tag;
    p->trim_think = true;
    return p;
}

void reply_parser_free(reply_parser *p) {
    if (!p) return;
    harmony_parser_free(p->h);
    gemma4_parser_free(p->g4);
    free(p->tools_json);
    bytebuf_free(&p->held);
    free(p);
}

int reply_parser_n_calls(const reply_parser *p) { return p->n_calls; }

void reply_delta_reset(reply_delta *d) {
    for (int i = 0; i < d->n_calls; i++) { free(d->calls[i].name); free(d->calls[i].arguments); }
    d->n_calls = 0;
    d->content.len = d->thinking.len = 0;
    if (d->content.data) d->content.data[0] = 0;
    if (d->thinking.data) d->thinking.data[0] = 0;
}

void reply_delta_free(reply_delta *d) {
    reply_delta_reset(d);
    free(d->calls);
    bytebuf_free(&d->content);
    bytebuf_free(&d->thinking);
    memset(d, 0, sizeof *d);
}

static bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

static bool emit_content(reply_parser *p, reply_delta *d, const char *s, size_t n) {
    if (p->trim_leading) {
        while (n && is_space(*s)) { s++; n--; }
        if (!n) return true;
        p->trim_leading = false;
    }
    for (size_t i = 0; i < n && !p->seen_content; i++) p->seen_content = !is_space(s[i]);
    return !n || bytebuf_add(&d->content, s, n);
}

bool reply_delta_add_call(reply_delta *d, const char *name, const char *args) {
    if (d->n_calls == d->cap_calls) {
        int nc = d->cap_calls ? d->cap_calls * 2 : 4;
        reply_tool_call *c = realloc(d->calls, (size_t)nc * sizeof *c);
        if (!c) return false;
        d->calls = c;
        d->cap_calls = nc;
    }
    char *n = strdup(name), *a = strdup(args);
    if (!n || !a) { free(n); free(a); return false; }
    d->calls[d->n_calls++] = (reply_tool_call){n, a};
    return true;
}

static bool add_call(reply_parser *p, reply_delta *d, const char *name, const char *args) {
    if (!reply_delta_add_call(d, name, args)) return false;
    p->n_calls++;
    return true;
}

/* One call object: {"name": "...", "arguments"|"parameters": {...} or "<json text>"}.
 * 1 added, 0 not a call, -1 out of memory. */
static int call_from_json(reply_parser *p, reply_delta *d, const cJSON *o) {
    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(o, "function");
    if (cJSON_IsObject(fn)) o = fn;   /* {"type":"function","function":{...}} */
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(o, "arguments");
    if (!args) args = cJSON_GetObjectItemCaseSensitive(o, "parameters");
    if (!cJSON_IsString(name) || !*name->valuestring) return 0;
    char *text = NULL;
    if (!args) {
        text = strdup("{}");
    } else if (cJSON_IsObject(args)) {
        text = cJSON_PrintUnformatted(args);
    } else if (cJSON_IsString(args)) { /* arguments as JSON text */
        cJSON *inner = cJSON_Parse(args->valuestring);
        if (!cJSON_IsObject(inner)) { cJSON_Delete(inner); return 0; }
        text = cJSON_PrintUnformatted(inner);
        cJSON_Delete(inner);
    } else {
        return 0;
    }
    if (!text) return -1;
    int rc = add_call(p, d, name->valuestring, text) ? 1 : -1;
    free(text);
    return rc;
}

static int call_from_json(reply_parser *p, reply_delta *d, const cJSON *o);

static bool is_call(const cJSON *o) {
    const cJSON *fn = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, "function") : NULL;
    return cJSON_IsObject(o) && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(cJSON_IsObject(fn) ? fn : o, "name"));
}

/* Objects one after another ({..} {..} or {..}, {..}): all calls, or nothing added. */
static int calls_from_run(reply_parser *p, reply_delta *d, const char *t) {
    cJSON *items[64];
    int n = 0, rc = 1;
    const char *s = t;
    for (;;) {
        while (*s == ' ' || *s == '\n' || *s == '\r' || *s == '\t' || *s == ',') s++;
        if (!*s) break;
        const char *end = NULL;
        cJSON *j = n < 64 ? cJSON_ParseWithOpts(s, &end, false) : NULL;
        if (!j || !is_call(j)) { cJSON_Delete(j); rc = 0; break; }
        items[n++] = j;
        s = end;
    }
    if (!n) rc = 0;
    for (int i = 0; i < n; i++) {
        if (rc == 1) {
            int r = call_from_json(p, d, items[i]);
            if (r <= 0) rc = r;
        }
        cJSON_Delete(items[i]);
    }
    return rc;
}

/* A JSON object or array of call objects. All-or-nothing: 1 when every element is a call
 * (all added), 0 when the text is not that (nothing added), -1 out of memory. */
static int calls_from_text(reply_parser *p, reply_delta *d, const char *text, size_t n) {
    char *t = strndup(text, n);
    if (!t) return -1;
    cJSON *j = cJSON_ParseWithOpts(t, NULL, true);   /* the whole text: no trailing second object */
    if (!j) {   /* a run of call objects, spaces or commas between */
        int rc = calls_from_run(p, d, t);
        free(t);
        return rc;
    }
    free(t);
    int rc = 0;
    if (cJSON_IsObject(j)) {
        rc = call_from_json(p, d, j);
    } else if (cJSON_IsArray(j) && cJSON_GetArraySize(j) > 0) {
        rc = 1;
        const cJSON *it;
        cJSON_ArrayForEach(it, j) {
            const cJSON *fn = cJSON_IsObject(it) ? cJSON_GetObjectItemCaseSensitive(it, "function") : NULL;
            const cJSON *o = cJSON_IsObject(fn) ? fn : it;
            if (!cJSON_IsObject(it) || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "name"))) { rc = 0; break; }
        }
        if (rc == 1)
            cJSON_ArrayForEach(it, j) {
                int r = call_from_json(p, d, it);
                if (r <= 0) { rc = r; break; }
            }
    }
    cJSON_Delete(j);
    return rc;
}

/* Mistral's newer call form, the text after a [TOOL_CALLS]: name[ARGS]{..} (Ministral 3,
 * Magistral, Devstral 2) or name[CALL_ID]id[ARGS]{..} (Mistral Small 3.2), further calls each
 * after their own [TOOL_CALLS]. All-or-nothing as calls_from_text. */
static int calls_from_args_run(reply_parser *p, reply_delta *d, const char *text, size_t n) {
    static const char ARGS[] = "[ARGS]", CALL_ID[] = "[CALL_ID]";
    char *t = strndup(text, n);
    if (!t) return -1;
    enum { MAX_CALLS = 64 };
    char *names[MAX_CALLS], *args[MAX_CALLS];
    int k = 0, rc = 1;
    char *s = t;
    for (;;) {
        char *a = strstr(s, ARGS);
        if (!a || k == MAX_CALLS) { rc = 0; break; }
        *a = 0;
        char *id = strstr(s, CALL_ID);
        if (id) *id = 0;
        while (is_space(*s)) s++;
        size_t nl = strlen(s);
        while (nl && is_space(s[nl - 1])) s[--nl] = 0;
        if (!nl) { rc = 0; break; }
        const char *end = NULL;
        cJSON *j = cJSON_ParseWithOpts(a + strlen(ARGS), &end, false);
        if (!cJSON_IsObject(j)) { cJSON_Delete(j); rc = 0; break; }
        names[k] = s;
        args[k] = cJSON_PrintUnformatted(j);
        cJSON_Delete(j);
        if (!args[k]) { rc = -1; break; }
        k++;
        s = (char *)end;
        while (is_space(*s)) s++;
        if (!*s) break;
        if (strncmp(s, MISTRAL_OPEN, strlen(MISTRAL_OPEN))) { rc = 0; break; }
        s += strlen(MISTRAL_OPEN);
    }
    for (int i = 0; i < k; i++) {
        if (rc == 1 && !add_call(p, d, names[i], args[i])) rc = -1;
        free(args[i]);
    }
    free(t);
    return rc;
}

/* Qwen3-Coder's <function=NAME><parameter=K>..</function> form; 1 added, 0 not one, -1 out of memory. */
static int call_from_xml(reply_parser *p, reply_delta *d, const char *s, size_t n) {
    char *name = NULL;
    int oom = 0;
    char *args = xml_call_parse(s, n, p->tools_json, &name, &oom);
    int rc = args ? (add_call(p, d, name, args) ? 1 : -1) : oom ? -1 : 0;
    free(name);
    free(args);
    return rc;
}

/* Length of the longest tail of s[0..n) that is a proper prefix of marker. */
static size_t partial_tail(const char *s, size_t n, const char *marker) {
    size_t m = strlen(marker);
    for (size_t k = m - 1; k > 0; k--)
        if (k <= n && !memcmp(s + n - k, marker, k)) return k;
    return 0;
}

static void held_drop(reply_parser *p, size_t n) {
    memmove(p->held.data, p->held.data + n, p->held.len - n + 1);
    p->held.len -= n;
}

/* Finds the earliest marker of the TEXT state in s[0..n). */
static const char *first_marker(const reply_parser *p, const char *s, size_t n, const char **which) {
    const char *best = NULL;
    const char *cands[4] = {p->o.thinking ? p->think_open : NULL, p->o.tools ? CALL_OPEN : NULL,
                            p->o.tools ? MISTRAL_OPEN : NULL, p->tag};
    for (int i = 0; i < 4; i++) {
        if (!cands[i]) continue;
        const char *hit = memmem(s, n, cands[i], strlen(cands[i]));
        if (hit && (!best || hit < best)) { best = hit; *which = cands[i]; }
    }
    return best;
}

/* Runs the state machine over held text; at_end: nothing more will come. */
static bool run(reply_parser *p, reply_delta *d, bool at_end) {
    for (;;) {
        char *s = p->held.data;
        size_t n = p->held.len;
        if (!n) return true;
        if (p->state == ST_TEXT) {
            if (p->o.tools && !p->seen_content) {
                size_t i = 0;
                while (i < n && is_space(s[i])) i++;
                if (i < n && s[i] == '{') { p->state = ST_JSON_REPLY; continue; }
                if (i < n && s[i] == '[') {   /* [TOOL_CALLS], a bracketed think tag ([THINK]) or JSON */
                    const char *marks[2] = {MISTRAL_OPEN, p->o.thinking ? p->think_open : NULL};
                    bool partial = false, full = false;
                    for (int k = 0; k < 2; k++) {
                        if (!marks[k]) continue;
                        size_t m = strlen(marks[k]), have = n - i;
                        if (have < m && !strncmp(s + i, marks[k], have)) partial = true;
                        else if (have >= m && !strncmp(s + i, marks[k], m)) full = true;
                    }
                    if (partial && !full) {
                        if (!at_end) return true;      /* "[TOOL_C..." so far */
                    } else if (!full) {
                        p->state = ST_JSON_REPLY;      /* a JSON array of calls? */
                        continue;
                    }
                }
                if (i == n && !at_end) return true;   /* only spaces so far */
            }
            const char *which = NULL;
            const char *hit = first_marker(p, s, n, &which);
            if (hit) {
                size_t pre = (size_t)(hit - s);
                if (!emit_content(p, d, s, pre)) return false;
                held_drop(p, pre + strlen(which));
                p->state = which == p->think_open ? ST_THINK : which == CALL_OPEN ? ST_TAG_CALL
                         : which == MISTRAL_OPEN ? ST_MISTRAL : ST_CUSTOM;
                p->trim_think = which == p->think_open;
                continue;
            }
            size_t keep = 0;
            if (!at_end) {
                size_t k;
                if (p->o.thinking && (k = partial_tail(s, n, p->think_open)) > keep) keep = k;
                if (p->o.tools && (k = partial_tail(s, n, CALL_OPEN)) > keep) keep = k;
                if (p->o.tools && (k = partial_tail(s, n, MISTRAL_OPEN)) > keep) keep = k;
                if (p->tag && (k = partial_tail(s, n, p->tag)) > keep) keep = k;
            }
            if (!emit_content(p, d, s, n - keep)) return false;
            held_drop(p, n - keep);
            return true;
        }
        if (p->state == ST_THINK) {
            if (p->trim_think) {
                size_t i = 0;
                while (i < n && is_space(s[i])) i++;
                held_drop(p, i);
                if (i == n) return true;
                p->trim_think = false;
                continue;
            }
            if (p->open_again) {   /* qwen35: the model repeats the <think> the prompt opened */
                size_t m = strlen(THINK_OPEN);
                if (n < m && !memcmp(s, THINK_OPEN, n) && !at_end) return true;
                p->open_again = false;
                if (n >= m && !memcmp(s, THINK_OPEN, m)) {
                    held_drop(p, m);
                    p->trim_think = true;
                }
                continue;
            }
            const char *hit = memmem(s, n, p->think_close, strlen(p->think_close));
            const char *call = p->o.qwen35 ? memmem(s, n, CALL_OPEN, strlen(CALL_OPEN)) : NULL;
            if (call && (!hit || call < hit)) {   /* qwen35: a call ends an unclosed thinking */
                size_t pre = (size_t)(call - s), end = pre;
                while (end && is_space(s[end - 1])) end--;
                if (end && !bytebuf_add(&d->thinking, s, end)) return false;
                held_drop(p, pre);
                p->state = ST_TEXT;
                continue;
            }
            if (hit) {
                size_t pre = (size_t)(hit - s), end = pre;
                while (p->o.qwen35 && end && is_space(s[end - 1])) end--;   /* Ollama's qwen3.5 trims it */
                if (end && !bytebuf_add(&d->thinking, s, end)) return false;
                held_drop(p, pre + strlen(p->think_close));
                p->state = ST_TEXT;
                p->trim_leading = true;
                continue;
            }
            size_t keep = at_end ? 0 : partial_tail(s, n, p->think_close);
            if (p->o.qwen35 && !at_end) {   /* also the whitespace a <tool_call> would cut */
                if (partial_tail(s, n, CALL_OPEN) > keep) keep = partial_tail(s, n, CALL_OPEN);
                while (keep < n && is_space(s[n - keep - 1])) keep++;
            }
            if (n - keep && !bytebuf_add(&d->thinking, s, n - keep)) return false;
            held_drop(p, n - keep);
            return true;
        }
        if (p->state == ST_TAG_CALL) {
            const char *hit = memmem(s, n, CALL_CLOSE, strlen(CALL_CLOSE));
            if (!hit && !at_end) return true;
            size_t body = hit ? (size_t)(hit - s) : n;
            int rc = calls_from_text(p, d, s, body);
            if (rc == 0) rc = call_from_xml(p, d, s, body);
            if (rc < 0) return false;
            if (rc == 0) { /* not a call: the text as it was */
                if (!emit_content(p, d, CALL_OPEN, strlen(CALL_OPEN)) || !emit_content(p, d, s, body) ||
                    (hit && !emit_content(p, d, CALL_CLOSE, strlen(CALL_CLOSE))))
                    return false;
            }
            held_drop(p, hit ? body + strlen(CALL_CLOSE) : n);
            p->state = ST_TEXT;
            p->trim_leading = rc > 0;
            continue;
        }
        /* ST_MISTRAL, ST_CUSTOM, ST_JSON_REPLY: held to the end */
        if (!at_end) return true;
        int rc = calls_from_text(p, d, s, n);
        if (rc == 0 && p->state == ST_MISTRAL) rc = calls_from_args_run(p, d, s, n);
        if (rc < 0) return false;
        if (rc == 0) {
            if (p->state == ST_MISTRAL && !emit_content(p, d, MISTRAL_OPEN, strlen(MISTRAL_OPEN))) return false;
            if (p->state == ST_CUSTOM && !emit_content(p, d, p->tag, strlen(p->tag))) return false;
            if (!emit_content(p, d, s, n)) return false;
        }
        held_drop(p, n);
        p->state = ST_TEXT;
        return true;
    }
}

static bool harmony_run(reply_parser *p, const char *text, size_t len, bool at_end, reply_delta *d) {
    int before = d->n_calls;
    bool ok = harmony_parser_feed(p->h, text, len, at_end, d);
    p->n_calls += d->n_calls - before;
    return ok && !d->content.oom && !d->thinking.oom;
}

static bool gemma4_run(reply_parser *p, const char *text, size_t len, bool at_end, reply_delta *d) {
    int before = d->n_calls;
    bool ok = gemma4_parser_feed(p->g4, text, len, at_end, d);
    p->n_calls += d->n_calls - before;
    return ok;
}

bool reply_parser_feed(reply_parser *p, const char *text, size_t len, reply_delta *d) {
    if (p->h) return harmony_run(p, text, len, false, d);
    if (p->g4) return gemma4_run(p, text, len, false, d);
    if (len && !bytebuf_add(&p->held, text, len)) return false;
    return run(p, d, false);
}

bool reply_parser_finish(reply_parser *p, reply_delta *d) {
    if (p->h) return harmony_run(p, "", 0, true, d);
    if (p->g4) return gemma4_run(p, "", 0, true, d);
    return run(p, d, true) && !d->content.oom && !d->thinking.oom;
}
