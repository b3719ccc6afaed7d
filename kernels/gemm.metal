// GEMM Y = act(X·Wᵀ + bias): X is M×K, W is N×K (a linear layer's weight,
// row major, as stored in safetensors), Y is M×N fp32. Inputs are half or
// float (gemm_f32_f16w: float activations against half weights, widened
// exactly as they are staged); products accumulate in fp32 simdgroup
// matrices.
//
// Tiling (after ggml kernel_mul_mm and MLX steel, spec Part 2 "GEMM"): a
// threadgroup of 4 simdgroups (128 threads) owns a 32×32 tile of Y, each
// simdgroup a 16×16 quarter as 2×2 8×8 fragments. K advances 16 at a time
// through threadgroup tiles that are zero-filled past the matrix edges, and
// the result is staged through threadgroup memory so ragged M and N are
// written with bounds checks. Grid: (ceil(N/32), ceil(M/32)) threadgroups of
// 128 threads.
//
// The epilogue (bias, then the activation gemm_act) runs in that staged
// store instead of a second pass over Y: one dispatch, and Y is written once
// instead of written, read and written again. With gemm_geglu the tile's two
// column halves come from W rows j and I+j (I = N/2), so one threadgroup
// holds both operands of ModernBERT's GeGLU, GELU(Y[:, j])·Y[:, I+j], and
// stores it next to Y. The element-wise kernels activate_f32 and geglu_f32
// at the end of this file are the same epilogue unfused (Stream.Activate,
// Stream.GeGLU on any tensor). They live here, not in activation.metal,
// because each .metal file is its own compile unit and the GELU must have
// one definition: the emulator reads only *.metal from package kernels, so a
// shared header would not resolve there.
#include <metal_stdlib>
using namespace metal;

struct GemmParams {
  uint m;
  uint n;
  uint k;
};

constant bool gemm_has_bias [[function_constant(0)]];
// gemm_act selects the epilogue's activation: 0 identity, 1 GELU, 2 ReLU
// (the order of backend.Activation). With gemm_geglu it must be 0: Y keeps
// the raw projection, the GELU goes into the gated output.
constant uint gemm_act [[function_constant(1)]];
constant bool gemm_geglu [[function_constant(2)]];
// act_kind is activate_f32's activation, numbered as gemm_act.
constant uint act_kind [[function_constant(3)]];

constant uint kTileM = 32;
constant uint kTileN = 32;
constant uint kTileK = 16;
constant uint kThreads = 128;

// gelu is 0.5·x·(1 + erf(x/√2)), PyTorch's exact "gelu". erf is the float32
// approximation of N. Juffa (answer to "Implementing a correctly rounded
// erff", Stack Overflow 2018; < 1 ulp in both branches), used in its erfc
// form for |z| ≥ 0.9277: there 1 + erf(z) = erfc(|z|) = exp(r) for z < 0 is
// taken without the cancellation that 1 + erf would suffer, so GELU keeps
// its relative accuracy on the negative tail too.
inline float gelu(float x) {
  const float z = x * 0.707106781186547524f;
  const float t = fabs(z);
  float one_plus_erf;
  if (t >= 0.927734375f) {
    const float s = t * t;
    float r = fma(-1.72853470e-5f, t, 3.83197126e-4f);
    const float u = fma(-3.88396438e-3f, t, 2.42546219e-2f);
    r = fma(r, s, u);
    r = fma(r, t, -1.06777877e-1f);
    r = fma(r, t, -6.34846687e-1f);
    r = fma(r, t, -1.28717512e-1f);
    r = fma(r, t, -t);
    const float erfc_t = exp(r);
    one_plus_erf = z > 0.0f ? 2.0f - erfc_t : erfc_t;
  } else {
    const float s = z * z;
    float r = -5.96761703e-4f;
    r = fma(r, s, 4.99119423e-3f);
    r = fma(r, s, -2.67681349e-2f);
    r = fma(r, s, 1.12819925e-1f);
    r = fma(r, s, -3.76125336e-1f);
    r = fma(r, s, 1.28379166e-1f);
    one_plus_erf = 1.0f + fma(r, z, z);
  }
  return 0.5f * x * one_plus_erf;
}

inline float activate(float x, uint kind) {
  if (kind == 1) {
    return gelu(x);
  }
  if (kind == 2) {
    return max(x, 0.0f);
  }
  return x;
}

// w_row maps tile column c (< kTileN) of threadgroup column tx to the row of
// W (= column of Y) it computes. Plain: tx·32 + c. GeGLU: columns 0..15 are
// rows tx·16 + c of the first half, 16..31 the matching rows of the second.
inline uint w_row(uint tx, uint c, uint n) {
  if (gemm_geglu) {
    const uint half_n = n / 2;
    const uint j = tx * (kTileN / 2) + c % (kTileN / 2);
    return c < kTileN / 2 ? j : half_n + j;
  }
  return tx * kTileN + c;
}

// w_valid reports whether tile column c of threadgroup column tx is inside W.
inline bool w_valid(uint tx, uint c, uint n) {
  if (gemm_geglu) {
    return tx * (kTileN / 2) + c % (kTileN / 2) < n / 2;
  }
  return tx * kTileN + c < n;
}

// TX and TW are the element types of X and W in device memory; T is the
// type of the threadgroup tiles and simdgroup matrices.
template <typename TX, typename TW, typename T>
void gemm_tile(device const TX* x, device const TW* w, device float* y, device const float* bias,
               device float* gated, constant GemmParams& p, threadgroup T* xs, threadgroup T* ws,
               threadgroup float* ys, uint2 group, uint tid, uint simd) {
  const uint m0 = group.y * kTileM;
  // Simdgroup s owns rows sr..sr+15 and columns sc..sc+15 of the tile.
  const uint sr = (simd / 2) * 16;
  const uint sc = (simd % 2) * 16;

  simdgroup_float8x8 acc[2][2];
  for (uint i = 0; i < 2; i++) {
    for (uint j = 0; j < 2; j++) {
      acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    }
  }

  for (uint k0 = 0; k0 < p.k; k0 += kTileK) {
    for (uint e = tid; e < kTileM * kTileK; e += kThreads) {
      uint r = e / kTileK;
      uint c = e % kTileK;
      uint gk = k0 + c;
      xs[e] = (m0 + r < p.m && gk < p.k) ? T(x[ulong(m0 + r) * p.k + gk]) : T(0);
      ws[e] = (w_valid(group.x, r, p.n) && gk < p.k) ? T(w[ulong(w_row(group.x, r, p.n)) * p.k + gk]) : T(0);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint kk = 0; kk < kTileK; kk += 8) {
      simdgroup_matrix<T, 8, 8> a[2];
      simdgroup_matrix<T, 8, 8> b[2];
      for (uint i = 0; i < 2; i++) {
        simdgroup_load(a[i], xs + (sr + i * 8) * kTileK + kk, kTileK);
      }
      for (uint j = 0; j < 2; j++) {
        // B(k, n) = W(n, k): a transposed load of the W tile. The pointer,
        // not matrix_origin, selects the block, so the result does not
        // depend on how the device combines origin and transpose.
        simdgroup_load(b[j], ws + (sc + j * 8) * kTileK + kk, kTileK, ulong2(0, 0), true);
      }
      for (uint i = 0; i < 2; i++) {
        for (uint j = 0; j < 2; j++) {
          simdgroup_multiply_accumulate(acc[i][j], a[i], b[j], acc[i][j]);
        }
      }
    }
    // The next iteration overwrites the tiles other simdgroups may still read.
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }

  for (uint i = 0; i < 2; i++) {
    for (uint j = 0; j < 2; j++) {
      simdgroup_store(acc[i][j], ys + (sr + i * 8) * kTileN + sc + j * 8, kTileN);
    }
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint e = tid; e < kTileM * kTileN; e += kThreads) {
    uint r = e / kTileN;
    uint c = e % kTileN;
    if (m0 + r < p.m && w_valid(group.x, c, p.n)) {
      const uint col = w_row(group.x, c, p.n);
      float v = ys[e];
      if (gemm_has_bias) {
        v += bias[col];
      }
      v = activate(v, gemm_act);
      y[ulong(m0 + r) * p.n + col] = v;
      // The gate half reads the value column c+16 of the same row holds;
      // rounding as geglu_f32 on the stored Y would, so fused and unfused
      // agree bit for bit.
      if (gemm_geglu && c < kTileN / 2) {
        float gate = ys[e + kTileN / 2];
        if (gemm_has_bias) {
          gate += bias[p.n / 2 + col];
        }
        gated[ulong(m0 + r) * (p.n / 2) + col] = gelu(v) * gate;
      }
    }
  }
}

// gemm_f32: float X and W.
kernel void gemm_f32(device const float* x [[buffer(0)]],
                     device const float* w [[buffer(1)]],
                     device float* y [[buffer(2)]],
                     device const float* bias [[buffer(3), function_constant(gemm_has_bias)]],
                     constant GemmParams& p [[buffer(4)]],
                     device float* gated [[buffer(5), function_constant(gemm_geglu)]],
                     uint2 group [[threadgroup_position_in_grid]],
                     uint tid [[thread_index_in_threadgroup]],
                     uint simd [[simdgroup_index_in_threadgroup]]) {
  threadgroup float xs[kTileM * kTileK];
  threadgroup float ws[kTileN * kTileK];
  threadgroup float ys[kTileM * kTileN];
  gemm_tile<float, float, float>(x, w, y, bias, gated, p, xs, ws, ys, group, tid, simd);
}

// gemm_f16: half X and W (fp16 weights as stored), fp32 accumulation and Y.
kernel void gemm_f16(device const half* x [[buffer(0)]],
                     device const half* w [[buffer(1)]],
                     device float* y [[buffer(2)]],
                     device const float* bias [[buffer(3), function_constant(gemm_has_bias)]],
                     constant GemmParams& p [[buffer(4)]],
                     device float* gated [[buffer(5), function_constant(gemm_geglu)]],
                     uint2 group [[threadgroup_position_in_grid]],
                     uint tid [[thread_index_in_threadgroup]],
                     uint simd [[simdgroup_index_in_threadgroup]]) {
  threadgroup half xs[kTileM * kTileK];
  threadgroup half ws[kTileN * kTileK];
  threadgroup float ys[kTileM * kTileN];
  gemm_tile<half, half, half>(x, w, y, bias, gated, p, xs, ws, ys, group, tid, simd);
}

// gemm_f32_f16w: float X against half W (a linear layer's fp16 weights as
// stored), staged as float: the product is the one of the widened weights.
kernel void gemm_f32_f16w(device const float* x [[buffer(0)]],
                     device const half* w [[buffer(1)]],
                     device float* y [[buffer(2)]],
                     device const float* bias [[buffer(3), function_constant(gemm_has_bias)]],
                     constant GemmParams& p [[buffer(4)]],
                     device float* gated [[buffer(5), function_constant(gemm_geglu)]],
                     uint2 group [[threadgroup_position_in_grid]],
                     uint tid [[thread_index_in_threadgroup]],
                     uint simd [[simdgroup_index_in_threadgroup]]) {
  threadgroup float xs[kTileM * kTileK];
  threadgroup float ws[kTileN * kTileK];
  threadgroup float ys[kTileM * kTileN];
  gemm_tile<float, half, float>(x, w, y, bias, gated, p, xs, ws, ys, group, tid, simd);
}

// activate_f32: out[i] = act(in[i]) for i < n; out may alias in. Any 1-D grid.
kernel void activate_f32(device const float* in [[buffer(0)]],
                         device float* out [[buffer(1)]],
                         constant uint& n [[buffer(2)]],
                         uint i [[thread_position_in_grid]]) {
  if (i < n) {
    out[i] = activate(in[i], act_kind);
  }
}

struct GegluParams {
  uint rows;
  uint inner;  // I: in is [rows, 2I], out [rows, I]
};

// geglu_f32: out[r, c] = GELU(in[r, c]) · in[r, I + c]; the first half is
// activated (HF ModernBertMLP: input, gate = Wi(x).chunk(2); act(input)·gate).
kernel void geglu_f32(device const float* in [[buffer(0)]],
                      device float* out [[buffer(1)]],
                      constant GegluParams& p [[buffer(2)]],
                      uint i [[thread_position_in_grid]]) {
  if (i >= p.rows * p.inner) {
    return;
  }
  const uint r = i / p.inner;
  const uint c = i % p.inner;
  device const float* row = in + ulong(r) * 2 * p.inner;
  out[i] = gelu(row[c]) * row[p.inner + c];
}
