/* cmd_pull: `anvil pull NAME [--insecure]`: downloads a model into the store (store_pull)
 * and shows its progress: a live bar per layer on a terminal
 * ("pulling 3f1c2a7b9d0e:  45% ▕███████      ▏ 112 MB/253 MB  28 MB/s  5s"), plain lines
 * otherwise (one per status change and about every 10% of a layer). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "client.h"
#include "clock.h"
#include "error.h"
#include "pull.h"
#include "store.h"

#define BAR_CELLS 25

typedef struct {
    bool tty;
    bool bar_open;          /* a bar line is on screen without its newline */
    char status[64];        /* the last status shown */
    char digest[DIGEST_STR_LEN + 1];
    uint64_t first_completed; /* bytes already present when the layer started (resumed) */
    double t_start;
    int last_decile;        /* plain mode: the last 10% step printed */
} pull_view;

static void human_duration(double s, char *buf, size_t cap) {
    long t = (long)(s + 0.5);
    if (t < 60) snprintf(buf, cap, "%lds", t);
    else if (t < 3600) snprintf(buf, cap, "%ldm%02lds", t / 60, t % 60);
    else snprintf(buf, cap, "%ldh%02ldm", t / 3600, (t % 3600) / 60);
}

static void end_bar(pull_view *v) {
    if (v->bar_open) fputc('\n', stdout);
    v->bar_open = false;
}

static void draw_layer(pull_view *v, const pull_progress *p) {
    int pct = p->total ? (int)(p->completed * 100 / p->total) : 100;
    char done[32], total[32];
    cli_human_bytes(p->completed, done, sizeof done);
    cli_human_bytes(p->total, total, sizeof total);
    if (!v->tty) {
        int decile = pct / 10;
        if (decile == v->last_decile) return;
        v->last_decile = decile;
        printf("%s: %d%% (%s/%s)\n", p->status, pct, done, total);
        fflush(stdout);
        return;
    }
    char bar[BAR_CELLS * 3 + 1];
    size_t at = 0;
    int full = p->total ? (int)(p->completed * BAR_CELLS / p->total) : BAR_CELLS;
    for (int i = 0; i < BAR_CELLS; i++) {
        if (i < full) { memcpy(bar + at, "\xe2\x96\x88", 3); at += 3; }  /* U+2588 full block */
        else bar[at++] = ' ';
    }
    bar[at] = 0;
    double dt = anv_mono_s() - v->t_start;
    uint64_t fetched = p->completed - v->first_completed;
    char rate[48] = "", eta[32] = "";
    if (dt > 0.5 && fetched > 0) {
        double bps = fetched / dt;
        cli_human_bytes((uint64_t)bps, rate, sizeof rate);
        strcat(rate, "/s");
        if (p->completed < p->total) human_duration((p->total - p->completed) / bps, eta, sizeof eta);
    }
    printf("\r%s: %3d%% \xe2\x96\x95%s\xe2\x96\x8f %s/%s  %s  %s\033[K", p->status, pct, bar, done, total, rate, eta);
    fflush(stdout);
    v->bar_open = true;
}

static bool on_progress(const pull_progress *p, void *user) {
    pull_view *v = user;
    if (p->digest) {
        if (strcmp(v->digest, p->digest)) {
            end_bar(v);
            snprintf(v->digest, sizeof v->digest, "%s", p->digest);
            v->first_completed = p->completed;
            v->t_start = anv_mono_s();
            v->last_decile = -1;
        }
        snprintf(v->status, sizeof v->status, "%s", p->status);
        draw_layer(v, p);
        return true;
    }
    if (!strcmp(v->status, p->status)) return true;
    end_bar(v);
    snprintf(v->status, sizeof v->status, "%s", p->status);
    v->digest[0] = 0;
    puts(p->status);
    fflush(stdout);
    return true;
}

/* One progress line of a server's /api/pull stream, drawn as a local pull's. */
static bool on_remote_line(const cJSON *o, void *user) {
    const cJSON *total = cJSON_GetObjectItemCaseSensitive(o, "total"), *done = cJSON_GetObjectItemCaseSensitive(o, "completed");
    pull_progress p = {
        .status = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "status")),
        .digest = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "digest")),
        .total = cJSON_IsNumber(total) ? (uint64_t)total->valuedouble : 0,
        .completed = cJSON_IsNumber(done) ? (uint64_t)done->valuedouble : 0,
    };
    if (!p.status) return true;
    return on_progress(&p, user);
}

/* The pull done by the server of ANVIL_HOST / OLLAMA_HOST into its store. */
static int remote_pull(const char *name, bool insecure, pull_view *view) {
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "model", name);
    if (insecure) cJSON_AddTrueToObject(b, "insecure");
    cJSON_AddTrueToObject(b, "stream");
    char *body = cJSON_PrintUnformatted(b);
    cJSON_Delete(b);
    int status = client_stream_json("POST", "/api/pull", body, on_remote_line, view);
    free(body);
    end_bar(view);
    if (status < 0) anv_die("%s", anv_last_error());
    return 0;
}

int cmd_pull(int argc, char **argv) {
    const char *name = NULL;
    pull_opts o;
    pull_opts_default(&o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            puts("usage: anvil pull NAME [--insecure]\n\n"
                 "Downloads NAME ([host/][namespace/]model[:tag], e.g. gemma3:270m or\n"
                 "hf.co/user/repo:Q4_K_M) from its registry into the model store.\n"
                 "  --insecure   plain http:// and unverified TLS for the registry\n"
                 "Environment: ANVIL_MODELS (the store), ANVIL_REGISTRY_INSECURE=1,\n"
                 "ANVIL_HF_ENDPOINT (Hugging Face base URL).");
            return 0;
        }
        if (!strcmp(a, "--insecure")) o.insecure = true;
        else if (a[0] == '-' && a[1]) anv_die("pull: unknown option %s (try 'anvil pull --help')", a);
        else if (name) anv_die("pull: one model name expected, got '%s' and '%s'", name, a);
        else name = a;
    }
    if (!name) anv_die("pull: a model name is needed (anvil pull NAME)");
    if (client_store_remote()) {
        pull_view rv = {.tty = isatty(STDOUT_FILENO) == 1, .last_decile = -1};
        return remote_pull(name, o.insecure, &rv);
    }
    store *s = store_open();
    if (!s) anv_die("%s", anv_last_error());
    pull_view view = {.tty = isatty(STDOUT_FILENO) == 1, .last_decile = -1};
    o.progress = on_progress;
    o.user = &view;
    int rc = store_pull(s, name, &o);
    end_bar(&view);
    store_close(s);
    if (rc) anv_die("%s", anv_last_error());
    return 0;
}
