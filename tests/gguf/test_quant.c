/* test_quant: the quant module (engine/gguf/quant.h): type table and sizes; byte-exact agreement
 * of every reference quantizer and dequantizer with ggml / gguf-py / numpy on the golden data
 * in tests/data/quant/golden.bin (made by tests/gguf/quant/make_quant_golden.py); F16/BF16
 * conversions; quantize->dequantize error bounds on random data with odd row counts; edge
 * cases (zeros, constants, outliers, negative-only, subnormals, NaN/inf); error reporting. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "error.h"
#include "fp16.h"
#include "quant.h"
#include "testutil.h"

#define GOLDEN_PATH "data/quant/golden.bin"
#define G_ROWS 4
#define G_COLS 512

/* ---- golden file ---- */

typedef struct { char name[64]; const uint8_t *data; uint32_t size; } grec;
static grec g_recs[128];
static int g_nrecs;
static uint8_t *g_buf;

static int load_golden(void) {
    FILE *f = fopen(GOLDEN_PATH, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    g_buf = malloc((size_t)size);
    if (!g_buf || fread(g_buf, 1, (size_t)size, f) != (size_t)size) { fclose(f); return -1; }
    fclose(f);
    if (size < 8 || memcmp(g_buf, "AQG1", 4) != 0) return -1;
    uint32_t n;
    memcpy(&n, g_buf + 4, 4);
    size_t off = 8;
    for (uint32_t i = 0; i < n && g_nrecs < 128; i++) {
        if (off + 1 > (size_t)size) return -1;
        const int nl = g_buf[off++];
        if (off + (size_t)nl + 4 > (size_t)size || nl >= 64) return -1;
        grec *r = &g_recs[g_nrecs++];
        memcpy(r->name, g_buf + off, (size_t)nl);
        r->name[nl] = 0;
        off += (size_t)nl;
        memcpy(&r->size, g_buf + off, 4);
        off += 4;
        if (off + r->size > (size_t)size) return -1;
        r->data = g_buf + off;
        off += r->size;
    }
    return 0;
}

static const grec *golden(const char *prefix, const char *type) {
    char key[64];
    snprintf(key, sizeof key, "%s%s%s", prefix, type ? "/" : "", type ? type : "");
    for (int i = 0; i < g_nrecs; i++)
        if (strcmp(g_recs[i].name, key) == 0) return &g_recs[i];
    return NULL;
}

/* Bitwise float equality, any NaN equal to any NaN. Returns the first mismatching index or -1. */
static int64_t first_float_mismatch(const float *a, const void *b_bytes, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float b;
        memcpy(&b, (const uint8_t *)b_bytes + 4 * i, 4);
        if (isnan(a[i]) && isnan(b)) continue;
        if (fp32_to_bits(a[i]) != fp32_to_bits(b)) return i;
    }
    return -1;
}

static const qtype ALL_TYPES[] = {QT_F32, QT_F16, QT_BF16, QT_Q4_0, QT_Q4_1, QT_Q5_0, QT_Q5_1,
                                  QT_Q8_0, QT_Q8_1, QT_Q2_K, QT_Q3_K, QT_Q4_K, QT_Q5_K,
                                  QT_Q6_K, QT_Q8_K};
#define N_TYPES (int)(sizeof ALL_TYPES / sizeof ALL_TYPES[0])

/* ---- table ---- */

static void test_table(void) {
    static const struct { qtype t; const char *name; int bs; size_t ts; } want[] = {
        {QT_F32, "f32", 1, 4}, {QT_F16, "f16", 1, 2}, {QT_BF16, "bf16", 1, 2},
        {QT_Q4_0, "q4_0", 32, 18}, {QT_Q4_1, "q4_1", 32, 20}, {QT_Q5_0, "q5_0", 32, 22},
        {QT_Q5_1, "q5_1", 32, 24}, {QT_Q8_0, "q8_0", 32, 34}, {QT_Q8_1, "q8_1", 32, 36},
        {QT_Q2_K, "q2_K", 256, 84}, {QT_Q3_K, "q3_K", 256, 110}, {QT_Q4_K, "q4_K", 256, 144},
        {QT_Q5_K, "q5_K", 256, 176}, {QT_Q6_K, "q6_K", 256, 210}, {QT_Q8_K, "q8_K", 256, 292},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const qtype_info *info = qtype_get(want[i].t);
        CHECKF(info != NULL, "type %d", want[i].t);
        if (!info) continue;
        CHECKF(strcmp(info->name, want[i].name) == 0, "%s vs %s", info->name, want[i].name);
        CHECKF(info->block_size == want[i].bs && info->type_size == want[i].ts, "%s sizes", want[i].name);
        CHECKF(info->can_dequantize && info->can_quantize, "%s capabilities", want[i].name);
        CHECK(qtype_from_name(want[i].name) == (int)want[i].t);
        CHECK(qtype_row_size(want[i].t, 1024) == 1024 / (size_t)want[i].bs * want[i].ts);
    }
    CHECK(qtype_from_name("Q4_K") == QT_Q4_K);
    CHECK(qtype_from_name("BF16") == QT_BF16);
    CHECK(qtype_from_name("q4_k_m") == -1);
    CHECK(qtype_from_name("") == -1);
    CHECK(qtype_from_name(NULL) == -1);
    CHECK(qtype_get(4) == NULL && qtype_get(5) == NULL); /* removed Q4_2/Q4_3 */
    CHECK(qtype_get(QT_COUNT) == NULL && qtype_get(0xFFFFFFFFu) == NULL);
    const qtype_info *i8 = qtype_get(24); /* named only (the i-quants: test_quant_iq) */
    CHECK(i8 && strcmp(i8->name, "i8") == 0 && !i8->can_dequantize && !i8->can_quantize && !i8->is_weight);
    CHECK(qtype_row_size(QT_Q4_K, 100) == 0);
    CHECK(qtype_row_size(QT_Q4_0, -32) == 0);
    CHECK(qtype_row_size(QT_F16, 7) == 14);
    CHECK(qtype_row_size((qtype)99, 32) == 0);
}

/* ---- golden agreement ---- */

static void test_golden(void) {
    const grec *in = golden("input", NULL);
    CHECKF(in && in->size == G_ROWS * G_COLS * 4, "golden input record");
    if (!in) return;
    float *x = malloc(G_ROWS * G_COLS * sizeof(float));
    float *y = malloc(G_ROWS * G_COLS * sizeof(float));
    uint8_t *q = malloc(G_ROWS * G_COLS * 4);
    memcpy(x, in->data, in->size);
    int n_quant_checked = 0, n_dequant_checked = 0;
    for (int ti = 0; ti < N_TYPES; ti++) {
        const qtype t = ALL_TYPES[ti];
        const char *name = qtype_get(t)->name;
        const size_t row_bytes = qtype_row_size(t, G_COLS);
        const grec *gq = golden("q", name);
        if (gq) {
            CHECKF(gq->size == G_ROWS * row_bytes, "%s golden size", name);
            size_t bad = 0, first = 0;
            for (int r = 0; r < G_ROWS; r++) {
                uint8_t *qr = q + r * row_bytes;
                CHECK(quantize_row(t, x + r * G_COLS, qr, G_COLS) == row_bytes);
                for (size_t b = 0; b < row_bytes; b++)
                    if (qr[b] != gq->data[r * row_bytes + b] && bad++ == 0) first = r * row_bytes + b;
            }
            CHECKF(bad == 0, "%s quantizer: %zu of %zu bytes differ from the reference (first at %zu: %u vs %u)",
                   name, bad, G_ROWS * row_bytes, first, q[first], gq->data[first]);
            n_quant_checked++;
        }
        const grec *gdq = golden("dq", name);
        if (gq && gdq) {
            /* dequantize the reference bytes (not ours), so this is independent of the quantizer */
            memcpy(q, gq->data, gq->size);
            for (int r = 0; r < G_ROWS; r++) dequantize_row(t, q + r * row_bytes, y + r * G_COLS, G_COLS);
            const int64_t m = first_float_mismatch(y, gdq->data, G_ROWS * G_COLS);
            CHECKF(m < 0, "%s dequantizer differs at %lld", name, (long long)m);
            n_dequant_checked++;
        }
        const grec *grb = golden("rb", name), *grbdq = golden("rbdq", name);
        if (grb && grbdq) {
            CHECK(grb->size == row_bytes && grbdq->size == G_COLS * 4);
            memcpy(q, grb->data, grb->size);
            dequantize_row(t, q, y, G_COLS);
            const int64_t m = first_float_mismatch(y, grbdq->data, G_COLS);
            CHECKF(m < 0, "%s dequantizer (random blocks) differs at %lld", name, (long long)m);
        }
    }
    /* every type but F32 has reference bytes; all but Q8_1 (no reference) reference floats */
    CHECKF(n_quant_checked == N_TYPES - 1, "%d quantizers checked", n_quant_checked);
    CHECKF(n_dequant_checked == N_TYPES - 2, "%d dequantizers checked", n_dequant_checked);
    free(x);
    free(y);
    free(q);
}

/* ---- F16 / BF16 ---- */

static void test_half_conversions(void) {
    const grec *in = golden("f16", "in"), *o16 = golden("f16", "out"), *ob16 = golden("bf16", "out");
    CHECK(in && o16 && ob16);
    if (!in || !o16 || !ob16) return;
    const size_t n = in->size / 4;
    CHECK(o16->size == n * 2 && ob16->size == n * 2);
    size_t bad16 = 0, badb = 0;
    for (size_t i = 0; i < n; i++) {
        float v;
        uint16_t w16, wb;
        memcpy(&v, in->data + 4 * i, 4);
        memcpy(&w16, o16->data + 2 * i, 2);
        memcpy(&wb, ob16->data + 2 * i, 2);
        const uint16_t h = fp32_to_fp16(v), b = fp32_to_bf16(v);
        if (isnan(v)) { /* NaN payloads differ between implementations: compare class and sign */
            if ((h & 0x7C00) != 0x7C00 || !(h & 0x3FF) || (h & 0x8000) != (w16 & 0x8000)) bad16++;
        } else if (h != w16) {
            if (bad16++ == 0) fprintf(stderr, "f16(%a) = %04x, numpy %04x\n", (double)v, h, w16);
        }
        if (b != wb && badb++ == 0) fprintf(stderr, "bf16(%a) = %04x, ref %04x\n", (double)v, b, wb);
    }
    CHECKF(bad16 == 0, "%zu of %zu f16 conversions differ from numpy", bad16, n);
    CHECKF(badb == 0, "%zu of %zu bf16 conversions differ from the reference", badb, n);

    /* all 65536 halves -> float: FNV-1a of the bits equals numpy's (NaNs hashed as sign|0x7FC00000:
     * numpy keeps signaling NaNs signaling, fp16.h quiets them like F16C hardware does) */
    const grec *fnv = golden("f16", "table_fnv");
    CHECK(fnv && fnv->size == 8);
    uint64_t want = 0, h = 0xCBF29CE484222325ull;
    if (fnv) memcpy(&want, fnv->data, 8);
    size_t roundtrip_bad = 0;
    for (uint32_t i = 0; i < 65536; i++) {
        const float f = fp16_to_fp32((uint16_t)i);
        const bool nan_half = (i & 0x7C00) == 0x7C00 && (i & 0x3FF);
        CHECK(nan_half == (bool)isnan(f));
        const uint32_t bits = nan_half ? ((i & 0x8000u) << 16) | 0x7FC00000u : fp32_to_bits(f);
        for (int k = 0; k < 4; k++) { h ^= (bits >> (8 * k)) & 0xFF; h *= 0x100000001B3ull; }
        if (!isnan(f) && fp32_to_fp16(f) != i) roundtrip_bad++;
    }
    CHECKF(h == want, "fp16_to_fp32 table hash %016llx, numpy %016llx", (unsigned long long)h,
           (unsigned long long)want);
    CHECKF(roundtrip_bad == 0, "%zu halves do not survive half->float->half", roundtrip_bad);
    /* a few by hand */
    CHECK(fp32_to_fp16(1.0f + 0x1p-11f) == 0x3C00);          /* tie -> even (down) */
    CHECK(fp32_to_fp16(1.0f + 3 * 0x1p-11f) == 0x3C02);      /* tie -> even (up) */
    CHECK(fp32_to_fp16(65520.0f) == 0x7C00);                 /* rounds to inf */
    CHECK(fp32_to_fp16(0x1p-25f) == 0x0000);                 /* tie to the even zero */
    CHECK(fp32_to_fp16(0x1p-24f) == 0x0001);                 /* smallest subnormal */
    CHECK(fp32_to_bf16(1.0f + 0x1p-8f) == 0x3F80 && fp32_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3F82);
    CHECK(isnan(bf16_to_fp32(fp32_to_bf16(NAN))) && isinf(bf16_to_fp32(fp32_to_bf16(INFINITY))));
}

/* ---- round-trip error bounds ---- */

/* Normalized RMS error bounds on N(0,1) data (measured about 20-40% lower). */
static double rmse_bound(qtype t) {
    switch (t) {
    case QT_F32: return 0;
    case QT_F16: return 4e-4;
    case QT_BF16: return 3e-3;
    case QT_Q4_0: return 0.125;
    case QT_Q4_1: return 0.11;
    case QT_Q5_0: return 0.062;
    case QT_Q5_1: return 0.055;
    case QT_Q8_0: case QT_Q8_1: return 0.0075;
    case QT_Q2_K: return 0.38;
    case QT_Q3_K: return 0.20;
    case QT_Q4_K: return 0.105;
    case QT_Q5_K: return 0.052;
    case QT_Q6_K: return 0.026;
    case QT_Q8_K: return 0.0095;
    default: return 0;
    }
}

static void quant_dequant(qtype t, const float *x, float *y, int64_t rows, int64_t cols) {
    const size_t rb = qtype_row_size(t, cols);
    uint8_t *q = malloc(rb * (size_t)rows);
    for (int64_t r = 0; r < rows; r++) quantize_row(t, x + r * cols, q + r * rb, cols);
    for (int64_t r = 0; r < rows; r++) dequantize_row(t, q + r * rb, y + r * cols, cols);
    free(q);
}

static double nrmse(const float *x, const float *y, int64_t n) {
    double se = 0, sx = 0;
    for (int64_t i = 0; i < n; i++) { se += (double)(x[i] - y[i]) * (x[i] - y[i]); sx += (double)x[i] * x[i]; }
    return sx > 0 ? sqrt(se / sx) : sqrt(se);
}

static void test_roundtrip_random(void) {
    const int64_t rows = 7, cols = 768; /* odd row count, 3 super-blocks / 24 blocks per row */
    float *x = malloc(sizeof(float) * rows * cols), *y = malloc(sizeof(float) * rows * cols);
    uint64_t s = 12345;
    for (int64_t i = 0; i < rows * cols; i++) {
        /* Box-Muller normal */
        const float u1 = tu_rand_f32(&s, 1e-7f, 1), u2 = tu_rand_f32(&s, 0, 1);
        x[i] = sqrtf(-2 * logf(u1)) * cosf(6.2831853f * u2) * (1 + (float)(i / cols)); /* row scale 1..7 */
    }
    for (int ti = 0; ti < N_TYPES; ti++) {
        const qtype t = ALL_TYPES[ti];
        quant_dequant(t, x, y, rows, cols);
        const double e = nrmse(x, y, rows * cols);
        CHECKF(e <= rmse_bound(t), "%s: normalized RMS error %.5f > %.5f", qtype_get(t)->name, e, rmse_bound(t));
        if (getenv("ANVIL_TEST_VERBOSE")) printf("  %-5s nrmse %.5f\n", qtype_get(t)->name, e);
        /* per-block: no element is off by more than the block's range (catches packing bugs that
         * a global RMS could hide) */
        const int bs = qtype_get(t)->block_size == 1 ? 32 : qtype_get(t)->block_size;
        int bad = 0;
        for (int64_t b = 0; b < rows * cols; b += bs) {
            float amax = 0;
            for (int k = 0; k < bs; k++) amax = fmaxf(amax, fabsf(x[b + k]));
            for (int k = 0; k < bs; k++) bad += !(fabsf(x[b + k] - y[b + k]) <= 0.75f * amax);
        }
        CHECKF(bad == 0, "%s: %d elements off by more than 0.75 * block absmax", qtype_get(t)->name, bad);
    }
    free(x);
    free(y);
}

/* ---- edge cases ---- */

static bool all_finite(const float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) if (!isfinite(y[i])) return false;
    return true;
}

static void test_edge_cases(void) {
    enum { N = 512 };
    float x[N], y[N];
    for (int ti = 0; ti < N_TYPES; ti++) {
        const qtype t = ALL_TYPES[ti];
        const char *name = qtype_get(t)->name;
        const bool has_min = t == QT_Q4_1 || t == QT_Q5_1 || t == QT_Q2_K || t == QT_Q4_K || t == QT_Q5_K;

        /* all zeros -> exact zeros */
        memset(x, 0, sizeof x);
        quant_dequant(t, x, y, 1, N);
        bool zeros = true;
        for (int i = 0; i < N; i++) zeros &= y[i] == 0.0f;
        CHECKF(zeros, "%s: zeros do not come back as zeros", name);

        /* constant rows: within 2% (a constant is the best case of every format) */
        for (int i = 0; i < N; i++) x[i] = 0.37f;
        quant_dequant(t, x, y, 1, N);
        CHECKF(tu_max_abs_diff(y, x, N) <= 0.02f * 0.37f, "%s: constant row error %g", name, tu_max_abs_diff(y, x, N));
        for (int i = 0; i < N; i++) x[i] = -1.5f;
        quant_dequant(t, x, y, 1, N);
        CHECKF(tu_max_abs_diff(y, x, N) <= 0.02f * 1.5f, "%s: negative constant error %g", name, tu_max_abs_diff(y, x, N));

        /* one huge outlier among small values: the outlier survives within 3% */
        uint64_t s = 99 + (uint64_t)ti;
        for (int i = 0; i < N; i++) x[i] = tu_rand_f32(&s, -0.01f, 0.01f);
        x[300] = 1000.0f;
        quant_dequant(t, x, y, 1, N);
        CHECKF(fabsf(y[300] - 1000.0f) <= 30.0f, "%s: outlier came back as %g", name, y[300]);
        CHECKF(all_finite(y, N), "%s: outlier row gives non-finite values", name);

        /* negative-only data: sign kept, error within the type's bound x 2 */
        for (int i = 0; i < N; i++) x[i] = tu_rand_f32(&s, -2.0f, -0.01f);
        quant_dequant(t, x, y, 1, N);
        int positive = 0;
        const float step = t == QT_Q2_K ? 0.4f : t == QT_Q3_K ? 0.2f : 0.05f; /* half a level */
        for (int i = 0; i < N; i++) positive += y[i] > step;
        CHECKF(positive == 0, "%s: %d negative inputs came back clearly positive", name, positive);
        CHECKF(nrmse(x, y, N) <= 2 * rmse_bound(t) + 1e-6, "%s: negative-only nrmse %.4f", name, nrmse(x, y, N));
        if (has_min) /* formats with an offset fit a one-signed block better than symmetric ones */
            CHECKF(nrmse(x, y, N) <= rmse_bound(t), "%s: negative-only nrmse %.4f", name, nrmse(x, y, N));

        /* f32 subnormals and tiny normals: finite, and tiny */
        for (int i = 0; i < N; i++) x[i] = (i % 2 ? 1 : -1) * (float)(i + 1) * 1e-42f;
        quant_dequant(t, x, y, 1, N);
        CHECKF(all_finite(y, N), "%s: subnormal input gives non-finite values", name);
        CHECKF(tu_max_abs_diff(y, x, N) <= 1e-38f, "%s: subnormal row error %g", name, tu_max_abs_diff(y, x, N));

        /* NaN / inf inputs: must not crash or trip the sanitizers; other blocks unaffected */
        for (int i = 0; i < N; i++) x[i] = tu_rand_f32(&s, -1, 1);
        x[5] = NAN;
        x[7] = INFINITY;
        x[9] = -INFINITY;
        quant_dequant(t, x, y, 1, N);
        CHECKF(all_finite(y + 256, 256), "%s: a NaN in block 0 leaks into the second half of the row", name);
    }
}

/* ---- errors ---- */

static void test_errors(void) {
    float x[64] = {0}, y[64];
    uint8_t q[512];
    anv_set_error("%s", "");
    CHECK(quantize_row(QT_Q4_K, x, q, 64) == 0);
    CHECK(strstr(anv_last_error(), "q4_K") != NULL);
    CHECK(quantize_row((qtype)16, x, q, 256) == 0); /* iq2_xxs: no quantizer */
    CHECK(strstr(anv_last_error(), "iq2_xxs") != NULL);
    CHECK(quantize_row((qtype)77, x, q, 32) == 0);
    anv_set_error("%s", "");
    dequantize_row(QT_Q4_0, q, y, 33);
    CHECK(anv_last_error()[0] != 0);
    anv_set_error("%s", "");
    dequantize_row((qtype)24, q, y, 64); /* i8: named only */
    CHECK(strstr(anv_last_error(), "i8") != NULL);
    CHECK(quantize_row(QT_Q8_0, x, q, 64) == 68);
}

int main(void) {
    test_table();
    if (load_golden() != 0) {
        fprintf(stderr, "cannot read %s (run from tests/, see tests/gguf/quant/make_quant_golden.py)\n", GOLDEN_PATH);
        tu_failed++;
    } else {
        test_golden();
        test_half_conversions();
    }
    test_roundtrip_random();
    test_edge_cases();
    test_errors();
    free(g_buf);
    return tu_finish();
}
