/* weight_cache: the repack cache's folder, settings, file names, removal and size bound
 * (see weight_cache.h). */
#include "weight_cache.h"
#include "error.h"
#include "hash.h"
#include "settings.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef _WIN32
#include <sys/utime.h>
#endif

#ifndef O_BINARY
#define O_BINARY 0
#endif

#define WCACHE_TMP_MAX_AGE_S 3600

/* A decimal size setting in units of `unit` bytes: 0, or -1 + error. */
static int size_setting(const char *name, double unit, const char *example, uint64_t *out) {
    const char *v = anv_setting_raw(name);
    if (!v || !*v) return 0;
    char *end = NULL;
    errno = 0;
    const double x = strtod(v, &end);
    if (errno || end == v || *end || !(x >= 0) || x > 1e15 / unit) {
        anv_set_error("%s=%s is not a size in %s (e.g. %s)", name, v, unit == 1e9 ? "GB" : "MB", example);
        return -1;
    }
    *out = (uint64_t)(x * unit);
    return 0;
}

int wcache_settings(wcache_config *out) {
    out->enabled = true;
    out->max_bytes = (uint64_t)(WCACHE_DEFAULT_MAX_GB * 1e9);
    out->min_bytes = (uint64_t)(WCACHE_DEFAULT_MIN_MB * 1e6);
    const char *on = anv_setting_raw("ANVIL_REPACK_CACHE");
    if (on && *on) {
        if (!strcmp(on, "0")) out->enabled = false;
        else if (strcmp(on, "1") != 0) {
            anv_set_error("ANVIL_REPACK_CACHE=%s is not 0 or 1 (0: repack at every start, keep no cache file)", on);
            return -1;
        }
    }
    if (size_setting("ANVIL_REPACK_CACHE_MAX_GB", 1e9, "20, 0.5", &out->max_bytes) != 0) return -1;
    return size_setting("ANVIL_REPACK_CACHE_MIN_MB", 1e6, "64, 0", &out->min_bytes);
}

int wcache_dir(char *out, size_t cap) {
    const char *dir = anv_setting_get("ANVIL_REPACK_CACHE_DIR");
    char cache[4096];
    int n;
    if (dir) n = snprintf(out, cap, "%s", dir);
    else if (anv_user_cache_dir(cache, sizeof cache)) n = snprintf(out, cap, "%s/anvil/repack", cache);
    else {
        anv_set_error("repack cache: no folder (set ANVIL_REPACK_CACHE_DIR, XDG_CACHE_HOME or HOME)");
        return -1;
    }
    if (n < 0 || (size_t)n >= cap) { anv_set_error("repack cache: folder name too long"); return -1; }
    return 0;
}

int wcache_mkdirs(const char *dir) {
    char p[4096];
    if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) { anv_set_error("repack cache: folder name too long"); return -1; }
    for (char *q = p + 1;; q++) {
        if (*q != '/' && *q) continue;
        const char c = *q;
        *q = 0;
        if (mkdir(p, 0755) != 0 && errno != EEXIST) {
            anv_set_error("cannot create directory %s: %s", p, strerror(errno));
            return -1;
        }
        if (!c) break;
        *q = c;
    }
    return 0;
}

int wcache_create_temp(const char *final_path, char **tmp_out) {
    static int counter;
    const size_t n = strlen(final_path) + 48;
    char *tmp = malloc(n);
    if (!tmp) { anv_set_error("out of memory"); return -1; }
    for (int attempt = 0; attempt < 100; attempt++) {
        const int k = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
        snprintf(tmp, n, "%s.%s-%d.tmp", final_path, anv_process_tag(), k);
        const int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_BINARY, 0644);
        if (fd >= 0) { *tmp_out = tmp; return fd; }
        if (errno != EEXIST) {
            anv_set_error("cannot create %s: %s", tmp, strerror(errno));
            break;
        }
    }
    free(tmp);
    return -1;
}

void wcache_touch_fd(int fd) {
#ifdef _WIN32
    _futime(fd, NULL);
#else
    futimens(fd, NULL);
#endif
}

static bool has_suffix(const char *s, const char *suffix) {
    const size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

typedef struct { char *path; uint64_t bytes; time_t mtime; } wc_file;

static int by_age(const void *a, const void *b) {
    const wc_file *x = a, *y = b;
    if (x->mtime != y->mtime) return x->mtime < y->mtime ? -1 : 1;
    return strcmp(x->path, y->path);
}

int wcache_prune(const char *dir, uint64_t max_bytes, uint64_t incoming, const char *keep) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    wc_file *files = NULL;
    int n = 0, cap = 0, removed = 0;
    uint64_t total = 0;
    const time_t now = time(NULL);
    struct dirent *de;
    while ((de = readdir(d))) {
        const bool cache = has_suffix(de->d_name, WCACHE_EXT), tmp = has_suffix(de->d_name, ".tmp") && strstr(de->d_name, WCACHE_EXT ".");
        if (!cache && !tmp) continue;
        const size_t plen = strlen(dir) + strlen(de->d_name) + 2;
        char *p = malloc(plen);
        if (!p) break;
        snprintf(p, plen, "%s/%s", dir, de->d_name);
        struct stat st;
        if (stat(p, &st) != 0 || !S_ISREG(st.st_mode)) { free(p); continue; }
        if (tmp) { /* a writer finishes within minutes; an hour-old temporary is a crashed one's */
            if (now - st.st_mtime > WCACHE_TMP_MAX_AGE_S && unlink(p) == 0) removed++;
            free(p);
            continue;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 32;
            wc_file *f = realloc(files, (size_t)cap * sizeof *f);
            if (!f) { free(p); break; }
            files = f;
        }
        files[n++] = (wc_file){p, (uint64_t)st.st_size, st.st_mtime};
        total += (uint64_t)st.st_size;
    }
    closedir(d);
    if (n > 1) qsort(files, (size_t)n, sizeof *files, by_age);
    for (int i = 0; i < n && total + incoming > max_bytes; i++) {
        if (keep && !strcmp(files[i].path, keep)) continue;
        /* a process that has the file mapped keeps its pages (POSIX); on Windows the
         * delete of a mapped file fails and the file stays until a later prune */
        if (unlink(files[i].path) == 0) { total -= files[i].bytes; removed++; }
    }
    for (int i = 0; i < n; i++) free(files[i].path);
    free(files);
    return removed;
}

/* The 64 hex digits of a "sha256:<hex>" / "sha256-<hex>" digest, or NULL. */
static const char *digest_hex(const char *digest) {
    if (!digest || strncmp(digest, "sha256", 6) != 0 || (digest[6] != ':' && digest[6] != '-')) return NULL;
    const char *h = digest + 7;
    for (int i = 0; i < 64; i++)
        if (!((h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f'))) return NULL;
    return h[64] == 0 ? h : NULL;
}

/* Deletes the cache files "sha256-<hex>.*.rpk" of dir. */
static int remove_blob_files(const char *dir, const char *hex_wanted) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int removed = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *name = de->d_name;
        if (strncmp(name, "sha256-", 7) != 0 || strlen(name) < 7 + 64 + 1 || name[7 + 64] != '.' || !has_suffix(name, WCACHE_EXT))
            continue;
        if (memcmp(name + 7, hex_wanted, 64) != 0) continue;
        const size_t plen = strlen(dir) + strlen(name) + 2;
        char *p = malloc(plen);
        if (!p) break;
        snprintf(p, plen, "%s/%s", dir, name);
        if (unlink(p) == 0) removed++;
        free(p);
    }
    closedir(d);
    return removed;
}

int wcache_remove_digest(const char *digest) {
    const char *hex = digest_hex(digest);
    char dir[4096];
    if (!hex || wcache_dir(dir, sizeof dir) != 0) return 0;
    return remove_blob_files(dir, hex);
}
