package backend

// Observer sees intermediate tensors of a forward pass as they are recorded
// on s, for tests and debugging: the encoder shows ("embeddings", 0, x),
// ("layer", i, x) after each layer and ("final", 0, h); the decision head
// ("input", 0, h) and ("layer", j, h); the root package prefixes the head's
// stages with "head " and adds ("markers", 0, states). An observer may Read
// the tensor from s when it is shown; the model may update it in place
// afterwards. A nil Observer sees nothing.
type Observer func(s Stream, stage string, index int, t Tensor)
