package metal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/laya-metal/laya/internal/half"
	"github.com/laya-metal/laya/internal/rotary"
	"github.com/laya-metal/laya/metal/internal/kernelref"
)

// The self-test is a canary of every kernel family the backends dispatch,
// run on a device before anything trusts it. The kernels are compiled by a
// compiler we cannot run in CI (Apple's) and run under numerics we cannot
// reproduce (Apple's GPU), so a kernel that compiles but computes wrong
// would otherwise answer wrong without a sign. Shapes are small and ragged:
// no multiple of a tile, so every edge path runs, and small enough that the
// whole set is one command buffer of well under a millisecond of GPU work.
// The device tests (metal's test binary) stay the deep check; the canary
// only has to tell a working device from a broken one.

// ErrSelfTest is returned when a kernel's canary disagrees with its float64
// reference, or fails to compile or run. The message names the kernel, the
// shape and the worst element.
var ErrSelfTest = errors.New("metal: self-test failed")

// SelfTestResult is one canary's outcome.
type SelfTestResult struct {
	Kernel string // kernel function, e.g. "gemm_f32"
	Case   string // what the canary exercises, e.g. "LayerNorm prologue, bias"
	Shape  string
	// Worst is the largest |got−want| / (abs + rel·|want|) over the output:
	// at most 1 passes. Index, Got and Want are that element.
	Worst float64
	Index int
	Got   float32
	Want  float64
}

func (r SelfTestResult) String() string {
	return fmt.Sprintf("%s (%s) %s: element %d = %g, want %.9g (%.3g× tolerance)",
		r.Kernel, r.Case, r.Shape, r.Index, r.Got, r.Want, r.Worst)
}

// SelfTestReport is what SelfTest ran and how long it took.
type SelfTestReport struct {
	Device  string
	Results []SelfTestResult
	// Elapsed is the wall time of the whole self-test on the host: buffer
	// set-up, pipeline creation, the GPU work and the references.
	Elapsed time.Duration
}

// selfTestWant, when set, sees each canary's reference before it is
// compared (tests plant a broken reference with it).
var selfTestWant func(kernel string, want []float64)

// SelfTest runs the canaries on k's device and holds each to its float64
// reference. It returns an error wrapping ErrSelfTest for the first canary
// out of tolerance (worst first when several are), or for one whose
// pipeline or command buffer fails; the report lists every canary that ran.
func SelfTest(ctx context.Context, k *Kernels) (SelfTestReport, error) {
	start := time.Now()
	rep := SelfTestReport{Device: k.dev.Name()}
	h := &canaryHost{dev: k.dev}
	defer h.release()
	cs := canaries(h)
	if h.err != nil {
		return rep, fmt.Errorf("%w: allocating the canaries' buffers: %w", ErrSelfTest, h.err)
	}
	// All canaries share one command buffer: their buffers are disjoint, so
	// the concurrent encoder needs no barriers between them, and one commit
	// is one wait. If that command buffer fails, each canary runs alone to
	// find the one at fault.
	runErr := runCanaries(ctx, k, cs)
	if runErr != nil {
		if ctx.Err() != nil {
			return rep, fmt.Errorf("%w: %w", ErrSelfTest, ctx.Err())
		}
		for _, c := range cs {
			if err := runCanaries(ctx, k, []*canary{c}); err != nil {
				rep.Elapsed = time.Since(start)
				return rep, fmt.Errorf("%w: %s (%s) %s: %w", ErrSelfTest, c.kernel, c.what, c.shape, err)
			}
		}
		// Each ran alone: what failed was the set together.
		rep.Elapsed = time.Since(start)
		return rep, fmt.Errorf("%w: the canaries together: %w", ErrSelfTest, runErr)
	}
	var worst *SelfTestResult
	for _, c := range cs {
		want := c.want()
		if selfTestWant != nil {
			selfTestWant(c.kernel, want)
		}
		got := readFloats(c.out, len(want))
		r := SelfTestResult{Kernel: c.kernel, Case: c.what, Shape: c.shape, Index: -1}
		for i, w := range want {
			d := math.Abs(float64(got[i]) - w)
			e := 0.0
			if d != 0 {
				e = d / (c.abs + c.rel*math.Abs(w))
			}
			if !(e <= r.Worst) { // NaN in got or want is the worst there is
				r.Worst, r.Index, r.Got, r.Want = e, i, got[i], w
				if math.IsNaN(e) {
					r.Worst = math.Inf(1)
				}
			}
		}
		rep.Results = append(rep.Results, r)
		if r.Worst > 1 && (worst == nil || r.Worst > worst.Worst) {
			worst = &rep.Results[len(rep.Results)-1]
		}
	}
	rep.Elapsed = time.Since(start)
	if worst != nil {
		return rep, fmt.Errorf("%w: %s", ErrSelfTest, worst)
	}
	return rep, nil
}

func runCanaries(ctx context.Context, k *Kernels, cs []*canary) error {
	cb, err := k.dev.NewCommandBuffer()
	if err != nil {
		return err
	}
	var encErr error
	for _, c := range cs {
		if encErr = c.encode(cb, k); encErr != nil {
			encErr = fmt.Errorf("%s (%s) %s: %w", c.kernel, c.what, c.shape, encErr)
			break
		}
	}
	// A command buffer is always committed and waited for, even after an
	// encode error, so that the device is left with nothing in flight.
	commitErr := cb.Commit()
	_, waitErr := cb.Wait(ctx)
	return errors.Join(encErr, commitErr, waitErr)
}

// canary is one dispatch (or a split-K pair) and its reference: out's
// first len(want()) float32 values must be within abs + rel·|want| of it,
// the tolerances of the backend conformance suite (backend/backendtest)
// for the operation, which every device passes (the emulator, and
// metal-cuda with its fast math functions). abs = rel = 0 is exact.
type canary struct {
	kernel, what, shape string
	encode              func(cb CommandBuffer, k *Kernels) error
	out                 Buffer
	want                func() []float64
	abs, rel            float64
}

// canaryHost makes the canaries' buffers; the first error sticks.
type canaryHost struct {
	dev  Device
	bufs []Buffer
	err  error
}

func (h *canaryHost) release() {
	for _, b := range h.bufs {
		b.Release()
	}
}

func (h *canaryHost) buffer(n int) Buffer {
	if h.err != nil {
		return nil
	}
	b, err := h.dev.NewBuffer(max(n, 4))
	if err != nil {
		h.err = err
		return nil
	}
	h.bufs = append(h.bufs, b)
	return b
}

func (h *canaryHost) f32(vs []float32) Buffer {
	b := h.buffer(4 * len(vs))
	if b != nil {
		for i, v := range vs {
			binary.LittleEndian.PutUint32(b.Bytes()[4*i:], math.Float32bits(v))
		}
	}
	return b
}

// f16 stores vs rounded to half and returns the rounded values too (what
// the kernel reads, so what the reference must use).
func (h *canaryHost) f16(vs []float32) (Buffer, []float32) {
	b := h.buffer(2 * len(vs))
	seen := make([]float32, len(vs))
	for i, v := range vs {
		bits := half.Float32ToFloat16(v)
		seen[i] = half.Float16ToFloat32(bits)
		if b != nil {
			binary.LittleEndian.PutUint16(b.Bytes()[2*i:], bits)
		}
	}
	return b, seen
}

func (h *canaryHost) u32(vs []int) Buffer {
	b := h.buffer(4 * len(vs))
	if b != nil {
		for i, v := range vs {
			binary.LittleEndian.PutUint32(b.Bytes()[4*i:], uint32(v))
		}
	}
	return b
}

// poison is a buffer of n floats holding NaN, so that an element a kernel
// should write and does not shows as the worst there is.
func (h *canaryHost) poison(n int) Buffer {
	vs := make([]float32, n)
	for i := range vs {
		vs[i] = float32(math.NaN())
	}
	return h.f32(vs)
}

func readFloats(b Buffer, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b.Bytes()[4*i:]))
	}
	return out
}

// canaryValues gives n reproducible values in [lo, hi) (an LCG's top bits).
func canaryValues(n int, seed uint64, lo, hi float32) []float32 {
	out := make([]float32, n)
	s := seed*0x9e3779b97f4a7c15 + 1
	for i := range out {
		s = s*6364136223846793005 + 1442695040888963407
		out[i] = lo + (hi-lo)*float32(s>>40)/float32(1<<24)
	}
	return out
}

func widen(vs []float32) []float64 {
	out := make([]float64, len(vs))
	for i, v := range vs {
		out[i] = float64(v)
	}
	return out
}

// gemmCanary describes one GEMM canary.
type gemmCanary struct {
	what     string
	in       GemmInput
	m, n, k  int
	bias     bool
	act      Activation
	geglu    bool
	residual bool
	ln       bool
	slices   int // split-K when ≥ 2
}

// canaries builds the canary set: each kernel family the backends
// dispatch, with the variants (function constants) the model's forward
// pass uses.
func canaries(h *canaryHost) []*canary {
	var cs []*canary
	for i, g := range []gemmCanary{
		{what: "LayerNorm prologue, bias", in: GemmF32, m: 37, n: 70, k: 40, bias: true, ln: true},
		{what: "bias, GELU", in: GemmF32, m: 33, n: 45, k: 24, bias: true, act: ActGELU},
		{what: "GeGLU", in: GemmF32F16W, m: 19, n: 68, k: 36, geglu: true},
		{what: "residual", in: GemmF32F16W, m: 21, n: 40, k: 28, bias: true, residual: true},
		{what: "GEMV, bias", in: GemmF32, m: 3, n: 37, k: 52, bias: true},
		{what: "GEMV, fp16 weights", in: GemmF32F16W, m: 5, n: 29, k: 64},
		{what: "split-K, bias, GELU", in: GemmF32, m: 40, n: 33, k: 200, bias: true, act: ActGELU, slices: 3},
		{what: "split-K, GeGLU", in: GemmF32F16W, m: 35, n: 36, k: 130, geglu: true, slices: 2},
	} {
		cs = append(cs, gemmCanaryOf(h, g, uint64(10*i+1)))
	}
	for i, a := range []struct {
		what          string
		lengths       []int
		seqLen, heads int
		headDim       int
		sliding, rope bool
		radius        int
	}{
		{"global, RoPE", []int{37, 9}, 37, 2, 64, false, true, 0},
		{"sliding, RoPE", []int{41, 30}, 41, 2, 64, true, true, 5},
		{"global, RoPE", []int{35, 3}, 35, 3, 32, false, true, 0},
		{"sliding", []int{33, 17}, 33, 2, 32, true, false, 4},
		{"one query row per group", []int{13, 6}, 13, 2, 12, false, false, 0},
	} {
		cs = append(cs, attentionCanary(h, a.what, a.lengths, a.seqLen, a.heads, a.headDim, a.sliding, a.rope, a.radius, uint64(100+i)))
	}
	cs = append(cs, rowCanaries(h)...)
	return cs
}

func gemmCanaryOf(h *canaryHost, g gemmCanary, seed uint64) *canary {
	x := canaryValues(g.m*g.k, seed, -1, 1)
	w := canaryValues(g.n*g.k, seed+1, -0.5, 0.5)
	op := GemmOp{Input: g.in, M: g.m, N: g.n, K: g.k, Act: g.act, X: h.f32(x)}
	name := "gemm_f32"
	switch g.in {
	case GemmF32F16W:
		name = "gemm_f32_f16w"
		op.W, w = h.f16(w)
	default:
		op.W = h.f32(w)
	}
	if g.m <= GemvMaxRows {
		name = gemvNames[g.in]
	}
	var bias []float64
	if g.bias {
		b := canaryValues(g.n, seed+2, -1, 1)
		op.Bias, bias = h.f32(b), widen(b)
	}
	prologue := widen(x)
	if g.ln {
		lw, lb := canaryValues(g.k, seed+3, 0.5, 1.5), canaryValues(g.k, seed+4, -0.5, 0.5)
		op.LNWeight, op.LNBias, op.Eps = h.f32(lw), h.f32(lb), 1e-5
		prologue = kernelref.LayerNorm(x, lw, lb, g.m, g.k, 1e-5)
	}
	var res0 []float32
	out := &op.Y
	switch {
	case g.geglu:
		op.Gated = h.poison(g.m * g.n / 2)
		out = &op.Gated
	case g.residual:
		res0 = canaryValues(g.m*g.n, seed+5, -2, 2)
		op.Residual = h.f32(res0)
		out = &op.Residual
	default:
		op.Y = h.poison(g.m * g.n)
	}
	encode := func(cb CommandBuffer, k *Kernels) error { return EncodeGemm(cb, k, op) }
	shape := fmt.Sprintf("M=%d N=%d K=%d", g.m, g.n, g.k)
	if g.slices > 1 {
		_, op.Slices = GemmKSlice(g.k, g.slices)
		op.Partial = h.poison(op.Slices * g.m * g.n)
		encode = func(cb CommandBuffer, k *Kernels) error { return EncodeGemmSplitK(cb, k, op) }
		shape += fmt.Sprintf(" slices=%d", op.Slices)
		name += " + gemm_reduce_f32"
	}
	// Linear's tolerance in the backend conformance suite
	// (backend/backendtest): products summed in float32 over K; four times
	// that for a LayerNorm'ed operand rounded to float32 first and for
	// GeGLU, a product of two such values.
	abs := 2e-6 * float64(g.k)
	if g.ln {
		abs *= 4
	}
	if g.geglu {
		abs *= 4
	}
	return &canary{kernel: name, what: g.what, shape: shape, encode: encode, out: *out, abs: abs, rel: 1e-5,
		want: func() []float64 {
			y, gated := kernelref.GemmEpilogue(prologue, widen(w), bias, g.m, g.n, g.k, int(g.act), g.geglu)
			if g.geglu {
				return gated
			}
			if g.residual {
				for i := range y {
					y[i] += float64(res0[i])
				}
			}
			return y
		}}
}

func attentionCanary(h *canaryHost, what string, lengths []int, seqLen, heads, headDim int, sliding, rope bool, radius int, seed uint64) *canary {
	shape := AttentionShape{Batch: len(lengths), SeqLen: seqLen, Heads: heads, HeadDim: headDim,
		Scale: 1 / float32(math.Sqrt(float64(headDim))), Sliding: sliding, Radius: radius}
	rows, width := shape.Batch*seqLen, heads*headDim
	qkv := canaryValues(rows*3*width, seed, -2, 2)
	op := AttentionOp{QKV: h.f32(qkv), Out: h.poison(rows * width), Lengths: lengths, Shape: shape}
	var table []float32
	if rope {
		table = rotary.Table(10000, headDim, seqLen)
		op.Table = h.f32(table)
	}
	name := "attention_f32"
	if AttentionFusesRope(shape) {
		name = "attention_flash_f32"
	}
	return &canary{kernel: name, what: what, out: op.Out, abs: 2e-6, rel: 2e-5,
		shape:  fmt.Sprintf("batch=%d seq=%d heads=%d head_dim=%d lengths=%v radius=%d", shape.Batch, seqLen, heads, headDim, lengths, radius),
		encode: func(cb CommandBuffer, k *Kernels) error { return EncodeAttention(cb, k, op) },
		want: func() []float64 {
			in := qkv
			if rope {
				rotated := kernelref.Rope(qkv, table, rows, seqLen, heads, headDim)
				in = make([]float32, len(rotated))
				for i, v := range rotated {
					in[i] = float32(v)
				}
			}
			return kernelref.Attention(in, lengths, kernelref.AttentionShape(shape))
		}}
}

// rowCanaries are the row and element kernels: LayerNorm, softmax, the
// gathers, RoPE, GELU, GeGLU, vector add and the act head's features.
func rowCanaries(h *canaryHost) []*canary {
	var cs []*canary

	const lnRows, lnCols = 5, 77
	lnIn := canaryValues(lnRows*lnCols, 200, -3, 5)
	lnW, lnB := canaryValues(lnCols, 201, 0.5, 1.5), canaryValues(lnCols, 202, -0.5, 0.5)
	lnOp := LayerNormOp{In: h.f32(lnIn), Weight: h.f32(lnW), Bias: h.f32(lnB), Out: h.poison(lnRows * lnCols),
		Rows: lnRows, Cols: lnCols, Eps: 1e-5}
	cs = append(cs, &canary{kernel: "layernorm_f32", what: "bias", shape: fmt.Sprintf("%d×%d", lnRows, lnCols),
		out: lnOp.Out, abs: 2e-5, rel: 2e-5,
		encode: func(cb CommandBuffer, k *Kernels) error { return EncodeLayerNorm(cb, k, lnOp) },
		want:   func() []float64 { return kernelref.LayerNorm(lnIn, lnW, lnB, lnRows, lnCols, 1e-5) }})

	const smRows, smCols = 4, 130
	smIn := canaryValues(smRows*smCols, 210, -8, 8)
	smOut := h.poison(smRows * smCols)
	smBuf := h.f32(smIn)
	cs = append(cs, &canary{kernel: "softmax_f32", what: "rows", shape: fmt.Sprintf("%d×%d", smRows, smCols),
		out: smOut, abs: 1e-9, rel: 3e-6,
		encode: func(cb CommandBuffer, k *Kernels) error { return Softmax(cb, k, smBuf, smOut, smRows, smCols) },
		want:   func() []float64 { return kernelref.Softmax(smIn, smRows, smCols) }})

	const gRows, gCols, gTable = 13, 33, 50
	index := make([]int32, gRows)
	uindex := make([]uint32, gRows)
	for i := range index {
		index[i] = int32((i*37 + 11) % gTable)
		uindex[i] = uint32(index[i])
	}
	table32 := canaryValues(gTable*gCols, 220, -1, 1)
	g32 := GatherOp{Elem: ElemF32, Table: h.f32(table32), Out: h.poison(gRows * gCols), IndexValues: index,
		Rows: gRows, Cols: gCols, TableRows: gTable}
	tb16, table16 := h.f16(canaryValues(gTable*gCols, 221, -1, 1))
	g16 := GatherOp{Elem: ElemF16, Table: tb16, Out: h.poison(gRows * gCols), IndexValues: index,
		Rows: gRows, Cols: gCols, TableRows: gTable}
	for _, g := range []struct {
		name  string
		op    GatherOp
		table []float32
	}{{"gather_rows_f32", g32, table32}, {"gather_rows_f16", g16, table16}} {
		cs = append(cs, &canary{kernel: g.name, what: "inline indices", shape: fmt.Sprintf("%d rows of %d from %d", gRows, gCols, gTable),
			out:    g.op.Out,
			encode: func(cb CommandBuffer, k *Kernels) error { return EncodeGather(cb, k, g.op) },
			want:   func() []float64 { return kernelref.GatherRows(g.table, uindex, gCols) }})
	}

	const rRows, rSeq, rHeads, rDim = 7, 5, 2, 12
	rQKV := canaryValues(rRows*3*rHeads*rDim, 230, -2, 2)
	rTable := rotary.Table(10000, rDim, rSeq)
	rBuf, rTableBuf := h.f32(rQKV), h.f32(rTable)
	cs = append(cs, &canary{kernel: "rope_f32", what: "in place", shape: fmt.Sprintf("rows=%d seq=%d heads=%d head_dim=%d", rRows, rSeq, rHeads, rDim),
		out: rBuf, abs: 2e-5, rel: 2e-6,
		encode: func(cb CommandBuffer, k *Kernels) error {
			return Rope(cb, k, rBuf, rTableBuf, rRows, rSeq, rHeads, rDim)
		},
		want: func() []float64 { return kernelref.Rope(rQKV, rTable, rRows, rSeq, rHeads, rDim) }})

	const actN = 301
	actIn := canaryValues(actN, 240, -6, 6)
	actBuf, actOut := h.f32(actIn), h.poison(actN)
	cs = append(cs, &canary{kernel: "activate_f32", what: "GELU", shape: fmt.Sprintf("n=%d", actN),
		out: actOut, abs: 1e-7, rel: 1e-6,
		encode: func(cb CommandBuffer, k *Kernels) error { return Activate(cb, k, ActGELU, actBuf, actOut, actN) },
		want:   func() []float64 { return kernelref.Activate(actIn, kernelref.ActGELU) }})

	const ggRows, ggInner = 3, 45
	ggIn := canaryValues(ggRows*2*ggInner, 250, -3, 3)
	ggBuf, ggOut := h.f32(ggIn), h.poison(ggRows*ggInner)
	cs = append(cs, &canary{kernel: "geglu_f32", what: "rows", shape: fmt.Sprintf("%d×%d", ggRows, ggInner),
		out: ggOut, abs: 4e-7, rel: 2e-6,
		encode: func(cb CommandBuffer, k *Kernels) error { return GeGLU(cb, k, ggBuf, ggOut, ggRows, ggInner) },
		want:   func() []float64 { return kernelref.Geglu(ggIn, ggRows, ggInner) }})

	const vaN = 203
	va, vb := canaryValues(vaN, 260, -10, 10), canaryValues(vaN, 261, -10, 10)
	vaBuf, vbBuf, vaOut := h.f32(va), h.f32(vb), h.poison(vaN)
	cs = append(cs, &canary{kernel: "vector_add_f32", what: "elements", shape: fmt.Sprintf("n=%d", vaN),
		out: vaOut, abs: 0, rel: 6e-8,
		encode: func(cb CommandBuffer, k *Kernels) error { return VectorAdd(cb, k, vaBuf, vbBuf, vaOut, vaN) },
		want:   func() []float64 { return kernelref.VectorAdd(va, vb) }})

	counts, dim := []int{3, 7}, 20
	cls := canaryValues(len(counts)*dim, 270, -1, 1)
	offsets := []int{0}
	for _, c := range counts {
		offsets = append(offsets, offsets[len(offsets)-1]+c)
	}
	logits := canaryValues(offsets[len(counts)], 271, -4, 4)
	afCls, afLogits, afOff, afOut := h.f32(cls), h.f32(logits), h.u32(offsets), h.poison(len(counts)*(dim+4))
	cs = append(cs, &canary{kernel: "act_features_f32", what: "softmax features", shape: fmt.Sprintf("batch=%d dim=%d counts=%v", len(counts), dim, counts),
		out: afOut, abs: 1e-6, rel: 1e-5,
		encode: func(cb CommandBuffer, k *Kernels) error {
			return ActFeatures(cb, k, afCls, afLogits, afOff, afOut, len(counts), dim, len(logits))
		},
		want: func() []float64 { return kernelref.ActFeatures(cls, logits, counts, dim) }})
	return cs
}
