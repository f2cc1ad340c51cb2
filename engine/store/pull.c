/* pull: `store_pull`, Ollama's registry protocol on top of pull_http: the name becomes
 * {scheme}://{host}/v2/{ns}/{model}/manifests/{tag} (hf.co names use the Hugging Face
 * endpoint), the manifest's layers are downloaded unless already in the store, each one
 * is verified against its sha256 digest and moved into place, and only then the manifest
 * bytes are written as received. */
#include "pull.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "digest.h"
#include "error.h"
#include "pull_http.h"
#include "settings.h"
#include "store_verify.h"

#define PULL_MAX_MANIFEST (4u << 20)
#define PULL_MAX_LAYERS 1024

void pull_opts_default(pull_opts *o) {
    memset(o, 0, sizeof *o);
    o->max_parts = 16;
    o->max_retries = 6;
}

typedef struct {
    char digest[DIGEST_STR_LEN + 1];
    uint64_t size;
    char *blob_path;      /* NULL when the store already has it */
    char *partial_path;
    int lock_fd;          /* its blob lock (lock_layers), held until the blob is in place */
    bool locked;
} pull_layer;

typedef struct {
    store *s;
    store_name name;
    char what[512];       /* "ns/model:tag" for messages */
    char base[1024];      /* "https://host" or the Hugging Face endpoint, no trailing '/' */
    char registry[1400];  /* the registry for messages: the host, and the endpoint if overridden */
    pull_http_cfg cfg;
    pull_layer layers[PULL_MAX_LAYERS];
    int n_layers;
} pull_job;

static bool progress(const pull_job *j, const char *status, const char *digest, uint64_t total,
                     uint64_t completed) {
    if (!j->cfg.progress) return true;
    pull_progress p = {.status = status, .digest = digest, .total = total, .completed = completed};
    return j->cfg.progress(&p, j->cfg.user);
}

static int cancelled(const pull_job *j) {
    anv_set_error("pull of '%s' cancelled", j->what);
    return -1;
}

static bool is_hf_host(const char *host) {
    return !strcasecmp(host, "hf.co") || !strcasecmp(host, "huggingface.co");
}

/* The URL prefix for the name's registry. */
static int make_base(pull_job *j) {
    const char *env = is_hf_host(j->name.host) ? anv_setting_raw("ANVIL_HF_ENDPOINT") : NULL;
    if (env && *env) {
        if (strncmp(env, "http://", 7) && strncmp(env, "https://", 8)) {
            anv_set_error("ANVIL_HF_ENDPOINT must start with http:// or https:// (got '%s')", env);
            return -1;
        }
        if (strlen(env) >= sizeof j->base) { anv_set_error("ANVIL_HF_ENDPOINT is too long"); return -1; }
        snprintf(j->base, sizeof j->base, "%s", env);
        size_t n = strlen(j->base);
        while (n > 0 && j->base[n - 1] == '/') j->base[--n] = 0;
        snprintf(j->registry, sizeof j->registry, "%s (%s)", j->name.host, j->base);
        return 0;
    }
    snprintf(j->base, sizeof j->base, "%s://%s", j->cfg.insecure ? "http" : "https", j->name.host);
    snprintf(j->registry, sizeof j->registry, "%s", j->name.host);
    return 0;
}

static bool json_size(const cJSON *v, uint64_t *out) {
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 9007199254740992.0) return false;
    *out = (uint64_t)v->valuedouble;
    return (double)*out == v->valuedouble;
}

static int add_layer(pull_job *j, const cJSON *l, const char *where) {
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(l, "digest");
    uint64_t size;
    if (!cJSON_IsString(d) || !digest_valid(d->valuestring, false)) {
        anv_set_error("manifest of '%s': %s has no valid sha256 digest", j->what, where);
        return -1;
    }
    if (!json_size(cJSON_GetObjectItemCaseSensitive(l, "size"), &size)) {
        anv_set_error("manifest of '%s': %s %s has no valid size", j->what, where, d->valuestring);
        return -1;
    }
    for (int i = 0; i < j->n_layers; i++)
        if (!strcmp(j->layers[i].digest, d->valuestring)) return 0;  /* listed twice: fetched once */
    if (j->n_layers == PULL_MAX_LAYERS) {
        anv_set_error("manifest of '%s' has more than %d layers", j->what, PULL_MAX_LAYERS);
        return -1;
    }
    pull_layer *pl = &j->layers[j->n_layers++];
    snprintf(pl->digest, sizeof pl->digest, "%s", d->valuestring);
    pl->size = size;
    return 0;
}

static int parse_manifest(pull_job *j, const char *text, size_t len) {
    cJSON *m = cJSON_ParseWithLength(text, len);
    if (!cJSON_IsObject(m)) {
        cJSON_Delete(m);
        anv_set_error("manifest of '%s' from %s is not JSON", j->what, j->registry);
        return -1;
    }
    int rc = 0;
    const cJSON *config = cJSON_GetObjectItemCaseSensitive(m, "config");
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(m, "layers");
    if (!cJSON_IsArray(layers) || cJSON_GetArraySize(layers) == 0) {
        anv_set_error("manifest of '%s' from %s lists no layers", j->what, j->registry);
        rc = -1;
    }
    if (!rc && config && !cJSON_IsNull(config)) rc = add_layer(j, config, "the config");
    const cJSON *l;
    if (!rc) cJSON_ArrayForEach(l, layers) {
        if ((rc = add_layer(j, l, "a layer"))) break;
    }
    cJSON_Delete(m);
    return rc;
}

static int fetch_manifest(pull_job *j, char **text, size_t *len) {
    char url[2048];
    snprintf(url, sizeof url, "%s/v2/%s/%s/manifests/%s", j->base, j->name.ns, j->name.model, j->name.tag);
    long code = pull_http_get(&j->cfg, url, STORE_MT_MANIFEST, PULL_MAX_MANIFEST, text, len);
    if (code < 0) {
        char why[512];
        snprintf(why, sizeof why, "%s", anv_last_error());
        anv_set_error("pulling '%s' from %s: %s", j->what, j->registry, why);
        return -1;
    }
    if (code == 404) {
        anv_set_error("model '%s' not found in registry %s", j->what, j->registry);
        return -1;
    }
    if (code == 401 || code == 403) {
        anv_set_error("registry %s refused access to '%s' (HTTP %ld; only anonymous pulls are supported)",
                      j->registry, j->what, code);
        return -1;
    }
    if (code < 200 || code >= 300) {
        char retried[48] = "";
        if ((code >= 500 || code == 429 || code == 408) && j->cfg.max_retries)
            snprintf(retried, sizeof retried, " (gave up after %d retries)", j->cfg.max_retries);
        anv_set_error("registry %s answered HTTP %ld for the manifest of '%s'%s", j->registry, code, j->what, retried);
        return -1;
    }
    return 0;
}

/* Creates the directory that holds path (one level: the store's blobs folder and its parents). */
static int make_parent_dirs(const char *path) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) return 0;
    *slash = 0;
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) goto fail;
        *p = '/';
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) goto fail;
    return 0;
fail:
    anv_set_error("cannot create %s: %s", dir, strerror(errno));
    return -1;
}

/* A blob already in the store is re-hashed before a manifest names it again (Ollama's
 * verifyBlob on every layer): 1 intact; 0 corrupted in place (or unreadable), so it is
 * downloaded again: a bad copy in the writable root is removed first, a read-only Ollama one
 * is shadowed by the fresh copy in the writable root (store_find_blob looks there first). */
static int existing_blob_ok(pull_job *j, const pull_layer *l) {
    char *path = store_find_blob(j->s, l->digest);
    if (!path) return 0;
    if (store_verify_blob_file(path, l->digest, "pull") == 0) {
        free(path);
        return 1;
    }
    anv_log("%s; downloading it again", anv_last_error());
    char *mine = store_blob_path(j->s, l->digest);
    int rc = 0;
    if (mine && strcmp(mine, path) == 0 && unlink(path) != 0 && errno != ENOENT) {
        anv_set_error("cannot remove the corrupt blob %s: %s", path, strerror(errno));
        rc = -1;
    }
    free(mine);
    free(path);
    return rc;
}

static int blob_lock(const pull_job *j, pull_layer *l);

static int download_layers(pull_job *j) {
    for (int i = 0; i < j->n_layers; i++) {
        pull_layer *l = &j->layers[i];
        char status[32];
        snprintf(status, sizeof status, "pulling %.12s", l->digest + 7);
        int present = store_has_blob(j->s, l->digest) ? existing_blob_ok(j, l) : 0;
        if (present < 0) return -1;
        if (present) {
            if (!progress(j, status, l->digest, l->size, l->size)) return cancelled(j);
            continue;
        }
        if (!l->locked) { /* present at lock_layers, pruned since: lock it now */
            int lr = blob_lock(j, l);
            if (lr <= 0) return lr < 0 ? -1 : cancelled(j);
        }
        free(l->blob_path);
        free(l->partial_path);
        l->partial_path = NULL;
        l->blob_path = store_blob_path(j->s, l->digest);
        if (!l->blob_path) return -1;
        size_t n = strlen(l->blob_path) + 16;
        l->partial_path = malloc(n);
        if (!l->partial_path) { anv_set_error("out of memory"); return -1; }
        snprintf(l->partial_path, n, "%s-partial", l->blob_path);
        if (make_parent_dirs(l->blob_path)) return -1;
        char url[2048];
        snprintf(url, sizeof url, "%s/v2/%s/%s/blobs/%s", j->base, j->name.ns, j->name.model, l->digest);
        int rc = pull_http_blob(&j->cfg, url, l->partial_path, l->digest, l->size);
        if (rc == PULL_BLOB_CANCELLED) return cancelled(j);
        if (rc != PULL_BLOB_OK) {
            char why[1024];
            snprintf(why, sizeof why, "%s", anv_last_error());
            anv_set_error("pulling '%s': %s", j->what, why);
            return -1;
        }
    }
    return 0;
}

/* Hashes every downloaded layer; a match is renamed into place, a mismatch is deleted (all
 * of them are checked, so no corrupted partial survives to be "resumed" by the next pull). */
static int verify_layers(pull_job *j) {
    bool announced = false;
    int bad = 0;
    char first[256] = "";
    for (int i = 0; i < j->n_layers; i++) {
        pull_layer *l = &j->layers[i];
        if (!l->partial_path) continue;
        if (!announced && !progress(j, "verifying sha256 digest", NULL, 0, 0)) return cancelled(j);
        announced = true;
        char got[DIGEST_STR_LEN + 1];
        uint64_t size = 0;
        if (digest_file(l->partial_path, got, &size)) return -1;
        if (strcmp(got, l->digest) || size != l->size) {
            unlink(l->partial_path);
            pull_http_discard_state(l->partial_path);
            if (!bad++) snprintf(first, sizeof first, "digest mismatch for layer %s (got %s)", l->digest, got);
            continue;
        }
        if (rename(l->partial_path, l->blob_path) != 0 && !(errno == ENOENT && store_has_blob(j->s, l->digest))) {
            anv_set_error("cannot move %s into place: %s", l->partial_path, strerror(errno));
            return -1;
        }
        pull_http_discard_state(l->partial_path);
        free(l->partial_path);   /* in place: a retry (pull.c's missing-layer loop) skips it */
        l->partial_path = NULL;
    }
    if (bad == 1) anv_set_error("%s, removed", first);
    else if (bad > 1) anv_set_error("%s and %d more layers, removed", first, bad - 1);
    return bad ? -1 : 0;
}

/* The bytes of the name's current manifest in the writable root (NULL if none). */
static char *read_old_manifest(const pull_job *j, size_t *len) {
    char path[4096];
    snprintf(path, sizeof path, "%s/manifests/%s/%s/%s/%s", store_root(j->s), j->name.host, j->name.ns,
             j->name.model, j->name.tag);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = malloc(PULL_MAX_MANIFEST + 1);
    *len = buf ? fread(buf, 1, PULL_MAX_MANIFEST, f) : 0;
    fclose(f);
    return buf;
}

/* Takes <root>/.anvil-locks/pull-<sha256 of the name> exclusively (waits for another pull
 * of the same name); *fd keeps it. */
static int name_lock(const pull_job *j, int *fd) {
    char dir[4096], path[4200], key[1024], hex[DIGEST_STR_LEN + 1];
    snprintf(dir, sizeof dir, "%s/.anvil-locks", store_root(j->s));
    snprintf(key, sizeof key, "%s/%s/%s:%s", j->name.host, j->name.ns, j->name.model, j->name.tag);
    digest_bytes(key, strlen(key), hex);
    snprintf(path, sizeof path, "%s/pull-%s", dir, hex + 7);
    if (make_parent_dirs(path)) return -1;
    *fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (*fd < 0) { anv_set_error("cannot open %s: %s", path, strerror(errno)); return -1; }
    while (flock(*fd, LOCK_EX) != 0) {
        if (errno == EINTR) continue;
        anv_set_error("cannot lock %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* <root>/.anvil-locks/blob-<hex>: one puller per blob at a time, whatever name it pulls
 * (two tags of one model share their layers). Blocks with LOCK_NB retries so a cancel is
 * seen; the lock file is unlinked at release, so an opener checks it locked the file
 * that is still there. 1 when acquired, 0 when cancelled, -1 on error. */
static int blob_lock(const pull_job *j, pull_layer *l) {
    char path[4200];
    snprintf(path, sizeof path, "%s/.anvil-locks/blob-%s", store_root(j->s), l->digest + 7);
    if (make_parent_dirs(path)) return -1;
    bool announced = false;
    for (int waited_ms = 0;;) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) { anv_set_error("cannot open %s: %s", path, strerror(errno)); return -1; }
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            struct stat a, b;
            if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev) {
                l->lock_fd = fd;
                l->locked = true;
                return 1;
            }
            close(fd);   /* its holder unlinked it meanwhile: lock the new one */
            continue;
        }
        int e = errno;
        close(fd);
        if (e != EWOULDBLOCK && e != EINTR) {
            anv_set_error("cannot lock %s: %s", path, strerror(e));
            return -1;
        }
        char status[96];
        snprintf(status, sizeof status, "waiting for another pull of layer %.12s", l->digest + 7);
        if ((!announced || waited_ms % 5000 == 0) && !progress(j, status, l->digest, l->size, 0)) return 0;
        announced = true;
        usleep(100 * 1000);
        waited_ms += 100;
    }
}

static void blob_unlock(const pull_job *j, pull_layer *l) {
    if (!l->locked) return;
    char path[4200];
    snprintf(path, sizeof path, "%s/.anvil-locks/blob-%s", store_root(j->s), l->digest + 7);
    unlink(path);
    close(l->lock_fd);
    l->locked = false;
}

static int by_digest(const void *a, const void *b) {
    return strcmp((*(pull_layer *const *)a)->digest, (*(pull_layer *const *)b)->digest);
}

/* Locks every layer the store lacks, in digest order (two pulls sharing two layers cannot
 * deadlock), before any is downloaded; a layer another pull finished meanwhile is then
 * present and download_layers skips it. */
static int lock_layers(pull_job *j) {
    pull_layer *order[PULL_MAX_LAYERS];
    for (int i = 0; i < j->n_layers; i++) order[i] = &j->layers[i];
    qsort(order, (size_t)j->n_layers, sizeof order[0], by_digest);
    for (int i = 0; i < j->n_layers; i++) {
        if (store_has_blob(j->s, order[i]->digest)) continue;
        int rc = blob_lock(j, order[i]);
        if (rc < 0) return -1;
        if (rc == 0) return cancelled(j);
    }
    return 0;
}

int store_pull(store *s, const char *name, const pull_opts *o) {
    pull_opts defaults;
    if (!o) {
        pull_opts_default(&defaults);
        o = &defaults;
    }
    if (!s || !name) { anv_set_error("store_pull: no store or name"); return -1; }
    pull_job *j = calloc(1, sizeof *j);
    if (!j) { anv_set_error("out of memory"); return -1; }
    int rc = -1;
    char *text = NULL, *old = NULL;
    size_t len = 0, old_len = 0;
    bool curl_ready = false, locked = false;
    store_lk lk;
    int name_fd = -1;
    j->s = s;
    if (store_name_parse(name, &j->name)) goto out;
    snprintf(j->what, sizeof j->what, "%s/%s:%s", j->name.ns, j->name.model, j->name.tag);
    pull_http_cfg_init(&j->cfg, o);
    if (make_base(j)) goto out;
    /* reference-counted and thread-safe in libcurl >= 7.84 */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) { anv_set_error("cannot initialize libcurl"); goto out; }
    curl_ready = true;
    if (!progress(j, "pulling manifest", NULL, 0, 0)) { cancelled(j); goto out; }
    /* One pull of a name at a time (across processes too): a second waits here, then finds
     * the layers the first downloaded present. */
    if (name_lock(j, &name_fd)) goto out;
    if (fetch_manifest(j, &text, &len) || parse_manifest(j, text, len) || lock_layers(j)) goto out;
    /* Downloads run without the store lock (a delete or prune meanwhile is not held up for
     * the length of a download; partials are not blobs, so a prune never sees them). The
     * shared store lock covers verify, rename and the manifest: no prune can then remove a
     * layer; one that a prune removed before is fetched again. */
    for (int attempt = 0;; attempt++) {
        if (download_layers(j)) goto out;
        if (store_lock_acquire(s, false, true, &lk)) goto out;
        locked = true;
        if (verify_layers(j)) goto out;
        int missing = 0;
        for (int i = 0; i < j->n_layers; i++) missing += !store_has_blob(s, j->layers[i].digest);
        if (!missing) break;
        store_lock_release(&lk);
        locked = false;
        if (attempt == 2) {
            anv_set_error("pulling '%s': %d layer(s) were removed from the store while it ran (a prune "
                          "or delete racing it), three times", j->what, missing);
            goto out;
        }
    }
    if (!progress(j, "writing manifest", NULL, 0, 0)) { cancelled(j); goto out; }
    old = read_old_manifest(j, &old_len);
    if (store_write_manifest_raw(s, name, text, len)) goto out;
    store_lock_release(&lk);
    locked = false;
    /* Like Ollama: a pull that replaced a manifest removes the layers nothing uses any more. */
    if (old && (old_len != len || memcmp(old, text, len)) && !anv_setting_on("ANVIL_NOPRUNE") &&
        !anv_setting_on("OLLAMA_NOPRUNE")) {
        progress(j, "removing any unused layers", NULL, 0, 0);
        char **layers = NULL;
        int n_layers = 0;
        if (store_manifest_digests(old, old_len, &layers, &n_layers) == 0) {
            int pr = store_prune_layers(s, (const char *const *)layers, n_layers);
            store_digests_free(layers, n_layers);
            if (pr < 0) goto out;
        }
    }
    progress(j, "success", NULL, 0, 0);
    rc = 0;
out:
    if (locked) store_lock_release(&lk);
    if (name_fd >= 0) close(name_fd);
    if (curl_ready) curl_global_cleanup();
    for (int i = 0; i < j->n_layers; i++) {
        blob_unlock(j, &j->layers[i]);
        free(j->layers[i].blob_path);
        free(j->layers[i].partial_path);
    }
    free(text);
    free(old);
    free(j);
    return rc;
}
