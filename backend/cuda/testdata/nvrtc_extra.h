// What kernels.cu uses beyond ../../metal/cuda/testdata/cuda_stub.h, declared
// for clang's CUDA front end as NVRTC declares it implicitly.
#pragma once
extern "C" {
float erff(float); float erfcf(float);
double exp(double); double erfc(double); double log(double); double fmax(double, double);
}
__device__ inline int max(int a, int b) { return a > b ? a : b; }
__device__ inline int min(int a, int b) { return a < b ? a : b; }
#define __align__(n) __attribute__((aligned(n)))
__device__ void __syncwarp(unsigned mask = 0xffffffffu);
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
// The vector types aligned as NVRTC's own, so that their accesses compile
// to single wide loads and stores, as on the GPU.
struct __attribute__((aligned(8))) float2 { float x, y; };
struct __attribute__((aligned(8))) uint2 { unsigned x, y; };
struct __attribute__((aligned(16))) uint4 { unsigned x, y, z, w; };
// The constructors inline, as NVRTC's headers define them: a call left in
// the PTX would stand for one the GPU's build does not have (and in a
// kernel with warpgroup products, make ptxas serialize them).
__device__ inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
__device__ inline uint2 make_uint2(unsigned x, unsigned y) { return uint2{x, y}; }
__device__ inline float2 make_float2(float x, float y) { return float2{x, y}; }
float __uint_as_float(unsigned);
__device__ int atomicAdd(int*, int);
