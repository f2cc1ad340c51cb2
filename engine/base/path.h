/* path: the file-path facts that differ between POSIX and Windows, in one place: which paths are
 * absolute (C:\ and C:/ and \\server\share on Windows), which spellings are explicitly relative
 * (./ ../, and .\ ..\ on Windows), where a path's folder ends (either slash on Windows), and
 * whether two paths name the same folder (inode on POSIX; MinGW's stat reports inode 0, so the
 * full paths are compared there, case-insensitively). */
#ifndef ANVIL_PATH_H
#define ANVIL_PATH_H
#include <stdbool.h>
#include <stddef.h>

bool path_is_absolute(const char *p);
/* ./x, ../x, ~/x (and .\x, ..\x, ~\x on Windows): a path the user meant as one. */
bool path_is_explicit_relative(const char *p);
/* Length of p's folder part without its last separator ("a/b/c" -> 3), or -1 if p has no
 * separator. A root keeps its separator ("/x" -> 1, "C:\x" -> 3 on Windows). */
ptrdiff_t path_dir_len(const char *p);
/* Both exist and are the same folder (after following links). */
bool path_same_dir(const char *a, const char *b);
#endif
