package metal

import (
	"encoding/binary"
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
// Device.Pipeline. Unknown kernels cost zero.
func DispatchCost(kernel string, constants []Constant, groups, threads Size3, args []Arg) Cost {
	constant := func(i int) any {
		for _, c := range constants {
			if c.Index == i {
				return c.Value
			}
		}
		return nil
	}
	on := func(i int) bool { v, _ := constant(i).(bool); return v }
	arg := func(i int) *Arg {
		for j := range args {
			if args[j].Index == i {
				return &args[j]
			}
		}
		return nil
	}
	u32 := func(i int) float64 {
		if a := arg(i); a != nil && len(a.Bytes) >= 4 {
			return float64(binary.LittleEndian.Uint32(a.Bytes))
		}
		return 0
	}
	switch kernel {
	case "gemm_f32", "gemm_f16", "gemm_f32_f16w", "gemv_f32", "gemv_f16", "gemv_f32_f16w":
		p, ok := paramsOf[GemmParams](arg(4))
		if !ok {
			return Cost{}
		}
		m, n, k := float64(p.M), float64(p.N), float64(p.K)
		xe, we := 4.0, 4.0
		switch kernel {
		case "gemm_f16", "gemv_f16":
			xe, we = 2, 2
		case "gemm_f32_f16w", "gemv_f32_f16w":
			we = 2
		}
		c := Cost{FLOPs: 2 * m * n * k}
		out := 0.0
		if arg(2) != nil {
			out += 4 * m * n
		}
		split := on(9)
		if on(2) && !split {
			out += 4 * m * n / 2
		}
		if split {
			out += 4 * m * n * float64(groups.Z) // each slice's partial matrix
		}
		if on(6) {
			out += 2 * 4 * m * n // residual read and written
		}
		if on(0) {
			out += 4 * n
		}
		xReads := 1.0
		if on(4) {
			c.FLOPs += 8 * m * k // statistics and normalisation
			out += 4 * k
			if on(5) {
				out += 4 * k
			}
			xReads = 2 // the statistics pass and the staging
		}
		c.IdealBytes = xe*m*k + we*n*k + out
		// Tiles: X once per column of threadgroups, W once per row of
		// them; GEMV: W once, X once per threadgroup. Split-K: each slice
		// stages its part of X and W, and with a LayerNorm prologue every
		// slice reads its rows whole once more for their statistics.
		c.RequestedBytes = float64(groups.X)*xReads*xe*m*k + float64(groups.Y)*we*n*k + out
		if split && on(4) {
			c.RequestedBytes += float64(groups.X) * float64(groups.Z-1) * xe * m * k
		}
		return c
	case "gemm_reduce_f32":
		p, ok := paramsOf[GemmReduceParams](arg(3))
		if !ok {
			return Cost{}
		}
		m, n, s := float64(p.M), float64(p.N), float64(p.Slices)
		c := Cost{FLOPs: (s - 1) * m * n}
		out := 4 * s * m * n // the partial matrices, read once
		if arg(1) != nil {
			out += 4 * m * n
		}
		if on(2) {
			out += 4 * m * n / 2
		}
		if on(6) {
			out += 2 * 4 * m * n
		}
		if on(0) {
			out += 4 * n
		}
		c.IdealBytes, c.RequestedBytes = out, out
		return c
	case "attention_f32", "attention_flash_f32":
		p, ok := paramsOf[AttentionParams](arg(3))
		if !ok {
			return Cost{}
		}
		L, H, dh := int(p.SeqLen), int(p.Heads), int(p.HeadDim)
		lengths := u32sOf(arg(1))
		if batch := groups.Y / max(H, 1); len(lengths) > batch {
			lengths = lengths[:batch]
		}
		sliding, rope := on(0), kernel == "attention_flash_f32" && on(1)
		var c Cost
		for _, n := range lengths {
			keys := 0 // real (query, key) pairs
			for i := range n {
				lo, hi := 0, n-1
				if sliding {
					lo, hi = max(0, i-int(p.Radius)), min(n-1, i+int(p.Radius))
				}
				keys += hi - lo + 1
			}
			c.FLOPs += float64(H) * 4 * float64(dh*keys)
			rows := float64(L * H * dh)
			c.IdealBytes += 4*3*rows + 4*rows // qkv read once, out written
			if rope {
				c.IdealBytes += 4 * float64(n*dh)
			}
			// Requested: what the threadgroups stage.
			if kernel == "attention_flash_f32" {
				for q0 := 0; q0 < n; q0 += AttentionQueryBlock {
					lo, hi := 0, n-1
					if sliding {
						lo, hi = max(0, q0-int(p.Radius)), min(n-1, q0+AttentionQueryBlock-1+int(p.Radius))
					}
					staged := float64(min(AttentionQueryBlock, n-q0)+2*(hi-lo+1)) * float64(dh) * 4
					if rope {
						staged *= 2 // the table beside q and k
					}
					c.RequestedBytes += float64(H) * staged
				}
				c.RequestedBytes += 4 * rows
			} else {
				c.RequestedBytes += float64(H)*4*float64(dh)*float64(n+2*keys) + 4*rows
			}
		}
		return c
	case "layernorm_f32":
		p, ok := paramsOf[LayerNormParams](arg(4))
		if !ok {
			return Cost{}
		}
		rows, cols := float64(groups.X), float64(p.Cols)
		w := 4 * cols
		if on(0) {
			w *= 2
		}
		return Cost{FLOPs: 8 * rows * cols, IdealBytes: 8*rows*cols + w, RequestedBytes: 16*rows*cols + w}
	case "gather_rows_f32", "gather_rows_f16":
		rows, cols := float64(groups.Y), u32(3)
		e := 4.0
		if kernel == "gather_rows_f16" {
			e = 2
		}
		b := (e+4)*rows*cols + 4*rows
		return Cost{IdealBytes: b, RequestedBytes: b}
	case "rope_f32":
		p, ok := paramsOf[RopeParams](arg(2))
		if !ok {
			return Cost{}
		}
		pairs := float64(p.Rows) * float64(p.Heads2) * float64(p.HeadDim) / 2
		b := 16*pairs + 4*float64(min(p.Rows, p.SeqLen)*p.HeadDim)
		return Cost{FLOPs: 6 * pairs, IdealBytes: b, RequestedBytes: b + 8*pairs}
	case "vector_add":
		n := u32(3)
		return Cost{FLOPs: n, IdealBytes: 12 * n, RequestedBytes: 12 * n}
	case "activate_f32":
		n := u32(2)
		return Cost{FLOPs: 20 * n, IdealBytes: 8 * n, RequestedBytes: 8 * n}
	case "geglu_f32":
		p, ok := paramsOf[GegluParams](arg(2))
		if !ok {
			return Cost{}
		}
		n := float64(p.Rows) * float64(p.Inner)
		return Cost{FLOPs: 21 * n, IdealBytes: 12 * n, RequestedBytes: 12 * n}
	case "softmax_f32":
		rows, cols := float64(groups.X), u32(2)
		return Cost{FLOPs: 4 * rows * cols, IdealBytes: 8 * rows * cols, RequestedBytes: 16 * rows * cols}
	case "act_features_f32":
		batch, dim := float64(groups.X), u32(4)
		return Cost{IdealBytes: 8 * batch * (dim + 4), RequestedBytes: 8 * batch * (dim + 4)}
	}
	return Cost{}
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
// kernels/*.metal. It bounds how many threadgroups a GPU core holds at
// once, which the plan's time model needs; TestKernelThreadgroupMemory
// checks every figure against the emulator's compiled pipelines.
func KernelThreadgroupMemory(kernel string) int {
	const (
		xTile = 2 * GemmTileM * (GemmTileK + 4) // double-buffered X tile (kLdX = kBK + 4)
		wTile = 2 * GemmTileN * (GemmTileK + 8) // double-buffered W tile (kLdW = kBK + 8)
		stats = 2 * GemmTileM                   // mean and rstd per row
	)
	switch kernel {
	case "gemm_f32":
		return 4 * (xTile + wTile + stats)
	case "gemm_f16", "gemm_f32_f16w":
		return 4*(xTile+stats) + 2*wTile // W stays half
	case "attention_flash_f32":
		return 4 * 3 * AttentionQueryBlock * (attentionFlashMaxDim + 4) // q, k and v tiles
	case "attention_f32":
		return 4 * (MaxAttentionHeadDim + 32) // the query and 32 probabilities
	case "layernorm_f32", "softmax_f32":
		return 4 * 32 // one partial per simdgroup
	}
	return 0
}

// attentionFlashMaxDim is kFlashMaxDim of kernels/attention.metal.
const attentionFlashMaxDim = 64

// DecodeGemmParams reads GemmParams from a GEMM dispatch's setBytes
// argument (plans).
func DecodeGemmParams(b []byte) GemmParams {
	p, _ := paramsOf[GemmParams](&Arg{Bytes: b})
	return p
}
