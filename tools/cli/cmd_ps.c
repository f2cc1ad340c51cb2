/* cmd_ps: `anvil ps` (the models a running server has loaded, like `ollama ps`; -v adds the
 * server's own "anvil" fields: replica, backend, GPU layers, KV type, slots, requests) and
 * `anvil stop MODEL` (unload it now), as clients of the server (client.h). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "client.h"
#include "error.h"

/* Ollama's format.HumanBytes: decimal units, "291 MB", "1.2 GB". */
static void human_bytes(double b, char *buf, size_t cap) {
    static const char *units[] = {"TB", "GB", "MB", "KB"};
    static const double scale[] = {1e12, 1e9, 1e6, 1e3};
    for (int i = 0; i < 4; i++) {
        if (b < scale[i]) continue;
        double v = b / scale[i];
        if (v >= 10 || v == trunc(v)) snprintf(buf, cap, "%d %s", (int)v, units[i]);
        else snprintf(buf, cap, "%.1f %s", v, units[i]);
        return;
    }
    snprintf(buf, cap, "%.0f B", b);
}

/* Ollama's PROCESSOR column. */
static void processor(double size, double vram, char *buf, size_t cap) {
    if (vram == 0) snprintf(buf, cap, "100%% CPU");
    else if (vram == size) snprintf(buf, cap, "100%% GPU");
    else if (vram > size || size == 0) snprintf(buf, cap, "Unknown");
    else {
        int cpu = (int)round((size - vram) / size * 100);
        snprintf(buf, cap, "%d%%/%d%% CPU/GPU", cpu, 100 - cpu);
    }
}

/* Ollama's humanDuration. */
static void human_duration(double seconds, char *buf, size_t cap) {
    long s = (long)seconds;
    long minutes = s / 60;
    long hours = lround(seconds / 3600);
    if (s < 1) snprintf(buf, cap, "Less than a second");
    else if (s == 1) snprintf(buf, cap, "1 second");
    else if (s < 60) snprintf(buf, cap, "%ld seconds", s);
    else if (minutes == 1) snprintf(buf, cap, "About a minute");
    else if (minutes < 60) snprintf(buf, cap, "%ld minutes", minutes);
    else if (hours == 1) snprintf(buf, cap, "About an hour");
    else if (hours < 48) snprintf(buf, cap, "%ld hours", hours);
    else if (hours < 24 * 7 * 2) snprintf(buf, cap, "%ld days", hours / 24);
    else if (hours < 24 * 30 * 2) snprintf(buf, cap, "%ld weeks", hours / 24 / 7);
    else if (hours < 24 * 365 * 2) snprintf(buf, cap, "%ld months", hours / 24 / 30);
    else snprintf(buf, cap, "%ld years", (long)(seconds / 3600 / 24 / 365));
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian). */
static int64_t days_from_civil(int64_t y, int m, int d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* An RFC 3339 time as Unix seconds; false if it does not parse. */
static bool parse_rfc3339(const char *s, double *out) {
    int y, mo, d, h, mi, n = 0;
    double sec;
    if (!s || sscanf(s, "%d-%d-%dT%d:%d:%lf%n", &y, &mo, &d, &h, &mi, &sec, &n) < 6) return false;
    const char *z = s + n;
    double off = 0;
    if (*z == '+' || *z == '-') {
        int oh, om;
        if (sscanf(z + 1, "%d:%d", &oh, &om) != 2) return false;
        off = (oh * 3600 + om * 60) * (*z == '-' ? -1 : 1);
    } else if (*z != 'Z' && *z != 'z') {
        return false;
    }
    *out = (double)days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - off;
    return true;
}

/* Ollama's UNTIL column: "Stopping...", "4 minutes from now", "Forever", "Never". */
static void until(const char *expires_at, char *buf, size_t cap) {
    double t;
    if (!expires_at || !parse_rfc3339(expires_at, &t) || t <= -62135596800.0 + 1) {   /* Go's zero time */
        snprintf(buf, cap, "Never");
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double now = (double)ts.tv_sec + ts.tv_nsec * 1e-9;
    if (t < now) { snprintf(buf, cap, "Stopping..."); return; }
    if (t - now > 20 * 365.0 * 86400) { snprintf(buf, cap, "Forever"); return; }
    char d[64];
    human_duration(t - now, d, sizeof d);
    snprintf(buf, cap, "%s from now", d);
}

/* Prints rows of cells (n_cols of them) as columns separated by spaces, like Ollama's tables. */
#define PS_COLS 12
static void print_table(char (*cells)[PS_COLS][128], int n_rows, int n_cols) {
    size_t width[PS_COLS] = {0};
    for (int r = 0; r < n_rows; r++)
        for (int c = 0; c < n_cols; c++)
            if (strlen(cells[r][c]) > width[c]) width[c] = strlen(cells[r][c]);
    for (int r = 0; r < n_rows; r++) {
        for (int c = 0; c < n_cols; c++) {
            if (c == n_cols - 1) printf("%s", cells[r][c]);
            else printf("%-*s    ", (int)width[c], cells[r][c]);
        }
        printf("\n");
    }
}

/* -v: the server's own fields of a ps entry ("anvil": replica, backend, layers on the GPU,
 * KV cache type, slots, requests running and waiting), "-" where the server has none. */
static void verbose_cells(const cJSON *m, char (*row)[128]) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(m, "anvil");
    const char *rep = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "replica"));
    const char *be = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "backend"));
    const char *kv = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "kv_cache_type"));
    const cJSON *gl = cJSON_GetObjectItemCaseSensitive(a, "gpu_layers"), *nl = cJSON_GetObjectItemCaseSensitive(a, "layers");
    const cJSON *par = cJSON_GetObjectItemCaseSensitive(a, "parallel");
    const cJSON *fl = cJSON_GetObjectItemCaseSensitive(a, "requests_in_flight");
    const cJSON *qu = cJSON_GetObjectItemCaseSensitive(a, "requests_queued");
    snprintf(row[0], 128, "%s", rep ? rep : "-");
    snprintf(row[1], 128, "%s", be ? be : "-");
    if (cJSON_IsNumber(gl) && cJSON_IsNumber(nl)) snprintf(row[2], 128, "%d/%d", (int)gl->valuedouble, (int)nl->valuedouble);
    else snprintf(row[2], 128, "-");
    snprintf(row[3], 128, "%s", kv ? kv : "-");
    if (cJSON_IsNumber(par)) snprintf(row[4], 128, "%d", (int)par->valuedouble); else snprintf(row[4], 128, "-");
    if (cJSON_IsNumber(fl) && cJSON_IsNumber(qu)) snprintf(row[5], 128, "%d/%d", (int)fl->valuedouble, (int)qu->valuedouble);
    else snprintf(row[5], 128, "-");
}

int cmd_ps(int argc, char **argv) {
    bool verbose = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            puts("usage: anvil ps [-v]\n\nThe models a running anvil server ($ANVIL_HOST, default 127.0.0.1:11434) has loaded:\n"
                 "NAME, ID, SIZE, PROCESSOR (CPU/GPU split), CONTEXT (per slot) and UNTIL (when it unloads).\n"
                 "-v, --verbose adds the server's replica, BACKEND, GPU LAYERS (on the GPU/all), KV cache type,\n"
                 "SLOTS (parallel) and RUNNING/QUEUED requests.");
            return 0;
        }
        if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) { verbose = true; continue; }
        anv_die("ps: unexpected argument '%s' (try 'anvil ps --help')", argv[i]);
    }
    char *reply = NULL;
    int status = client_request("GET", "/api/ps", NULL, &reply);
    if (status < 0) anv_die("%s", anv_last_error());
    if (status != 200) {
        char *msg = client_error_message(status, reply);
        fprintf(stderr, "anvil: %s\n", msg ? msg : "server error");
        free(msg);
        free(reply);
        return 1;
    }
    cJSON *j = cJSON_Parse(reply);
    free(reply);
    const cJSON *models = cJSON_GetObjectItemCaseSensitive(j, "models");
    if (!cJSON_IsArray(models)) { cJSON_Delete(j); anv_die("the server's /api/ps reply has no models list"); }
    int n = cJSON_GetArraySize(models);
    char (*cells)[PS_COLS][128] = calloc((size_t)n + 1, sizeof *cells);
    if (!cells) { cJSON_Delete(j); anv_die("out of memory"); }
    const char *head[PS_COLS] = {"NAME", "ID", "SIZE", "PROCESSOR", "CONTEXT", "UNTIL",
                                 "REPLICA", "BACKEND", "GPU LAYERS", "KV", "SLOTS", "RUNNING/QUEUED"};
    const int n_cols = verbose ? 12 : 6;
    for (int c = 0; c < n_cols; c++) snprintf(cells[0][c], 128, "%s", head[c]);
    int row = 1;
    const cJSON *m;
    cJSON_ArrayForEach(m, models) {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "name"));
        const char *digest = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "digest"));
        const cJSON *size = cJSON_GetObjectItemCaseSensitive(m, "size");
        const cJSON *vram = cJSON_GetObjectItemCaseSensitive(m, "size_vram");
        const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(m, "context_length");
        double sz = cJSON_IsNumber(size) ? size->valuedouble : 0, vr = cJSON_IsNumber(vram) ? vram->valuedouble : 0;
        snprintf(cells[row][0], 128, "%s", name ? name : "?");
        if (digest && !strncmp(digest, "sha256:", 7)) digest += 7;
        snprintf(cells[row][1], 128, "%.12s", digest ? digest : "");
        human_bytes(sz, cells[row][2], 128);
        processor(sz, vr, cells[row][3], 128);
        snprintf(cells[row][4], 128, "%d", cJSON_IsNumber(ctx) ? (int)ctx->valuedouble : 0);
        until(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "expires_at")), cells[row][5], 128);
        if (verbose) verbose_cells(m, &cells[row][6]);
        row++;
    }
    print_table(cells, row, n_cols);
    free(cells);
    cJSON_Delete(j);
    return 0;
}

int cmd_stop(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        puts("usage: anvil stop MODEL\n\nUnloads MODEL from the running anvil server now (after its running requests).");
        return argc < 2 ? 2 : 0;
    }
    if (argc > 2) anv_die("stop: unexpected argument '%s' (one model at a time)", argv[2]);
    const char *name = argv[1];
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "model", name);
    cJSON_AddNumberToObject(req, "keep_alive", 0);
    cJSON_AddFalseToObject(req, "stream");
    char *body = cJSON_PrintUnformatted(req);
    cJSON_Delete(req);
    if (!body) anv_die("out of memory");
    char *reply = NULL;
    int status = client_request("POST", "/api/generate", body, &reply);
    free(body);
    if (status < 0) anv_die("%s", anv_last_error());
    if (status != 200) {
        char *msg = client_error_message(status, reply);
        if (status == 404 || (msg && strstr(msg, "not found")))
            fprintf(stderr, "anvil: couldn't find model \"%s\" to stop (%s)\n", name, msg ? msg : "not found");
        else fprintf(stderr, "anvil: %s\n", msg ? msg : "server error");
        free(msg);
        free(reply);
        return 1;
    }
    free(reply);
    return 0;
}
