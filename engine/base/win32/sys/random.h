/* sys/random.h (Windows build): getrandom over BCryptGenRandom (engine/base/platform_win.c). */
#ifndef ANVIL_WIN_SYS_RANDOM_H
#define ANVIL_WIN_SYS_RANDOM_H
#include <stddef.h>
#include <sys/types.h>
#define GRND_NONBLOCK 1
ssize_t getrandom(void *buf, size_t n, unsigned flags);
#endif
