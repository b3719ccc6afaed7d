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
