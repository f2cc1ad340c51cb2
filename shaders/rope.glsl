// rope.glsl: the cos/sin of pair i at position pos, shared by rope.comp and rope_store.comp
// (the same bits). As ggml-cpu: theta_i = freq_scale * ((pos * theta_scale^i, by float
// recurrence) / factor_i), theta_scale = powf(base, -2/n_rot) from the host; the angle is
// range-reduced (Cody-Waite) before cos/sin so long positions keep their accuracy on every
// driver. YaRN (ext_factor != 0, ggml's rope_yarn): pair i mixes the scaled angle with the
// unscaled one by ext_factor * (1 - clamp((i - corr_lo) / max(0.001, corr_hi - corr_lo), 0, 1));
// cos and sin are multiplied by mscale (1 without YaRN). f = factor_i (1 without factors).
vec2 rope_cs(uint i, uint pos, float f, float theta_scale, float freq_scale, float ext_factor, float mscale,
             float corr_lo, float corr_hi) {
    float theta = float(pos);
    for (uint k = 0u; k < i; k++) theta *= theta_scale;
    const float extrap = theta / f;
    theta = freq_scale * extrap;
    if (ext_factor != 0.0) {
        const float y = (float(i) - corr_lo) / max(0.001, corr_hi - corr_lo);
        const float mix = (1.0 - clamp(y, 0.0, 1.0)) * ext_factor;
        theta = theta * (1.0 - mix) + extrap * mix;
    }
    const float kk = round(theta * 0.15915494309189535);
    float r = fma(-kk, 6.28318548202514648, theta);
    r = fma(-kk, -1.7484556000744883e-07, r);
    return vec2(cos(r) * mscale, sin(r) * mscale);
}
