/* serve_signal_win: serve_signal.h on Windows: a console control handler (Ctrl+C,
 * Ctrl+Break, the console window closed, logoff, shutdown) posts a semaphore that
 * serve_signal_wait takes. The handler returns TRUE for a close/logoff/shutdown only
 * after the main thread has shut the server down (Windows ends the process when the
 * handler returns), bounded by the few seconds Windows allows. */
#ifdef _WIN32
#include "serve_signal.h"

#include <stdlib.h>
#include <windows.h>

static HANDLE stop_sem, stopped_ev;
static volatile LONG stop_event = -1;

static BOOL WINAPI on_console(DWORD ev) {
    if (InterlockedCompareExchange(&stop_event, (LONG)ev, -1) == -1) ReleaseSemaphore(stop_sem, 1, NULL);
    if (ev == CTRL_CLOSE_EVENT || ev == CTRL_LOGOFF_EVENT || ev == CTRL_SHUTDOWN_EVENT)
        WaitForSingleObject(stopped_ev, 4500); /* Windows kills the process ~5 s after a close */
    return TRUE;
}

static void on_exit_done(void) {
    if (stopped_ev) SetEvent(stopped_ev);
}

void serve_signal_block(void) {
    stop_sem = CreateSemaphoreW(NULL, 0, 1, NULL);
    stopped_ev = CreateEventW(NULL, TRUE, FALSE, NULL);
    atexit(on_exit_done);
    SetConsoleCtrlHandler(on_console, TRUE);
}

const char *serve_signal_wait(void) {
    WaitForSingleObject(stop_sem, INFINITE);
    switch (stop_event) {
    case CTRL_C_EVENT: return "Ctrl+C";
    case CTRL_BREAK_EVENT: return "Ctrl+Break";
    case CTRL_CLOSE_EVENT: return "console closed";
    case CTRL_LOGOFF_EVENT: return "logoff";
    default: return "shutdown";
    }
}
#else
typedef int serve_signal_win_unused; /* ISO C forbids an empty translation unit */
#endif
