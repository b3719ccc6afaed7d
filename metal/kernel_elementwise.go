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
	return cb.Dispatch(p, Size3{ceilDiv(n, threads), 1, 1}, Size3{threads, 1, 1},
		Arg{Index: 0, Buffer: a}, Arg{Index: 1, Buffer: b}, Arg{Index: 2, Buffer: out}, Arg{Index: 3, Bytes: u32s(n)})
}
