/* test_repack_cache: the CPU backend's repack cache (cpu/repack_cache.h, cpu/repack_load.c,
 * engine/base/weight_cache.h) on the synthetic Q4_K and Q8_0 models: the file is written at
 * the first load and mapped at the second, with logits bit-identical to a load without the
 * cache; a file of another layout version, ISA or layout fingerprint, a corrupt slice, a
 * damaged table or a truncated file is refused (with its reason) and rewritten; a changed
 * model file gets a new key; four processes loading at once leave one sound file and no
 * temporary; the folder's size bound deletes the least recently used file and refuses a
 * file larger than the bound; a store blob is keyed by its digest and `anvil rm`
 * (store_remove) and prune delete its cache; ANVIL_CPU_REPACK=0, ANVIL_REPACK_CACHE=0 and a model
 * below ANVIL_REPACK_CACHE_MIN_MB write nothing; a malformed setting is a one-line error. Skipped (passes) on a CPU without
 * AVX-512 VNNI, which has no packed kernels. */
#include "cpu_backend.h"
#include "digest.h"
#include "error.h"
#include "model.h"
#include "model_place.h"
#include "quant.h"
#include "repack.h"
#include "repack_cache.h"
#include "store.h"
#include "testutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define N_TOK 5
static char tmp[512], cache_dir[600];
static const char *model_q4k, *model_q8;
static int n_vocab;

static char *path_in(const char *dir, const char *name) {
    static char buf[4][1200];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* Loads path on the CPU and returns the logits of N_TOK tokens (malloc'd) and the load's info. */
static float *run(const char *path, cpu_repack_info *info) {
    memset(info, 0, sizeof *info);
    model *m = model_load_with(path, 2, NULL, 0);
    if (!m) { fprintf(stderr, "%s: %s\n", path, anv_last_error()); return NULL; }
    cpu_backend_repack_info(m->cpu, info);
    n_vocab = m->hp.n_vocab;
    float *logits = malloc((size_t)N_TOK * (size_t)n_vocab * sizeof(float));
    model_ctx *c = model_ctx_new(m, 32, QT_F32);
    const int32_t toks[N_TOK] = {1, 7, 3, 11, 5};
    if (!c || model_eval(c, toks, N_TOK, logits, true) != 0) { free(logits); logits = NULL; }
    model_ctx_free(c);
    model_free(m);
    return logits;
}

static bool same(const float *a, const float *b) {
    return a && b && memcmp(a, b, (size_t)N_TOK * (size_t)n_vocab * sizeof(float)) == 0;
}

/* Files of dir ending in suffix (and their total size). */
static int count_files(const char *dir, const char *suffix, long long *bytes) {
    DIR *d = opendir(dir);
    int n = 0;
    if (bytes) *bytes = 0;
    if (!d) return 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        const size_t l = strlen(de->d_name), k = strlen(suffix);
        if (l < k || strcmp(de->d_name + l - k, suffix) != 0) continue;
        n++;
        struct stat st;
        if (bytes && stat(path_in(dir, de->d_name), &st) == 0) *bytes += st.st_size;
    }
    closedir(d);
    return n;
}

static void set_mtime(const char *path, time_t t) {
    struct timespec ts[2] = {{.tv_sec = t}, {.tv_sec = t}};
    CHECK(utimensat(AT_FDCWD, path, ts, 0) == 0);
}

static bool exists(const char *p) { struct stat st; return stat(p, &st) == 0; }

static int copy_file(const char *from, const char *to) {
    size_t n = 0;
    char *data = tu_read_file(from, &n);
    FILE *f = data ? fopen(to, "wb") : NULL;
    int rc = f && fwrite(data, 1, n, f) == n ? 0 : -1;
    if (f && fclose(f) != 0) rc = -1;
    free(data);
    return rc;
}

/* Rewrites the header of a cache file through edit, with its checksum made right again, so
 * only the check of that field can refuse it. */
static void forge_header(const char *path, void (*edit)(rpc_header *)) {
    FILE *f = fopen(path, "r+b");
    rpc_header h;
    CHECK(f && fread(&h, sizeof h, 1, f) == 1);
    if (!f) return;
    edit(&h);
    h.header_sum = rpc_checksum(&h, offsetof(rpc_header, header_sum));
    CHECK(fseek(f, 0, SEEK_SET) == 0 && fwrite(&h, sizeof h, 1, f) == 1);
    fclose(f);
}
static void old_version(rpc_header *h) { h->layout_version = REPACK_LAYOUT_VERSION + 1; }
static void other_isa(rpc_header *h) { memset(h->isa, 0, sizeof h->isa); strcpy(h->isa, "avx2"); }
static void other_layout(rpc_header *h) { h->layout_print ^= 1; }

/* Moves the first weight entry to another file offset with sound checksums: a cache that
 * does not hold every weight of this load (as after a run with other layers on a GPU). */
static void forge_entry(const char *path) {
    size_t n = 0;
    uint8_t *b = (uint8_t *)tu_read_file(path, &n);
    CHECK(b && n > sizeof(rpc_header));
    if (!b) return;
    rpc_header h;
    memcpy(&h, b, sizeof h);
    rpc_entry e;
    memcpy(&e, b + h.entries_off, sizeof e);
    e.src_off += 1;
    memcpy(b + h.entries_off, &e, sizeof e);
    h.meta_sum = rpc_checksum(b + h.entries_off, (size_t)(h.sums_off + 8 * h.n_slices - h.entries_off));
    h.header_sum = rpc_checksum(&h, offsetof(rpc_header, header_sum));
    memcpy(b, &h, sizeof h);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(b, 1, n, f) == n);
    if (f) fclose(f);
    free(b);
}

static void flip_byte(const char *path, long from_end) {
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL);
    if (!f) return;
    fseek(f, -from_end, SEEK_END);
    int c = fgetc(f);
    fseek(f, -from_end, SEEK_END);
    fputc(c ^ 0x40, f);
    fclose(f);
}

/* A load after the file was damaged: refused for `why`, rewritten, same logits; then a hit. */
static void expect_rebuilt(const char *model_path, const float *want, const char *why) {
    cpu_repack_info info;
    float *got = run(model_path, &info);
    CHECKF(info.rebuilt && info.cache == CPU_REPACK_CACHE_WRITTEN && strstr(info.reason, why), "want '%s', reason '%s'", why, info.reason);
    CHECK(same(got, want));
    free(got);
    got = run(model_path, &info);
    CHECK(info.cache == CPU_REPACK_CACHE_HIT && !info.rebuilt && same(got, want));
    free(got);
}

static void test_write_hit_invalidate(const char *model_path, const char *dir) {
    setenv("ANVIL_REPACK_CACHE_DIR", dir, 1);
    cpu_repack_info info;
    setenv("ANVIL_REPACK_CACHE", "0", 1);
    float *base = run(model_path, &info);
    CHECK(base && info.cache == CPU_REPACK_CACHE_NONE && info.n_weights > 0 && !info.path[0]);
    CHECK(count_files(dir, ".rpk", NULL) == 0);
    unsetenv("ANVIL_REPACK_CACHE");

    float *first = run(model_path, &info);
    CHECKF(info.cache == CPU_REPACK_CACHE_WRITTEN && exists(info.path), "%s", info.reason);
    CHECK(same(first, base));
    char file[sizeof info.path];
    snprintf(file, sizeof file, "%s", info.path);
    CHECK(strncmp(file, dir, strlen(dir)) == 0 && strstr(file, ".avx512.v") && strstr(file, "/file-"));
    float *second = run(model_path, &info);
    CHECK(info.cache == CPU_REPACK_CACHE_HIT && !info.rebuilt && !strcmp(info.path, file) && info.packed_bytes > 0);
    CHECK(same(second, base));
    free(first);
    free(second);

    forge_header(file, old_version);
    expect_rebuilt(model_path, base, "layout version");
    forge_header(file, other_isa);
    expect_rebuilt(model_path, base, "made for avx2 kernels");
    forge_header(file, other_layout);
    expect_rebuilt(model_path, base, "other repack layouts");
    forge_entry(file);
    expect_rebuilt(model_path, base, "does not hold this load's weights");
    flip_byte(file, 100);          /* inside the last weight's packed copy */
    expect_rebuilt(model_path, base, "fail their checksum");
    flip_byte(file, 4);            /* maybe padding of the last slice: still in a slice */
    expect_rebuilt(model_path, base, "fail their checksum");
    {   /* a damaged entry table (the first entry, right after the header) */
        FILE *f = fopen(file, "r+b");
        if (f) { fseek(f, (long)sizeof(rpc_header) + 3, SEEK_SET); fputc(0x7f, f); fclose(f); }
        expect_rebuilt(model_path, base, "table checksum");
    }
    {   /* truncated by a crash of something else, or a full disk */
        struct stat st;
        CHECK(stat(file, &st) == 0 && truncate(file, st.st_size - 4096) == 0);
        expect_rebuilt(model_path, base, "truncated");
        CHECK(truncate(file, 100) == 0);
        expect_rebuilt(model_path, base, "truncated");
    }
    CHECK(count_files(dir, ".rpk", NULL) == 1 && count_files(dir, ".tmp", NULL) == 0);
    free(base);
    setenv("ANVIL_REPACK_CACHE_DIR", cache_dir, 1);
}

/* A changed model file (new content, new mtime) is a new key: a new file, not the old one. */
static void test_changed_model(void) {
    const char *copy = path_in(tmp, "changed.gguf");
    CHECK(copy_file(model_q4k, copy) == 0);
    cpu_repack_info info;
    float *a = run(copy, &info);
    char first[sizeof info.path];
    snprintf(first, sizeof first, "%s", info.path);
    CHECK(info.cache == CPU_REPACK_CACHE_WRITTEN);
    free(run(copy, &info));
    CHECK(info.cache == CPU_REPACK_CACHE_HIT);
    /* same size, one byte of the last weight changed, a later mtime */
    flip_byte(copy, 64);
    set_mtime(copy, time(NULL) + 5);
    float *b = run(copy, &info);
    CHECK(info.cache == CPU_REPACK_CACHE_WRITTEN && strcmp(info.path, first) != 0 && !info.rebuilt);
    setenv("ANVIL_REPACK_CACHE", "0", 1);
    float *b_plain = run(copy, &info);
    unsetenv("ANVIL_REPACK_CACHE");
    CHECK(same(b, b_plain) && !same(a, b)); /* the new file's weights, not the cached old ones */
    free(a); free(b); free(b_plain);
}

/* Four processes load the same model into an empty cache at once. */
static void test_concurrent(void) {
    setenv("ANVIL_REPACK_CACHE_DIR", path_in(tmp, "race"), 1);
    cpu_repack_info info;
    setenv("ANVIL_REPACK_CACHE", "0", 1);
    float *want = run(model_q8, &info);
    unsetenv("ANVIL_REPACK_CACHE");
    int go[2];
    CHECK(pipe(go) == 0);
    pid_t kids[4];
    for (int i = 0; i < 4; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            char c;
            close(go[1]);
            if (read(go[0], &c, 1) < 0) _exit(3);
            anv_log_enabled = 0;
            cpu_repack_info ki;
            float *got = run(model_q8, &ki);
            _exit(same(got, want) && (ki.cache == CPU_REPACK_CACHE_WRITTEN || ki.cache == CPU_REPACK_CACHE_HIT) ? 0 : 1);
        }
    }
    close(go[0]);
    close(go[1]); /* every child's read returns now */
    for (int i = 0; i < 4; i++) {
        int st = -1;
        CHECK(kids[i] > 0 && waitpid(kids[i], &st, 0) == kids[i] && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    CHECK(count_files(path_in(tmp, "race"), ".rpk", NULL) == 1 && count_files(path_in(tmp, "race"), ".tmp", NULL) == 0);
    float *got = run(model_q8, &info);
    CHECK(info.cache == CPU_REPACK_CACHE_HIT && same(got, want));
    free(got);
    free(want);
    setenv("ANVIL_REPACK_CACHE_DIR", cache_dir, 1);
}

/* The bound: room for two files of three copies of the Q4_K model (three keys, one size);
 * writing the third deletes the least recently used (mtime; a hit touches its file). */
static void test_size_bound(void) {
    const char *dir = path_in(tmp, "bound");
    setenv("ANVIL_REPACK_CACHE_DIR", dir, 1);
    char m[3][700], f[3][sizeof(((cpu_repack_info *)0)->path)];
    cpu_repack_info info;
    for (int i = 0; i < 3; i++) {
        snprintf(m[i], sizeof m[i], "%s/bound%d.gguf", tmp, i);
        CHECK(copy_file(model_q4k, m[i]) == 0);
    }
    for (int i = 0; i < 2; i++) {
        free(run(m[i], &info));
        CHECK(info.cache == CPU_REPACK_CACHE_WRITTEN);
        snprintf(f[i], sizeof f[i], "%s", info.path);
    }
    struct stat st;
    CHECK(stat(f[0], &st) == 0);
    char gb[64];
    snprintf(gb, sizeof gb, "%.9f", (double)(2 * st.st_size + 100) / 1e9);
    setenv("ANVIL_REPACK_CACHE_MAX_GB", gb, 1);
    set_mtime(f[0], time(NULL) - 300);
    set_mtime(f[1], time(NULL) - 100);
    free(run(m[2], &info));     /* evicts f[0], the older */
    snprintf(f[2], sizeof f[2], "%s", info.path);
    CHECK(info.cache == CPU_REPACK_CACHE_WRITTEN && !exists(f[0]) && exists(f[1]) && exists(f[2]));
    set_mtime(f[1], time(NULL) - 300);
    set_mtime(f[2], time(NULL) - 200);
    free(run(m[1], &info));     /* a hit: f[1] is now the most recently used */
    CHECK(info.cache == CPU_REPACK_CACHE_HIT);
    free(run(m[0], &info));     /* evicts f[2] */
    CHECK(info.cache == CPU_REPACK_CACHE_WRITTEN && exists(f[0]) && exists(f[1]) && !exists(f[2]));
    CHECK(count_files(dir, ".rpk", NULL) == 2);
    /* a bound below one file: nothing written, the reason said */
    setenv("ANVIL_REPACK_CACHE_MAX_GB", "0.000001", 1);
    free(run(m[2], &info));
    CHECK(info.cache == CPU_REPACK_CACHE_NONE && strstr(info.reason, "ANVIL_REPACK_CACHE_MAX_GB") && !exists(f[2]));
    unsetenv("ANVIL_REPACK_CACHE_MAX_GB");
    setenv("ANVIL_REPACK_CACHE_DIR", cache_dir, 1);
}

/* A store blob: keyed by its digest; store_remove (anvil rm) deletes its cache. */
static void test_store_rm(void) {
    const char *root = path_in(tmp, "store");
    store *s = store_open_at(root, NULL);
    CHECK(s != NULL);
    if (!s) return;
    char d[DIGEST_STR_LEN + 1], cd[DIGEST_STR_LEN + 1];
    uint64_t size = 0;
    CHECK(store_import_file(s, model_q8, d, &size) == 0);
    char *blob = store_blob_path(s, d);
    store_layer cfg, layer = {STORE_MT_MODEL, d, size};
    CHECK(store_make_config(s, blob, &cfg, cd) == 0);
    CHECK(store_write_manifest(s, "cached:v1", &cfg, &layer, 1) == 0);
    store_entry e;
    CHECK(store_lookup(s, "cached:v1", &e) == 0 && !strcmp(e.model_path, blob));
    store_entry_clear(&e);
    cpu_repack_info info;
    free(run(blob, &info));
    char want[256];
    snprintf(want, sizeof want, "/sha256-%s.avx512.v%d.rpk", d + 7, REPACK_LAYOUT_VERSION);
    CHECKF(info.cache == CPU_REPACK_CACHE_WRITTEN && strstr(info.path, want) && exists(info.path), "%s", info.path);
    free(run(blob, &info));
    CHECK(info.cache == CPU_REPACK_CACHE_HIT);
    CHECK(store_remove(s, "cached:v1") == 0);
    CHECK(!exists(blob) && !exists(info.path));
    free(blob);
    /* prune: an unreferenced blob past the grace period goes with its cache file */
    CHECK(store_import_file(s, model_q4k, d, &size) == 0);
    blob = store_blob_path(s, d);
    free(run(blob, &info));
    CHECK(info.cache == CPU_REPACK_CACHE_WRITTEN && exists(info.path));
    set_mtime(blob, time(NULL) - 2 * STORE_GRACE_SECONDS);
    CHECK(store_prune(s) >= 1);
    CHECK(!exists(blob) && !exists(info.path));
    free(blob);
    store_close(s);
}

static void test_settings(void) {
    cpu_repack_info info;
    const char *dir = path_in(tmp, "off");
    setenv("ANVIL_REPACK_CACHE_DIR", dir, 1);
    setenv("ANVIL_CPU_REPACK", "0", 1);
    free(run(model_q4k, &info));
    CHECK(info.n_weights == 0 && info.cache == CPU_REPACK_CACHE_NONE && count_files(dir, ".rpk", NULL) == 0);
    unsetenv("ANVIL_CPU_REPACK");
    setenv("ANVIL_REPACK_CACHE", "0", 1);
    free(run(model_q4k, &info));
    CHECK(info.n_weights > 0 && info.cache == CPU_REPACK_CACHE_NONE && count_files(dir, ".rpk", NULL) == 0);
    setenv("ANVIL_REPACK_CACHE", "yes", 1);
    CHECK(cpu_backend_new(1) == NULL && strstr(anv_last_error(), "ANVIL_REPACK_CACHE=yes"));
    unsetenv("ANVIL_REPACK_CACHE");
    setenv("ANVIL_REPACK_CACHE_MAX_GB", "lots", 1);
    CHECK(cpu_backend_new(1) == NULL && strstr(anv_last_error(), "ANVIL_REPACK_CACHE_MAX_GB=lots"));
    unsetenv("ANVIL_REPACK_CACHE_MAX_GB");
    setenv("ANVIL_REPACK_CACHE_MIN_MB", "-1", 1);
    CHECK(cpu_backend_new(1) == NULL && strstr(anv_last_error(), "ANVIL_REPACK_CACHE_MIN_MB=-1"));
    /* below the minimum: repacked, no file */
    setenv("ANVIL_REPACK_CACHE_MIN_MB", "1000", 1);
    free(run(model_q4k, &info));
    CHECK(info.n_weights > 0 && info.cache == CPU_REPACK_CACHE_NONE && !info.path[0] && count_files(dir, ".rpk", NULL) == 0);
    setenv("ANVIL_REPACK_CACHE_MIN_MB", "0", 1);
    setenv("ANVIL_REPACK_CACHE_DIR", cache_dir, 1);
}

int main(void) {
    const char *simd = cpu_backend_simd();
    if (!simd || strcmp(simd, "avx512") != 0) {
        printf("skipped: no AVX-512 VNNI kernels here (%s), so nothing is repacked\n", simd ? simd : "?");
        return tu_finish();
    }
    const char *models = getenv("ANVIL_TEST_MODELS");
    if (!models) { fprintf(stderr, "ANVIL_TEST_MODELS is not set\n"); return 1; }
    static char q4k[1024], q8[1024];
    snprintf(q4k, sizeof q4k, "%s/llama-tinyk-q4_K.gguf", models);
    snprintf(q8, sizeof q8, "%s/llama-tiny-q8_0.gguf", models);
    model_q4k = q4k;
    model_q8 = q8;
    snprintf(tmp, sizeof tmp, "%s/anvil-rpc-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmp)) { perror("mkdtemp"); return 1; }
    snprintf(cache_dir, sizeof cache_dir, "%s/cache", tmp);
    setenv("ANVIL_REPACK_CACHE_DIR", cache_dir, 1);
    unsetenv("ANVIL_REPACK_CACHE");
    unsetenv("ANVIL_REPACK_CACHE_MAX_GB");
    setenv("ANVIL_REPACK_CACHE_MIN_MB", "0", 1); /* the test models are far below the default */
    unsetenv("ANVIL_CPU_REPACK");
    unsetenv("ANVIL_CPU_SIMD");
    anv_log_enabled = 0;

    test_write_hit_invalidate(model_q4k, path_in(tmp, "q4k"));
    test_write_hit_invalidate(model_q8, path_in(tmp, "q8"));
    test_changed_model();
    test_concurrent();
    test_size_bound();
    test_store_rm();
    test_settings();
    tu_tmpdir_done(tmp);
    return tu_finish();
}
