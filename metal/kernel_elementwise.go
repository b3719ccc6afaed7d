package metal

import "fmt"

// VectorAdd encodes out[i] = a[i] + b[i] for n float32 elements
// (kernels/elementwise.metal, vector_add).
func VectorAdd(cb CommandBuffer, k *Kernels, a, b, out Buffer, n int) error {
	const name = "vector_add"
	if n <= 0 || n > 1<<31 {
		return fmt.Errorf("%w: %s: n = %d", ErrInvalidDispatch, name, n)
	}
	for _, c := range []struct {
		what string
		buf  Buffer
	}{{"a", a}, {"b", b}, {"out", out}} {
		if err := checkLen(name, c.what, c.buf, 4*n); err != nil {
			return err
		}
	}
	p, err := k.pipeline(name)
	if err != nil {
		return err
	}
	threads := min(256, p.MaxThreadsPerThreadgroup())
	e := newEncoding()
	e.read(0, a, 0)
	e.read(1, b, 0)
	e.write(2, out, 0)
	e.u32s(3, n)
	return e.dispatch(cb, p, Size3{ceilDiv(n, threads), 1, 1}, Size3{threads, 1, 1})
}

// elementwiseKernels models this file's kernels (DispatchCost,
// KernelThreadgroupMemory).
var elementwiseKernels = map[string]kernelModel{
	"vector_add": {cost: vectorAddCost},
}

// vectorAddCost models out = a + b.
func vectorAddCost(d *dispatchDesc) Cost {
	n := d.u32(3)
	return Cost{FLOPs: n, IdealBytes: 12 * n, RequestedBytes: 12 * n}
}
