/* store_blobs: the write side of the model store: file helpers (atomic writes, mkdir -p),
 * content-addressed blobs (import, put, find), manifests (write, parse) and the config
 * blob made from a GGUF's facts. Everything is written to the writable root only. */
#include "store_impl.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "gguf.h"
#include "quantize_model.h"
#include "readfile.h"
#include "hash.h"

char *store_fmt(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int rc = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (rc < 0) { anv_set_error("out of memory"); return NULL; }
    return s;
}

int store_mkdirs(const char *dir) {
    char *p = strdup(dir);
    if (!p) { anv_set_error("out of memory"); return -1; }
    for (char *q = p + 1;; q++) {
        if (*q != '/' && *q) continue;
        char c = *q;
        *q = 0;
        if (mkdir(p, 0755) != 0 && errno != EEXIST) {
            anv_set_error("cannot create directory %s: %s", p, strerror(errno));
            free(p);
            return -1;
        }
        if (!c) break;
        *q = c;
    }
    struct stat st;
    if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) {
        anv_set_error("%s is not a directory", p);
        free(p);
        return -1;
    }
    free(p);
    return 0;
}

/* A temporary file next to path: "<dir>/.anvil-tmp-<process tag>-<n>". fd_out gets it open. */
static char *make_temp_beside(const char *path, int *fd_out) {
    static int counter;
    const char *slash = strrchr(path, '/');
    int dir_len = slash ? (int)(slash - path) : 1;
    const char *dir = slash ? path : ".";
    for (int attempt = 0; attempt < 100; attempt++) {
        int n = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
        char *tmp = store_fmt("%.*s/" STORE_TMP_PREFIX "%s-%d", dir_len, dir, anv_process_tag(), n);
        if (!tmp) return NULL;
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0) {
            flock(fd, LOCK_EX);  /* held while written: store_clean_temporaries leaves it alone */
            *fd_out = fd;
            return tmp;
        }
        int e = errno;
        if (e != EEXIST) {
            anv_set_error("cannot create %s: %s", tmp, strerror(e));
            free(tmp);
            return NULL;
        }
        free(tmp);
    }
    anv_set_error("cannot create a temporary file beside %s", path);
    return NULL;
}

static int write_all(int fd, const void *data, size_t n, const char *path) {
    const char *p = data;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) { anv_set_error("cannot write %s: %s", path, strerror(errno)); return -1; }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int store_write_atomic(const char *path, const void *data, size_t n) {
    char *dir = strdup(path);
    if (!dir) { anv_set_error("out of memory"); return -1; }
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        if (store_mkdirs(dir) != 0) { free(dir); return -1; }
    }
    free(dir);
    int fd;
    char *tmp = make_temp_beside(path, &fd);
    if (!tmp) return -1;
    int rc = write_all(fd, data, n, tmp);
    if (rc == 0 && fsync(fd) != 0) { anv_set_error("cannot sync %s: %s", tmp, strerror(errno)); rc = -1; }
    if (close(fd) != 0 && rc == 0) { anv_set_error("cannot write %s: %s", tmp, strerror(errno)); rc = -1; }
    if (rc == 0 && rename(tmp, path) != 0) { anv_set_error("cannot rename %s to %s: %s", tmp, path, strerror(errno)); rc = -1; }
    if (rc != 0) unlink(tmp);
    free(tmp);
    return rc;
}

/* ---- blobs ---- */

char *store_blob_path(store *s, const char *digest) {
    if (!digest || !digest_valid(digest, false)) {
        anv_set_error("invalid digest '%.80s' (expected sha256:<64 lowercase hex digits>)", digest ? digest : "");
        return NULL;
    }
    return store_fmt("%s/blobs/sha256-%s", s->root, digest + 7);
}

char *store_find_blob(store *s, const char *digest) {
    char *p = store_blob_path(s, digest);
    if (!p) return NULL;
    struct stat st;
    if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) return p;
    free(p);
    if (s->ollama_root) {
        p = store_fmt("%s/blobs/sha256-%s", s->ollama_root, digest + 7);
        if (p && stat(p, &st) == 0 && S_ISREG(st.st_mode)) return p;
        free(p);
    }
    anv_set_error("blob %s not found in %s/blobs%s%s", digest, s->root,
                  s->ollama_root ? " nor in " : "", s->ollama_root ? s->ollama_root : "");
    return NULL;
}

bool store_has_blob(store *s, const char *digest) {
    char *p = store_find_blob(s, digest);
    free(p);
    return p != NULL;
}

static int import_file_locked(store *s, const char *path, char digest_out[DIGEST_STR_LEN + 1], uint64_t *size_out);

/* Under the shared store lock (see store_lock.c): no prune runs meanwhile. */
int store_import_file(store *s, const char *path, char digest_out[DIGEST_STR_LEN + 1], uint64_t *size_out) {
    store_lk lk;
    if (store_lock_acquire(s, false, true, &lk) != 0) return -1;
    int rc = import_file_locked(s, path, digest_out, size_out);
    store_lock_release(&lk);
    return rc;
}

static int import_file_locked(store *s, const char *path, char digest_out[DIGEST_STR_LEN + 1], uint64_t *size_out) {
    char digest[DIGEST_STR_LEN + 1];
    uint64_t size = 0;
    if (digest_file(path, digest, &size) != 0) return -1;
    if (size_out) *size_out = size;
    memcpy(digest_out, digest, sizeof digest);
    if (store_has_blob(s, digest)) return 0;
    char *dst = store_blob_path(s, digest);
    char *blobs = store_fmt("%s/blobs", s->root);
    if (!dst || !blobs || store_mkdirs(blobs) != 0) { free(dst); free(blobs); return -1; }
    free(blobs);
    int in = anv_open_regular(path, NULL);
    if (in < 0) { free(dst); return -1; }
    int out;
    char *tmp = make_temp_beside(dst, &out);
    if (!tmp) { close(in); free(dst); return -1; }
    /* copy while hashing again: the blob must hold exactly the bytes of its name */
    enum { CHUNK = 1 << 20 };
    char *buf = malloc(CHUNK);
    digest_ctx *d = digest_new();
    int rc = buf && d ? 0 : -1;
    if (rc) anv_set_error("out of memory");
    while (rc == 0) {
        ssize_t r = read(in, buf, CHUNK);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) { anv_set_error("cannot read %s: %s", path, strerror(errno)); rc = -1; break; }
        if (r == 0) break;
        digest_update(d, buf, (size_t)r);
        rc = write_all(out, buf, (size_t)r, tmp);
    }
    char again[DIGEST_STR_LEN + 1] = "";
    if (d) digest_final(d, again);
    free(buf);
    close(in);
    if (rc == 0 && strcmp(again, digest) != 0) {
        anv_set_error("%s changed while it was being imported", path);
        rc = -1;
    }
    if (rc == 0 && fsync(out) != 0) { anv_set_error("cannot sync %s: %s", tmp, strerror(errno)); rc = -1; }
    if (close(out) != 0 && rc == 0) { anv_set_error("cannot write %s: %s", tmp, strerror(errno)); rc = -1; }
    if (rc == 0 && rename(tmp, dst) != 0) { anv_set_error("cannot rename %s: %s", tmp, strerror(errno)); rc = -1; }
    if (rc != 0) unlink(tmp);
    free(tmp);
    free(dst);
    return rc;
}

static int import_move_locked(store *s, const char *path, char digest_out[DIGEST_STR_LEN + 1], uint64_t *size_out);

/* Under the shared store lock (see store_lock.c): no prune runs meanwhile. */
int store_import_move(store *s, const char *path, char digest_out[DIGEST_STR_LEN + 1], uint64_t *size_out) {
    store_lk lk;
    if (store_lock_acquire(s, false, true, &lk) != 0) return -1;
    int rc = import_move_locked(s, path, digest_out, size_out);
    store_lock_release(&lk);
    return rc;
}

static int import_move_locked(store *s, const char *path, char digest_out[DIGEST_STR_LEN + 1], uint64_t *size_out) {
    char digest[DIGEST_STR_LEN + 1];
    if (digest_file(path, digest, size_out) != 0) { unlink(path); return -1; }
    memcpy(digest_out, digest, sizeof digest);
    if (store_has_blob(s, digest)) { unlink(path); return 0; }
    char *dst = store_blob_path(s, digest);
    char *blobs = store_fmt("%s/blobs", s->root);
    if (!dst || !blobs || store_mkdirs(blobs) != 0) { free(dst); free(blobs); unlink(path); return -1; }
    free(blobs);
    int rc = 0;
    if (rename(path, dst) != 0) {
        int e = errno;
        if (e == EXDEV) rc = store_import_file(s, path, digest_out, size_out);
        else { anv_set_error("cannot move %s to %s: %s", path, dst, strerror(e)); rc = -1; }
        unlink(path);
    }
    free(dst);
    return rc;
}

static int put_bytes_locked(store *s, const void *data, size_t n, char digest_out[DIGEST_STR_LEN + 1]);

/* Under the shared store lock (see store_lock.c): no prune runs meanwhile. */
int store_put_bytes(store *s, const void *data, size_t n, char digest_out[DIGEST_STR_LEN + 1]) {
    store_lk lk;
    if (store_lock_acquire(s, false, true, &lk) != 0) return -1;
    int rc = put_bytes_locked(s, data, n, digest_out);
    store_lock_release(&lk);
    return rc;
}

static int put_bytes_locked(store *s, const void *data, size_t n, char digest_out[DIGEST_STR_LEN + 1]) {
    digest_bytes(data, n, digest_out);
    if (store_has_blob(s, digest_out)) return 0;
    char *dst = store_blob_path(s, digest_out);
    if (!dst) return -1;
    int rc = store_write_atomic(dst, data, n);
    free(dst);
    return rc;
}

/* ---- manifests ---- */

static int parse_layer(const cJSON *j, const char *what, store_mlayer *l) {
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(j, "mediaType");
    const cJSON *dg = cJSON_GetObjectItemCaseSensitive(j, "digest");
    const cJSON *sz = cJSON_GetObjectItemCaseSensitive(j, "size");
    if (!cJSON_IsString(mt) || !cJSON_IsString(dg) || !cJSON_IsNumber(sz) || sz->valuedouble < 0) {
        anv_set_error("damaged manifest %s: a layer lacks mediaType, digest or size", what);
        return -1;
    }
    if (!digest_valid(dg->valuestring, false)) {
        anv_set_error("damaged manifest %s: bad digest '%.80s'", what, dg->valuestring);
        return -1;
    }
    snprintf(l->media_type, sizeof l->media_type, "%s", mt->valuestring);
    memcpy(l->digest, dg->valuestring, DIGEST_STR_LEN + 1);
    l->size = (uint64_t)sz->valuedouble;
    return 0;
}

int store_manifest_parse(const char *json, size_t len, const char *what, store_manifest *m) {
    memset(m, 0, sizeof *m);
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        anv_set_error("damaged manifest %s: not a JSON object", what);
        return -1;
    }
    int rc = -1;
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "schemaVersion");
    const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(root, "config");
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
    if (!cJSON_IsNumber(ver) || ver->valueint != 2) anv_set_error("damaged manifest %s: schemaVersion is not 2", what);
    else if (!cJSON_IsArray(layers)) anv_set_error("damaged manifest %s: no layers array", what);
    else if (cJSON_IsObject(cfg) && parse_layer(cfg, what, &m->config) != 0) { /* error set */ }
    else {
        int n = cJSON_GetArraySize(layers);
        m->layers = calloc((size_t)(n ? n : 1), sizeof *m->layers);
        if (!m->layers) anv_set_error("out of memory");
        else {
            rc = 0;
            const cJSON *l;
            cJSON_ArrayForEach(l, layers) {
                if (parse_layer(l, what, &m->layers[m->n_layers]) != 0) { rc = -1; break; }
                m->n_layers++;
            }
        }
    }
    cJSON_Delete(root);
    if (rc != 0) store_manifest_free(m);
    return rc;
}

void store_manifest_free(store_manifest *m) {
    free(m->layers);
    memset(m, 0, sizeof *m);
}

static cJSON *layer_json(const store_layer *l) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "mediaType", l->media_type);
    cJSON_AddStringToObject(j, "digest", l->digest);
    cJSON_AddNumberToObject(j, "size", (double)l->size);
    return j;
}

static int check_layer_present(store *s, const char *media_type, const char *digest) {
    if (!digest_valid(digest, false)) { anv_set_error("layer %s: invalid digest '%.80s'", media_type, digest); return -1; }
    if (!store_has_blob(s, digest)) { anv_set_error("layer %s: blob %s is missing", media_type, digest); return -1; }
    return 0;
}

static int write_manifest_bytes(store *s, const char *name, const char *json, size_t len) {
    store_name n;
    if (store_name_parse(name, &n) != 0) return -1;
    char *path = store_manifest_path(s->root, &n);
    if (!path) return -1;
    int rc = store_write_atomic(path, json, len);
    free(path);
    return rc;
}

static int write_manifest_locked(store *s, const char *name, const store_layer *config,
                         const store_layer *layers, int n_layers);

/* Under the shared store lock (see store_lock.c): no prune runs meanwhile. */
int store_write_manifest(store *s, const char *name, const store_layer *config,
                         const store_layer *layers, int n_layers) {
    store_lk lk;
    if (store_lock_acquire(s, false, true, &lk) != 0) return -1;
    int rc = write_manifest_locked(s, name, config, layers, n_layers);
    store_lock_release(&lk);
    return rc;
}

static int write_manifest_locked(store *s, const char *name, const store_layer *config,
                         const store_layer *layers, int n_layers) {
    store_name n;
    if (store_name_parse(name, &n) != 0) return -1;
    if (config && check_layer_present(s, config->media_type, config->digest) != 0) return -1;
    for (int i = 0; i < n_layers; i++)
        if (check_layer_present(s, layers[i].media_type, layers[i].digest) != 0) return -1;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "schemaVersion", 2);
    cJSON_AddStringToObject(root, "mediaType", STORE_MT_MANIFEST);
    if (config) cJSON_AddItemToObject(root, "config", layer_json(config));
    cJSON *arr = cJSON_AddArrayToObject(root, "layers");
    for (int i = 0; i < n_layers; i++) cJSON_AddItemToArray(arr, layer_json(&layers[i]));
    char *json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!json) { anv_set_error("out of memory"); return -1; }
    int rc = write_manifest_bytes(s, name, json, strlen(json));
    free(json);
    return rc;
}

static int write_manifest_raw_locked(store *s, const char *name, const char *json, size_t len);

/* Under the shared store lock (see store_lock.c): no prune runs meanwhile. */
int store_write_manifest_raw(store *s, const char *name, const char *json, size_t len) {
    store_lk lk;
    if (store_lock_acquire(s, false, true, &lk) != 0) return -1;
    int rc = write_manifest_raw_locked(s, name, json, len);
    store_lock_release(&lk);
    return rc;
}

static int write_manifest_raw_locked(store *s, const char *name, const char *json, size_t len) {
    store_manifest m;
    if (store_manifest_parse(json, len, name, &m) != 0) return -1;
    int rc = 0;
    if (m.config.digest[0]) rc = check_layer_present(s, m.config.media_type, m.config.digest);
    for (int i = 0; rc == 0 && i < m.n_layers; i++) rc = check_layer_present(s, m.layers[i].media_type, m.layers[i].digest);
    store_manifest_free(&m);
    return rc == 0 ? write_manifest_bytes(s, name, json, len) : -1;
}

/* ---- the config blob ---- */

/* Ollama's format.HumanNumber: "268.10M", "1.2B", "7B". */
static void human_number(uint64_t b, char *buf, size_t cap) {
    double v;
    if (b >= 1000000000ull) {
        v = (double)b / 1e9;
        snprintf(buf, cap, v == (double)(uint64_t)v ? "%.0fB" : "%.1fB", v);
    } else if (b >= 1000000ull) {
        v = (double)b / 1e6;
        snprintf(buf, cap, v == (double)(uint64_t)v ? "%.0fM" : "%.2fM", v);
    } else if (b >= 1000ull) {
        snprintf(buf, cap, "%.0fK", (double)b / 1e3);
    } else {
        snprintf(buf, cap, "%llu", (unsigned long long)b);
    }
}

int store_make_config(store *s, const char *gguf_path, store_layer *out, char digest_buf[DIGEST_STR_LEN + 1]) {
    gguf_file *f = gguf_open(gguf_path);
    if (!f) return -1;
    char *arch = gguf_get_str_dup(f, "general.architecture");
    uint32_t ftype = 0;
    const char *ftype_name = gguf_get_u32(f, "general.file_type", &ftype) ? quant_ftype_name((int)ftype) : NULL;
    uint64_t n_params = 0;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        uint64_t ne = 1;
        for (uint32_t d = 0; d < f->tensors[i].n_dims; d++) ne *= (uint64_t)f->tensors[i].ne[d];
        n_params += ne;
    }
    char model_type[32];
    human_number(n_params, model_type, sizeof model_type);
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "model_format", "gguf");
    if (arch) {
        cJSON_AddStringToObject(c, "model_family", arch);
        cJSON *fams = cJSON_AddArrayToObject(c, "model_families");
        cJSON_AddItemToArray(fams, cJSON_CreateString(arch));
    }
    cJSON_AddStringToObject(c, "model_type", model_type);
    cJSON_AddStringToObject(c, "file_type", ftype_name ? ftype_name : "unknown");
#if defined(__aarch64__)
    cJSON_AddStringToObject(c, "architecture", "arm64");
#else
    cJSON_AddStringToObject(c, "architecture", "amd64");
#endif
    cJSON_AddStringToObject(c, "os", "linux");
    cJSON *rootfs = cJSON_AddObjectToObject(c, "rootfs");
    cJSON_AddStringToObject(rootfs, "type", "layers");
    cJSON_AddArrayToObject(rootfs, "diff_ids");
    free(arch);
    gguf_close(f);
    char *json = cJSON_PrintUnformatted(c);
    cJSON_Delete(c);
    if (!json) { anv_set_error("out of memory"); return -1; }
    size_t n = strlen(json);
    int rc = store_put_bytes(s, json, n, digest_buf);
    free(json);
    if (rc != 0) return -1;
    out->media_type = STORE_MT_CONFIG;
    out->digest = digest_buf;
    out->size = n;
    return 0;
}
