// TEST ONLY: threadgroup memory written the ways real kernels write it.
// Expected values: metal/emu_corpus_test.go.
#include <metal_stdlib>
using namespace metal;

struct Pair {
  float sum;
  uint count;
};

constant constexpr int TILE = 8;

kernel void tg_forms(device const float* in [[buffer(0)]],
                     device float* out [[buffer(1)]],
                     uint tid [[thread_index_in_threadgroup]],
                     uint group [[threadgroup_position_in_grid]],
                     uint ngroups [[threadgroups_per_grid]]) {
  // Declared over several lines, 2-D.
  threadgroup float
      tile[TILE]
          [TILE + 1];
  // An initializer, applied once per threadgroup.
  threadgroup uint counts[4] = {1, 2, 3, 4};
  threadgroup float4 vecs[TILE];
  threadgroup Pair pairs[2];
  threadgroup float a_scalar, b_array[TILE];
  uint r = tid / TILE, c = tid % TILE;
  tile[r][c] = in[group * TILE * TILE + tid];
  if (tid < TILE) {
    vecs[tid] = float4(float(tid), 1.0f, 2.0f, 3.0f);
  }
  if (tid == 0) {
    pairs[0] = Pair{0.0f, 0u};
    a_scalar = 0.5f;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  {
    // Nested block with its own threadgroup array and a pointer alias.
    threadgroup float transposed[TILE * TILE];
    threadgroup float* t = transposed;
    t[c * TILE + r] = tile[r][c];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    threadgroup const float4* vp = vecs;
    out[group * TILE * TILE + tid] = t[tid] + vp[r].x * 100.0f + float(counts[tid % 4]) * 1000.0f + a_scalar;
  }
  if (tid < TILE) {
    b_array[tid] = float(tid);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid == 0) {
    for (int k = 0; k < TILE; k++) {
      pairs[0].sum += b_array[k];
      pairs[0].count += 1;
    }
    out[ngroups * TILE * TILE + group] = pairs[0].sum * float(pairs[0].count);
  }
}
