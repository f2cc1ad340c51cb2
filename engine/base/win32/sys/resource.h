/* sys/resource.h (Windows build): RLIMIT_NOFILE only. Windows has no per-process descriptor
 * limit for sockets: getrlimit reports one large enough for any connection cap. */
#ifndef ANVIL_WIN_SYS_RESOURCE_H
#define ANVIL_WIN_SYS_RESOURCE_H
typedef unsigned long long rlim_t;
struct rlimit { rlim_t rlim_cur, rlim_max; };
#define RLIMIT_NOFILE 7
#define RLIM_INFINITY (~(rlim_t)0)
static inline int getrlimit(int r, struct rlimit *l) { (void)r; l->rlim_cur = l->rlim_max = 1u << 16; return 0; }
static inline int setrlimit(int r, const struct rlimit *l) { (void)r; (void)l; return 0; }
#endif
