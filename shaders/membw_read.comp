#version 450
// membw_read: the Vulkan read-bandwidth probe (engine/vulkan/vk_membw.c). Workgroup g sums
// the 32-bit words of its slice of the input (read as uvec4, consecutive invocations on
// consecutive 16-byte elements) and writes the sum to partial[g]; the host checks the total.
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer In { uvec4 data[]; };
layout(binding = 1) writeonly buffer Out { uint partial[]; };
layout(push_constant) uniform PC { uint n_vec4; uint per_group; } pc;
shared uint red[256];

void main() {
    const uint lid = gl_LocalInvocationID.x;
    const uint begin = gl_WorkGroupID.x * pc.per_group;
    const uint end = min(begin + pc.per_group, pc.n_vec4);
    uvec4 acc = uvec4(0);
    for (uint i = begin + lid; i < end; i += 256u) acc += data[i];
    red[lid] = acc.x + acc.y + acc.z + acc.w;
    barrier();
    for (uint s = 128u; s > 0u; s >>= 1) {
        if (lid < s) red[lid] += red[lid + s];
        barrier();
    }
    if (lid == 0u) partial[gl_WorkGroupID.x] = red[0];
}
