// TEST ONLY: MSL library functions, one result per output slot. Expected
// values: metal/emu_corpus_test.go (worked out independently in Go).
#include <metal_stdlib>
#include <metal_math>
#include <metal_integer>
using namespace metal;

kernel void library_float(device const float* in [[buffer(0)]],
                          device float* out [[buffer(1)]],
                          uint i [[thread_position_in_grid]]) {
  float x = in[i];
  float4 v = float4(x, -x, x * 0.5f, 2.0f);
  uint o = i * 24;
  out[o + 0] = select(1.0f, 2.0f, x > 0.0f);
  float4 sel = select(v, float4(9.0f), v < 0.0f);
  out[o + 1] = sel.y;
  out[o + 2] = clamp(x, -1.0f, 1.0f);
  out[o + 3] = mix(1.0f, 3.0f, 0.25f);
  out[o + 4] = fma(x, 3.0f, 0.5f);
  out[o + 5] = saturate(x);
  out[o + 6] = sign(x);
  out[o + 7] = fract(x);
  out[o + 8] = rint(x);
  out[o + 9] = metal::fast::exp(x);
  out[o + 10] = metal::precise::sqrt(fabs(x));
  out[o + 11] = fast::tanh(x);
  out[o + 12] = all(v.xy > float2(-100.0f)) ? 1.0f : 0.0f;
  out[o + 13] = any(isnan(float4(x, NAN, 0.0f, 1.0f))) ? 1.0f : 0.0f;
  out[o + 14] = any(isinf(v)) ? 1.0f : 0.0f;
  out[o + 15] = numeric_limits<float>::max();
  out[o + 16] = float(numeric_limits<half>::max());
  out[o + 17] = float(numeric_limits<half>::epsilon());
  out[o + 18] = float(metal::numeric_limits<bfloat>::max());
  // bfloat rounds to nearest even on conversion and after each operation.
  bfloat b = bfloat(x);
  out[o + 19] = float(b);
  bfloat4 b4 = bfloat4(v);
  out[o + 20] = float(b4.x * b4.z);
  // as_type between vectors of the same size.
  half4 h4 = as_type<half4>(float2(x, 1.0f));
  out[o + 21] = float(as_type<float>(half2(h4.xy)));
  // C-style vector casts convert element-wise.
  float4 f4 = (float4)half4(h4.zw, h4.zw);
  int2 iv = (int2)(v.xy * 2.0f);
  out[o + 22] = f4.x + f4.w;
  out[o + 23] = float(iv.x + iv.y) + (float)(x > 0.0f);
}

kernel void library_int(device const uint* in [[buffer(0)]],
                        device uint* out [[buffer(1)]],
                        uint i [[thread_position_in_grid]]) {
  uint x = in[i];
  int s = int(x) - 1000;
  uint o = i * 12;
  out[o + 0] = popcount(x);
  out[o + 1] = clz(x);
  out[o + 2] = ctz(x);
  out[o + 3] = extract_bits(x, 4u, 8u);
  out[o + 4] = uint(extract_bits(s, 3u, 5u));
  out[o + 5] = mulhi(x, 0x9e3779b9u);
  out[o + 6] = uint(mulhi(s, -123457));
  out[o + 7] = insert_bits(x, 0x5u, 8u, 3u);
  out[o + 8] = rotate(x, 7u);
  out[o + 9] = reverse_bits(x);
  ushort2 u2 = ushort2(x & 0xffff, x >> 16);
  out[o + 10] = uint(clz(u2).x) + 100u * uint(popcount(u2).y);
  out[o + 11] = as_type<uint>(ushort2(u2.y, u2.x));
}

// Column-major matrices (MSL floatCxR), llama.cpp's (type4x4) conversion
// casts and m * v products.
kernel void library_matrix(device const half4x4* src [[buffer(0)]],
                           device float4* out [[buffer(1)]]) {
  float4x4 m = (float4x4)(*src);
  float4 v = float4(1.0f, 2.0f, 3.0f, 4.0f);
  out[0] = m * v;
  out[1] = v * m;
  out[2] = m[1];
  float2x2 d = float2x2(3.0f);
  float2x2 e = float2x2(float2(1.0f, 2.0f), float2(3.0f, 4.0f));
  float2x2 p = d * e;
  out[3] = float4(p[0], p[1]);
  out[4] = float4(transpose(e)[0], (e * 2.0f)[1]);
}
