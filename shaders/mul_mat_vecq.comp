#version 450
// mul_mat_vecq: mat-vec on Q4_0 / Q8_0 weights with 8-bit integer dot products against
// an activation quantized by quantize_q8_1 (used when the device has shaderIntegerDotProduct).
// Same workgroup layout and reductions as mul_mat_vec. DQ_WIDE: the repacked layout
// (dequant.glsl): each lane reads one uvec4 of quants per unit (Q4_0: the whole block,
// Q8_0: half of it), adjacent lanes adjacent 16 bytes; the block's f16 scale beside them.
#extension GL_EXT_control_flow_attributes : enable
#ifdef USE_SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint ROWS = 2;
layout(constant_id = 2) const uint NTOK = 1;
layout(constant_id = 3) const uint TILE_ALL = 0; // 1: all NTOK tokens in one tile (CPU devices: no registers to fit)
layout(binding = 0) readonly buffer W { uint wq[]; };
layout(binding = 1) readonly buffer X { uint xq[]; };
layout(binding = 2) buffer D { float dst[]; };
layout(push_constant) uniform PC {
    uint ncols, nrows, ntok, w_off, w_stride, x_off, x_stride, d_off, d_stride, accumulate, groups_x;
} pc;
#include "dequant.glsl"
#include "int_dot.glsl"
// Token tile (as mul_mat_vec.comp): TT tokens per pass over the weights, at most VQ_TILE_ACC /
// ROWS sums per lane, so registers grow with TT, never with NTOK (tools/aco/'s gate).
#define VQ_TILE_ACC 8u
#define VQ_TILE_MAX 4u
const uint TT_ACC = VQ_TILE_ACC / ROWS > 0u ? VQ_TILE_ACC / ROWS : 1u;
const uint TT_MAX = TT_ACC < VQ_TILE_MAX ? TT_ACC : VQ_TILE_MAX;
const uint TT = TILE_ALL != 0u ? NTOK : NTOK / ((NTOK + TT_MAX - 1u) / TT_MAX); // else min(NTOK, TT_MAX) for powers of two
shared float red[ROWS * TT * WG];
#if defined(DQ_WIDE) && defined(DATA_A_Q4_0)
#define VQ_UNITS 1u
#elif defined(DQ_WIDE)
#define VQ_UNITS 2u
#else
#define VQ_UNITS 4u
#endif

// Tokens t0 .. t0 + TT - 1 of rows row0 .. row0 + ROWS - 1.
void vq_tile(const uint tid, const uint row0, const uint t0) {
    float acc[ROWS * TT];
    [[unroll]] for (uint i = 0u; i < ROWS * TT; i++) acc[i] = 0.0;
    const uint nblk = pc.ncols / 32u;
    for (uint i = tid; i < nblk * VQ_UNITS; i += WG) {
        const uint b = i / VQ_UNITS, u = i % VQ_UNITS;
#ifdef DQ_WIDE
        uvec4 xa[TT];  // Q4_0: elements 0..15 (low nibbles), Q8_0: elements 16u..16u+15
#if defined(DATA_A_Q4_0)
        uvec4 xb[TT];  // elements 16..31 (high nibbles)
#endif
        float xd[TT];
        [[unroll]] for (uint t = 0u; t < TT; t++) {
            const uint qb = pc.x_off + ((t0 + t) * nblk + b) * 10u;
            const bool ok = t0 + t < pc.ntok;
#if defined(DATA_A_Q4_0)
            xa[t] = ok ? uvec4(xq[qb], xq[qb + 1u], xq[qb + 2u], xq[qb + 3u]) : uvec4(0u);
            xb[t] = ok ? uvec4(xq[qb + 4u], xq[qb + 5u], xq[qb + 6u], xq[qb + 7u]) : uvec4(0u);
#else
            const uint q0 = qb + 4u * u;
            xa[t] = ok ? uvec4(xq[q0], xq[q0 + 1u], xq[q0 + 2u], xq[q0 + 3u]) : uvec4(0u);
#endif
            xd[t] = ok ? uintBitsToFloat(xq[qb + 8u]) : 0.0;
        }
        [[unroll]] for (uint r = 0u; r < ROWS; r++) {
            if (row0 + r >= pc.nrows) break;
            const uint rb = pc.w_off + (row0 + r) * pc.w_stride;
            const float d = ld_f16(dq_sb(rb, nblk, b));
            const uvec4 q = wq4[(dq_qb(rb, nblk, b) >> 4) + u];
            [[unroll]] for (uint t = 0u; t < TT; t++) {
                int si = 0;
#if defined(DATA_A_Q4_0)
                int sx = 0;
                [[unroll]] for (uint k = 0u; k < 4u; k++) {
                    si += dot4(q[k] & 0x0f0f0f0fu, xa[t][k]) + dot4((q[k] >> 4) & 0x0f0f0f0fu, xb[t][k]);
                    sx += dot4(0x01010101u, xa[t][k]) + dot4(0x01010101u, xb[t][k]);
                }
                acc[r * TT + t] += d * xd[t] * float(si - 8 * sx);
#else
                [[unroll]] for (uint k = 0u; k < 4u; k++) si += dot4(q[k], xa[t][k]);
                acc[r * TT + t] += d * xd[t] * float(si);
#endif
            }
        }
#else
        uint xa[TT], xb[TT];
        float xd[TT], xs[TT];
        [[unroll]] for (uint t = 0u; t < TT; t++) {
            const uint qb = pc.x_off + ((t0 + t) * nblk + b) * 10u;
            const bool ok = t0 + t < pc.ntok;
#if defined(DATA_A_Q4_0)
            xa[t] = ok ? xq[qb + u] : 0u;       // elements 4u..4u+3
            xb[t] = ok ? xq[qb + 4u + u] : 0u;  // elements 16+4u..
#else
            xa[t] = ok ? xq[qb + 2u * u] : 0u;  // elements 8u..8u+3
            xb[t] = ok ? xq[qb + 2u * u + 1u] : 0u;
#endif
            xd[t] = ok ? uintBitsToFloat(xq[qb + 8u]) : 0.0;
            xs[t] = ok ? uintBitsToFloat(xq[qb + 9u]) : 0.0;
        }
        [[unroll]] for (uint r = 0u; r < ROWS; r++) {
            if (row0 + r >= pc.nrows) break;
            const uint bb = pc.w_off + (row0 + r) * pc.w_stride + b * BLOCK_BYTES;
            const float d = ld_f16(bb);
#if defined(DATA_A_Q4_0)
            const uint q = ld_u32(bb + 2u + 4u * u);
            const uint lo = q & 0x0f0f0f0fu, hi = (q >> 4) & 0x0f0f0f0fu;
            [[unroll]] for (uint t = 0u; t < TT; t++) {
                const int si = dot4(lo, xa[t]) + dot4(hi, xb[t]);
                const int sx = dot4(0x01010101u, xa[t]) + dot4(0x01010101u, xb[t]);
                acc[r * TT + t] += d * xd[t] * float(si - 8 * sx);
            }
#elif defined(DATA_A_Q8_0)
            const uint qa = ld_u32(bb + 2u + 8u * u), qb2 = ld_u32(bb + 6u + 8u * u);
            [[unroll]] for (uint t = 0u; t < TT; t++)
                acc[r * TT + t] += d * xd[t] * float(dot4(qa, xa[t]) + dot4(qb2, xb[t]));
#else
#error "mul_mat_vecq: Q4_0 or Q8_0"
#endif
        }
#endif
    }
#ifdef USE_SUBGROUP
    [[unroll]] for (uint i = 0u; i < ROWS * TT; i++) {
        float s = subgroupAdd(acc[i]);
        if (subgroupElect()) red[i * WG + gl_SubgroupID] = s;
    }
    barrier();
    if (tid < ROWS * TT) {
        float s = 0.0;
        for (uint k = 0u; k < gl_NumSubgroups; k++) s += red[tid * WG + k];
        acc[0] = s;
    }
#else
    [[unroll]] for (uint i = 0u; i < ROWS * TT; i++) red[i * WG + tid] = acc[i];
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1) {
        if (tid < s)
            [[unroll]] for (uint i = 0u; i < ROWS * TT; i++) red[i * WG + tid] += red[i * WG + tid + s];
        barrier();
    }
    if (tid < ROWS * TT) acc[0] = red[tid * WG];
#endif
    if (tid < ROWS * TT) {
        const uint r = tid / TT, t = t0 + tid % TT;
        if (row0 + r < pc.nrows && t < pc.ntok) {
            const uint di = pc.d_off + t * pc.d_stride + row0 + r;
            dst[di] = (pc.accumulate != 0u ? dst[di] : 0.0) + acc[0];
        }
    }
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint row0 = (gl_WorkGroupID.y * pc.groups_x + gl_WorkGroupID.x) * ROWS;
    if (row0 >= pc.nrows) return;
    if (NTOK <= TT) { // one tile (a constant once specialized): no loop, as without tiles
        vq_tile(tid, row0, 0u);
        return;
    }
    [[dont_unroll]] for (uint t0 = 0u; t0 < NTOK && t0 < pc.ntok; t0 += TT) {
        if (t0 > 0u) barrier(); // red is reused
        vq_tile(tid, row0, t0);
    }
}
