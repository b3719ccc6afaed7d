//go:build linux

package cuda

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/internal/half"
)

// A Linear of FP16X2 over its two terms side by side (Options.KCatRows) on
// the emulated backend, against float64 of x by the fp16 weight every
// 16-bit precision reads: as close as FP16X2's stacked products (within
// twice their error, where one float32 accumulator takes both terms
// instead of two added after), and far under FP16's (a sixty-fourth: the
// second term dropped, or multiplied by anything but the weight, leaves
// about FP16's). With the weight resident it reads kcatOf's copy, with
// one written on the stream a copy the GEMM makes (kind 6); x from the
// host is laid out by to_16 (kind 5). With a bias cuBLASLt's epilogue adds
// it; with GELU, or on cuBLAS, bias_act after. x spans magnitudes from 2^-6
// to 2^6.
func TestEmuKCatLinear(t *testing.T) {
	const m, k, n = 48, 264, 40
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
	gelu := func(v float64) float64 { return 0.5 * v * math.Erfc(-v/math.Sqrt2) }
	worst := func(got []float32, biased bool, act backend.Activation) float64 {
		e := 0.0
		for i, v := range got {
			y := want[i]
			if biased {
				y += float64(bias[i%n])
			}
			if act == backend.GELU {
				y = gelu(y)
			}
			e = max(e, math.Abs(float64(v)-y))
		}
		return e
	}
	base := emuOptions(t)
	if base.GEMMBLAS {
		t.Skip("a real cuBLASLt in the loader path: the emulated one is not used")
	}
	run := func(opts Options, resident, biased bool, act backend.Activation) ([]float32, Stats) {
		be, W := emuWeightBackend(t, base, opts, w, n, k)
		defer be.Close()
		var err error
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
		s.Linear(y, xt, wt, B, act)
		got := make([]float32, m*n)
		if err := s.Read(context.Background(), y, got); err != nil {
			t.Fatal(err)
		}
		return got, be.(*Backend).Stats()
	}
	fp16, _ := run(Options{Precision: FP16}, true, false, backend.Identity)
	fp16x2, _ := run(Options{Precision: FP16X2}, true, false, backend.Identity)
	eFP16, eFP16X2 := worst(fp16, false, backend.Identity), worst(fp16x2, false, backend.Identity)
	for _, resident := range []bool{true, false} {
		for _, c := range []struct {
			biased bool
			act    backend.Activation
			blas   bool // on cuBLAS (gemm=blas), bias_act after
		}{{false, backend.Identity, false}, {true, backend.Identity, false}, {true, backend.GELU, false}, {true, backend.Identity, true}} {
			got, st := run(Options{Precision: FP16X2, KCatRows: m, GEMMBLAS: c.blas}, resident, c.biased, c.act)
			e := worst(got, c.biased, c.act)
			t.Logf("resident %v, bias %v, %v, blas %v: largest error %.3g; FP16 %.3g, FP16X2 %.3g", resident, c.biased, c.act, c.blas, e,
				eFP16, eFP16X2)
			if st.GEMMKCat != 1 {
				t.Errorf("resident %v, bias %v, %v, blas %v: %d GEMMs over both terms side by side, want 1", resident, c.biased, c.act,
					c.blas, st.GEMMKCat)
			}
			if !(e <= 2*eFP16X2) || !(e <= eFP16/64) {
				t.Errorf("resident %v, bias %v, %v, blas %v: largest error %.3g, want within twice FP16X2's %.3g and a sixty-fourth of FP16's %.3g",
					resident, c.biased, c.act, c.blas, e, eFP16X2, eFP16)
			}
		}
	}
	// One row fewer than KCatRows: the stacked batch, as FP16X2 runs it.
	got, st := run(Options{Precision: FP16X2, KCatRows: m + 1}, true, false, backend.Identity)
	if st.GEMMKCat != 0 || !slices.Equal(got, fp16x2) {
		t.Errorf("a GEMM of fewer rows than kcat: %d side by side, outputs FP16X2's: %v", st.GEMMKCat, slices.Equal(got, fp16x2))
	}
}

// A weight whose copy twice a row finds no room on the device: its GEMMs
// take the stacked batch, the same bits as FP16X2 without kcat, instead of
// failing, and the backend counts the weight once.
// The emulated GPU shrinks to room for the weight's one copy (halfOf's)
// and not its doubled one while the Linears are recorded.
func TestEmuKCatNoRoom(t *testing.T) {
	const m, k, n = 40, 128, 48
	rng := rand.New(rand.NewPCG(4, 1))
	x, w := normals(rng, m*k), normals(rng, n*k)
	base := emuOptions(t)
	if base.GEMMBLAS {
		t.Skip("a real cuBLASLt in the loader path: the emulated one is not used")
	}
	setFree := emuSym(t, emuLib(t), "cuemu_set_free")
	restore := func() { purego.SyscallN(setFree, 0, 1) }
	defer restore()
	run := func(opts Options, room int64) ([]float32, []float32, Stats) {
		be, W := emuWeightBackend(t, base, opts, w, n, k)
		defer be.Close()
		s := be.NewStream()
		defer s.Close()
		xt := s.FromHost(m, k, x)
		y, z := s.New(m, n), s.New(m, n)
		if room > 0 {
			purego.SyscallN(setFree, uintptr(room), 0)
		}
		s.Linear(y, xt, W, nil, backend.Identity)
		s.Linear(z, xt, W, nil, backend.Identity)
		restore()
		got, again := make([]float32, m*n), make([]float32, m*n)
		if err := s.Read(context.Background(), y, got); err != nil {
			t.Fatal(err)
		}
		if err := s.Read(context.Background(), z, again); err != nil {
			t.Fatal(err)
		}
		return got, again, be.(*Backend).Stats()
	}
	want, _, _ := run(Options{Precision: FP16X2}, 0)
	// Room for one fp16 copy of w and a half, not two.
	got, again, st := run(Options{Precision: FP16X2, KCatRows: 1}, 3*n*k)
	if st.KCatNoRoom != 1 || st.GEMMKCat != 0 {
		t.Errorf("stats %+v: want one weight without room for its doubled copy, no GEMM over both terms side by side", st)
	}
	if !slices.Equal(got, want) || !slices.Equal(again, want) {
		t.Errorf("without room for the doubled copy the products differ from FP16X2's stacked batch")
	}
	// With room, the same Linears take it.
	if _, _, st := run(Options{Precision: FP16X2, KCatRows: 1}, 0); st.KCatNoRoom != 0 || st.GEMMKCat != 2 {
		t.Errorf("stats %+v: want two GEMMs over both terms side by side", st)
	}
}

// emuWeightBackend opens the emulated backend with opts (the libraries of
// base) and uploads w, n rows of k, as a resident float32 weight.
func emuWeightBackend(t *testing.T, base, opts Options, w []float32, n, k int) (backend.Backend, backend.Tensor) {
	t.Helper()
	opts.Driver, opts.NVRTC, opts.CUBLAS, opts.KernelCache = base.Driver, base.NVRTC, base.CUBLAS, base.KernelCache
	be, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	W, err := be.Upload("w", backend.F32, n, k, unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 4*len(w)))
	if err != nil {
		be.Close()
		t.Fatal(err)
	}
	return be, W
}
