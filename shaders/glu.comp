#version 450
// glu: out[i] = act(gate[i]) * up[i]; GLU_SILU: x / (1 + e^-x); GLU_GELU: the tanh
// approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), tanh written overflow-safe;
// GLU_OAI (gpt-oss, ggml_swiglu_oai): g = min(x, 7) * sigmoid(1.702 min(x, 7)), times
// clamp(up, -7, 7) + 1.
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer G { float gf[]; };
layout(binding = 1) readonly buffer U { float uf[]; };
layout(binding = 2) writeonly buffer D { float dst[]; };
layout(push_constant) uniform PC { uint n, g_off, u_off, d_off, groups_x; } pc;
void main() {
    const uint i = (gl_WorkGroupID.y * pc.groups_x + gl_WorkGroupID.x) * 256u + gl_LocalInvocationID.x;
    if (i >= pc.n) return;
    const float x = gf[pc.g_off + i];
#if defined(GLU_SILU)
    const float a = x / (1.0 + exp(-x));
#elif defined(GLU_GELU)
    const float z = 0.7978845608028654 * x * (1.0 + 0.044715 * x * x);
    const float th = 1.0 - 2.0 / (exp(2.0 * clamp(z, -40.0, 40.0)) + 1.0);
    const float a = 0.5 * x * (1.0 + th);
#elif defined(GLU_OAI)
    const float xc = min(x, 7.0);
    const float a = xc / (1.0 + exp(-1.702 * xc));
#else
#error "glu: define GLU_SILU, GLU_GELU or GLU_OAI"
#endif
#if defined(GLU_OAI)
    dst[pc.d_off + i] = a * (clamp(uf[pc.u_off + i], -7.0, 7.0) + 1.0);
#else
    dst[pc.d_off + i] = a * uf[pc.u_off + i];
#endif
}
