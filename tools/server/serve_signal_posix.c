/* serve_signal_posix: serve_signal.h with POSIX signals: SIGINT/SIGTERM blocked in every
 * thread and taken by sigwait, SIGPIPE ignored (a client that left is a write error). */
#ifndef _WIN32
#include "serve_signal.h"

#include <pthread.h>
#include <signal.h>

static sigset_t stop_signals;

void serve_signal_block(void) {
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
    signal(SIGPIPE, SIG_IGN);
}

const char *serve_signal_wait(void) {
    int sig = 0;
    while (sigwait(&stop_signals, &sig)) {}
    return sig == SIGINT ? "SIGINT" : "SIGTERM";
}
#else
typedef int serve_signal_posix_unused; /* ISO C forbids an empty translation unit */
#endif
