// Package heads is the part of a Laya model after the encoder: the decision
// head (a type embedding and pre-norm transformer layers), the scorer that
// turns each option's [MASK] state into one logit, the act head, and the
// calibration that turns logits into answers.
//
// The model parts are written once against backend.Stream. Sources:
// upstream Laya laya/common.py (DecisionModel) at 8ef5b2dd, PyTorch
// nn.TransformerEncoderLayer, laya-spec.md §3.2–3.4.
package heads
