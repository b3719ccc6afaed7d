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

// BatchRows is the number of tensor rows a batch of these row lengths
// takes: len(lengths)·seqLen right-padded, Σ lengths packed.
func BatchRows(lengths []int, seqLen int, packed bool) int {
	if !packed {
		return len(lengths) * seqLen
	}
	n := 0
	for _, l := range lengths {
		n += l
	}
	return n
}
