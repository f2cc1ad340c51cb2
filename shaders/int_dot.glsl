// int_dot.glsl: signed 4x8-bit packed dot product (SPV_KHR_integer_dot_product OpSDot),
// declared through GL_EXT_spirv_intrinsics because glslc has no GLSL builtin for it here.
#extension GL_EXT_spirv_intrinsics : require
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot4x8(int a, int b, spirv_literal int fmt);
int dot4(uint a, uint b) { return sdot4x8(int(a), int(b), 0); }
