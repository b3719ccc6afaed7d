// TEST ONLY: kernel parameter forms of real kernels. Expected values:
// metal/emu_corpus_test.go.
#include <metal_stdlib>
#include <metal_compute>
using namespace metal;

// MLX numbers function constants sparsely; indices above 63 must work.
constant bool has_bias [[function_constant(200)]];
constant bool has_scale [[function_constant(10)]];
constant int offset_fc [[function_constant(11)]];
constant short small_fc [[function_constant(12)]];
constant half half_fc [[function_constant(13)]];
constant bool no_bias = !has_bias;

struct Params {
  uint rows;
  uint cols;
  float alpha;
  uint2 stride;
};

// 2-D grid; parameters over several lines, both const orders, constant
// pointers, optional buffers, vector builtins of several types.
[[max_total_threads_per_threadgroup(256)]]
kernel void params_2d(
    const device float* x
        [[buffer(0)]],
    device const float* bias [[buffer(1), function_constant(has_bias)]],
    constant Params& p [[buffer(2)]],
    constant float* scale [[buffer(3), function_constant(has_scale)]],
    device float* out [[buffer(4)]],
    uint2 gid [[thread_position_in_grid]],
    ushort2 lid [[thread_position_in_threadgroup]],
    uint3 group [[threadgroup_position_in_grid]],
    const uint2 grid_size [[threads_per_grid]],
    ushort simd_width [[threads_per_simdgroup]],
    uint quad_lane [[thread_index_in_quadgroup]]) {
  if (gid.x >= p.cols || gid.y >= p.rows) {
    return;
  }
  uint i = gid.y * p.stride.y + gid.x * p.stride.x;
  float v = x[i] * p.alpha;
  if (has_bias) {
    v += bias[gid.x];
  }
  if (no_bias) {
    v += 1000.0f;
  }
  if (is_function_constant_defined(has_scale) && has_scale) {
    v *= scale[0];
  }
  v += float(offset_fc) + float(small_fc) + float(half_fc);
  out[i] = v;
  // A record of the builtins of this thread, after the matrix.
  uint r = p.rows * p.stride.y + (gid.y * grid_size.x + gid.x) * 6;
  out[r + 0] = float(lid.x);
  out[r + 1] = float(lid.y);
  out[r + 2] = float(group.x);
  out[r + 3] = float(group.y);
  out[r + 4] = float(simd_width);
  out[r + 5] = float(quad_lane);
}

// Implicit buffer indices, as MLX writes some kernels.
kernel void implicit_indices(device const uint* a, device uint* b [[buffer(0)]], device uint* c,
                             uint i [[thread_position_in_grid]]) {
  c[i] = a[i] + b[i];
}
