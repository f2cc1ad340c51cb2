/* quant: the table of GGUF tensor element types (names, block sizes, block bytes, which
 * ones Anvil can dequantize/quantize), name lookup, row sizes, and the dispatch of
 * dequantize_row()/quantize_row() to the reference code in quant_legacy.c and quant_k.c. */
#include "quant.h"
#include <assert.h>
#include <stdalign.h>
#include <strings.h>
#include "error.h"
#include "quant_impl.h"
#include "quant_iq.h"

/* Block layouts must match ggml byte for byte. */
static_assert(sizeof(block_q4_0) == 18, "block_q4_0 size");
static_assert(sizeof(block_q4_1) == 20, "block_q4_1 size");
static_assert(sizeof(block_q5_0) == 22, "block_q5_0 size");
static_assert(sizeof(block_q5_1) == 24, "block_q5_1 size");
static_assert(sizeof(block_q8_0) == 34, "block_q8_0 size");
static_assert(sizeof(block_q8_1) == 36, "block_q8_1 size");
static_assert(sizeof(block_q2_K) == 84, "block_q2_K size");
static_assert(sizeof(block_q3_K) == 110, "block_q3_K size");
static_assert(sizeof(block_q4_K) == 144, "block_q4_K size");
static_assert(sizeof(block_q5_K) == 176, "block_q5_K size");
static_assert(sizeof(block_q6_K) == 210, "block_q6_K size");
static_assert(sizeof(block_q8_K) == 292, "block_q8_K size");
static_assert(sizeof(block_mxfp4) == 17 && sizeof(block_iq4_nl) == 18 && sizeof(block_iq4_xs) == 136, "4-bit block sizes");
static_assert(sizeof(block_iq2_xxs) == 66 && sizeof(block_iq2_xs) == 74 && sizeof(block_iq2_s) == 82, "iq2 block sizes");
static_assert(sizeof(block_iq3_xxs) == 98 && sizeof(block_iq3_s) == 110, "iq3 block sizes");
static_assert(sizeof(block_iq1_s) == 50 && sizeof(block_iq1_m) == 56, "iq1 block sizes");
static_assert(sizeof(block_tq1_0) == 54 && sizeof(block_tq2_0) == 66, "ternary block sizes");
/* The reference code reads blocks in place, so their alignment must be 1 or 2 (4 for q8_K). */
static_assert(alignof(block_q4_K) == 2 && alignof(block_q6_K) == 2, "block alignment");

typedef struct {
    qtype_info info;
    q_dequant_fn dequant;
    q_quant_fn quant;
} qtype_entry;

/* A weight type with reference code, an activation-only type with reference code (never
 * accepted as a model weight), a weight type Anvil reads but does not write (dequantizer
 * only: quant_mxfp4.c, quant_iq.c), and one Anvil only knows by name and size. */
#define QT_ROW(id, nm, bs, ts, dq, q) [id] = { { nm, bs, ts, true, true, true }, dq, q }
#define QT_ACT(id, nm, bs, ts, dq, q) [id] = { { nm, bs, ts, true, true, false }, dq, q }
#define QT_READ(id, nm, bs, ts, dq) [id] = { { nm, bs, ts, true, false, true }, dq, NULL }
#define QT_NAMED(id, nm, bs, ts) [id] = { { nm, bs, ts, false, false, false }, NULL, NULL }

/* Every ggml type id below QT_COUNT that still exists; ids of removed types stay NULL. */
static const qtype_entry qtype_table[QT_COUNT] = {
    QT_ROW(QT_F32, "f32", 1, 4, qref_dequant_f32, qref_quant_f32),
    QT_ROW(QT_F16, "f16", 1, 2, qref_dequant_f16, qref_quant_f16),
    QT_ROW(QT_Q4_0, "q4_0", QK4_0, sizeof(block_q4_0), qref_dequant_q4_0, qref_quant_q4_0),
    QT_ROW(QT_Q4_1, "q4_1", QK4_1, sizeof(block_q4_1), qref_dequant_q4_1, qref_quant_q4_1),
    QT_ROW(QT_Q5_0, "q5_0", QK5_0, sizeof(block_q5_0), qref_dequant_q5_0, qref_quant_q5_0),
    QT_ROW(QT_Q5_1, "q5_1", QK5_1, sizeof(block_q5_1), qref_dequant_q5_1, qref_quant_q5_1),
    QT_ROW(QT_Q8_0, "q8_0", QK8_0, sizeof(block_q8_0), qref_dequant_q8_0, qref_quant_q8_0),
    QT_ACT(QT_Q8_1, "q8_1", QK8_0, sizeof(block_q8_1), qref_dequant_q8_1, qref_quant_q8_1),
    QT_ROW(QT_Q2_K, "q2_K", QK_K, sizeof(block_q2_K), qref_dequant_q2_K, qref_quant_q2_K),
    QT_ROW(QT_Q3_K, "q3_K", QK_K, sizeof(block_q3_K), qref_dequant_q3_K, qref_quant_q3_K),
    QT_ROW(QT_Q4_K, "q4_K", QK_K, sizeof(block_q4_K), qref_dequant_q4_K, qref_quant_q4_K),
    QT_ROW(QT_Q5_K, "q5_K", QK_K, sizeof(block_q5_K), qref_dequant_q5_K, qref_quant_q5_K),
    QT_ROW(QT_Q6_K, "q6_K", QK_K, sizeof(block_q6_K), qref_dequant_q6_K, qref_quant_q6_K),
    QT_ACT(QT_Q8_K, "q8_K", QK_K, sizeof(block_q8_K), qref_dequant_q8_K, qref_quant_q8_K),
    /* Read-only (quant_iq.c); the plain integer types are only named, so that errors can
     * say what a file holds. */
    QT_READ(QT_IQ2_XXS, "iq2_xxs", QK_K, sizeof(block_iq2_xxs), qref_dequant_iq2_xxs),
    QT_READ(QT_IQ2_XS, "iq2_xs", QK_K, sizeof(block_iq2_xs), qref_dequant_iq2_xs),
    QT_READ(QT_IQ3_XXS, "iq3_xxs", QK_K, sizeof(block_iq3_xxs), qref_dequant_iq3_xxs),
    QT_READ(QT_IQ1_S, "iq1_s", QK_K, sizeof(block_iq1_s), qref_dequant_iq1_s),
    QT_READ(QT_IQ4_NL, "iq4_nl", 32, sizeof(block_iq4_nl), qref_dequant_iq4_nl),
    QT_READ(QT_IQ3_S, "iq3_s", QK_K, sizeof(block_iq3_s), qref_dequant_iq3_s),
    QT_READ(QT_IQ2_S, "iq2_s", QK_K, sizeof(block_iq2_s), qref_dequant_iq2_s),
    QT_READ(QT_IQ4_XS, "iq4_xs", QK_K, sizeof(block_iq4_xs), qref_dequant_iq4_xs),
    QT_NAMED(24, "i8", 1, 1),
    QT_NAMED(25, "i16", 1, 2),
    QT_NAMED(26, "i32", 1, 4),
    QT_NAMED(27, "i64", 1, 8),
    QT_NAMED(28, "f64", 1, 8),
    QT_READ(QT_IQ1_M, "iq1_m", QK_K, sizeof(block_iq1_m), qref_dequant_iq1_m),
    QT_ROW(QT_BF16, "bf16", 1, 2, qref_dequant_bf16, qref_quant_bf16),
    QT_READ(QT_TQ1_0, "tq1_0", QK_K, sizeof(block_tq1_0), qref_dequant_tq1_0),
    QT_READ(QT_TQ2_0, "tq2_0", QK_K, sizeof(block_tq2_0), qref_dequant_tq2_0),
    QT_READ(QT_MXFP4, "mxfp4", 32, sizeof(block_mxfp4), qref_dequant_mxfp4),
};

static const qtype_entry *entry_of(uint32_t type) {
    if (type >= QT_COUNT || qtype_table[type].info.name == NULL) return NULL;
    return &qtype_table[type];
}

const qtype_info *qtype_get(uint32_t type) {
    const qtype_entry *e = entry_of(type);
    return e ? &e->info : NULL;
}

int qtype_from_name(const char *name) {
    if (!name) return -1;
    for (int t = 0; t < QT_COUNT; t++)
        if (qtype_table[t].info.name && strcasecmp(qtype_table[t].info.name, name) == 0) return t;
    return -1;
}

size_t qtype_row_size(qtype t, int64_t n) {
    const qtype_entry *e = entry_of((uint32_t)t);
    if (!e || n < 0 || n % e->info.block_size != 0) return 0;
    return (size_t)(n / e->info.block_size) * e->info.type_size;
}

void dequantize_row(qtype t, const void *src, float *dst, int64_t n) {
    const qtype_entry *e = entry_of((uint32_t)t);
    if (!e || !e->dequant) {
        anv_set_error("dequantize: type %u (%s) has no dequantizer", (unsigned)t,
                      e ? e->info.name : "unknown");
        return;
    }
    if (n < 0 || n % e->info.block_size != 0) {
        anv_set_error("dequantize: %lld elements is not a multiple of the %s block size %d",
                      (long long)n, e->info.name, e->info.block_size);
        return;
    }
    e->dequant(src, dst, n);
}

size_t quantize_row(qtype t, const float *src, void *dst, int64_t n) {
    const qtype_entry *e = entry_of((uint32_t)t);
    if (!e || !e->quant) {
        anv_set_error("quantize: type %u (%s) has no quantizer", (unsigned)t,
                      e ? e->info.name : "unknown");
        return 0;
    }
    if (n < 0 || n % e->info.block_size != 0) {
        anv_set_error("quantize: %lld elements is not a multiple of the %s block size %d",
                      (long long)n, e->info.name, e->info.block_size);
        return 0;
    }
    e->quant(src, dst, n);
    return (size_t)(n / e->info.block_size) * e->info.type_size;
}
