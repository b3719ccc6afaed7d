//go:build linux || darwin

package metal_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/laya-metal/laya/metal/internal/kernelref"
	"github.com/laya-metal/laya/weights"

	. "github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/emu"
)

func halfAt(b Buffer, i int) float32 {
	return weights.Float16ToFloat32(binary.LittleEndian.Uint16(b.Bytes()[2*i:]))
}

// checkGemm runs Gemm(in) on bx, bw (with a pseudo-random bias when bias
// is set) and holds it to gemmRef on the float64 inputs xr, wr the kernel
// sees: the check of every input kind's test.
func checkGemm(t *testing.T, d Device, kern *Kernels, name string, in GemmInput, bx, bw Buffer, xr, wr []float64, m, n, k int, bias bool) {
	t.Helper()
	var bb Buffer
	var br []float64
	if bias {
		b := pseudo(n, 5, -1, 1)
		bb = f32Buffer(t, d, b)
		for _, v := range b {
			br = append(br, float64(v))
		}
	}
	by := f32Buffer(t, d, make([]float32, m*n))
	if err := run(t, d, func(cb CommandBuffer) error { return Gemm(cb, kern, in, bx, bw, bb, by, m, n, k) }); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	// fp32 accumulation of k products of magnitude ≤ 1.
	if e, i := maxErr(readF32(by, m*n), gemmRef(xr, wr, br, m, n, k), 1e-6*float64(k), 1e-6); e > 1 {
		t.Errorf("%s: element %d off by %.3g× tolerance", name, i, e)
	}
}

// gemm_f32_f16w: float activations against stored half weights, as the
// backend's Linear runs fp16 checkpoints.
func TestGemmMixedEmu(t *testing.T) {
	cases := []struct {
		m, n, k int
		bias    bool
	}{{1, 33, 17, true}, {45, 70, 40, false}, {64, 96, 128, true}}
	for _, s := range emu.Schedules {
		d := openEmu(t, emu.Options{Schedule: s}, "kernels")
		kern := NewKernels(d)
		for _, c := range cases {
			name := fmt.Sprintf("%s %+v", s, c)
			x, w := pseudo(c.m*c.k, 3, -1, 1), pseudo(c.n*c.k, 4, -1, 1)
			bx, bw := f32Buffer(t, d, x), f16Buffer(t, d, w)
			xr, wr := make([]float64, len(x)), make([]float64, len(w))
			for i, v := range x {
				xr[i] = float64(v)
			}
			for i := range w {
				wr[i] = float64(halfAt(bw, i))
			}
			checkGemm(t, d, kern, name, GemmF32F16W, bx, bw, xr, wr, c.m, c.n, c.k, c.bias)
		}
	}
}

// gemmEpilogueRef is EncodeGemm's op in float64: act(X·Wᵀ + bias), and the
// GeGLU of that when geglu is set.
func gemmEpilogueRef(x, w, bias []float64, m, n, kd int, act Activation, geglu bool) (y, gated []float64) {
	return kernelref.GemmEpilogue(x, w, bias, m, n, kd, int(act), geglu)
}

// The fused epilogue (bias, activation, GeGLU) against float64, with W and
// the bias bound at offsets inside larger buffers as weights inside a
// wrapped safetensors mapping are. Sizes are ragged so that every tile edge
// and, for GeGLU, a half that ends inside a threadgroup's 16 columns, are
// crossed.
func TestGemmEpilogueEmu(t *testing.T) {
	cases := []struct {
		in      GemmInput
		m, n, k int
		act     Activation
		bias    bool
		geglu   bool
		wOff    int // elements of padding before W
		bOff    int // float32s of padding before the bias
	}{
		{GemmF32, 5, 33, 17, ActGELU, true, false, 3, 1},
		{GemmF32, 40, 70, 24, ActReLU, true, false, 0, 0},
		{GemmF32, 9, 64, 16, ActGELU, false, false, 7, 0},
		{GemmF32F16W, 33, 50, 40, ActGELU, true, false, 5, 2},
		{GemmF32F16W, 17, 2 * 23, 31, ActIdentity, false, true, 1, 0},
		{GemmF32, 35, 2 * 40, 20, ActIdentity, true, true, 0, 3},
		{GemmF32F16W, 8, 2 * 16, 8, ActIdentity, true, true, 2, 1},
	}
	for _, s := range emu.Schedules {
		d := openEmu(t, emu.Options{Schedule: s}, "kernels")
		kern := NewKernels(d)
		for _, c := range cases {
			name := fmt.Sprintf("%s %+v", s, c)
			x := pseudo(c.m*c.k, 11, -2, 2)
			w := append(pseudo(c.wOff, 1, 9, 9), pseudo(c.n*c.k, 12, -1, 1)...)
			bx := f32Buffer(t, d, x)
			var bw Buffer
			wElem := 4
			wr := make([]float64, c.n*c.k)
			if c.in == GemmF32F16W {
				bw, wElem = f16Buffer(t, d, w), 2
				for i := range wr {
					wr[i] = float64(halfAt(bw, c.wOff+i))
				}
			} else {
				bw = f32Buffer(t, d, w)
				for i := range wr {
					wr[i] = float64(w[c.wOff+i])
				}
			}
			xr := make([]float64, len(x))
			for i, v := range x {
				xr[i] = float64(v)
			}
			op := GemmOp{Input: c.in, X: bx, W: bw, WOffset: wElem * c.wOff, M: c.m, N: c.n, K: c.k, Act: c.act}
			var br []float64
			if c.bias {
				b := append(pseudo(c.bOff, 2, 9, 9), pseudo(c.n, 13, -1, 1)...)
				op.Bias, op.BiasOffset = f32Buffer(t, d, b), 4*c.bOff
				for _, v := range b[c.bOff:] {
					br = append(br, float64(v))
				}
			}
			op.Y = f32Buffer(t, d, make([]float32, c.m*c.n))
			if c.geglu {
				op.Gated = f32Buffer(t, d, make([]float32, c.m*c.n/2))
			}
			if err := run(t, d, func(cb CommandBuffer) error { return EncodeGemm(cb, kern, op) }); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			wantY, wantGated := gemmEpilogueRef(xr, wr, br, c.m, c.n, c.k, c.act, c.geglu)
			if e, i := maxErr(readF32(op.Y, c.m*c.n), wantY, 1e-6*float64(c.k), 1e-5); e > 1 {
				t.Errorf("%s: Y element %d off by %.3g× tolerance", name, i, e)
			}
			if c.geglu {
				if e, i := maxErr(readF32(op.Gated, c.m*c.n/2), wantGated, 4e-6*float64(c.k), 1e-5); e > 1 {
					t.Errorf("%s: gated element %d off by %.3g× tolerance", name, i, e)
				}
			}
		}
	}
}

// The fused GeGLU must equal geglu_f32 run on the fused GEMM's own Y bit
// for bit: the backend swaps one for the other, and upstream's goldens were
// met by the unfused pair.
func TestGemmGeGLUMatchesUnfusedEmu(t *testing.T) {
	d := openEmu(t, emu.Options{}, "kernels")
	kern := NewKernels(d)
	const m, inner, kd = 19, 37, 24
	op := GemmOp{Input: GemmF32, X: f32Buffer(t, d, pseudo(m*kd, 21, -2, 2)), W: f32Buffer(t, d, pseudo(2*inner*kd, 22, -1, 1)),
		Bias: f32Buffer(t, d, pseudo(2*inner, 23, -1, 1)), Y: f32Buffer(t, d, make([]float32, m*2*inner)),
		Gated: f32Buffer(t, d, make([]float32, m*inner)), M: m, N: 2 * inner, K: kd}
	unfused := f32Buffer(t, d, make([]float32, m*inner))
	if err := run(t, d, func(cb CommandBuffer) error { return EncodeGemm(cb, kern, op) }); err != nil {
		t.Fatal(err)
	}
	if err := run(t, d, func(cb CommandBuffer) error { return GeGLU(cb, kern, op.Y, unfused, m, inner) }); err != nil {
		t.Fatal(err)
	}
	got, want := readF32(op.Gated, m*inner), readF32(unfused, m*inner)
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("gated[%d] = %v fused, %v unfused", i, got[i], want[i])
		}
	}
}

func TestEncodeGemmRejects(t *testing.T) {
	d := openEmu(t, emu.Options{}, "kernels")
	kern := NewKernels(d)
	buf := f32Buffer(t, d, make([]float32, 64))
	base := GemmOp{Input: GemmF32, X: buf, W: buf, Y: buf, M: 2, N: 4, K: 4}
	cases := []struct {
		name string
		edit func(op *GemmOp)
	}{
		{"odd N with GeGLU", func(op *GemmOp) { op.N, op.Gated = 3, buf }},
		{"GeGLU with GELU", func(op *GemmOp) { op.Gated, op.Act = buf, ActGELU }},
		{"unknown activation", func(op *GemmOp) { op.Act = ActReLU + 1 }},
		{"misaligned W offset", func(op *GemmOp) { op.WOffset = 2 }},
		{"W past its buffer", func(op *GemmOp) { op.WOffset = 4 * 60 }},
		{"misaligned bias offset", func(op *GemmOp) { op.Bias, op.BiasOffset = buf, 1 }},
	}
	for _, c := range cases {
		op := base
		c.edit(&op)
		wantInvalidDispatch(t, d, c.name, func(cb CommandBuffer) error { return EncodeGemm(cb, kern, op) })
	}
}

func TestGemmEmu(t *testing.T) {
	cases := []struct {
		m, n, k int
		in      GemmInput
		bias    bool
	}{
		{45, 70, 40, GemmF32, false},
		{45, 70, 40, GemmF16, true},
		{64, 96, 128, GemmF16, false},
		{64, 96, 128, GemmF32, true},
		{1, 33, 17, GemmF32, true},
		{1, 33, 17, GemmF16, false},
	}
	for _, s := range emu.Schedules {
		d := openEmu(t, emu.Options{Schedule: s}, "kernels")
		kern := NewKernels(d)
		for _, c := range cases {
			x, w := pseudo(c.m*c.k, 3, -1, 1), pseudo(c.n*c.k, 4, -1, 1)
			var bx, bw Buffer
			xr, wr := make([]float64, len(x)), make([]float64, len(w))
			if c.in == GemmF16 {
				bx, bw = f16Buffer(t, d, x), f16Buffer(t, d, w)
				// The reference sees the half-rounded inputs the kernel sees.
				for i := range x {
					xr[i] = float64(halfAt(bx, i))
				}
				for i := range w {
					wr[i] = float64(halfAt(bw, i))
				}
			} else {
				bx, bw = f32Buffer(t, d, x), f32Buffer(t, d, w)
				for i := range x {
					xr[i] = float64(x[i])
				}
				for i := range w {
					wr[i] = float64(w[i])
				}
			}
			checkGemm(t, d, kern, fmt.Sprintf("%s %+v", s, c), c.in, bx, bw, xr, wr, c.m, c.n, c.k, c.bias)
		}
	}
}
