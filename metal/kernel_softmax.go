package metal

import "fmt"

// Softmax encodes a row softmax of rows×cols float32 values, in to out
// (kernels/softmax.metal, softmax_f32): one threadgroup per row.
func Softmax(cb CommandBuffer, k *Kernels, in, out Buffer, rows, cols int) error {
	return softmaxThreads(cb, k, in, out, rows, cols, SoftmaxThreads(cols))
}

// SoftmaxThreads is the threadgroup size Softmax uses: enough 32-wide
// simdgroups to give each thread about 4 elements of the row (MLX's rule for
// its single-row softmax), at most 1024.
func SoftmaxThreads(cols int) int {
	return min(1024, 32*max(1, ceilDiv(ceilDiv(cols, 4), 32)))
}

func softmaxThreads(cb CommandBuffer, k *Kernels, in, out Buffer, rows, cols, threads int) error {
	const name = "softmax_f32"
	if rows <= 0 || cols <= 0 || rows*cols > 1<<31 {
		return fmt.Errorf("%w: %s: %d×%d", ErrInvalidDispatch, name, rows, cols)
	}
	if err := checkLen(name, "in", in, 4*rows*cols); err != nil {
		return err
	}
	if err := checkLen(name, "out", out, 4*rows*cols); err != nil {
		return err
	}
	p, err := k.pipeline(name)
	if err != nil {
		return err
	}
	if threads < 1 {
		return fmt.Errorf("%w: %s: %d threads per threadgroup", ErrInvalidDispatch, name, threads)
	}
	// The kernel strides its rows by threads_per_threadgroup, so any whole
	// number of SIMD groups works: ask for at most what this pipeline allows
	// (Apple lowers the maximum for register-heavy pipelines).
	threads = ClampThreads(p, threads)
	e := newEncoding()
	e.read(0, in, 0)
	e.write(1, out, 0)
	e.u32s(2, cols)
	return e.dispatch(cb, p, Size3{rows, 1, 1}, Size3{threads, 1, 1})
}

// softmaxKernels models this file's kernels (DispatchCost,
// KernelThreadgroupMemory).
var softmaxKernels = map[string]kernelModel{
	"softmax_f32": {cost: softmaxCost, threadgroupMemory: 4 * 32},
}

// softmaxCost models a row softmax over groups.X rows.
func softmaxCost(d *dispatchDesc) Cost {
	rows, cols := float64(d.groups.X), d.u32(2)
	return Cost{FLOPs: 4 * rows * cols, IdealBytes: 8 * rows * cols, RequestedBytes: 16 * rows * cols}
}
