// TEST ONLY: SIMD-group, quad-group and simdgroup_matrix operations.
// Expected values: metal/emu_corpus_test.go.
#include <metal_stdlib>
#include <metal_simdgroup>
#include <metal_simdgroup_matrix>
using namespace metal;

#define NF 20
#define NU 8

kernel void simd_extras(device float* outf [[buffer(0)]],
                        device uint* outu [[buffer(1)]],
                        uint tid [[thread_index_in_threadgroup]],
                        uint lane [[thread_index_in_simdgroup]]) {
  device float* f = outf + tid * NF;
  device uint* u = outu + tid * NU;
  float fl = float(lane);
  f[0] = -1.0f;
  if (lane >= 5) {
    f[0] = simd_is_first() ? 1.0f : 0.0f;
  }
  simd_vote vote = simd_ballot(lane % 3 == 0);
  u[0] = uint(static_cast<simd_vote::vote_t>(vote));
  u[4] = (vote.any() ? 1u : 0u) + (vote.all() ? 2u : 0u) + (simd_ballot(true).all() ? 4u : 0u);
  f[1] = simd_all(lane < 32) ? 1.0f : 0.0f;
  f[2] = (simd_any(lane == 7) ? 1.0f : 0.0f) + (simd_all(lane < 31) ? 2.0f : 0.0f);
  f[3] = simd_shuffle_rotate_down(fl, 5);
  f[4] = simd_shuffle_rotate_up(fl, 3);
  f[5] = simd_shuffle_and_fill_down(fl, fl + 100.0f, 4);
  f[6] = simd_shuffle_and_fill_up(fl, fl + 100.0f, 4);
  f[7] = simd_shuffle_and_fill_down(fl, fl + 100.0f, 2, 8);
  f[8] = quad_sum(fl);
  f[9] = quad_shuffle(fl, 2);
  f[10] = quad_broadcast(fl, 3);
  f[11] = quad_shuffle_xor(fl, 1);
  f[12] = quad_shuffle_down(fl, 1);
  f[13] = quad_prefix_exclusive_sum(1.0f);
  f[14] = quad_max(fl);
  f[15] = simd_prefix_inclusive_sum(1.0f);
  f[16] = (quad_any(lane == 6) ? 1.0f : 0.0f) + (quad_all(lane % 4 != 3) ? 2.0f : 0.0f);
  half2 hv = half2(half(lane), half(1));
  f[17] = float(simd_sum(hv).x);
  f[18] = float(quad_is_first());
  f[19] = simd_broadcast_first(fl + 10.0f);
  u[1] = simd_or(1u << (lane % 16));
  u[2] = simd_and(lane | 0x100u);
  u[3] = simd_xor(lane);
  u[5] = quad_or(1u << (lane & 3u));
  u[6] = uint(simd_max(int(lane) - 7));
  u[7] = uint(simd_min(int(lane) - 7));
  threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
  threadgroup_barrier(mem_flags::mem_none);
  threadgroup_barrier();
  simdgroup_barrier(mem_flags::mem_threadgroup);
}

// D = A*B and E = A*B + 1 with 8x8 simdgroup matrices, one simdgroup.
kernel void simdgroup_mm(device const float* a [[buffer(0)]],
                         device const half* b [[buffer(1)]],
                         device float* d [[buffer(2)]],
                         device float* e [[buffer(3)]],
                         uint lane [[thread_index_in_simdgroup]]) {
  simdgroup_float8x8 ma, md, me;
  simdgroup_half8x8 mb;
  simdgroup_load(ma, a, 8);
  simdgroup_load(mb, b, 8);
  simdgroup_float8x8 ones = make_filled_simdgroup_matrix<float, 8, 8>(1.0f);
  simdgroup_multiply(md, ma, mb);
  simdgroup_multiply_accumulate(me, ma, mb, ones);
  simdgroup_store(md, d, 8);
  simdgroup_store(me, e, 8);
}
