/* test_bench: the benchmark instruments. Without arguments: statistics, the KV-cache
 * bandwidth accounting against hand-counted rows (full and sliding-window attention), and
 * the CPU read-bandwidth probe (its sum must be exact; both kernels must agree). With a
 * model path (tests/model/bench.cmake): the weight bytes read per token against an independent
 * walk over the GGUF's tensor list, and the pp/tg timing loops on that model. With
 * --vulkan-membw: the Vulkan read-bandwidth probe (when built with ANVIL_HAVE_VULKAN). No speed is
 * asserted (shared machines are noisy): only that measurements exist and are sane. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "error.h"
#include "membw.h"
#include "model.h"
#include "model_place.h"
#include "quant.h"
#include "testutil.h"
#ifdef ANVIL_HAVE_VULKAN
#include "cpu_backend.h"
#include "device.h"
#include "vk_membw.h"

/* The Vulkan probe on the first usable Vulkan device (lavapipe counts): it verifies its
 * own sums, so success means the shader read every word. Returns false if there is none. */
static bool test_vk_membw(void) {
    device_list *dl = device_list_probe();
    CHECK(dl != NULL);
    if (!dl) return true;
    int found = -1;
    for (int i = 0; i < dl->n && found < 0; i++)
        if (dl->dev[i].backend == DEV_BACKEND_VULKAN && dl->dev[i].supported) found = i;
    if (found < 0) {
        printf("test_bench: no usable Vulkan device: Vulkan probe skipped\n");
        device_list_free(dl);
        return false;
    }
    backend *vk = device_open(dl, found, 1);
    CHECKF(vk != NULL, "%s", anv_last_error());
    if (vk) {
        double gbps = 0;
        CHECKF(vk_membw_read(vk, 16u << 20, &gbps) == 0, "%s", anv_last_error());
        CHECK(isfinite(gbps) && gbps > 0);
        printf("test_bench: %s read bandwidth %.2f GB/s\n", vk->name, gbps);
        CHECK(vk_membw_read(vk, 1000, &gbps) == -1 && strstr(anv_last_error(), "too small"));
        vk->ops->destroy(vk);
    }
    backend *cpu = cpu_backend_new(1);
    double g = 0;
    CHECK(vk_membw_read(cpu, 16u << 20, &g) == -1 && strstr(anv_last_error(), "not a Vulkan backend"));
    cpu->ops->destroy(cpu);
    device_list_free(dl);
    return true;
}
#endif

static void test_stats(void) {
    const double x[] = {2, 4, 4, 4, 5, 5, 7, 9};
    bench_stats s = bench_stats_of(x, 8);
    CHECK(fabs(s.mean - 5.0) < 1e-12);
    CHECK(fabs(s.stddev - sqrt(32.0 / 7.0)) < 1e-12);  /* sample stddev, like llama-bench */
    s = bench_stats_of(x, 1);
    CHECK(s.mean == 2.0 && s.stddev == 0.0);
    s = bench_stats_of(x, 0);
    CHECK(s.mean == 0.0 && s.stddev == 0.0);
    const uint64_t ns[] = {1000000000ull, 500000000ull};
    double ts[2];
    bench_samples_ts(ns, 2, 128, ts);
    CHECK(fabs(ts[0] - 128.0) < 1e-9 && fabs(ts[1] - 256.0) < 1e-9);
}

static void test_kv_accounting(void) {
    /* llama-like: 3 layers, 2 KV heads of 32, F16: a K or V row is 64 * 2 = 128 bytes. */
    model_hparams hp = {0};
    hp.n_layer = 3;
    hp.n_head = 4;
    hp.n_kv_head = 2;
    hp.head_dim_k = hp.head_dim_v = 32;
    CHECK(bench_kv_bytes_at(&hp, QT_F16, 0) == 3ull * 2 * 1 * 128);
    CHECK(bench_kv_bytes_at(&hp, QT_F16, 99) == 3ull * 2 * 100 * 128);
    CHECK(bench_kv_bytes_at(&hp, QT_F32, 9) == 3ull * 2 * 10 * 256);
    /* tokens at positions 0..3 read 1..4 rows: mean 2.5 rows */
    CHECK(fabs(bench_kv_bytes_mean(&hp, QT_F16, 0, 4) - 3.0 * 2 * 2.5 * 128) < 1e-9);
    CHECK(fabs(bench_kv_bytes_mean(&hp, QT_F16, 10, 2) - 3.0 * 2 * 11.5 * 128) < 1e-9);
    CHECK(bench_kv_bytes_mean(&hp, QT_F16, 0, 0) == 0.0);

    /* gemma3-like: 7 layers, pattern 6 (layers 0-4 and 6 slide over 8 positions, layer 5
     * is global), one KV head of 64, Q8_0: a row is 2 blocks of 34 bytes = 68 bytes. */
    model_hparams g = {0};
    g.n_layer = 7;
    g.n_head = 4;
    g.n_kv_head = 1;
    g.head_dim_k = g.head_dim_v = 64;
    g.swa_pattern = 6;
    g.swa_window = 8;
    CHECK(bench_kv_bytes_at(&g, QT_Q8_0, 3) == 7ull * 2 * 4 * 68);           /* inside the window */
    CHECK(bench_kv_bytes_at(&g, QT_Q8_0, 20) == (6ull * 8 + 1ull * 21) * 2 * 68); /* 6 windowed + 1 full */
    CHECK(bench_kv_bytes_at(&g, QT_F16, 7) == 7ull * 2 * 8 * 128);
    CHECK(bench_kv_bytes_at(&g, QT_F16, 8) == (6ull * 8 + 9) * 2 * 128);
}

static void test_membw(void) {
    /* exact sums: both kernels on a buffer of small integers */
    const size_t n = 4 * MEMBW_CHUNK_FLOATS;
    float *x = malloc(n * sizeof *x);
    double expect = 0;
    for (size_t i = 0; i < n; i++) {
        x[i] = (float)(i % 7);
        expect += (double)(i % 7);
    }
    CHECK(membw_sum_f32(x, n, false) == expect);
    CHECK(membw_sum_f32(x, n, true) == expect);
    free(x);

    membw_result r;
    CHECKF(membw_read(8u << 20, 2, 2, &r) == 0, "%s", anv_last_error());
    CHECK(r.bytes > (7u << 20) && r.bytes <= (8u << 20));
    CHECK(r.n_threads == 2 && r.passes == 2);
    const double nf = (double)(r.bytes / 4);
    CHECK(r.checksum == nf + ceil(nf / 4096));
    CHECK(isfinite(r.gbps) && r.gbps > 0 && r.gbps >= r.mean_gbps * 0.999);
    CHECK(r.kernel && (!strcmp(r.kernel, "avx2") || !strcmp(r.kernel, "scalar")));
    CHECKF(membw_read(8u << 20, 1, 1, &r) == 0 && r.n_threads == 1, "%s", anv_last_error());

    CHECK(membw_read(1000, 1, 1, &r) == -1 && strstr(anv_last_error(), "too small"));
    CHECK(membw_read(8u << 20, 1, 0, &r) == -1 && strstr(anv_last_error(), "passes"));
}

/* Weight bytes per token, counted from the file's tensor list by name. */
static uint64_t independent_weight_bytes(const gguf_file *f) {
    uint64_t total = 0, embd = 0, embd_rows = 1;
    bool has_output = false;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        if (t->name.len > 4 && !memcmp(t->name.ptr, "blk.", 4)) total += t->nbytes;
        else if (gguf_str_eq(t->name, "output_norm.weight") || gguf_str_eq(t->name, "rope_freqs.weight")) total += t->nbytes;
        else if (gguf_str_eq(t->name, "output.weight")) { total += t->nbytes; has_output = true; }
        else if (gguf_str_eq(t->name, "token_embd.weight")) { embd = t->nbytes; embd_rows = (uint64_t)t->ne[1]; }
    }
    return total + embd / embd_rows + (has_output ? 0 : embd);
}

static void test_model(const char *path) {
    model *m = model_load_with(path, 2, NULL, 0);
    CHECKF(m != NULL, "%s", anv_last_error());
    if (!m) return;
    bench_weight_bytes wb;
    bench_weight_bytes_per_token(m, &wb);
    const uint64_t want = independent_weight_bytes(m->gguf);
    CHECKF(wb.total == want, "engine %llu, file %llu", (unsigned long long)wb.total, (unsigned long long)want);
    CHECK(wb.total == wb.layers + wb.output + wb.embd_row + wb.rope_freqs);
    CHECK(wb.embd_row > 0 && wb.embd_row < wb.output + wb.layers);
    uint64_t size = 0;
    for (uint64_t i = 0; i < m->gguf->n_tensors; i++) size += m->gguf->tensors[i].nbytes;
    CHECK(bench_model_size(m) == size);

    bench_test pp = {.n_prompt = 8, .n_batch = 3, .reps = 2, .seed = 1};
    bench_test tg = {.n_gen = 4, .n_depth = 5, .reps = 2, .seed = 1};
    model_ctx *c = model_ctx_new(m, bench_test_n_ctx(&tg), QT_F16);
    CHECKF(c != NULL, "%s", anv_last_error());
    if (c) {
        uint64_t ns[2] = {0, 0};
        CHECKF(bench_run(c, &pp, ns) == 0, "%s", anv_last_error());
        CHECK(ns[0] > 0 && ns[1] > 0);
        CHECK(model_ctx_n_past(c) == 0);  /* the cache is left empty */
        ns[0] = ns[1] = 0;
        CHECKF(bench_run(c, &tg, ns) == 0, "%s", anv_last_error());
        CHECK(ns[0] > 0 && ns[1] > 0);
        /* a test that does not fit the cache, and a test that is neither pp nor tg */
        bench_test big = {.n_gen = 8, .n_depth = 2, .reps = 1};
        CHECK(bench_run(c, &big, ns) == -1 && strstr(anv_last_error(), "context"));
        bench_test none = {.reps = 1};
        CHECK(bench_run(c, &none, ns) == -1);
        bench_test both = {.n_prompt = 2, .n_gen = 2, .reps = 1};
        CHECK(bench_run(c, &both, ns) == -1);
        model_ctx_free(c);
    }
    model_free(m);
}

int main(int argc, char **argv) {
    anv_log_enabled = 0;
    if (argc > 1 && !strcmp(argv[1], "--vulkan-membw")) {
#ifdef ANVIL_HAVE_VULKAN
        if (!test_vk_membw()) return 77;  /* ctest SKIP_RETURN_CODE */
#else
        printf("test_bench: built without ANVIL_HAVE_VULKAN: no Vulkan probe to test\n");
        return 77;
#endif
    } else if (argc > 1) {
        test_model(argv[1]);
    } else {
        test_stats();
        test_kv_accounting();
        test_membw();
    }
    return tu_finish();
}
