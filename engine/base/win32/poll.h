/* poll.h (Windows build): poll over WSAPoll (sockets only, which is all the server polls). */
#ifndef ANVIL_WIN_POLL_H
#define ANVIL_WIN_POLL_H
#include <sys/socket.h>
typedef unsigned long nfds_t;
#ifndef POLLRDHUP
#define POLLRDHUP 0 /* WSAPoll reports a peer that closed as POLLHUP */
#endif
static inline int poll(struct pollfd *p, nfds_t n, int timeout_ms) { return WSAPoll(p, (ULONG)n, timeout_ms); }
#endif
