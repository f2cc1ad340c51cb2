/* readfile: a whole (bounded) file into memory, the one way the engine and the tools read
 * manifests, templates, reference dumps and other small files. */
#ifndef ANVIL_READFILE_H
#define ANVIL_READFILE_H
#include <stddef.h>

/* The file's bytes plus a terminating NUL (malloc'd; *len_out = the size if len_out), or
 * NULL with anv_last_error() naming the file: cannot open, cannot read, or larger than max. */
char *anv_read_file(const char *path, size_t max, size_t *len_out);
/* The same for a file the user names on the command line (a Modelfile): a regular file, a pipe
 * or FIFO (a shell's process substitution, <(...)), or "-" for standard input. Directories,
 * devices and sockets are refused. Never for a path that arrives over HTTP or a model's
 * weights: those go through anv_read_file / anv_open_regular. */
char *anv_read_user_file(const char *path, size_t max, size_t *len_out);

/* The one way a model, blob, Modelfile, template or other input file is opened: read-only,
 * with O_NONBLOCK so a FIFO or device cannot block the open, then fstat: anything but a
 * regular file (FIFO, socket, device, directory) is refused with a one-line error
 * ("PATH: not a regular file (a FIFO)"). The descriptor is returned blocking again, with
 * O_CLOEXEC; *size_out (if given) gets the file size. -1 + anv_last_error() on failure. */
int anv_open_regular(const char *path, long long *size_out);
#endif
