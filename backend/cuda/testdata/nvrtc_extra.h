// What kernels.cu uses beyond ../../metal/cuda/testdata/cuda_stub.h, declared
// for clang's CUDA front end as NVRTC declares it implicitly.
#pragma once
extern "C" {
float erff(float);
double exp(double); double log(double); double fmax(double, double);
}
int max(int, int); int min(int, int);
