/* readfile: a whole (bounded) file into memory, the one way the engine and the tools read
 * manifests, templates, reference dumps and other small files. */
#ifndef ANVIL_READFILE_H
#define ANVIL_READFILE_H
#include <stddef.h>

/* The file's bytes plus a terminating NUL (malloc'd; *len_out = the size if len_out), or
 * NULL with anv_last_error() naming the file: cannot open, cannot read, or larger than max. */
char *anv_read_file(const char *path, size_t max, size_t *len_out);
#endif
