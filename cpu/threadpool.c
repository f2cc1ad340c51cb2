/* threadpool: persistent workers, spin-then-futex start/finish barrier (see threadpool.h). */
#include "threadpool.h"
#include "error.h"

#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

/* Spin iterations (~30-60 us) before sleeping: long enough to catch the next op of a
 * forward pass, short enough not to burn a core while the caller does something else. */
#define SPIN_ITERS 20000

typedef struct worker { threadpool *tp; int ith; pthread_t thread; } worker;

struct threadpool {
    int n_threads;
    worker *workers;            /* n_threads - 1 */
    _Atomic uint32_t gen;       /* bumped once per job; workers wait for a change */
    _Atomic int pending;        /* workers that have not finished the current job */
    _Atomic int main_sleeping;  /* caller is (about to be) in futex_wait on `pending` */
    _Atomic int stop;
    _Atomic int sleepers;       /* workers in (or entering) futex_wait on `gen` */
    tp_job_fn fn;               /* current job, published by the release store of gen */
    void *ctx;
    int nth;
};

static void futex_wait(void *addr, uint32_t expected) {
    syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}
static void futex_wake_all(void *addr) {
    syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
}

static void *worker_main(void *arg) {
    worker *w = arg;
    threadpool *tp = w->tp;
    uint32_t seen = atomic_load_explicit(&tp->gen, memory_order_acquire);
    for (;;) {
        uint32_t g;
        int spins = 0;
        while ((g = atomic_load_explicit(&tp->gen, memory_order_acquire)) == seen) {
            if (++spins < SPIN_ITERS) CPU_RELAX();
            else {
                atomic_fetch_add_explicit(&tp->sleepers, 1, memory_order_seq_cst);
                futex_wait(&tp->gen, seen);
                atomic_fetch_sub_explicit(&tp->sleepers, 1, memory_order_seq_cst);
            }
        }
        seen = g;
        if (atomic_load_explicit(&tp->stop, memory_order_acquire)) return NULL;
        if (w->ith < tp->nth) tp->fn(tp->ctx, w->ith, tp->nth);
        if (atomic_fetch_sub_explicit(&tp->pending, 1, memory_order_seq_cst) == 1 &&
            atomic_load_explicit(&tp->main_sleeping, memory_order_seq_cst))
            futex_wake_all(&tp->pending);
    }
}

threadpool *tp_new(int n_threads) {
    if (n_threads < 1 || n_threads > 1024) {
        anv_set_error("threadpool: bad thread count %d", n_threads);
        return NULL;
    }
    threadpool *tp = calloc(1, sizeof *tp);
    if (!tp) { anv_set_error("threadpool: out of memory"); return NULL; }
    tp->n_threads = n_threads;
    if (n_threads > 1) {
        tp->workers = calloc((size_t)n_threads - 1, sizeof *tp->workers);
        if (!tp->workers) { free(tp); anv_set_error("threadpool: out of memory"); return NULL; }
    }
    for (int i = 0; i < n_threads - 1; i++) {
        tp->workers[i].tp = tp;
        tp->workers[i].ith = i + 1;
        if (pthread_create(&tp->workers[i].thread, NULL, worker_main, &tp->workers[i]) != 0) {
            tp->n_threads = i + 1; /* free() joins the ones that started */
            tp_free(tp);
            anv_set_error("threadpool: cannot start thread %d", i + 1);
            return NULL;
        }
    }
    return tp;
}

void tp_free(threadpool *tp) {
    if (!tp) return;
    atomic_store_explicit(&tp->stop, 1, memory_order_release);
    atomic_fetch_add_explicit(&tp->gen, 1, memory_order_acq_rel);
    futex_wake_all(&tp->gen);
    for (int i = 0; i < tp->n_threads - 1; i++) pthread_join(tp->workers[i].thread, NULL);
    free(tp->workers);
    free(tp);
}

int tp_threads(const threadpool *tp) { return tp->n_threads; }

void tp_run(threadpool *tp, tp_job_fn fn, void *ctx, int nth) {
    if (nth <= 0 || nth > tp->n_threads) nth = tp->n_threads;
    if (tp->n_threads == 1) { fn(ctx, 0, 1); return; }
    tp->fn = fn;
    tp->ctx = ctx;
    tp->nth = nth;
    atomic_store_explicit(&tp->pending, tp->n_threads - 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&tp->gen, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&tp->sleepers, memory_order_seq_cst) > 0) futex_wake_all(&tp->gen);
    fn(ctx, 0, nth);
    int spins = 0;
    for (;;) {
        int p = atomic_load_explicit(&tp->pending, memory_order_acquire);
        if (p == 0) break;
        if (++spins < SPIN_ITERS) { CPU_RELAX(); continue; }
        atomic_store_explicit(&tp->main_sleeping, 1, memory_order_seq_cst);
        p = atomic_load_explicit(&tp->pending, memory_order_seq_cst);
        if (p != 0) futex_wait(&tp->pending, (uint32_t)p);
        atomic_store_explicit(&tp->main_sleeping, 0, memory_order_relaxed);
    }
}

void tp_slice(int64_t n, int ith, int nth, int64_t align, int64_t *begin, int64_t *end) {
    if (align < 1) align = 1;
    int64_t units = (n + align - 1) / align;
    int64_t b = units * ith / nth * align, e = units * (ith + 1) / nth * align;
    *begin = b < n ? b : n;
    *end = e < n ? e : n;
}
