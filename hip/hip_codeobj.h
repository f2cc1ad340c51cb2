/* hip_codeobj: the code objects embedded at build time, one per gfx target
 * (hip/CMakeLists.txt compiles hip_kernels.hip with hipcc --genco and embed_codeobj.cmake
 * writes the table as C arrays). */
#ifndef ANVIL_HIP_CODEOBJ_H
#define ANVIL_HIP_CODEOBJ_H
#include <stddef.h>

typedef struct { const char *target; const unsigned char *data; size_t size; } anv_hip_codeobj;
extern const anv_hip_codeobj anv_hip_codeobjs[];
extern const int anv_hip_n_codeobjs;
extern const char anv_hip_targets[]; /* "gfx1030,gfx1100,..." */
#endif
