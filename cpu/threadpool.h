/* threadpool: a persistent pool of n_threads - 1 worker threads plus the caller. A job
 * runs fn(ctx, ith, nth) on every thread (ith = 0 is the caller) and returns when all
 * are done. Workers spin briefly on a generation counter, then sleep on a futex, so
 * back-to-back small jobs (one per op during token generation) cost ~a microsecond. */
#ifndef ANVIL_CPU_THREADPOOL_H
#define ANVIL_CPU_THREADPOOL_H
#include <stdint.h>

typedef struct threadpool threadpool;
typedef void (*tp_job_fn)(void *ctx, int ith, int nth);

/* n_threads >= 1 (1 = no workers, jobs run inline). NULL + anv_set_error on failure. */
threadpool *tp_new(int n_threads);
void tp_free(threadpool *tp);
int tp_threads(const threadpool *tp);
/* Runs fn on all threads; nth may be lowered to use fewer threads (0 = all). */
void tp_run(threadpool *tp, tp_job_fn fn, void *ctx, int nth);
/* Splits [0, n) into nth near-equal slices, rounded to multiples of `align`: slice ith. */
void tp_slice(int64_t n, int ith, int nth, int64_t align, int64_t *begin, int64_t *end);
#endif
