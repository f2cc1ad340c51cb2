/* testutil: shared helpers for the C unit tests (see testutil.h). */
#include "testutil.h"

#include "readfile.h"
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int tu_passed, tu_failed;

int tu_finish(void) {
    printf("%d passed, %d failed\n", tu_passed, tu_failed);
    return tu_failed == 0 && tu_passed > 0 ? 0 : 1;
}

uint64_t tu_rand_u64(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

float tu_rand_f32(uint64_t *s, float lo, float hi) {
    return lo + (hi - lo) * (float)((tu_rand_u64(s) >> 40) * (1.0 / 16777216.0));
}

float tu_max_abs_diff(const float *a, const float *b, int64_t n) {
    float m = 0;
    for (int64_t i = 0; i < n; i++) { float d = fabsf(a[i] - b[i]); if (!(d <= m)) m = d; }
    return m;
}

float tu_rel_err(const float *a, const float *b, int64_t n) {
    float mb = 0;
    for (int64_t i = 0; i < n; i++) if (fabsf(b[i]) > mb) mb = fabsf(b[i]);
    return tu_max_abs_diff(a, b, n) / (mb > 0 ? mb : 1);
}

char *tu_read_file(const char *path, size_t *len) { return anv_read_file(path, (size_t)1 << 30, len); }

/* rm -r without a shell (the Windows tests run under Wine): lstat where there are links,
 * so a link to a folder is removed, never followed. */
int tu_rmtree(const char *path) {
    struct stat st;
#ifdef _WIN32
    if (stat(path, &st) != 0) return -1;
#else
    if (lstat(path, &st) != 0) return -1;
#endif
    if (!S_ISDIR(st.st_mode)) return unlink(path);
    int rc = 0;
    DIR *d = opendir(path);
    if (!d) return -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        size_t n = strlen(path) + strlen(e->d_name) + 2;
        char *sub = malloc(n);
        if (!sub) { rc = -1; break; }
        snprintf(sub, n, "%s/%s", path, e->d_name);
        if (tu_rmtree(sub) != 0) rc = -1;
        free(sub);
    }
    closedir(d);
    if (rmdir(path) != 0) rc = -1;
    return rc;
}

int tu_tmpdir_done(const char *dir) {
    if (tu_failed) {
        fprintf(stderr, "kept %s (a check failed)\n", dir);
        return 0;
    }
    if (tu_rmtree(dir) != 0) {
        fprintf(stderr, "could not remove %s\n", dir);
        return -1;
    }
    return 0;
}
