#version 450
// mul_mat_vecq_x: integer-dot mat-vec of Q4_1 / Q5_0 / Q5_1 and of the K-quants Q4_K / Q5_K /
// Q6_K against an activation quantized by quantize_q8_1 (the Q4_0 / Q8_0 kernels are
// mul_mat_vecq.comp). Same workgroup layout, ROWS / NTOK spec constants and reductions as
// mul_mat_vecq; each lane walks the same units for every row, so a row's sum does not depend
// on ROWS. Q4_1 / Q5_0 / Q5_1: 4 units of 8 elements per 32-element block, 4-byte loads, in
// the GGUF layout or (DQ_WIDE) the repacked one of vk_wide.c through dequant.glsl's dq_qb /
// dq_sb. K-quants: the GGUF layout, 16 units per 256-element super-block (Q4_K / Q5_K: 8
// bytes of two 32-element sub-blocks, whose min term comes from the q8_1 block sums d*sum(q);
// Q6_K: 4 bytes of four 16-element sub-blocks).
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
#if defined(DATA_A_Q4_K) || defined(DATA_A_Q5_K) || defined(DATA_A_Q6_K)
#define VQ_K 1
#define VQ_UNITS 16u
#elif defined(DATA_A_Q4_1) || defined(DATA_A_Q5_0) || defined(DATA_A_Q5_1)
#define VQ_UNITS 4u
#else
#error "mul_mat_vecq_x: Q4_1, Q5_0, Q5_1, Q4_K, Q5_K or Q6_K"
#endif
#define ONES 0x01010101u
#define NIB 0x0f0f0f0fu

// 4 bits (h & 0xf) -> bit 4 of each byte (the 5th bit of Q5_0 / Q5_1 quants).
uint spread4(uint h) { return ((h & 1u) << 4) | ((h & 2u) << 11) | ((h & 4u) << 18) | ((h & 8u) << 25); }

// scale_min_k4 on the 12 scale bytes held in 3 words (one load each instead of a byte load per field).
uint byte_of(uvec3 w, uint i) { return (w[i >> 2] >> (8u * (i & 3u))) & 0xffu; }
vec2 smk4(uvec3 w, uint s) {
    if (s < 4u) return vec2(byte_of(w, s) & 63u, byte_of(w, s + 4u) & 63u);
    const uint a = byte_of(w, s + 4u), lo = byte_of(w, s - 4u), hi = byte_of(w, s);
    return vec2((a & 0xfu) | ((lo >> 6) << 4), (a >> 4) | ((hi >> 6) << 4));
}

// Tokens t0 .. t0 + TT - 1 of rows row0 .. row0 + ROWS - 1.
void vq_tile(const uint tid, const uint row0, const uint t0) {
    float acc[ROWS * TT];
    [[unroll]] for (uint i = 0u; i < ROWS * TT; i++) acc[i] = 0.0;
    const uint nblk = pc.ncols / 32u; // q8_1 blocks per token
#ifdef VQ_K
    const uint nunit = pc.ncols / 256u * VQ_UNITS;
#else
    const uint nunit = nblk * VQ_UNITS;
#endif
    for (uint i = tid; i < nunit; i += WG) {
        const uint b = i / VQ_UNITS, u = i % VQ_UNITS; // b: weight block
#if defined(DATA_A_Q4_K) || defined(DATA_A_Q5_K)
        const uint j = u / 4u, k0 = (u % 4u) * 2u; // sub-blocks 2j (low nibbles), 2j+1 (high); words k0, k0+1
        uvec2 xa[TT], xb[TT];
        vec4 xds[TT]; // d and d*sum of the two q8_1 blocks
        [[unroll]] for (uint t = 0u; t < TT; t++) {
            const uint q0 = pc.x_off + ((t0 + t) * nblk + b * 8u + 2u * j) * 10u, q1 = q0 + 10u;
            const bool ok = t0 + t < pc.ntok;
            xa[t] = ok ? uvec2(xq[q0 + k0], xq[q0 + k0 + 1u]) : uvec2(0u);
            xb[t] = ok ? uvec2(xq[q1 + k0], xq[q1 + k0 + 1u]) : uvec2(0u);
            xds[t] = ok ? uintBitsToFloat(uvec4(xq[q0 + 8u], xq[q0 + 9u], xq[q1 + 8u], xq[q1 + 9u])) : vec4(0.0);
        }
        [[unroll]] for (uint r = 0u; r < ROWS; r++) {
            if (row0 + r >= pc.nrows) break;
            const uint bb = pc.w_off + (row0 + r) * pc.w_stride + b * BLOCK_BYTES;
            const vec2 dm = unpackHalf2x16(wq[bb >> 2]);
            const float d = dm.x, dmin = dm.y;
            const vec2 sl = smk4(uvec3(wq[(bb >> 2) + 1u], wq[(bb >> 2) + 2u], wq[(bb >> 2) + 3u]), 2u * j);
            const vec2 sh = smk4(uvec3(wq[(bb >> 2) + 1u], wq[(bb >> 2) + 2u], wq[(bb >> 2) + 3u]), 2u * j + 1u);
#ifdef DATA_A_Q4_K
            const uint w0 = wq[(bb + 16u + 32u * j + 4u * k0) >> 2], w1 = wq[((bb + 16u + 32u * j + 4u * k0) >> 2) + 1u];
            const uvec2 lo = uvec2(w0 & NIB, w1 & NIB), hi = uvec2((w0 >> 4) & NIB, (w1 >> 4) & NIB);
#else
            const uint w0 = wq[(bb + 48u + 32u * j + 4u * k0) >> 2], w1 = wq[((bb + 48u + 32u * j + 4u * k0) >> 2) + 1u];
            const uint h0 = wq[(bb + 16u + 4u * k0) >> 2], h1 = wq[((bb + 16u + 4u * k0) >> 2) + 1u];
            const uvec2 lo = uvec2((w0 & NIB) | (((h0 >> (2u * j)) & ONES) << 4), (w1 & NIB) | (((h1 >> (2u * j)) & ONES) << 4));
            const uvec2 hi = uvec2(((w0 >> 4) & NIB) | (((h0 >> (2u * j + 1u)) & ONES) << 4),
                                   ((w1 >> 4) & NIB) | (((h1 >> (2u * j + 1u)) & ONES) << 4));
#endif
            [[unroll]] for (uint t = 0u; t < TT; t++) {
                const int sl_i = dot4(lo.x, xa[t].x) + dot4(lo.y, xa[t].y);
                const int sh_i = dot4(hi.x, xb[t].x) + dot4(hi.y, xb[t].y);
                float v = d * (sl.x * xds[t].x * float(sl_i) + sh.x * xds[t].z * float(sh_i));
                if (k0 == 0u) v -= dmin * (sl.y * xds[t].y + sh.y * xds[t].w);
                acc[r * TT + t] += v;
            }
        }
#elif defined(DATA_A_Q6_K)
        const uint n = u / 8u, k = u % 8u; // half n (128 elements), word k of its 32-byte runs
        uvec4 xm[TT]; // word k of q8_1 blocks 4n + m, m = 0..3
        vec4 xd[TT];
        [[unroll]] for (uint t = 0u; t < TT; t++) {
            const uint q0 = pc.x_off + ((t0 + t) * nblk + b * 8u + 4u * n) * 10u;
            const bool ok = t0 + t < pc.ntok;
            xm[t] = ok ? uvec4(xq[q0 + k], xq[q0 + 10u + k], xq[q0 + 20u + k], xq[q0 + 30u + k]) : uvec4(0u);
            xd[t] = ok ? uintBitsToFloat(uvec4(xq[q0 + 8u], xq[q0 + 18u], xq[q0 + 28u], xq[q0 + 38u])) : vec4(0.0);
        }
        [[unroll]] for (uint r = 0u; r < ROWS; r++) {
            if (row0 + r >= pc.nrows) break;
            const uint bb = pc.w_off + (row0 + r) * pc.w_stride + b * BLOCK_BYTES;
            const uint ql0 = ld_u32(bb + 64u * n + 4u * k), ql1 = ld_u32(bb + 64u * n + 32u + 4u * k);
            const uint qh = ld_u32(bb + 128u + 32u * n + 4u * k);
            const uvec4 q = uvec4((ql0 & NIB) | ((qh & 0x03030303u) << 4), (ql1 & NIB) | (((qh >> 2) & 0x03030303u) << 4),
                                  ((ql0 >> 4) & NIB) | (((qh >> 4) & 0x03030303u) << 4), ((ql1 >> 4) & NIB) | (((qh >> 6) & 0x03030303u) << 4));
            const uint sc0 = bb + 192u + 8u * n + k / 4u; // scale of sub-block m: sc0 + 2m
            const vec4 sc = vec4(ivec4(int(ld_u8(sc0) << 24), int(ld_u8(sc0 + 2u) << 24), int(ld_u8(sc0 + 4u) << 24), int(ld_u8(sc0 + 6u) << 24)) >> 24);
            const float d = ld_f16(bb + 208u);
            [[unroll]] for (uint t = 0u; t < TT; t++) {
                float v = 0.0;
                [[unroll]] for (uint m = 0u; m < 4u; m++)
                    v += sc[m] * xd[t][m] * float(dot4(q[m], xm[t][m]) - 32 * dot4(ONES, xm[t][m]));
                acc[r * TT + t] += d * v;
            }
        }
#else
        uint xa[TT], xb[TT];
        float xd[TT];
        [[unroll]] for (uint t = 0u; t < TT; t++) {
            const uint qb = pc.x_off + ((t0 + t) * nblk + b) * 10u;
            const bool ok = t0 + t < pc.ntok;
            xa[t] = ok ? xq[qb + u] : 0u;       // elements 4u..4u+3
            xb[t] = ok ? xq[qb + 4u + u] : 0u;  // elements 16+4u..
            xd[t] = ok ? uintBitsToFloat(xq[qb + 8u]) : 0.0;
        }
        [[unroll]] for (uint r = 0u; r < ROWS; r++) {
            if (row0 + r >= pc.nrows) break;
            const uint rb = pc.w_off + (row0 + r) * pc.w_stride;
            const uint sb = dq_sb(rb, nblk, b);
            const uint q = ld_u32(dq_qb(rb, nblk, b) + 4u * u);
            uint lo = q & NIB, hi = (q >> 4) & NIB;
            const float d = ld_f16(sb);
#if defined(DATA_A_Q5_0)
            const uint qh = ld_u16(sb + 2u) | (ld_u16(sb + 4u) << 16);
#elif defined(DATA_A_Q5_1)
            const uint qh = ld_u32(sb + 4u);
#endif
#if defined(DATA_A_Q5_0) || defined(DATA_A_Q5_1)
            lo |= spread4((qh >> (4u * u)) & 0xfu);
            hi |= spread4((qh >> (16u + 4u * u)) & 0xfu);
#endif
#if defined(DATA_A_Q4_1) || defined(DATA_A_Q5_1)
            const float m = ld_f16(sb + 2u);
#endif
            [[unroll]] for (uint t = 0u; t < TT; t++) {
                const int si = dot4(lo, xa[t]) + dot4(hi, xb[t]);
                const int sx = dot4(ONES, xa[t]) + dot4(ONES, xb[t]);
#if defined(DATA_A_Q5_0)
                acc[r * TT + t] += d * xd[t] * float(si - 16 * sx);
#else
                acc[r * TT + t] += xd[t] * (d * float(si) + m * float(sx));
#endif
            }
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
