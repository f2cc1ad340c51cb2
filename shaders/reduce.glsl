// reduce.glsl: workgroup-wide sum/max of one float per invocation, through subgroup
// arithmetic when USE_SUBGROUP is defined and a shared-memory tree otherwise.
// Needs `WG` (the workgroup size, a power of two) defined before inclusion. Every
// invocation of the workgroup must call these (they contain barriers).
#ifdef USE_SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : require
shared float red_sh[WG];
float wg_sum(float v) {
    float s = subgroupAdd(v);
    if (subgroupElect()) red_sh[gl_SubgroupID] = s;
    barrier();
    float r = 0.0;
    for (uint i = 0u; i < gl_NumSubgroups; i++) r += red_sh[i];
    barrier();
    return r;
}
float wg_max(float v) {
    float s = subgroupMax(v);
    if (subgroupElect()) red_sh[gl_SubgroupID] = s;
    barrier();
    float r = red_sh[0];
    for (uint i = 1u; i < gl_NumSubgroups; i++) r = max(r, red_sh[i]);
    barrier();
    return r;
}
#else
shared float red_sh[WG];
float wg_sum(float v) {
    uint t = gl_LocalInvocationID.x;
    red_sh[t] = v;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1) {
        if (t < s) red_sh[t] += red_sh[t + s];
        barrier();
    }
    float r = red_sh[0];
    barrier();
    return r;
}
float wg_max(float v) {
    uint t = gl_LocalInvocationID.x;
    red_sh[t] = v;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1) {
        if (t < s) red_sh[t] = max(red_sh[t], red_sh[t + s]);
        barrier();
    }
    float r = red_sh[0];
    barrier();
    return r;
}
#endif
