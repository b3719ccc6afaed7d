package metal

import "fmt"

// Rope encodes the split-half rotary embedding, in place, of the q and k
// parts of qkv [rows, 3·heads·headDim] (kernels/rope.metal, rope_f32): row r
// is at position r mod seqLen, and table is backend.RopeTable(θ, headDim, ≥ seqLen).
func Rope(cb CommandBuffer, k *Kernels, qkv, table Buffer, rows, seqLen, heads, headDim int) error {
	const name = "rope_f32"
	width := heads * headDim
	if rows <= 0 || seqLen <= 0 || heads <= 0 || headDim <= 0 || headDim%2 != 0 || rows*3*width > 1<<31 {
		return fmt.Errorf("%w: %s: %d rows, seqLen %d, %d heads of %d", ErrInvalidDispatch, name, rows, seqLen, heads, headDim)
	}
	if err := checkLen(name, "qkv", qkv, 4*rows*3*width); err != nil {
		return err
	}
	if err := checkLen(name, "table", table, 4*min(rows, seqLen)*headDim); err != nil {
		return err
	}
	p, err := k.pipeline(name)
	if err != nil {
		return err
	}
	n := rows * 2 * heads * headDim / 2
	threads := min(256, p.MaxThreadsPerThreadgroup())
	e := newEncoding()
	e.readWrite(0, qkv, 0)
	e.read(1, table, 0)
	params(e, 2, RopeParams{Rows: uint32(rows), SeqLen: uint32(seqLen), Heads2: uint32(2 * heads), HeadDim: uint32(headDim), Stride: uint32(3 * width)})
	return e.dispatch(cb, p, Size3{ceilDiv(n, threads), 1, 1}, Size3{threads, 1, 1})
}

// ropeKernels models this file's kernels (DispatchCost,
// KernelThreadgroupMemory).
var ropeKernels = map[string]kernelModel{
	"rope_f32": {cost: ropeCost},
}

// ropeCost models RoPE in place over the q and k heads.
func ropeCost(d *dispatchDesc) Cost {
	p, ok := paramsOf[RopeParams](d.arg(2))
	if !ok {
		return Cost{}
	}
	pairs := float64(p.Rows) * float64(p.Heads2) * float64(p.HeadDim) / 2
	b := 16*pairs + 4*float64(min(p.Rows, p.SeqLen)*p.HeadDim)
	return Cost{FLOPs: 6 * pairs, IdealBytes: b, RequestedBytes: b + 8*pairs}
}
