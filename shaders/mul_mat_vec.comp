#version 450
// mul_mat_vec: out[t][r] (+)= sum_c W[r][c] * x[t][c] for few tokens (NTOK <= 8, spec
// constant). The tokens go in tiles of TT (the x runs held stay within MV_TILE_X4 vec4s, the
// sums within MV_TILE_ACC): one pass over the workgroup's weights per tile, the later
// passes mostly from cache; registers grow with TT, never with NTOK (the ACO gate,
// tools/aco/, holds every variant to no spills and its VGPR budget). ROWS rows per
// workgroup; the partial sums are reduced with subgroup adds (USE_SUBGROUP) or in shared
// memory. Each token's sum order is the same at every NTOK and TT.
// DQ_WIDE: W in the repacked layout, each lane reading one uvec4 of quants per unit and
// the units of a subgroup adjacent (dequant.glsl). The per-row sum order depends only on
// the lane and WG, never on ROWS (the autotuner's variants give identical results).
// MV_GLU (mul_mat_vec_glu_*, vk_fused.c): out[t][r] = act(gate[r] . x[t]) * (up[r] . x[t]);
// binding 0 is then an array of the two weights (gate at w_off, up at wu_off, same layout),
// each row summed and reduced exactly as without MV_GLU (act = pc.accumulate, be_glu_kind).
#extension GL_EXT_control_flow_attributes : enable
#ifdef USE_SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint ROWS = 2;
layout(constant_id = 2) const uint NTOK = 1;
layout(constant_id = 3) const uint TILE_ALL = 0; // 1: all NTOK tokens in one tile (CPU devices: no registers to fit)
#ifdef MV_GLU
layout(binding = 0) readonly buffer W { uint d[]; } wb[2];
uint wsel = 0u;
#define wq wb[wsel].d
#ifdef DQ_WIDE
layout(binding = 0) readonly buffer W4 { uvec4 d4[]; } wb4[2];
#define wq4 wb4[wsel].d4
#define DQ_WQ4_DECLARED
#endif
#define MV_NW 2u
#include "glu.glsl"
#else
layout(binding = 0) readonly buffer W { uint wq[]; };
#define MV_NW 1u
#endif
layout(binding = 1) readonly buffer X { float xf[]; };
layout(binding = 2) buffer D { float dst[]; };
layout(push_constant) uniform PC {
    uint ncols, nrows, ntok, w_off, w_stride, x_off, x_stride, d_off, d_stride, accumulate, groups_x;
#ifdef MV_GLU
    uint wu_off;
#endif
} pc;
#define DQ_UNITS
#include "dequant.glsl"
#define MV_BLOCK_BYTES ((MV_QK / QK) * BLOCK_BYTES)
#define MV_TILE_X4 8u   // x vec4s held per lane
#define MV_TILE_ACC 16u // sums held per lane
const uint TT_X = MV_TILE_X4 / MV_RUNS > 0u ? MV_TILE_X4 / MV_RUNS : 1u;
const uint TT_ACC = MV_TILE_ACC / (MV_NW * ROWS) > 0u ? MV_TILE_ACC / (MV_NW * ROWS) : 1u;
const uint TT_MAX = TT_X < TT_ACC ? TT_X : TT_ACC;
const uint TT = TILE_ALL != 0u ? NTOK : NTOK / ((NTOK + TT_MAX - 1u) / TT_MAX); // else min(NTOK, TT_MAX) for powers of two

shared float red[ROWS * TT * WG];

vec4 ldx(uint i) { return vec4(xf[i], xf[i + 1u], xf[i + 2u], xf[i + 3u]); }

float acc[MV_NW * ROWS * TT]; // weight g, row r, token t0 + t at (g * ROWS + r) * TT + t
vec4 xv[TT * MV_RUNS];        // the x runs of the current unit

// Adds weight g's rows (at byte wo) times the unit of xv into acc. A function called with a
// constant g: once inlined, MV_GLU's buffer index wsel is a constant at every load.
void mv_unit(const uint g, const uint wo, const uint row0, const uint b, const uint u) {
#ifdef MV_GLU
    wsel = g;
#endif
    [[unroll]] for (uint r = 0u; r < ROWS; r++) {
        if (row0 + r >= pc.nrows) break;
        vec4 v[MV_RUNS];
        dq_unit_at(wo + (row0 + r) * pc.w_stride, pc.ncols / QK, b, u, v);
        [[unroll]] for (uint t = 0u; t < TT; t++) {
            float s = 0.0;
            [[unroll]] for (uint k = 0u; k < MV_RUNS; k++) s += dot(v[k], xv[t * MV_RUNS + k]);
            acc[(g * ROWS + r) * TT + t] += s;
        }
    }
}

// Tokens t0 .. t0 + TT - 1 of rows row0 .. row0 + ROWS - 1.
void mv_tile(const uint tid, const uint row0, const uint t0) {
    [[unroll]] for (uint i = 0u; i < MV_NW * ROWS * TT; i++) acc[i] = 0.0;
    const uint nblk = (pc.ncols + MV_QK - 1u) / MV_QK;
    for (uint i = tid; i < nblk * MV_UNITS; i += WG) {
        const uint b = i / MV_UNITS, u = i % MV_UNITS;
        const uint c0 = b * MV_QK;
#ifdef IS_FLOAT_TYPE
        if (c0 + MV_QK > pc.ncols) { // ragged tail of a float row
            for (uint c = c0; c < pc.ncols; c++) {
                [[unroll]] for (uint g = 0u; g < MV_NW; g++) {
#ifdef MV_GLU
                wsel = g;
                const uint wo = g == 0u ? pc.w_off : pc.wu_off;
#else
                const uint wo = pc.w_off;
#endif
                [[unroll]] for (uint r = 0u; r < ROWS; r++) {
                    if (row0 + r >= pc.nrows) break;
                    float w = dq_elem(wo + (row0 + r) * pc.w_stride + c * BLOCK_BYTES, 0u);
                    [[unroll]] for (uint t = 0u; t < TT; t++)
                        if (t0 + t < pc.ntok) acc[(g * ROWS + r) * TT + t] += w * xf[pc.x_off + (t0 + t) * pc.x_stride + c];
                }
                }
            }
            continue;
        }
#endif
        [[unroll]] for (uint t = 0u; t < TT; t++)
            [[unroll]] for (uint k = 0u; k < MV_RUNS; k++)
                xv[t * MV_RUNS + k] = t0 + t < pc.ntok ? ldx(pc.x_off + (t0 + t) * pc.x_stride + c0 + mv_pos(u, k)) : vec4(0.0);
        mv_unit(0u, pc.w_off, row0, b, u);
#ifdef MV_GLU
        mv_unit(1u, pc.wu_off, row0, b, u);
#endif
    }
    float res[MV_NW]; // weight g's sum for row tid / TT, token t0 + tid % TT
    [[unroll]] for (uint g = 0u; g < MV_NW; g++) {
    if (g > 0u) barrier(); // red is reused
    res[g] = 0.0;
#ifdef USE_SUBGROUP
    [[unroll]] for (uint i = 0u; i < ROWS * TT; i++) {
        float s = subgroupAdd(acc[g * ROWS * TT + i]);
        if (subgroupElect()) red[i * WG + gl_SubgroupID] = s;
    }
    barrier();
    if (tid < ROWS * TT) {
        float s = 0.0;
        for (uint k = 0u; k < gl_NumSubgroups; k++) s += red[tid * WG + k];
        res[g] = s;
    }
#else
    [[unroll]] for (uint i = 0u; i < ROWS * TT; i++) red[i * WG + tid] = acc[g * ROWS * TT + i];
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1) {
        if (tid < s)
            [[unroll]] for (uint i = 0u; i < ROWS * TT; i++) red[i * WG + tid] += red[i * WG + tid + s];
        barrier();
    }
    if (tid < ROWS * TT) res[g] = red[tid * WG];
#endif
    }
    if (tid < ROWS * TT) {
        const uint r = tid / TT, t = t0 + tid % TT;
        if (row0 + r < pc.nrows && t < pc.ntok) {
            const uint di = pc.d_off + t * pc.d_stride + row0 + r;
#ifdef MV_GLU
            dst[di] = glu_out(pc.accumulate, res[0], res[1]);
#else
            dst[di] = (pc.accumulate != 0u ? dst[di] : 0.0) + res[0];
#endif
        }
    }
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint row0 = (gl_WorkGroupID.y * pc.groups_x + gl_WorkGroupID.x) * ROWS;
    if (row0 >= pc.nrows) return;
    if (NTOK <= TT) { // one tile (a constant once specialized): no loop, as without tiles
        mv_tile(tid, row0, 0u);
        return;
    }
    [[dont_unroll]] for (uint t0 = 0u; t0 < NTOK && t0 < pc.ntok; t0 += TT) {
        if (t0 > 0u) barrier(); // red is reused
        mv_tile(tid, row0, t0);
    }
}
