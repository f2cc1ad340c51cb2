/* test_pull: store_pull through the library API against tests/pylib/registry_server.py serving a
 * store built here (a 1.5 MB random layer + config): Ollama's status order, a pull
 * cancelled from the progress callback keeps its partial and the next pull fetches only
 * what was missing, max_parts = 1 asks for one range, a second pull skips present blobs
 * (but downloads again one corrupted in place),
 * a bad name fails before any request. Needs python3 (the registry). */
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "error.h"
#include "pull.h"
#include "store.h"
#include "testutil.h"

#define BIG_SIZE (1536 * 1024)

static pid_t server_pid;
static int server_port;

static int start_server(const char *store_dir) {
    int fds[2];
    if (pipe(fds)) return -1;
    server_pid = fork();
    if (server_pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        execlp("python3", "python3", "pylib/registry_server.py", "--store", store_dir, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    if (!f || fscanf(f, "%d", &server_port) != 1) server_port = 0;
    if (f) fclose(f);
    return server_port > 0 ? 0 : -1;
}

static size_t collect(char *p, size_t sz, size_t n, void *u) {
    size_t len = sz * n, *at = u, cur = at[0];
    char *buf = (char *)(at + 2);
    if (cur + len >= at[1]) return 0;
    memcpy(buf + cur, p, len);
    buf[cur + len] = 0;
    at[0] = cur + len;
    return len;
}

/* GET (body NULL) or POST to the registry; returns the parsed JSON answer. */
static cJSON *registry_call(const char *path, const char *body) {
    enum { CAP = 1 << 20 };
    size_t *mem = calloc(1, 2 * sizeof(size_t) + CAP);
    mem[1] = CAP;
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", server_port, path);
    CURL *h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, mem);
    if (body) curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    CURLcode rc = curl_easy_perform(h);
    curl_easy_cleanup(h);
    cJSON *j = rc == CURLE_OK ? cJSON_Parse((char *)(mem + 2)) : NULL;
    free(mem);
    return j;
}

static double stat_num(const char *digest, const char *what) {
    cJSON *st = registry_call("/_stats", NULL);
    const cJSON *b = cJSON_GetObjectItem(cJSON_GetObjectItem(st, "blobs"), digest);
    const cJSON *v = cJSON_GetObjectItem(b, what);
    double x = cJSON_IsNumber(v) ? v->valuedouble : cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 0;
    cJSON_Delete(st);
    return x;
}

static int n_requests(void) {
    cJSON *st = registry_call("/_stats", NULL);
    int n = cJSON_GetArraySize(cJSON_GetObjectItem(st, "requests"));
    cJSON_Delete(st);
    return n;
}

typedef struct {
    char statuses[16][40];
    int n;
    const char *cancel_digest;
    uint64_t cancel_at, completed_at_cancel;
    bool cancelled;
} recorder;

static bool record(const pull_progress *p, void *user) {
    recorder *r = user;
    if (r->n < 16 && (r->n == 0 || strcmp(r->statuses[r->n - 1], p->status)))
        snprintf(r->statuses[r->n++], sizeof r->statuses[0], "%s", p->status);
    if (r->cancel_digest && p->digest && !strcmp(p->digest, r->cancel_digest) && p->completed >= r->cancel_at) {
        r->cancelled = true;
        r->completed_at_cancel = p->completed;
        return false;
    }
    return true;
}

static bool file_equals(const char *path, const unsigned char *data, size_t n) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    unsigned char *buf = malloc(n + 1);
    size_t got = fread(buf, 1, n + 1, f);
    fclose(f);
    bool same = got == n && !memcmp(buf, data, n);
    free(buf);
    return same;
}

int main(void) {
    char tmp[] = "/tmp/anvil-test-pull-XXXXXX";
    if (!mkdtemp(tmp)) { perror("mkdtemp"); return 1; }
    char src_root[512], dst_root[512], cmd[600];
    snprintf(src_root, sizeof src_root, "%s/src", tmp);
    snprintf(dst_root, sizeof dst_root, "%s/dst", tmp);
    setenv("ANVIL_PULL_PART_SIZE", "131072", 1);
    setenv("ANVIL_PULL_RETRY_BASE_MS", "5", 1);
    unsetenv("ANVIL_HF_ENDPOINT");
    anv_log_enabled = 0;

    /* the source store the registry serves */
    store *src = store_open_at(src_root, NULL);
    unsigned char *big = malloc(BIG_SIZE);
    uint64_t seed = 7;
    for (size_t i = 0; i < BIG_SIZE; i += 8) {
        uint64_t r = tu_rand_u64(&seed);
        memcpy(big + i, &r, 8);
    }
    char big_digest[DIGEST_STR_LEN + 1], cfg_digest[DIGEST_STR_LEN + 1];
    const char *cfg = "{\"model_format\":\"gguf\",\"model_family\":\"test\"}";
    CHECK(store_put_bytes(src, big, BIG_SIZE, big_digest) == 0);
    CHECK(store_put_bytes(src, cfg, strlen(cfg), cfg_digest) == 0);
    store_layer config = {STORE_MT_CONFIG, cfg_digest, strlen(cfg)};
    store_layer layer = {STORE_MT_LICENSE, big_digest, BIG_SIZE};
    CHECK(store_write_manifest(src, "library/blob:latest", &config, &layer, 1) == 0);
    store_close(src);
    if (start_server(src_root)) {
        fprintf(stderr, "test_pull: cannot start pylib/registry_server.py\n");
        return 1;
    }
    char name[128];
    snprintf(name, sizeof name, "127.0.0.1:%d/library/blob:latest", server_port);
    store *dst = store_open_at(dst_root, NULL);

    /* 1: cancelled at 40% of the big layer (the registry is throttled so it happens mid-way) */
    cJSON_Delete(registry_call("/_control", "{\"rate\": 100000}"));
    recorder r1 = {.cancel_digest = big_digest, .cancel_at = BIG_SIZE * 4 / 10};
    pull_opts o;
    pull_opts_default(&o);
    CHECK(o.max_parts == 16 && o.max_retries == 6 && !o.insecure);
    o.insecure = true;
    o.progress = record;
    o.user = &r1;
    CHECK(store_pull(dst, name, &o) == -1);
    CHECKF(strstr(anv_last_error(), "cancelled") != NULL, "%s", anv_last_error());
    CHECK(r1.cancelled);
    CHECK(!store_has_blob(dst, big_digest));
    double served1 = stat_num(big_digest, "bytes");
    CHECKF(served1 >= (double)r1.completed_at_cancel && served1 < BIG_SIZE, "served %.0f", served1);

    /* 2: the next pull resumes: it fetches at most what the cancelled one had not */
    cJSON_Delete(registry_call("/_control", "{\"clear\": true, \"reset_stats\": true}"));
    recorder r2 = {0};
    o.user = &r2;
    CHECKF(store_pull(dst, name, &o) == 0, "%s", anv_last_error());
    double served2 = stat_num(big_digest, "bytes");
    CHECKF(served2 <= (double)(BIG_SIZE - r1.completed_at_cancel), "resume served %.0f, %llu were missing",
           served2, (unsigned long long)(BIG_SIZE - r1.completed_at_cancel));
    printf("cancelled at %llu of %d bytes; served %.0f then %.0f (%.3fx)\n",
           (unsigned long long)r1.completed_at_cancel, BIG_SIZE, served1, served2, (served1 + served2) / BIG_SIZE);
    char *path = store_find_blob(dst, big_digest);
    CHECK(path && file_equals(path, big, BIG_SIZE));
    free(path);
    /* Ollama's statuses, in order: manifest, each layer, verify, write, success */
    char want_cfg[40], want_big[40];
    snprintf(want_cfg, sizeof want_cfg, "pulling %.12s", cfg_digest + 7);
    snprintf(want_big, sizeof want_big, "pulling %.12s", big_digest + 7);
    const char *want[] = {"pulling manifest", want_cfg, want_big, "verifying sha256 digest", "writing manifest", "success"};
    CHECKF(r2.n == 6, "%d statuses", r2.n);
    for (int i = 0; i < 6 && i < r2.n; i++) CHECKF(!strcmp(r2.statuses[i], want[i]), "%s != %s", r2.statuses[i], want[i]);

    /* 3: everything present: no blob is fetched */
    cJSON_Delete(registry_call("/_control", "{\"reset_stats\": true}"));
    CHECK(store_pull(dst, name, &o) == 0);
    CHECK(stat_num(big_digest, "bytes") == 0);

    /* 3b: a present blob corrupted in place (one byte, same size) is re-hashed, found bad and
     * downloaded again, not trusted because its file name says its digest */
    path = store_find_blob(dst, big_digest);
    FILE *fp = path ? fopen(path, "r+b") : NULL;
    CHECK(fp != NULL);
    if (fp) {
        fseek(fp, BIG_SIZE / 2, SEEK_SET);
        fputc(big[BIG_SIZE / 2] ^ 0x20, fp);
        fclose(fp);
    }
    CHECK(path && !file_equals(path, big, BIG_SIZE));
    cJSON_Delete(registry_call("/_control", "{\"reset_stats\": true}"));
    CHECKF(store_pull(dst, name, &o) == 0, "%s", anv_last_error());
    CHECKF(stat_num(big_digest, "bytes") == BIG_SIZE, "re-download served %.0f", stat_num(big_digest, "bytes"));
    CHECK(path && file_equals(path, big, BIG_SIZE));
    free(path);

    /* 4: max_parts = 1 and default options (NULL, with ANVIL_REGISTRY_INSECURE): one range */
    store_close(dst);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dst_root);
    CHECK(system(cmd) == 0);
    dst = store_open_at(dst_root, NULL);
    cJSON_Delete(registry_call("/_control", "{\"reset_stats\": true}"));
    o.max_parts = 1;
    o.progress = NULL;
    CHECK(store_pull(dst, name, &o) == 0);
    CHECKF(stat_num(big_digest, "ranges") == 1, "%.0f requests", stat_num(big_digest, "ranges"));
    setenv("ANVIL_REGISTRY_INSECURE", "1", 1);
    CHECK(store_pull(dst, name, NULL) == 0);
    unsetenv("ANVIL_REGISTRY_INSECURE");

    /* 5: a bad name never reaches the registry */
    cJSON_Delete(registry_call("/_control", "{\"reset_stats\": true}"));
    char bad[160];
    snprintf(bad, sizeof bad, "127.0.0.1:%d/library/../../etc", server_port);
    CHECK(store_pull(dst, bad, &o) == -1);
    CHECK(strchr(anv_last_error(), '\n') == NULL && anv_last_error()[0]);
    CHECK(n_requests() == 0);

    store_close(dst);
    free(big);
    kill(server_pid, SIGTERM);
    waitpid(server_pid, NULL, 0);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0) fprintf(stderr, "test_pull: could not remove %s\n", tmp);
    return tu_finish();
}
