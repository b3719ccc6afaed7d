// Rotary position embedding, split-half ("rotate_half", as HF ModernBERT and
// GPT-NeoX; spec Part 2 "RoPE"), in place on the q and k parts of a fused
// projection [rows, 3·H·Dh] whose rows are [q | k | v], each [H, Dh].
//
// The cos/sin values come from a table [seqLen][cos(Dh/2) | sin(Dh/2)] that
// the host computes the way PyTorch rounds them (float32 inverse
// frequencies, float32 angle = float32(position) · inv_freq, correctly
// rounded cos and sin): GPU sin/cos of angles in the thousands of radians
// are not accurate enough to reproduce upstream, and the table is tiny.
//
// One thread per rotated pair: grid over rows · 2H · Dh/2, any 1-D size.
#include <metal_stdlib>
using namespace metal;

struct RopeParams {
  uint rows;      // B·L
  uint seq_len;   // L: position = row mod L
  uint heads2;    // 2·H: the q heads, then the k heads
  uint head_dim;  // Dh, even
  uint stride;    // 3·H·Dh floats per row
};

kernel void rope_f32(device float* qkv [[buffer(0)]],
                     device const float* table [[buffer(1)]],
                     constant RopeParams& p [[buffer(2)]],
                     uint gid [[thread_position_in_grid]]) {
  const uint half_dim = p.head_dim / 2;
  const uint per_row = p.heads2 * half_dim;
  if (gid >= p.rows * per_row) {
    return;
  }
  const uint row = gid / per_row;
  const uint head = (gid % per_row) / half_dim;
  const uint j = gid % half_dim;
  device const float* cs = table + ulong(row % p.seq_len) * p.head_dim;
  const float c = cs[j];
  const float s = cs[half_dim + j];
  device float* x = qkv + ulong(row) * p.stride + head * p.head_dim;
  const float a = x[j];
  const float b = x[j + half_dim];
  x[j] = a * c - b * s;
  x[j + half_dim] = b * c + a * s;
}
