package heads

import (
	"fmt"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/weights"
)

// Scorer maps the hidden state at each option's [MASK] marker to one logit:
// LayerNorm (with bias) → Linear → exact GELU → Linear (upstream
// nn.Sequential scorer.0 … scorer.3). One scorer serves every question type.
type Scorer struct {
	dim          int
	normW, normB backend.Tensor
	hiddenW      backend.Tensor // [d, d]
	hiddenB      backend.Tensor
	outW         backend.Tensor // [1, d]
	outB         backend.Tensor // [1, 1]
}

// NewScorer uploads the scorer of ckpt to be.
func NewScorer(be backend.Backend, ckpt *weights.Checkpoint) (*Scorer, error) {
	d := ckpt.Head.Dim
	ld := backend.NewLoader(be, ckpt)
	m := &Scorer{
		dim:     d,
		normW:   ld.Vector("scorer.0.weight", d),
		normB:   ld.Vector("scorer.0.bias", d),
		hiddenW: ld.Matrix("scorer.1.weight", d, d),
		hiddenB: ld.Vector("scorer.1.bias", d),
		outW:    ld.Matrix("scorer.3.weight", 1, d),
		outB:    ld.Vector("scorer.3.bias", 1),
	}
	if err := ld.Err(); err != nil {
		return nil, fmt.Errorf("heads: scorer: %w", err)
	}
	return m, nil
}

// Forward records the scorer on the rows of hidden named by markerRows
// (batchRow·seqLen + marker position) and returns the logits [len, 1].
// markers, when not nil, receives the gathered marker states.
func (m *Scorer) Forward(s backend.Stream, hidden backend.Tensor, markerRows []int32, markers *backend.Tensor) backend.Tensor {
	n := len(markerRows)
	states := s.New(n, m.dim)
	s.Gather(states, hidden, markerRows)
	if markers != nil {
		*markers = states
	}
	normed := s.New(n, m.dim)
	s.LayerNorm(normed, states, m.normW, m.normB, headNormEps)
	inner := s.New(n, m.dim)
	s.Linear(inner, normed, m.hiddenW, m.hiddenB, backend.GELU)
	logits := s.New(n, 1)
	s.Linear(logits, inner, m.outW, m.outB, backend.Identity)
	return logits
}
