#version 450
// conv1d_state (backend.h, qwen35's gated DeltaNet): one invocation per channel c, its tokens in
// order: out[t][c] = silu(sum_j w[c][j] * in[t - k + 1 + j][c]), in[-i] = state row k - 1 - i;
// then state = the last k - 1 rows of (state, x). A channel's state is read and rewritten by
// its own invocation only (rows move down: row r reads row n_tok + r >= r).
layout(local_size_x = 64) in;
layout(binding = 0) readonly buffer X { float xf[]; };
layout(binding = 1) buffer S { float st[]; };
layout(binding = 2) readonly buffer W { float wf[]; };
layout(binding = 3) writeonly buffer D { float dst[]; };
layout(push_constant) uniform PC { uint n_tok, ch, k, x_off, s_off, w_off, d_off, groups_x; } pc;
void main() {
    const uint c = (gl_WorkGroupID.y * pc.groups_x + gl_WorkGroupID.x) * 64u + gl_LocalInvocationID.x;
    if (c >= pc.ch) return;
    const int k = int(pc.k), n = int(pc.n_tok);
    for (int t = 0; t < n; t++) {
        float sum = 0.0;
        for (int j = 0; j < k; j++) {
            const int tau = t - k + 1 + j;
            const float v = tau >= 0 ? xf[pc.x_off + uint(tau) * pc.ch + c] : st[pc.s_off + uint(k - 1 + tau) * pc.ch + c];
            sum += wf[pc.w_off + c * pc.k + uint(j)] * v;
        }
        dst[pc.d_off + uint(t) * pc.ch + c] = sum / (1.0 + exp(-sum));
    }
    for (int r = 0; r < k - 1; r++) {
        const int tau = n - (k - 1) + r;
        const float v = tau >= 0 ? xf[pc.x_off + uint(tau) * pc.ch + c] : st[pc.s_off + uint(k - 1 + tau) * pc.ch + c];
        st[pc.s_off + uint(r) * pc.ch + c] = v;
    }
}
