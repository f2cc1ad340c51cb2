/* error: thread-local one-line error messages and the process-wide log line. */
#include "error.h"
#include <stdarg.h>
#include <stdio.h>

static _Thread_local char anv_error_buf[512];
int anv_log_enabled = 1;

void anv_set_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(anv_error_buf, sizeof anv_error_buf, fmt, ap);
    va_end(ap);
}

const char *anv_last_error(void) { return anv_error_buf; }

void anv_log(const char *fmt, ...) {
    if (!anv_log_enabled) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("anvil: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
