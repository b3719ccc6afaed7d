// Shim semantics test kernel: run by the emulator and by the CUDA device,
// both held to the same values computed independently in Go
// (shim_test.go). One threadgroup of 80 threads, so its simdgroups have 32,
// 32 and 16 lanes; a grid of 2×1 threadgroups.
#include <metal_stdlib>
using namespace metal;

constant int fc_k [[function_constant(0)]];
constant bool fc_flag [[function_constant(1)]];
constant uint kRecord = 16;

// twice is a helper without annotations: device code by default.
inline float twice(float x) { return 2.0f * x; }

kernel void shim_test(device float* out [[buffer(0)]],
                      constant uint& n [[buffer(1)]],
                      uint2 group [[threadgroup_position_in_grid]],
                      uint tid [[thread_index_in_threadgroup]],
                      uint threads [[threads_per_threadgroup]],
                      uint lane [[thread_index_in_simdgroup]],
                      uint simd [[simdgroup_index_in_threadgroup]],
                      uint simds [[simdgroups_per_threadgroup]]) {
  threadgroup float tg[128];
  device float* o = out + (ulong(group.x) * threads + tid) * kRecord;
  const float v = float(lane + 1 + simd * 100);
  o[0] = simd_sum(v);                       // full and partial simdgroups
  o[1] = simd_max(v);
  o[2] = simd_prefix_exclusive_sum(v);
  o[3] = simd_shuffle_xor(v, 1);
  o[4] = simd_broadcast(v, 3);
  o[5] = (lane % 2 == 0) ? simd_sum(v) : -1.0f;  // divergent: even lanes only
  // half: half∘half rounds to half, half∘float is float, half∘int is half.
  const half h = 1.0h;
  const half small = 0.0003h;
  o[6] = float(h + small + small);
  o[7] = h * 0.1f + small;  // float
  o[8] = float(half(3) * 2 + h);
  o[9] = float(fc_k) + (fc_flag ? 0.5f : 0.25f) + (is_function_constant_defined(fc_flag) ? 1000.0f : 0.0f);
  tg[tid] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  o[10] = tg[threads - 1 - tid];
  o[11] = twice(float(simds)) + float(group.x) * 1000.0f;
  o[12] = exp(0.0f) + precise::exp(1.0f) - fast::exp(1.0f) + float(n);
  const float4 f4 = float4(1.0f, 2.0f, 3.0f, 4.0f);
  const half4 h4 = half4(f4 * 0.5f);
  o[13] = dot(float4(h4), f4) + float(sizeof(float3)) * 100.0f + float(sizeof(half3)) * 1000.0f;
  o[14] = select(1.0f, 2.0f, lane > 7) + max(float(lane), 10.0f);
  o[15] = 0.0f;
}

// mma_test: D = A·B + C for 8×8 matrices given row-major in a, b, c, one
// simdgroup; every lane stores its two elements where its coordinates say.
kernel void mma_test(device const float* a [[buffer(0)]],
                     device const float* b [[buffer(1)]],
                     device const float* c [[buffer(2)]],
                     device float* d [[buffer(3)]],
                     uint lane [[thread_index_in_simdgroup]]) {
  const uint qid = lane / 4;
  const uint row = (qid & 4) + (lane / 2) % 4;
  const uint col = (qid & 2) * 2 + (lane % 2) * 2;
  simdgroup_float8x8 ma;
  simdgroup_float8x8 mb;
  simdgroup_float8x8 mc;
  ma.thread_elements()[0] = a[row * 8 + col];
  ma.thread_elements()[1] = a[row * 8 + col + 1];
  simdgroup_load(mb, b, 8);
  simdgroup_load(mc, c, 8, ulong2(0, 0), true);
  simdgroup_float8x8 md;
  simdgroup_multiply_accumulate(md, ma, mb, mc);
  d[row * 8 + col] = md.thread_elements()[0];
  d[row * 8 + col + 1] = md.thread_elements()[1];
  simdgroup_store(md, d + 64, 8);
}
