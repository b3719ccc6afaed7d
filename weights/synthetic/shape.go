package synthetic

import "github.com/laya-metal/laya/weights"

// ShapeCheckpoint returns the spec's checkpoint with every tensor zero and
// nothing written but a sparse temporary file (weights.ShapeCheckpoint):
// the real configurations for work plans that count a forward pass's
// operations (laya-bench --plan). Close it when done.
func (s Spec) ShapeCheckpoint() (*weights.Checkpoint, error) {
	v := s
	if v.TokenizerDir == "" {
		v.TokenizerDir = "-" // no tokenizer is attached: nothing is copied
	}
	if err := v.validate(); err != nil {
		return nil, err
	}
	enc, _ := s.configs()
	agent := weights.AgentConfig{EncoderID: s.Name, HeadLayers: s.HeadLayers, MaxLen: s.MaxLen, HeadMaxLen: s.HeadMaxLen,
		ActCosts: s.actCosts(), NAct: len(s.actCosts()) + 1}
	return weights.ShapeCheckpoint(enc, agent, s.dtype())
}
