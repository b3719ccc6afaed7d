package backend

// A packed batch lays its rows back to back without padding: batch row b
// holds tensor rows [Σ_{c<b} Lengths[c], Σ_{c≤b} Lengths[c]). Every op but
// Rope and Attention is row-wise and cannot tell the layouts apart; those
// two take RopeParams.Packed / AttentionParams.Packed. A batch of questions
// of uneven lengths then costs its real tokens, not rows × the longest
// (ModernBERT's own "unpadding"; upstream's collate_items pads).

// RowPacker is implemented by streams whose Rope and Attention take packed
// batches. It is optional: a model runs right-padded batches on streams
// without it.
type RowPacker interface {
	// PacksRows reports whether Rope and Attention accept Packed params.
	PacksRows() bool
}

// PacksRows reports whether s takes packed batches.
func PacksRows(s Stream) bool {
	p, ok := s.(RowPacker)
	return ok && p.PacksRows()
}

// TokenBucketer is implemented by streams that run packed batches faster
// when their token count is a multiple of TokenBucket() (a GPU backend that
// replays one recorded graph per shape: a bucket of token counts then
// shares one graph instead of each count capturing its own). It is
// optional; a model pads a packed batch up to the bucket with a row of pad
// tokens of its own, whose outputs nothing reads.
type TokenBucketer interface {
	TokenBucket() int
}

// TokenBucket is s's token bucket, 1 (none) for a stream without one.
func TokenBucket(s Stream) int {
	if b, ok := s.(TokenBucketer); ok {
		return max(b.TokenBucket(), 1)
	}
	return 1
}

// Layout says where a batch's rows lie in a tensor's rows: right-padded,
// batch row b at tensor rows [b·SeqLen, (b+1)·SeqLen) with its first
// Lengths[b] real, or, Packed, back to back without padding (SeqLen is then
// the longest length). It is the one description of a batch's shape, from
// the model's batch layout down to the Rope and Attention params.
type Layout struct {
	Lengths []int // real tokens of each batch row, each in [1, SeqLen]
	SeqLen  int
	Packed  bool // only for streams that report it (see PacksRows)
}

// Rows is the number of tensor rows the batch takes: len(Lengths)·SeqLen
// right-padded, Σ Lengths packed.
func (l Layout) Rows() int {
	if !l.Packed {
		return len(l.Lengths) * l.SeqLen
	}
	n := 0
	for _, k := range l.Lengths {
		n += k
	}
	return n
}

// Starts is the tensor row of each batch row's first token.
func (l Layout) Starts() []int {
	starts := make([]int, len(l.Lengths))
	at := 0
	for b, n := range l.Lengths {
		starts[b] = at
		if l.Packed {
			at += n
		} else {
			at += l.SeqLen
		}
	}
	return starts
}
