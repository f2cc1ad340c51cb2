#version 450
// delta_net (backend.h, qwen35's gated DeltaNet): one workgroup per value head h, its tokens in
// order. Per token the head's q and k (key head h % n_k_head) go to shared memory, every
// invocation forms their L2 norms itself (same order, same bits), and invocation j owns rows
// j, j + 128, ... of the head's state M (in the state buffer, updated in place):
//   M[j] *= decay; d = (v[j] - M[j].k) * b; M[j] += d k; out[t][h][j] = M[j].q / sqrt(S)
// with decay = exp(softplus(alpha + dt_bias[h]) * a[h]), b = sigmoid(beta).
layout(local_size_x = 128) in;
layout(binding = 0) readonly buffer QKV { float qkv[]; };
layout(binding = 1) readonly buffer AL { float alf[]; };
layout(binding = 2) readonly buffer BE { float bef[]; };
layout(binding = 3) readonly buffer DT { float dtb[]; };
layout(binding = 4) readonly buffer A { float af[]; };
layout(binding = 5) buffer ST { float st[]; };
layout(binding = 6) writeonly buffer O { float dst[]; };
layout(push_constant) uniform PC { uint n_tok, n_k_head, n_v_head, S, qkv_off, al_off, be_off, dt_off, a_off, st_off, o_off; float eps; } pc;
shared float q_s[512];
shared float k_s[512];
void main() {
    const uint h = gl_WorkGroupID.x, lid = gl_LocalInvocationID.x, S = pc.S;
    const uint kh = h % pc.n_k_head, row = (2u * pc.n_k_head + pc.n_v_head) * S;
    const uint m0 = pc.st_off + h * S * S;
    const float out_scale = 1.0 / sqrt(float(S));
    for (uint t = 0u; t < pc.n_tok; t++) {
        const uint x0 = pc.qkv_off + t * row;
        for (uint i = lid; i < S; i += 128u) {
            q_s[i] = qkv[x0 + kh * S + i];
            k_s[i] = qkv[x0 + (pc.n_k_head + kh) * S + i];
        }
        barrier();
        float qq = 0.0, kk = 0.0;
        for (uint i = 0u; i < S; i++) { qq += q_s[i] * q_s[i]; kk += k_s[i] * k_s[i]; }
        const float qn = out_scale / sqrt(qq + pc.eps), kn = 1.0 / sqrt(kk + pc.eps);
        const float x = alf[pc.al_off + t * pc.n_v_head + h] + dtb[pc.dt_off + h];
        const float sp = x > 20.0 ? x : log(1.0 + exp(x));
        const float decay = exp(sp * af[pc.a_off + h]);
        const float b = 1.0 / (1.0 + exp(-bef[pc.be_off + t * pc.n_v_head + h]));
        for (uint j = lid; j < S; j += 128u) {
            const uint mj = m0 + j * S;
            float mk = 0.0;
            for (uint i = 0u; i < S; i++) { const float m = st[mj + i] * decay; st[mj + i] = m; mk += m * (k_s[i] * kn); }
            const float d = (qkv[x0 + (2u * pc.n_k_head + h) * S + j] - mk) * b;
            float acc = 0.0;
            for (uint i = 0u; i < S; i++) { const float m = st[mj + i] + d * (k_s[i] * kn); st[mj + i] = m; acc += m * (q_s[i] * qn); }
            dst[pc.o_off + t * pc.n_v_head * S + h * S + j] = acc;
        }
        barrier();
    }
}
