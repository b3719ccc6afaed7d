package metal

import "fmt"

// Elem is the element type of a table in device memory.
type Elem int

const (
	ElemF32 Elem = iota // float32
	ElemF16             // IEEE half, widened to float32 when read
)

// GatherOp is one row gather (kernels/gather.metal, gather_rows_f32 or
// gather_rows_f16):
//
//	Out[i, :] = Table[Index[i], :]    Table [TableRows, Cols], Out [Rows, Cols]
//
// Index holds Rows uint32 values, each below TableRows (the kernel trusts
// them: the host checks them); Out is float32. Without an Index buffer the
// indices travel inline (setBytes) from IndexValues, at most
// MaxInlineIndices of them.
type GatherOp struct {
	Elem              Elem
	Table, Index, Out Buffer
	IndexValues       []int32
	// TableOffset is the byte offset of the table's first element in
	// Table, for an embedding table bound inside a wrapped file mapping. It
	// is bound with the buffer (Arg.Offset), so the kernel is the same; it
	// must be a multiple of the element size, as Metal requires of a device
	// pointer's offset.
	TableOffset           int
	Rows, Cols, TableRows int
}

// MaxInlineIndices is how many gather indices go inline: setBytes takes
// less than 4 KB, so 1023 four-byte indices.
const MaxInlineIndices = maxSetBytes / 4

// EncodeGather encodes op as one dispatch.
func EncodeGather(cb CommandBuffer, k *Kernels, op GatherOp) error {
	name, size := "gather_rows_f32", 4
	switch op.Elem {
	case ElemF32:
	case ElemF16:
		name, size = "gather_rows_f16", 2
	default:
		return fmt.Errorf("%w: gather: unknown element type %d", ErrInvalidDispatch, op.Elem)
	}
	rows, cols, tableRows := op.Rows, op.Cols, op.TableRows
	if rows <= 0 || cols <= 0 || tableRows <= 0 || rows*cols > 1<<31 || tableRows*cols > 1<<31 {
		return fmt.Errorf("%w: %s: %d rows of %d from a table of %d", ErrInvalidDispatch, name, rows, cols, tableRows)
	}
	if op.TableOffset < 0 || op.TableOffset%size != 0 {
		return fmt.Errorf("%w: %s: table offset %d is negative or not a multiple of the %d-byte element", ErrInvalidDispatch, name, op.TableOffset, size)
	}
	for _, c := range []struct {
		what string
		buf  Buffer
		need int
	}{{"table", op.Table, op.TableOffset + size*tableRows*cols}, {"out", op.Out, 4 * rows * cols}} {
		if err := checkLen(name, c.what, c.buf, c.need); err != nil {
			return err
		}
	}
	if op.Index != nil {
		if err := checkLen(name, "index", op.Index, 4*rows); err != nil {
			return err
		}
	} else {
		if len(op.IndexValues) != rows || rows > MaxInlineIndices {
			return fmt.Errorf("%w: %s: %d inline indices for %d rows (at most %d)", ErrInvalidDispatch, name, len(op.IndexValues), rows, MaxInlineIndices)
		}
	}
	p, err := k.pipeline(name)
	if err != nil {
		return err
	}
	threads := min(32*ceilDiv(cols, 32), 256, p.MaxThreadsPerThreadgroup())
	e := newEncoding()
	e.read(0, op.Table, op.TableOffset)
	if op.Index != nil {
		e.read(1, op.Index, 0)
	} else {
		e.i32s(1, op.IndexValues)
	}
	e.write(2, op.Out, 0)
	e.u32s(3, cols)
	return e.dispatch(cb, p, Size3{ceilDiv(cols, threads), rows, 1}, Size3{threads, 1, 1})
}

// gatherKernels models this file's kernels (DispatchCost,
// KernelThreadgroupMemory).
var gatherKernels = map[string]kernelModel{
	"gather_rows_f32": {cost: gatherCost},
	"gather_rows_f16": {cost: gatherCost},
}

// gatherCost models a row gather: each row read from the table and written.
func gatherCost(d *dispatchDesc) Cost {
	rows, cols := float64(d.groups.Y), d.u32(3)
	e := 4.0
	if d.kernel == "gather_rows_f16" {
		e = 2
	}
	b := (e+4)*rows*cols + 4*rows
	return Cost{IdealBytes: b, RequestedBytes: b}
}
