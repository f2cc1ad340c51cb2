/* sys/mman.h (Windows build): mmap/munmap of whole read-only file views over
 * CreateFileMapping/MapViewOfFile (engine/base/platform_win.c), what gguf.c maps models with. */
#ifndef ANVIL_WIN_SYS_MMAN_H
#define ANVIL_WIN_SYS_MMAN_H
#include <stddef.h>
#include <stdint.h>
#define PROT_NONE 0
#define PROT_READ 1
#define PROT_WRITE 2
#define MAP_SHARED 1
#define MAP_PRIVATE 2
#define MAP_POPULATE 0
#define MAP_FAILED ((void *)-1)
#define MADV_NORMAL 0
#define MADV_RANDOM 1
#define MADV_SEQUENTIAL 2
#define MADV_WILLNEED 3
#define MADV_DONTNEED 4
void *mmap(void *addr, size_t len, int prot, int flags, int fd, int64_t off);
int munmap(void *addr, size_t len);
int madvise(void *addr, size_t len, int advice);
#endif
