/* clock: monotonic and wall time (clock_gettime). */
#include "clock.h"

#include <time.h>

static int64_t read_ns(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t anv_mono_ns(void) { return read_ns(CLOCK_MONOTONIC); }
double anv_mono_s(void) { return (double)anv_mono_ns() * 1e-9; }
int64_t anv_wall_ns(void) { return read_ns(CLOCK_REALTIME); }
