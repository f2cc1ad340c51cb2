/* iq_rand: test weights of any type. Types Anvil can quantize get quantize_row(); the
 * read-only ones (MXFP4, i-quants, TQ1_0/TQ2_0: no quantizer) get random block bytes with
 * sane scale fields (finite fp16 scales of magnitude 0.001..0.1, MXFP4 exponents near 2^0,
 * IQ1_M's scattered fp16), the same rules as tests/gguf/quant/make_iq_golden.py. Used by
 * test_quant_iq, test_cpu_ops and test_vulkan_ops (include as "gguf/iq_rand.h"). */
#ifndef ANVIL_TEST_IQ_RAND_H
#define ANVIL_TEST_IQ_RAND_H
#include <string.h>
#include "fp16.h"
#include "quant.h"
#include "testutil.h"

/* Byte offset of the fp16 block scale of a read-only type, -1 when it has none there. */
static inline int iq_rand_f16_offset(qtype t) {
    switch (t) {
    case QT_TQ1_0: return 52;
    case QT_TQ2_0: return 64;
    case QT_MXFP4: case QT_IQ1_M: return -1;
    default: return 0;
    }
}

static inline uint16_t iq_rand_scale(uint64_t *rng) {
    const float v = tu_rand_f32(rng, 0.001f, 0.1f);
    return fp32_to_fp16((tu_rand_u64(rng) & 1) ? v : -v);
}

/* One row of cols elements of type t into dst (qtype_row_size(t, cols) bytes). */
static inline void iq_rand_row(qtype t, const float *src, void *dst, int64_t cols, uint64_t *rng) {
    const qtype_info *qi = qtype_get(t);
    if (qi->can_quantize) { quantize_row(t, src, dst, cols); return; }
    uint8_t *b = dst;
    const size_t ts = qi->type_size;
    for (int64_t i = 0; i < cols / qi->block_size; i++, b += ts) {
        for (size_t k = 0; k < ts; k++) b[k] = (uint8_t)tu_rand_u64(rng);
        const int off = iq_rand_f16_offset(t);
        if (t == QT_MXFP4) b[0] = (uint8_t)(116 + tu_rand_u64(rng) % 16);
        if (off >= 0) { const uint16_t h = iq_rand_scale(rng); memcpy(b + off, &h, 2); }
        if (t == QT_IQ1_M) {
            const uint16_t h = iq_rand_scale(rng);
            uint16_t sc[4];
            memcpy(sc, b + 48, 8);
            for (int k = 0; k < 4; k++) sc[k] = (uint16_t)((sc[k] & 0x0FFF) | (((h >> (4 * k)) & 0xF) << 12));
            memcpy(b + 48, sc, 8);
        }
    }
}
#endif
