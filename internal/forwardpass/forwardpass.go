// Package forwardpass holds the pieces of Laya's forward pass that the
// library (root forward.go), the parity command (scripts/goldens/parity) and the
// backend tests held to upstream's goldens (backend/gpu) share: the four
// parts of the network built from one checkpoint on one backend, and the
// right-padded batch layout of upstream's collate_items. Each caller keeps
// its own pipeline (pruned or not, observed or not); only what is the same
// in all of them lives here.
package forwardpass

import (
	"errors"

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
	QType   int
}

// Batch is rows laid out as one right-padded batch (upstream's
// collate_items): row b holds positions [b·SeqLen, (b+1)·SeqLen) of IDs; or,
// Packed, back to back without padding (backend/packed.go).
type Batch struct {
	IDs     []int32 // len(rows)·SeqLen, right-padded with the pad id; packed: Σ lengths
	SeqLen  int     // the longest row
	Packed  bool
	Lengths []int // each row's real tokens
	QTypes  []int
	Counts  []int // each row's markers (options)
	// MarkerRows is the flat position b·SeqLen+p of every marker, row by
	// row: the rows the scorer reads.
	MarkerRows []int32
}

// Pad lays rows out as one right-padded batch, filling the padding with pad.
func Pad(rows []Row, pad int32) Batch {
	b := Batch{
		Lengths: make([]int, len(rows)),
		QTypes:  make([]int, len(rows)),
		Counts:  make([]int, len(rows)),
	}
	for _, r := range rows {
		b.SeqLen = max(b.SeqLen, len(r.IDs))
	}
	b.IDs = make([]int32, len(rows)*b.SeqLen)
	for i, r := range rows {
		line := b.IDs[i*b.SeqLen : (i+1)*b.SeqLen]
		for j := range line {
			line[j] = pad
		}
		for j, id := range r.IDs {
			line[j] = int32(id)
		}
		b.Lengths[i], b.QTypes[i], b.Counts[i] = len(r.IDs), r.QType, len(r.Markers)
		for _, p := range r.Markers {
			b.MarkerRows = append(b.MarkerRows, int32(i*b.SeqLen+p))
		}
	}
	return b
}

// Pack lays rows out back to back without padding: row b starts where row
// b−1 ends. Only streams that report backend.PacksRows run it; the answers
// are the padded batch's (every op but attention and RoPE is row-wise).
func Pack(rows []Row) Batch {
	b := Batch{
		Packed:  true,
		Lengths: make([]int, len(rows)),
		QTypes:  make([]int, len(rows)),
		Counts:  make([]int, len(rows)),
	}
	for i, r := range rows {
		start := int32(len(b.IDs))
		b.SeqLen = max(b.SeqLen, len(r.IDs))
		for _, id := range r.IDs {
			b.IDs = append(b.IDs, int32(id))
		}
		b.Lengths[i], b.QTypes[i], b.Counts[i] = len(r.IDs), r.QType, len(r.Markers)
		for _, p := range r.Markers {
			b.MarkerRows = append(b.MarkerRows, start+int32(p))
		}
	}
	return b
}

// Layout is Pack's batch where s takes packed batches, else Pad's.
func Layout(s backend.Stream, rows []Row, pad int32) Batch {
	if backend.PacksRows(s) {
		return Pack(rows)
	}
	return Pad(rows, pad)
}

// CLSRows is the flat position of each row's [CLS] (its first token).
func (b Batch) CLSRows() []int32 {
	cls := make([]int32, len(b.Lengths))
	at := 0
	for i, n := range b.Lengths {
		cls[i] = int32(at)
		if b.Packed {
			at += n
		} else {
			at += b.SeqLen
		}
	}
	return cls
}

// EncoderBatch is the batch as the encoder takes it.
func (b Batch) EncoderBatch() encoder.Batch {
	return encoder.Batch{IDs: b.IDs, Lengths: b.Lengths, SeqLen: b.SeqLen, Packed: b.Packed}
}

// HeadLayout is the batch's layout as the decision head takes it.
func (b Batch) HeadLayout() heads.Layout {
	return heads.Layout{Lengths: b.Lengths, SeqLen: b.SeqLen, Packed: b.Packed}
}
