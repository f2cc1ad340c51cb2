/* clock: the two clocks the engine reads: monotonic (durations, deadlines) and wall
 * (timestamps shown to users: created_at, Unix seconds). */
#ifndef ANVIL_CLOCK_H
#define ANVIL_CLOCK_H
#include <stdint.h>

/* Monotonic time in nanoseconds / seconds (arbitrary origin). */
int64_t anv_mono_ns(void);
double anv_mono_s(void);
/* Wall-clock time in nanoseconds since the Unix epoch. */
int64_t anv_wall_ns(void);
/* wall_ns as RFC3339 in UTC with digits (0 to 9) fractional digits of the second:
 * "2024-05-01T12:00:00.123Z" for 3. */
void anv_rfc3339_utc(int64_t wall_ns, int digits, char buf[48]);
#endif
