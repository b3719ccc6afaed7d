// TEST ONLY: exercises the emulator shim's MSL features one by one; the
// expected values are computed independently in metal/emu_shim_test.go.
#include <metal_stdlib>
using namespace metal;

constant int fc_int [[function_constant(1)]];
constant float fc_float [[function_constant(2)]];
constant bool fc_missing [[function_constant(3)]];

kernel void half_rounding(device float* out [[buffer(0)]]) {
  half h = half(1) + 0.0003h + 0.0003h;
  out[0] = float(h);
}

kernel void simd_ops(device float* out [[buffer(0)]],
                     uint lane [[thread_index_in_simdgroup]],
                     uint tid [[thread_index_in_threadgroup]]) {
  out[tid * 5 + 0] = simd_prefix_exclusive_sum(float(lane));
  out[tid * 5 + 1] = simd_shuffle_xor(float(tid), 1);
  out[tid * 5 + 2] = simd_shuffle_down(float(tid), 4);
  out[tid * 5 + 3] = simd_broadcast(float(tid), 3);
  float partial = -1.0f;
  if (lane < 8) {
    partial = simd_sum(1.0f);
  }
  out[tid * 5 + 4] = partial;
}

kernel void vectors_and_constants(device float* out [[buffer(0)]], device uint* outu [[buffer(1)]]) {
  float4 v = float4(1, float2(2, 3), 4);
  float4 r = v.wzyx;
  for (int i = 0; i < 4; i++) {
    out[i] = r[i];
  }
  half3 h = half3(v.xyz);
  out[4] = float(h.z);
  out[5] = float(fc_int);
  out[6] = fc_float;
  out[7] = is_function_constant_defined(fc_missing) ? 1.0f : 0.0f;
  outu[0] = as_type<uint>(1.0f);
  out[8] = dot(v, float4(1));
  out[9] = float(static_cast<int>(2.7f));
}

kernel void grid3d(device uint* out [[buffer(0)]],
                   threadgroup uint* scratch [[threadgroup(0)]],
                   uint3 gid [[thread_position_in_grid]],
                   uint3 tpg [[threads_per_grid]],
                   uint tidx [[thread_index_in_threadgroup]],
                   ushort2 group [[threadgroup_position_in_grid]]) {
  scratch[tidx] = gid.x + 10 * gid.y + 100 * gid.z;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[gid.x + tpg.x * (gid.y + tpg.y * gid.z)] = scratch[tidx] + 1000 * uint(group.y);
}

kernel void mma_diag(device float* out [[buffer(0)]], device const float* b [[buffer(1)]]) {
  simdgroup_float8x8 diag(2.0f);
  simdgroup_store(diag, out, 8);
  simdgroup_float8x8 mb;
  simdgroup_load(mb, b, 8);
  simdgroup_float8x8 d;
  simdgroup_multiply(d, diag, mb);
  simdgroup_store(d, out + 64, 8);
}
