/* test_threadpool: the CPU thread pool under stress: many tiny jobs back to back (workers
 * joining late or never), jobs after idle sleeps (futex path), two pools at once, and every
 * chunk run exactly once. A lost wake-up or a miscounted join would hang or miscount here
 * (ctest's timeout turns a hang into a failure). */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "testutil.h"
#include "threadpool.h"

typedef struct { _Atomic int64_t sum; _Atomic int hits[64]; } job;

static void chunk(void *ctx, int64_t c, int ith) {
    job *j = ctx;
    (void)ith;
    atomic_fetch_add(&j->sum, c + 1);
    if (c < 64) atomic_fetch_add(&j->hits[c], 1);
}

static int run_many(threadpool *tp, int iters, uint64_t *seed, bool sleeps) {
    int bad = 0;
    for (int it = 0; it < iters; it++) {
        job j = {0};
        int64_t n = 1 + (int64_t)(tu_rand_u64(seed) % 40);
        tp_run(tp, chunk, &j, n);
        bad += atomic_load(&j.sum) != n * (n + 1) / 2;
        for (int64_t c = 0; c < n && c < 64; c++) bad += atomic_load(&j.hits[c]) != 1;
        if (sleeps && it % 50 == 0) {
            struct timespec ts = {0, 2000000}; /* 2 ms: long enough for workers to go to sleep */
            nanosleep(&ts, NULL);
        }
    }
    return bad;
}

int main(void) {
    uint64_t seed = 42;
    for (int threads = 2; threads <= 4; threads++) {
        threadpool *tp = tp_new(threads);
        CHECK(tp != NULL);
        if (!tp) continue;
        CHECKF(run_many(tp, 100000, &seed, false) == 0, "back-to-back jobs, %d threads", threads);
        CHECKF(run_many(tp, 2000, &seed, true) == 0, "jobs after idle sleeps, %d threads", threads);
        tp_free(tp);
    }
    /* two pools used alternately (a CPU model and a probe model exist at once) */
    threadpool *a = tp_new(2), *b = tp_new(2);
    int bad = 0;
    for (int it = 0; it < 20000; it++) bad += run_many(it & 1 ? a : b, 1, &seed, false);
    CHECK(bad == 0);
    tp_free(a);
    tp_free(b);
    return tu_finish();
}
