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
			want: Batch{IDs: []int32{1, 7, 2}, Layout: backend.Layout{SeqLen: 3, Lengths: []int{3}}, QTypes: []heads.QType{1}, Counts: []int{1}, MarkerRows: []int32{1}, PadID: 9},
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

// Bucketed fills a packed batch up to a multiple of the bucket with one row
// of pad ids, last, and leaves everything else as it was.
func TestBucketed(t *testing.T) {
	rows := []Row{{IDs: []int{1, 5, 2}, Markers: []int{1}, QType: 2}, {IDs: []int{1, 6, 6, 6, 2}, Markers: []int{1, 2}, QType: 1}}
	packed := Pack(rows, 9)
	for _, c := range []struct {
		name    string
		b       Batch
		bucket  int
		ids     []int32
		lengths []int
		seqLen  int
		qtypes  []heads.QType
	}{
		{"fills to 16", packed, 16, []int32{1, 5, 2, 1, 6, 6, 6, 2, 9, 9, 9, 9, 9, 9, 9, 9}, []int{3, 5, 8}, 8, []heads.QType{2, 1, 0}},
		{"fills to 4", packed, 4, []int32{1, 5, 2, 1, 6, 6, 6, 2}, []int{3, 5}, 5, []heads.QType{2, 1}},
		{"fills to 3", packed, 3, []int32{1, 5, 2, 1, 6, 6, 6, 2, 9}, []int{3, 5, 1}, 5, []heads.QType{2, 1, 0}},
		{"no bucket", packed, 1, []int32{1, 5, 2, 1, 6, 6, 6, 2}, []int{3, 5}, 5, []heads.QType{2, 1}},
		{"bucket 0: none", packed, 0, []int32{1, 5, 2, 1, 6, 6, 6, 2}, []int{3, 5}, 5, []heads.QType{2, 1}},
		{"padded: never", Pad(rows, 9), 16, Pad(rows, 9).IDs, []int{3, 5}, 5, []heads.QType{2, 1}},
	} {
		ids, l, q := c.b.Bucketed(c.bucket)
		if !reflect.DeepEqual(ids, c.ids) || !reflect.DeepEqual(l.Lengths, c.lengths) || l.SeqLen != c.seqLen || l.Packed != c.b.Packed ||
			!reflect.DeepEqual(q, c.qtypes) || l.Rows() != len(ids) {
			t.Errorf("%s: Bucketed = %v, %+v, %v; want %v, lengths %v, seqLen %d, %v", c.name, ids, l, q, c.ids, c.lengths, c.seqLen, c.qtypes)
		}
	}
	// The batch itself is untouched: its rows' positions hold.
	if !reflect.DeepEqual(packed.Lengths, []int{3, 5}) || len(packed.IDs) != 8 || !reflect.DeepEqual(packed.CLSRows(), []int32{0, 3}) {
		t.Errorf("Bucketed changed its batch: %+v", packed)
	}
}
