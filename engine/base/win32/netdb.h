/* (Windows build) Winsock 2 declares all of this: see sys/socket.h beside this file. */
#include <sys/socket.h>
