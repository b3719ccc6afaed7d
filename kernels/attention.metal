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

// attention_flash_f32: the same attention, flash-style (after MLX
// steel_attention and ggml flash_attn_ext; see docs/metal-plan.md), for
// head dims that are multiples of 8 up to 64. A threadgroup of 4
// simdgroups takes a block of 32 queries of one (batch row, head); grid
// (ceil(L/32), B·H). The query block and then each block of 32 keys and
// values are staged once in threadgroup memory (q and k rotated on the way
// in with attention_rope, from the same host table as rope_f32), and
// simdgroup s computes its 8 query rows with 8×8 simdgroup matrices:
// S = Q·Kᵀ (4 fragments of 8 keys), an fp32 online softmax over S's rows
// (each row lives on 4 lanes, reduced with simd_shuffle_xor), then O += P·V
// straight from the softmaxed S fragments. With attention_sliding only the
// key blocks that meet the window [q0 − radius, q0 + 31 + radius] are
// visited; masked scores inside them are −∞. Padded query rows are zero.
constant bool attention_rope [[function_constant(1)]];
// attention_head_dim is p.head_dim as a compile-time value: the loops over
// the head's 8-wide fragments (acc[d], d < dh / 8) then have constant
// bounds the compiler unrolls, so acc stays in registers instead of a
// runtime-indexed array in stack memory (slow, and miscompiled in large
// kernels elsewhere). MLX and ggml keep these bounds compile-time too.
constant uint attention_head_dim [[function_constant(2)]];

constant uint kFlashQ = 32;
constant uint kFlashK = 32;
constant uint kFlashMaxDim = 64;
constant uint kFlashLd = kFlashMaxDim + 4;  // padded row stride of the tiles

// flash_load reads element d of the q (part 0) or k (part 1) head at
// position pos of a row-major [q | k | v] projection, rotated when
// attention_rope is set.
inline float flash_load(device const float* row, device const float* table, uint pos, uint d, uint head_dim,
                        uint part) {
  if (!attention_rope || part == 2) {
    return row[d];
  }
  const uint half_dim = head_dim / 2;
  const uint j = d % half_dim;
  device const float* cs = table + ulong(pos) * head_dim;
  const float c = cs[j];
  const float s = cs[half_dim + j];
  if (d < half_dim) {
    return row[d] * c - row[d + half_dim] * s;
  }
  return row[d] * c + row[d - half_dim] * s;
}

kernel void attention_flash_f32(device const float* qkv [[buffer(0)]],
                                device const uint* lengths [[buffer(1)]],
                                device float* out [[buffer(2)]],
                                constant AttentionParams& p [[buffer(3)]],
                                device const float* table [[buffer(4), function_constant(attention_rope)]],
                                uint2 group [[threadgroup_position_in_grid]],
                                uint tid [[thread_index_in_threadgroup]],
                                uint simd [[simdgroup_index_in_threadgroup]],
                                uint lane [[thread_index_in_simdgroup]]) {
  threadgroup float qs[kFlashQ * kFlashLd];
  threadgroup float ks[kFlashK * kFlashLd];
  threadgroup float vs[kFlashK * kFlashLd];
  const uint q0 = group.x * kFlashQ;
  const uint b = group.y / p.heads;
  const uint h = group.y % p.heads;
  const uint dh = attention_head_dim;
  const uint width = p.heads * dh;
  const ulong stride = 3 * ulong(width);
  const uint n = lengths[b];
  device const float* rows = qkv + ulong(b * p.seq_len) * stride + h * dh;

  // This lane's coordinates inside an 8×8 fragment (MLX's layout).
  const uint qid = lane / 4;
  const uint fm = (qid & 4) + (lane / 2) % 4;
  const uint fn = (qid & 2) * 2 + (lane % 2) * 2;
  const uint i = q0 + simd * 8 + fm;  // this lane's query row
  device float* o = out + ulong(b * p.seq_len + i) * width + h * dh;

  if (q0 >= n) {
    // A block of padded rows only: zeros (the whole threadgroup leaves).
    if (i < p.seq_len) {
      for (uint d = fn; d < dh; d += 8) {
        o[d] = 0.0f;
        o[d + 1] = 0.0f;
      }
    }
    return;
  }
  for (uint e = tid; e < kFlashQ * dh; e += 128) {
    const uint r = e / dh;
    const uint d = e % dh;
    const uint pos = q0 + r;
    qs[r * kFlashLd + d] = pos < n ? flash_load(rows + ulong(pos) * stride, table, pos, d, dh, 0) : 0.0f;
  }
  uint lo = 0;
  uint hi = n - 1;
  if (attention_sliding) {
    lo = q0 > p.radius ? q0 - p.radius : 0;
    hi = min(hi, q0 + kFlashQ - 1 + p.radius);
  }

  simdgroup_float8x8 acc[kFlashMaxDim / 8];
  for (uint d = 0; d < kFlashMaxDim / 8; d++) {
    acc[d] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  }
  float row_max = -INFINITY;
  float row_sum = 0.0f;
  for (uint j0 = lo; j0 <= hi; j0 += kFlashK) {
    // The previous block's keys and values (and, the first time, the query
    // staging) are done with before they are overwritten.
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint e = tid; e < kFlashK * dh; e += 128) {
      const uint r = e / dh;
      const uint d = e % dh;
      const uint j = j0 + r;
      float kv = 0.0f;
      float vv = 0.0f;
      if (j <= hi) {
        device const float* row = rows + ulong(j) * stride;
        kv = flash_load(row + width, table, j, d, dh, 1);
        vv = row[2 * width + d];
      }
      ks[r * kFlashLd + d] = kv;
      vs[r * kFlashLd + d] = vv;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);

    simdgroup_float8x8 s[kFlashK / 8];
    for (uint f = 0; f < kFlashK / 8; f++) {
      s[f] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    }
    for (uint dk = 0; dk < dh; dk += 8) {
      simdgroup_float8x8 a;
      threadgroup const float* qa = qs + (simd * 8 + fm) * kFlashLd + dk + fn;
      a.thread_elements()[0] = qa[0];
      a.thread_elements()[1] = qa[1];
      for (uint f = 0; f < kFlashK / 8; f++) {
        // B(d, key) = K(key, d): keys f·8 + fn and + 1 at dim dk + fm.
        simdgroup_float8x8 kb;
        threadgroup const float* kp = ks + (f * 8 + fn) * kFlashLd + dk + fm;
        kb.thread_elements()[0] = kp[0];
        kb.thread_elements()[1] = kp[kFlashLd];
        simdgroup_multiply_accumulate(s[f], a, kb, s[f]);
      }
    }
    // Mask and scale, then the block's row maximum over the 4 lanes of
    // the row (lanes differing in bits 0 and 3 share fm).
    float block_max = -INFINITY;
    for (uint f = 0; f < kFlashK / 8; f++) {
      for (uint e = 0; e < 2; e++) {
        const uint j = j0 + f * 8 + fn + e;
        bool valid = j <= hi && i < n;
        if (attention_sliding) {
          valid = valid && (i > j ? i - j : j - i) <= p.radius;
        }
        const float v = valid ? s[f].thread_elements()[e] * p.scale : -INFINITY;
        s[f].thread_elements()[e] = v;
        block_max = max(block_max, v);
      }
    }
    block_max = max(block_max, simd_shuffle_xor(block_max, 1));
    block_max = max(block_max, simd_shuffle_xor(block_max, 8));
    const float new_max = max(row_max, block_max);
    // A row with no real key so far keeps (−∞, 0) and contributes nothing.
    const bool empty = new_max == -INFINITY;
    const float alpha = empty ? 1.0f : exp(row_max - new_max);
    float block_sum = 0.0f;
    for (uint f = 0; f < kFlashK / 8; f++) {
      for (uint e = 0; e < 2; e++) {
        const float v = s[f].thread_elements()[e];
        const float pe = empty || v == -INFINITY ? 0.0f : exp(v - new_max);
        s[f].thread_elements()[e] = pe;
        block_sum += pe;
      }
    }
    block_sum += simd_shuffle_xor(block_sum, 1);
    block_sum += simd_shuffle_xor(block_sum, 8);
    row_sum = row_sum * alpha + block_sum;
    row_max = new_max;
    for (uint d = 0; d < dh / 8; d++) {
      acc[d].thread_elements()[0] *= alpha;
      acc[d].thread_elements()[1] *= alpha;
      for (uint f = 0; f < kFlashK / 8; f++) {
        // B(key, d) = V(key, d): key f·8 + fm, dims d·8 + fn and + 1.
        simdgroup_float8x8 vb;
        threadgroup const float* vp = vs + (f * 8 + fm) * kFlashLd + d * 8 + fn;
        vb.thread_elements()[0] = vp[0];
        vb.thread_elements()[1] = vp[1];
        simdgroup_multiply_accumulate(acc[d], s[f], vb, acc[d]);
      }
    }
  }
  if (i >= p.seq_len) {
    return;
  }
  const float inv = i < n ? 1.0f / row_sum : 0.0f;
  for (uint d = 0; d < dh / 8; d++) {
    o[d * 8 + fn] = i < n ? acc[d].thread_elements()[0] * inv : 0.0f;
    o[d * 8 + fn + 1] = i < n ? acc[d].thread_elements()[1] * inv : 0.0f;
  }
}
