#version 450
// rope: rotates pairs of x [n_tok][n_head * head_dim] in place. NORMAL pairs (2i, 2i+1),
// NEOX pairs (i, i + n_rot/2); dims >= n_rot pass through. As ggml-cpu:
// theta_i = freq_scale * ((pos * theta_scale^i, by float recurrence) / factor_i), with
// theta_scale = powf(base, -2/n_rot) from the host. The angle is range-reduced
// (Cody-Waite) before cos/sin so long positions keep their accuracy on every driver.
// YaRN (ext_factor != 0, ggml's rope_yarn): pair i mixes the scaled angle with the unscaled
// one by ext_factor * (1 - clamp((i - corr_lo) / max(0.001, corr_hi - corr_lo), 0, 1));
// cos and sin are multiplied by mscale (1 without YaRN).
layout(local_size_x = 64) in;
layout(binding = 0) buffer X { float xf[]; };
layout(binding = 1) readonly buffer FF { float ff[]; };
layout(push_constant) uniform PC {
    uint n_tok, n_head, head_dim, pos0, n_rot, neox, x_off, x_stride, ff_off, has_ff;
    float theta_scale, freq_scale;
    float ext_factor, mscale, corr_lo, corr_hi;
} pc;
void main() {
    const uint half_rot = pc.n_rot / 2u;
    const uint i = gl_GlobalInvocationID.x;     // pair index within a head
    const uint th = gl_WorkGroupID.y;           // token * n_head + head
    if (i >= half_rot) return;
    const uint t = th / pc.n_head, h = th % pc.n_head;
    float theta = float(pc.pos0 + t);
    for (uint k = 0u; k < i; k++) theta *= pc.theta_scale;
    const float f = pc.has_ff != 0u ? ff[pc.ff_off + i] : 1.0;
    const float extrap = theta / f;
    theta = pc.freq_scale * extrap;
    if (pc.ext_factor != 0.0) {
        const float y = (float(i) - pc.corr_lo) / max(0.001, pc.corr_hi - pc.corr_lo);
        const float mix = (1.0 - clamp(y, 0.0, 1.0)) * pc.ext_factor;
        theta = theta * (1.0 - mix) + extrap * mix;
    }
    const float kk = round(theta * 0.15915494309189535);
    float r = fma(-kk, 6.28318548202514648, theta);
    r = fma(-kk, -1.7484556000744883e-07, r);
    const float c = cos(r) * pc.mscale, s = sin(r) * pc.mscale;
    const uint base = pc.x_off + t * pc.x_stride + h * pc.head_dim;
    const uint i0 = pc.neox != 0u ? base + i : base + 2u * i;
    const uint i1 = pc.neox != 0u ? base + i + half_rot : base + 2u * i + 1u;
    const float x0 = xf[i0], x1 = xf[i1];
    xf[i0] = x0 * c - x1 * s;
    xf[i1] = x0 * s + x1 * c;
}
