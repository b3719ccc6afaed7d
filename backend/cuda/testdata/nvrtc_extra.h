// What kernels.cu uses beyond ../../metal/cuda/testdata/cuda_stub.h, declared
// for clang's CUDA front end as NVRTC declares it implicitly.
#pragma once
extern "C" {
float erff(float); float erfcf(float);
double exp(double); double erfc(double); double log(double); double fmax(double, double);
}
int max(int, int); int min(int, int);
float4 make_float4(float, float, float, float);
#define __align__(n) __attribute__((aligned(n)))
__device__ void __syncwarp(unsigned mask = 0xffffffffu);
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
// The vector types aligned as NVRTC's own, so that their accesses compile
// to single wide loads and stores, as on the GPU.
struct __attribute__((aligned(8))) float2 { float x, y; };
struct __attribute__((aligned(8))) uint2 { unsigned x, y; };
uint2 make_uint2(unsigned, unsigned);
float2 make_float2(float, float);
struct __attribute__((aligned(16))) uint4 { unsigned x, y, z, w; };
float __uint_as_float(unsigned);
__device__ int atomicAdd(int*, int);
