/* membw: the CPU read-bandwidth probe (see membw.h). Owns its threads: each one first
 * touches its own slice (so pages land on its memory node), then every pass runs between
 * two barriers and thread 0 times it. */
#include "membw.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "error.h"
#include "settings.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MEMBW_X86 1
#endif


bool membw_have_avx2(void) {
#ifdef MEMBW_X86
    const char *force = anv_setting_raw("ANVIL_CPU_SIMD");
    if (force && strcmp(force, "scalar") == 0) return false;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
#else
    return false;
#endif
}

static double sum_scalar(const float *x, size_t n) {
    double total = 0;
    for (size_t c = 0; c < n; c += MEMBW_CHUNK_FLOATS) {
        float a[8] = {0};
        for (size_t i = c; i < c + MEMBW_CHUNK_FLOATS; i += 8)
            for (int k = 0; k < 8; k++) a[k] += x[i + k];
        total += (double)(((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7])));
    }
    return total;
}

#ifdef MEMBW_X86
__attribute__((target("avx2"))) static double sum_avx2(const float *x, size_t n) {
    double total = 0;
    for (size_t c = 0; c < n; c += MEMBW_CHUNK_FLOATS) {
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (size_t i = c; i < c + MEMBW_CHUNK_FLOATS; i += 32) {
            a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + i));
            a1 = _mm256_add_ps(a1, _mm256_loadu_ps(x + i + 8));
            a2 = _mm256_add_ps(a2, _mm256_loadu_ps(x + i + 16));
            a3 = _mm256_add_ps(a3, _mm256_loadu_ps(x + i + 24));
        }
        __m256 s = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
        float v[8];
        _mm256_storeu_ps(v, s);
        total += (double)(((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7])));
    }
    return total;
}
#endif

double membw_sum_f32(const float *x, size_t n, bool use_avx2) {
#ifdef MEMBW_X86
    if (use_avx2 && membw_have_avx2()) return sum_avx2(x, n);
#endif
    (void)use_avx2;
    return sum_scalar(x, n);
}

typedef struct {
    float *buf;
    size_t per_thread;         /* floats per slice */
    int n_threads, passes;
    bool avx2;
    pthread_barrier_t barrier;
    pthread_mutex_t lock;      /* start gate: workers wait until every thread exists */
    pthread_cond_t cond;
    int gate;                  /* 0 = wait, 1 = go, -1 = give up (a thread failed to start) */
    double *sums;              /* [n_threads] of the current pass */
    double *pass_s;            /* [passes + 1] seconds per pass (0 = warm-up) */
    double *pass_sum;          /* [passes + 1] buffer sum per pass */
} probe;

typedef struct { probe *p; int ith; } worker_arg;

static void *worker(void *arg) {
    worker_arg *w = arg;
    probe *p = w->p;
    pthread_mutex_lock(&p->lock);
    while (p->gate == 0) pthread_cond_wait(&p->cond, &p->lock);
    int gate = p->gate;
    pthread_mutex_unlock(&p->lock);
    if (gate < 0) return NULL;
    float *x = p->buf + (size_t)w->ith * p->per_thread;
    const size_t base = (size_t)w->ith * p->per_thread;
    for (size_t i = 0; i < p->per_thread; i++) x[i] = (base + i) % 4096 == 0 ? 2.0f : 1.0f;
    for (int r = 0; r <= p->passes; r++) {
        pthread_barrier_wait(&p->barrier);
        double t0 = w->ith == 0 ? anv_mono_s() : 0;
        p->sums[w->ith] = membw_sum_f32(x, p->per_thread, p->avx2);
        pthread_barrier_wait(&p->barrier);
        if (w->ith == 0) {
            p->pass_s[r] = anv_mono_s() - t0;
            double s = 0;
            for (int t = 0; t < p->n_threads; t++) s += p->sums[t];
            p->pass_sum[r] = s;
        }
    }
    return NULL;
}

int membw_read(size_t bytes, int n_threads, int passes, membw_result *out) {
    memset(out, 0, sizeof *out);
    if (n_threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = n > 0 ? (int)n : 1;
    }
    if (n_threads > 1024) { anv_set_error("membw: %d threads is too many", n_threads); return -1; }
    if (passes < 1) { anv_set_error("membw: passes must be >= 1"); return -1; }
    const size_t chunk = MEMBW_CHUNK_FLOATS;
    size_t per_thread = bytes / sizeof(float) / (size_t)n_threads / chunk * chunk;
    if (bytes < (1u << 20) || per_thread == 0) {
        anv_set_error("membw: buffer of %zu bytes is too small for %d threads (>= 1 MiB and 8 KiB per thread)", bytes, n_threads);
        return -1;
    }
    probe p = {.per_thread = per_thread, .n_threads = n_threads, .passes = passes, .avx2 = membw_have_avx2()};
    const size_t n = per_thread * (size_t)n_threads;
    int rc = -1;
    pthread_t *th = calloc((size_t)n_threads, sizeof *th);
    worker_arg *args = calloc((size_t)n_threads, sizeof *args);
    p.sums = calloc((size_t)n_threads, sizeof *p.sums);
    p.pass_s = calloc((size_t)passes + 1, sizeof *p.pass_s);
    p.pass_sum = calloc((size_t)passes + 1, sizeof *p.pass_sum);
    p.buf = aligned_alloc(64, n * sizeof(float));
    if (!th || !args || !p.sums || !p.pass_s || !p.pass_sum || !p.buf) {
        anv_set_error("membw: cannot allocate %zu MiB", n * sizeof(float) >> 20);
        goto done;
    }
    if (pthread_barrier_init(&p.barrier, NULL, (unsigned)n_threads) != 0) {
        anv_set_error("membw: cannot create a barrier");
        goto done;
    }
    pthread_mutex_init(&p.lock, NULL);
    pthread_cond_init(&p.cond, NULL);
    int started = 1;
    for (int t = 0; t < n_threads; t++) args[t] = (worker_arg){&p, t};
    for (; started < n_threads; started++)
        if (pthread_create(&th[started], NULL, worker, &args[started]) != 0) break;
    pthread_mutex_lock(&p.lock);
    p.gate = started == n_threads ? 1 : -1;
    pthread_cond_broadcast(&p.cond);
    pthread_mutex_unlock(&p.lock);
    if (started == n_threads) worker(&args[0]);
    for (int t = 1; t < started; t++) pthread_join(th[t], NULL);
    pthread_barrier_destroy(&p.barrier);
    pthread_mutex_destroy(&p.lock);
    pthread_cond_destroy(&p.cond);
    if (started < n_threads) {
        anv_set_error("membw: cannot start thread %d of %d", started + 1, n_threads);
        goto done;
    }

    const double expect = (double)n + (double)((n + 4095) / 4096);
    double best = INFINITY, sum_gbps = 0;
    for (int r = 0; r <= passes; r++) {
        if (p.pass_sum[r] != expect) {
            anv_set_error("membw: pass %d read a sum of %.0f, expected %.0f", r, p.pass_sum[r], expect);
            goto done;
        }
        if (r == 0) continue;  /* warm-up */
        double s = p.pass_s[r] > 0 ? p.pass_s[r] : 1e-9;
        if (s < best) best = s;
        sum_gbps += (double)(n * sizeof(float)) / s / 1e9;
    }
    out->bytes = n * sizeof(float);
    out->n_threads = n_threads;
    out->passes = passes;
    out->gbps = (double)out->bytes / best / 1e9;
    out->mean_gbps = sum_gbps / passes;
    out->checksum = expect;
    out->kernel = p.avx2 ? "avx2" : "scalar";
    rc = 0;
done:
    free(th);
    free(args);
    free(p.sums);
    free(p.pass_s);
    free(p.pass_sum);
    free(p.buf);
    return rc;
}
