/* matmul_iq: the scalar CPU dot kernels of the read-only weight types of quant_iq.h
 * (MXFP4, the i-quants, TQ1_0/TQ2_0), against the activations ggml uses for them: blk_q8x
 * for the 32-element types (MXFP4, IQ4_NL), Q8_K for the 256-element ones (decoded by
 * iq_decode_block to int8 values, per-16 scales and per-8 offsets). Installed into the
 * kernel table by mm_kernels_iq_scalar (cpu_backend.c); the SIMD forms of every one of them:
 * matmul_iq_avx2.c, matmul_iq_avx512.c and matmul_iqk_x86.h. */
#include "cpu_kernels.h"
#include "fp16.h"
#include "quant_iq.h"

#include <pthread.h>

#define ACT_ROW(x, xs, t) ((const void *)((const uint8_t *)(x) + (size_t)(t) * (xs)))

static void dot_mxfp4(int64_t n, const void *w, const void *x, size_t xs, int nt, float *res) {
    const block_mxfp4 *b = w;
    for (int t = 0; t < nt; t++) {
        const blk_q8x *y = ACT_ROW(x, xs, t);
        float acc = 0;
        for (int64_t i = 0; i < n / 32; i++) {
            int s = 0;
            for (int j = 0; j < 16; j++)
                s += kvalues_mxfp4[b[i].qs[j] & 0xF] * y[i].qs[j] + kvalues_mxfp4[b[i].qs[j] >> 4] * y[i].qs[j + 16];
            acc += e8m0_to_fp32_half(b[i].e) * y[i].d * (float)s;
        }
        res[t] = acc;
    }
}

static void dot_iq4_nl(int64_t n, const void *w, const void *x, size_t xs, int nt, float *res) {
    const block_iq4_nl *b = w;
    for (int t = 0; t < nt; t++) {
        const blk_q8x *y = ACT_ROW(x, xs, t);
        float acc = 0;
        for (int64_t i = 0; i < n / 32; i++) {
            int s = 0;
            for (int j = 0; j < 16; j++)
                s += kvalues_iq4nl[b[i].qs[j] & 0xF] * y[i].qs[j] + kvalues_iq4nl[b[i].qs[j] >> 4] * y[i].qs[j + 16];
            acc += fp16_to_fp32(b[i].d) * y[i].d * (float)s;
        }
        res[t] = acc;
    }
}

/* 256-element types: dot = dy * sum_g16 scale_g * (q_g . y_g + sum_h8 delta_h * sum(y_h)). */
static void dot_iq_k(qtype type, int64_t n, const void *w, const void *x, size_t xs, int nt, float *res) {
    const size_t bsize = qtype_get(type)->type_size;
    float acc[MM_MAX_TOK] = {0};
    iq_decoded k;
    for (int64_t i = 0; i < n / QK_K; i++) {
        iq_decode_block(type, (const uint8_t *)w + (size_t)i * bsize, &k);
        for (int t = 0; t < nt; t++) {
            const block_q8_K *y = (const block_q8_K *)ACT_ROW(x, xs, t) + i;
            float sum = 0;
            for (int g = 0; g < 16; g++) {
                int32_t s = 0, h0 = 0, h1 = 0;
                for (int l = 0; l < 16; l++) s += k.q[16 * g + l] * y->qs[16 * g + l];
                for (int l = 0; l < 8; l++) { h0 += y->qs[16 * g + l]; h1 += y->qs[16 * g + 8 + l]; }
                sum += k.scale[g] * ((float)s + k.delta[2 * g] * (float)h0 + k.delta[2 * g + 1] * (float)h1);
            }
            acc[t] += y->d * sum;
        }
    }
    for (int t = 0; t < nt; t++) res[t] = acc[t];
}

#define IQ_DOT(name, type)                                                                         \
    static void dot_##name(int64_t n, const void *w, const void *x, size_t xs, int nt, float *res) { \
        dot_iq_k(type, n, w, x, xs, nt, res);                                                      \
    }
IQ_DOT(iq4_xs, QT_IQ4_XS)
IQ_DOT(iq3_xxs, QT_IQ3_XXS)
IQ_DOT(iq3_s, QT_IQ3_S)
IQ_DOT(iq2_xxs, QT_IQ2_XXS)
IQ_DOT(iq2_xs, QT_IQ2_XS)
IQ_DOT(iq2_s, QT_IQ2_S)
IQ_DOT(iq1_s, QT_IQ1_S)
IQ_DOT(iq1_m, QT_IQ1_M)
IQ_DOT(tq1_0, QT_TQ1_0)
IQ_DOT(tq2_0, QT_TQ2_0)

static uint64_t iq2xs_words[1u << 16];
static pthread_once_t iq2xs_words_once = PTHREAD_ONCE_INIT;
const uint64_t *iq2xs_word_table;

static void iq2xs_words_build(void) {
    for (uint32_t q = 0; q < (1u << 16); q++) {
        const uint64_t g = iq2xs_grid[q & 511];
        const uint8_t signs = iq_ksigns(q >> 9);
        uint64_t word = 0;
        for (int j = 0; j < 8; j++) {
            const int v = (int)((g >> 8 * j) & 0xff);
            word |= (uint64_t)(uint8_t)((signs >> j & 1 ? -v : v) + 64) << 8 * j;
        }
        iq2xs_words[q] = word;
    }
    __atomic_store_n(&iq2xs_word_table, (const uint64_t *)iq2xs_words, __ATOMIC_RELEASE);
}

const uint64_t *iq2xs_word_table_build(void) {
    pthread_once(&iq2xs_words_once, iq2xs_words_build);
    return iq2xs_words;
}

void mm_kernels_iq_scalar(mm_kernels *k) {
    const struct { qtype t; act_kind a; mm_dot_fn f; } tab[] = {
        {QT_MXFP4, ACT_Q8X, dot_mxfp4},     {QT_IQ4_NL, ACT_Q8X, dot_iq4_nl},   {QT_IQ4_XS, ACT_Q8K, dot_iq4_xs},
        {QT_IQ3_XXS, ACT_Q8K, dot_iq3_xxs}, {QT_IQ3_S, ACT_Q8K, dot_iq3_s},     {QT_IQ2_XXS, ACT_Q8K, dot_iq2_xxs},
        {QT_IQ2_XS, ACT_Q8K, dot_iq2_xs},   {QT_IQ2_S, ACT_Q8K, dot_iq2_s},     {QT_IQ1_S, ACT_Q8K, dot_iq1_s},
        {QT_IQ1_M, ACT_Q8K, dot_iq1_m},     {QT_TQ1_0, ACT_Q8K, dot_tq1_0},     {QT_TQ2_0, ACT_Q8K, dot_tq2_0},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) { k->act[tab[i].t] = tab[i].a; k->dot[tab[i].t] = tab[i].f; }
}
