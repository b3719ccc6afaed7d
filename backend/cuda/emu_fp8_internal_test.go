//go:build linux

package cuda

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/internal/half"
)

// decodeE5M2 and decodeE4M3 are the OCP FP8 formats' values, from their
// definitions: E5M2 is the top byte of an IEEE fp16 word; E4M3 has bias
// 7, subnormals m·2^-9, and only 0x7f (with either sign) for NaN.
func decodeE5M2(c byte) float64 { return float64(half.Float16ToFloat32(uint16(c) << 8)) }

func decodeE4M3(c byte) float64 {
	e, m := int(c>>3&15), float64(c&7)
	var v float64
	switch {
	case c&0x7f == 0x7f:
		v = math.NaN()
	case e == 0:
		v = math.Ldexp(m, -9)
	default:
		v = math.Ldexp(8+m, e-10)
	}
	if c&0x80 != 0 {
		v = -v
	}
	return v
}

// fp8Nearest is the byte nearest v among a format's finite codes (ties to
// the even code, whose mantissa ends in 0), the largest for anything past
// it, by search over every code: an independent reference for kernels.cu's
// rounding by bit arithmetic.
func fp8Nearest(v float64, decode func(byte) float64) byte {
	var sign byte
	if math.Signbit(v) {
		sign = 0x80
	}
	if math.IsNaN(v) {
		return sign | 0x7f
	}
	a := math.Abs(v)
	best, bestD, top := byte(0), math.Inf(1), byte(0)
	for c := byte(0); c < 0x80; c++ {
		d := decode(c)
		if math.IsNaN(d) || math.IsInf(d, 0) {
			continue
		}
		top = c
		diff := math.Abs(d - a)
		if diff < bestD || diff == bestD && c&1 == 0 {
			best, bestD = c, diff
		}
	}
	if math.IsInf(a, 0) {
		best = top
	}
	return sign | best
}

// TestFP8Reference holds the reference to what the formats' tables say:
// E5M2's largest 57344 and least subnormal 2^-16, E4M3's 448 and 2^-9, and
// a midpoint going to the even code.
func TestFP8Reference(t *testing.T) {
	for _, c := range []struct {
		v      float64
		decode func(byte) float64
		want   byte
	}{
		{57344, decodeE5M2, 0x7b}, {1e9, decodeE5M2, 0x7b}, {math.Ldexp(1, -16), decodeE5M2, 0x01}, {1, decodeE5M2, 0x3c},
		{1.125, decodeE5M2, 0x3c}, {1.375, decodeE5M2, 0x3e}, {-1.25, decodeE5M2, 0xbd},
		{448, decodeE4M3, 0x7e}, {1e9, decodeE4M3, 0x7e}, {math.Ldexp(1, -9), decodeE4M3, 0x01}, {1, decodeE4M3, 0x38},
		{1.0625, decodeE4M3, 0x38}, {1.1875, decodeE4M3, 0x3a}, {math.Ldexp(1.5, -10), decodeE4M3, 0x01},
	} {
		if got := fp8Nearest(c.v, c.decode); got != c.want {
			t.Errorf("nearest to %g: %#02x, want %#02x", c.v, got, c.want)
		}
	}
}

// fp8Probes are values that test a rounding: each format's boundaries
// (least subnormal, least normal, largest, past it), the midpoints around
// them and a binade's edges, their neighbours by one float32 ulp, signs,
// zero, NaN and infinities, then random magnitudes across both formats'
// ranges.
func fp8Probes(rng *rand.Rand) []float32 {
	var vs []float32
	for _, decode := range []func(byte) float64{decodeE5M2, decodeE4M3} {
		for c := byte(0); c < 0x7f; c++ {
			a, b := decode(c), decode(c+1)
			if math.IsNaN(b) || math.IsInf(b, 0) {
				b = 2 * a
			}
			for _, v := range []float64{a, (a + b) / 2} {
				f := float32(v)
				vs = append(vs, f, math.Nextafter32(f, 0), math.Nextafter32(f, float32(math.Inf(1))))
			}
		}
	}
	vs = append(vs, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)))
	for range 2000 {
		vs = append(vs, float32(math.Ldexp(1+rng.Float64(), rng.IntN(44)-22)))
	}
	n := len(vs)
	for i := range n {
		vs = append(vs, -vs[i])
	}
	return vs
}

// to_16's kind 4 (FP16X2 with its second term in FP8, Options.Lo8Rows)
// against the reference: the first term fp16, the second what that missed
// times lo8Scale rounded to E5M2, a byte each after the first term's m·k
// halves; and to_e4m3_scaled, the weights' FP8 copy, against the reference
// with the scale its largest magnitude over 448 makes.
func TestEmuFP8(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	probes := fp8Probes(rng)
	t.Run("to_16/kind=4", func(t *testing.T) {
		// Each probe as a value, and as a rest: 1 + probe/lo8Scale², whose
		// fp16 rounding (1, for the probes that float32 keeps there)
		// misses it by a rest that lo8Scale turns back into about the
		// probe over lo8Scale.
		var x []float32
		for _, p := range probes {
			if math.IsNaN(float64(p)) || math.IsInf(float64(p), 0) {
				continue
			}
			x = append(x, 1+p/lo8Scale/2048, p)
		}
		n := len(x)
		out := emuRun(t, [][]byte{make([]byte, 4*n), f32Bytes(x)},
			emuLaunch{name: "to_16", grid: [3]int{4, 1, 1}, threads: 128, args: []emuArg{emuBuf(0, 0), emuBuf(1, 0), emuVal(uint64(n)), emuInt(lo8Kind)}})
		checkLo8(t, x, out[0], n)
	})
	t.Run("to_e4m3_scaled", func(t *testing.T) {
		for _, amax := range []float32{448, 0.25, 3e-3, 7.5e3} {
			var x []float32
			for _, p := range probes {
				if f := float64(p); !math.IsNaN(f) && !math.IsInf(f, 0) && math.Abs(f) <= 448 {
					x = append(x, p*amax/448)
				}
			}
			x = append(x, -amax)
			n := len(x)
			out := emuRun(t, [][]byte{make([]byte, n), make([]byte, 4), f32Bytes(x)},
				emuLaunch{name: "to_e4m3_scaled", grid: [3]int{1, 1, 1}, threads: 1024, args: []emuArg{emuBuf(0, 0), emuBuf(1, 0), emuBuf(2, 0), emuVal(uint64(n))}})
			s := math.Float32frombits(binary.LittleEndian.Uint32(out[1]))
			if want := amax / 448; s != want {
				t.Fatalf("amax %g: scale %g, want %g", amax, s, want)
			}
			for i, v := range x {
				if got, want := out[0][i], fp8Nearest(float64(v/s), decodeE4M3); got != want {
					t.Fatalf("amax %g: [%d] %g/%g = %#02x, want %#02x (%g)", amax, i, v, s, got, want, decodeE4M3(want))
				}
			}
		}
	})
}

// checkLo8 checks a 16-bit copy h of y written as store16's kind 4: y's fp16
// rounding, then lo bytes on (after lo halves) what that missed times
// lo8Scale, rounded to E5M2, as the reference rounds it.
func checkLo8(t *testing.T, y []float32, h []byte, lo int) {
	t.Helper()
	for i, v := range y {
		hi := half.Float32ToFloat16(v)
		if got := binary.LittleEndian.Uint16(h[2*i:]); got != hi {
			t.Fatalf("first term [%d] = %#04x, want %#04x, the fp16 rounding of %g", i, got, hi, v)
		}
		rest := (v - half.Float16ToFloat32(hi)) * lo8Scale
		if got, want := h[2*lo+i], fp8Nearest(float64(rest), decodeE5M2); got != want {
			t.Fatalf("second term [%d] of %g: %#02x, want %#02x, E5M2 of %g", i, v, got, want, rest)
		}
	}
}

// A Linear of FP16X2 with its second term in FP8 (Options.Lo8Rows) on the
// emulated backend, against float64 of x by the fp16 weight every 16-bit
// precision reads: within a quarter of FP16's error (each correction keeps
// about 3 bits, so the second term takes off most of the first's), and off
// FP16X2's by what those 3 bits allow. With the weight resident the second
// term runs in FP8 (E4M3 weight copy); with a weight written on the stream,
// which has no FP8 copy, widened to fp16. Without a bias the two products
// stay stacked for the reader to add; with one the second is added onto
// the first in the GEMM (beta = 1). x spans magnitudes from 2^-6 to 2^6,
// so that the corrections use E5M2's range.
func TestEmuLo8Linear(t *testing.T) {
	const m, k, n = 48, 256, 40
	rng := rand.New(rand.NewPCG(3, 9))
	x, w := make([]float32, m*k), make([]float32, n*k)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * math.Exp2(float64(rng.IntN(13)-6)))
	}
	for i := range w {
		w[i] = float32(rng.NormFloat64() / 16)
	}
	bias := make([]float32, n)
	for i := range bias {
		bias[i] = float32(rng.NormFloat64())
	}
	want := make([]float64, m*n)
	for r := range m {
		for c := range n {
			for j := range k {
				want[r*n+c] += float64(x[r*k+j]) * float64(half.Float16ToFloat32(half.Float32ToFloat16(w[c*k+j])))
			}
		}
	}
	worst := func(got []float32, biased bool) float64 {
		e := 0.0
		for i, v := range got {
			b := 0.0
			if biased {
				b = float64(bias[i%n])
			}
			e = max(e, math.Abs(float64(v)-want[i]-b))
		}
		return e
	}
	base := emuOptions(t)
	run := func(opts Options, resident, biased bool) ([]float32, Stats) {
		opts.Driver, opts.NVRTC, opts.CUBLAS, opts.KernelCache, opts.GEMMBLAS = base.Driver, base.NVRTC, base.CUBLAS, base.KernelCache, base.GEMMBLAS
		be, err := Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		defer be.Close()
		raw := unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 4*len(w))
		W, err := be.Upload("w", backend.F32, n, k, raw)
		if err != nil {
			t.Fatal(err)
		}
		var B backend.Tensor
		if biased {
			if B, err = be.Upload("b", backend.F32, 1, n, unsafe.Slice((*byte)(unsafe.Pointer(&bias[0])), 4*n)); err != nil {
				t.Fatal(err)
			}
		}
		s := be.NewStream()
		defer s.Close()
		xt := s.FromHost(m, k, x)
		wt := W
		if !resident {
			wt = s.FromHost(n, k, w)
		}
		y := s.New(m, n)
		s.Linear(y, xt, wt, B, backend.Identity)
		got := make([]float32, m*n)
		if err := s.Read(context.Background(), y, got); err != nil {
			t.Fatal(err)
		}
		return got, be.(*Backend).Stats()
	}
	if base.GEMMBLAS {
		t.Skip("a real cuBLASLt in the loader path: the emulated one is not used")
	}
	fp16, _ := run(Options{Precision: FP16}, true, false)
	fp16x2, _ := run(Options{Precision: FP16X2}, true, false)
	eFP16, eFP16X2 := worst(fp16, false), worst(fp16x2, false)
	for _, resident := range []bool{true, false} {
		for _, biased := range []bool{false, true} {
			got, st := run(Options{Precision: FP16X2, Lo8Rows: m}, resident, biased)
			e := worst(got, biased)
			t.Logf("resident %v, bias %v: largest error %.3g; FP16 %.3g, FP16X2 %.3g; stats FP8 %d, widened %d", resident, biased, e,
				eFP16, eFP16X2, st.GEMMFP8, st.GEMMFP8Widened)
			if ran := st.GEMMFP8; resident && (ran != 1 || st.GEMMFP8Widened != 0) || !resident && (ran != 0 || st.GEMMFP8Widened != 1) {
				t.Errorf("resident %v, bias %v: FP8 GEMMs %d, widened %d", resident, biased, ran, st.GEMMFP8Widened)
			}
			if !(e <= eFP16/4) || !(e >= eFP16X2) {
				t.Errorf("resident %v, bias %v: largest error %.3g, want under a quarter of FP16's %.3g and no less than FP16X2's %.3g",
					resident, biased, e, eFP16, eFP16X2)
			}
		}
	}
	// One row fewer than Lo8Rows: both terms in fp16, as FP16X2 runs them.
	got, st := run(Options{Precision: FP16X2, Lo8Rows: m + 1}, true, false)
	if st.GEMMFP8+st.GEMMFP8Widened != 0 || !slices.Equal(got, fp16x2) {
		t.Errorf("a GEMM of fewer rows than lo8: %d FP8 GEMMs, outputs FP16X2's: %v", st.GEMMFP8+st.GEMMFP8Widened, slices.Equal(got, fp16x2))
	}
}
