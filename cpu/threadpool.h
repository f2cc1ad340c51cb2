/* threadpool: a persistent pool of n_threads - 1 worker threads plus the caller. A job is
 * n_chunks independent pieces of work; every thread that joins claims chunks from a
 * shared counter until none are left, so a thread that the OS deschedules (a busy or
 * shared machine) delays the job by one chunk at most, and a worker that wakes up late
 * simply finds the job closed. Workers spin briefly on a generation counter, then sleep
 * on a futex, so back-to-back small jobs (one per op during token generation) are cheap. */
#ifndef ANVIL_CPU_THREADPOOL_H
#define ANVIL_CPU_THREADPOOL_H
#include <stdint.h>

typedef struct threadpool threadpool;
/* Runs chunk `chunk` of a job; ith (0 = caller) is unique per thread, for per-thread scratch. */
typedef void (*tp_chunk_fn)(void *ctx, int64_t chunk, int ith);

/* n_threads >= 1 (1 = no workers, jobs run inline). NULL + anv_set_error on failure. */
threadpool *tp_new(int n_threads);
void tp_free(threadpool *tp);
int tp_threads(const threadpool *tp);
/* Runs fn on chunks 0 .. n_chunks-1 (in any order, on any threads); returns when all are done. */
void tp_run(threadpool *tp, tp_chunk_fn fn, void *ctx, int64_t n_chunks);
#endif
