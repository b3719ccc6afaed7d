package metal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"
)

// Cost is a MODEL of one dispatch's work, from its kernel, function
// constants, grid and arguments: nothing is measured.
//
//   - FLOPs counts the useful floating-point operations (2 per
//     multiply-add of the mathematical operation; tile padding and masked
//     attention scores excluded).
//   - IdealBytes is the least device-memory traffic the operation needs:
//     every input read once, every output written once.
//   - RequestedBytes is what the kernel's tiling asks of the memory system
//     (each threadgroup's own loads: a GEMM re-reads X once per column of
//     threadgroups and W once per row of them, attention re-reads its keys
//     and values once per query block); caches serve much of it, so it
//     bounds traffic from above.
type Cost struct {
	FLOPs          float64 `json:"flops"`
	IdealBytes     float64 `json:"ideal_bytes"`
	RequestedBytes float64 `json:"requested_bytes"`
}

// Add sums costs.
func (c Cost) Add(o Cost) Cost {
	return Cost{c.FLOPs + o.FLOPs, c.IdealBytes + o.IdealBytes, c.RequestedBytes + o.RequestedBytes}
}

// DispatchCost models a dispatch of this package's kernels (see Cost);
// args are as given to CommandBuffer.Dispatch, constants as given to
// Device.Pipeline. Each kernel family prices its kernels beside its
// dispatch function (kernel_<family>.go); a kernel none of them prices is
// an error wrapping ErrNoCost, never a zero cost.
func DispatchCost(kernel string, constants []Constant, groups, threads Size3, args []Arg) (Cost, error) {
	m, ok := kernelModels[kernel]
	if !ok || m.cost == nil {
		return Cost{}, fmt.Errorf("%w: kernel %s", ErrNoCost, kernel)
	}
	return m.cost(&dispatchDesc{kernel: kernel, constants: constants, groups: groups, threads: threads, args: args}), nil
}

// ErrNoCost means DispatchCost has no model of a kernel.
var ErrNoCost = errors.New("metal: no cost model for the kernel")

// kernelModel is what this package models of one kernel, stated by its
// family beside its dispatch function (kernel_<family>.go).
type kernelModel struct {
	// cost prices one dispatch (DispatchCost).
	cost func(d *dispatchDesc) Cost
	// threadgroupMemory is the bytes of one threadgroup's static arrays
	// (KernelThreadgroupMemory).
	threadgroupMemory int
}

// kernelModels is every family's models, by kernel function name.
var kernelModels = mergeModels(gemmKernels, attentionKernels, layerNormKernels, gatherKernels, ropeKernels,
	elementwiseKernels, activationKernels, softmaxKernels)

func mergeModels(families ...map[string]kernelModel) map[string]kernelModel {
	all := map[string]kernelModel{}
	for _, f := range families {
		for name, c := range f {
			if _, dup := all[name]; dup {
				panic("metal: two models of kernel " + name)
			}
			all[name] = c
		}
	}
	return all
}

// dispatchDesc is one dispatch as a cost function reads it.
type dispatchDesc struct {
	kernel          string
	constants       []Constant
	groups, threads Size3
	args            []Arg
}

// on reports whether the boolean function constant i is set.
func (d *dispatchDesc) on(i int) bool {
	for _, c := range d.constants {
		if c.Index == i {
			v, _ := c.Value.(bool)
			return v
		}
	}
	return false
}

// arg is the argument bound at index i, or nil.
func (d *dispatchDesc) arg(i int) *Arg {
	for j := range d.args {
		if d.args[j].Index == i {
			return &d.args[j]
		}
	}
	return nil
}

// u32 is the first uint32 of the inline argument at index i (0 when none).
func (d *dispatchDesc) u32(i int) float64 {
	if a := d.arg(i); a != nil && len(a.Bytes) >= 4 {
		return float64(binary.LittleEndian.Uint32(a.Bytes))
	}
	return 0
}

// paramsOf decodes a parameter struct from its setBytes argument.
func paramsOf[T kernelParams](a *Arg) (T, bool) {
	var p T
	if a == nil || len(a.Bytes) < int(unsafe.Sizeof(p)) {
		return p, false
	}
	copy(paramBytes(&p), a.Bytes)
	return p, true
}

// u32sOf reads uint32 values from an argument: inline bytes or a buffer.
func u32sOf(a *Arg) []int {
	if a == nil {
		return nil
	}
	b := a.Bytes
	if b == nil && a.Buffer != nil {
		b = a.Buffer.Bytes()[a.Offset:]
	}
	out := make([]int, len(b)/4)
	for i := range out {
		out[i] = int(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// KernelThreadgroupMemory is the threadgroup memory one threadgroup of a
// kernel of this package declares (its static arrays; no kernel here takes
// [[threadgroup(n)]] arguments), from the tile constants of
// kernels/*.metal, as its family states it. It bounds how many
// threadgroups a GPU core holds at once, which the plan's time model
// needs; TestKernelThreadgroupMemory checks every figure against the
// emulator's compiled pipelines.
func KernelThreadgroupMemory(kernel string) int { return kernelModels[kernel].threadgroupMemory }

// DecodeGemmParams reads GemmParams from a GEMM dispatch's setBytes
// argument (plans).
func DecodeGemmParams(b []byte) GemmParams {
	p, _ := paramsOf[GemmParams](&Arg{Bytes: b})
	return p
}
