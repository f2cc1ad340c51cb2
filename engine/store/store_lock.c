/* store_lock: the store lock and the clean-up of stale temporaries.
 *
 * The lock is flock(2) on <root>/.anvil-lock, so it serialises threads (each takes its own
 * open file description) and every other process using the same store alike. Shared: lookups,
 * listings, and every writer (create, pull, copy, blob import) from the moment it looks up or
 * writes its first blob until its manifest is committed. Exclusive: pruning (and remove,
 * which prunes). So a prune never runs while a manifest is being written, and no blob a
 * committed or in-progress manifest references is ever removed. Nested takes by the same
 * thread on the same store are counted, not re-locked (a shared holder asking for the
 * exclusive lock is a bug and fails).
 *
 * Temporaries (".anvil-tmp-*" beside blobs and manifests, the server's ".upload-*" spool in
 * the root) are flock'd by their writer while being written; one that nobody holds and that
 * is older than an hour is left over from a crash and removed. */
#include "store_impl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "error.h"

static _Thread_local const store *tl_store;
static _Thread_local int tl_depth;
static _Thread_local bool tl_exclusive;

int store_lock_acquire(store *s, bool exclusive, bool create, store_lk *lk) {
    lk->fd = -1;
    lk->nested = lk->tracked = false;
    if (tl_depth && tl_store == s) {
        if (exclusive && !tl_exclusive) {
            anv_set_error("store: the exclusive lock was asked for while holding the shared one");
            return -1;
        }
        tl_depth++;
        lk->nested = true;
        return 0;
    }
    if (create && store_mkdirs(s->root) != 0) return -1;
    char *path = store_fmt("%s/.anvil-lock", s->root);
    if (!path) return -1;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 && errno != ENOENT) fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        /* no root yet (nothing to protect), or a read-only one: readers go on unlocked */
        if (!create && (e == ENOENT || !exclusive)) { free(path); goto track; }
        anv_set_error("cannot open the store lock %s: %s", path, strerror(e));
        free(path);
        return -1;
    }
    while (flock(fd, exclusive ? LOCK_EX : LOCK_SH) != 0) {
        if (errno == EINTR) continue;
        anv_set_error("cannot lock %s: %s", path, strerror(errno));
        close(fd);
        free(path);
        return -1;
    }
    free(path);
    lk->fd = fd;
track:
    if (!tl_depth) {
        tl_store = s;
        tl_depth = 1;
        tl_exclusive = exclusive;
        lk->tracked = true;
    }
    return 0;
}

int store_lock_try_exclusive(store *s, store_lk *lk) {
    lk->fd = -1;
    lk->nested = lk->tracked = false;
    if (tl_depth && tl_store == s) return store_lock_acquire(s, true, false, lk);
    char *path = store_fmt("%s/.anvil-lock", s->root);
    if (!path) return -1;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    int e = errno;
    free(path);
    if (fd < 0) {
        if (e == ENOENT) return store_lock_acquire(s, true, false, lk);
        anv_set_error("cannot open the store lock: %s", strerror(e));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) { close(fd); return 1; }
    lk->fd = fd;
    if (!tl_depth) {
        tl_store = s;
        tl_depth = 1;
        tl_exclusive = true;
        lk->tracked = true;
    }
    return 0;
}

void store_lock_release(store_lk *lk) {
    if (lk->nested) { tl_depth--; lk->nested = false; return; }
    if (lk->fd >= 0) close(lk->fd);  /* closing drops the flock */
    lk->fd = -1;
    if (lk->tracked) { tl_depth = 0; tl_store = NULL; lk->tracked = false; }
}

/* ---- stale temporaries ---- */

bool store_file_held(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return false;
    bool held = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd);
    return held;
}

static bool is_temp_name(const char *name) {
    return !strncmp(name, STORE_TMP_PREFIX, strlen(STORE_TMP_PREFIX)) || !strncmp(name, ".upload-", 8);
}

/* Removes the stale temporaries of dir; recurse: also in its sub-folders (manifests). */
static int clean_dir(const char *dir, time_t now, int64_t max_age, int depth) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int removed = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        char *p = store_fmt("%s/%s", dir, de->d_name);
        struct stat st;
        if (!p || lstat(p, &st) != 0) { free(p); continue; }
        if (S_ISDIR(st.st_mode) && depth > 0 && de->d_name[0] != '.') removed += clean_dir(p, now, max_age, depth - 1);
        else if (S_ISREG(st.st_mode) && is_temp_name(de->d_name) && (max_age <= 0 || now - st.st_mtime > max_age) &&
                 !store_file_held(p) &&
                 unlink(p) == 0)
            removed++;
        free(p);
    }
    closedir(d);
    return removed;
}

int store_clean_temporaries(store *s, int64_t max_age_s) {
    time_t now = time(NULL);
    int removed = clean_dir(s->root, now, max_age_s, 0);
    char *blobs = store_fmt("%s/blobs", s->root);
    char *manifests = store_fmt("%s/manifests", s->root);
    if (blobs) removed += clean_dir(blobs, now, max_age_s, 0);
    if (manifests) removed += clean_dir(manifests, now, max_age_s, 4);
    free(blobs);
    free(manifests);
    return removed;
}
