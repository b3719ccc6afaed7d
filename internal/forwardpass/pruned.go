package forwardpass

import (
	"context"
	"slices"

	"github.com/laya-metal/laya/backend"
)

// Outputs are the tensors one pass leaves on its stream: the scorer's logit
// at every marker (in Batch.MarkerRows order) and the act head's logits and
// probabilities, one row per batch row.
type Outputs struct {
	Logits, ActLogits, ActProbs backend.Tensor
}

// RunPruned records the whole network on s for b with final-head pruning:
// the decision head's last layer computes only the rows the scorer and the
// act head read ([CLS] of every row, then every marker), so its output row
// b is [CLS] of batch row b and row B+i is marker i. Answers equal the
// unpruned pass's: every other row of the last layer is never read. On a
// stream with a token bucket the encoder and decision head run b.Bucketed.
func (p Parts) RunPruned(ctx context.Context, s backend.Stream, b Batch) (Outputs, error) {
	ids, layout, qtypes := b.Bucketed(backend.TokenBucket(s))
	hidden, err := p.Encoder.Forward(ctx, s, ids, layout, nil)
	if err != nil {
		return Outputs{}, err
	}
	keep := slices.Concat(b.CLSRows(), b.MarkerRows)
	kept, err := p.Decision.ForwardRows(ctx, s, hidden, qtypes, layout, keep, nil)
	if err != nil {
		return Outputs{}, err
	}
	rows := len(b.Lengths)
	cls := make([]int32, rows)
	for i := range cls {
		cls[i] = int32(i)
	}
	markers := make([]int32, len(b.MarkerRows))
	for i := range markers {
		markers[i] = int32(rows + i)
	}
	logits := p.Scorer.Forward(s, kept, markers, nil)
	actLogits, actProbs := p.Act.ForwardRows(s, kept, cls, logits, b.Counts)
	return Outputs{Logits: logits, ActLogits: actLogits, ActProbs: actProbs}, nil
}

// RunObserved records the whole network on s for b without pruning, so
// that obs (which may be nil) sees every stage: the encoder's, the decision
// head's prefixed "head " (every row of every layer), then ("markers", 0,
// states), the scorer's input. Its outputs are RunPruned's.
func (p Parts) RunObserved(ctx context.Context, s backend.Stream, b Batch, obs backend.Observer) (Outputs, error) {
	var headObs backend.Observer
	if obs != nil {
		headObs = func(s backend.Stream, stage string, i int, t backend.Tensor) { obs(s, "head "+stage, i, t) }
	}
	hidden, err := p.Encoder.Forward(ctx, s, b.IDs, b.Layout, obs)
	if err != nil {
		return Outputs{}, err
	}
	hidden, err = p.Decision.Forward(ctx, s, hidden, b.QTypes, b.Layout, headObs)
	if err != nil {
		return Outputs{}, err
	}
	var markers backend.Tensor
	logits := p.Scorer.Forward(s, hidden, b.MarkerRows, &markers)
	if obs != nil {
		obs(s, "markers", 0, markers)
	}
	actLogits, actProbs := p.Act.ForwardRows(s, hidden, b.CLSRows(), logits, b.Counts)
	return Outputs{Logits: logits, ActLogits: actLogits, ActProbs: actProbs}, nil
}

// RunRows runs rows as one right-padded batch (upstream's collate_items)
// through RunObserved on a stream of its own and reads back each row's
// scorer logits (one per marker) and act probabilities: what the backends'
// whole-model tests hold to upstream's goldens, written once for all of
// them.
func (p Parts) RunRows(ctx context.Context, be backend.Backend, rows []Row, pad int32, obs backend.Observer) (logits, actProbs [][]float32, err error) {
	s := be.NewStream()
	defer s.Close()
	b := Pad(rows, pad)
	out, err := p.RunObserved(ctx, s, b, obs)
	if err != nil {
		return nil, nil, err
	}
	return readRows(ctx, s, b, out)
}

// RunRowsPruned is RunRows the way the library runs a batch: laid out for
// the stream (packed where it takes packed rows, filled up to its token
// bucket) through RunPruned.
func (p Parts) RunRowsPruned(ctx context.Context, be backend.Backend, rows []Row, pad int32) (logits, actProbs [][]float32, err error) {
	s := be.NewStream()
	defer s.Close()
	b := Layout(s, rows, pad)
	out, err := p.RunPruned(ctx, s, b)
	if err != nil {
		return nil, nil, err
	}
	return readRows(ctx, s, b, out)
}

// readRows reads back each row of b's scorer logits and act probabilities.
func readRows(ctx context.Context, s backend.Stream, b Batch, out Outputs) (logits, actProbs [][]float32, err error) {
	z := make([]float32, len(b.MarkerRows))
	nAct := out.ActProbs.Cols()
	rows := len(b.Lengths)
	probs := make([]float32, rows*nAct)
	if err := s.Read(ctx, out.Logits, z); err != nil {
		return nil, nil, err
	}
	if err := s.Read(ctx, out.ActProbs, probs); err != nil {
		return nil, nil, err
	}
	for i := range rows {
		logits = append(logits, z[:b.Counts[i]])
		z = z[b.Counts[i]:]
		actProbs = append(actProbs, probs[i*nAct:(i+1)*nAct])
	}
	return logits, actProbs, nil
}
