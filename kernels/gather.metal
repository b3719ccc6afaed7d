// Row gather: out[i, :] = table[index[i], :]. It is the token-embedding
// lookup (fp32 or fp16 tables, as stored), the type-embedding broadcast and
// the read of hidden states at marker or [CLS] rows. Indices are checked by
// the host before dispatch. Grid: (ceil(cols/T), rows) threadgroups of T
// threads; thread x of row y copies one element.
#include <metal_stdlib>
using namespace metal;

template <typename T>
void gather_row(device const T* table, device const uint* index, device float* out, uint cols, uint2 gid) {
  if (gid.x < cols) {
    out[ulong(gid.y) * cols + gid.x] = float(table[ulong(index[gid.y]) * cols + gid.x]);
  }
}

// gather_rows_f32: a float table.
kernel void gather_rows_f32(device const float* table [[buffer(0)]],
                            device const uint* index [[buffer(1)]],
                            device float* out [[buffer(2)]],
                            constant uint& cols [[buffer(3)]],
                            uint2 gid [[thread_position_in_grid]]) {
  gather_row<float>(table, index, out, cols, gid);
}

// gather_rows_f16: a half table (fp16 embeddings as stored), widened exactly.
kernel void gather_rows_f16(device const half* table [[buffer(0)]],
                            device const uint* index [[buffer(1)]],
                            device float* out [[buffer(2)]],
                            constant uint& cols [[buffer(3)]],
                            uint2 gid [[thread_position_in_grid]]) {
  gather_row<half>(table, index, out, cols, gid);
}
