package backend

// ActHeadStream is implemented by streams that can run the act head of a
// few questions as one operation: the chain heads.ActHead records otherwise
// (Gather of the CLS rows, ActFeatures, Linear with GELU, Linear, Softmax),
// whose kernels each wait for the one before. ActHead returns the act
// logits and their softmax [B, n_act] that chain would, for B = len(counts)
// questions whose CLS rows of hidden are clsRows, from logits holding
// Σcounts option logits and the head's weights (inW [hidden, d+4], outW
// [n_act, hidden]); ok false, having recorded nothing, where it does not
// take the shapes, the weights or the options: the caller then records the
// chain.
type ActHeadStream interface {
	ActHead(hidden Tensor, clsRows []int32, logits Tensor, counts []int, inW, inB, outW, outB Tensor) (actLogits, actProbs Tensor, ok bool)
}

// ScorerStream is implemented by streams that can run the scorer of a few
// marker rows as one operation: the chain heads.Scorer records otherwise
// (Gather of the rows, LayerNorm, Linear with GELU, Linear to one logit).
// Score returns the logits [len(markerRows), 1] that chain would, from
// hidden's rows markerRows, the LayerNorm's weight and bias (normB may be
// nil) and eps, and the two Linears' weights (hiddenW [d, d], outW [1,
// d]); ok false, having recorded nothing, where it does not take them.
type ScorerStream interface {
	Score(hidden Tensor, markerRows []int32, normW, normB Tensor, eps float32, hiddenW, hiddenB, outW, outB Tensor) (logits Tensor, ok bool)
}
