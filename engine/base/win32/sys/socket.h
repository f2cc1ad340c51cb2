/* sys/socket.h (Windows build): Winsock 2 (ws2_32; WSAStartup at process start in
 * engine/base/platform_win.c). Sockets are SOCKETs, carried as int by the server (they fit). */
#ifndef ANVIL_WIN_SYS_SOCKET_H
#define ANVIL_WIN_SYS_SOCKET_H
#include <winsock2.h>
#include <ws2tcpip.h>
#ifndef SHUT_RD
#define SHUT_RD SD_RECEIVE
#define SHUT_WR SD_SEND
#define SHUT_RDWR SD_BOTH
#endif
#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0
#endif
#ifndef MSG_DONTWAIT
#define MSG_DONTWAIT 0
#endif
#endif
