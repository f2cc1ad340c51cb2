/* path: POSIX / Windows path facts (path.h). */
#include "path.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#ifdef _WIN32
static bool is_sep(char c) { return c == '/' || c == '\\'; }
#else
static bool is_sep(char c) { return c == '/'; }
#endif

bool path_is_absolute(const char *p) {
    if (!p || !*p) return false;
#ifdef _WIN32
    if (isalpha((unsigned char)p[0]) && p[1] == ':' && is_sep(p[2])) return true;  /* C:\ C:/ */
    if (is_sep(p[0]) && is_sep(p[1])) return true;                                 /* \\server\share */
#endif
    return p[0] == '/' || is_sep(p[0]);
}

bool path_is_explicit_relative(const char *p) {
    if (!p) return false;
    if ((p[0] == '.' || p[0] == '~') && is_sep(p[1])) return true;
    return p[0] == '.' && p[1] == '.' && is_sep(p[2]);
}

ptrdiff_t path_dir_len(const char *p) {
    ptrdiff_t last = -1;
    for (ptrdiff_t i = 0; p[i]; i++)
        if (is_sep(p[i])) last = i;
    if (last < 0) return -1;
#ifdef _WIN32
    if (last == 2 && p[1] == ':') return 3;   /* C:\x: the folder is C:\ */
#endif
    return last == 0 ? 1 : last;
}

#ifdef _WIN32
/* The full path with one kind of separator and no trailing one, for comparing. */
static char *comparable(const char *p) {
    char *r = realpath(p, NULL);
    if (!r) return NULL;
    size_t n = strlen(r);
    for (size_t i = 0; i < n; i++)
        if (r[i] == '/') r[i] = '\\';
    while (n > 3 && r[n - 1] == '\\') r[--n] = 0;
    return r;
}
#endif

bool path_same_dir(const char *a, const char *b) {
    struct stat sa, sb;
    if (stat(a, &sa) != 0 || stat(b, &sb) != 0) return false;
#ifdef _WIN32
    char *ra = comparable(a), *rb = comparable(b);
    bool same = ra && rb && strcasecmp(ra, rb) == 0;
    free(ra);
    free(rb);
    return same;
#else
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
#endif
}
