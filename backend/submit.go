package backend

// Submitter is implemented by streams that record work and run it later
// (the cuda backend runs a segment of recorded operations when a Read needs
// its results). Submit tells such a stream that the model has reached a
// point where every tensor it made is either discarded (see Discarder) or
// still needed as a whole, like the residual stream between two encoder
// layers: the stream may start what it recorded so far on the device, without
// waiting for it, and go on recording the rest while the device runs it.
//
// It is only a hint, about where a split is cheap: a stream decides whether
// and where to start work (the cuda backend does so a few times a forward,
// so that recording the later layers overlaps the GPU running the first).
// Results are the same either way; errors surface at the next Read or Err.
type Submitter interface {
	Submit()
}

// Submit gives s the hint of Submitter; a no-op for streams that do not
// implement it.
func Submit(s Stream) {
	if t, ok := s.(Submitter); ok {
		t.Submit()
	}
}
