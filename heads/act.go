package heads

import (
	"fmt"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/weights"
)

// numActFeatures is the number of summary features appended to h[CLS]:
// top1, top1−top2, normalised entropy, max(2, k)/255.
const numActFeatures = 4

// ActHead maps h[CLS] and a summary of the option logits to n_act logits
// (index 0 "act", then the act_costs keys in file order): Linear → exact
// GELU → Linear (upstream act_head.0 … act_head.2).
type ActHead struct {
	dim, hidden, nAct int
	inW, inB          backend.Tensor // [ActHidden, d+4]
	outW, outB        backend.Tensor // [n_act, ActHidden]
}

// NewActHead uploads the act head of ckpt to be.
func NewActHead(be backend.Backend, ckpt *weights.Checkpoint) (*ActHead, error) {
	cfg := ckpt.Head
	ld := backend.NewLoader(be, ckpt)
	m := &ActHead{
		dim:    cfg.Dim,
		hidden: cfg.ActHidden,
		nAct:   cfg.NAct,
		inW:    ld.Matrix("act_head.0.weight", cfg.ActHidden, cfg.Dim+numActFeatures),
		inB:    ld.Vector("act_head.0.bias", cfg.ActHidden),
		outW:   ld.Matrix("act_head.2.weight", cfg.NAct, cfg.ActHidden),
		outB:   ld.Vector("act_head.2.bias", cfg.NAct),
	}
	if err := ld.Err(); err != nil {
		return nil, fmt.Errorf("heads: act head: %w", err)
	}
	return m, nil
}

// ForwardRows records the act head. hidden is the decision head's output
// and the [CLS] state of batch row b is its row clsRows[b]; logits holds
// every row's real option logits, row after row, counts[b] of them for
// batch row b. It returns the act logits and their softmax, both
// [len(counts), n_act].
func (m *ActHead) ForwardRows(s backend.Stream, hidden backend.Tensor, clsRows []int32, logits backend.Tensor, counts []int) (actLogits, actProbs backend.Tensor) {
	rows := len(counts)
	cls := s.New(rows, m.dim)
	s.Gather(cls, hidden, clsRows)
	features := s.New(rows, m.dim+numActFeatures)
	s.ActFeatures(features, cls, logits, counts)
	inner := s.New(rows, m.hidden)
	s.Linear(inner, features, m.inW, m.inB, backend.GELU)
	actLogits = s.New(rows, m.nAct)
	s.Linear(actLogits, inner, m.outW, m.outB, backend.Identity)
	actProbs = s.New(rows, m.nAct)
	s.Softmax(actProbs, actLogits)
	return actLogits, actProbs
}
