// Packed vectors in structs the host fills, and packed_T3 parameters (MLX's
// "const constant packed_int3& operand_batch_ndim"): packed_float4 has the
// alignment of a float, packed_float3 is 12 bytes.
#include <metal_stdlib>

using namespace metal;

struct PackedParams {
  float scale;           // offset 0
  packed_float4 bias;    // offset 4
  packed_half2 hh;       // offset 20
  packed_float3 dir;     // offset 24, 12 bytes
  uint n;                // offset 36
};                       // 40 bytes

static_assert(sizeof(PackedParams) == 40, "PackedParams layout");
static_assert(sizeof(packed_float3) == 12 && alignof(packed_float3) == 4, "packed_float3");
static_assert(sizeof(packed_float4) == 16 && alignof(packed_float4) == 4, "packed_float4");

// out[i] = (x[i] * scale + bias) . (dir, hh.x + hh.y), then the ints.
kernel void packed_params(
    device const float4* x [[buffer(0)]],
    device float* out [[buffer(1)]],
    constant PackedParams& p [[buffer(2)]],
    const constant packed_int3& dims [[buffer(3)]],
    device packed_float3* tri [[buffer(4)]],
    uint i [[thread_position_in_grid]]) {
  if (i >= p.n) {
    return;
  }
  float4 v = x[i] * p.scale + float4(p.bias);
  float3 d = p.dir;
  float4 w = float4(d, float(p.hh.x) + float(p.hh.y));
  out[i] = dot(v, w) + float(dims.x * 100 + dims[1] * 10 + dims.z);
  float3 t = tri[i];
  tri[i] = t * 2.0f + d;
}
