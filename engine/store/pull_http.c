/* pull_http: the HTTP half of `store_pull`: libcurl settings shared by every request, a
 * GET with retries for manifests, and the parallel Range-part blob download with resume.
 *
 * A blob of S bytes is split into parts of clamp(S / max_parts, min_part, max_part) bytes.
 * Each part is one easy handle in a curl multi handle asking for "Range: bytes=a-b" from
 * its first missing byte; received bytes go to "<blob>-partial" with pwrite at their
 * offsets. A part's state ({"n","offset","size","completed"}) is written (temporary file +
 * rename) to "<blob>-partial-N" every 250 ms while it runs and whenever it stops, so a
 * later pull fetches only the missing bytes. A failed attempt is retried after
 * base * 2^(try-1) ms; an attempt that received bytes resets the count. */
#include "pull_http.h"

#include <curl/curl.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bytebuf.h"
#include "clock.h"
#include "error.h"
#include "settings.h"

#define PULL_MAX_STATE_PARTS 4096
#define PULL_SAVE_EVERY_MS 250
#define PULL_PROGRESS_EVERY_MS 100
#define PULL_BACKOFF_CAP_MS 30000


static void sleep_ms(int64_t ms) {
    if (ms <= 0) return;
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* A transfer error worth another try: a timeout or a connection that broke or answered
 * nothing. A refused connection, an unknown host, a TLS failure or a bad URL fail at once, as
 * with Ollama (a minute of "pulling manifest" before a refused port's error reads as a hang). */
static bool transient(CURLcode rc) {
    return rc == CURLE_OPERATION_TIMEDOUT || rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR ||
           rc == CURLE_PARTIAL_FILE || rc == CURLE_GOT_NOTHING || rc == CURLE_HTTP2 || rc == CURLE_HTTP2_STREAM;
}

static int64_t backoff_ms(const pull_http_cfg *cfg, int tries) {
    int64_t ms = cfg->retry_base_ms;
    for (int i = 1; i < tries && ms < PULL_BACKOFF_CAP_MS; i++) ms *= 2;
    return ms < PULL_BACKOFF_CAP_MS ? ms : PULL_BACKOFF_CAP_MS;
}

/* A positive integer from the environment, or def when unset or malformed (logged). */
static uint64_t env_u64(const char *name, uint64_t def, uint64_t lo, uint64_t hi) {
    uint64_t x = def;
    if (anv_setting_u64(name, lo, hi, &x) < 0) anv_log("ignoring %s", anv_last_error());
    return x;
}

void pull_http_cfg_init(pull_http_cfg *cfg, const pull_opts *o) {
    memset(cfg, 0, sizeof *cfg);
    const char *insecure = anv_setting_raw("ANVIL_REGISTRY_INSECURE");
    cfg->insecure = o->insecure || (insecure && !strcmp(insecure, "1"));
    cfg->max_parts = o->max_parts < 1 ? 1 : o->max_parts > 64 ? 64 : o->max_parts;
    cfg->max_retries = o->max_retries < 0 ? 0 : o->max_retries > 100 ? 100 : o->max_retries;
    cfg->min_part = env_u64("ANVIL_PULL_PART_SIZE", 100ull * 1000 * 1000, 1, UINT64_MAX / 2);
    cfg->max_part = 1000ull * 1000 * 1000;
    if (cfg->max_part < cfg->min_part) cfg->max_part = cfg->min_part;
    cfg->retry_base_ms = (int)env_u64("ANVIL_PULL_RETRY_BASE_MS", 1000, 1, PULL_BACKOFF_CAP_MS);
    cfg->stall_s = (int)env_u64("ANVIL_PULL_STALL_S", 30, 1, 3600);
    cfg->progress = o->progress;
    cfg->user = o->user;
}

/* Settings every request shares: redirects (http/https only), timeouts, TLS. */
static void setup_handle(CURL *h, const pull_http_cfg *cfg, const char *url, char *errbuf) {
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "anvil/0.1");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, (long)cfg->stall_s);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    if (cfg->insecure) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    errbuf[0] = 0;
}

static const char *curl_why(CURLcode rc, const char *errbuf) {
    return errbuf && errbuf[0] ? errbuf : curl_easy_strerror(rc);
}

/* ---- GET into memory ---------------------------------------------------------------- */

typedef struct {
    bytebuf buf;
    size_t max;
    bool too_big;
} membuf;

static size_t membuf_write(char *p, size_t sz, size_t n, void *u) {
    membuf *b = u;
    size_t len = sz * n;
    if (b->buf.len + len > b->max) { b->too_big = true; return 0; }
    return bytebuf_add(&b->buf, p, len) ? len : 0;
}

long pull_http_get(const pull_http_cfg *cfg, const char *url, const char *accept, size_t max_len,
                   char **body, size_t *len) {
    *body = NULL;
    *len = 0;
    int64_t waited_ms = 0;
    for (int tries = 0;; tries++) {
        CURL *h = curl_easy_init();
        if (!h) { anv_set_error("cannot initialize libcurl"); return -1; }
        char errbuf[CURL_ERROR_SIZE];
        membuf b = {.max = max_len};
        struct curl_slist *hdrs = NULL;
        if (accept) {
            char line[256];
            snprintf(line, sizeof line, "Accept: %s", accept);
            hdrs = curl_slist_append(hdrs, line);
        }
        setup_handle(h, cfg, url, errbuf);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, membuf_write);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
        curl_easy_setopt(h, CURLOPT_TIMEOUT, 300L);
        CURLcode rc = curl_easy_perform(h);
        long code = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        bool retry;
        if (rc == CURLE_OK) {
            if (code >= 200 && code < 300) {
                curl_slist_free_all(hdrs);
                curl_easy_cleanup(h);
                if (!b.buf.data && !bytebuf_add(&b.buf, "", 0)) { anv_set_error("out of memory"); return -1; }
                *body = b.buf.data;
                *len = b.buf.len;
                return code;
            }
            retry = code >= 500 || code == 429 || code == 408;
        } else {
            retry = !b.too_big && transient(rc);
        }
        if (b.too_big) anv_set_error("answer from %s is larger than %zu bytes", url, max_len);
        else if (rc != CURLE_OK) anv_set_error("connection failed: %s", curl_why(rc, errbuf));
        bytebuf_free(&b.buf);
        curl_slist_free_all(hdrs);
        curl_easy_cleanup(h);
        if (retry && tries < cfg->max_retries) {
            const int64_t wait = backoff_ms(cfg, tries + 1);
            waited_ms += wait;
            sleep_ms(wait);
            continue;
        }
        if (rc != CURLE_OK && tries > 0) {   /* say how long it tried */
            char why[400];
            snprintf(why, sizeof why, "%s", anv_last_error());
            anv_set_error("%s (gave up after %d retries over %.0f s)", why, tries, (double)waited_ms / 1000);
        }
        return rc == CURLE_OK ? code : -1;
    }
}

/* ---- blob download ------------------------------------------------------------------ */

typedef struct blob_dl blob_dl;

typedef struct {
    blob_dl *blob;
    int n;
    uint64_t offset, size, completed;
    uint64_t saved;             /* completed as last written to the state file */
    int64_t last_save_ms;
    int tries;                  /* failed attempts since the last one that made progress */
    int64_t next_try_ms;
    bool done;
    /* the running attempt */
    CURL *h;
    uint64_t body_pos;          /* blob offset of the next body byte; UINT64_MAX before the first */
    int64_t range_start;        /* from Content-Range, -1 if none */
    uint64_t got;               /* bytes written by this attempt */
    bool end_reached;
    int io_errno;
    char fail[160];
    char errbuf[CURL_ERROR_SIZE];
} part;

struct blob_dl {
    const pull_http_cfg *cfg;
    const char *url, *partial, *digest;
    uint64_t size;
    int fd;
    part *parts;
    int n_parts;
};

static void state_path(const blob_dl *b, int n, char *out, size_t cap) {
    snprintf(out, cap, "%s-%d", b->partial, n);
}

static void save_part(part *p) {
    char path[PATH_MAX], tmp[PATH_MAX + 8], buf[192];
    state_path(p->blob, p->n, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int len = snprintf(buf, sizeof buf, "{\"n\":%d,\"offset\":%llu,\"size\":%llu,\"completed\":%llu}\n",
                       p->n, (unsigned long long)p->offset, (unsigned long long)p->size,
                       (unsigned long long)p->completed);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;  /* state is an optimization: a lost one only means re-fetching */
    bool ok = write(fd, buf, (size_t)len) == len;
    ok = close(fd) == 0 && ok;
    if (ok && rename(tmp, path) == 0) {
        p->saved = p->completed;
        p->last_save_ms = (anv_mono_ns() / 1000000);
    } else {
        unlink(tmp);
    }
}

static bool json_u64(const cJSON *o, const char *key, uint64_t *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 9007199254740992.0) return false;
    *out = (uint64_t)v->valuedouble;
    return (double)*out == v->valuedouble;
}

/* Reads "<partial>-0", "-1", ... into b->parts; false unless they describe a contiguous
 * split of the whole blob. */
static bool load_parts(blob_dl *b) {
    uint64_t covered = 0;
    for (int n = 0; n < PULL_MAX_STATE_PARTS && covered < b->size; n++) {
        char path[PATH_MAX], buf[512];
        state_path(b, n, path, sizeof path);
        FILE *f = fopen(path, "rb");
        if (!f) return false;
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[len] = 0;
        cJSON *o = cJSON_Parse(buf);
        uint64_t idx, offset, size, completed;
        bool ok = o && json_u64(o, "n", &idx) && json_u64(o, "offset", &offset) &&
                  json_u64(o, "size", &size) && json_u64(o, "completed", &completed) &&
                  idx == (uint64_t)n && offset == covered && size > 0 && size <= b->size - covered &&
                  completed <= size;
        cJSON_Delete(o);
        if (!ok) return false;
        part *np = realloc(b->parts, (size_t)(n + 1) * sizeof *np);
        if (!np) return false;
        b->parts = np;
        memset(&b->parts[n], 0, sizeof b->parts[n]);
        b->parts[n].n = n;
        b->parts[n].offset = offset;
        b->parts[n].size = size;
        b->parts[n].completed = b->parts[n].saved = completed;
        b->n_parts = n + 1;
        covered += size;
    }
    return covered == b->size;
}

static bool plan_parts(blob_dl *b) {
    const pull_http_cfg *cfg = b->cfg;
    if (b->size == 0) return true;  /* an empty blob has no parts */
    uint64_t psize = (b->size + (uint64_t)cfg->max_parts - 1) / (uint64_t)cfg->max_parts;
    if (psize < cfg->min_part) psize = cfg->min_part;
    if (psize > cfg->max_part) psize = cfg->max_part;
    uint64_t n = (b->size + psize - 1) / psize;
    if (n > PULL_MAX_STATE_PARTS) {
        psize = (b->size + PULL_MAX_STATE_PARTS - 1) / PULL_MAX_STATE_PARTS;
        n = (b->size + psize - 1) / psize;
    }
    b->parts = calloc((size_t)n, sizeof *b->parts);
    if (!b->parts) return false;
    b->n_parts = (int)n;
    for (uint64_t i = 0; i < n; i++) {
        part *p = &b->parts[i];
        p->n = (int)i;
        p->offset = i * psize;
        p->size = i + 1 < n ? psize : b->size - i * psize;
    }
    return true;
}

void pull_http_discard_state(const char *partial_path) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", partial_path);
    char *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : partial_path;
    if (slash) *slash = 0; else snprintf(dir, sizeof dir, ".");
    size_t blen = strlen(base);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *s = e->d_name;
        if (strncmp(s, base, blen) || s[blen] != '-') continue;
        const char *q = s + blen + 1;
        if (*q < '0' || *q > '9') continue;
        while (*q >= '0' && *q <= '9') q++;
        if (*q && strcmp(q, ".tmp")) continue;
        char path[PATH_MAX + 256];
        snprintf(path, sizeof path, "%s/%s", dir, s);
        unlink(path);
    }
    closedir(d);
}

static size_t on_header(char *buf, size_t sz, size_t n, void *u) {
    part *p = u;
    size_t len = sz * n;
    char line[128];
    size_t l = len < sizeof line - 1 ? len : sizeof line - 1;
    memcpy(line, buf, l);
    line[l] = 0;
    if (!strncmp(line, "HTTP/", 5)) {
        p->range_start = -1;  /* a new response (after a redirect) */
    } else if (!strncasecmp(line, "Content-Range:", 14)) {
        const char *q = line + 14;
        while (*q == ' ' || *q == '\t') q++;
        if (!strncasecmp(q, "bytes", 5)) {
            q += 5;
            while (*q == ' ') q++;
            char *end;
            errno = 0;
            unsigned long long s = strtoull(q, &end, 10);
            if (!errno && end != q && *end == '-' && s <= INT64_MAX) p->range_start = (int64_t)s;
        }
    }
    return len;
}

static size_t on_body(char *data, size_t sz, size_t n, void *u) {
    part *p = u;
    blob_dl *b = p->blob;
    size_t len = sz * n;
    if (p->body_pos == UINT64_MAX) {
        long code = 0;
        curl_easy_getinfo(p->h, CURLINFO_RESPONSE_CODE, &code);
        if (code == 206 && p->range_start >= 0) p->body_pos = (uint64_t)p->range_start;
        else if (code == 200) p->body_pos = 0;  /* no Range support: skip to our bytes */
        else {
            snprintf(p->fail, sizeof p->fail, "HTTP %ld%s", code, code == 206 ? " without Content-Range" : "");
            return 0;
        }
    }
    uint64_t cur = p->offset + p->completed, end = p->offset + p->size;
    uint64_t bs = p->body_pos, be = bs + len;
    p->body_pos = be;
    if (bs > cur) {
        snprintf(p->fail, sizeof p->fail, "server sent bytes from %llu, asked from %llu",
                 (unsigned long long)bs, (unsigned long long)cur);
        return 0;
    }
    if (be > cur && cur < end) {
        uint64_t we = be < end ? be : end;
        const char *src = data + (cur - bs);
        size_t todo = (size_t)(we - cur);
        off_t at = (off_t)cur;
        while (todo) {
            ssize_t w = pwrite(b->fd, src, todo, at);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) { p->io_errno = w < 0 ? errno : EIO; return 0; }
            src += w;
            at += w;
            todo -= (size_t)w;
            p->completed += (uint64_t)w;
            p->got += (uint64_t)w;
        }
    }
    if (p->offset + p->completed >= end) {
        p->end_reached = true;
        if (be > end) return 0;  /* the rest belongs to other parts */
    }
    return len;
}

static bool start_part(blob_dl *b, CURLM *m, part *p) {
    p->h = curl_easy_init();
    if (!p->h) return false;
    char range[64];
    snprintf(range, sizeof range, "%llu-%llu", (unsigned long long)(p->offset + p->completed),
             (unsigned long long)(p->offset + p->size - 1));
    setup_handle(p->h, b->cfg, b->url, p->errbuf);
    curl_easy_setopt(p->h, CURLOPT_RANGE, range);
    curl_easy_setopt(p->h, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(p->h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(p->h, CURLOPT_HEADERDATA, p);
    curl_easy_setopt(p->h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(p->h, CURLOPT_WRITEDATA, p);
    curl_easy_setopt(p->h, CURLOPT_PRIVATE, p);
    p->body_pos = UINT64_MAX;
    p->range_start = -1;
    p->got = 0;
    p->end_reached = false;
    p->io_errno = 0;
    p->fail[0] = 0;
    if (curl_multi_add_handle(m, p->h) != CURLM_OK) {
        curl_easy_cleanup(p->h);
        p->h = NULL;
        return false;
    }
    return true;
}

static void stop_part(CURLM *m, part *p) {
    if (!p->h) return;
    curl_multi_remove_handle(m, p->h);
    curl_easy_cleanup(p->h);
    p->h = NULL;
}

/* A finished attempt: done, scheduled for a retry, or a fatal error (-1, message set). */
static int finish_part(blob_dl *b, part *p, CURLcode rc) {
    long code = 0;
    curl_easy_getinfo(p->h, CURLINFO_RESPONSE_CODE, &code);
    char hex12[13];
    snprintf(hex12, sizeof hex12, "%s", b->digest + 7);
    if (p->io_errno) {
        anv_set_error("writing %s: %s", b->partial, strerror(p->io_errno));
        return -1;
    }
    if (p->end_reached || (rc == CURLE_OK && p->completed == p->size)) {
        p->done = true;
        save_part(p);
        return 0;
    }
    char why[CURL_ERROR_SIZE + 64];
    bool fatal = false;
    if (rc == CURLE_HTTP_RETURNED_ERROR) {
        snprintf(why, sizeof why, "HTTP %ld", code);
        fatal = code >= 400 && code < 500 && code != 408 && code != 429;
    } else if (p->fail[0]) {
        snprintf(why, sizeof why, "%s", p->fail);
    } else if (rc == CURLE_OK) {
        snprintf(why, sizeof why, "the server sent %llu of %llu bytes", (unsigned long long)p->got,
                 (unsigned long long)(p->got + p->size - p->completed));
    } else if (rc == CURLE_OPERATION_TIMEDOUT) {
        snprintf(why, sizeof why, "stalled for %d s", b->cfg->stall_s);
        anv_log("pulling %s: part %d stalled; retrying", hex12, p->n);
    } else {
        snprintf(why, sizeof why, "%s", curl_why(rc, p->errbuf));
        fatal = rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_UNSUPPORTED_PROTOCOL ||
                rc == CURLE_URL_MALFORMAT || rc == CURLE_TOO_MANY_REDIRECTS;
    }
    if (p->got > 0) p->tries = 0;
    p->tries++;
    save_part(p);
    if (fatal || p->tries > b->cfg->max_retries) {
        if (fatal) anv_set_error("layer %s: %s", b->digest, why);
        else anv_set_error("layer %s: part %d failed after %d retries: %s", b->digest, p->n,
                           b->cfg->max_retries, why);
        return -1;
    }
    p->next_try_ms = (anv_mono_ns() / 1000000) + backoff_ms(b->cfg, p->tries);
    return 0;
}

static bool report(blob_dl *b, const char *status) {
    if (!b->cfg->progress) return true;
    uint64_t done = 0;
    for (int i = 0; i < b->n_parts; i++) done += b->parts[i].completed;
    pull_progress pr = {.status = status, .digest = b->digest, .total = b->size, .completed = done};
    return b->cfg->progress(&pr, b->cfg->user);
}

static int run_parts(blob_dl *b) {
    CURLM *m = curl_multi_init();
    if (!m) { anv_set_error("cannot initialize libcurl"); return PULL_BLOB_FAILED; }
    char status[32];
    snprintf(status, sizeof status, "pulling %.12s", b->digest + 7);
    int result = PULL_BLOB_OK;
    if (!report(b, status)) { result = PULL_BLOB_CANCELLED; goto out; }
    int64_t last_report = (anv_mono_ns() / 1000000);
    for (;;) {
        int64_t now = (anv_mono_ns() / 1000000), wake = INT64_MAX;
        int pending = 0, active = 0;
        for (int i = 0; i < b->n_parts; i++) active += b->parts[i].h != NULL;
        for (int i = 0; i < b->n_parts; i++) {
            part *p = &b->parts[i];
            if (p->done) continue;
            if (p->completed == p->size && !p->h) { p->done = true; continue; }
            pending++;
            if (p->h) continue;
            if (active < b->cfg->max_parts && now >= p->next_try_ms) {
                if (!start_part(b, m, p)) {
                    anv_set_error("cannot start a libcurl transfer");
                    result = PULL_BLOB_FAILED;
                    goto out;
                }
                active++;
            } else if (p->next_try_ms < wake) {
                wake = p->next_try_ms;
            }
        }
        if (!pending) break;
        int running = 0;
        CURLMcode mc = curl_multi_perform(m, &running);
        if (mc != CURLM_OK) {
            anv_set_error("libcurl: %s", curl_multi_strerror(mc));
            result = PULL_BLOB_FAILED;
            goto out;
        }
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(m, &left))) {
            if (msg->msg != CURLMSG_DONE) continue;
            char *priv = NULL;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
            part *p = (part *)priv;
            int rc = finish_part(b, p, msg->data.result);
            stop_part(m, p);
            if (rc) { result = PULL_BLOB_FAILED; goto out; }
        }
        now = (anv_mono_ns() / 1000000);
        for (int i = 0; i < b->n_parts; i++) {
            part *p = &b->parts[i];
            if (p->h && p->completed != p->saved && now - p->last_save_ms >= PULL_SAVE_EVERY_MS) save_part(p);
        }
        if (now - last_report >= PULL_PROGRESS_EVERY_MS) {
            last_report = now;
            if (!report(b, status)) { result = PULL_BLOB_CANCELLED; goto out; }
        }
        int64_t timeout = 100;
        if (wake != INT64_MAX && wake - now < timeout) timeout = wake - now > 0 ? wake - now : 0;
        curl_multi_poll(m, NULL, 0, (int)timeout, NULL);
    }
    if (!report(b, status)) result = PULL_BLOB_CANCELLED;
out:
    for (int i = 0; i < b->n_parts; i++) {
        part *p = &b->parts[i];
        if (p->h) {
            stop_part(m, p);
            save_part(p);
        }
    }
    curl_multi_cleanup(m);
    if (result == PULL_BLOB_CANCELLED) anv_set_error("pull cancelled");
    return result;
}

int pull_http_blob(const pull_http_cfg *cfg, const char *url, const char *partial_path,
                   const char *digest, uint64_t size) {
    blob_dl b = {.cfg = cfg, .url = url, .partial = partial_path, .digest = digest, .size = size, .fd = -1};
    struct stat st;
    bool had_partial = stat(partial_path, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == size;
    b.fd = open(partial_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (b.fd < 0) {
        anv_set_error("cannot create %s: %s", partial_path, strerror(errno));
        return PULL_BLOB_FAILED;
    }
    if (flock(b.fd, LOCK_EX | LOCK_NB) != 0) {
        anv_set_error("layer %s is being pulled by another process", digest);
        close(b.fd);
        return PULL_BLOB_FAILED;
    }
    int result = PULL_BLOB_FAILED;
    if (!had_partial || !load_parts(&b)) {
        free(b.parts);
        b.parts = NULL;
        b.n_parts = 0;
        pull_http_discard_state(partial_path);
        if (ftruncate(b.fd, 0) != 0 || ftruncate(b.fd, (off_t)size) != 0) {
            anv_set_error("cannot size %s: %s", partial_path, strerror(errno));
            goto out;
        }
        if (!plan_parts(&b)) { anv_set_error("out of memory"); goto out; }
        for (int i = 0; i < b.n_parts; i++) {
            b.parts[i].blob = &b;
            save_part(&b.parts[i]);
        }
    }
    for (int i = 0; i < b.n_parts; i++) b.parts[i].blob = &b;
    result = run_parts(&b);
    if (result == PULL_BLOB_OK && fsync(b.fd) != 0) {
        anv_set_error("writing %s: %s", partial_path, strerror(errno));
        result = PULL_BLOB_FAILED;
    }
out:
    free(b.parts);
    close(b.fd);
    return result;
}
