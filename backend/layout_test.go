package backend_test

import (
	"slices"
	"testing"

	"github.com/laya-metal/laya/backend"
)

// TestLayout holds Rows and Starts to hand-counted batches: padded rows
// start at multiples of SeqLen, packed rows where the previous one ends.
func TestLayout(t *testing.T) {
	cases := []struct {
		name   string
		l      backend.Layout
		rows   int
		starts []int
	}{
		{"padded", backend.Layout{Lengths: []int{3, 5, 1}, SeqLen: 5}, 15, []int{0, 5, 10}},
		{"packed", backend.Layout{Lengths: []int{3, 5, 1}, SeqLen: 5, Packed: true}, 9, []int{0, 3, 8}},
		{"empty", backend.Layout{SeqLen: 4}, 0, []int{}},
	}
	for _, c := range cases {
		if got := c.l.Rows(); got != c.rows {
			t.Errorf("%s: Rows() = %d, want %d", c.name, got, c.rows)
		}
		if got := c.l.Starts(); !slices.Equal(got, c.starts) {
			t.Errorf("%s: Starts() = %v, want %v", c.name, got, c.starts)
		}
	}
}
