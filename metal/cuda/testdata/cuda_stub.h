// Stand-ins for what NVRTC declares implicitly, so that clang's CUDA front
// end can type-check translated kernels without a CUDA toolkit:
//   clang-19 -x cuda --cuda-gpu-arch=sm_90 --cuda-device-only -nocudainc
//   -nocudalib -fsyntax-only -include cuda_stub.h
// NVRTC compiles with -default-device; clang's equivalent is the pragma
// below, which makes every later function __host__ __device__.
#pragma once
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __forceinline__ __inline__ __attribute__((always_inline))
#include <__clang_cuda_builtin_vars.h>
#pragma clang force_cuda_host_device begin
extern "C" {
__device__ void __syncwarp(unsigned);
__device__ void __threadfence(void);
__device__ unsigned __activemask(void);
__device__ unsigned __ballot_sync(unsigned, int);
__device__ int __all_sync(unsigned, int);
__device__ int __any_sync(unsigned, int);
__device__ int __popc(unsigned);
__device__ int __clz(int);
__device__ int __ffs(int);
__device__ unsigned __umulhi(unsigned, unsigned);
float expf(float); float exp2f(float); float exp10f(float); float logf(float); float log2f(float); float log10f(float);
float powf(float, float); float sqrtf(float); float rsqrtf(float); float sinf(float); float cosf(float); float tanf(float);
float tanhf(float); float fabsf(float); float floorf(float); float ceilf(float); float roundf(float); float truncf(float);
float rintf(float); float asinf(float); float acosf(float); float atanf(float); float sinhf(float); float coshf(float);
float fmaf(float, float, float); float atan2f(float, float); float fmodf(float, float); float copysignf(float, float);
float fmaxf(float, float); float fminf(float, float);
float __expf(float); float __exp10f(float); float __logf(float); float __log2f(float); float __log10f(float);
float __powf(float, float); float __sinf(float); float __cosf(float); float __tanf(float); float __fdividef(float, float);
}
__device__ unsigned __shfl_sync(unsigned, unsigned, int, int = 32);
__device__ int __shfl_sync(unsigned, int, int, int = 32);
__device__ float __shfl_sync(unsigned, float, int, int = 32);
__device__ unsigned __shfl_xor_sync(unsigned, unsigned, int, int = 32);
__device__ int __shfl_xor_sync(unsigned, int, int, int = 32);
__device__ float __shfl_xor_sync(unsigned, float, int, int = 32);
// NVRTC's own vector types live in the global namespace; declaring
// look-alikes here makes the check catch MSL names that would resolve to
// them instead of the shim's.
struct uint3 { unsigned x, y, z; };
// Aligned as NVRTC's own (__builtin_align__), so that a float4 access
// compiles to one 16-byte load or store, as on the GPU.
struct __attribute__((aligned(16))) float4 { float x, y, z, w; };
struct dim3 { unsigned x, y, z; };
float exp(float); float max(float, float); float min(float, float);
__device__ float __int_as_float(int);
