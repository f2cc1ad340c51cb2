/* error: one-line, thread-local error messages. A failing function sets the message and
 * returns NULL/-1/false; the caller that gives up prints anv_last_error(). Nothing in the
 * engine or the backends exits the process: only the CLI does (anv_die, tools/cli/cli.h). */
#ifndef ANVIL_ERROR_H
#define ANVIL_ERROR_H

#if defined(__GNUC__)
#define ANV_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define ANV_PRINTF(a, b)
#endif

/* Sets the current thread's error message (printf-style, one line, no trailing newline). */
void anv_set_error(const char *fmt, ...) ANV_PRINTF(1, 2);
/* The last message set on this thread ("" if none). */
const char *anv_last_error(void);
/* Logs a line to stderr ("anvil: ..."), for placement and other user-visible decisions. */
void anv_log(const char *fmt, ...) ANV_PRINTF(1, 2);
/* Set to 0 to silence anv_log (tests). */
extern int anv_log_enabled;

#endif
