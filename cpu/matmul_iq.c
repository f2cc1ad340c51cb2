/* matmul_iq: the scalar CPU dot kernels of the read-only weight types of quant_iq.h
 * (MXFP4 and the i-quants), against the activations ggml uses for them: blk_q8x for the
 * 32-element types (MXFP4, IQ4_NL), Q8_K for the 256-element ones. Installed into the
 * kernel table by mm_kernels_iq_scalar (cpu_backend.c); SIMD forms: matmul_iq_avx2.c. */
#include "cpu_kernels.h"
#include "fp16.h"
#include "quant_iq.h"

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

void mm_kernels_iq_scalar(mm_kernels *k) {
    k->act[QT_MXFP4] = ACT_Q8X;
    k->dot[QT_MXFP4] = dot_mxfp4;
}
