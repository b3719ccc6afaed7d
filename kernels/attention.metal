// Multi-head scaled-dot-product attention in fp32 over a fused projection
// [B·L, 3·H·Dh] (rows [q | k | v], each [H, Dh] head-major), writing the
// concatenated heads [B·L, H·Dh].
//
// Design (spec Part 2 "Attention": at the short lengths of a classifier a
// query-row kernel with an online softmax is enough): one threadgroup of 32
// threads, a single simdgroup, per (query row, batch·head); grid (L, B·H).
// The query is staged in threadgroup memory. Keys go 32 at a time: lane l
// scores key j0+l, the block's maximum and sum of exponentials come from
// simd_max/simd_sum and rescale a running (max, sum) pair as in
// FlashAttention; the block's probabilities go through threadgroup memory
// and every lane accumulates P·V for its own head dimensions (d = lane,
// lane+32, ..., so Dh ≤ 256). A single simdgroup keeps the loop bounds, and
// so the barriers, uniform for the whole threadgroup even though each query
// row has its own key range.
//
// Masks: keys j < lengths[b] are real; with attention_sliding, also
// |i − j| ≤ radius. Padded query rows (i ≥ lengths[b]) are written as zeros.
#include <metal_stdlib>
using namespace metal;

struct AttentionParams {
  uint seq_len;
  uint heads;
  uint head_dim;
  float scale;
  uint radius;
};

constant bool attention_sliding [[function_constant(0)]];

constant uint kMaxDimsPerLane = 8;  // Dh ≤ 32·8

kernel void attention_f32(device const float* qkv [[buffer(0)]],
                          device const uint* lengths [[buffer(1)]],
                          device float* out [[buffer(2)]],
                          constant AttentionParams& p [[buffer(3)]],
                          uint2 group [[threadgroup_position_in_grid]],
                          uint lane [[thread_index_in_threadgroup]]) {
  threadgroup float query[256];
  threadgroup float probs[32];
  const uint i = group.x;
  const uint b = group.y / p.heads;
  const uint h = group.y % p.heads;
  const uint width = p.heads * p.head_dim;
  const ulong stride = 3 * ulong(width);
  const uint n = lengths[b];
  device float* o = out + ulong(b * p.seq_len + i) * width + h * p.head_dim;
  if (i >= n) {
    for (uint d = lane; d < p.head_dim; d += 32) {
      o[d] = 0.0f;
    }
    return;
  }
  uint first = 0;
  uint last = n - 1;
  if (attention_sliding) {
    first = i > p.radius ? i - p.radius : 0;
    last = min(last, i + p.radius);
  }
  device const float* rows = qkv + ulong(b * p.seq_len) * stride + h * p.head_dim;
  for (uint d = lane; d < p.head_dim; d += 32) {
    query[d] = rows[ulong(i) * stride + d];
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);

  float acc[kMaxDimsPerLane];
  for (uint c = 0; c < kMaxDimsPerLane; c++) {
    acc[c] = 0.0f;
  }
  float running_max = -INFINITY;
  float running_sum = 0.0f;
  for (uint j0 = first; j0 <= last; j0 += 32) {
    const uint j = j0 + lane;
    float score = -INFINITY;
    if (j <= last) {
      device const float* key = rows + ulong(j) * stride + width;
      float dot = 0.0f;
      for (uint d = 0; d < p.head_dim; d++) {
        dot += query[d] * key[d];
      }
      score = dot * p.scale;
    }
    // Lane 0 always holds a real key (j0 ≤ last), so block_max is finite.
    const float new_max = max(running_max, simd_max(score));
    const float alpha = exp(running_max - new_max);
    const float e = j <= last ? exp(score - new_max) : 0.0f;
    running_sum = running_sum * alpha + simd_sum(e);
    running_max = new_max;
    probs[lane] = e;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    const uint count = min(32u, last - j0 + 1);
    for (uint c = 0; c < kMaxDimsPerLane; c++) {
      acc[c] *= alpha;
    }
    for (uint t = 0; t < count; t++) {
      device const float* value = rows + ulong(j0 + t) * stride + 2 * width;
      const float w = probs[t];
      for (uint c = 0; c < kMaxDimsPerLane; c++) {
        const uint d = lane + 32 * c;
        if (d < p.head_dim) {
          acc[c] += w * value[d];
        }
      }
    }
    // probs is rewritten by the next block.
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  const float inv = 1.0f / running_sum;
  for (uint c = 0; c < kMaxDimsPerLane; c++) {
    const uint d = lane + 32 * c;
    if (d < p.head_dim) {
      o[d] = acc[c] * inv;
    }
  }
}
