#version 450
// flash_attn_merge: the reduce of split-K decode attention (vk_attention.c). One workgroup
// per (query row, head) qi = t * n_head + h combines the n_split partials (m, l, o[D]) that
// flash_attn.comp with SPLIT wrote to pf[(qi * n_split + s) * (D + 2)] by the log-sum-exp
// merge: M = max of the partials' m (and the sink), L = sum l_s e^(m_s - M) (+ e^(sink - M)),
// out = sum o_s e^(m_s - M) / L. Partials with l = 0 (a chunk without a visible key) are
// skipped, so an empty chunk never reaches exp(). has_sinks (gpt-oss): head h's logit
// sf[s_off + h] joins the max and the denominator once, here.
layout(local_size_x = 64) in;
layout(binding = 0) readonly buffer P { float pf[]; };
layout(binding = 1) writeonly buffer O { float of[]; };
layout(binding = 2) readonly buffer S { float sf[]; };
layout(push_constant) uniform PC {
    uint n_q, n_head, head_dim, n_split, o_off, o_stride, has_sinks, s_off, groups_x;
} pc;

void main() {
    const uint qi = gl_WorkGroupID.y * pc.groups_x + gl_WorkGroupID.x;
    if (qi >= pc.n_q) return;
    const uint t = qi / pc.n_head, h = qi % pc.n_head, D = pc.head_dim, st = D + 2u;
    const uint base = qi * pc.n_split * st;
    float M = -1.0 / 0.0;
    for (uint s = 0u; s < pc.n_split; s++)
        if (pf[base + s * st + 1u] > 0.0) M = max(M, pf[base + s * st]);
    const float sk = pc.has_sinks != 0u ? sf[pc.s_off + h] : 0.0;
    if (pc.has_sinks != 0u) M = max(M, sk);
    float L = pc.has_sinks != 0u ? exp(sk - M) : 0.0;
    for (uint s = 0u; s < pc.n_split; s++) {
        const float l = pf[base + s * st + 1u];
        if (l > 0.0) L += l * exp(pf[base + s * st] - M);
    }
    const uint ob = pc.o_off + t * pc.o_stride + h * D;
    for (uint d = gl_LocalInvocationID.x; d < D; d += 64u) {
        float acc = 0.0;
        for (uint s = 0u; s < pc.n_split; s++) {
            const uint pb = base + s * st;
            if (pf[pb + 1u] > 0.0) acc += pf[pb + 2u + d] * exp(pf[pb] - M);
        }
        of[ob + d] = L > 0.0 ? acc / L : 0.0;
    }
}
