package cpu

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/laya-metal/laya/backend"
)

// TestRecordKernelTime holds the kernel timing to the calls a GEMM makes:
// while on, every block the outer-product kernel computes is counted (8 ×
// 48 × k multiply-adds a call, a ragged block as a whole one), at one and
// at several workers; off, nothing is.
func TestRecordKernelTime(t *testing.T) {
	useGemmKernel(t, gemmKernel{name: "outer-go", tile: gemmTile, outer: outerBlockGo})
	t.Cleanup(func() { recordKernelTime(false) })
	rng := rand.New(rand.NewPCG(31, 32))
	for _, c := range []struct{ m, n, k, workers int }{
		{96, 40, 32, 1},  // one tile pair, five blocks (the last of 8 rows)
		{100, 37, 16, 1}, // a ragged tile and a ragged block
		{300, 300, 24, 3},
	} {
		be := New()
		be.workers = c.workers
		w := uploadRandom(t, be, backend.F32, c.n, c.k, rng)
		s := be.NewStream().(*Stream)
		x := s.FromHost(c.m, c.k, randomValues(rng, c.m*c.k))
		y := s.New(c.m, c.n)

		recordKernelTime(true)
		s.Linear(y, x, w, nil, backend.Identity)
		s.runPending()
		got := kernelTimes()
		recordKernelTime(false)
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		// Every (8-row block of a panel, 48-token tile) pair is one call,
		// however the plan cuts panels and rows (panels and row blocks are
		// multiples of 8 and 48 but for the last).
		panel, unitM := gemmUnitPlan(c.m, c.n, outerPanel, false, c.workers)
		calls := int64(0)
		for n0 := 0; n0 < c.n; n0 += panel {
			blocks := (min(panel, c.n-n0) + outerMR - 1) / outerMR
			for m0 := 0; m0 < c.m; m0 += unitM {
				calls += int64(blocks * ((min(unitM, c.m-m0) + outerNR - 1) / outerNR))
			}
		}
		if got.Calls != calls || got.FLOPs != float64(calls)*2*outerMR*outerNR*float64(c.k) {
			t.Errorf("%+v: recorded %d calls, %g FLOPs; want %d calls, %g", c, got.Calls, got.FLOPs, calls, float64(calls)*2*outerMR*outerNR*float64(c.k))
		}
		if got.Busy <= 0 || got.GFLOPs() <= 0 {
			t.Errorf("%+v: busy %v, %g GFLOP/s", c, got.Busy, got.GFLOPs())
		}

		// Off: nothing more is added.
		s.Linear(y, x, w, nil, backend.Identity)
		s.runPending()
		if after := kernelTimes(); after != got {
			t.Errorf("%+v: recording off, the totals moved from %+v to %+v", c, got, after)
		}
	}
}

// TestHotKernelGFLOPs: where this build has the kernel it runs and reports
// a speed; elsewhere it says so.
func TestHotKernelGFLOPs(t *testing.T) {
	g, ok := HotKernelGFLOPs(2 * time.Millisecond)
	if ok != (simdGemmOuter() != nil) {
		t.Fatalf("ok %v, but simdGemmOuter() != nil is %v", ok, simdGemmOuter() != nil)
	}
	if ok && !(g > 0) {
		t.Fatalf("%g GFLOP/s", g)
	}
}
