//go:build linux || darwin

package metal_test

import (
	"fmt"
	"testing"

	. "github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/emu"
)

func TestGatherRowsEmu(t *testing.T) {
	for _, s := range emu.Schedules {
		d := openEmu(t, emu.Options{Schedule: s}, "kernels")
		k := NewKernels(d)
		for _, c := range []struct {
			elem            Elem
			tableRows, cols int
			index           []int
			pad             int // elements before the table in its buffer, bound by TableOffset
		}{
			{ElemF32, 1, 1, []int{0, 0, 0}, 0},
			{ElemF32, 10, 33, []int{9, 0, 3, 3}, 0},
			{ElemF32, 10, 33, []int{9, 0, 3, 3}, 5},
			{ElemF16, 50, 64, []int{49, 1, 7}, 0},
			{ElemF16, 50, 64, []int{49, 1, 7, 0}, 3},
			{ElemF16, 7, 300, []int{6, 5, 4, 3, 2, 1, 0}, 1},
		} {
			name := fmt.Sprintf("%s %+v", s, c)
			// The padding is a value no table element has, so that a
			// kernel reading at the wrong offset shows.
			stored := append(pseudo(c.pad, 1, 9, 9), pseudo(c.tableRows*c.cols, uint64(c.cols), -3, 3)...)
			table := make([]float32, c.tableRows*c.cols)
			var bt Buffer
			size := 4
			if c.elem == ElemF16 {
				bt, size = f16Buffer(t, d, stored), 2
				for i := range table {
					table[i] = halfAt(bt, c.pad+i) // the reference sees the stored halves
				}
			} else {
				bt = f32Buffer(t, d, stored)
				copy(table, stored[c.pad:])
			}
			index := make([]uint32, len(c.index))
			for i, r := range c.index {
				index[i] = uint32(r)
			}
			bi, bout := u32Buffer(t, d, c.index), f32Buffer(t, d, make([]float32, len(index)*c.cols))
			op := GatherOp{Elem: c.elem, Table: bt, TableOffset: size * c.pad, Index: bi, Out: bout,
				Rows: len(index), Cols: c.cols, TableRows: c.tableRows}
			if err := run(t, d, func(cb CommandBuffer) error {
				if c.pad == 0 {
					return GatherRows(cb, k, c.elem, bt, bi, bout, len(index), c.cols, c.tableRows)
				}
				return EncodeGather(cb, k, op)
			}); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			// A copy (and an exact widening): bit for bit.
			want := gatherRowsRef(table, index, c.cols)
			for i, v := range readF32(bout, len(index)*c.cols) {
				if float64(v) != want[i] {
					t.Fatalf("%s: element %d = %v, want %v", name, i, v, want[i])
				}
			}
		}
	}
}

func TestEncodeGatherRejects(t *testing.T) {
	d := openEmu(t, emu.Options{}, "kernels")
	k := NewKernels(d)
	buf := f32Buffer(t, d, make([]float32, 64))
	base := GatherOp{Elem: ElemF16, Table: buf, Index: buf, Out: buf, Rows: 2, Cols: 4, TableRows: 8}
	cases := []struct {
		name string
		edit func(op *GatherOp)
	}{
		{"unknown element", func(op *GatherOp) { op.Elem = ElemF16 + 1 }},
		{"misaligned f16 table offset", func(op *GatherOp) { op.TableOffset = 1 }},
		{"misaligned f32 table offset", func(op *GatherOp) { op.Elem, op.TableOffset = ElemF32, 2 }},
		{"negative table offset", func(op *GatherOp) { op.TableOffset = -2 }},
		{"table past its buffer", func(op *GatherOp) { op.TableOffset = 4*64 - 2*8*4 + 2 }},
		{"nil table", func(op *GatherOp) { op.Table = nil }},
	}
	for _, c := range cases {
		op := base
		c.edit(&op)
		wantInvalidDispatch(t, d, c.name, func(cb CommandBuffer) error { return EncodeGather(cb, k, op) })
	}
	// The largest offset that still fits is accepted.
	op := base
	op.TableOffset = 4*64 - 2*8*4
	if err := run(t, d, func(cb CommandBuffer) error { return EncodeGather(cb, k, op) }); err != nil {
		t.Errorf("table ending at its buffer's end: %v", err)
	}
}
