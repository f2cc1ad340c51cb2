// glu.glsl: the gated activations of backend.h's be_glu_kind, shared by glu.comp and the fused
// mat-vec (mul_mat_vec.comp MV_GLU) so both give the same bits. kind 0 SILU: x / (1 + e^-x);
// 1 GELU_TANH: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), tanh written overflow-safe;
// 2 SWIGLU_OAI (gpt-oss, ggml_swiglu_oai): min(x, 7) * sigmoid(1.702 min(x, 7)), times
// clamp(up, -7, 7) + 1; 3 SIGMOID (qwen35's attention output gate): sigmoid(x) * u.
float glu_out(uint kind, float x, float u) {
    if (kind == 3u) return u / (1.0 + exp(-x));
    if (kind == 1u) {
        const float z = 0.7978845608028654 * x * (1.0 + 0.044715 * x * x);
        const float th = 1.0 - 2.0 / (exp(2.0 * clamp(z, -40.0, 40.0)) + 1.0);
        return 0.5 * x * (1.0 + th) * u;
    }
    if (kind == 2u) {
        const float xc = min(x, 7.0);
        return xc / (1.0 + exp(-1.702 * xc)) * (clamp(u, -7.0, 7.0) + 1.0);
    }
    return x / (1.0 + exp(-x)) * u;
}
