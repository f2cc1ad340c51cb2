/* readfile: anv_read_file (see readfile.h). */
#include "readfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"

static const char *file_kind(mode_t m) {
    return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket"
         : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device" : "not a plain file";
}

int anv_open_regular(const char *path, long long *size_out) {
    if (!path || !*path) { anv_set_error("no file name given"); return -1; }
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) { anv_set_error("%s: cannot open: %s", path, strerror(errno)); return -1; }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        anv_set_error("%s: cannot stat: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        anv_set_error("%s: not a regular file (%s)", path, file_kind(st.st_mode));
        close(fd);
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        anv_set_error("%s: cannot open: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (size_out) *size_out = (long long)st.st_size;
    return fd;
}

/* Reads fd (owned: closed) to its end, at most max bytes. */
static char *read_fd(int fd, const char *path, size_t max, size_t *len_out) {
    FILE *f = fdopen(fd, "rb");
    if (!f) { anv_set_error("cannot open %s: %s", path, strerror(errno)); close(fd); return NULL; }
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (len + 1 >= cap) {
            if (cap > max + 1) break;
            char *nb = realloc(buf, cap * 2);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb;
            cap *= 2;
        }
        size_t r = fread(buf + len, 1, cap - 1 - len, f);
        len += r;
        if (r == 0) break;
    }
    bool err = ferror(f);
    fclose(f);
    if (!buf) { anv_set_error("out of memory reading %s", path); return NULL; }
    if (err) { free(buf); anv_set_error("cannot read %s", path); return NULL; }
    if (len > max) { free(buf); anv_set_error("%s is larger than %zu bytes", path, max); return NULL; }
    buf[len] = 0;
    if (len_out) *len_out = len;
    return buf;
}

char *anv_read_file(const char *path, size_t max, size_t *len_out) {
    int fd = anv_open_regular(path, NULL);
    if (fd < 0) return NULL;
    return read_fd(fd, path, max, len_out);
}

char *anv_read_user_file(const char *path, size_t max, size_t *len_out) {
    if (!path || !*path) { anv_set_error("no file name given"); return NULL; }
    const bool is_stdin = strcmp(path, "-") == 0;
    int fd = is_stdin ? dup(0) : open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) { anv_set_error("%s: cannot open: %s", is_stdin ? "standard input" : path, strerror(errno)); return NULL; }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        anv_set_error("%s: cannot stat: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    /* standard input may be a terminal or a pipe; a named file a regular file or a pipe */
    if (S_ISDIR(st.st_mode) || (!is_stdin && !S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode))) {
        anv_set_error("%s: not a regular file or a pipe (%s)", path, file_kind(st.st_mode));
        close(fd);
        return NULL;
    }
    return read_fd(fd, is_stdin ? "standard input" : path, max, len_out);
}
