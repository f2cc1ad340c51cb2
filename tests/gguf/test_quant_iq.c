/* test_quant_iq: the read-only weight types (quant_iq.h: MXFP4, the i-quants, TQ1_0/TQ2_0):
 * type table entries (ids, names, sizes, dequantize-only), bit-exact agreement of every
 * reference dequantizer with ggml and gguf-py on the random blocks of
 * tests/data/quant/golden_iq.bin (tests/gguf/quant/make_iq_golden.py), the integer decode
 * of the CPU vec-dot (iq_decode_block) against the dequantizers, the MXFP4 exponent
 * edge codes, and the one-line errors of asking them to quantize. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "error.h"
#include "fp16.h"
#include "quant.h"
#include "quant_iq.h"
#include "testutil.h"

#define GOLDEN_PATH "data/quant/golden_iq.bin"
#define G_ROWS 3
#define G_COLS 1024

static const struct { qtype t; const char *name; int bs; size_t ts; } k_types[] = {
    {QT_MXFP4, "mxfp4", 32, 17},      {QT_IQ4_NL, "iq4_nl", 32, 18},    {QT_IQ4_XS, "iq4_xs", 256, 136},
    {QT_IQ3_XXS, "iq3_xxs", 256, 98}, {QT_IQ3_S, "iq3_s", 256, 110},    {QT_IQ2_XXS, "iq2_xxs", 256, 66},
    {QT_IQ2_XS, "iq2_xs", 256, 74},   {QT_IQ2_S, "iq2_s", 256, 82},     {QT_IQ1_S, "iq1_s", 256, 50},
    {QT_IQ1_M, "iq1_m", 256, 56},     {QT_TQ1_0, "tq1_0", 256, 54},     {QT_TQ2_0, "tq2_0", 256, 66},
};
#define N_TYPES (int)(sizeof k_types / sizeof k_types[0])

static uint8_t *g_buf;
static size_t g_size;

/* A copy of the payload of record `name` in its own (malloc-aligned) buffer, or NULL; the
 * records sit at arbitrary byte offsets in the file, and block structs need 2-byte alignment,
 * as they have in a GGUF tensor. The caller frees it. */
static uint8_t *golden(const char *name, uint32_t *size) {
    if (!g_buf || g_size < 8 || memcmp(g_buf, "AQG1", 4) != 0) return NULL;
    uint32_t n;
    memcpy(&n, g_buf + 4, 4);
    size_t off = 8;
    for (uint32_t i = 0; i < n; i++) {
        if (off + 1 > g_size) return NULL;
        const size_t nl = g_buf[off++];
        if (off + nl + 4 > g_size) return NULL;
        uint32_t sz;
        memcpy(&sz, g_buf + off + nl, 4);
        if (off + nl + 4 + sz > g_size) return NULL;
        if (nl == strlen(name) && memcmp(g_buf + off, name, nl) == 0) {
            uint8_t *copy = malloc(sz ? sz : 1);
            if (!copy) return NULL;
            memcpy(copy, g_buf + off + nl + 4, sz);
            *size = sz;
            return copy;
        }
        off += nl + 4 + sz;
    }
    return NULL;
}

static void test_table(void) {
    for (int i = 0; i < N_TYPES; i++) {
        const qtype_info *qi = qtype_get(k_types[i].t);
        CHECKF(qi != NULL, "type %d", k_types[i].t);
        if (!qi) continue;
        CHECKF(strcmp(qi->name, k_types[i].name) == 0, "%s vs %s", qi->name, k_types[i].name);
        CHECKF(qi->block_size == k_types[i].bs && qi->type_size == k_types[i].ts, "%s sizes", qi->name);
        CHECKF(qi->can_dequantize && !qi->can_quantize && qi->is_weight, "%s capabilities", qi->name);
        CHECK(qtype_from_name(k_types[i].name) == (int)k_types[i].t);
        CHECK(qtype_row_size(k_types[i].t, 4096) == 4096 / (size_t)k_types[i].bs * k_types[i].ts);
    }
    CHECK(qtype_from_name("MXFP4") == QT_MXFP4);
}

static void test_golden(void) {
    size_t len = 0;
    g_buf = (uint8_t *)tu_read_file(GOLDEN_PATH, &len);
    g_size = len;
    CHECKF(g_buf != NULL, "cannot read %s", GOLDEN_PATH);
    if (!g_buf) return;
    float *got = malloc(sizeof(float) * G_ROWS * G_COLS);
    for (int i = 0; i < N_TYPES; i++) {
        char key[64];
        uint32_t qsz = 0, dsz = 0;
        snprintf(key, sizeof key, "rb/%s", k_types[i].name);
        uint8_t *q = golden(key, &qsz);
        snprintf(key, sizeof key, "rbdq/%s", k_types[i].name);
        uint8_t *want = golden(key, &dsz);
        const size_t rb = qtype_row_size(k_types[i].t, G_COLS);
        CHECKF(q && want && qsz == rb * G_ROWS && dsz == 4u * G_ROWS * G_COLS, "%s golden records", k_types[i].name);
        if (!q || !want || qsz != rb * G_ROWS || dsz != 4u * G_ROWS * G_COLS) {
            free(q);
            free(want);
            continue;
        }
        for (int r = 0; r < G_ROWS; r++) dequantize_row(k_types[i].t, q + rb * (size_t)r, got + (size_t)r * G_COLS, G_COLS);
        int64_t bad = -1;
        for (int64_t e = 0; e < G_ROWS * G_COLS && bad < 0; e++) {
            float w;
            memcpy(&w, want + 4 * e, 4);
            if (!(isnan(w) && isnan(got[e])) && fp32_to_bits(w) != fp32_to_bits(got[e])) bad = e;
        }
        float wb = 0;
        if (bad >= 0) memcpy(&wb, want + 4 * bad, 4);
        CHECKF(bad < 0, "%s dequant differs from ggml at element %lld: %g vs %g", k_types[i].name, (long long)bad,
               bad >= 0 ? got[bad] : 0.0f, wb);
        free(q);
        free(want);
    }
    free(got);
}

/* iq_decode_block (the CPU vec-dot's form) gives the reference values, bit for bit, on the
 * golden blocks; it refuses the 32-element and the older types. */
static void test_decode(void) {
    float ref[QK_K];
    iq_decoded k;
    for (int i = 0; i < N_TYPES; i++) {
        if (k_types[i].bs != QK_K) continue;
        char key[64];
        uint32_t qsz = 0;
        snprintf(key, sizeof key, "rb/%s", k_types[i].name);
        uint8_t *q = golden(key, &qsz);
        if (!q) continue; /* reported by test_golden */
        int bad = 0;
        for (uint32_t b = 0; b < qsz / k_types[i].ts; b++) {
            const uint8_t *blk = q + b * k_types[i].ts;
            dequantize_row(k_types[i].t, blk, ref, QK_K);
            CHECK(iq_decode_block(k_types[i].t, blk, &k));
            for (int e = 0; e < QK_K; e++) {
                const float v = k.scale[e / 16] * ((float)k.q[e] + k.delta[e / 8]);
                if (fp32_to_bits(v) != fp32_to_bits(ref[e])) bad++;
            }
        }
        CHECKF(bad == 0, "%s: iq_decode_block differs from the dequantizer in %d elements", k_types[i].name, bad);
        free(q);
    }
    _Alignas(16) uint8_t zero[QK_K] = {0};
    CHECK(!iq_decode_block(QT_IQ4_NL, zero, &k) && !iq_decode_block(QT_MXFP4, zero, &k) && !iq_decode_block(QT_Q4_K, zero, &k));
}

static void test_mxfp4_exponents(void) {
    CHECK(e8m0_to_fp32_half(128) == 1.0f);
    CHECK(e8m0_to_fp32_half(127) == 0.5f);
    CHECK(e8m0_to_fp32_half(2) == ldexpf(1.0f, -126));
    CHECK(e8m0_to_fp32_half(1) == ldexpf(1.0f, -127)); /* subnormal */
    CHECK(e8m0_to_fp32_half(0) == ldexpf(1.0f, -128));
    CHECK(e8m0_to_fp32_half(255) == ldexpf(1.0f, 127));
    block_mxfp4 b = {.e = 129};
    for (int j = 0; j < 16; j++) b.qs[j] = (uint8_t)(j | ((15 - j) << 4));
    float y[32];
    dequantize_row(QT_MXFP4, &b, y, 32);
    CHECK(y[0] == 0.0f && y[1] == 2.0f && y[7] == 24.0f && y[8] == 0.0f && y[15] == -24.0f);
    CHECK(y[16] == -24.0f && y[31] == 0.0f && y[16 + 10] == 12.0f);
}

static void test_errors(void) {
    for (int i = 0; i < N_TYPES; i++) {
        float x[256] = {0};
        _Alignas(16) uint8_t q[256];
        anv_set_error("%s", "");
        CHECK(quantize_row(k_types[i].t, x, q, k_types[i].bs) == 0);
        CHECKF(strstr(anv_last_error(), "has no quantizer") != NULL, "%s: %s", k_types[i].name, anv_last_error());
        anv_set_error("%s", "");
        dequantize_row(k_types[i].t, q, x, k_types[i].bs + 1);
        CHECKF(strstr(anv_last_error(), "not a multiple") != NULL, "%s: %s", k_types[i].name, anv_last_error());
    }
}

int main(void) {
    test_table();
    test_golden();
    test_decode();
    test_mxfp4_exponents();
    test_errors();
    free(g_buf);
    return tu_finish();
}
