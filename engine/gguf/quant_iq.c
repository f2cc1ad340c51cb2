/* quant_iq: the reference dequantizers of the i-quants (IQ4_NL, IQ4_XS, IQ3_XXS, IQ3_S,
 * IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M) and the ternary types (TQ1_0, TQ2_0), with the same
 * float operations in the same order as ggml's dequantize_row_* (bit-exact, checked by
 * test_quant_iq against ggml), and iq_decode_block, the integer form the CPU's scalar
 * vec-dot uses. Grids: quant_iq_tables.c. */
#include <stdbool.h>
#include "fp16.h"
#include "quant_impl.h"
#include "quant_iq.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

static inline const uint8_t *grid8(const uint64_t *grid, unsigned i) { return (const uint8_t *)(grid + i); }
static inline const uint8_t *grid4(const uint32_t *grid, unsigned i) { return (const uint8_t *)(grid + i); }
static inline float sgn(uint8_t signs, int j) { return (signs >> j) & 1 ? -1.f : 1.f; }

void qref_dequant_iq4_nl(const void *src, float *y, int64_t n) {
    const block_iq4_nl *x = src;
    for (int64_t i = 0; i < n / 32; i++, y += 32) {
        const float d = fp16_to_fp32(x[i].d);
        for (int j = 0; j < 16; j++) {
            y[j] = d * kvalues_iq4nl[x[i].qs[j] & 0xf];
            y[j + 16] = d * kvalues_iq4nl[x[i].qs[j] >> 4];
        }
    }
}

static inline int iq4xs_scale(const block_iq4_xs *b, int ib) {
    return (((b->scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) | (((b->scales_h >> 2 * ib) & 3) << 4)) - 32;
}

void qref_dequant_iq4_xs(const void *src, float *y, int64_t n) {
    const block_iq4_xs *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_fp32(x[i].d);
        const uint8_t *qs = x[i].qs;
        for (int ib = 0; ib < 8; ib++, qs += 16, y += 32) {
            const float dl = d * iq4xs_scale(&x[i], ib);
            for (int j = 0; j < 16; j++) {
                y[j] = dl * kvalues_iq4nl[qs[j] & 0xf];
                y[j + 16] = dl * kvalues_iq4nl[qs[j] >> 4];
            }
        }
    }
}

void qref_dequant_iq2_xxs(const void *src, float *y, int64_t n) {
    const block_iq2_xxs *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_fp32(x[i].d);
        for (int ib = 0; ib < 8; ib++) {
            uint32_t aux[2];
            memcpy(aux, x[i].qs + 4 * ib, 8);
            const uint8_t *idx = (const uint8_t *)aux;
            const float db = d * (0.5f + (aux[1] >> 28)) * 0.25f;
            for (int l = 0; l < 4; l++, y += 8) {
                const uint8_t *g = grid8(iq2xxs_grid, idx[l]);
                const uint8_t signs = iq_ksigns(aux[1] >> 7 * l);
                for (int j = 0; j < 8; j++) y[j] = db * g[j] * sgn(signs, j);
            }
        }
    }
}

void qref_dequant_iq2_xs(const void *src, float *y, int64_t n) {
    const block_iq2_xs *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_fp32(x[i].d);
        for (int ib = 0; ib < 8; ib++) {
            const float db[2] = {d * (0.5f + (x[i].scales[ib] & 0xf)) * 0.25f, d * (0.5f + (x[i].scales[ib] >> 4)) * 0.25f};
            for (int l = 0; l < 4; l++, y += 8) {
                const uint16_t q = x[i].qs[4 * ib + l];
                const uint8_t *g = grid8(iq2xs_grid, q & 511);
                const uint8_t signs = iq_ksigns(q >> 9);
                for (int j = 0; j < 8; j++) y[j] = db[l / 2] * g[j] * sgn(signs, j);
            }
        }
    }
}

void qref_dequant_iq2_s(const void *src, float *y, int64_t n) {
    const block_iq2_s *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_fp32(x[i].d);
        const uint8_t *qs = x[i].qs, *signs = x[i].qs + QK_K / 8;
        for (int ib = 0; ib < 8; ib++, qs += 4, signs += 4) {
            const float db[2] = {d * (0.5f + (x[i].scales[ib] & 0xf)) * 0.25f, d * (0.5f + (x[i].scales[ib] >> 4)) * 0.25f};
            for (int l = 0; l < 4; l++, y += 8) {
                const uint8_t *g = grid8(iq2s_grid, qs[l] | ((x[i].qh[ib] << (8 - 2 * l)) & 0x300));
                for (int j = 0; j < 8; j++) y[j] = db[l / 2] * g[j] * sgn(signs[l], j);
            }
        }
    }
}

void qref_dequant_iq3_xxs(const void *src, float *y, int64_t n) {
    const block_iq3_xxs *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_fp32(x[i].d);
        const uint8_t *qs = x[i].qs, *sas = x[i].qs + QK_K / 4;
        for (int ib = 0; ib < 8; ib++, qs += 8) {
            uint32_t aux;
            memcpy(&aux, sas + 4 * ib, 4);
            const float db = d * (0.5f + (aux >> 28)) * 0.5f;
            for (int l = 0; l < 4; l++, y += 8) {
                const uint8_t signs = iq_ksigns(aux >> 7 * l);
                const uint8_t *g1 = grid4(iq3xxs_grid, qs[2 * l]), *g2 = grid4(iq3xxs_grid, qs[2 * l + 1]);
                for (int j = 0; j < 4; j++) {
                    y[j] = db * g1[j] * sgn(signs, j);
                    y[j + 4] = db * g2[j] * sgn(signs, j + 4);
                }
            }
        }
    }
}

void qref_dequant_iq3_s(const void *src, float *y, int64_t n) {
    const block_iq3_s *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_fp32(x[i].d);
        const uint8_t *qs = x[i].qs, *qh = x[i].qh, *signs = x[i].signs;
        for (int ib = 0; ib < 8; ib += 2) {
            const float db[2] = {d * (1 + 2 * (x[i].scales[ib / 2] & 0xf)), d * (1 + 2 * (x[i].scales[ib / 2] >> 4))};
            for (int h = 0; h < 2; h++, qs += 8, signs += 4) {
                for (int l = 0; l < 4; l++, y += 8) {
                    const uint8_t *g1 = grid4(iq3s_grid, qs[2 * l] | ((qh[h] << (8 - 2 * l)) & 256));
                    const uint8_t *g2 = grid4(iq3s_grid, qs[2 * l + 1] | ((qh[h] << (7 - 2 * l)) & 256));
                    for (int j = 0; j < 4; j++) {
                        y[j] = db[h] * g1[j] * sgn(signs[l], j);
                        y[j + 4] = db[h] * g2[j] * sgn(signs[l], j + 4);
                    }
                }
            }
            qh += 2;
        }
    }
}

void qref_dequant_iq1_s(const void *src, float *y, int64_t n) {
    const block_iq1_s *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_fp32(x[i].d);
        const uint8_t *qs = x[i].qs;
        for (int ib = 0; ib < 8; ib++, qs += 4) {
            const uint16_t qh = x[i].qh[ib];
            const float dl = d * (2 * ((qh >> 12) & 7) + 1);
            const float delta = qh & 0x8000 ? -IQ1S_DELTA : IQ1S_DELTA;
            for (int l = 0; l < 4; l++, y += 8) {
                const int8_t *g = (const int8_t *)(iq1s_grid + (qs[l] | (((qh >> 3 * l) & 7) << 8)));
                for (int j = 0; j < 8; j++) y[j] = dl * (g[j] + delta);
            }
        }
    }
}

void qref_dequant_iq1_m(const void *src, float *y, int64_t n) {
    const block_iq1_m *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        uint16_t sc[4];
        memcpy(sc, x[i].scales, 8);
        const float d = fp16_to_fp32(iq1m_scale_bits(x[i].scales));
        const uint8_t *qs = x[i].qs, *qh = x[i].qh;
        for (int ib = 0; ib < 8; ib++, qs += 4, qh += 2) {
            const float dl[2] = {d * (2 * ((sc[ib / 2] >> (6 * (ib % 2) + 0)) & 0x7) + 1),
                                 d * (2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3)) & 0x7) + 1)};
            const unsigned idx[4] = {qs[0] | ((qh[0] << 8) & 0x700u), qs[1] | ((qh[0] << 4) & 0x700u),
                                     qs[2] | ((qh[1] << 8) & 0x700u), qs[3] | ((qh[1] << 4) & 0x700u)};
            const float delta[4] = {qh[0] & 0x08 ? -IQ1S_DELTA : IQ1S_DELTA, qh[0] & 0x80 ? -IQ1S_DELTA : IQ1S_DELTA,
                                    qh[1] & 0x08 ? -IQ1S_DELTA : IQ1S_DELTA, qh[1] & 0x80 ? -IQ1S_DELTA : IQ1S_DELTA};
            for (int l = 0; l < 4; l++, y += 8) {
                const int8_t *g = (const int8_t *)(iq1s_grid + idx[l]);
                for (int j = 0; j < 8; j++) y[j] = dl[l / 2] * (g[j] + delta[l]);
            }
        }
    }
}

/* TQ1_0 ternary digit n (0..4) of a base-3 packed byte: ggml's multiply-and-take-top trick. */
static inline int tq1_digit(uint8_t b, int n) {
    static const uint8_t pow3[6] = {1, 3, 9, 27, 81, 243};
    const uint8_t q = (uint8_t)(b * pow3[n]);
    return (int)(((uint16_t)q * 3) >> 8);
}

/* The 256 ternary values (-1, 0, 1) of a TQ1_0 block in element order. */
static void tq1_values(const block_tq1_0 *b, int8_t *v) {
    for (int j = 0; j < 32; j += 32)
        for (int n = 0; n < 5; n++)
            for (int m = 0; m < 32; m++) *v++ = (int8_t)(tq1_digit(b->qs[j + m], n) - 1);
    for (int j = 32; j < 48; j += 16)
        for (int n = 0; n < 5; n++)
            for (int m = 0; m < 16; m++) *v++ = (int8_t)(tq1_digit(b->qs[j + m], n) - 1);
    for (int n = 0; n < 4; n++)
        for (int j = 0; j < 4; j++) *v++ = (int8_t)(tq1_digit(b->qh[j], n) - 1);
}

static void tq2_values(const block_tq2_0 *b, int8_t *v) {
    for (int j = 0; j < 64; j += 32)
        for (int l = 0; l < 4; l++)
            for (int m = 0; m < 32; m++) *v++ = (int8_t)(((b->qs[j + m] >> (l * 2)) & 3) - 1);
}

void qref_dequant_tq1_0(const void *src, float *y, int64_t n) {
    const block_tq1_0 *x = src;
    int8_t v[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, y += QK_K) {
        const float d = fp16_to_fp32(x[i].d);
        tq1_values(&x[i], v);
        for (int j = 0; j < QK_K; j++) y[j] = (float)v[j] * d;
    }
}

void qref_dequant_tq2_0(const void *src, float *y, int64_t n) {
    const block_tq2_0 *x = src;
    int8_t v[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, y += QK_K) {
        const float d = fp16_to_fp32(x[i].d);
        tq2_values(&x[i], v);
        for (int j = 0; j < QK_K; j++) y[j] = (float)v[j] * d;
    }
}

/* ---- integer form for the vec-dot: element e = scale[e / 16] * (q[e] + delta[e / 8]) ---- */

static void set_scales(iq_decoded *o, int g32, float s) { o->scale[2 * g32] = o->scale[2 * g32 + 1] = s; }

bool iq_decode_block(qtype t, const void *blk, iq_decoded *o) {
    memset(o->delta, 0, sizeof o->delta);
    int8_t *q = o->q;
    switch (t) {
    case QT_IQ4_XS: {
        const block_iq4_xs *b = blk;
        const float d = fp16_to_fp32(b->d);
        for (int ib = 0; ib < 8; ib++, q += 32) {
            set_scales(o, ib, d * iq4xs_scale(b, ib));
            for (int j = 0; j < 16; j++) { q[j] = kvalues_iq4nl[b->qs[16 * ib + j] & 0xf]; q[j + 16] = kvalues_iq4nl[b->qs[16 * ib + j] >> 4]; }
        }
        return true;
    }
    case QT_IQ2_XXS: {
        const block_iq2_xxs *b = blk;
        const float d = fp16_to_fp32(b->d);
        for (int ib = 0; ib < 8; ib++) {
            uint32_t aux[2];
            memcpy(aux, b->qs + 4 * ib, 8);
            set_scales(o, ib, d * (0.5f + (aux[1] >> 28)) * 0.25f);
            for (int l = 0; l < 4; l++, q += 8) {
                const uint8_t *g = grid8(iq2xxs_grid, ((const uint8_t *)aux)[l]);
                const uint8_t s = iq_ksigns(aux[1] >> 7 * l);
                for (int j = 0; j < 8; j++) q[j] = (int8_t)((s >> j) & 1 ? -g[j] : g[j]);
            }
        }
        return true;
    }
    case QT_IQ2_XS: {
        const block_iq2_xs *b = blk;
        const float d = fp16_to_fp32(b->d);
        for (int ib = 0; ib < 8; ib++) {
            o->scale[2 * ib] = d * (0.5f + (b->scales[ib] & 0xf)) * 0.25f;
            o->scale[2 * ib + 1] = d * (0.5f + (b->scales[ib] >> 4)) * 0.25f;
            for (int l = 0; l < 4; l++, q += 8) {
                const uint16_t v = b->qs[4 * ib + l];
                const uint8_t *g = grid8(iq2xs_grid, v & 511);
                const uint8_t s = iq_ksigns(v >> 9);
                for (int j = 0; j < 8; j++) q[j] = (int8_t)((s >> j) & 1 ? -g[j] : g[j]);
            }
        }
        return true;
    }
    case QT_IQ2_S: {
        const block_iq2_s *b = blk;
        const float d = fp16_to_fp32(b->d);
        const uint8_t *qs = b->qs, *signs = b->qs + QK_K / 8;
        for (int ib = 0; ib < 8; ib++, qs += 4, signs += 4) {
            o->scale[2 * ib] = d * (0.5f + (b->scales[ib] & 0xf)) * 0.25f;
            o->scale[2 * ib + 1] = d * (0.5f + (b->scales[ib] >> 4)) * 0.25f;
            for (int l = 0; l < 4; l++, q += 8) {
                const uint8_t *g = grid8(iq2s_grid, qs[l] | ((b->qh[ib] << (8 - 2 * l)) & 0x300));
                for (int j = 0; j < 8; j++) q[j] = (int8_t)((signs[l] >> j) & 1 ? -g[j] : g[j]);
            }
        }
        return true;
    }
    case QT_IQ3_XXS: {
        const block_iq3_xxs *b = blk;
        const float d = fp16_to_fp32(b->d);
        const uint8_t *qs = b->qs;
        for (int ib = 0; ib < 8; ib++, qs += 8) {
            uint32_t aux;
            memcpy(&aux, b->qs + QK_K / 4 + 4 * ib, 4);
            set_scales(o, ib, d * (0.5f + (aux >> 28)) * 0.5f);
            for (int l = 0; l < 4; l++, q += 8) {
                const uint8_t s = iq_ksigns(aux >> 7 * l);
                const uint8_t *g1 = grid4(iq3xxs_grid, qs[2 * l]), *g2 = grid4(iq3xxs_grid, qs[2 * l + 1]);
                for (int j = 0; j < 4; j++) {
                    q[j] = (int8_t)((s >> j) & 1 ? -g1[j] : g1[j]);
                    q[j + 4] = (int8_t)((s >> (j + 4)) & 1 ? -g2[j] : g2[j]);
                }
            }
        }
        return true;
    }
    case QT_IQ3_S: {
        const block_iq3_s *b = blk;
        const float d = fp16_to_fp32(b->d);
        const uint8_t *qs = b->qs, *signs = b->signs;
        for (int ib = 0; ib < 8; ib++, qs += 8, signs += 4) {
            set_scales(o, ib, d * (1 + 2 * ((b->scales[ib / 2] >> 4 * (ib % 2)) & 0xf)));
            const uint8_t qh = b->qh[ib];
            for (int l = 0; l < 4; l++, q += 8) {
                const uint8_t *g1 = grid4(iq3s_grid, qs[2 * l] | ((qh << (8 - 2 * l)) & 256));
                const uint8_t *g2 = grid4(iq3s_grid, qs[2 * l + 1] | ((qh << (7 - 2 * l)) & 256));
                for (int j = 0; j < 4; j++) {
                    q[j] = (int8_t)((signs[l] >> j) & 1 ? -g1[j] : g1[j]);
                    q[j + 4] = (int8_t)((signs[l] >> (j + 4)) & 1 ? -g2[j] : g2[j]);
                }
            }
        }
        return true;
    }
    case QT_IQ1_S: {
        const block_iq1_s *b = blk;
        const float d = fp16_to_fp32(b->d);
        for (int ib = 0; ib < 8; ib++) {
            const uint16_t qh = b->qh[ib];
            set_scales(o, ib, d * (2 * ((qh >> 12) & 7) + 1));
            for (int l = 0; l < 4; l++, q += 8) {
                o->delta[4 * ib + l] = qh & 0x8000 ? -IQ1S_DELTA : IQ1S_DELTA;
                memcpy(q, iq1s_grid + (b->qs[4 * ib + l] | (((qh >> 3 * l) & 7) << 8)), 8);
            }
        }
        return true;
    }
    case QT_IQ1_M: {
        const block_iq1_m *b = blk;
        uint16_t sc[4];
        memcpy(sc, b->scales, 8);
        const float d = fp16_to_fp32(iq1m_scale_bits(b->scales));
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *qs = b->qs + 4 * ib, *qh = b->qh + 2 * ib;
            o->scale[2 * ib] = d * (2 * ((sc[ib / 2] >> (6 * (ib % 2) + 0)) & 0x7) + 1);
            o->scale[2 * ib + 1] = d * (2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3)) & 0x7) + 1);
            const unsigned idx[4] = {qs[0] | ((qh[0] << 8) & 0x700u), qs[1] | ((qh[0] << 4) & 0x700u),
                                     qs[2] | ((qh[1] << 8) & 0x700u), qs[3] | ((qh[1] << 4) & 0x700u)};
            const uint8_t dbits[4] = {qh[0] & 0x08, qh[0] & 0x80, qh[1] & 0x08, qh[1] & 0x80};
            for (int l = 0; l < 4; l++, q += 8) {
                o->delta[4 * ib + l] = dbits[l] ? -IQ1S_DELTA : IQ1S_DELTA;
                memcpy(q, iq1s_grid + idx[l], 8);
            }
        }
        return true;
    }
    case QT_TQ1_0: {
        const block_tq1_0 *b = blk;
        tq1_values(b, q);
        for (int g = 0; g < 16; g++) o->scale[g] = fp16_to_fp32(b->d);
        return true;
    }
    case QT_TQ2_0: {
        const block_tq2_0 *b = blk;
        tq2_values(b, q);
        for (int g = 0; g < 16; g++) o->scale[g] = fp16_to_fp32(b->d);
        return true;
    }
    default: return false;
    }
}
