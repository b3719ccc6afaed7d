package laya

import (
	"context"
	"errors"

	"github.com/laya-metal/laya/weights"
)

// forwardRow is one question's token row as built by build_sequence.
type forwardRow struct {
	IDs     []int // unpadded, CLS ... SEP
	Markers []int // position of each option's [MASK]
	QType   int   // 0 choice, 1 score, 2 noul
}

// rowOutput is what the network says about one row.
type rowOutput struct {
	Logits    []float32 // one per marker, raw (no temperature)
	ActLogits []float32 // n_act
	ActProbs  []float32 // softmax(ActLogits)
}

type networkOptions struct {
	Backend   string // "cpu" (default)
	BatchSize int    // rows per padded batch; default 16
}

// network is ModernBERT + decision head + scorer + act head on one backend.
type network struct {
	// filled in by the forward-pass implementation
}

func newNetwork(ckpt *weights.Checkpoint, opts networkOptions) (*network, error) {
	return nil, errors.New("laya: forward pass not implemented yet")
}

// forward runs rows in padded batches of opts.BatchSize; outputs are in row order.
func (n *network) forward(ctx context.Context, rows []forwardRow) ([]rowOutput, error) {
	return nil, errors.New("laya: forward pass not implemented yet")
}
