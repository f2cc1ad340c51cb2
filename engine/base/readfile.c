/* readfile: anv_read_file (see readfile.h). */
#include "readfile.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

char *anv_read_file(const char *path, size_t max, size_t *len_out) {
    FILE *f = fopen(path, "rb");
    if (!f) { anv_set_error("cannot open %s: %s", path, strerror(errno)); return NULL; }
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
