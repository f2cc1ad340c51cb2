#version 450
// mul_mm_cm: the tiled matrix-matrix product of mul_mm.comp on cooperative matrices
// (GL_KHR_cooperative_matrix, subgroup scope): out[t][r] (+)= sum_c W[r][c] x[t][c].
// Per BK-column step a BM x BK tile of W is dequantized (dequant.glsl) into fp16 shared memory
// and a BN x BK tile of x converted next to it; 4 subgroups (2 x 2) each own an
// (AM*TM) x (AN*TN) block of the output held in AM x AN fp32 accumulators and multiply
// TM x TK by TK x TN fp16 matrices. TM/TN/TK are the device's advertised configuration
// (engine/vulkan/vk_coopmat.c picks it; the pipeline exists only for an exact one); the
// results leave through a small per-subgroup shared staging area so that the edges (M, N,
// K not multiples of the tile) and accumulate mode are plain bounds-checked stores.
// Compiled only with a glslang that knows the extension (>= 15; engine/vulkan/CMakeLists.txt).
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : enable
#extension GL_GOOGLE_include_directive : require // glslangValidator (glslc turns it on itself)
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128;  // 4 subgroups of SG invocations
layout(constant_id = 1) const uint TM = 16;   // cooperative matrix M (rows of W)
layout(constant_id = 2) const uint TN = 16;   // N (tokens)
layout(constant_id = 3) const uint TK = 16;   // K (columns); divides BK
layout(constant_id = 4) const uint AM = 2;    // accumulators per subgroup along the rows
layout(constant_id = 5) const uint AN = 2;    // ... along the tokens
layout(constant_id = 6) const uint SG = 32;   // subgroup size (WG / 4)
const uint BM = 2u * AM * TM, BN = 2u * AN * TN;
#define BK 32u
#define SH_STRIDE (BK + 8u) // fp16 elements per shared row: 80 bytes, a 16-byte multiple
layout(binding = 0) readonly buffer W { uint wq[]; };
layout(binding = 1) readonly buffer X { float xf[]; };
layout(binding = 2) buffer D { float dst[]; };
layout(push_constant) uniform PC {
    uint ncols, nrows, ntok, w_off, w_stride, x_off, x_stride, d_off, d_stride, accumulate, groups_x;
} pc;
#include "dequant.glsl"

shared float16_t sa[BM * SH_STRIDE];
shared float16_t sb[BN * SH_STRIDE];
shared float sc[4u * TM * TN];

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
    const uint wm = sg % 2u, wn = sg / 2u;
    const uint r0 = gl_WorkGroupID.x * BM, t0 = gl_WorkGroupID.y * BN;
    coopmat<float, gl_ScopeSubgroup, TM, TN, gl_MatrixUseAccumulator> acc[AM * AN];
    [[unroll]] for (uint i = 0u; i < AM * AN; i++) acc[i] = coopmat<float, gl_ScopeSubgroup, TM, TN, gl_MatrixUseAccumulator>(0.0);
    for (uint k0 = 0u; k0 < pc.ncols; k0 += BK) {
        // W tile: BM rows x BK columns, 8 consecutive columns per step (zero past the edges).
        for (uint idx = tid; idx < BM * (BK / 8u); idx += WG) {
            const uint rr = idx / (BK / 8u), cc = (idx % (BK / 8u)) * 8u;
            const uint row = r0 + rr;
            [[unroll]] for (uint e = 0u; e < 8u; e++) {
                const uint col = k0 + cc + e;
                float v = 0.0;
                if (row < pc.nrows && col < pc.ncols)
                    v = dq_at(pc.w_off + row * pc.w_stride, pc.ncols / QK, col / QK, col % QK);
                sa[rr * SH_STRIDE + cc + e] = float16_t(v);
            }
        }
        // x tile: BN tokens x BK columns.
        for (uint idx = tid; idx < BN * BK; idx += WG) {
            const uint tt = idx / BK, cc = idx % BK;
            const uint t = t0 + tt, col = k0 + cc;
            sb[tt * SH_STRIDE + cc] = float16_t((t < pc.ntok && col < pc.ncols) ? xf[pc.x_off + t * pc.x_stride + col] : 0.0);
        }
        barrier();
        [[unroll]] for (uint k = 0u; k < BK; k += TK) {
            coopmat<float16_t, gl_ScopeSubgroup, TM, TK, gl_MatrixUseA> a[AM];
            [[unroll]] for (uint i = 0u; i < AM; i++)
                coopMatLoad(a[i], sa, (wm * AM * TM + i * TM) * SH_STRIDE + k, SH_STRIDE, gl_CooperativeMatrixLayoutRowMajor);
            [[unroll]] for (uint j = 0u; j < AN; j++) {
                // B (TK x TN) element (k, n) is x[n][k]: column-major in sb.
                coopmat<float16_t, gl_ScopeSubgroup, TK, TN, gl_MatrixUseB> b;
                coopMatLoad(b, sb, (wn * AN * TN + j * TN) * SH_STRIDE + k, SH_STRIDE, gl_CooperativeMatrixLayoutColumnMajor);
                [[unroll]] for (uint i = 0u; i < AM; i++) acc[i * AN + j] = coopMatMulAdd(a[i], b, acc[i * AN + j]);
            }
        }
        barrier();
    }
    // Out: each accumulator through this subgroup's TM x TN staging area (column-major:
    // consecutive lanes write consecutive rows of one token, dst's contiguous direction).
    const uint sbase = sg * TM * TN;
    [[unroll]] for (uint i = 0u; i < AM; i++) {
        [[unroll]] for (uint j = 0u; j < AN; j++) {
            coopMatStore(acc[i * AN + j], sc, sbase, TM, gl_CooperativeMatrixLayoutColumnMajor);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            for (uint e = lane; e < TM * TN; e += SG) {
                const uint row = r0 + wm * AM * TM + i * TM + e % TM;
                const uint t = t0 + wn * AN * TN + j * TN + e / TM;
                if (row < pc.nrows && t < pc.ntok) {
                    const uint di = pc.d_off + t * pc.d_stride + row;
                    dst[di] = (pc.accumulate != 0u ? dst[di] : 0.0) + sc[sbase + e];
                }
            }
            subgroupMemoryBarrierShared();
            subgroupBarrier();
        }
    }
}
