#version 450
// quantize_q8_1: activation rows -> blocks of 32 int8 for the integer-dot mat-vec.
// Block = 10 words: 8 words of packed int8, d (float bits), d * sum(q) (float bits).
layout(local_size_x = 64) in;
layout(binding = 0) readonly buffer X { float xf[]; };
layout(binding = 1) writeonly buffer Q { uint qw[]; };
layout(push_constant) uniform PC { uint ncols, ntok, x_off, x_stride, q_off; } pc;
void main() {
    const uint b = gl_GlobalInvocationID.x, t = gl_WorkGroupID.y;
    const uint nb = pc.ncols / 32u;
    if (b >= nb || t >= pc.ntok) return;
    const uint xb = pc.x_off + t * pc.x_stride + 32u * b;
    float amax = 0.0;
    for (uint j = 0u; j < 32u; j++) amax = max(amax, abs(xf[xb + j]));
    const float d = amax / 127.0, id = d != 0.0 ? 1.0 / d : 0.0;
    const uint qb = pc.q_off + (t * nb + b) * 10u;
    int sum = 0;
    for (uint w = 0u; w < 8u; w++) {
        uint packed = 0u;
        for (uint k = 0u; k < 4u; k++) {
            int q = int(roundEven(xf[xb + 4u * w + k] * id)); // lrintf on the CPU: ties to even
            sum += q;
            packed |= (uint(q) & 0xffu) << (8u * k);
        }
        qw[qb + w] = packed;
    }
    qw[qb + 8u] = floatBitsToUint(d);
    qw[qb + 9u] = floatBitsToUint(d * float(sum));
}
