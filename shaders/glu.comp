#version 450
// glu: out[i] = act(gate[i]) * up[i], act one of glu.glsl's (GLU_SILU, GLU_GELU, GLU_OAI, GLU_SIGMOID).
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer G { float gf[]; };
layout(binding = 1) readonly buffer U { float uf[]; };
layout(binding = 2) writeonly buffer D { float dst[]; };
layout(push_constant) uniform PC { uint n, g_off, u_off, d_off, groups_x; } pc;
#include "glu.glsl"
#if defined(GLU_SILU)
#define GLU_KIND 0u
#elif defined(GLU_GELU)
#define GLU_KIND 1u
#elif defined(GLU_OAI)
#define GLU_KIND 2u
#elif defined(GLU_SIGMOID)
#define GLU_KIND 3u
#else
#error "glu: define GLU_SILU, GLU_GELU or GLU_OAI"
#endif
void main() {
    const uint i = (gl_WorkGroupID.y * pc.groups_x + gl_WorkGroupID.x) * 256u + gl_LocalInvocationID.x;
    if (i >= pc.n) return;
    dst[pc.d_off + i] = glu_out(GLU_KIND, gf[pc.g_off + i], uf[pc.u_off + i]);
}
