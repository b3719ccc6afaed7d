package metal

import "fmt"

// Activation selects the element-wise function of Activate and of the
// GEMM's epilogue; the values are act_kind and gemm_act of
// kernels/gemm.metal and follow backend.Activation.
type Activation uint32

const (
	ActIdentity Activation = iota
	// ActGELU is the exact erf GELU 0.5·x·(1+erf(x/√2)).
	ActGELU
	// ActReLU is max(x, 0).
	ActReLU
)

// Activate encodes out[i] = act(in[i]) for n float32 values
// (kernels/gemm.metal, activate_f32). out may be in.
func Activate(cb CommandBuffer, k *Kernels, act Activation, in, out Buffer, n int) error {
	const name = "activate_f32"
	if n <= 0 || n > 1<<31 || act > ActReLU {
		return fmt.Errorf("%w: %s: n = %d, activation %d", ErrInvalidDispatch, name, n, act)
	}
	if err := checkLen(name, "in", in, 4*n); err != nil {
		return err
	}
	if err := checkLen(name, "out", out, 4*n); err != nil {
		return err
	}
	// act_kind is function_constant(3) (0..2 are the GEMM's).
	p, err := k.pipeline(name, Constant{Index: 3, Value: uint32(act)})
	if err != nil {
		return err
	}
	threads := min(256, p.MaxThreadsPerThreadgroup())
	e := newEncoding()
	e.read(0, in, 0)
	e.write(1, out, 0)
	e.u32s(2, n)
	return e.dispatch(cb, p, Size3{ceilDiv(n, threads), 1, 1}, Size3{threads, 1, 1})
}

// GeGLU encodes out[r, c] = GELU(in[r, c])·in[r, inner+c] for in [rows,
// 2·inner] and out [rows, inner] (kernels/gemm.metal, geglu_f32; EncodeGemm
// fuses it into the projection that makes in).
func GeGLU(cb CommandBuffer, k *Kernels, in, out Buffer, rows, inner int) error {
	const name = "geglu_f32"
	if rows <= 0 || inner <= 0 || rows*2*inner > 1<<31 {
		return fmt.Errorf("%w: %s: %d×%d", ErrInvalidDispatch, name, rows, inner)
	}
	if err := checkLen(name, "in", in, 4*rows*2*inner); err != nil {
		return err
	}
	if err := checkLen(name, "out", out, 4*rows*inner); err != nil {
		return err
	}
	p, err := k.pipeline(name)
	if err != nil {
		return err
	}
	threads := min(256, p.MaxThreadsPerThreadgroup())
	e := newEncoding()
	e.read(0, in, 0)
	e.write(1, out, 0)
	params(e, 2, GegluParams{Rows: uint32(rows), Inner: uint32(inner)})
	return e.dispatch(cb, p, Size3{ceilDiv(rows*inner, threads), 1, 1}, Size3{threads, 1, 1})
}

// ActFeatures encodes the act head's input (kernels/activation.metal,
// act_features_f32): out [batch, dim+4] gets cls [batch, dim] then top1,
// top1−top2, normalised entropy and max(2, k)/255 of the softmax of row b's
// logits[offsets[b]:offsets[b+1]]. offsets holds batch+1 uint32 values,
// increasing by at least 1 (the kernel trusts them); logits holds
// offsets[batch] float32 values.
func ActFeatures(cb CommandBuffer, k *Kernels, cls, logits, offsets, out Buffer, batch, dim, totalLogits int) error {
	const name = "act_features_f32"
	if batch <= 0 || dim <= 0 || totalLogits < batch || batch*(dim+4) > 1<<31 {
		return fmt.Errorf("%w: %s: batch %d, dim %d, %d logits", ErrInvalidDispatch, name, batch, dim, totalLogits)
	}
	for _, c := range []struct {
		what string
		buf  Buffer
		need int
	}{{"cls", cls, 4 * batch * dim}, {"logits", logits, 4 * totalLogits}, {"offsets", offsets, 4 * (batch + 1)}, {"out", out, 4 * batch * (dim + 4)}} {
		if err := checkLen(name, c.what, c.buf, c.need); err != nil {
			return err
		}
	}
	p, err := k.pipeline(name)
	if err != nil {
		return err
	}
	threads := min(32*ceilDiv(dim, 32), 256, p.MaxThreadsPerThreadgroup())
	e := newEncoding()
	e.read(0, cls, 0)
	e.read(1, logits, 0)
	e.read(2, offsets, 0)
	e.write(3, out, 0)
	e.u32s(4, dim)
	return e.dispatch(cb, p, Size3{batch, 1, 1}, Size3{threads, 1, 1})
}

// activationKernels models this file's kernels (DispatchCost,
// KernelThreadgroupMemory).
var activationKernels = map[string]kernelModel{
	"activate_f32":     {cost: activateCost},
	"geglu_f32":        {cost: gegluCost},
	"act_features_f32": {cost: actFeaturesCost},
}

// activateCost models an activation of n elements.
func activateCost(d *dispatchDesc) Cost {
	n := d.u32(2)
	return Cost{FLOPs: 20 * n, IdealBytes: 8 * n, RequestedBytes: 8 * n}
}

// gegluCost models GeGLU over rows × inner outputs.
func gegluCost(d *dispatchDesc) Cost {
	p, ok := paramsOf[GegluParams](d.arg(2))
	if !ok {
		return Cost{}
	}
	n := float64(p.Rows) * float64(p.Inner)
	return Cost{FLOPs: 21 * n, IdealBytes: 12 * n, RequestedBytes: 12 * n}
}

// actFeaturesCost models the act head's features of each row.
func actFeaturesCost(d *dispatchDesc) Cost {
	batch, dim := float64(d.groups.X), d.u32(4)
	return Cost{IdealBytes: 8 * batch * (dim + 4), RequestedBytes: 8 * batch * (dim + 4)}
}
