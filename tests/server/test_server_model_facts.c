/* test_server_model_facts: the pieces of the model-management endpoints that need no
 * server: Ollama's number and time formats, a model's details / model_info / tensors from
 * a GGUF written here, an unreadable file, and the request-latency histogram. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "error.h"
#include "gguf_write.h"
#include "model_facts.h"
#include "quant.h"
#include "quantize_model.h"
#include "testutil.h"

static void test_human_number(void) {
    static const struct { uint64_t n; const char *want; } cases[] = {
        {268098176, "268.10M"}, {8000000000ull, "8B"}, {8030261248ull, "8.0B"}, {1622528, "1.62M"},
        {7000000, "7M"}, {1500, "2K"}, {999, "999"}, {0, "0"}, {3210000000ull, "3.2B"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[32];
        facts_human_number(cases[i].n, buf, sizeof buf);
        CHECKF(!strcmp(buf, cases[i].want), "%llu -> %s, want %s", (unsigned long long)cases[i].n, buf, cases[i].want);
    }
}

static void test_format_number(void) {
    static const struct { double v; const char *want; } cases[] = {
        {0.7, "0.7"}, {40, "40"}, {1e-6, "1e-06"}, {0.95, "0.95"}, {-1, "-1"}, {4096, "4096"}, {1.0 / 3, "0.3333333333333333"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[40];
        facts_format_number(cases[i].v, buf, sizeof buf);
        CHECKF(!strcmp(buf, cases[i].want), "%.17g -> %s, want %s", cases[i].v, buf, cases[i].want);
    }
}

static void test_rfc3339(void) {
    char *old = getenv("TZ") ? strdup(getenv("TZ")) : NULL;
    char buf[40];
    setenv("TZ", "UTC", 1);
    tzset();
    facts_rfc3339(1700000000, buf, sizeof buf);
    CHECKF(!strcmp(buf, "2023-11-14T22:13:20Z"), "%s", buf);
    setenv("TZ", "XST-5:30", 1);   /* a fixed offset east of UTC, no DST */
    tzset();
    facts_rfc3339(1700000000, buf, sizeof buf);
    CHECKF(!strcmp(buf, "2023-11-15T03:43:20+05:30"), "%s", buf);
    setenv("TZ", "YST7", 1);
    tzset();
    facts_rfc3339(1700000000, buf, sizeof buf);
    CHECKF(!strcmp(buf, "2023-11-14T15:13:20-07:00"), "%s", buf);
    if (old) setenv("TZ", old, 1);
    else unsetenv("TZ");
    tzset();
    free(old);
}

/* A small model-shaped GGUF: metadata of several types, a 2000-entry token table, a Q8_0
 * matrix and an F32 vector. */
static int write_model(const char *path) {
    gguf_writer *w = gguf_writer_new(path);
    if (!w) return -1;
    gguf_writer_set_str(w, "general.architecture", "llama");
    gguf_writer_set_str(w, "general.name", "facts test");
    gguf_writer_set_u32(w, "general.file_type", QFT_Q8_0);
    gguf_writer_set_u32(w, "llama.context_length", 4096);
    gguf_writer_set_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", true);
    gguf_writer_set_str(w, "tokenizer.chat_template", "{{ x }}");
    int32_t small[3] = {1, -2, 3};
    gguf_writer_set_arr(w, "llama.test_array", GGUF_INT32, small, 3);
    enum { NTOK = 2000 };
    static char names[NTOK][8];
    const char *toks[NTOK];
    for (int i = 0; i < NTOK; i++) { snprintf(names[i], sizeof names[i], "t%d", i); toks[i] = names[i]; }
    gguf_writer_set_str_arr(w, "tokenizer.ggml.tokens", toks, NTOK);
    static block_q8_0 q[64 * 2];   /* 64 x 64 Q8_0: 2 blocks a row */
    static float v[64];
    int64_t ne_q[2] = {64, 64}, ne_v[1] = {64};
    gguf_writer_add_tensor(w, "blk.0.attn_q.weight", QT_Q8_0, 2, ne_q, q);
    gguf_writer_add_tensor(w, "blk.0.attn_norm.weight", QT_F32, 1, ne_v, v);
    return gguf_writer_finish(w);
}

static void test_facts(void) {
    char path[] = "/tmp/anvil-facts-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0) return;
    close(fd);
    CHECKF(write_model(path) == 0, "%s", anv_last_error());
    model_facts f;
    CHECKF(facts_read(path, &f) == 0, "%s", anv_last_error());
    CHECK(f.file != NULL);
    CHECK(!strcmp(f.family, "llama"));
    CHECK(f.n_params == 64 * 64 + 64);
    CHECKF(!strcmp(f.parameter_size, "4K"), "%s", f.parameter_size);
    CHECKF(!strcmp(f.quantization, "Q8_0"), "%s", f.quantization);

    cJSON *d = facts_details_json(&f);
    CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(d, "format")), "gguf"));
    CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(d, "family")), "llama"));
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(d, "families")) == 1);
    CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(d, "quantization_level")), "Q8_0"));
    cJSON_Delete(d);

    /* model_info through text and back, as a client sees it */
    for (int verbose = 0; verbose <= 1; verbose++) {
        cJSON *info = facts_model_info_json(&f, verbose);
        char *text = cJSON_PrintUnformatted(info);
        cJSON_Delete(info);
        cJSON *j = cJSON_Parse(text);
        CHECKF(j != NULL, "model_info is not JSON: %.200s", text ? text : "(null)");
        CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(j, "general.architecture")), "llama"));
        CHECK(cJSON_GetObjectItem(j, "general.name") == NULL);
        CHECK(cJSON_GetObjectItem(j, "tokenizer.chat_template") == NULL);
        CHECK(cJSON_GetObjectItem(j, "llama.context_length")->valuedouble == 4096);
        CHECK(cJSON_GetObjectItem(j, "general.parameter_count")->valuedouble == 64 * 64 + 64);
        CHECK(cJSON_IsTrue(cJSON_GetObjectItem(j, "tokenizer.ggml.add_bos_token")));
        CHECKF(strstr(text, "\"llama.attention.layer_norm_rms_epsilon\":1e-05") != NULL, "float32 printed short: %.300s", text);
        cJSON *arr = cJSON_GetObjectItem(j, "llama.test_array");
        CHECK(cJSON_GetArraySize(arr) == 3 && cJSON_GetArrayItem(arr, 1)->valuedouble == -2);
        int ntok = cJSON_GetArraySize(cJSON_GetObjectItem(j, "tokenizer.ggml.tokens"));
        CHECKF(ntok == (verbose ? 2000 : 0), "verbose %d: %d tokens", verbose, ntok);
        if (verbose)
            CHECK(!strcmp(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "tokenizer.ggml.tokens"), 1999)->valuestring, "t1999"));
        cJSON_Delete(j);
        free(text);
    }
    cJSON *t = facts_tensors_json(&f);
    CHECK(cJSON_GetArraySize(t) == 2);
    cJSON *t0 = cJSON_GetArrayItem(t, 0);
    CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(t0, "name")), "blk.0.attn_q.weight"));
    CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(t0, "type")), "Q8_0"));
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(t0, "shape")) == 2);
    CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(t, 1), "type")), "F32"));
    cJSON_Delete(t);
    facts_close(&f);
    CHECK(f.file == NULL);

    /* a file that is not a GGUF: an error and "unknown" details, no crash */
    FILE *fp = fopen(path, "wb");
    if (fp) { fputs("not a gguf file at all", fp); fclose(fp); }
    CHECK(facts_read(path, &f) == -1 && anv_last_error()[0]);
    CHECK(f.file == NULL && !strcmp(f.family, "unknown") && !strcmp(f.quantization, "unknown"));
    cJSON *empty = facts_model_info_json(&f, true);
    CHECK(cJSON_GetArraySize(empty) == 0);
    cJSON_Delete(empty);
    facts_close(&f);
    CHECK(facts_read(NULL, &f) == -1);
    unlink(path);
}

static void test_latency_histogram(void) {
    static server_app app;
    memset(&app, 0, sizeof app);
    metrics_init(&app.metrics);
    metrics_observe(&app, "GET", "/api/tags", 200, 0.001);
    metrics_observe(&app, "GET", "/api/tags", 200, 0.3);
    metrics_observe(&app, "GET", "/api/tags", 404, 100);
    metrics_observe(&app, "POST", "/api/tags", 500, 0.02);
    metrics_observe(&app, "GET", NULL, 404, 0.001);
    CHECK(app.metrics.n_routes == 3);
    struct route_stats *rs = &app.metrics.routes[0];
    CHECK(!strcmp(rs->route, "/api/tags") && !strcmp(rs->method, "GET"));
    CHECK(rs->count == 3 && rs->count_by_status[2] == 2 && rs->count_by_status[4] == 1);
    CHECK(fabs(rs->sum_seconds - 100.301) < 1e-9);
    CHECK(rs->buckets[0] == 1);                               /* le 0.005 */
    CHECK(rs->buckets[METRICS_LATENCY_BUCKETS - 1] == 2);     /* le 60: the 100 s one is only in +Inf */
    for (int b = 1; b < METRICS_LATENCY_BUCKETS; b++) CHECK(rs->buckets[b] >= rs->buckets[b - 1]);
    CHECK(!strcmp(app.metrics.routes[2].route, "unmatched"));
    for (int i = 0; i < 100; i++) {   /* more routes than slots: counted where possible, no overflow */
        char route[32];
        snprintf(route, sizeof route, "/r%d", i);
        metrics_observe(&app, "GET", route, 200, 0.01);
    }
    CHECK(app.metrics.n_routes == (int)(sizeof app.metrics.routes / sizeof app.metrics.routes[0]));
    pthread_mutex_destroy(&app.metrics.lock);
}

int main(void) {
    test_human_number();
    test_format_number();
    test_rfc3339();
    test_facts();
    test_latency_histogram();
    return tu_finish();
}
