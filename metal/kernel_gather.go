package metal

import "fmt"

// Elem is the element type of a table in device memory.
type Elem int

const (
	ElemF32 Elem = iota // float32
	ElemF16             // IEEE half, widened to float32 when read
)

// GatherRows encodes out[i, :] = table[index[i], :] for rows output rows of
// cols values (kernels/gather.metal, gather_rows_f32 or gather_rows_f16):
// index holds rows uint32 values, each below tableRows (the kernel trusts
// them); out is float32.
func GatherRows(cb CommandBuffer, k *Kernels, elem Elem, table, index, out Buffer, rows, cols, tableRows int) error {
	name, size := "gather_rows_f32", 4
	switch elem {
	case ElemF32:
	case ElemF16:
		name, size = "gather_rows_f16", 2
	default:
		return fmt.Errorf("%w: gather: unknown element type %d", ErrInvalidDispatch, elem)
	}
	if rows <= 0 || cols <= 0 || tableRows <= 0 || rows*cols > 1<<31 || tableRows*cols > 1<<31 {
		return fmt.Errorf("%w: %s: %d rows of %d from a table of %d", ErrInvalidDispatch, name, rows, cols, tableRows)
	}
	for _, c := range []struct {
		what string
		buf  Buffer
		need int
	}{{"table", table, size * tableRows * cols}, {"index", index, 4 * rows}, {"out", out, 4 * rows * cols}} {
		if err := checkLen(name, c.what, c.buf, c.need); err != nil {
			return err
		}
	}
	p, err := k.pipeline(name)
	if err != nil {
		return err
	}
	threads := min(32*ceilDiv(cols, 32), 256, p.MaxThreadsPerThreadgroup())
	return cb.Dispatch(p, Size3{ceilDiv(cols, threads), rows, 1}, Size3{threads, 1, 1},
		Arg{Index: 0, Buffer: table}, Arg{Index: 1, Buffer: index}, Arg{Index: 2, Buffer: out}, Arg{Index: 3, Bytes: u32s(cols)})
}

// gatherRowsRef is GatherRows in float64 over a widened table.
func gatherRowsRef(table []float32, index []uint32, cols int) []float64 {
	out := make([]float64, 0, len(index)*cols)
	for _, r := range index {
		for _, v := range table[int(r)*cols : int(r+1)*cols] {
			out = append(out, float64(v))
		}
	}
	return out
}
