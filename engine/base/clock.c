/* clock: monotonic and wall time (clock_gettime). */
#include "clock.h"

#include <stdio.h>
#include <time.h>

static int64_t read_ns(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t anv_mono_ns(void) { return read_ns(CLOCK_MONOTONIC); }
double anv_mono_s(void) { return (double)anv_mono_ns() * 1e-9; }
int64_t anv_wall_ns(void) { return read_ns(CLOCK_REALTIME); }

void anv_rfc3339_utc(int64_t wall_ns, int digits, char buf[48]) {
    time_t sec = (time_t)(wall_ns / 1000000000);
    long frac = (long)(wall_ns % 1000000000);
    struct tm tm;
    gmtime_r(&sec, &tm);
    size_t n = strftime(buf, 48, "%Y-%m-%dT%H:%M:%S", &tm);
    for (int i = digits; i < 9; i++) frac /= 10;
    if (digits > 0) n += (size_t)snprintf(buf + n, 48 - n, ".%0*ld", digits, frac);
    snprintf(buf + n, 48 - n, "Z");
}
