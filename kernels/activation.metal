// The act head's input features (upstream laya/common.py,
// DecisionModel.forward). The element-wise activations and GeGLU live in
// gemm.metal, next to the GEMM whose epilogue fuses them (one GELU
// definition; see the note there).
#include <metal_stdlib>
using namespace metal;

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
