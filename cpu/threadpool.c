/* threadpool: persistent workers that join jobs late-or-never safely and claim chunks
 * from an atomic counter (see threadpool.h). Synchronization:
 *  - `gen` (futex word) is bumped once per job; idle workers spin on it, then sleep.
 *  - `join` packs (gen << 32) | OPEN | active_count: a worker joins job g only while it is
 *    open, by CAS; the caller closes the job once every chunk is claimed and waits for
 *    active_count to reach 0, so no thread touches a job after tp_run returns. */
#include "threadpool.h"
#include "error.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#ifdef _WIN32
#include <windows.h> /* WaitOnAddress / WakeByAddressAll: Windows' futex (synchronization.lib) */
#else
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

/* Spin iterations (tens of microseconds) before sleeping: long enough to catch the next
 * op of a forward pass, short enough not to burn a core while the caller does other work. */
#define SPIN_ITERS 20000
#define JOIN_OPEN (1ull << 31)

typedef struct worker { threadpool *tp; int ith; pthread_t thread; } worker;

struct threadpool {
    int n_threads;
    worker *workers;              /* n_threads - 1 */
    _Atomic uint32_t gen;         /* bumped once per job; futex word for idle workers */
    _Atomic int sleepers;         /* workers in (or entering) futex_wait on gen */
    _Atomic int stop;
    _Atomic uint64_t join;        /* (gen << 32) | JOIN_OPEN | active joined threads */
    _Atomic int64_t next_chunk;
    /* the current job: written before gen is bumped, read only by joined threads */
    tp_chunk_fn fn;
    void *ctx;
    int64_t n_chunks;
};

#ifdef _WIN32
static void futex_wait(void *addr, uint32_t expected) { WaitOnAddress(addr, &expected, sizeof expected, INFINITE); }
static void futex_wake_all(void *addr) { WakeByAddressAll(addr); }
#else
static void futex_wait(void *addr, uint32_t expected) {
    syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}
static void futex_wake_all(void *addr) {
    syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
}
#endif

static void run_chunks(threadpool *tp, int ith) {
    for (;;) {
        const int64_t c = atomic_fetch_add_explicit(&tp->next_chunk, 1, memory_order_relaxed);
        if (c >= tp->n_chunks) return;
        tp->fn(tp->ctx, c, ith);
    }
}

/* Joins job g if it is still open; true when joined (the caller must leave afterwards). */
static bool try_join(threadpool *tp, uint32_t g) {
    uint64_t w = atomic_load_explicit(&tp->join, memory_order_acquire);
    for (;;) {
        if ((uint32_t)(w >> 32) != g || !(w & JOIN_OPEN)) return false;
        if (atomic_compare_exchange_weak_explicit(&tp->join, &w, w + 1, memory_order_acq_rel, memory_order_acquire)) return true;
    }
}

static void *worker_main(void *arg) {
    worker *w = arg;
    threadpool *tp = w->tp;
    uint32_t seen = 0; /* gen at creation: a job issued before this thread runs is not missed */
    for (;;) {
        uint32_t g;
        int spins = 0;
        while ((g = atomic_load_explicit(&tp->gen, memory_order_acquire)) == seen) {
            if (++spins < SPIN_ITERS) { CPU_RELAX(); continue; }
            atomic_fetch_add_explicit(&tp->sleepers, 1, memory_order_seq_cst);
            futex_wait(&tp->gen, seen);
            atomic_fetch_sub_explicit(&tp->sleepers, 1, memory_order_seq_cst);
        }
        seen = g;
        if (atomic_load_explicit(&tp->stop, memory_order_acquire)) return NULL;
        if (try_join(tp, g)) {
            run_chunks(tp, w->ith);
            atomic_fetch_sub_explicit(&tp->join, 1, memory_order_release);
        }
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
            tp->n_threads = i + 1; /* tp_free joins the ones that started */
            tp_free(tp);
            anv_set_error("threadpool: cannot start thread %d", i + 1);
            return NULL;
        }
    }
    return tp;
}

void tp_free(threadpool *tp) {
    if (!tp) return;
    atomic_store_explicit(&tp->stop, 1, memory_order_seq_cst);
    atomic_fetch_add_explicit(&tp->gen, 1, memory_order_seq_cst);
    futex_wake_all(&tp->gen);
    for (int i = 0; i < tp->n_threads - 1; i++) pthread_join(tp->workers[i].thread, NULL);
    free(tp->workers);
    free(tp);
}

int tp_threads(const threadpool *tp) { return tp->n_threads; }

void tp_run(threadpool *tp, tp_chunk_fn fn, void *ctx, int64_t n_chunks) {
    if (n_chunks <= 0) return;
    if (tp->n_threads == 1 || n_chunks == 1) {
        for (int64_t c = 0; c < n_chunks; c++) fn(ctx, c, 0);
        return;
    }
    tp->fn = fn;
    tp->ctx = ctx;
    tp->n_chunks = n_chunks;
    atomic_store_explicit(&tp->next_chunk, 0, memory_order_relaxed);
    const uint32_t g = atomic_load_explicit(&tp->gen, memory_order_relaxed) + 1;
    /* open job g with the caller joined, then publish it */
    atomic_store_explicit(&tp->join, ((uint64_t)g << 32) | JOIN_OPEN | 1, memory_order_release);
    atomic_store_explicit(&tp->gen, g, memory_order_seq_cst);
    if (atomic_load_explicit(&tp->sleepers, memory_order_seq_cst) > 0) futex_wake_all(&tp->gen);
    run_chunks(tp, 0);
    /* every chunk is claimed: close the job, leave, and wait for joined workers to finish */
    atomic_fetch_and_explicit(&tp->join, ~JOIN_OPEN, memory_order_acq_rel);
    atomic_fetch_sub_explicit(&tp->join, 1, memory_order_acq_rel);
    int spins = 0;
    while ((atomic_load_explicit(&tp->join, memory_order_acquire) & (JOIN_OPEN - 1)) != 0) {
        if (++spins < SPIN_ITERS) CPU_RELAX();
        else sched_yield();
    }
}
