package backend

// Discarder is implemented by streams that can skip storing a value nobody
// reads. A backend that fuses operations (the Metal backend folds a
// LayerNorm into the next Linear, a residual Add into the Linear before it,
// a GeGLU into the Linear that feeds it, RoPE into the attention) would
// otherwise have to keep writing every intermediate tensor, because a later
// operation or Read might look at it.
//
// Discard(t) promises that the current contents of the tensor will not
// be read again before an operation overwrites all of it: reading a
// discarded tensor before that gives unspecified values (its old contents,
// or the value it would have had). Discarding a tensor no pending operation
// writes has no effect. It is only a hint: a backend is free to ignore it.
//
// It takes one tensor per call, not a variadic list: the arguments of an
// interface method escape, so a list would be allocated on every call of a
// hot loop (an encoder layer discards five scratch tensors).
type Discarder interface {
	Discard(t Tensor)
}

// Discard tells s that ts are dead (see Discarder); a no-op for streams
// that do not implement Discarder.
func Discard(s Stream, ts ...Tensor) {
	if d, ok := s.(Discarder); ok {
		for _, t := range ts {
			d.Discard(t)
		}
	}
}

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
