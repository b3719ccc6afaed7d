package cuda_test

import (
	"context"
	_ "embed"
	"errors"
	"math"
	"testing"

	"github.com/laya-metal/laya/internal/half"
	"github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/cuda"
	"github.com/laya-metal/laya/metal/emu"
)

// The shim semantics (msl_cuda.h) are pinned by one test kernel that the
// emulator (here, with clang) and the CUDA device (on a GPU host) both run
// against the same values computed below in Go: simdgroup functions on full
// and partial simdgroups and in divergent code, half promotion and
// rounding, function constants, threadgroup memory with a barrier, vector
// sizes, fast and precise math, simdgroup_matrix in Apple's lane layout.

//go:embed testdata/shimtest.metal
var shimSource string

var shimSources = []metal.KernelSource{{Name: "testdata/shimtest.metal", Text: shimSource}}

const (
	shimThreads = 80
	shimGroups  = 2
	shimRecord  = 16
	shimN       = 7
)

// shimWant computes what shim_test writes for thread tid of group gx.
func shimWant(gx, tid int) []float64 {
	simd, lane := tid/32, tid%32
	n := min(32, shimThreads-simd*32)
	base := float64(simd * 100)
	v := func(l int) float64 { return float64(l+1) + base }
	w := make([]float64, shimRecord)
	for l := 0; l < n; l++ {
		w[0] += v(l)
		w[1] = max(w[1], v(l))
		if l < lane {
			w[2] += v(l)
		}
		if l%2 == 0 && lane%2 == 0 {
			w[5] += v(l)
		}
	}
	w[3] = v(lane ^ 1)
	w[4] = v(3)
	if lane%2 != 0 {
		w[5] = -1
	}
	small := half.Float16ToFloat32(half.Float32ToFloat16(0.0003))
	w[6] = 1
	w[7] = float64(float32(0.1) + small)
	w[8] = 7
	w[9] = 5 + 0.5 + 1000
	t2 := shimThreads - 1 - tid
	w[10] = float64(t2%32+1) + float64(t2/32*100)
	w[11] = 6 + float64(gx)*1000
	w[12] = 1 + shimN
	w[13] = 15 + 16*100 + 8*1000
	w[14] = 1 + max(float64(lane), 10)
	if lane > 7 {
		w[14]++
	}
	return w
}

func runShim(t *testing.T, dev metal.Device) {
	p, err := dev.Pipeline("shim_test", metal.Constant{Index: 0, Value: int32(5)}, metal.Constant{Index: 1, Value: true})
	if err != nil {
		t.Fatal(err)
	}
	out, err := dev.NewBuffer(4 * shimRecord * shimThreads * shimGroups)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	cb, _ := dev.NewCommandBuffer()
	if err := cb.Dispatch(p, metal.Size3{X: shimGroups, Y: 1, Z: 1}, metal.Size3{X: shimThreads, Y: 1, Z: 1},
		metal.Arg{Index: 0, Buffer: out}, metal.Arg{Index: 1, Bytes: u32(shimN)}); err != nil {
		t.Fatal(err)
	}
	if _, err := cb.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := floats(out.Bytes())
	names := []string{"simd_sum", "simd_max", "simd_prefix_exclusive_sum", "simd_shuffle_xor", "simd_broadcast",
		"divergent simd_sum", "half+half+half", "half*float+half", "half*int+half", "function constants",
		"threadgroup memory", "simdgroups_per_threadgroup/group", "exp fast/precise", "vectors", "select/max", "zero"}
	for gx := 0; gx < shimGroups; gx++ {
		for tid := 0; tid < shimThreads; tid++ {
			want := shimWant(gx, tid)
			for j, w := range want {
				g := float64(got[(gx*shimThreads+tid)*shimRecord+j])
				tol := 0.0
				if j == 12 {
					tol = 1e-5
				}
				if math.Abs(g-w) > tol {
					t.Errorf("group %d thread %d: %s = %v, want %v", gx, tid, names[j], g, w)
				}
			}
		}
	}

	// simdgroup_matrix.
	pm, err := dev.Pipeline("mma_test")
	if err != nil {
		t.Fatal(err)
	}
	var a, b, c [64]float32
	for i := range a {
		a[i], b[i], c[i] = float32(i%7-3), float32(i%5-2), float32(i)
	}
	bufs := make([]metal.Buffer, 4)
	for i, v := range [][]float32{a[:], b[:], c[:], make([]float32, 128)} {
		if bufs[i], err = dev.NewBuffer(4 * len(v)); err != nil {
			t.Fatal(err)
		}
		defer bufs[i].Release()
		putFloats(bufs[i].Bytes(), v)
	}
	cb, _ = dev.NewCommandBuffer()
	if err := cb.Dispatch(pm, metal.Size3{X: 1, Y: 1, Z: 1}, metal.Size3{X: 32, Y: 1, Z: 1},
		metal.Arg{Index: 0, Buffer: bufs[0]}, metal.Arg{Index: 1, Buffer: bufs[1]}, metal.Arg{Index: 2, Buffer: bufs[2]}, metal.Arg{Index: 3, Buffer: bufs[3]}); err != nil {
		t.Fatal(err)
	}
	if _, err := cb.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	d := floats(bufs[3].Bytes())
	for r := 0; r < 8; r++ {
		for col := 0; col < 8; col++ {
			want := c[col*8+r] // C was loaded transposed
			for k := 0; k < 8; k++ {
				want += a[r*8+k] * b[k*8+col]
			}
			if d[r*8+col] != want || d[64+r*8+col] != want {
				t.Errorf("D[%d][%d] = %v (lane coordinates), %v (simdgroup_store), want %v", r, col, d[r*8+col], d[64+r*8+col], want)
			}
		}
	}
}

func TestShimCUDA(t *testing.T) {
	runShim(t, openDevice(t, cuda.Options{Sources: shimSources}))
}

func TestShimEmulator(t *testing.T) {
	for _, s := range emu.Schedules {
		t.Run(s.String(), func(t *testing.T) {
			dev, err := emu.Open(emu.Options{Sources: shimSources, Schedule: s})
			if errors.Is(err, emu.ErrNoClang) {
				t.Skipf("no clang for the emulator: %v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer dev.Close()
			runShim(t, dev)
		})
	}
}
