// Activations in fp32: the element-wise ones fused-by-name into Linear
// (identity, exact-erf GELU, ReLU), GeGLU, and the act head's input
// features. Metal has no erf, so GELU carries its own (see gelu below).
#include <metal_stdlib>
using namespace metal;

// act_kind selects the activation: 0 identity, 1 GELU, 2 ReLU (the order of
// backend.Activation).
constant uint act_kind [[function_constant(0)]];

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

// act_features_f32 builds the act head's input (upstream laya/common.py,
// DecisionModel.forward; backend.Stream.ActFeatures):
//
//   out[b] = concat(cls[b], top1, top1 − top2, entropy / log(max(2, k)), max(2, k)/255)
//
// over p = softmax of row b's k real logits, logits[offsets[b] .. offsets[b+1]).
// One threadgroup per batch row: its threads copy cls, then thread 0 reduces
// the few logits serially (k is the number of options, tens at most).
kernel void act_features_f32(device const float* cls [[buffer(0)]],
                             device const float* logits [[buffer(1)]],
                             device const uint* offsets [[buffer(2)]],
                             device float* out [[buffer(3)]],
                             constant uint& dim [[buffer(4)]],
                             uint row [[threadgroup_position_in_grid]],
                             uint tid [[thread_index_in_threadgroup]],
                             uint threads [[threads_per_threadgroup]]) {
  device float* o = out + ulong(row) * (dim + 4);
  for (uint c = tid; c < dim; c += threads) {
    o[c] = cls[ulong(row) * dim + c];
  }
  if (tid != 0) {
    return;
  }
  const uint lo = offsets[row];
  const uint hi = offsets[row + 1];
  float top = -INFINITY;
  for (uint j = lo; j < hi; j++) {
    top = max(top, logits[j]);
  }
  float sum = 0.0f;
  for (uint j = lo; j < hi; j++) {
    sum += exp(logits[j] - top);
  }
  float top1 = 0.0f;
  float top2 = 0.0f;
  float entropy = 0.0f;
  for (uint j = lo; j < hi; j++) {
    const float prob = exp(logits[j] - top) / sum;
    entropy -= prob * log(max(prob, 1e-9f));
    if (prob > top1) {
      top2 = top1;
      top1 = prob;
    } else if (prob > top2) {
      top2 = prob;
    }
  }
  const float kk = float(max(2u, hi - lo));
  o[dim] = top1;
  o[dim + 1] = top1 - top2;
  o[dim + 2] = entropy / log(kk);
  o[dim + 3] = kk / 255.0f;
}
