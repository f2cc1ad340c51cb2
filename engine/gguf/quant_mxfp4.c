/* quant_mxfp4: the reference dequantizer of MXFP4 (OCP microscaling FP4, as ggml stores
 * it: 32 E2M1 values in nibbles, low nibbles elements 0..15, high ones 16..31, and one E8M0
 * exponent byte). Same float operations as ggml's dequantize_row_mxfp4, so bit-exact. */
#include "quant_impl.h"
#include "quant_iq.h"

void qref_dequant_mxfp4(const void *src, float *y, int64_t n) {
    const block_mxfp4 *x = src;
    for (int64_t i = 0; i < n / 32; i++, y += 32) {
        const float d = e8m0_to_fp32_half(x[i].e);
        for (int j = 0; j < 16; j++) {
            y[j] = kvalues_mxfp4[x[i].qs[j] & 0x0F] * d;
            y[j + 16] = kvalues_mxfp4[x[i].qs[j] >> 4] * d;
        }
    }
}
