/* anvil_win: the POSIX names Anvil uses that mingw-w64's C runtime lacks or gets wrong,
 * force-included (-include) into every file of the Windows build only (tools/windows/
 * windows.cmake); implemented over Win32 in engine/base/platform_win.c, paths as UTF-8
 * converted to UTF-16 for the W APIs. The sibling headers (sys/mman.h, dlfcn.h, poll.h,
 * sys/socket.h, ...) stand in for POSIX headers Windows does not have. Semantics kept:
 * rename replaces its target (MoveFileExW), flock is a LockFileEx lock far past the end
 * of the file (so it never blocks reading the data), pread/pwrite are positional (no
 * shared offset), HOME and XDG_CACHE_HOME fall back to %USERPROFILE% and %LOCALAPPDATA%. */
#ifndef ANVIL_WIN_H
#define ANVIL_WIN_H
#ifdef _WIN32
#ifndef _POSIX_THREAD_SAFE_FUNCTIONS
#define _POSIX_THREAD_SAFE_FUNCTIONS 200112L /* gmtime_r / localtime_r in time.h */
#endif
#include <direct.h>
#include <fcntl.h>
#include <io.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#ifdef __cplusplus
extern "C" {
#endif

/* open(2) flags Windows has no counterpart for (descriptors are not inherited by
 * default through the CRT; there are no FIFOs or terminals to guard against). */
#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif
#ifndef O_NOFOLLOW
#define O_NOFOLLOW 0
#endif
#ifndef O_NOCTTY
#define O_NOCTTY 0
#endif
#ifndef O_NONBLOCK
#define O_NONBLOCK 0
#endif
#ifndef O_DIRECTORY
#define O_DIRECTORY 0
#endif
#define F_GETFL 3
#define F_SETFL 4
int anvil_fcntl(int fd, int cmd, ...);
#define fcntl anvil_fcntl
#ifndef S_ISSOCK
#define S_ISSOCK(m) 0
#endif
#ifndef S_ISLNK
#define S_ISLNK(m) 0
#endif
#ifndef S_IFLNK
#define S_IFLNK 0
#endif
#define lstat stat
#ifndef EWOULDBLOCK
#define EWOULDBLOCK EAGAIN
#endif

/* flock(2) */
#define LOCK_SH 1
#define LOCK_EX 2
#define LOCK_NB 4
#define LOCK_UN 8
int flock(int fd, int op);

int anvil_mkdir(const char *path);
#define mkdir(path, mode) anvil_mkdir(path)
int anvil_rename(const char *from, const char *to);
#define rename anvil_rename
int fsync(int fd);
ssize_t pread(int fd, void *buf, size_t n, int64_t off);
ssize_t pwrite(int fd, const void *buf, size_t n, int64_t off);
char *realpath(const char *path, char *resolved);
char *mkdtemp(char *tmpl);

#define _SC_NPROCESSORS_ONLN 84
#define _SC_NPROCESSORS_CONF 83
#define _SC_PAGESIZE 30
#define _SC_PAGE_SIZE _SC_PAGESIZE
long sysconf(int name);

void *memmem(const void *hay, size_t hn, const void *needle, size_t nn);
char *strndup(const char *s, size_t n);
#ifndef strtok_r
char *strtok_r(char *s, const char *delim, char **save);
#endif
ssize_t getline(char **line, size_t *cap, FILE *f);
int setenv(const char *name, const char *value, int overwrite);
int unsetenv(const char *name);
char *anvil_getenv(const char *name);   /* engine/base/settings.c: HOME, XDG_CACHE_HOME fallbacks */
#define getenv anvil_getenv

/* aligned_alloc: C11, absent from msvcrt, whose _aligned_malloc blocks cannot be given to
 * free(). Every caller frees with free(), and no kernel needs more than malloc's 16 bytes
 * (unaligned SIMD loads and stores throughout): the block is malloc's, 16-byte aligned. */
void *anvil_aligned_alloc(size_t align, size_t n);
#define aligned_alloc anvil_aligned_alloc

/* open_memstream: a temporary file whose contents are copied to *ptr / *size at every
 * fflush and at fclose (both redirected here; other streams pass straight through). */
FILE *open_memstream(char **ptr, size_t *size);
int anvil_fclose(FILE *f);
int anvil_fflush(FILE *f);
#define fclose anvil_fclose
#define fflush anvil_fflush

/* fopen with UTF-8 paths (_wfopen); open() likewise. */
FILE *anvil_fopen(const char *path, const char *mode);
#define fopen anvil_fopen

#define flockfile _lock_file
#define funlockfile _unlock_file

#ifdef __cplusplus
}
#endif
#endif /* _WIN32 */
#endif
