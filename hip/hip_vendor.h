/* hip_vendor: the small vendor header that lets one kernel source (hip_kernels.hip) build
 * with hipcc for AMD GPUs and with nvcc for NVIDIA GPUs (the way ggml-cuda's vendors/hip.h
 * does it, in the other direction). The kernels use only what is below: thread/block ids,
 * __syncthreads, __shared__, a 32-lane xor shuffle, and plain float math. */
#ifndef ANVIL_HIP_VENDOR_H
#define ANVIL_HIP_VENDOR_H

#if defined(__HIP_PLATFORM_AMD__) || defined(__HIP_PLATFORM_HCC__) || defined(__HIP__)
#include <hip/hip_runtime.h>
#define ANV_VENDOR_AMD 1
/* RDNA runs wave32 by default (gfx10+); the reductions below assume 32 lanes. */
#if defined(__HIP_DEVICE_COMPILE__) && defined(__AMDGCN_WAVEFRONT_SIZE) && __AMDGCN_WAVEFRONT_SIZE != 32
#error "hip/: the kernels are written for wave32 (RDNA); build without -mwavefrontsize64"
#endif
static __device__ __forceinline__ float anv_shfl_xor(float v, int mask) { return __shfl_xor(v, mask, 32); }
#elif defined(__CUDACC__)
#include <cuda_runtime.h>
#define ANV_VENDOR_NVIDIA 1
static __device__ __forceinline__ float anv_shfl_xor(float v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask, 32); }
#else
#error "hip_vendor.h: compile with hipcc (AMD) or nvcc (NVIDIA)"
#endif

#define ANV_KERNEL extern "C" __global__
#define ANV_DEV static __device__ __forceinline__

/* Sum over the 32 lanes of a wave. */
ANV_DEV float anv_wave_sum(float v) {
    for (int m = 16; m > 0; m >>= 1) v += anv_shfl_xor(v, m);
    return v;
}
ANV_DEV float anv_wave_max(float v) {
    for (int m = 16; m > 0; m >>= 1) v = fmaxf(v, anv_shfl_xor(v, m));
    return v;
}
#endif
