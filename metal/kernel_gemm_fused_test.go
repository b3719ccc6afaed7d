package metal_test

import (
	"fmt"
	"math"
	"os"
	"testing"

	. "github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/emu"
)

// gemmCase is one fused GEMM against the float64 reference: LayerNorm
// prologue, bias, activation, GeGLU, residual, Y written or not.
type gemmCase struct {
	in              GemmInput
	m, n, k         int
	act             Activation
	bias, ln, lnB   bool
	geglu, residual bool
	noY             bool
	wOff            int     // elements of padding before W (misaligns vector loads when odd)
	xOff            float32 // added to X: a large mean against the spread tests the LayerNorm statistics
	// split: K split about this many ways (deterministic split-K,
	// EncodeGemmSplitK; GemmKSlice gives the slices), 0 or 1 for none.
	split int
}

func (c gemmCase) String() string {
	return fmt.Sprintf("in%d %d×%d×%d act%d bias=%v ln=%v/%v geglu=%v res=%v noY=%v wOff=%d split=%d",
		c.in, c.m, c.n, c.k, c.act, c.bias, c.ln, c.lnB, c.geglu, c.residual, c.noY, c.wOff, c.split)
}

// splitSweep is split-K on ragged shapes whose K crosses slice boundaries
// inside a K tile and whose last slice is short: M = 1, 7, 93, 97, 200,
// every prologue and epilogue, aligned and misaligned W.
func splitSweep() []gemmCase {
	return []gemmCase{
		{in: GemmF32F16W, m: 93, n: 130, k: 600, ln: true, residual: true, noY: true, split: 2},               // slices of 320, 280
		{in: GemmF32F16W, m: 7, n: 2 * 45, k: 450, ln: true, geglu: true, noY: true, split: 3},                // 160, 160, 130
		{in: GemmF32, m: 97, n: 70, k: 333, bias: true, act: ActReLU, ln: true, lnB: true, wOff: 1, split: 4}, // 96 ×3, 45
		{in: GemmF32F16W, m: 1, n: 65, k: 300, bias: true, residual: true, wOff: 3, split: 2},                 // 160, 140
		{in: GemmF16, m: 200, n: 66, k: 200, act: ActGELU, bias: true, split: 3},                              // 96, 96, 8
		{in: GemmF32F16W, m: 93, n: 2 * 70, k: 257, geglu: true, bias: true, split: 2},                        // 160, 97
	}
}

// gemmSweep is the default set: M = 1, 7, 93, 97, 200 (inside one row tile,
// just past three, across seven), N and K off the 64 and 32 tiles, every
// prologue and epilogue at least once, aligned and misaligned W.
func gemmSweep(full bool) []gemmCase {
	cases := []gemmCase{
		{in: GemmF32F16W, m: 93, n: 130, k: 72, ln: true, residual: true},
		{in: GemmF32F16W, m: 7, n: 2 * 45, k: 40, ln: true, geglu: true, noY: true},
		{in: GemmF32, m: 97, n: 70, k: 33, bias: true, act: ActReLU, ln: true, lnB: true, wOff: 1},
		{in: GemmF32F16W, m: 1, n: 65, k: 36, bias: true, residual: true, noY: true, wOff: 3},
		{in: GemmF32, m: 200, n: 66, k: 20, act: ActGELU, bias: true},
		// A mean 500× the spread: the one-pass statistics must not cancel.
		{in: GemmF32F16W, m: 33, n: 64, k: 1000, ln: true, xOff: 1000},
		// M ≤ 8 without prologue or GeGLU: the GEMV kernels.
		{in: GemmF32F16W, m: 7, n: 70, k: 64, act: ActGELU, bias: true},
		{in: GemmF16, m: 8, n: 9, k: 40, residual: true},
		{in: GemmF32, m: 4, n: 130, k: 129, act: ActReLU, residual: true, noY: true, wOff: 2},
	}
	if !full {
		return cases
	}
	for _, m := range []int{1, 7, 93, 97, 200} {
		for _, nk := range [][2]int{{64, 32}, {70, 100}, {130, 33}} {
			for _, in := range []GemmInput{GemmF32, GemmF32F16W, GemmF16} {
				cases = append(cases,
					gemmCase{in: in, m: m, n: nk[0], k: nk[1], ln: in != GemmF16, residual: true},
					gemmCase{in: in, m: m, n: 2 * nk[0], k: nk[1], geglu: true, bias: true, noY: m%2 == 1},
					gemmCase{in: in, m: m, n: nk[0], k: nk[1], act: ActGELU, bias: true, wOff: 1})
			}
		}
	}
	return cases
}

func runGemmCase(t *testing.T, d Device, kern *Kernels, c gemmCase) {
	t.Helper()
	x := pseudo(c.m*c.k, uint64(11+c.m), -2+c.xOff, 2+c.xOff)
	w := append(pseudo(c.wOff, 1, 9, 9), pseudo(c.n*c.k, uint64(12+c.n), -1, 1)...)
	var bx, bw Buffer
	xr, wr := make([]float64, len(x)), make([]float64, c.n*c.k)
	wElem := 4
	switch c.in {
	case GemmF16:
		bx, bw, wElem = f16Buffer(t, d, x), f16Buffer(t, d, w), 2
		for i := range xr {
			xr[i] = float64(halfAt(bx, i))
		}
		for i := range wr {
			wr[i] = float64(halfAt(bw, c.wOff+i))
		}
	case GemmF32F16W:
		bx, bw, wElem = f32Buffer(t, d, x), f16Buffer(t, d, w), 2
		for i, v := range x {
			xr[i] = float64(v)
		}
		for i := range wr {
			wr[i] = float64(halfAt(bw, c.wOff+i))
		}
	default:
		bx, bw = f32Buffer(t, d, x), f32Buffer(t, d, w)
		for i, v := range x {
			xr[i] = float64(v)
		}
		for i := range wr {
			wr[i] = float64(w[c.wOff+i])
		}
	}
	op := GemmOp{Input: c.in, X: bx, W: bw, WOffset: wElem * c.wOff, M: c.m, N: c.n, K: c.k, Act: c.act}
	prologue := xr
	if c.ln {
		lw, lb := pseudo(c.k, 31, 0.5, 1.5), []float32(nil)
		op.LNWeight, op.Eps = f32Buffer(t, d, lw), 1e-5
		if c.lnB {
			lb = pseudo(c.k, 32, -0.5, 0.5)
			op.LNBias = f32Buffer(t, d, lb)
		}
		xf := make([]float32, len(xr))
		for i, v := range xr {
			xf[i] = float32(v)
		}
		prologue = layerNormRef(xf, lw, lb, c.m, c.k, 1e-5)
	}
	var br []float64
	if c.bias {
		b := pseudo(c.n, 13, -1, 1)
		op.Bias = f32Buffer(t, d, b)
		for _, v := range b {
			br = append(br, float64(v))
		}
	}
	if !c.noY {
		op.Y = f32Buffer(t, d, pseudo(c.m*c.n, 7, 5, 6))
	}
	if c.geglu {
		op.Gated = f32Buffer(t, d, make([]float32, c.m*c.n/2))
	}
	var res0 []float32
	if c.residual {
		res0 = pseudo(c.m*c.n, 41, -3, 3)
		op.Residual = f32Buffer(t, d, res0)
	}
	encode := func(cb CommandBuffer) error { return EncodeGemm(cb, kern, op) }
	if c.split > 1 {
		_, op.Slices = GemmKSlice(c.k, c.split)
		// Partial holds garbage: every element the reduction reads is
		// written by a slice first.
		op.Partial = f32Buffer(t, d, pseudo(op.Slices*c.m*c.n, 77, -1e3, 1e3))
		encode = func(cb CommandBuffer) error { return EncodeGemmSplitK(cb, kern, op) }
	}
	if err := run(t, d, encode); err != nil {
		t.Fatalf("%v: %v", c, err)
	}
	wantY, wantGated := gemmEpilogueRef(prologue, wr, br, c.m, c.n, c.k, c.act, c.geglu)
	// The LayerNorm'ed operand is rounded to float32 before the products.
	abs := 1e-6 * float64(c.k)
	if c.ln {
		abs *= 4
	}
	if op.Y != nil {
		if e, i := maxErr(readF32(op.Y, c.m*c.n), wantY, abs, 1e-5); e > 1 {
			t.Errorf("%v: Y element %d off by %.3g× tolerance", c, i, e)
		}
	}
	if c.geglu {
		if e, i := maxErr(readF32(op.Gated, c.m*c.n/2), wantGated, 4*abs, 1e-5); e > 1 {
			t.Errorf("%v: gated element %d off by %.3g× tolerance", c, i, e)
		}
	}
	if c.residual {
		want := make([]float64, len(wantY))
		for i, v := range wantY {
			want[i] = float64(res0[i]) + v
		}
		if e, i := maxErr(readF32(op.Residual, c.m*c.n), want, abs, 1e-5); e > 1 {
			t.Errorf("%v: residual element %d off by %.3g× tolerance", c, i, e)
		}
	}
}

// TestGemmFusedEmu runs the fused GEMM variants on ragged shapes under all
// three schedules. LAYA_METAL_EMU_SWEEP=1 runs the full sweep (M = 1, 7,
// 93, 97, 200 against three N×K and every input kind) under the forward
// schedule.
func TestGemmFusedEmu(t *testing.T) {
	for _, s := range emu.Schedules {
		d := openEmu(t, emu.Options{Schedule: s}, "kernels")
		kern := NewKernels(d)
		for _, c := range gemmSweep(false) {
			runGemmCase(t, d, kern, c)
		}
		for _, c := range splitSweep() {
			runGemmCase(t, d, kern, c)
		}
	}
	if os.Getenv("LAYA_METAL_EMU_SWEEP") == "1" {
		d := openEmu(t, emu.Options{}, "kernels")
		kern := NewKernels(d)
		for _, c := range gemmSweep(true) {
			runGemmCase(t, d, kern, c)
		}
	}
}

// TestGemmRealShapesEmu (LAYA_METAL_EMU_REAL_SHAPES=1) runs each encoder
// GEMM once at the real English (ModernBERT-large) and multilingual
// (mmBERT-base) shapes for a 93-token request, fp16 weights as stored.
func TestGemmRealShapesEmu(t *testing.T) {
	if os.Getenv("LAYA_METAL_EMU_REAL_SHAPES") != "1" {
		t.Skip("set LAYA_METAL_EMU_REAL_SHAPES=1 to run the GEMMs at the real model shapes (slow)")
	}
	d := openEmu(t, emu.Options{}, "kernels")
	kern := NewKernels(d)
	for _, dims := range [][2]int{{1024, 2624}, {768, 1152}} {
		h, inner := dims[0], dims[1]
		for _, c := range []gemmCase{
			{in: GemmF32F16W, m: 93, n: 3 * h, k: h, ln: true},
			{in: GemmF32F16W, m: 93, n: h, k: h, residual: true, noY: true},
			{in: GemmF32F16W, m: 93, n: 2 * inner, k: h, ln: true, geglu: true, noY: true},
			{in: GemmF32F16W, m: 93, n: h, k: inner, residual: true, noY: true},
			// Wo and Wo2 split as the stream splits them for an M3 Max's
			// 120 threadgroup slots (Backend.SetSplitK, laya-bench --split-k).
			{in: GemmF32F16W, m: 93, n: h, k: h, residual: true, noY: true, split: GemmSplitSlices(93, h, h, false, 120)},
			{in: GemmF32F16W, m: 93, n: h, k: inner, residual: true, noY: true, split: GemmSplitSlices(93, h, inner, false, 120)},
		} {
			runGemmCase(t, d, kern, c)
		}
	}
}

// kernelRecorder records the kernel of each dispatch.
type kernelRecorder struct {
	CommandBuffer
	kernels []string
}

func (r *kernelRecorder) Dispatch(p Pipeline, groups, threads Size3, args ...Arg) error {
	r.kernels = append(r.kernels, p.Kernel())
	return r.CommandBuffer.Dispatch(p, groups, threads, args...)
}

// EncodeGemm takes the GEMV kernels for M ≤ 8 unless a LayerNorm prologue
// or a GeGLU needs the tiles.
func TestGemmPicksGemv(t *testing.T) {
	d := openEmu(t, emu.Options{}, "kernels")
	kern := NewKernels(d)
	buf := f32Buffer(t, d, make([]float32, 4096))
	for _, c := range []struct {
		op   GemmOp
		want string
	}{
		{GemmOp{Input: GemmF32, X: buf, W: buf, Y: buf, M: 8, N: 16, K: 16}, "gemv_f32"},
		{GemmOp{Input: GemmF32, X: buf, W: buf, Y: buf, M: 9, N: 16, K: 16}, "gemm_f32"},
		{GemmOp{Input: GemmF32, X: buf, W: buf, Y: buf, M: 1, N: 16, K: 16, LNWeight: buf}, "gemm_f32"},
		{GemmOp{Input: GemmF32, X: buf, W: buf, Y: buf, M: 1, N: 16, K: 16, Gated: f32Buffer(t, d, make([]float32, 64))}, "gemm_f32"},
	} {
		if err := run(t, d, func(cb CommandBuffer) error {
			r := &kernelRecorder{CommandBuffer: cb}
			err := EncodeGemm(r, kern, c.op)
			if len(r.kernels) != 1 || r.kernels[0] != c.want {
				t.Errorf("M=%d ln=%v geglu=%v: dispatched %v, want %s", c.op.M, c.op.LNWeight != nil, c.op.Gated != nil, r.kernels, c.want)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// The fused GEMM, GEMV and flash-attention variants once more under
// AddressSanitizer, with every buffer exactly as long as its operand: a
// vector load or a store past an edge fails the run with the .metal line.
func TestFusedKernelsASanEmu(t *testing.T) {
	d := openEmu(t, emu.Options{ASan: true}, "kernels-asan")
	kern := NewKernels(d)
	for _, c := range []gemmCase{
		{in: GemmF32F16W, m: 37, n: 70, k: 44, ln: true, lnB: true, residual: true},
		{in: GemmF32F16W, m: 5, n: 2 * 35, k: 40, ln: true, geglu: true},
		{in: GemmF32, m: 33, n: 65, k: 36, bias: true, act: ActGELU, wOff: 1},
		{in: GemmF16, m: 3, n: 17, k: 44, bias: true, residual: true, noY: true},
		{in: GemmF32F16W, m: 6, n: 9, k: 13, act: ActReLU},
		{in: GemmF32F16W, m: 37, n: 70, k: 300, ln: true, residual: true, split: 3},
		{in: GemmF32, m: 9, n: 2 * 33, k: 97, geglu: true, bias: true, wOff: 1, split: 2},
	} {
		runGemmCase(t, d, kern, c)
	}
	runAttentionCase(t, d, kern, attentionCase{lengths: []int{40, 9}, seqLen: 40, heads: 2, headDim: 16, sliding: true, radius: 7, rope: true}, true)
}

// A split-K GEMM is bit-identical from run to run, whatever order its
// threadgroups run in: two runs under each of the emulator's schedules
// (forward, reverse, shuffled) give the same bits for Y, the GeGLU output
// and the residual.
func TestGemmSplitKDeterministicEmu(t *testing.T) {
	var first []uint32
	for _, s := range emu.Schedules {
		d := openEmu(t, emu.Options{Schedule: s}, "kernels")
		kern := NewKernels(d)
		for run := 0; run < 2; run++ {
			bits := splitKBits(t, d, kern)
			if first == nil {
				first = bits
				continue
			}
			for i := range bits {
				if bits[i] != first[i] {
					t.Fatalf("schedule %v run %d: element %d is %#x, the first run gave %#x", s, run, i, bits[i], first[i])
				}
			}
		}
	}
}

// splitKBits runs one split-K GEMM per epilogue kind and returns the bits
// of every output.
func splitKBits(t *testing.T, d Device, kern *Kernels) []uint32 {
	t.Helper()
	const m, n, k = 97, 70, 1000
	x, w := f32Buffer(t, d, pseudo(m*k, 3, -2, 2)), f16Buffer(t, d, pseudo(n*k, 4, -1, 1))
	bias := f32Buffer(t, d, pseudo(n, 5, -1, 1))
	_, slices := GemmKSlice(k, 5)
	var out []uint32
	for _, op := range []GemmOp{
		{Y: f32Buffer(t, d, make([]float32, m*n)), Act: ActGELU},
		{Residual: f32Buffer(t, d, pseudo(m*n, 6, -1, 1))},
		{Gated: f32Buffer(t, d, make([]float32, m*n/2))},
	} {
		op.Input, op.X, op.W, op.Bias, op.M, op.N, op.K = GemmF32F16W, x, w, bias, m, n, k
		op.Slices, op.Partial = slices, f32Buffer(t, d, make([]float32, slices*m*n))
		if err := run(t, d, func(cb CommandBuffer) error { return EncodeGemmSplitK(cb, kern, op) }); err != nil {
			t.Fatal(err)
		}
		for _, b := range []Buffer{op.Y, op.Residual, op.Gated} {
			if b != nil {
				for _, v := range readF32(b, b.Len()/4) {
					out = append(out, math.Float32bits(v))
				}
			}
		}
	}
	return out
}

// KernelThreadgroupMemory, which the plan's time model reads, is what the
// compiled kernels declare.
func TestKernelThreadgroupMemory(t *testing.T) {
	d := openEmu(t, emu.Options{}, "kernels")
	for _, kernel := range []string{"gemm_f32", "gemm_f16", "gemm_f32_f16w", "gemv_f32", "gemm_reduce_f32",
		"attention_flash_f32", "attention_f32", "layernorm_f32", "softmax_f32", "vector_add", "gather_rows_f16"} {
		p, err := d.Pipeline(kernel)
		if err != nil {
			t.Fatal(err)
		}
		sp, ok := p.(interface{ StaticThreadgroupMemory() int })
		if !ok {
			t.Fatalf("%s: the emulator's pipeline does not report its threadgroup memory", kernel)
		}
		if got, want := KernelThreadgroupMemory(kernel), sp.StaticThreadgroupMemory(); got != want {
			t.Errorf("%s: KernelThreadgroupMemory = %d bytes, the compiled kernel declares %d", kernel, got, want)
		}
	}
}
