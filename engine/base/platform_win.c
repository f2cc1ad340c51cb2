/* platform_win: the Win32 implementations behind the Windows build's POSIX shims
 * (engine/base/win32/anvil_win.h and its sibling headers): file mapping, flock, positional
 * I/O, rename-over, UTF-8 <-> UTF-16 paths, dlopen, getrandom, the memstream stand-in,
 * HOME/XDG fallbacks, and the process set-up (Winsock, a UTF-8 console, binary stdio).
 * Compiled empty on every other platform. */
#ifdef _WIN32
#include <windows.h>
#include <bcrypt.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include <winsock2.h>

#include <dlfcn.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/random.h>

#undef fopen
#undef fclose
#undef fflush
#undef rename
#undef mkdir
#undef fcntl

/* ---- UTF-8 <-> UTF-16 ---- */

/* A malloc'd UTF-16 copy of a UTF-8 string (NULL + errno on bad input). */
static wchar_t *wide(const char *s) {
    int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, NULL, 0);
    if (n <= 0) { errno = EINVAL; return NULL; }
    wchar_t *w = malloc((size_t)n * sizeof *w);
    if (!w) { errno = ENOMEM; return NULL; }
    MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, w, n);
    return w;
}

static char *narrow(const wchar_t *w) {
    int n = WideCharToMultiByte(CP_UTF8, 0, w, -1, NULL, 0, NULL, NULL);
    if (n <= 0) return NULL;
    char *s = malloc((size_t)n);
    if (s) WideCharToMultiByte(CP_UTF8, 0, w, -1, s, n, NULL, NULL);
    return s;
}

static void set_errno_from_win(DWORD e) {
    switch (e) {
    case ERROR_FILE_NOT_FOUND: case ERROR_PATH_NOT_FOUND: errno = ENOENT; break;
    case ERROR_ACCESS_DENIED: case ERROR_SHARING_VIOLATION: errno = EACCES; break;
    case ERROR_ALREADY_EXISTS: case ERROR_FILE_EXISTS: errno = EEXIST; break;
    case ERROR_LOCK_VIOLATION: case ERROR_IO_PENDING: errno = EWOULDBLOCK; break;
    case ERROR_NOT_ENOUGH_MEMORY: case ERROR_OUTOFMEMORY: errno = ENOMEM; break;
    case ERROR_DISK_FULL: case ERROR_HANDLE_DISK_FULL: errno = ENOSPC; break;
    case ERROR_DIR_NOT_EMPTY: errno = ENOTEMPTY; break;
    default: errno = EIO; break;
    }
}

FILE *anvil_fopen(const char *path, const char *mode) {
    wchar_t *wp = wide(path), *wm = wide(mode);
    FILE *f = NULL;
    if (wp && wm) f = _wfopen(wp, wm);
    free(wp);
    free(wm);
    return f;
}

int anvil_mkdir(const char *path) {
    wchar_t *w = wide(path);
    if (!w) return -1;
    int r = _wmkdir(w);
    free(w);
    return r;
}

int anvil_rename(const char *from, const char *to) {
    wchar_t *a = wide(from), *b = wide(to);
    int r = -1;
    if (a && b) {
        if (MoveFileExW(a, b, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)) r = 0;
        else set_errno_from_win(GetLastError());
    }
    free(a);
    free(b);
    return r;
}

char *realpath(const char *path, char *resolved) {
    wchar_t *w = wide(path);
    if (!w) return NULL;
    wchar_t full[32768];
    DWORD n = GetFullPathNameW(w, 32768, full, NULL);
    free(w);
    if (!n || n >= 32768) { errno = ENAMETOOLONG; return NULL; }
    if (GetFileAttributesW(full) == INVALID_FILE_ATTRIBUTES) { set_errno_from_win(GetLastError()); return NULL; }
    char *s = narrow(full);
    if (!s) { errno = ENOMEM; return NULL; }
    if (!resolved) return s;
    snprintf(resolved, 260, "%s", s);
    free(s);
    return resolved;
}

/* mkdtemp: the XXXXXX replaced by random letters until a new directory is made. */
char *mkdtemp(char *tmpl) {
    size_t n = strlen(tmpl);
    if (n < 6 || strcmp(tmpl + n - 6, "XXXXXX")) { errno = EINVAL; return NULL; }
    static const char abc[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    for (int tries = 0; tries < 100; tries++) {
        unsigned char r[6];
        if (BCryptGenRandom(NULL, r, sizeof r, BCRYPT_USE_SYSTEM_PREFERRED_RNG) != 0) { errno = EIO; return NULL; }
        for (int i = 0; i < 6; i++) tmpl[n - 6 + i] = abc[r[i] % 36];
        if (anvil_mkdir(tmpl) == 0) return tmpl;
        if (errno != EEXIST) return NULL;
    }
    return NULL;
}

/* ---- descriptors ---- */

int anvil_fcntl(int fd, int cmd, ...) {
    (void)fd;
    return cmd == F_GETFL || cmd == F_SETFL ? 0 : (errno = EINVAL, -1);
}

int fsync(int fd) { return _commit(fd); }

static HANDLE os_handle(int fd) { return (HANDLE)_get_osfhandle(fd); }

ssize_t pread(int fd, void *buf, size_t n, int64_t off) {
    HANDLE h = os_handle(fd);
    if (h == INVALID_HANDLE_VALUE) { errno = EBADF; return -1; }
    OVERLAPPED ov = {0};
    ov.Offset = (DWORD)off;
    ov.OffsetHigh = (DWORD)((uint64_t)off >> 32);
    DWORD got = 0, want = n > 0x40000000u ? 0x40000000u : (DWORD)n;
    if (!ReadFile(h, buf, want, &got, &ov)) {
        if (GetLastError() == ERROR_HANDLE_EOF) return 0;
        set_errno_from_win(GetLastError());
        return -1;
    }
    return (ssize_t)got;
}

ssize_t pwrite(int fd, const void *buf, size_t n, int64_t off) {
    HANDLE h = os_handle(fd);
    if (h == INVALID_HANDLE_VALUE) { errno = EBADF; return -1; }
    OVERLAPPED ov = {0};
    ov.Offset = (DWORD)off;
    ov.OffsetHigh = (DWORD)((uint64_t)off >> 32);
    DWORD put = 0, want = n > 0x40000000u ? 0x40000000u : (DWORD)n;
    if (!WriteFile(h, buf, want, &put, &ov)) { set_errno_from_win(GetLastError()); return -1; }
    return (ssize_t)put;
}

/* flock: one byte far past any file's end, so the lock never blocks reading or writing
 * the data through other handles (Windows locks are mandatory); per handle, dropped at
 * close, as flock's are per open file. */
#define FLOCK_OFFSET_HIGH 0x7fffffffu
int flock(int fd, int op) {
    HANDLE h = os_handle(fd);
    if (h == INVALID_HANDLE_VALUE) { errno = EBADF; return -1; }
    OVERLAPPED ov = {0};
    ov.OffsetHigh = FLOCK_OFFSET_HIGH;
    if (op & LOCK_UN) {
        if (!UnlockFileEx(h, 0, 1, 0, &ov)) { set_errno_from_win(GetLastError()); return -1; }
        return 0;
    }
    /* flock converts a held lock; LockFileEx would stack a second one on the same handle */
    UnlockFileEx(h, 0, 1, 0, &ov);
    DWORD fl = (op & LOCK_EX) ? LOCKFILE_EXCLUSIVE_LOCK : 0;
    if (op & LOCK_NB) fl |= LOCKFILE_FAIL_IMMEDIATELY;
    if (!LockFileEx(h, fl, 0, 1, 0, &ov)) {
        DWORD e = GetLastError();
        if (e == ERROR_LOCK_VIOLATION || e == ERROR_IO_PENDING) errno = EWOULDBLOCK;
        else set_errno_from_win(e);
        return -1;
    }
    return 0;
}

/* ---- mmap ---- */

void *mmap(void *addr, size_t len, int prot, int flags, int fd, int64_t off) {
    (void)addr;
    if (prot & PROT_WRITE) { errno = ENOTSUP; return MAP_FAILED; } /* read-only views only */
    HANDLE h = os_handle(fd);
    if (h == INVALID_HANDLE_VALUE) { errno = EBADF; return MAP_FAILED; }
    HANDLE m = CreateFileMappingW(h, NULL, PAGE_READONLY, 0, 0, NULL);
    if (!m) { set_errno_from_win(GetLastError()); return MAP_FAILED; }
    void *p = MapViewOfFile(m, (flags & MAP_PRIVATE) ? FILE_MAP_READ : FILE_MAP_READ, (DWORD)((uint64_t)off >> 32),
                            (DWORD)off, len);
    DWORD e = GetLastError();
    CloseHandle(m); /* the view keeps the mapping alive */
    if (!p) { set_errno_from_win(e); return MAP_FAILED; }
    return p;
}

int munmap(void *addr, size_t len) {
    (void)len;
    return UnmapViewOfFile(addr) ? 0 : (errno = EINVAL, -1);
}

int madvise(void *addr, size_t len, int advice) {
    if (advice == MADV_WILLNEED) {
        WIN32_MEMORY_RANGE_ENTRY r = {addr, len};
        PrefetchVirtualMemory(GetCurrentProcess(), 1, &r, 0);
    }
    return 0;
}

/* ---- dlopen ---- */

static __thread char dl_err[512];

void *dlopen(const char *name, int flags) {
    (void)flags;
    wchar_t *w = wide(name);
    if (!w) { snprintf(dl_err, sizeof dl_err, "%s: not a UTF-8 name", name); return NULL; }
    HMODULE h = LoadLibraryExW(w, NULL, 0);
    free(w);
    if (!h) snprintf(dl_err, sizeof dl_err, "%s: cannot load (Windows error %lu)", name, GetLastError());
    return h;
}

void *dlsym(void *handle, const char *name) {
    FARPROC p = GetProcAddress((HMODULE)handle, name);
    if (!p) snprintf(dl_err, sizeof dl_err, "%s: symbol not found", name);
    void *v;
    memcpy(&v, &p, sizeof v);
    return v;
}

int dlclose(void *handle) { return FreeLibrary((HMODULE)handle) ? 0 : -1; }

char *dlerror(void) {
    if (!dl_err[0]) return NULL;
    static __thread char out[512];
    memcpy(out, dl_err, sizeof out);
    dl_err[0] = 0;
    return out;
}

ssize_t getrandom(void *buf, size_t n, unsigned flags) {
    (void)flags;
    if (BCryptGenRandom(NULL, buf, (ULONG)n, BCRYPT_USE_SYSTEM_PREFERRED_RNG) != 0) { errno = EIO; return -1; }
    return (ssize_t)n;
}

/* ---- libc gaps ---- */

long sysconf(int name) {
    SYSTEM_INFO si;
    GetSystemInfo(&si);
    switch (name) {
    case _SC_NPROCESSORS_ONLN: case _SC_NPROCESSORS_CONF: return (long)si.dwNumberOfProcessors;
    case _SC_PAGESIZE: return (long)si.dwPageSize;
    default: errno = EINVAL; return -1;
    }
}

void *memmem(const void *hay, size_t hn, const void *needle, size_t nn) {
    if (!nn) return (void *)hay;
    const unsigned char *h = hay, *e = h + hn;
    while (hn >= nn) {
        const unsigned char *p = memchr(h, *(const unsigned char *)needle, hn - nn + 1);
        if (!p) return NULL;
        if (!memcmp(p, needle, nn)) return (void *)p;
        h = p + 1;
        hn = (size_t)(e - h);
    }
    return NULL;
}

char *strndup(const char *s, size_t n) {
    size_t l = strnlen(s, n);
    char *d = malloc(l + 1);
    if (!d) return NULL;
    memcpy(d, s, l);
    d[l] = 0;
    return d;
}

#ifndef strtok_r
char *strtok_r(char *s, const char *delim, char **save) {
    if (!s) s = *save;
    s += strspn(s, delim);
    if (!*s) { *save = s; return NULL; }
    char *e = s + strcspn(s, delim);
    if (*e) *e++ = 0;
    *save = e;
    return s;
}
#endif

ssize_t getline(char **line, size_t *cap, FILE *f) {
    size_t n = 0;
    int c;
    if (!*line || !*cap) {
        *cap = 128;
        *line = realloc(*line, *cap);
        if (!*line) return -1;
    }
    while ((c = fgetc(f)) != EOF) {
        if (n + 2 > *cap) {
            char *p = realloc(*line, *cap * 2);
            if (!p) return -1;
            *line = p;
            *cap *= 2;
        }
        (*line)[n++] = (char)c;
        if (c == '\n') break;
    }
    if (!n) return -1;
    (*line)[n] = 0;
    return (ssize_t)n;
}

int setenv(const char *name, const char *value, int overwrite) {
    if (!overwrite && GetEnvironmentVariableA(name, NULL, 0) > 0) return 0;   /* set (reads: settings.c) */
    return _putenv_s(name, value) ? (errno = EINVAL, -1) : 0;
}

int unsetenv(const char *name) { return _putenv_s(name, "") ? (errno = EINVAL, -1) : 0; }

void *anvil_aligned_alloc(size_t align, size_t n) {
    (void)align;
    return malloc(n ? n : 1);
}

/* ---- open_memstream ---- */

typedef struct memstream { FILE *f; char **ptr; size_t *size; struct memstream *next; } memstream;
static memstream *memstreams;
static pthread_mutex_t memstreams_lock = PTHREAD_MUTEX_INITIALIZER;

FILE *open_memstream(char **ptr, size_t *size) {
    wchar_t dir[MAX_PATH + 1], path[MAX_PATH + 1];
    if (!GetTempPathW(MAX_PATH + 1, dir) || !GetTempFileNameW(dir, L"anv", 0, path)) { errno = EIO; return NULL; }
    FILE *f = _wfopen(path, L"w+bTD"); /* temporary, deleted at close */
    if (!f) return NULL;
    memstream *m = calloc(1, sizeof *m);
    if (!m) { fclose(f); errno = ENOMEM; return NULL; }
    *ptr = calloc(1, 1);
    *size = 0;
    m->f = f;
    m->ptr = ptr;
    m->size = size;
    pthread_mutex_lock(&memstreams_lock);
    m->next = memstreams;
    memstreams = m;
    pthread_mutex_unlock(&memstreams_lock);
    return f;
}

static memstream *memstream_find(FILE *f, bool unlink_it) {
    pthread_mutex_lock(&memstreams_lock);
    memstream **pp = &memstreams;
    while (*pp && (*pp)->f != f) pp = &(*pp)->next;
    memstream *m = *pp;
    if (m && unlink_it) *pp = m->next;
    pthread_mutex_unlock(&memstreams_lock);
    return m;
}

/* Copies the stream's whole contents to *ptr (NUL-terminated) and *size. */
static int memstream_sync(memstream *m) {
    if (fflush(m->f)) return EOF;
    long pos = ftell(m->f);
    if (pos < 0 || fseek(m->f, 0, SEEK_END)) return EOF;
    long end = ftell(m->f);
    char *p = realloc(*m->ptr, (size_t)end + 1);
    if (!p) return EOF;
    rewind(m->f);
    size_t got = fread(p, 1, (size_t)end, m->f);
    p[got] = 0;
    *m->ptr = p;
    *m->size = got;
    fseek(m->f, pos, SEEK_SET);
    return 0;
}

int anvil_fflush(FILE *f) {
    memstream *m = f ? memstream_find(f, false) : NULL;
    return m ? memstream_sync(m) : fflush(f);
}

int anvil_fclose(FILE *f) {
    memstream *m = memstream_find(f, true);
    int r = 0;
    if (m) { r = memstream_sync(m); free(m); }
    return fclose(f) ? EOF : r;
}

/* ---- process set-up ---- */

/* Before main: Winsock for the server and the clients, a UTF-8 console, and stdio in
 * binary mode (no "\n" -> "\r\n": the output is byte-for-byte what the Linux build writes). */
__attribute__((constructor)) static void anvil_win_init(void) {
    WSADATA wd;
    WSAStartup(MAKEWORD(2, 2), &wd);
    SetConsoleOutputCP(CP_UTF8);
    SetConsoleCP(CP_UTF8);
    _setmode(0, _O_BINARY);
    _setmode(1, _O_BINARY);
    _setmode(2, _O_BINARY);
    _fmode = _O_BINARY;
}
#else
typedef int platform_win_unused; /* ISO C forbids an empty translation unit */
#endif
