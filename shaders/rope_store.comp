#version 450
// rope_store (vk_fused.c): in one dispatch, rope of q in place, rope of k stored into the K
// cache and v stored into the V cache (DST_F32 / DST_F16 / DST_Q8_0 / DST_Q4_0, both caches of
// one type): rope, rope, store_rows, store_rows of the unfused pass with the same bits (angles
// rope.glsl, conversions kv_store.glsl). k and v are only read. Workgroup y = token * slots +
// slot, slots = n_head q heads, then n_kv_head k heads, then n_kv_head v heads; invocation x
// = a pair (q), an element (F32/F16 caches) or a 32-element block (Q8_0/Q4_0 caches).
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
layout(local_size_x = 64) in;
layout(binding = 0) buffer Q { float qf[]; };
layout(binding = 1) readonly buffer K { float kf[]; };
layout(binding = 2) readonly buffer V { float vf[]; };
#if defined(DST_F32)
layout(binding = 3) writeonly buffer KC { float df[]; };
layout(binding = 4) writeonly buffer VC { float vdf[]; };
#else
layout(binding = 3) writeonly buffer KC { uint16_t dh[]; };
layout(binding = 4) writeonly buffer VC { uint16_t vdh[]; };
#endif
layout(binding = 5) readonly buffer FF { float ff[]; };
layout(push_constant) uniform PC {
    uint n_head, n_kv_head, head_dim, pos0, n_rot, neox, q_off, q_stride, k_off, k_stride, v_off, v_stride;
    uint kc_off, kc_stride, vc_off, vc_stride, ff_off, has_ff;
    float theta_scale, freq_scale, ext_factor, mscale, corr_lo, corr_hi;
} pc;
#include "rope.glsl"
#include "kv_store.glsl"
// The same conversions into the V cache (binding 4).
#if defined(DST_F32)
#define df vdf
#else
#define dh vdh
#endif
#define kv_put kv_put_v
#define kv_put_block kv_put_block_v
#include "kv_store.glsl"
#undef kv_put
#undef kv_put_block
#undef df
#undef dh

vec2 cs_of(uint i, uint pos) {
    return rope_cs(i, pos, pc.has_ff != 0u ? ff[pc.ff_off + i] : 1.0, pc.theta_scale, pc.freq_scale, pc.ext_factor,
                   pc.mscale, pc.corr_lo, pc.corr_hi);
}

// Element j of the k head at kf[base], roped (the expression of rope.comp for its half).
float k_roped(uint base, uint j, uint pos) {
    if (j >= pc.n_rot) return kf[base + j];
    const uint half_rot = pc.n_rot / 2u;
    const uint i = pc.neox != 0u ? (j < half_rot ? j : j - half_rot) : j / 2u;
    const bool first = pc.neox != 0u ? j < half_rot : (j & 1u) == 0u;
    const uint i0 = pc.neox != 0u ? base + i : base + 2u * i;
    const uint i1 = pc.neox != 0u ? base + i + half_rot : base + 2u * i + 1u;
    const vec2 cs = cs_of(i, pos);
    const float c = cs.x, s = cs.y;
    const float x0 = kf[i0], x1 = kf[i1];
    return first ? x0 * c - x1 * s : x0 * s + x1 * c;
}

void main() {
    const uint slots = pc.n_head + 2u * pc.n_kv_head;
    const uint t = gl_WorkGroupID.y / slots, h = gl_WorkGroupID.y % slots;
    const uint i = gl_GlobalInvocationID.x;
    const uint pos = pc.pos0 + t;
    if (h < pc.n_head) {                        // q: rotate pair i in place (rope.comp)
        const uint half_rot = pc.n_rot / 2u;
        if (i >= half_rot) return;
        const vec2 cs = cs_of(i, pos);
        const float c = cs.x, s = cs.y;
        const uint base = pc.q_off + t * pc.q_stride + h * pc.head_dim;
        const uint i0 = pc.neox != 0u ? base + i : base + 2u * i;
        const uint i1 = pc.neox != 0u ? base + i + half_rot : base + 2u * i + 1u;
        const float x0 = qf[i0], x1 = qf[i1];
        qf[i0] = x0 * c - x1 * s;
        qf[i1] = x0 * s + x1 * c;
        return;
    }
    const bool is_k = h < pc.n_head + pc.n_kv_head;
    const uint kh = is_k ? h - pc.n_head : h - pc.n_head - pc.n_kv_head;
    const uint rowb = is_k ? pc.kc_off + t * pc.kc_stride : pc.vc_off + t * pc.vc_stride;
    const uint kbase = pc.k_off + t * pc.k_stride + kh * pc.head_dim, vbase = pc.v_off + t * pc.v_stride + kh * pc.head_dim;
#ifdef KV_QUANT
    if (i >= pc.head_dim / 32u) return;
    const uint blk = kh * (pc.head_dim / 32u) + i;  // block of the cache row
    float x[32];
    if (is_k) {
        for (uint j = 0u; j < 32u; j++) x[j] = k_roped(kbase, 32u * i + j, pos);
        kv_put_block(rowb, blk, x);
    } else {
        for (uint j = 0u; j < 32u; j++) x[j] = vf[vbase + 32u * i + j];
        kv_put_block_v(rowb, blk, x);
    }
#else
    if (i >= pc.head_dim) return;
    if (is_k) kv_put(rowb, kh * pc.head_dim + i, k_roped(kbase, i, pos));
    else kv_put_v(rowb, kh * pc.head_dim + i, vf[vbase + i]);
#endif
}
