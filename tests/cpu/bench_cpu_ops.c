/* bench_cpu_ops: CPU backend micro-benchmark (not a ctest test). Prints the read bandwidth
 * of a STREAM-like sum, then per weight type: GB/s of weight bytes for a 1024x2816 and a
 * 2816x1024 matvec (1 token, weights cycled through > L3 so they come from DRAM), and
 * tokens/s of a batch-64 matmul over both, at 1 and 2 threads.
 * Timing: best of 10 rounds; 1 thread uses thread CPU time, 2 threads wall clock.
 * Usage: bench_cpu_ops [type ...]   (default: every matmul type; ANVIL_CPU_SIMD applies)
 * BENCH_WS_MIB=N cycles the matmuls through N MiB of weight copies instead (e.g. 24: a small
 * model's weights, which stay in this machine's L3, where the i-quant decode is compute-bound). */
#include "cpu_backend.h"
#include "error.h"
#include "quant.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WORKING_SET (256u << 20) /* bytes of weights cycled through: 8x the 32 MiB L3 */
static size_t matmul_working_set = WORKING_SET; /* BENCH_WS_MIB */

/* Wall clock; with 1 thread the bench uses the thread's CPU time instead, which on a shared
 * machine leaves out the time the OS gave the core to someone else. */
static clockid_t bench_clock = CLOCK_MONOTONIC;

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static double now_s(void) { return clock_s(bench_clock); }

/* ---- STREAM-like read probe ---- */
typedef struct { const uint64_t *p; size_t n; uint64_t sum; } probe_arg;

__attribute__((target("avx2"))) static uint64_t sum_avx2(const uint64_t *p, size_t n) {
    typedef long long v4 __attribute__((vector_size(32)));
    v4 a = {0}, b = {0}, c = {0}, d = {0};
    const v4 *v = (const v4 *)(const void *)p;
    for (size_t i = 0; i + 4 <= n / 4; i += 4) { a += v[i]; b += v[i + 1]; c += v[i + 2]; d += v[i + 3]; }
    v4 s = a + b + c + d;
    return (uint64_t)(s[0] + s[1] + s[2] + s[3]);
}

static uint64_t sum_plain(const uint64_t *p, size_t n) {
    uint64_t a = 0, b = 0;
    for (size_t i = 0; i + 2 <= n; i += 2) { a += p[i]; b += p[i + 1]; }
    return a + b;
}

static void *probe_thread(void *arg) {
    probe_arg *a = arg;
    __builtin_cpu_init();
    a->sum = __builtin_cpu_supports("avx2") ? sum_avx2(a->p, a->n) : sum_plain(a->p, a->n);
    return NULL;
}

static double read_bandwidth(int n_threads) {
    const size_t n = WORKING_SET / 8;
    uint64_t *buf = aligned_alloc(64, n * 8);
    if (!buf) return 0;
    for (size_t i = 0; i < n; i++) buf[i] = i;
    double best = 0;
    uint64_t sink = 0;
    for (int rep = 0; rep < 5; rep++) {
        pthread_t th[8];
        probe_arg args[8];
        const double t0 = now_s();
        for (int t = 0; t < n_threads; t++) {
            args[t] = (probe_arg){buf + n / (size_t)n_threads * (size_t)t, n / (size_t)n_threads, 0};
            pthread_create(&th[t], NULL, probe_thread, &args[t]);
        }
        for (int t = 0; t < n_threads; t++) { pthread_join(th[t], NULL); sink += args[t].sum; }
        const double gbs = (double)(n * 8) / (now_s() - t0) / 1e9;
        if (gbs > best) best = gbs;
    }
    free(buf);
    if (sink == 42) printf(" ");
    return best;
}

/* ---- matmul ---- */

typedef struct { be_tensor **w; int n_copies; size_t bytes; int64_t cols, rows; uint8_t *data; } wset;

static int make_wset(backend *be, uint32_t type, int64_t cols, int64_t rows, wset *s) {
    const size_t rb = qtype_row_size(type, cols);
    s->bytes = rb * (size_t)rows;
    s->n_copies = (int)(matmul_working_set / s->bytes) + 1;
    s->cols = cols;
    s->rows = rows;
    s->data = malloc(s->bytes * (size_t)s->n_copies);
    s->w = calloc((size_t)s->n_copies, sizeof *s->w);
    float *row = malloc((size_t)cols * sizeof(float));
    if (!s->data || !s->w || !row) return -1;
    uint64_t st = 7;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t c = 0; c < cols; c++) { st = st * 6364136223846793005ull + 1442695040888963407ull; row[c] = (float)((st >> 40) & 0xffff) / 32768.0f - 1.0f; }
        quantize_row(type, row, s->data + rb * (size_t)r, cols);
    }
    for (int k = 1; k < s->n_copies; k++) memcpy(s->data + s->bytes * (size_t)k, s->data, s->bytes);
    free(row);
    for (int k = 0; k < s->n_copies; k++) s->w[k] = be->ops->weight_new(be, type, cols, rows, s->data + s->bytes * (size_t)k);
    return 0;
}

static void free_wset(wset *s) {
    for (int k = 0; k < s->n_copies; k++) be_tensor_free(s->w[k]);
    free(s->w);
    free(s->data);
}

/* Seconds per matmul of n_tok tokens, cycling through the copies: the best of several
 * rounds, since this machine may be shared and a round can lose its core. */
static double time_matmul(backend *be, wset *s, be_tensor *x, be_tensor *out, int n_tok, double round_time) {
    int k = 0;
    double best = 1e30;
    be->ops->matmul(be, s->w[0], x, out, n_tok, false); /* warm-up */
    for (int round = 0; round < 10; round++) {
        int iters = 0;
        const double t0 = now_s();
        double t;
        do {
            be->ops->matmul(be, s->w[k], x, out, n_tok, false);
            k = (k + 1) % s->n_copies;
            iters++;
        } while ((t = now_s() - t0) < round_time);
        if (t / iters < best) best = t / iters;
    }
    return best;
}

int main(int argc, char **argv) {
    static const char *default_types[] = {"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "f16", "bf16", "f32"};
    const char **types = argc > 1 ? (const char **)(argv + 1) : default_types;
    const int n_types = argc > 1 ? argc - 1 : (int)(sizeof default_types / sizeof default_types[0]);
    const char *ws = getenv("BENCH_WS_MIB");
    if (ws && atoi(ws) > 0) matmul_working_set = (size_t)atoi(ws) << 20;
    printf("kernels: %s; matmul weights cycled through %zu MiB\n", cpu_backend_simd(), matmul_working_set >> 20);
    printf("read bandwidth (STREAM-like sum over %u MiB): 1 thread %.1f GB/s, 2 threads %.1f GB/s\n", WORKING_SET >> 20,
           read_bandwidth(1), read_bandwidth(2));
    printf("times: best of 10 rounds; 1 thread = thread CPU time, 2 threads = wall clock\n");
    printf("%-5s %3s | %-22s %-22s | %-s\n", "type", "thr", "matvec 1024x2816", "matvec 2816x1024", "batch 64 over both (tok/s; GOP/s)");
    for (int ti = 0; ti < n_types; ti++) {
        const int type = qtype_from_name(types[ti]);
        if (type < 0) { fprintf(stderr, "unknown type %s\n", types[ti]); return 1; }
        for (int threads = 1; threads <= 2; threads++) {
            bench_clock = threads == 1 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
            backend *be = cpu_backend_new(threads);
            if (!be) { fprintf(stderr, "%s\n", anv_last_error()); return 1; }
            wset a, b; /* a: 1024 rows x 2816 cols; b: 2816 rows x 1024 cols */
            if (make_wset(be, (uint32_t)type, 2816, 1024, &a) || make_wset(be, (uint32_t)type, 1024, 2816, &b)) { fprintf(stderr, "out of memory\n"); return 1; }
            be_tensor *x = be_tensor_new(be, QT_F32, 2816, 64), *out = be_tensor_new(be, QT_F32, 2816, 64);
            float *xs = malloc(2816 * 64 * sizeof(float));
            for (int i = 0; i < 2816 * 64; i++) xs[i] = (float)((i * 7919) % 1000) / 500.0f - 1.0f;
            be_upload(x, 0, xs, 2816 * 64 * sizeof(float));
            const double ta = time_matmul(be, &a, x, out, 1, 0.05), tb = time_matmul(be, &b, x, out, 1, 0.05);
            const double pa = time_matmul(be, &a, x, out, 64, 0.05), pb = time_matmul(be, &b, x, out, 64, 0.05);
            const double ops = 2.0 * 2.0 * 2816.0 * 1024.0 * 64.0;
            printf("%-5s %3d | %6.1f GB/s %7.1f us  %6.1f GB/s %7.1f us | %7.0f tok/s %6.1f GOP/s\n", types[ti], threads,
                   (double)a.bytes / ta / 1e9, ta * 1e6, (double)b.bytes / tb / 1e9, tb * 1e6, 64.0 / (pa + pb), ops / (pa + pb) / 1e9);
            fflush(stdout);
            free(xs);
            be_tensor_free(x);
            be_tensor_free(out);
            free_wset(&a);
            free_wset(&b);
            be->ops->destroy(be);
        }
    }
    return 0;
}
