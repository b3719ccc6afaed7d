package forwardpass

import (
	"reflect"
	"testing"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/heads"
)

// TestPad holds the layout to hand-written batches of upstream's
// collate_items: right padding to the longest row, marker positions
// flattened row by row, [CLS] at the start of each row.
func TestPad(t *testing.T) {
	cases := []struct {
		name string
		rows []Row
		pad  int32
		want Batch
		cls  []int32
	}{
		{
			name: "one row",
			rows: []Row{{IDs: []int{1, 7, 2}, Markers: []int{1}, QType: 1}},
			pad:  9,
			want: Batch{IDs: []int32{1, 7, 2}, Layout: backend.Layout{SeqLen: 3, Lengths: []int{3}}, QTypes: []heads.QType{1}, Counts: []int{1}, MarkerRows: []int32{1}},
			cls:  []int32{0},
		},
		{
			name: "mixed lengths",
			rows: []Row{
				{IDs: []int{1, 5, 2}, Markers: []int{1}, QType: 0},
				{IDs: []int{1, 6, 6, 6, 2}, Markers: []int{1, 2, 3}, QType: 2},
			},
			pad: 0,
			want: Batch{
				IDs:    []int32{1, 5, 2, 0, 0, 1, 6, 6, 6, 2},
				Layout: backend.Layout{SeqLen: 5, Lengths: []int{3, 5}}, QTypes: []heads.QType{0, 2}, Counts: []int{1, 3},
				MarkerRows: []int32{1, 6, 7, 8},
			},
			cls: []int32{0, 5},
		},
		{
			name: "no rows",
			want: Batch{IDs: []int32{}, Layout: backend.Layout{Lengths: []int{}}, QTypes: []heads.QType{}, Counts: []int{}},
			cls:  []int32{},
		},
	}
	for _, c := range cases {
		got := Pad(c.rows, c.pad)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Pad = %+v, want %+v", c.name, got, c.want)
		}
		if cls := got.CLSRows(); !reflect.DeepEqual(cls, c.cls) {
			t.Errorf("%s: CLSRows = %v, want %v", c.name, cls, c.cls)
		}
	}
}
