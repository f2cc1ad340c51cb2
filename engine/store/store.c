/* store: the model store's read side and housekeeping: roots from the environment,
 * manifests into store entries (list, lookup, resolve), remove, copy and prune. The
 * Ollama root is only ever read. Blobs and manifest writing are in store_blobs.c, name
 * parsing in store_name.c. */
#include "store_impl.h"

#include <dirent.h>
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "path.h"
#include "weight_cache.h"

#define MANIFEST_MAX (4u << 20)
#define TEXT_LAYER_MAX (64u << 20)
#define STALE_SECONDS (24 * 3600)

/* ---- opening ---- */

static char *home_dir(void) {
    const char *h = getenv("HOME");
    if (h && *h) return strdup(h);
    struct passwd *pw = getpwuid(getuid());
    if (pw && pw->pw_dir && *pw->pw_dir) return strdup(pw->pw_dir);
    return NULL;
}

static bool is_dir(const char *p) {
    struct stat st;
    return p && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

store *store_open_at(const char *root, const char *ollama_root) {
    if (!root || !*root) { anv_set_error("store: no root directory given"); return NULL; }
    store *s = calloc(1, sizeof *s);
    if (!s || !(s->root = strdup(root))) { free(s); anv_set_error("out of memory"); return NULL; }
    size_t n = strlen(s->root);
    while (n > 1 && s->root[n - 1] == '/') s->root[--n] = 0;
    if (ollama_root && *ollama_root && !path_same_dir(root, ollama_root)) {
        s->ollama_root = strdup(ollama_root);
        n = strlen(s->ollama_root);
        while (n > 1 && s->ollama_root[n - 1] == '/') s->ollama_root[--n] = 0;
    }
    return s;
}

store *store_open(void) {
    const char *anvil_env = getenv("ANVIL_MODELS");
    const char *ollama_env = getenv("OLLAMA_MODELS");
    char *home = NULL, *root = NULL, *oroot = NULL;
    if ((!anvil_env || !*anvil_env) || (!ollama_env || !*ollama_env)) {
        home = home_dir();
        if (!home) {
            anv_set_error("store: cannot find the home directory (set HOME or ANVIL_MODELS)");
            return NULL;
        }
    }
    /* $OLLAMA_MODELS stands in for $ANVIL_MODELS when only it is set (an Ollama service
     * file): the store is then Ollama's own directory, written in its layout */
    root = anvil_env && *anvil_env ? strdup(anvil_env)
         : ollama_env && *ollama_env ? strdup(ollama_env) : store_fmt("%s/.anvil/models", home);
    oroot = ollama_env && *ollama_env ? strdup(ollama_env) : store_fmt("%s/.ollama/models", home);
    store *s = NULL;
    if (root) s = store_open_at(root, is_dir(oroot) ? oroot : NULL);
    else anv_set_error("out of memory");
    free(home);
    free(root);
    free(oroot);
    return s;
}

void store_close(store *s) {
    if (!s) return;
    free(s->root);
    free(s->ollama_root);
    free(s);
}

const char *store_root(const store *s) { return s->root; }
const char *store_ollama_root(const store *s) { return s->ollama_root; }

char *store_manifest_path(const char *root, const store_name *n) {
    return store_fmt("%s/manifests/%s/%s/%s/%s", root, n->host, n->ns, n->model, n->tag);
}

/* ---- entries ---- */

void store_entry_clear(store_entry *e) {
    if (!e) return;
    free(e->name);
    free(e->manifest_digest);
    free(e->manifest_path);
    free(e->model_path);
    free(e->model_digest);
    free(e->template_text);
    free(e->system);
    free(e->license);
    free(e->params_json);
    free(e->messages_json);
    free(e->projector_path);
    free(e->projector_digest);
    memset(e, 0, sizeof *e);
}

void store_entries_free(store_entry *e, int n) {
    for (int i = 0; e && i < n; i++) store_entry_clear(&e[i]);
    free(e);
}

static char *read_blob_text(store *s, const char *digest, const char *display) {
    char *p = store_find_blob(s, digest);
    if (!p) {
        anv_set_error("model '%s': blob %s is missing", display, digest);
        return NULL;
    }
    char *t = anv_read_file(p, TEXT_LAYER_MAX, NULL);
    free(p);
    return t;
}

/* Appends a LICENSE layer's text to *dst (several are joined by a blank line). */
static int append_license(char **dst, char *text) {
    if (!*dst) { *dst = text; return 0; }
    char *j = store_fmt("%s\n\n%s", *dst, text);
    free(text);
    if (!j) return -1;
    free(*dst);
    *dst = j;
    return 0;
}

/* Fills e from the manifest at path. full: also resolve the model blob and read the text
 * layers (a missing blob is then an error). */
static int load_entry(store *s, const store_name *n, const char *path, bool read_only, bool full, store_entry *e) {
    memset(e, 0, sizeof *e);
    char display[700];
    store_name_display(n, display, sizeof display);
    size_t len = 0;
    char *json = anv_read_file(path, MANIFEST_MAX, &len);
    if (!json) return -1;
    struct stat st;
    store_manifest m;
    if (store_manifest_parse(json, len, path, &m) != 0) { free(json); return -1; }
    char digest[DIGEST_STR_LEN + 1];
    digest_bytes(json, len, digest);
    free(json);
    e->name = strdup(display);
    e->parsed = *n;
    e->manifest_digest = strdup(digest);
    e->manifest_path = strdup(path);
    e->read_only = read_only;
    e->modified = stat(path, &st) == 0 ? (int64_t)st.st_mtime : 0;
    e->size = m.config.size;
    int rc = 0;
    for (int i = 0; i < m.n_layers && rc == 0; i++) {
        const store_mlayer *l = &m.layers[i];
        e->size += l->size;
        if (!strcmp(l->media_type, STORE_MT_MODEL)) {
            if (e->model_digest) continue;  /* the first model layer is the model */
            e->model_digest = strdup(l->digest);
            if (!full) continue;
            e->model_path = store_find_blob(s, l->digest);
            if (!e->model_path) {
                anv_set_error("model '%s': its model blob %s is missing (manifest %s)", display, l->digest, path);
                rc = -1;
            }
            continue;
        }
        if (!strcmp(l->media_type, STORE_MT_PROJECTOR)) {   /* a vision model's projector (engine/vision) */
            if (!full || e->projector_path) continue;
            e->projector_digest = strdup(l->digest);
            if (!(e->projector_path = store_find_blob(s, l->digest))) {
                anv_set_error("model '%s': its projector blob %s is missing (manifest %s)", display, l->digest, path);
                rc = -1;
            }
            continue;
        }
        char **dst = !strcmp(l->media_type, STORE_MT_TEMPLATE) ? &e->template_text
                   : !strcmp(l->media_type, STORE_MT_SYSTEM) ? &e->system
                   : !strcmp(l->media_type, STORE_MT_PARAMS) ? &e->params_json
                   : !strcmp(l->media_type, STORE_MT_MESSAGES) ? &e->messages_json
                   : !strcmp(l->media_type, STORE_MT_LICENSE) ? &e->license : NULL;
        if (!dst || !full) continue;  /* adapter ...: not used by Anvil */
        char *text = read_blob_text(s, l->digest, display);
        if (!text) { rc = -1; break; }
        if (dst == &e->license) { rc = append_license(dst, text); continue; }
        free(*dst);
        *dst = text;
    }
    if (rc == 0 && full && !e->model_digest) {
        anv_set_error("model '%s' has no model layer (manifest %s)", display, path);
        rc = -1;
    }
    store_manifest_free(&m);
    if (rc != 0 || !e->name || !e->manifest_digest || !e->manifest_path) {
        if (rc == 0) anv_set_error("out of memory");
        store_entry_clear(e);
        return -1;
    }
    return 0;
}

static bool file_exists(const char *p) {
    struct stat st;
    return p && stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int lookup_locked(store *s, const char *name, store_entry *out);

int store_lookup(store *s, const char *name, store_entry *out) {
    memset(out, 0, sizeof *out);
    store_lk lk;
    if (store_lock_acquire(s, false, false, &lk) != 0) return -1;
    int rc = lookup_locked(s, name, out);
    store_lock_release(&lk);
    return rc;
}

static int lookup_locked(store *s, const char *name, store_entry *out) {
    store_name n;
    if (store_name_parse(name, &n) != 0) return -1;
    const char *roots[2] = {s->root, s->ollama_root};
    for (int r = 0; r < 2; r++) {
        if (!roots[r]) continue;
        char *path = store_manifest_path(roots[r], &n);
        if (!path) return -1;
        if (file_exists(path)) {
            int rc = load_entry(s, &n, path, r == 1, true, out);
            free(path);
            return rc;
        }
        free(path);
    }
    anv_set_error("model '%s' not found (try 'anvil pull %s')", name, name);
    return -1;
}

int store_resolve(store *s, const char *arg, store_entry *out) {
    memset(out, 0, sizeof *out);
    if (!arg || !*arg) { anv_set_error("no model given"); return -1; }
    struct stat st;
    if (stat(arg, &st) == 0) {
        if (S_ISDIR(st.st_mode)) { anv_set_error("%s is a directory, not a GGUF file or a model name", arg); return -1; }
        out->name = strdup(arg);
        out->model_path = realpath(arg, NULL);
        if (!out->model_path) out->model_path = strdup(arg);
        if (!out->name || !out->model_path) { store_entry_clear(out); anv_set_error("out of memory"); return -1; }
        out->modified = (int64_t)st.st_mtime;
        out->size = (uint64_t)st.st_size;
        return 0;
    }
    int e = errno;
    if (arg[0] == '/' || !strncmp(arg, "./", 2) || !strncmp(arg, "../", 3) || !strncmp(arg, "~/", 2)) {
        anv_set_error("%s: %s", arg, strerror(e));
        return -1;
    }
    store *own = NULL;
    if (!s && !(s = own = store_open())) return -1;
    int rc = store_lookup(s, arg, out);
    store_close(own);
    size_t len = strlen(arg);
    if (rc != 0 && len > 5 && !strcmp(arg + len - 5, ".gguf") && strstr(anv_last_error(), "not found"))
        anv_set_error("%s: no such file, and no model of that name", arg);
    return rc;
}

/* ---- listing ---- */

typedef void (*manifest_fn)(const store_name *n, const char *path, void *user);

/* A folder of the manifest tree, never through a symbolic link: a link to / in manifests/
 * made every listing walk three levels of the whole filesystem (8.7 s a call). */
static DIR *open_real_dir(const char *path) {
    struct stat st;
    if (!path || lstat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return NULL;
    return opendir(path);
}

/* Calls fn for every valid manifest under root (manifests/<host>/<ns>/<model>/<tag>). */
static int walk_manifests(const char *root, manifest_fn fn, void *user) {
    char *base = store_fmt("%s/manifests", root);
    if (!base) return -1;
    DIR *d0 = opendir(base);
    if (!d0) { free(base); return 0; }  /* nothing yet */
    struct dirent *h;
    while ((h = readdir(d0))) {
        if (h->d_name[0] == '.') continue;
        char *p1 = store_fmt("%s/%s", base, h->d_name);
        DIR *d1 = open_real_dir(p1);
        struct dirent *ns;
        while (d1 && (ns = readdir(d1))) {
            if (ns->d_name[0] == '.') continue;
            char *p2 = store_fmt("%s/%s", p1, ns->d_name);
            DIR *d2 = open_real_dir(p2);
            struct dirent *mo;
            while (d2 && (mo = readdir(d2))) {
                if (mo->d_name[0] == '.') continue;
                char *p3 = store_fmt("%s/%s", p2, mo->d_name);
                DIR *d3 = open_real_dir(p3);
                struct dirent *tg;
                while (d3 && (tg = readdir(d3))) {
                    if (tg->d_name[0] == '.') continue;
                    char *text = store_fmt("%s/%s/%s:%s", h->d_name, ns->d_name, mo->d_name, tg->d_name);
                    char *path = store_fmt("%s/%s", p3, tg->d_name);
                    store_name n;
                    if (text && path && file_exists(path) && store_name_parse(text, &n) == 0) fn(&n, path, user);
                    free(text);
                    free(path);
                }
                if (d3) closedir(d3);
                free(p3);
            }
            if (d2) closedir(d2);
            free(p2);
        }
        if (d1) closedir(d1);
        free(p1);
    }
    closedir(d0);
    free(base);
    return 0;
}

typedef struct {
    store *s;
    store_entry *e;
    int n, cap;
    bool read_only;
    int n_writable;   /* entries [0, n_writable) come from the writable root */
} list_ctx;

static void list_add(const store_name *n, const char *path, void *user) {
    list_ctx *c = user;
    if (c->read_only)
        for (int i = 0; i < c->n_writable; i++)
            if (!memcmp(&c->e[i].parsed, n, sizeof *n)) return;  /* the writable one wins */
    if (c->n == c->cap) {
        int cap = c->cap ? c->cap * 2 : 16;
        store_entry *ne = realloc(c->e, sizeof *ne * (size_t)cap);
        if (!ne) return;
        c->e = ne;
        c->cap = cap;
    }
    if (load_entry(c->s, n, path, c->read_only, false, &c->e[c->n]) == 0) c->n++;
}

static int by_modified_desc(const void *a, const void *b) {
    const store_entry *x = a, *y = b;
    if (x->modified != y->modified) return x->modified > y->modified ? -1 : 1;
    return strcmp(x->name, y->name);
}

int store_list(store *s, store_entry **out, int *n_out) {
    list_ctx c = {.s = s};
    store_lk lk;
    if (store_lock_acquire(s, false, false, &lk) != 0) return -1;
    /* the parsed names are compared with memcmp: zeroed padding makes that exact */
    walk_manifests(s->root, list_add, &c);
    c.n_writable = c.n;
    if (s->ollama_root) {
        c.read_only = true;
        walk_manifests(s->ollama_root, list_add, &c);
    }
    store_lock_release(&lk);
    if (c.n) qsort(c.e, (size_t)c.n, sizeof *c.e, by_modified_desc);
    *out = c.e;
    *n_out = c.n;
    return 0;
}

/* ---- remove, copy, prune ---- */

static int remove_locked(store *s, const char *name);

/* Exclusive: no create or pull may look the model up or commit a manifest sharing its
 * blobs between the unlink and the prune. */
int store_remove(store *s, const char *name) {
    store_lk lk;
    if (store_lock_acquire(s, true, false, &lk) != 0) return -1;
    int rc = remove_locked(s, name);
    store_lock_release(&lk);
    return rc;
}

static int remove_locked(store *s, const char *name) {
    store_name n;
    if (store_name_parse(name, &n) != 0) return -1;
    char *path = store_manifest_path(s->root, &n);
    if (!path) return -1;
    if (!file_exists(path)) {
        free(path);
        char *opath = s->ollama_root ? store_manifest_path(s->ollama_root, &n) : NULL;
        bool in_ollama = file_exists(opath);
        free(opath);
        if (in_ollama)
            anv_set_error("model '%s' is in the Ollama store %s, which anvil never modifies (use 'ollama rm %s')",
                          name, s->ollama_root, name);
        else
            anv_set_error("model '%s' not found", name);
        return -1;
    }
    size_t mlen = 0;
    char *mjson = anv_read_file(path, MANIFEST_MAX, &mlen);
    char **layers = NULL;
    int n_layers = 0;
    if (mjson) store_manifest_digests(mjson, mlen, &layers, &n_layers);  /* damaged: prune nothing */
    free(mjson);
    if (unlink(path) != 0) {
        anv_set_error("cannot remove %s: %s", path, strerror(errno));
        free(path);
        store_digests_free(layers, n_layers);
        return -1;
    }
    /* drop the directories left empty: tag's, model's, namespace's, host's */
    for (int up = 0; up < 3; up++) {
        char *slash = strrchr(path, '/');
        if (!slash) break;
        *slash = 0;
        if (rmdir(path) != 0) break;
    }
    free(path);
    if (store_prune_layers(s, (const char *const *)layers, n_layers) < 0)
        anv_log("removed '%s', but pruning its unused blobs failed: %s", name, anv_last_error());
    store_digests_free(layers, n_layers);
    return 0;
}

int store_copy(store *s, const char *src, const char *dst) {
    store_name dn;
    if (store_name_parse(dst, &dn) != 0) return -1;
    store_lk lk;
    if (store_lock_acquire(s, false, true, &lk) != 0) return -1;
    store_entry e;
    char *json = NULL;
    size_t len = 0;
    int rc = -1;
    if (store_lookup(s, src, &e) == 0) {
        json = anv_read_file(e.manifest_path, MANIFEST_MAX, &len);
        store_entry_clear(&e);
        if (json) rc = store_write_manifest_raw(s, dst, json, len);
    }
    free(json);
    store_lock_release(&lk);
    return rc;
}

typedef struct {
    store *s;
    char (*digests)[DIGEST_STR_LEN + 1];
    int n, cap;
    bool failed;
} refs_ctx;

static void refs_add1(refs_ctx *c, const char *digest) {
    if (c->n == c->cap) {
        int cap = c->cap ? c->cap * 2 : 64;
        void *nd = realloc(c->digests, (size_t)cap * sizeof *c->digests);
        if (!nd) { c->failed = true; anv_set_error("out of memory"); return; }
        c->digests = nd;
        c->cap = cap;
    }
    memcpy(c->digests[c->n++], digest, DIGEST_STR_LEN + 1);
}

static void refs_add(const store_name *n, const char *path, void *user) {
    (void)n;
    refs_ctx *c = user;
    size_t len = 0;
    char *json = anv_read_file(path, MANIFEST_MAX, &len);
    store_manifest m;
    /* a manifest that cannot be read could reference anything: prune nothing */
    if (!json || store_manifest_parse(json, len, path, &m) != 0) { free(json); c->failed = true; return; }
    free(json);
    if (m.config.digest[0]) refs_add1(c, m.config.digest);
    for (int i = 0; i < m.n_layers; i++) refs_add1(c, m.layers[i].digest);
    store_manifest_free(&m);
}

static bool is_blob_name(const char *name, const char **rest) {
    if (strncmp(name, "sha256-", 7) != 0) return false;
    for (int i = 0; i < DIGEST_HEX_LEN; i++) {
        char c = name[7 + i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    *rest = name + 7 + DIGEST_HEX_LEN;
    return true;
}

static int prune_locked(store *s);

int store_prune(store *s) {
    store_lk lk;
    if (store_lock_acquire(s, true, false, &lk) != 0) return -1;
    int rc = prune_locked(s);
    store_lock_release(&lk);
    return rc;
}

int store_clean_stale(store *s) {
    store_lk lk;
    int t = store_lock_try_exclusive(s, &lk);
    if (t != 0) return t < 0 ? -1 : 0;  /* busy: a writer is at work; the next round */
    int rc = store_clean_temporaries(s, 0);
    store_lock_release(&lk);
    return rc;
}

int store_startup_clean(store *s) {
    const char *np = getenv("ANVIL_NOPRUNE"), *onp = getenv("OLLAMA_NOPRUNE");
    bool noprune = (np && *np && strcmp(np, "0")) || (onp && *onp && strcmp(onp, "0"));
    store_lk lk;
    int t = store_lock_try_exclusive(s, &lk);
    if (t != 0) return t < 0 ? -1 : 0;  /* busy: another process is writing; it is its turn */
    int rc = noprune ? store_clean_temporaries(s, 0) : prune_locked(s);
    store_lock_release(&lk);
    return rc;
}

static int prune_locked(store *s) {
    refs_ctx c = {.s = s};
    walk_manifests(s->root, refs_add, &c);
    if (c.failed) { free(c.digests); return -1; }
    char *dir = store_fmt("%s/blobs", s->root);
    DIR *d = dir ? opendir(dir) : NULL;
    if (!d) { free(c.digests); free(dir); return store_clean_temporaries(s, 0); }
    int removed = 0;
    time_t now = time(NULL);
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *rest = NULL;
        bool blob = is_blob_name(de->d_name, &rest);
        bool unused = false;
        if (blob && !*rest) {
            unused = true;
            for (int i = 0; i < c.n && unused; i++)
                if (!strcmp(c.digests[i] + 7, de->d_name + 7)) unused = false;
            /* unreferenced: an upload its create has not used yet is younger than the grace */
            char *p = unused ? store_fmt("%s/%s", dir, de->d_name) : NULL;
            struct stat st;
            if (unused) unused = p && stat(p, &st) == 0 && now - st.st_mtime > STORE_GRACE_SECONDS;
            free(p);
        } else if (blob && !strncmp(rest, "-partial", 8)) {
            char *p = store_fmt("%s/%s", dir, de->d_name);
            struct stat st;
            unused = p && stat(p, &st) == 0 && S_ISREG(st.st_mode) && now - st.st_mtime > STALE_SECONDS &&
                     !store_file_held(p);
            free(p);
        }
        if (!unused) continue;
        char *p = store_fmt("%s/%s", dir, de->d_name);
        if (p && unlink(p) == 0) {
            removed++;
            if (blob && !*rest) wcache_remove_digest(de->d_name); /* its repack cache files */
        }
        free(p);
    }
    closedir(d);
    free(dir);
    free(c.digests);
    return removed + store_clean_temporaries(s, 0);
}

int store_manifest_digests(const char *manifest_json, size_t len, char ***out, int *n_out) {
    *out = NULL;
    *n_out = 0;
    store_manifest m;
    if (store_manifest_parse(manifest_json, len, "manifest", &m) != 0) return -1;
    char **d = calloc((size_t)m.n_layers + 1, sizeof *d);
    int n = 0;
    if (!d) { store_manifest_free(&m); anv_set_error("out of memory"); return -1; }
    if (m.config.digest[0]) d[n++] = strdup(m.config.digest);
    for (int i = 0; i < m.n_layers; i++) d[n++] = strdup(m.layers[i].digest);
    store_manifest_free(&m);
    for (int i = 0; i < n; i++)
        if (!d[i]) { store_digests_free(d, n); anv_set_error("out of memory"); return -1; }
    *out = d;
    *n_out = n;
    return 0;
}

void store_digests_free(char **d, int n) {
    for (int i = 0; i < n; i++) free(d[i]);
    free(d);
}

int store_prune_layers(store *s, const char *const *digests, int n) {
    if (n <= 0) return 0;
    store_lk lk;
    if (store_lock_acquire(s, true, false, &lk) != 0) return -1;
    refs_ctx c = {.s = s};
    walk_manifests(s->root, refs_add, &c);
    if (c.failed) { free(c.digests); store_lock_release(&lk); return -1; }
    int removed = 0;
    for (int i = 0; i < n; i++) {
        if (!digest_valid(digests[i], false)) continue;
        bool used = false;
        for (int k = 0; k < c.n && !used; k++) used = !strcmp(c.digests[k], digests[i]);
        if (used) continue;
        char *p = store_blob_path(s, digests[i]);
        if (p && unlink(p) == 0) {
            removed++;
            wcache_remove_digest(digests[i]); /* the CPU backend's repack cache of the model */
        }
        free(p);
    }
    free(c.digests);
    store_lock_release(&lk);
    return removed;
}
