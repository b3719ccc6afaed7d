// TEST ONLY: kernels with the bugs the emulator must report. Line numbers
// are checked by metal/emu/emu_test.go; keep them stable.
#include <metal_stdlib>
using namespace metal;

kernel void divergent_barrier(device float* out [[buffer(0)]], uint tid [[thread_index_in_threadgroup]]) {
  if (tid < 16) {
    threadgroup_barrier(mem_flags::mem_threadgroup);
  } else {
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  out[tid] = 1.0f;
}

kernel void early_return(device float* out [[buffer(0)]], constant uint& n [[buffer(1)]], uint tid [[thread_index_in_threadgroup]]) {
  if (tid >= n) {
    return;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[tid] = 1.0f;
}

kernel void too_much_threadgroup(device float* out [[buffer(0)]], uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float a[4500];
  threadgroup float b[4500];
  a[tid] = 1.0f;
  b[tid] = 2.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[tid] = a[tid] + b[tid];
}

kernel void uninit_read(device float* out [[buffer(0)]], uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float scratch[64];
  if (tid % 2 == 0) {
    scratch[tid] = float(tid);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[tid] = scratch[tid];
}

kernel void oob_read(device const float* in [[buffer(0)]], device float* out [[buffer(1)]], constant uint& n [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  if (i < n) {
    out[i] = in[i + 1];
  }
}
