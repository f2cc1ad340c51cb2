#version 450
// mul_mm: tiled matrix-matrix product for prompt batches: out[t][r] (+)= sum_c W[r][c] x[t][c].
// A BM x BK tile of W is dequantized into shared memory and a BN x BK tile of x is
// staged next to it; 256 invocations (16 x 16) each compute (BM/16) x (BN/16) outputs.
// FLOAT16: the shared tiles are fp16 (half the shared memory), accumulation stays fp32.
// DQ_WIDE: W is in the repacked layout (dequant.glsl, engine/vulkan/vk_wide.c).
#extension GL_EXT_control_flow_attributes : enable
#ifdef FLOAT16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define SH_T float16_t
#else
#define SH_T float
#endif
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;  // must be 256 (16 x 16)
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
#define BK 32u
const uint TM = BM / 16u, TN = BN / 16u;
layout(binding = 0) readonly buffer W { uint wq[]; };
layout(binding = 1) readonly buffer X { float xf[]; };
layout(binding = 2) buffer D { float dst[]; };
layout(push_constant) uniform PC {
    uint ncols, nrows, ntok, w_off, w_stride, x_off, x_stride, d_off, d_stride, accumulate, groups_x;
} pc;
#include "dequant.glsl"

shared SH_T sa[BM * (BK + 1u)];
shared SH_T sb[BN * (BK + 1u)];

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint tx = tid % 16u, ty = tid / 16u;
    const uint r0 = gl_WorkGroupID.x * BM, t0 = gl_WorkGroupID.y * BN;
    float acc[TM * TN];
    [[unroll]] for (uint i = 0u; i < TM * TN; i++) acc[i] = 0.0;
    for (uint k0 = 0u; k0 < pc.ncols; k0 += BK) {
        // W tile: BM rows x BK columns, 8 consecutive columns per step.
        for (uint idx = tid; idx < BM * (BK / 8u); idx += WG) {
            const uint rr = idx / (BK / 8u), cc = (idx % (BK / 8u)) * 8u;
            const uint row = r0 + rr;
            [[unroll]] for (uint e = 0u; e < 8u; e++) {
                const uint col = k0 + cc + e;
                float v = 0.0;
                if (row < pc.nrows && col < pc.ncols)
                    v = dq_at(pc.w_off + row * pc.w_stride, pc.ncols / QK, col / QK, col % QK);
                sa[rr * (BK + 1u) + cc + e] = SH_T(v);
            }
        }
        for (uint idx = tid; idx < BN * BK; idx += WG) {
            const uint tt = idx / BK, cc = idx % BK;
            const uint t = t0 + tt, col = k0 + cc;
            sb[tt * (BK + 1u) + cc] = SH_T((t < pc.ntok && col < pc.ncols) ? xf[pc.x_off + t * pc.x_stride + col] : 0.0);
        }
        barrier();
        [[unroll]] for (uint k = 0u; k < BK; k++) {
            float a[TM], b[TN];
            [[unroll]] for (uint i = 0u; i < TM; i++) a[i] = float(sa[(ty + 16u * i) * (BK + 1u) + k]);
            [[unroll]] for (uint j = 0u; j < TN; j++) b[j] = float(sb[(tx + 16u * j) * (BK + 1u) + k]);
            [[unroll]] for (uint i = 0u; i < TM; i++)
                [[unroll]] for (uint j = 0u; j < TN; j++) acc[i * TN + j] += a[i] * b[j];
        }
        barrier();
    }
    [[unroll]] for (uint i = 0u; i < TM; i++) {
        const uint row = r0 + ty + 16u * i;
        if (row >= pc.nrows) continue;
        [[unroll]] for (uint j = 0u; j < TN; j++) {
            const uint t = t0 + tx + 16u * j;
            if (t >= pc.ntok) continue;
            const uint di = pc.d_off + t * pc.d_stride + row;
            dst[di] = (pc.accumulate != 0u ? dst[di] : 0.0) + acc[i * TN + j];
        }
    }
}
