//go:build darwin

package metal_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/laya-metal/laya/weights"

	. "github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/emu"
)

// TestDeviceKernels runs the kernel set of the emulator tests (vector add,
// softmax, GEMM through the shared dispatch functions of kernel_*.go) on the
// Apple GPU, holds each result to the float64 Go reference with the
// emulator tests' tolerances, and, where clang can build the emulator here,
// compares the GPU with the emulator output too. It logs a short report:
// device, MSL version, per-kernel worst error and GPU time.
func TestDeviceKernels(t *testing.T) {
	gpu, err := OpenSystemDefault()
	if err != nil {
		t.Fatalf("OpenSystemDefault: %v", err)
	}
	defer gpu.Close()
	langVersion, mathMode := ExportSystemInfo(gpu)

	emuDev, emuErr := emu.Open(emu.Options{})
	switch {
	case errors.Is(emuErr, emu.ErrNoClang):
		t.Logf("no clang: skipping the GPU-vs-emulator comparison (%v)", emuErr)
	case emuErr != nil:
		t.Errorf("emu.Open: %v (the GPU is still checked against the Go references)", emuErr)
	default:
		defer emuDev.Close()
	}

	type report struct {
		refErr, emuDiff float64 // worst error / tolerance (≤ 1 passes)
		gpu             time.Duration
		cases           int
	}
	reports := map[string]*report{}
	// check runs one case on the GPU (and the emulator), then compares.
	check := func(kernel, label string, n int, want []float64, abs, rel float64,
		setup func(d Device) (encode func(cb CommandBuffer, k *Kernels) error, out func() []float32)) {
		t.Helper()
		r := reports[kernel]
		if r == nil {
			r = &report{}
			reports[kernel] = r
		}
		encode, out := setup(gpu)
		cb, err := gpu.NewCommandBuffer()
		if err != nil {
			t.Fatal(err)
		}
		if err := encode(cb, NewKernels(gpu)); err != nil {
			t.Fatalf("%s %s: encode: %v", kernel, label, err)
		}
		if err := cb.Commit(); err != nil {
			t.Fatal(err)
		}
		timing, err := cb.Wait(context.Background())
		if err != nil {
			t.Fatalf("%s %s: GPU: %v", kernel, label, err)
		}
		got := out()
		e, at := maxErr(got, want, abs, rel)
		if e > 1 {
			t.Errorf("%s %s: GPU element %d = %g, reference %g (%.3g× tolerance)", kernel, label, at, got[at], want[at], e)
		}
		r.refErr = max(r.refErr, e)
		r.gpu += timing.GPUTime()
		r.cases++
		if emuDev == nil {
			return
		}
		emuEncode, emuOut := setup(emuDev)
		if err := run(t, emuDev, func(cb CommandBuffer) error { return emuEncode(cb, NewKernels(emuDev)) }); err != nil {
			t.Fatalf("%s %s: emulator: %v", kernel, label, err)
		}
		emuGot := emuOut()
		emuWant := make([]float64, len(emuGot))
		for i, v := range emuGot {
			emuWant[i] = float64(v)
		}
		// Both are within tolerance of the reference, so within twice of
		// each other.
		d, at := maxErr(got[:n], emuWant[:n], abs, rel)
		if d > 2 {
			t.Errorf("%s %s: GPU %g vs emulator %g at %d (%.3g× tolerance)", kernel, label, got[at], emuGot[at], at, d)
		}
		r.emuDiff = max(r.emuDiff, d)
	}

	for _, n := range []int{1, 33, 1000, 4099} {
		a, b := pseudo(n, 1, -10, 10), pseudo(n, 2, -10, 10)
		check("vector_add", fmt.Sprintf("n=%d", n), n, vectorAddRef(a, b), 0, 6e-8,
			func(d Device) (func(CommandBuffer, *Kernels) error, func() []float32) {
				ba, bb, bo := f32Buffer(t, d, a), f32Buffer(t, d, b), f32Buffer(t, d, make([]float32, n))
				return func(cb CommandBuffer, k *Kernels) error { return VectorAdd(cb, k, ba, bb, bo, n) },
					func() []float32 { return readF32(bo, n) }
			})
	}

	const rows = 3
	softmaxPipe, err := gpu.Pipeline("softmax_f32")
	if err != nil {
		t.Fatal(err)
	}
	for _, cols := range []int{1, 33, 1000, 4096} {
		in := pseudo(rows*cols, uint64(cols), -8, 8)
		want := softmaxRef(in, rows, cols)
		for _, threads := range []int{32, 96, 256, 1024, SoftmaxThreads(cols)} {
			if threads > softmaxPipe.MaxThreadsPerThreadgroup() {
				t.Logf("softmax_f32: this GPU allows %d threads per threadgroup; skipping tg=%d", softmaxPipe.MaxThreadsPerThreadgroup(), threads)
				continue
			}
			check("softmax_f32", fmt.Sprintf("cols=%d tg=%d", cols, threads), rows*cols, want, 1e-9, 2e-6,
				func(d Device) (func(CommandBuffer, *Kernels) error, func() []float32) {
					bin, bout := f32Buffer(t, d, in), f32Buffer(t, d, make([]float32, rows*cols))
					return func(cb CommandBuffer, k *Kernels) error {
							return softmaxThreads(cb, k, bin, bout, rows, cols, threads)
						},
						func() []float32 { return readF32(bout, rows*cols) }
				})
		}
	}

	for _, c := range []struct {
		m, n, k int
		in      GemmInput
		bias    bool
	}{
		{45, 70, 40, GemmF32, false}, {45, 70, 40, GemmF16, true},
		{64, 96, 128, GemmF16, false}, {64, 96, 128, GemmF32, true},
		{1, 33, 17, GemmF32, true}, {1, 33, 17, GemmF16, false},
		{200, 300, 768, GemmF16, true},
	} {
		x, w := pseudo(c.m*c.k, 3, -1, 1), pseudo(c.n*c.k, 4, -1, 1)
		var bias []float32
		var biasRef []float64
		if c.bias {
			bias = pseudo(c.n, 5, -1, 1)
			for _, v := range bias {
				biasRef = append(biasRef, float64(v))
			}
		}
		// The reference sees the inputs as the kernel does (half-rounded
		// for gemm_f16).
		xr, wr := make([]float64, len(x)), make([]float64, len(w))
		if c.in == GemmF16 {
			for i := range x {
				xr[i] = float64(weights.Float16ToFloat32(weights.Float32ToFloat16(x[i])))
			}
			for i := range w {
				wr[i] = float64(weights.Float16ToFloat32(weights.Float32ToFloat16(w[i])))
			}
		} else {
			for i := range x {
				xr[i] = float64(x[i])
			}
			for i := range w {
				wr[i] = float64(w[i])
			}
		}
		name := map[GemmInput]string{GemmF32: "gemm_f32", GemmF16: "gemm_f16"}[c.in]
		check(name, fmt.Sprintf("%d×%d×%d bias=%v", c.m, c.n, c.k, c.bias), c.m*c.n,
			gemmRef(xr, wr, biasRef, c.m, c.n, c.k), 1e-6*float64(c.k), 1e-6,
			func(d Device) (func(CommandBuffer, *Kernels) error, func() []float32) {
				var bx, bw, bb Buffer
				if c.in == GemmF16 {
					bx, bw = f16Buffer(t, d, x), f16Buffer(t, d, w)
				} else {
					bx, bw = f32Buffer(t, d, x), f32Buffer(t, d, w)
				}
				if c.bias {
					bb = f32Buffer(t, d, bias)
				}
				by := f32Buffer(t, d, make([]float32, c.m*c.n))
				return func(cb CommandBuffer, k *Kernels) error { return Gemm(cb, k, c.in, bx, bw, bb, by, c.m, c.n, c.k) },
					func() []float32 { return readF32(by, c.m*c.n) }
			})
	}

	t.Logf("device %q, MSL %s, math %s", gpu.Name(), langVersion, mathMode)
	for _, kernel := range []string{"vector_add", "softmax_f32", "gemm_f32", "gemm_f16"} {
		r := reports[kernel]
		if r == nil {
			continue
		}
		emuCol := "emulator: not run"
		if emuDev != nil {
			emuCol = fmt.Sprintf("GPU-vs-emulator %.3g× tol", r.emuDiff)
		}
		t.Logf("%-12s %2d cases, max |err| %.3g× tolerance, %s, GPU %v", kernel, r.cases, r.refErr, emuCol, r.gpu)
	}
}
