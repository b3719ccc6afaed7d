// Package forwardpass holds the pieces of Laya's forward pass that the
// library (root forward.go), the parity command (scripts/goldens/parity) and the
// backend tests held to upstream's goldens (backend/gpu) share: the four
// parts of the network built from one checkpoint on one backend, and the
// batch layout (right-padded as upstream's collate_items, or packed), and
// the pipeline that records them: pruned (RunPruned) or, for an observer,
// unpruned (RunObserved).
package forwardpass

import (
	"errors"
	"slices"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/encoder"
	"github.com/laya-metal/laya/heads"
	"github.com/laya-metal/laya/weights"
)

// Parts are the network's parts, in the order of the model diagram:
// ModernBERT encoder, decision head, scorer at each [MASK], act head.
type Parts struct {
	Encoder  *encoder.ModernBERT
	Decision *heads.Decision
	Scorer   *heads.Scorer
	Act      *heads.ActHead
}

// NewParts builds every part of ckpt on be. It tries all four, so the
// error joins what each part found wrong with the checkpoint.
func NewParts(be backend.Backend, ckpt *weights.Checkpoint) (Parts, error) {
	var p Parts
	var errs [4]error
	p.Encoder, errs[0] = encoder.New(be, ckpt)
	p.Decision, errs[1] = heads.NewDecision(be, ckpt)
	p.Scorer, errs[2] = heads.NewScorer(be, ckpt)
	p.Act, errs[3] = heads.NewActHead(be, ckpt)
	if err := errors.Join(errs[:]...); err != nil {
		return Parts{}, err
	}
	return p, nil
}

// Row is what the batch layout reads of one question row: its unpadded
// token ids ([CLS] … [SEP]), the position of each option's [MASK] and its
// question type.
type Row struct {
	IDs     []int
	Markers []int
	QType   heads.QType
}

// Batch is rows laid out as one batch: right-padded (upstream's
// collate_items), row b at positions [b·SeqLen, (b+1)·SeqLen) of IDs; or,
// Packed, back to back without padding (backend/packed.go).
type Batch struct {
	IDs []int32 // Rows() ids: right-padded with the pad id, or packed
	backend.Layout
	QTypes []heads.QType
	Counts []int // each row's markers (options)
	// MarkerRows is the flat position of every marker, row by row (its
	// row's start plus its position): the rows the scorer reads.
	MarkerRows []int32
	// PadID is the pad token (Layout's pad), what Bucketed fills with.
	PadID int32
}

// Bucketed is what the encoder and the decision head run for b on a stream
// with a token bucket (backend.TokenBucket): a packed batch whose token
// count is not a multiple of bucket gets one more row, of pad ids, filling
// it up, so that the stream sees one shape for a bucket of token counts.
// Attention never crosses rows and every other op is row-wise, so the fill
// row changes nothing of the others; it is last, so every position of b's
// rows is unchanged (CLSRows, MarkerRows and Counts stay b's). Otherwise it
// is b's own ids, layout and question types.
func (b Batch) Bucketed(bucket int) ([]int32, backend.Layout, []heads.QType) {
	rows := len(b.IDs)
	if !b.Packed || bucket <= 1 {
		return b.IDs, b.Layout, b.QTypes
	}
	fill := (rows+bucket-1)/bucket*bucket - rows
	if fill == 0 {
		return b.IDs, b.Layout, b.QTypes
	}
	ids := make([]int32, rows+fill)
	copy(ids, b.IDs)
	for i := rows; i < len(ids); i++ {
		ids[i] = b.PadID
	}
	l := backend.Layout{Lengths: append(slices.Clone(b.Lengths), fill), SeqLen: max(b.SeqLen, fill), Packed: true}
	// The fill row's type is any valid one: nothing reads its outputs.
	return ids, l, append(slices.Clone(b.QTypes), 0)
}

// Pad lays rows out as one right-padded batch, filling the padding with pad.
func Pad(rows []Row, pad int32) Batch {
	seqLen := 0
	for _, r := range rows {
		seqLen = max(seqLen, len(r.IDs))
	}
	return lay(rows, pad, false, seqLen)
}

// Pack lays rows out back to back without padding: row b starts where row
// b−1 ends; pad is what Bucketed fills with. Only streams that report
// backend.PacksRows run it; the answers are the padded batch's (every op but
// attention and RoPE is row-wise).
func Pack(rows []Row, pad int32) Batch {
	seqLen := 0
	for _, r := range rows {
		seqLen = max(seqLen, len(r.IDs))
	}
	return lay(rows, pad, true, seqLen)
}

// Layout is Pack's batch where s takes packed batches, else Pad's.
func Layout(s backend.Stream, rows []Row, pad int32) Batch {
	if backend.PacksRows(s) {
		return Pack(rows, pad)
	}
	return Pad(rows, pad)
}

// lay is Pad (packed false) or Pack: each row's ids at its start, padding
// up to seqLen when not packed.
func lay(rows []Row, pad int32, packed bool, seqLen int) Batch {
	b := Batch{
		PadID:  pad,
		Layout: backend.Layout{Lengths: make([]int, len(rows)), SeqLen: seqLen, Packed: packed},
		QTypes: make([]heads.QType, len(rows)),
		Counts: make([]int, len(rows)),
	}
	for i, r := range rows {
		b.Lengths[i], b.QTypes[i], b.Counts[i] = len(r.IDs), r.QType, len(r.Markers)
	}
	b.IDs = make([]int32, b.Rows())
	for i, start := range b.Starts() {
		line := b.IDs[start : start+b.Lengths[i]]
		if !packed {
			line = b.IDs[start : start+seqLen]
			for j := range line {
				line[j] = pad
			}
		}
		for j, id := range rows[i].IDs {
			line[j] = int32(id)
		}
		for _, p := range rows[i].Markers {
			b.MarkerRows = append(b.MarkerRows, int32(start+p))
		}
	}
	return b
}

// CLSRows is the flat position of each row's [CLS] (its first token).
func (b Batch) CLSRows() []int32 {
	starts := b.Starts()
	cls := make([]int32, len(starts))
	for i, at := range starts {
		cls[i] = int32(at)
	}
	return cls
}
