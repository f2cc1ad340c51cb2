#version 450
// get_rows: out[i][e] = dequant(table row ids[i])[e] for the table rows [row_lo, row_hi)
// that live in the bound chunk; other ids are skipped (another dispatch covers them).
// DQ_WIDE: the table is in the repacked layout (dequant.glsl, engine/vulkan/vk_wide.c).
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer W { uint wq[]; };
layout(binding = 1) readonly buffer I { int ids[]; };
layout(binding = 2) writeonly buffer D { float dst[]; };
layout(push_constant) uniform PC {
    uint ncols, n_ids, row_lo, row_hi, t_off, row_bytes, ids_off, d_off, d_stride, groups_x;
} pc;
#include "dequant.glsl"
void main() {
    uint i = gl_WorkGroupID.y;                       // which id
    uint e = gl_WorkGroupID.x * 256u + gl_LocalInvocationID.x; // element
    if (i >= pc.n_ids || e >= pc.ncols) return;
    uint r = uint(ids[pc.ids_off + i]);
    if (r < pc.row_lo || r >= pc.row_hi) return;
    uint rb = pc.t_off + (r - pc.row_lo) * pc.row_bytes;
    dst[pc.d_off + i * pc.d_stride + e] = dq_at(rb, pc.ncols / QK, e / QK, e % QK);
}
