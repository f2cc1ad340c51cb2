#version 450
// flash_attn: causal (or noncausal) attention in one pass with an online softmax. One workgroup per
// (query row, head); each invocation scores one key of a WG-key block, then every
// invocation accumulates its own output dims over the block. GQA: head h reads kv head
// h / (n_head / n_kv_head). Keys [lo, pos] are visible (window > 0: pos - j < window);
// noncausal (encoders): keys [0, n_kv), or |pos - j| <= window / 2 with a window.
// KV_F32 / KV_F16 / KV_Q8_0 / KV_Q4_0 select the cache type (read as 32-bit words).
// has_sinks (gpt-oss): head h's logit sf[s_off + h] joins the max and the denominator.
// SPLIT (split-K decode, vk_attention.c): workgroup z of the grid scores only keys
// [kv_lo0 + z * chunk, + chunk) of its visible range and writes the partial (m, l, o[D]),
// o unnormalised, to of[(qi * n_split + z) * (D + 2)]; a chunk with no visible key writes
// l = 0 (m = 0, o = 0). flash_attn_merge.comp combines the partials and adds the sink.
#extension GL_EXT_control_flow_attributes : enable
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
#define MAX_D 512u
#define MAX_DPT (MAX_D / 32u)
layout(binding = 0) readonly buffer Q { float qf[]; };
layout(binding = 1) readonly buffer K { uint kw[]; };
layout(binding = 2) readonly buffer V { uint vw[]; };
layout(binding = 3) writeonly buffer O { float of[]; };
layout(binding = 4) readonly buffer S { float sf[]; };
layout(push_constant) uniform PC {
    uint n_tok, pos0, n_head, n_kv_head, head_dim, window, q_off, q_stride,
         k_off, v_off, kv_stride, o_off, o_stride, groups_x;
    float scale, softcap;
    uint noncausal, n_kv;
    uint has_sinks, s_off;
#ifdef SPLIT
    uint kv_lo0, chunk, n_split;
#endif
} pc;
#include "reduce.glsl"

#define LD16(buf, b) ((buf[(b) >> 2] >> (((b) & 2u) << 3)) & 0xffffu)
#if defined(KV_F32)
#define KV_ELEM(buf, rb, d) uintBitsToFloat(buf[((rb) >> 2) + (d)])
#elif defined(KV_F16)
#define KV_ELEM(buf, rb, d) unpackHalf2x16(LD16(buf, (rb) + 2u * (d))).x
#elif defined(KV_Q8_0)
// block (d / 32) of 34 bytes: fp16 scale then 32 int8
#define KV_ELEM(buf, rb, d) (unpackHalf2x16(LD16(buf, (rb) + 34u * ((d) >> 5))).x * \
    float(int(((buf[((rb) + 34u * ((d) >> 5) + 2u + ((d) & 31u)) >> 2] >> ((((rb) + 34u * ((d) >> 5) + 2u + ((d) & 31u)) & 3u) << 3)) & 0xffu) << 24) >> 24))
#elif defined(KV_Q4_0)
// block (d / 32) of 18 bytes: fp16 scale then 16 bytes of nibbles; element e of a block is
// the low nibble of byte e (e < 16) or the high nibble of byte e - 16; value d * (q - 8)
#define Q4_BLK(rb, d) ((rb) + 18u * ((d) >> 5))
#define LD8(buf, b) ((buf[(b) >> 2] >> (((b) & 3u) << 3)) & 0xffu)
#define KV_ELEM(buf, rb, d) (unpackHalf2x16(LD16(buf, Q4_BLK(rb, d))).x * \
    (float((LD8(buf, Q4_BLK(rb, d) + 2u + ((d) & 15u)) >> (((d) & 16u) >> 2)) & 0xfu) - 8.0))
#else
#error "flash_attn: define KV_F32, KV_F16, KV_Q8_0 or KV_Q4_0"
#endif

shared float q_sh[MAX_D];
shared float p_sh[WG];

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint qi = gl_WorkGroupID.y * pc.groups_x + gl_WorkGroupID.x; // t * n_head + h
    if (qi >= pc.n_tok * pc.n_head) return;
    const uint t = qi / pc.n_head, h = qi % pc.n_head;
    const uint kvh = h / (pc.n_head / pc.n_kv_head);
    const uint D = pc.head_dim;
    const uint pos = pc.pos0 + t;
    uint lo = (pc.window > 0u && pos + 1u > pc.window) ? pos + 1u - pc.window : 0u, hi = pos;
    if (pc.noncausal != 0u) {
        const uint half_w = pc.window / 2u;
        lo = (pc.window > 0u && pos > half_w) ? pos - half_w : 0u;
        hi = (pc.window > 0u && pos + half_w < pc.n_kv - 1u) ? pos + half_w : pc.n_kv - 1u;
    }
#ifdef SPLIT
    const uint z = gl_WorkGroupID.z, c_lo = pc.kv_lo0 + z * pc.chunk;
    lo = max(lo, c_lo);
    hi = min(hi, c_lo + pc.chunk - 1u); // lo > hi: no visible key in this chunk, the loop below is skipped
#endif
    const uint qb = pc.q_off + t * pc.q_stride + h * D;
    for (uint d = tid; d < D; d += WG) q_sh[d] = qf[qb + d];
    barrier();
    // Key/value element (j, d) lives at byte off + j * kv_stride + kv head part.
#if defined(KV_Q8_0)
    const uint head_bytes = (D / 32u) * 34u;
#elif defined(KV_Q4_0)
    const uint head_bytes = (D / 32u) * 18u;
#elif defined(KV_F16)
    const uint head_bytes = D * 2u;
#else
    const uint head_bytes = D * 4u;
#endif
    float o[MAX_DPT];
    [[unroll]] for (uint i = 0u; i < MAX_DPT; i++) o[i] = 0.0;
    float m = -1.0 / 0.0, l = 0.0;
    for (uint j0 = lo; j0 <= hi; j0 += WG) {
        const uint j = j0 + tid;
        float s = -1.0 / 0.0;
        if (j <= hi) {
            const uint rb = pc.k_off + j * pc.kv_stride + kvh * head_bytes;
            float acc = 0.0;
            for (uint d = 0u; d < D; d++) acc += q_sh[d] * KV_ELEM(kw, rb, d);
            s = acc * pc.scale;
            if (pc.softcap > 0.0) {
                const float z = clamp(2.0 * s / pc.softcap, -80.0, 80.0);
                s = pc.softcap * (1.0 - 2.0 / (exp(z) + 1.0));
            }
        }
        const float m_blk = wg_max(s);
        const float m_new = max(m, m_blk);
        const float p = j <= hi ? exp(s - m_new) : 0.0;
        const float corr = exp(m - m_new); // m = -inf on the first block: 0
        p_sh[tid] = p;
        const float l_blk = wg_sum(p);     // its barriers also publish p_sh
        l = l * corr + l_blk;
        m = m_new;
        const uint n_blk = min(WG, hi + 1u - j0);
        [[unroll]] for (uint i = 0u; i < MAX_DPT; i++) {
            const uint d = tid + i * WG;
            if (d >= D) break;
            float acc = o[i] * corr;
            for (uint jj = 0u; jj < n_blk; jj++)
                acc += p_sh[jj] * KV_ELEM(vw, pc.v_off + (j0 + jj) * pc.kv_stride + kvh * head_bytes, d);
            o[i] = acc;
        }
        barrier();
    }
#ifdef SPLIT
    const uint pb = pc.o_off + (qi * pc.n_split + z) * (D + 2u);
    if (tid == 0u) { of[pb] = lo <= hi ? m : 0.0; of[pb + 1u] = l; }
    [[unroll]] for (uint i = 0u; i < MAX_DPT; i++) {
        const uint d = tid + i * WG;
        if (d >= D) break;
        of[pb + 2u + d] = o[i];
    }
#else
    if (pc.has_sinks != 0u) {
        const float sk = sf[pc.s_off + h];
        const float m_new = max(m, sk);
        const float corr = exp(m - m_new);
        [[unroll]] for (uint i = 0u; i < MAX_DPT; i++) o[i] *= corr;
        l = l * corr + exp(sk - m_new);
    }
    const uint ob = pc.o_off + t * pc.o_stride + h * D;
    [[unroll]] for (uint i = 0u; i < MAX_DPT; i++) {
        const uint d = tid + i * WG;
        if (d >= D) break;
        of[ob + d] = o[i] / l;
    }
#endif
}
