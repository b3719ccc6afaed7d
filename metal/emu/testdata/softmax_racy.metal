// TEST ONLY: kernels/softmax.metal with the barrier that protects the reuse
// of partial[] removed. The emulator tests require that this copy gives a
// wrong answer under at least one schedule.
#include <metal_stdlib>
using namespace metal;

// softmax_f32: out[row, :] = exp(in[row, :] - max) / sum(exp(in[row, :] - max)).
kernel void softmax_racy_f32(device const float* in [[buffer(0)]],
                        device float* out [[buffer(1)]],
                        constant uint& cols [[buffer(2)]],
                        uint row [[threadgroup_position_in_grid]],
                        uint tid [[thread_index_in_threadgroup]],
                        uint threads [[threads_per_threadgroup]],
                        uint lane [[thread_index_in_simdgroup]],
                        uint simd [[simdgroup_index_in_threadgroup]],
                        uint simds [[simdgroups_per_threadgroup]]) {
  threadgroup float partial[32];
  device const float* x = in + ulong(row) * cols;
  device float* y = out + ulong(row) * cols;

  float rowMax = -INFINITY;
  for (uint i = tid; i < cols; i += threads) {
    rowMax = max(rowMax, x[i]);
  }
  rowMax = simd_max(rowMax);
  if (lane == 0) {
    partial[simd] = rowMax;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  rowMax = simd_max(lane < simds ? partial[lane] : -INFINITY);
  // Every simdgroup must have read the maxima before partial is reused.

  float sum = 0.0f;
  for (uint i = tid; i < cols; i += threads) {
    sum += exp(x[i] - rowMax);
  }
  sum = simd_sum(sum);
  if (lane == 0) {
    partial[simd] = sum;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  sum = simd_sum(lane < simds ? partial[lane] : 0.0f);

  float inv = 1.0f / sum;
  for (uint i = tid; i < cols; i += threads) {
    y[i] = exp(x[i] - rowMax) * inv;
  }
}
