// LayerNorm in fp32: one threadgroup per row, any threadgroup size from 1 to
// 1024 threads. The row is read three times (mean, variance, output) rather
// than held in threadgroup memory, so rows of any width fit; the two
// reductions use simd_sum inside simdgroups and a 32-float threadgroup
// scratch across them, the shape of MLX layer_norm.metal and ggml
// kernel_norm (spec Part 2, "Row kernels").
//
// The variance is the biased one, taken around the mean in a second pass
// (not E[x²]−E[x]²), as PyTorch's layer_norm does: the one-pass form loses
// digits when the mean is large against the spread. out may alias in: each
// thread writes only the elements it reads in the last pass, after every
// thread has finished the earlier passes.
#include <metal_stdlib>
using namespace metal;

struct LayerNormParams {
  uint cols;
  float eps;
};

constant bool layernorm_has_bias [[function_constant(0)]];

// row_sum reduces one value per thread over the threadgroup; every thread
// gets the total. partial must not be touched by the caller between calls:
// the trailing barrier lets the next call reuse it.
inline float row_sum(float v, threadgroup float* partial, uint lane, uint simd, uint simds) {
  v = simd_sum(v);
  if (lane == 0) {
    partial[simd] = v;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  v = simd_sum(lane < simds ? partial[lane] : 0.0f);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  return v;
}

// layernorm_f32: out[row, :] = (in[row, :] − mean) / sqrt(var + eps) · weight (+ bias).
kernel void layernorm_f32(device const float* in [[buffer(0)]],
                          device const float* weight [[buffer(1)]],
                          device const float* bias [[buffer(2), function_constant(layernorm_has_bias)]],
                          device float* out [[buffer(3)]],
                          constant LayerNormParams& p [[buffer(4)]],
                          uint row [[threadgroup_position_in_grid]],
                          uint tid [[thread_index_in_threadgroup]],
                          uint threads [[threads_per_threadgroup]],
                          uint lane [[thread_index_in_simdgroup]],
                          uint simd [[simdgroup_index_in_threadgroup]],
                          uint simds [[simdgroups_per_threadgroup]]) {
  threadgroup float partial[32];
  device const float* x = in + ulong(row) * p.cols;
  device float* y = out + ulong(row) * p.cols;

  float sum = 0.0f;
  for (uint i = tid; i < p.cols; i += threads) {
    sum += x[i];
  }
  const float mean = row_sum(sum, partial, lane, simd, simds) / float(p.cols);

  float squares = 0.0f;
  for (uint i = tid; i < p.cols; i += threads) {
    float d = x[i] - mean;
    squares += d * d;
  }
  const float variance = row_sum(squares, partial, lane, simd, simds) / float(p.cols);
  const float rstd = 1.0f / sqrt(variance + p.eps);

  for (uint i = tid; i < p.cols; i += threads) {
    float v = (x[i] - mean) * rstd * weight[i];
    if (layernorm_has_bias) {
      v += bias[i];
    }
    y[i] = v;
  }
}
