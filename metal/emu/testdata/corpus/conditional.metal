// Preprocessor conditionals around kernels and around MSL the emulator
// lacks, as in llama.cpp (#ifdef GGML_METAL_HAS_TENSOR around Metal 4
// tensor code, #if defined(GGML_METAL_HAS_BF16) around bfloat kernels)
// and MLX (#ifdef MLX_METAL_LOG_ENABLED around <metal_logging>). Only the
// compiled branch's kernels exist; unsupported code in a branch that is
// not compiled is no error.
#include <metal_stdlib>

#ifdef MLX_METAL_LOG_ENABLED
#include <metal_logging>
#define KERNEL_LOG(...) os_log_default.log_info(__VA_ARGS__)
#else
#define KERNEL_LOG(...)
#endif

#ifdef EMU_TEST_HAS_TENSOR
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace mpp::tensor_ops;
kernel void tensor_only(tensor<device half, dextents<int32_t, 2>> t [[buffer(0)]]) {
}
#endif

using namespace metal;

#include "cond_guarded.h"

#if __METAL_VERSION__ >= 310
#define SCALE 3
#else
#define SCALE 1
#endif

template <typename T>
kernel void scale_by(device const T* x [[buffer(0)]], device T* y [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  KERNEL_LOG("scale_by %d", i);
  y[i] = x[i] * T(SCALE);
}

#if __METAL_VERSION__ >= 310
kernel void which_branch(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  out[i] = 310;
}
#elif defined(EMU_TEST_OLD)
kernel void which_branch(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  out[i] = 200;
}
#else
kernel void which_branch(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  out[i] = 0;
}
#endif

template [[host_name("scale_f32")]] kernel void scale_by<float>(device const float*, device float*, uint);

#if defined(EMU_TEST_HAS_BF16)
template [[host_name("scale_bf16_guarded")]] kernel void scale_by<bfloat>(device const bfloat*, device bfloat*, uint);
#endif
