// Element-wise kernels: one thread per element, any 1-D grid. Threads past
// the end (the grid is rounded up to whole threadgroups) do nothing.
#include <metal_stdlib>
using namespace metal;

// vector_add: out[i] = a[i] + b[i] for i < n.
kernel void vector_add(device const float* a [[buffer(0)]],
                       device const float* b [[buffer(1)]],
                       device float* out [[buffer(2)]],
                       constant uint& n [[buffer(3)]],
                       uint i [[thread_position_in_grid]]) {
  if (i < n) {
    out[i] = a[i] + b[i];
  }
}
