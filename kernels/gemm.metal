// GEMM Y = X·Wᵀ (+ bias): X is M×K, W is N×K (a linear layer's weight, row
// major, as stored in safetensors), Y is M×N fp32. Inputs are half or float
// (gemm_f32_f16w: float activations against half weights, widened exactly as
// they are staged); products accumulate in fp32 simdgroup matrices.
//
// Tiling (after ggml kernel_mul_mm and MLX steel, spec Part 2 "GEMM"): a
// threadgroup of 4 simdgroups (128 threads) owns a 32×32 tile of Y, each
// simdgroup a 16×16 quarter as 2×2 8×8 fragments. K advances 16 at a time
// through threadgroup tiles that are zero-filled past the matrix edges, and
// the result is staged through threadgroup memory so ragged M and N are
// written with bounds checks. Grid: (ceil(N/32), ceil(M/32)) threadgroups of
// 128 threads.
#include <metal_stdlib>
using namespace metal;

struct GemmParams {
  uint m;
  uint n;
  uint k;
};

constant bool gemm_has_bias [[function_constant(0)]];

constant uint kTileM = 32;
constant uint kTileN = 32;
constant uint kTileK = 16;
constant uint kThreads = 128;

// TX and TW are the element types of X and W in device memory; T is the
// type of the threadgroup tiles and simdgroup matrices.
template <typename TX, typename TW, typename T>
void gemm_tile(device const TX* x, device const TW* w, device float* y, device const float* bias,
               constant GemmParams& p, threadgroup T* xs, threadgroup T* ws, threadgroup float* ys,
               uint2 group, uint tid, uint simd) {
  const uint m0 = group.y * kTileM;
  const uint n0 = group.x * kTileN;
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
      ws[e] = (n0 + r < p.n && gk < p.k) ? T(w[ulong(n0 + r) * p.k + gk]) : T(0);
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
    if (m0 + r < p.m && n0 + c < p.n) {
      float v = ys[e];
      if (gemm_has_bias) {
        v += bias[n0 + c];
      }
      y[ulong(m0 + r) * p.n + n0 + c] = v;
    }
  }
}

// gemm_f32: float X and W.
kernel void gemm_f32(device const float* x [[buffer(0)]],
                     device const float* w [[buffer(1)]],
                     device float* y [[buffer(2)]],
                     device const float* bias [[buffer(3), function_constant(gemm_has_bias)]],
                     constant GemmParams& p [[buffer(4)]],
                     uint2 group [[threadgroup_position_in_grid]],
                     uint tid [[thread_index_in_threadgroup]],
                     uint simd [[simdgroup_index_in_threadgroup]]) {
  threadgroup float xs[kTileM * kTileK];
  threadgroup float ws[kTileN * kTileK];
  threadgroup float ys[kTileM * kTileN];
  gemm_tile<float, float, float>(x, w, y, bias, p, xs, ws, ys, group, tid, simd);
}

// gemm_f16: half X and W (fp16 weights as stored), fp32 accumulation and Y.
kernel void gemm_f16(device const half* x [[buffer(0)]],
                     device const half* w [[buffer(1)]],
                     device float* y [[buffer(2)]],
                     device const float* bias [[buffer(3), function_constant(gemm_has_bias)]],
                     constant GemmParams& p [[buffer(4)]],
                     uint2 group [[threadgroup_position_in_grid]],
                     uint tid [[thread_index_in_threadgroup]],
                     uint simd [[simdgroup_index_in_threadgroup]]) {
  threadgroup half xs[kTileM * kTileK];
  threadgroup half ws[kTileN * kTileK];
  threadgroup float ys[kTileM * kTileN];
  gemm_tile<half, half, half>(x, w, y, bias, p, xs, ws, ys, group, tid, simd);
}

// gemm_f32_f16w: float X against half W (a linear layer's fp16 weights as
// stored), staged as float: the product is the one of the widened weights.
kernel void gemm_f32_f16w(device const float* x [[buffer(0)]],
                          device const half* w [[buffer(1)]],
                          device float* y [[buffer(2)]],
                          device const float* bias [[buffer(3), function_constant(gemm_has_bias)]],
                          constant GemmParams& p [[buffer(4)]],
                          uint2 group [[threadgroup_position_in_grid]],
                          uint tid [[thread_index_in_threadgroup]],
                          uint simd [[simdgroup_index_in_threadgroup]]) {
  threadgroup float xs[kTileM * kTileK];
  threadgroup float ws[kTileN * kTileK];
  threadgroup float ys[kTileM * kTileN];
  gemm_tile<float, half, float>(x, w, y, bias, p, xs, ws, ys, group, tid, simd);
}
