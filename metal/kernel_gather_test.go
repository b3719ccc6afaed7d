//go:build linux || darwin

package metal

import (
	"fmt"
	"testing"
)

func TestGatherRowsEmu(t *testing.T) {
	for _, s := range Schedules {
		d := openEmu(t, EmulatorOptions{Schedule: s}, "kernels")
		k := NewKernels(d)
		for _, c := range []struct {
			elem            Elem
			tableRows, cols int
			index           []int
		}{
			{ElemF32, 1, 1, []int{0, 0, 0}},
			{ElemF32, 10, 33, []int{9, 0, 3, 3}},
			{ElemF16, 50, 64, []int{49, 1, 7}},
			{ElemF16, 7, 300, []int{6, 5, 4, 3, 2, 1, 0}},
		} {
			name := fmt.Sprintf("%s %+v", s, c)
			table := pseudo(c.tableRows*c.cols, uint64(c.cols), -3, 3)
			var bt Buffer
			if c.elem == ElemF16 {
				bt = f16Buffer(t, d, table)
				for i := range table {
					table[i] = halfAt(bt, i) // the reference sees the stored halves
				}
			} else {
				bt = f32Buffer(t, d, table)
			}
			index := make([]uint32, len(c.index))
			for i, r := range c.index {
				index[i] = uint32(r)
			}
			bi, bout := u32Buffer(t, d, c.index), f32Buffer(t, d, make([]float32, len(index)*c.cols))
			if err := run(t, d, func(cb CommandBuffer) error {
				return GatherRows(cb, k, c.elem, bt, bi, bout, len(index), c.cols, c.tableRows)
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
