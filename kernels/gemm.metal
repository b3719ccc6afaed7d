// GEMM Y = epilogue(prologue(X)·Wᵀ): X is M×K (tokens × features), W is
// N×K (a linear layer's weight, row major, as stored in safetensors), Y is
// M×N fp32. X is float (gemm_f32, gemm_f32_f16w) or half (gemm_f16) and is
// staged as float; W is staged in its own type (half weights stay half in
// threadgroup memory, float weights stay float so that F32 checkpoints keep
// their precision) and widened to float when a lane loads its fragment;
// products accumulate in fp32 simdgroup matrices.
//
// Tiling (after ggml kernel_mul_mm and MLX steel gemm; see
// docs/metal-plan.md): a threadgroup of 4 simdgroups (128 threads) owns a
// 32×64 tile of Y (32 tokens × 64 weight rows); simdgroup s computes all 32
// rows of columns 16s..16s+15 as 4×2 8×8 accumulators, so each K step of 8
// loads 4 X fragments and 2 W fragments for 8 multiply-accumulates. K
// advances 32 at a time through two threadgroup buffers: while the
// simdgroups multiply one, each thread holds the next K block's X and W in
// registers (loaded with float4/half4 vector loads when gemm_vec says the
// rows are aligned) and writes it into the other, so one barrier per K step
// orders both the reads of the old block and the writes of the new one.
// Tiles are zero-filled past the matrix edges, so any M, N, K works.
// Fragments are loaded lane by lane (MLX BaseMMAFrag's lane layout: lane l
// holds row (l/4 & 4) + (l/2)%4 and columns (l/4 & 2)·2 + (l%2)·2 and +1),
// which is also how the epilogue finds each accumulator's coordinates.
// Grid: (ceil(N/64), ceil(M/32)) threadgroups, or ceil(N/2/32) columns with
// gemm_geglu; × S slices in z with gemm_split (see there).
//
// Prologue (gemm_ln): X rows are LayerNorm'ed as they are staged. At the
// start every simdgroup computes mean and 1/sqrt(var + eps) of 8 of the
// threadgroup's rows in one read of each (Welford per lane, merged across
// lanes; no E[x²]−E[x]² cancellation); staging then applies
// (x − mean)·rstd·w (+ b).
// The normalised rows are never written: the LayerNorm costs no dispatch
// and no round trip through memory.
//
// Epilogue, in registers, on each accumulator element: + bias, then the
// activation gemm_act, then
//   - gemm_residual: res[i] += v (the residual stream updated in place; the
//     element is read and written by the same lane only),
//   - gemm_geglu: the tile's W rows are arranged so that each simdgroup's
//     two column fragments are rows j and I+j (I = N/2) of W: a lane holds
//     both operands of ModernBERT's GeGLU, GELU(Y[:, j])·Y[:, I+j], and
//     stores it to gated,
//   - gemm_write_y: Y itself is stored only when someone reads it (with a
//     fused GeGLU or residual the host usually does not).
// The element-wise kernels activate_f32 and geglu_f32 at the end of this
// file are the same epilogue unfused (Stream.Activate, Stream.GeGLU on any
// tensor). They live here, not in activation.metal, because each .metal file
// is its own compile unit and the GELU must have one definition.
#include <metal_stdlib>
using namespace metal;

struct GemmParams {
  uint m;
  uint n;
  uint k;
  float eps;     // LayerNorm prologue epsilon (gemm_ln)
  uint k_slice;  // gemm_split: K values per slice, a multiple of kBK
};

constant bool gemm_has_bias [[function_constant(0)]];
// gemm_act selects the epilogue's activation: 0 identity, 1 GELU, 2 ReLU
// (the order of backend.Activation). With gemm_geglu it must be 0.
constant uint gemm_act [[function_constant(1)]];
constant bool gemm_geglu [[function_constant(2)]];
// act_kind is activate_f32's activation, numbered as gemm_act.
constant uint act_kind [[function_constant(3)]];
constant bool gemm_ln [[function_constant(4)]];
constant bool gemm_ln_bias [[function_constant(5)]];
constant bool gemm_residual [[function_constant(6)]];
constant bool gemm_write_y [[function_constant(7)]];
// gemm_vec: K is a multiple of 4 and W's offset a multiple of 4 elements,
// so every staged chunk of 4 is one aligned vector load.
constant bool gemm_vec [[function_constant(8)]];
// gemm_split: deterministic split-K. Threadgroup z of the grid multiplies
// only K values [z·k_slice, (z+1)·k_slice) and stores its raw accumulators
// to partial[z] (an M×N float matrix laid out as Y, GeGLU columns included);
// no epilogue runs here. gemm_reduce_f32 then sums partial[0] + partial[1] +
// … in that fixed order, so the result does not depend on which slice
// finished first, and applies the epilogue. With gemm_ln every slice still
// takes its rows' statistics over the whole row.
constant bool gemm_split [[function_constant(9)]];

constant uint kBM = 32;
constant uint kBN = 64;
constant uint kBK = 32;
constant uint kThreads = 128;
// Padded row strides of the staged tiles (in elements): rows start on
// different banks, and stay 16-byte aligned for vector stores.
constant uint kLdX = kBK + 4;
constant uint kLdW = kBK + 8;
// Chunks of 4 K values each thread stages per K block.
constant uint kXChunks = kBM * kBK / 4 / kThreads;  // 2
constant uint kWChunks = kBN * kBK / 4 / kThreads;  // 4

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

// w_row maps tile column c (< 64) of threadgroup column gx to the row of W
// (= column of Y) it computes. Plain: gx·64 + c. GeGLU: simdgroup c/16
// holds value rows gx·32 + (c/16)·8 + c%8 in its first fragment and the
// matching gate rows I + … in its second.
inline uint w_row(uint gx, uint c, uint n) {
  if (gemm_geglu) {
    const uint j = gx * (kBN / 2) + (c / 16) * 8 + c % 8;
    return (c % 16) < 8 ? j : n / 2 + j;
  }
  return gx * kBN + c;
}

// w_valid reports whether tile column c of threadgroup column gx is inside W.
inline bool w_valid(uint gx, uint c, uint n) {
  if (gemm_geglu) {
    return gx * (kBN / 2) + (c / 16) * 8 + c % 8 < n / 2;
  }
  return gx * kBN + c < n;
}

// gemm_load fetches the K block at k0 into this thread's registers, zeros
// past the edges, LayerNorm'ed with gemm_ln.
template <typename TX, typename TX4, typename TW, typename TW4>
inline void gemm_load(device const TX* x, device const TW* w, device const float* ln_w, device const float* ln_b,
                      constant GemmParams& p, threadgroup const float* stats, uint m0, uint gx, uint tid, uint k0,
                      thread float4* xr, thread TW4* wr) {
  for (uint q = 0; q < kXChunks; q++) {
    const uint e = tid + q * kThreads;
    const uint r = e / (kBK / 4);
    const uint kc = k0 + (e % (kBK / 4)) * 4;
    float4 v = float4(0.0f);
    if (m0 + r < p.m) {
      device const TX* src = x + ulong(m0 + r) * p.k + kc;
      if (gemm_vec) {
        if (kc < p.k) {
          v = float4(*(device const TX4*)src);
        }
      } else {
        for (uint i = 0; i < 4; i++) {
          if (kc + i < p.k) {
            v[i] = float(src[i]);
          }
        }
      }
      if (gemm_ln) {
        const float mean = stats[2 * r];
        const float rstd = stats[2 * r + 1];
        for (uint i = 0; i < 4; i++) {
          if (kc + i < p.k) {
            float t = (v[i] - mean) * rstd * ln_w[kc + i];
            if (gemm_ln_bias) {
              t += ln_b[kc + i];
            }
            v[i] = t;
          }
        }
      }
    }
    xr[q] = v;
  }
  for (uint q = 0; q < kWChunks; q++) {
    const uint e = tid + q * kThreads;
    const uint c = e / (kBK / 4);
    const uint kc = k0 + (e % (kBK / 4)) * 4;
    TW4 v = TW4(0);
    if (w_valid(gx, c, p.n)) {
      device const TW* src = w + ulong(w_row(gx, c, p.n)) * p.k + kc;
      if (gemm_vec) {
        if (kc < p.k) {
          v = *(device const TW4*)src;
        }
      } else {
        for (uint i = 0; i < 4; i++) {
          if (kc + i < p.k) {
            v[i] = src[i];
          }
        }
      }
    }
    wr[q] = v;
  }
}

// gemm_stage writes this thread's registers into the staged tiles xb, wb.
template <typename TW, typename TW4>
inline void gemm_stage(threadgroup float* xb, threadgroup TW* wb, uint tid, thread const float4* xr,
                       thread const TW4* wr) {
  for (uint q = 0; q < kXChunks; q++) {
    const uint e = tid + q * kThreads;
    *(threadgroup float4*)(xb + (e / (kBK / 4)) * kLdX + (e % (kBK / 4)) * 4) = xr[q];
  }
  for (uint q = 0; q < kWChunks; q++) {
    const uint e = tid + q * kThreads;
    *(threadgroup TW4*)(wb + (e / (kBK / 4)) * kLdW + (e % (kBK / 4)) * 4) = wr[q];
  }
}

// TX4 and TW4 are 4-vectors of X's and W's device element types; TW is W's
// element type, which the W tile keeps.
template <typename TX, typename TX4, typename TW, typename TW4>
void gemm_tile(device const TX* x, device const TW* w, device float* y, device const float* bias,
               device float* gated, device float* res, device const float* ln_w, device const float* ln_b,
               device float* partial, constant GemmParams& p, threadgroup float* xs, threadgroup TW* ws,
               threadgroup float* stats, uint3 group, uint tid, uint simd, uint lane) {
  const uint m0 = group.y * kBM;
  const uint gx = group.x;
  // The K blocks this threadgroup multiplies: all, or its slice.
  uint first = 0;
  uint blocks = (p.k + kBK - 1) / kBK;
  if (gemm_split) {
    first = group.z * (p.k_slice / kBK);
    blocks = min(blocks, first + p.k_slice / kBK) - first;
  }

  if (gemm_ln) {
    // Row statistics: simdgroup s takes rows 8s..8s+7 of the tile, each
    // read once: every lane runs Welford's update over its strided
    // elements, then the lanes' (count, mean, M2) are merged pairwise
    // (Chan et al.) across a butterfly of simd_shuffle_xor, so every lane
    // ends with the row's mean and biased variance, in a fixed order.
    for (uint r = simd * 8; r < simd * 8 + 8; r++) {
      float mean = 0.0f;
      float rstd = 0.0f;
      if (m0 + r < p.m) {
        device const TX* row = x + ulong(m0 + r) * p.k;
        float n = 0.0f;
        float m2 = 0.0f;
        for (uint c = lane; c < p.k; c += 32) {
          const float v = float(row[c]);
          n += 1.0f;
          const float d = v - mean;
          mean += d / n;
          m2 += d * (v - mean);
        }
        for (ushort off = 16; off > 0; off /= 2) {
          const float nb = simd_shuffle_xor(n, off);
          const float meanb = simd_shuffle_xor(mean, off);
          const float m2b = simd_shuffle_xor(m2, off);
          const float nab = n + nb;
          if (nab > 0.0f) {
            const float delta = meanb - mean;
            mean += delta * (nb / nab);
            m2 += m2b + delta * delta * (n * nb / nab);
          }
          n = nab;
        }
        rstd = 1.0f / sqrt(m2 / float(p.k) + p.eps);
      }
      if (lane == 0) {
        stats[2 * r] = mean;
        stats[2 * r + 1] = rstd;
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }

  float4 xr[kXChunks];
  TW4 wr[kWChunks];
  simdgroup_float8x8 acc[4][2];
  for (uint i = 0; i < 4; i++) {
    for (uint j = 0; j < 2; j++) {
      acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    }
  }
  // This lane's coordinates inside an 8×8 fragment.
  const uint qid = lane / 4;
  const uint fm = (qid & 4) + (lane / 2) % 4;
  const uint fn = (qid & 2) * 2 + (lane % 2) * 2;

  gemm_load<TX, TX4, TW, TW4>(x, w, ln_w, ln_b, p, stats, m0, gx, tid, first * kBK, xr, wr);
  gemm_stage<TW, TW4>(xs, ws, tid, xr, wr);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint t = 0; t < blocks; t++) {
    const bool more = t + 1 < blocks;
    if (more) {
      // In flight while this block is multiplied.
      gemm_load<TX, TX4, TW, TW4>(x, w, ln_w, ln_b, p, stats, m0, gx, tid, (first + t + 1) * kBK, xr, wr);
    }
    threadgroup const float* xb = xs + (t % 2) * (kBM * kLdX);
    threadgroup const TW* wb = ws + (t % 2) * (kBN * kLdW);
    for (uint kk = 0; kk < kBK; kk += 8) {
      simdgroup_float8x8 a[4];
      simdgroup_float8x8 b[2];
      for (uint i = 0; i < 4; i++) {
        threadgroup const float* src = xb + (i * 8 + fm) * kLdX + kk + fn;
        a[i].thread_elements()[0] = src[0];
        a[i].thread_elements()[1] = src[1];
      }
      for (uint j = 0; j < 2; j++) {
        // B(k, n) = W(n, k): the lane's elements (fm, fn) and (fm, fn+1)
        // are W rows fn and fn+1 at k = fm, widened here.
        threadgroup const TW* src = wb + (simd * 16 + j * 8 + fn) * kLdW + kk + fm;
        b[j].thread_elements()[0] = float(src[0]);
        b[j].thread_elements()[1] = float(src[kLdW]);
      }
      for (uint i = 0; i < 4; i++) {
        for (uint j = 0; j < 2; j++) {
          simdgroup_multiply_accumulate(acc[i][j], a[i], b[j], acc[i][j]);
        }
      }
    }
    if (more) {
      gemm_stage<TW, TW4>(xs + ((t + 1) % 2) * (kBM * kLdX), ws + ((t + 1) % 2) * (kBN * kLdW), tid, xr, wr);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }

  // Epilogue straight from the accumulators.
  const ulong slice = ulong(group.z) * p.m * p.n;  // gemm_split: this slice's partial matrix
  for (uint i = 0; i < 4; i++) {
    const uint row = m0 + i * 8 + fm;
    if (row >= p.m) {
      continue;
    }
    for (uint e = 0; e < 2; e++) {
      const uint c = simd * 16 + fn + e;  // tile column of fragment 0
      if (gemm_geglu) {
        if (!w_valid(gx, c, p.n)) {
          continue;
        }
        const uint col = w_row(gx, c, p.n);  // value column j
        const uint half_n = p.n / 2;
        float v = acc[i][0].thread_elements()[e];
        float g = acc[i][1].thread_elements()[e];
        if (gemm_split) {
          partial[slice + ulong(row) * p.n + col] = v;
          partial[slice + ulong(row) * p.n + half_n + col] = g;
          continue;
        }
        if (gemm_has_bias) {
          v += bias[col];
          g += bias[half_n + col];
        }
        if (gemm_write_y) {
          y[ulong(row) * p.n + col] = v;
          y[ulong(row) * p.n + half_n + col] = g;
        }
        // As geglu_f32 on the stored Y, so fused and unfused agree bit for bit.
        gated[ulong(row) * half_n + col] = gelu(v) * g;
        continue;
      }
      for (uint j = 0; j < 2; j++) {
        const uint col = gx * kBN + c + j * 8;
        if (col >= p.n) {
          continue;
        }
        float v = acc[i][j].thread_elements()[e];
        const ulong at = ulong(row) * p.n + col;
        if (gemm_split) {
          partial[slice + at] = v;
          continue;
        }
        if (gemm_has_bias) {
          v += bias[col];
        }
        v = activate(v, gemm_act);
        if (gemm_write_y) {
          y[at] = v;
        }
        if (gemm_residual) {
          res[at] = res[at] + v;
        }
      }
    }
  }
}

// gemm_f32: float X and W.
kernel void gemm_f32(device const float* x [[buffer(0)]],
                     device const float* w [[buffer(1)]],
                     device float* y [[buffer(2), function_constant(gemm_write_y)]],
                     device const float* bias [[buffer(3), function_constant(gemm_has_bias)]],
                     constant GemmParams& p [[buffer(4)]],
                     device float* gated [[buffer(5), function_constant(gemm_geglu)]],
                     device float* res [[buffer(6), function_constant(gemm_residual)]],
                     device const float* ln_w [[buffer(7), function_constant(gemm_ln)]],
                     device const float* ln_b [[buffer(8), function_constant(gemm_ln_bias)]],
                     device float* partial [[buffer(9), function_constant(gemm_split)]],
                     uint3 group [[threadgroup_position_in_grid]],
                     uint tid [[thread_index_in_threadgroup]],
                     uint simd [[simdgroup_index_in_threadgroup]],
                     uint lane [[thread_index_in_simdgroup]]) {
  // Declared as vectors: gemm_stage stores whole 4-vectors into them,
  // which need the vector's alignment; a scalar array promises only the
  // scalar's.
  threadgroup float4 xs[2 * kBM * kLdX / 4];
  threadgroup float4 ws[2 * kBN * kLdW / 4];
  threadgroup float stats[2 * kBM];
  gemm_tile<float, float4, float, float4>(x, w, y, bias, gated, res, ln_w, ln_b, partial, p, (threadgroup float*)xs,
                                  (threadgroup float*)ws, stats, group, tid, simd, lane);
}

// gemm_f16: half X and W, fp32 accumulation and Y.
kernel void gemm_f16(device const half* x [[buffer(0)]],
                     device const half* w [[buffer(1)]],
                     device float* y [[buffer(2), function_constant(gemm_write_y)]],
                     device const float* bias [[buffer(3), function_constant(gemm_has_bias)]],
                     constant GemmParams& p [[buffer(4)]],
                     device float* gated [[buffer(5), function_constant(gemm_geglu)]],
                     device float* res [[buffer(6), function_constant(gemm_residual)]],
                     device const float* ln_w [[buffer(7), function_constant(gemm_ln)]],
                     device const float* ln_b [[buffer(8), function_constant(gemm_ln_bias)]],
                     device float* partial [[buffer(9), function_constant(gemm_split)]],
                     uint3 group [[threadgroup_position_in_grid]],
                     uint tid [[thread_index_in_threadgroup]],
                     uint simd [[simdgroup_index_in_threadgroup]],
                     uint lane [[thread_index_in_simdgroup]]) {
  // Declared as vectors: gemm_stage stores whole 4-vectors into them,
  // which need the vector's alignment; a scalar array promises only the
  // scalar's.
  threadgroup float4 xs[2 * kBM * kLdX / 4];
  threadgroup half4 ws[2 * kBN * kLdW / 4];
  threadgroup float stats[2 * kBM];
  gemm_tile<half, half4, half, half4>(x, w, y, bias, gated, res, ln_w, ln_b, partial, p, (threadgroup float*)xs,
                                  (threadgroup half*)ws, stats, group, tid, simd, lane);
}

// gemm_f32_f16w: float X against half W (a linear layer's fp16 weights as
// stored, kept half in threadgroup memory).
kernel void gemm_f32_f16w(device const float* x [[buffer(0)]],
                     device const half* w [[buffer(1)]],
                     device float* y [[buffer(2), function_constant(gemm_write_y)]],
                     device const float* bias [[buffer(3), function_constant(gemm_has_bias)]],
                     constant GemmParams& p [[buffer(4)]],
                     device float* gated [[buffer(5), function_constant(gemm_geglu)]],
                     device float* res [[buffer(6), function_constant(gemm_residual)]],
                     device const float* ln_w [[buffer(7), function_constant(gemm_ln)]],
                     device const float* ln_b [[buffer(8), function_constant(gemm_ln_bias)]],
                     device float* partial [[buffer(9), function_constant(gemm_split)]],
                     uint3 group [[threadgroup_position_in_grid]],
                     uint tid [[thread_index_in_threadgroup]],
                     uint simd [[simdgroup_index_in_threadgroup]],
                     uint lane [[thread_index_in_simdgroup]]) {
  // Declared as vectors: gemm_stage stores whole 4-vectors into them,
  // which need the vector's alignment; a scalar array promises only the
  // scalar's.
  threadgroup float4 xs[2 * kBM * kLdX / 4];
  threadgroup half4 ws[2 * kBN * kLdW / 4];
  threadgroup float stats[2 * kBM];
  gemm_tile<float, float4, half, half4>(x, w, y, bias, gated, res, ln_w, ln_b, partial, p, (threadgroup float*)xs,
                                  (threadgroup half*)ws, stats, group, tid, simd, lane);
}

// GEMV-style kernels for M ≤ 8 rows (the scorer on the marker rows, the act
// head on the [CLS] rows; after llama.cpp mul_mv_ext, which takes 2–8 rows):
// a 32×64 tile would leave most of its MMA work on padding and launch only
// N/64 threadgroups. Here a threadgroup of 4 simdgroups computes 8 columns
// of Y, 2 per simdgroup: the lanes stride K with 4-element vector loads of
// the W row (read once from memory) and of every X row (a few KB, cached),
// accumulate one fp32 sum per row, and simd_sum reduces them. Same
// GemmParams and epilogue constants as the tile kernels (bias, activation,
// residual, Y stored or not); no LayerNorm prologue or GeGLU. Grid:
// ceil(N/8) threadgroups of 128 threads.
constant uint kGemvRows = 8;
constant uint kGemvCols = 8;

template <typename TX, typename TX4, typename TW, typename TW4>
void gemv_rows(device const TX* x, device const TW* w, device float* y, device const float* bias, device float* res,
               constant GemmParams& p, uint group, uint simd, uint lane) {
  for (uint c = 0; c < 2; c++) {
    const uint col = group * kGemvCols + simd * 2 + c;
    if (col >= p.n) {
      continue;  // the same for every lane of the simdgroup
    }
    device const TW* wrow = w + ulong(col) * p.k;
    float acc[kGemvRows];
    for (uint m = 0; m < kGemvRows; m++) {
      acc[m] = 0.0f;
    }
    if (gemm_vec) {
      for (uint k = lane * 4; k < p.k; k += 128) {
        const float4 wv = float4(*(device const TW4*)(wrow + k));
        for (uint m = 0; m < kGemvRows; m++) {
          if (m < p.m) {
            acc[m] += dot(wv, float4(*(device const TX4*)(x + ulong(m) * p.k + k)));
          }
        }
      }
    } else {
      for (uint k = lane; k < p.k; k += 32) {
        const float wv = float(wrow[k]);
        for (uint m = 0; m < kGemvRows; m++) {
          if (m < p.m) {
            acc[m] += wv * float(x[ulong(m) * p.k + k]);
          }
        }
      }
    }
    for (uint m = 0; m < kGemvRows; m++) {
      if (m >= p.m) {
        break;
      }
      float v = simd_sum(acc[m]);
      if (lane == 0) {
        if (gemm_has_bias) {
          v += bias[col];
        }
        v = activate(v, gemm_act);
        const ulong at = ulong(m) * p.n + col;
        if (gemm_write_y) {
          y[at] = v;
        }
        if (gemm_residual) {
          res[at] = res[at] + v;
        }
      }
    }
  }
}

// gemv_f32: float X and W.
kernel void gemv_f32(device const float* x [[buffer(0)]],
                     device const float* w [[buffer(1)]],
                     device float* y [[buffer(2), function_constant(gemm_write_y)]],
                     device const float* bias [[buffer(3), function_constant(gemm_has_bias)]],
                     constant GemmParams& p [[buffer(4)]],
                     device float* res [[buffer(6), function_constant(gemm_residual)]],
                     uint group [[threadgroup_position_in_grid]],
                     uint simd [[simdgroup_index_in_threadgroup]],
                     uint lane [[thread_index_in_simdgroup]]) {
  gemv_rows<float, float4, float, float4>(x, w, y, bias, res, p, group, simd, lane);
}

// gemv_f16: half X and W.
kernel void gemv_f16(device const half* x [[buffer(0)]],
                     device const half* w [[buffer(1)]],
                     device float* y [[buffer(2), function_constant(gemm_write_y)]],
                     device const float* bias [[buffer(3), function_constant(gemm_has_bias)]],
                     constant GemmParams& p [[buffer(4)]],
                     device float* res [[buffer(6), function_constant(gemm_residual)]],
                     uint group [[threadgroup_position_in_grid]],
                     uint simd [[simdgroup_index_in_threadgroup]],
                     uint lane [[thread_index_in_simdgroup]]) {
  gemv_rows<half, half4, half, half4>(x, w, y, bias, res, p, group, simd, lane);
}

// gemv_f32_f16w: float X against half W.
kernel void gemv_f32_f16w(device const float* x [[buffer(0)]],
                     device const half* w [[buffer(1)]],
                     device float* y [[buffer(2), function_constant(gemm_write_y)]],
                     device const float* bias [[buffer(3), function_constant(gemm_has_bias)]],
                     constant GemmParams& p [[buffer(4)]],
                     device float* res [[buffer(6), function_constant(gemm_residual)]],
                     uint group [[threadgroup_position_in_grid]],
                     uint simd [[simdgroup_index_in_threadgroup]],
                     uint lane [[thread_index_in_simdgroup]]) {
  gemv_rows<float, float4, half, half4>(x, w, y, bias, res, p, group, simd, lane);
}

struct GemmReduceParams {
  uint m;
  uint n;       // columns of Y (GeGLU: both halves)
  uint slices;  // partial matrices, each M×N
};

// gemm_reduce_f32 finishes a split-K GEMM (gemm_split): every thread takes
// one output element, sums its slices in the fixed order 0, 1, …, S−1 —
// the same order on every run, whatever order the slices ran in — and
// applies the epilogue the unsplit GEMM would have applied in registers:
// bias, activation, Y, residual add, or GeGLU (element j of the value half
// with element N/2 + j of the gate half). Grid: ceil(M·N/256) threadgroups
// of 256, or M·N/2 elements with gemm_geglu.
kernel void gemm_reduce_f32(device const float* partial [[buffer(0)]],
                            device float* y [[buffer(1), function_constant(gemm_write_y)]],
                            device const float* bias [[buffer(2), function_constant(gemm_has_bias)]],
                            constant GemmReduceParams& p [[buffer(3)]],
                            device float* gated [[buffer(4), function_constant(gemm_geglu)]],
                            device float* res [[buffer(5), function_constant(gemm_residual)]],
                            uint i [[thread_position_in_grid]]) {
  const uint cols = gemm_geglu ? p.n / 2 : p.n;
  if (i >= p.m * cols) {
    return;
  }
  const uint row = i / cols;
  const uint col = i % cols;
  const ulong at = ulong(row) * p.n + col;
  const ulong stride = ulong(p.m) * p.n;
  float v = partial[at];
  for (uint z = 1; z < p.slices; z++) {
    v += partial[z * stride + at];
  }
  if (gemm_geglu) {
    const uint half_n = p.n / 2;
    float g = partial[at + half_n];
    for (uint z = 1; z < p.slices; z++) {
      g += partial[z * stride + at + half_n];
    }
    if (gemm_has_bias) {
      v += bias[col];
      g += bias[half_n + col];
    }
    if (gemm_write_y) {
      y[at] = v;
      y[at + half_n] = g;
    }
    gated[ulong(row) * half_n + col] = gelu(v) * g;
    return;
  }
  if (gemm_has_bias) {
    v += bias[col];
  }
  v = activate(v, gemm_act);
  if (gemm_write_y) {
    y[at] = v;
  }
  if (gemm_residual) {
    res[at] = res[at] + v;
  }
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
