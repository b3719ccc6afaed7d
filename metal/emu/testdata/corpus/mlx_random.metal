// Counter-based random bits in the style of MLX's random.metal (a
// Threefry-2x32 hash, 20 rounds, written here from the paper): a union of uint2 and uchar4[2], a
// program-scope "static constexpr constant" 2-D table walked with a
// range-for, a vector initialized from fewer values than it has lanes
// ({a, b, c} for a uint4), a "const thread uint2&" parameter, bool and
// ulong scalars passed by reference, and uint - bool arithmetic.
#include <metal_stdlib>

using namespace metal;

// Threefry-2x32 rotation constants (Salmon et al., "Parallel random
// numbers: as easy as 1, 2, 3", SC 2011), by round parity.
static constexpr constant uint32_t kRot[2][4] = {
    {13, 15, 26, 6},
    {17, 29, 16, 24}};

union word_bytes {
  uint2 words;
  uchar4 bytes[2];
};

word_bytes hash2x32(const thread uint2& key, uint2 ctr) {
  // The third key word is the parity of the first two and a constant.
  uint4 k = {key.x, key.y, key.x ^ key.y ^ 0x1BD11BDA};
  word_bytes h;
  h.words = ctr + k.xy;
  for (int block = 0; block < 5; ++block) {
    for (auto rot : kRot[block & 1]) {
      h.words.x += h.words.y;
      h.words.y = (h.words.y << rot) | (h.words.y >> (32 - rot));
      h.words.y ^= h.words.x;
    }
    h.words += uint2(k[(block + 1) % 3], k[(block + 2) % 3] + block + 1);
  }
  return h;
}

// Thread (x, y) hashes the counter pair (y, y + half) with key x and writes
// 8 bytes; with odd set the last row writes only its first 4.
[[kernel]] void random_bits(
    device const uint32_t* keys,
    device char* out,
    constant const bool& odd,
    constant const ulong& bytes_per_key,
    uint2 grid_dim [[threads_per_grid]],
    uint2 index [[thread_position_in_grid]]) {
  auto kidx = 2 * index.x;
  auto key = uint2(keys[kidx], keys[kidx + 1]);
  auto half_size = grid_dim.y - odd;
  out += index.x * bytes_per_key;
  bool drop_last = odd && (index.y == half_size);
  auto bits = hash2x32(key, uint2(index.y, drop_last ? 0 : index.y + grid_dim.y));
  size_t idx = size_t(index.y) << 2;
  for (int i = 0; i < 4; ++i) {
    out[idx + i] = bits.bytes[0][i];
  }
  if (!drop_last) {
    idx = (size_t(index.y) + grid_dim.y) << 2;
    for (int i = 0; i < 4; ++i) {
      out[idx + i] = bits.bytes[1][i];
    }
  }
}
