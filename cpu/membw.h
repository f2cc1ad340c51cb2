/* membw: a STREAM-like read-bandwidth probe for the CPU. Threads each sum their own slice
 * of one large buffer (AVX2 when the CPU has it, plain C otherwise); the best of several
 * passes gives the memory read bandwidth that `anvil bench` compares token generation to. */
#ifndef ANVIL_CPU_MEMBW_H
#define ANVIL_CPU_MEMBW_H
#include <stdbool.h>
#include <stddef.h>

#define MEMBW_CHUNK_FLOATS 2048 /* floats summed in float registers before going to double */

typedef struct {
    double gbps;        /* best pass: bytes / seconds / 1e9 */
    double mean_gbps;   /* mean over the passes */
    size_t bytes;       /* bytes read per pass (the request rounded down to n_threads * 8 KiB) */
    int n_threads, passes;
    double checksum;    /* sum of the buffer on the last pass (every pass must agree) */
    const char *kernel; /* "avx2" or "scalar" */
} membw_result;

/* Reads a buffer of about `bytes` (>= 1 MiB) with n_threads (<= 0: every online CPU),
 * `passes` times (>= 1) after one warm-up pass. The buffer holds float 1.0 everywhere but
 * at indices i % 4096 == 0, which hold 2.0: checksum = n + ceil(n / 4096) for n floats, and
 * a pass that disagrees is an error. 0, or -1 with anv_last_error(). */
int membw_read(size_t bytes, int n_threads, int passes, membw_result *out);
/* Sum of n floats (n a multiple of MEMBW_CHUNK_FLOATS) the way the probe reads them:
 * float partial sums per chunk, added up in double. use_avx2 is ignored without AVX2. */
double membw_sum_f32(const float *x, size_t n, bool use_avx2);
/* True if the AVX2 kernel runs here (ANVIL_CPU_SIMD=scalar turns it off). */
bool membw_have_avx2(void);
#endif
