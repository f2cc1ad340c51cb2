/* serve_signal: how `anvil serve` learns it should stop, per platform: SIGINT/SIGTERM
 * taken by sigwait (serve_signal_posix.c), or Ctrl+C, Ctrl+Break, closing the console,
 * logoff and shutdown (serve_signal_win.c, SetConsoleCtrlHandler). */
#ifndef ANVIL_SERVE_SIGNAL_H
#define ANVIL_SERVE_SIGNAL_H
/* Call before any thread starts: from then on those signals only reach serve_signal_wait. */
void serve_signal_block(void);
/* Blocks until one arrives; returns its name ("SIGINT", "SIGTERM", "Ctrl+C", ...). */
const char *serve_signal_wait(void);
#endif
