/* test_store: the model store (store.h) on temporary directories: name parsing and every
 * rejection, display names, blobs, manifests (atomic, parseable), lookup/list/copy/remove/
 * prune, the read-only Ollama root (listed, resolvable, never modified), damaged and
 * missing files, and the roots taken from the environment. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

#include "digest.h"
#include "error.h"
#include "gguf_write.h"
#include "quant.h"
#include "store.h"
#include "testutil.h"

static char tmp_root[256];

/* A path under the temporary root (one of 8 rotating buffers: strdup what is kept). */
static char *path_of(const char *rel) {
    static char buf[8][1024];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, 1024, "%s/%s", tmp_root, rel);
    return p;
}

static bool exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); exit(1); }
    fputs(text, f);
    fclose(f);
}

static void mkdirs(const char *dir) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    if (system(cmd) != 0) exit(1);
}

/* A tiny valid GGUF: llama architecture, Q4_K_M file type, two F32 tensors. */
static void make_gguf(const char *path, float fill) {
    static float data[2][64];
    for (int i = 0; i < 64; i++) data[0][i] = data[1][i] = fill + (float)i;
    gguf_writer *w = gguf_writer_new(path);
    gguf_writer_set_str(w, "general.architecture", "llama");
    gguf_writer_set_str(w, "general.name", "store-test");
    gguf_writer_set_u32(w, "general.file_type", 15);
    int64_t ne[2] = {32, 2};
    gguf_writer_add_tensor(w, "a.weight", QT_F32, 2, ne, data[0]);
    gguf_writer_add_tensor(w, "b.weight", QT_F32, 2, ne, data[1]);
    if (gguf_writer_finish(w) != 0) { fprintf(stderr, "%s\n", anv_last_error()); exit(1); }
}

/* ---- a snapshot of a tree: every file's path, size and mtime ---- */
static char snap_buf[1 << 16];
static size_t snap_len;
static int snap_one(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
    (void)ftw;
    snap_len += (size_t)snprintf(snap_buf + snap_len, sizeof snap_buf - snap_len, "%s %d %lld %lld\n", p, flag,
                                 (long long)st->st_size, (long long)st->st_mtime);
    return snap_len >= sizeof snap_buf - 1;
}
static char *snapshot(const char *dir) {
    snap_len = 0;
    snap_buf[0] = 0;
    nftw(dir, snap_one, 16, FTW_PHYS);
    return strdup(snap_buf);
}

static void test_names(void) {
    store_name n;
    char d[700];
    CHECK(store_name_parse("gemma3", &n) == 0);
    CHECK(!strcmp(n.host, "registry.ollama.ai") && !strcmp(n.ns, "library") && !strcmp(n.model, "gemma3") && !strcmp(n.tag, "latest"));
    store_name_display(&n, d, sizeof d);
    CHECK(!strcmp(d, "gemma3:latest"));
    CHECK(store_name_parse("gemma3:270m", &n) == 0 && !strcmp(n.tag, "270m"));
    store_name_display(&n, d, sizeof d);
    CHECK(!strcmp(d, "gemma3:270m"));
    CHECK(store_name_parse("user/model:tag", &n) == 0 && !strcmp(n.ns, "user") && !strcmp(n.model, "model"));
    store_name_display(&n, d, sizeof d);
    CHECK(!strcmp(d, "user/model:tag"));
    CHECK(store_name_parse("127.0.0.1:8080/ns/model:v1", &n) == 0);
    CHECK(!strcmp(n.host, "127.0.0.1:8080") && !strcmp(n.ns, "ns") && !strcmp(n.model, "model") && !strcmp(n.tag, "v1"));
    store_name_display(&n, d, sizeof d);
    CHECK(!strcmp(d, "127.0.0.1:8080/ns/model:v1"));
    CHECK(store_name_parse("localhost:5000/a/b", &n) == 0 && !strcmp(n.host, "localhost:5000") && !strcmp(n.tag, "latest"));
    CHECK(store_name_parse("registry.ollama.ai/library/qwen3:0.6b", &n) == 0);
    store_name_display(&n, d, sizeof d);
    CHECK(!strcmp(d, "qwen3:0.6b"));
    CHECK(store_name_parse("hf.co/user/Repo-GGUF:Q4_K_M", &n) == 0 && !strcmp(n.host, "hf.co") && !strcmp(n.model, "Repo-GGUF"));
    CHECK(store_name_parse("a_b-c.d:1.2-x_y", &n) == 0 && !strcmp(n.model, "a_b-c.d") && !strcmp(n.tag, "1.2-x_y"));
    char longest[81];
    memset(longest, 'm', 80);
    longest[80] = 0;
    CHECK(store_name_parse(longest, &n) == 0);

    char too_long[82];
    memset(too_long, 'm', 81);
    too_long[81] = 0;
    const char *bad[] = {
        "", "../x", "/etc/passwd", "a/../../b", "x:..", "a\\b", "a\nb", "a\x01" "b", "a\x7f", "a//b", "a:", ":b",
        "a/b/c/d", "a/b/c/d/e", ".hidden", "-x", "x:-y", "x:.y", "x y", "x@sha256", "..", ".", "x/.", "./x",
        "a:b:c", "ns:1/m", "a/", "/", "x/..", "ns/../m", "host/ns/..", "a\tb", too_long, "model/", "~/x", "x$", "\xc3\xa9",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        anv_set_error("-");
        int rc = store_name_parse(bad[i], &n);
        const char *err = anv_last_error();
        CHECKF(rc == -1, "'%s' accepted", bad[i]);
        CHECKF(strstr(err, "invalid model name") && !strchr(err, '\n'), "'%s': error '%s'", bad[i], err);
    }
    CHECK(store_name_parse(NULL, &n) == -1);
    CHECK(store_name_parse("/etc/passwd", &n) == -1 && strstr(anv_last_error(), "absolute"));
    CHECK(store_name_parse("a/b/c/d", &n) == -1 && strstr(anv_last_error(), "too many"));
    CHECK(store_name_parse("a\nb", &n) == -1 && strstr(anv_last_error(), "control"));
}

static const char *manifest_json_for(const char *digest, uint64_t size, char *buf, size_t cap) {
    snprintf(buf, cap,
             "{\"schemaVersion\":2,\"mediaType\":\"%s\",\"config\":{\"mediaType\":\"%s\",\"digest\":\"%s\",\"size\":%llu},"
             "\"layers\":[{\"mediaType\":\"%s\",\"digest\":\"%s\",\"size\":%llu}]}",
             STORE_MT_MANIFEST, STORE_MT_CONFIG, digest, (unsigned long long)size, STORE_MT_MODEL, digest,
             (unsigned long long)size);
    return buf;
}

/* A fake Ollama store with one model "olm" (default host/namespace) holding gguf. */
static void make_ollama_tree(const char *oroot, const char *gguf, char digest[DIGEST_STR_LEN + 1]) {
    uint64_t size;
    CHECK(digest_file(gguf, digest, &size) == 0);
    char dir[1024], path[1200], cmd[2600], json[1024];
    snprintf(dir, sizeof dir, "%s/blobs", oroot);
    mkdirs(dir);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s/sha256-%s'", gguf, dir, digest + 7);
    CHECK(system(cmd) == 0);
    snprintf(dir, sizeof dir, "%s/manifests/registry.ollama.ai/library/olm", oroot);
    mkdirs(dir);
    snprintf(path, sizeof path, "%s/latest", dir);
    write_text(path, manifest_json_for(digest, size, json, sizeof json));
    struct utimbuf old = {time(NULL) - 7200, time(NULL) - 7200};
    utime(path, &old);
}

static int count_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) n += e->d_name[0] != '.' || (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."));
    closedir(d);
    return n;
}

static void test_store_ops(void) {
    char *gguf = strdup(path_of("model.gguf"));
    make_gguf(gguf, 1.0f);
    char odigest[DIGEST_STR_LEN + 1];
    make_ollama_tree(path_of("ollama"), gguf, odigest);
    char *before = snapshot(path_of("ollama"));

    store *s = store_open_at(path_of("anvil"), path_of("ollama"));
    CHECK(s && !strcmp(store_root(s), path_of("anvil")) && !strcmp(store_ollama_root(s), path_of("ollama")));
    CHECK(!exists(path_of("anvil")));  /* nothing written until something is stored */

    /* blobs */
    CHECK(store_blob_path(s, "sha256:XYZ") == NULL && strstr(anv_last_error(), "invalid digest"));
    CHECK(store_blob_path(s, "sha256-0000") == NULL);
    char d1[DIGEST_STR_LEN + 1], want[DIGEST_STR_LEN + 1];
    uint64_t sz = 0, want_sz = 0;
    digest_file(gguf, want, &want_sz);
    CHECK(store_has_blob(s, want));  /* the Ollama root's copy counts */
    make_gguf(path_of("model2.gguf"), 2.0f);
    digest_file(path_of("model2.gguf"), want, &want_sz);
    CHECK(!store_has_blob(s, want));
    CHECK(store_import_file(s, path_of("model2.gguf"), d1, &sz) == 0);
    CHECK(!strcmp(d1, want) && sz == want_sz);
    char *bp = store_blob_path(s, d1);
    CHECK(bp && exists(bp) && strstr(bp, path_of("anvil/blobs/sha256-")));
    char *fb = store_find_blob(s, d1);
    CHECK(fb && !strcmp(fb, bp));
    free(fb);
    CHECK(store_import_file(s, path_of("model2.gguf"), d1, &sz) == 0 && !strcmp(d1, want));
    CHECK(count_dir(path_of("anvil/blobs")) == 1);  /* no temporary left, no second copy */
    CHECK(store_import_file(s, path_of("missing.gguf"), d1, &sz) == -1 && strstr(anv_last_error(), "missing.gguf"));

    char cfg_digest[DIGEST_STR_LEN + 1];
    store_layer cfg;
    CHECK(store_make_config(s, bp, &cfg, cfg_digest) == 0);
    char *cfg_path = store_blob_path(s, cfg_digest);
    FILE *f = fopen(cfg_path, "rb");
    char cbuf[1024] = {0};
    if (f) { if (fread(cbuf, 1, sizeof cbuf - 1, f)) {} fclose(f); }
    cJSON *cj = cJSON_Parse(cbuf);
    CHECK(cj && !strcmp(cJSON_GetObjectItem(cj, "model_format")->valuestring, "gguf"));
    CHECK(cj && !strcmp(cJSON_GetObjectItem(cj, "model_family")->valuestring, "llama"));
    CHECK(cj && !strcmp(cJSON_GetObjectItem(cj, "file_type")->valuestring, "Q4_K_M"));
    CHECK(cj && !strcmp(cJSON_GetObjectItem(cj, "model_type")->valuestring, "128"));
    CHECK(cfg.size == strlen(cbuf) && !strcmp(cfg.media_type, STORE_MT_CONFIG));
    cJSON_Delete(cj);
    free(cfg_path);

    const char *tmpl = "{{ .System }} {{ .Prompt }}";
    char td[DIGEST_STR_LEN + 1];
    CHECK(store_put_bytes(s, tmpl, strlen(tmpl), td) == 0 && store_has_blob(s, td));
    char direct[DIGEST_STR_LEN + 1];
    digest_bytes(tmpl, strlen(tmpl), direct);
    CHECK(!strcmp(td, direct));

    /* manifests */
    store_layer layers[2] = {{STORE_MT_MODEL, d1, sz}, {STORE_MT_TEMPLATE, td, strlen(tmpl)}};
    CHECK(store_write_manifest(s, "mine:v1", &cfg, layers, 2) == 0);
    char *mpath = strdup(path_of("anvil/manifests/registry.ollama.ai/library/mine/v1"));
    CHECK(exists(mpath));
    CHECK(count_dir(path_of("anvil/manifests/registry.ollama.ai/library/mine")) == 1);  /* temp renamed away */
    FILE *mf = fopen(mpath, "rb");
    char mbuf[4096] = {0};
    if (mf) { if (fread(mbuf, 1, sizeof mbuf - 1, mf)) {} fclose(mf); }
    cJSON *m = cJSON_Parse(mbuf);
    CHECK(m && cJSON_GetObjectItem(m, "schemaVersion")->valueint == 2);
    CHECK(m && !strcmp(cJSON_GetObjectItem(m, "mediaType")->valuestring, STORE_MT_MANIFEST));
    cJSON *ls = m ? cJSON_GetObjectItem(m, "layers") : NULL;
    CHECK(cJSON_GetArraySize(ls) == 2 && !strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(ls, 0), "mediaType")->valuestring, STORE_MT_MODEL));
    CHECK(m && !strcmp(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "config"), "digest")->valuestring, cfg_digest));
    cJSON_Delete(m);
    store_layer ghost = {STORE_MT_SYSTEM, "sha256:1111111111111111111111111111111111111111111111111111111111111111", 3};
    CHECK(store_write_manifest(s, "ghost", &cfg, &ghost, 1) == -1 && strstr(anv_last_error(), "1111111111"));
    CHECK(store_write_manifest(s, "../evil", &cfg, layers, 1) == -1 && strstr(anv_last_error(), "invalid model name"));
    CHECK(store_write_manifest_raw(s, "raw:1", "{nope", 5) == -1 && strstr(anv_last_error(), "manifest"));

    /* lookup */
    store_entry e;
    CHECK(store_lookup(s, "mine:v1", &e) == 0);
    CHECK(e.model_path && !strcmp(e.model_path, bp) && e.template_text && !strcmp(e.template_text, tmpl));
    CHECK(!e.read_only && !strcmp(e.name, "mine:v1") && e.model_digest && !strcmp(e.model_digest, d1));
    CHECK(e.size == sz + strlen(tmpl) + cfg.size && !e.system && !e.params_json);
    char mdig[DIGEST_STR_LEN + 1];
    digest_file(mpath, mdig, NULL);
    CHECK(!strcmp(e.manifest_digest, mdig));
    store_entry_clear(&e);
    /* a vision model: its projector layer's blob (engine/vision loads it) */
    char pd[DIGEST_STR_LEN + 1];
    CHECK(store_put_bytes(s, "mmproj", 6, pd) == 0);
    store_layer vlayers[2] = {{STORE_MT_MODEL, d1, sz}, {STORE_MT_PROJECTOR, pd, 6}};
    CHECK(store_write_manifest(s, "vis:v1", &cfg, vlayers, 2) == 0);
    CHECK(store_lookup(s, "vis:v1", &e) == 0);
    char *pblob = store_find_blob(s, pd);
    CHECK(pblob && e.projector_path && !strcmp(e.projector_path, pblob));
    free(pblob);
    store_entry_clear(&e);
    CHECK(store_lookup(s, "mine:v1", &e) == 0 && !e.projector_path);
    store_entry_clear(&e);
    CHECK(store_remove(s, "vis:v1") == 0);   /* the projector blob goes with it; the model blob stays (mine:v1) */
    CHECK(store_lookup(s, "olm", &e) == 0 && e.read_only && !strcmp(e.name, "olm:latest"));
    CHECK(e.model_path && strstr(e.model_path, path_of("ollama/blobs/")) && !strcmp(e.model_digest, odigest));
    store_entry_clear(&e);
    CHECK(store_lookup(s, "nothere", &e) == -1 && strstr(anv_last_error(), "'nothere' not found") &&
          strstr(anv_last_error(), "anvil pull nothere"));
    CHECK(store_lookup(s, "x:..", &e) == -1 && strstr(anv_last_error(), "invalid model name"));

    /* resolve: a path as is, a name through the store */
    CHECK(store_resolve(s, gguf, &e) == 0 && !strcmp(e.model_path, gguf) && !e.model_digest && !e.manifest_path);
    store_entry_clear(&e);
    CHECK(store_resolve(s, "mine:v1", &e) == 0 && e.template_text);
    store_entry_clear(&e);
    CHECK(store_resolve(s, path_of("nope.gguf"), &e) == -1 && strstr(anv_last_error(), "nope.gguf"));
    CHECK(store_resolve(s, "nope.gguf", &e) == -1 && strstr(anv_last_error(), "no such file"));
    CHECK(store_resolve(s, tmp_root, &e) == -1 && strstr(anv_last_error(), "directory"));

    /* list: both roots, newest first */
    store_entry *all = NULL;
    int n = 0;
    CHECK(store_list(s, &all, &n) == 0 && n == 2);
    CHECK(n == 2 && !strcmp(all[0].name, "mine:v1") && !all[0].read_only && !strcmp(all[1].name, "olm:latest") && all[1].read_only);
    CHECK(n == 2 && all[1].size > 0 && all[0].modified >= all[1].modified && strlen(all[0].manifest_digest) == DIGEST_STR_LEN);
    store_entries_free(all, n);

    /* copy: from either root; a name in both lists once, the writable one */
    CHECK(store_copy(s, "mine:v1", "user/copy:x") == 0);
    CHECK(store_lookup(s, "user/copy:x", &e) == 0 && !strcmp(e.manifest_digest, mdig) && !strcmp(e.name, "user/copy:x"));
    store_entry_clear(&e);
    CHECK(store_copy(s, "olm", "olm") == 0);
    CHECK(store_lookup(s, "olm", &e) == 0 && !e.read_only && strstr(e.model_path, path_of("ollama/blobs/")));
    store_entry_clear(&e);
    CHECK(store_list(s, &all, &n) == 0 && n == 3);
    int olm_seen = 0;
    for (int i = 0; i < n; i++) olm_seen += !strcmp(all[i].name, "olm:latest") && !all[i].read_only;
    CHECK(olm_seen == 1);
    store_entries_free(all, n);
    CHECK(store_copy(s, "nothere", "x") == -1 && strstr(anv_last_error(), "not found"));
    CHECK(store_copy(s, "mine:v1", "a/../../b") == -1 && strstr(anv_last_error(), "invalid model name"));

    /* remove: the writable copy of olm goes, the Ollama one stays and cannot be removed */
    CHECK(store_remove(s, "olm") == 0);
    CHECK(store_lookup(s, "olm", &e) == 0 && e.read_only);
    store_entry_clear(&e);
    CHECK(store_remove(s, "olm") == -1 && strstr(anv_last_error(), "Ollama") && strstr(anv_last_error(), "ollama rm"));
    CHECK(store_remove(s, "nothere") == -1 && strstr(anv_last_error(), "not found"));
    CHECK(store_remove(s, "/etc/passwd") == -1 && strstr(anv_last_error(), "invalid model name"));
    CHECK(store_remove(s, "mine:v1") == 0 && !exists(mpath));
    CHECK(exists(bp));  /* still used by user/copy:x */
    /* a blob another pull has finished but not yet referenced survives an unrelated rm */
    char inflight[DIGEST_STR_LEN + 1];
    CHECK(store_put_bytes(s, "in flight", 9, inflight) == 0);
    char *ip = store_blob_path(s, inflight);
    CHECK(store_remove(s, "user/copy:x") == 0);
    CHECK(!exists(bp));  /* pruned: it was a layer of the removed model */
    CHECK(ip && exists(ip));
    const char *cand[] = {inflight, "sha256:../../etc"};
    CHECK(store_prune_layers(s, cand, 2) == 1 && !exists(ip));  /* named, unreferenced: removed; bad digest ignored */
    free(ip);
    CHECK(!exists(path_of("anvil/manifests/registry.ollama.ai/user")));  /* empty directories dropped */

    /* prune: orphans, stale partial downloads and temporaries go; fresh partials stay */
    char orphan[DIGEST_STR_LEN + 1];
    CHECK(store_put_bytes(s, "orphan", 6, orphan) == 0);
    char *op = store_blob_path(s, orphan);
    char stale[1200], fresh[1200], tmpf[1200], other[1200];
    snprintf(stale, sizeof stale, "%s-partial", op);
    snprintf(fresh, sizeof fresh, "%s-partial-0", op);
    snprintf(tmpf, sizeof tmpf, "%s/.anvil-tmp-1-1", path_of("anvil/blobs"));
    snprintf(other, sizeof other, "%s/README", path_of("anvil/blobs"));
    write_text(stale, "x");
    write_text(fresh, "x");
    write_text(tmpf, "x");
    write_text(other, "x");
    struct utimbuf old = {time(NULL) - 3 * 86400, time(NULL) - 3 * 86400};
    utime(stale, &old);
    utime(tmpf, &old);
    /* a young unreferenced blob is an upload waiting for its create: kept */
    CHECK(store_prune(s) == 2 && exists(op) && !exists(stale) && !exists(tmpf));
    /* old temporaries (root spool, blobs, beside a manifest) go unless a live writer holds them */
    char held[1200], spool[1200], mtmp[1200];
    snprintf(held, sizeof held, "%s/.anvil-tmp-2-2", path_of("anvil/blobs"));
    snprintf(spool, sizeof spool, "%s/.upload-abc123", path_of("anvil"));
    mkdirs(path_of("anvil/manifests/registry.ollama.ai/library/x"));
    snprintf(mtmp, sizeof mtmp, "%s/.anvil-tmp-3-3", path_of("anvil/manifests/registry.ollama.ai/library/x"));
    write_text(held, "x");
    write_text(spool, "x");
    write_text(mtmp, "x");
    utime(held, &old);
    utime(spool, &old);
    utime(mtmp, &old);
    int hfd = open(held, O_RDONLY);
    CHECK(hfd >= 0 && flock(hfd, LOCK_EX) == 0);
    CHECK(store_file_held(held) && !store_file_held(spool));
    utime(op, &old);  /* an unreferenced blob past the grace: pruned */
    CHECK(store_prune(s) == 3);  /* the orphan, the spool file, the manifest temporary */
    CHECK(!exists(op) && !exists(spool) && !exists(mtmp) && exists(held) && exists(fresh) && exists(other));
    close(hfd);
    CHECK(store_clean_temporaries(s, 3600) == 1 && !exists(held));
    free(op);

    /* damaged manifest, missing blob */
    CHECK(store_import_file(s, path_of("model2.gguf"), d1, &sz) == 0);
    CHECK(store_make_config(s, path_of("model2.gguf"), &cfg, cfg_digest) == 0);
    CHECK(store_write_manifest(s, "broken", &cfg, layers, 1) == 0);
    unlink(bp);
    CHECK(store_lookup(s, "broken", &e) == -1 && strstr(anv_last_error(), d1 + 7) && strstr(anv_last_error(), "missing"));
    CHECK(store_list(s, &all, &n) == 0 && n == 2);  /* still listed (list reads no blobs) */
    store_entries_free(all, n);
    const char *bpath = path_of("anvil/manifests/registry.ollama.ai/library/broken/latest");
    write_text(bpath, "{\"schemaVersion\":2,\"layers\":[{\"mediaType\":1}]}");
    CHECK(store_lookup(s, "broken", &e) == -1 && strstr(anv_last_error(), "damaged manifest") && strstr(anv_last_error(), bpath));
    CHECK(store_prune(s) == -1);  /* a damaged manifest could reference anything: nothing pruned */
    write_text(bpath, "not json");
    CHECK(store_lookup(s, "broken", &e) == -1 && strstr(anv_last_error(), bpath));
    unlink(bpath);

    /* the Ollama root was never touched */
    char *after = snapshot(path_of("ollama"));
    CHECKF(!strcmp(before, after), "ollama tree changed:\n%s\nvs\n%s", before, after);
    free(before);
    free(after);
    free(bp);
    free(gguf);
    free(mpath);
    store_close(s);
}

static void test_env_roots(void) {
    setenv("ANVIL_MODELS", path_of("envA"), 1);
    setenv("OLLAMA_MODELS", path_of("ollama"), 1);
    store *s = store_open();
    CHECK(s && !strcmp(store_root(s), path_of("envA")) && store_ollama_root(s) && !strcmp(store_ollama_root(s), path_of("ollama")));
    store_close(s);
    setenv("OLLAMA_MODELS", path_of("no-such-dir"), 1);
    s = store_open();
    CHECK(s && store_ollama_root(s) == NULL);
    store_close(s);
    unsetenv("ANVIL_MODELS");
    unsetenv("OLLAMA_MODELS");
    setenv("HOME", path_of("home"), 1);
    mkdirs(path_of("home/.ollama/models"));
    s = store_open();
    CHECK(s && !strcmp(store_root(s), path_of("home/.anvil/models")) && store_ollama_root(s) &&
          !strcmp(store_ollama_root(s), path_of("home/.ollama/models")));
    store_close(s);
    /* the writable root being the Ollama root: not listed twice */
    setenv("ANVIL_MODELS", path_of("home/.ollama/models"), 1);
    s = store_open();
    CHECK(s && store_ollama_root(s) == NULL);
    store_close(s);
    unsetenv("ANVIL_MODELS");
}

int main(void) {
    anv_log_enabled = 0;
    snprintf(tmp_root, sizeof tmp_root, "/tmp/anvil-test-store-XXXXXX");
    if (!mkdtemp(tmp_root)) { perror("mkdtemp"); return 1; }
    test_names();
    test_store_ops();
    test_env_roots();
    tu_tmpdir_done(tmp_root);
    return tu_finish();
}
