package backend_test

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/laya-metal/laya/backend"
	_ "github.com/laya-metal/laya/backend/cpu"
)

func TestOpen(t *testing.T) {
	be, err := backend.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	if be.Name() != "cpu" {
		t.Errorf("Name() = %q", be.Name())
	}
	if !slices.Contains(backend.Names(), "cpu") {
		t.Errorf("Names() = %v, want cpu listed", backend.Names())
	}
	if _, err := backend.Open("tpu"); !errors.Is(err, backend.ErrUnknownBackend) {
		t.Errorf("Open(tpu): err = %v, want ErrUnknownBackend", err)
	}
}

func TestDType(t *testing.T) {
	for _, tt := range []struct {
		d    backend.DType
		name string
		size int
	}{{backend.F32, "F32", 4}, {backend.F16, "F16", 2}, {backend.BF16, "BF16", 2}} {
		if tt.d.String() != tt.name || tt.d.Size() != tt.size {
			t.Errorf("%v: String %q Size %d, want %q %d", tt.d, tt.d.String(), tt.d.Size(), tt.name, tt.size)
		}
	}
}

// RefineGate opens while few rows of the batches it is told of are
// near-ties, closes once more than MaxShare of them are (the caller, which
// then runs batches plain, still tells it their near-ties), and opens again
// once the share falls under ReopenShare, not before.
func TestRefineGate(t *testing.T) {
	var g backend.RefineGate
	for i := range 20 {
		if !g.Open(backend.SmallTokens) {
			t.Fatalf("batch %d: closed with no rows run again", i)
		}
		g.Observe(10, 0)
	}
	// Every row is a near-tie: the moving average passes MaxShare within a
	// few batches, and the gate stays closed while they last.
	opened := 0
	for range 40 {
		if g.Open(backend.SmallTokens) {
			opened++
		}
		g.Observe(10, 10)
	}
	if opened > 5 || g.Open(backend.SmallTokens) {
		t.Errorf("opened %d of 40 batches with every row a near-tie, want the first few only", opened)
	}
	// A share between ReopenShare and MaxShare keeps it closed.
	if !(0.22 > backend.ReopenShare && 0.22 <= backend.MaxShare) {
		t.Fatalf("22 near-ties of 100 are not between ReopenShare %g and MaxShare %g", backend.ReopenShare, backend.MaxShare)
	}
	for range 40 {
		g.Observe(100, 22) // between ReopenShare and MaxShare
		if g.Open(backend.SmallTokens) {
			t.Fatal("reopened at a share above ReopenShare")
		}
	}
	// The near-ties stop: the share falls and the gate opens for good.
	for range 20 {
		g.Observe(10, 0)
	}
	for i := range 10 {
		if !g.Open(backend.SmallTokens) {
			t.Fatalf("batch %d: closed after the near-ties stopped", i)
		}
		g.Observe(10, 0)
	}
	// A share at MaxShare keeps it open; odd reports change nothing.
	var h backend.RefineGate
	for range 50 {
		h.Observe(4, 1)
		h.Observe(0, 5)
		if !h.Open(backend.SmallTokens) {
			t.Fatal("closed at a share of exactly MaxShare")
		}
	}
}

// A small batch (one to three questions) saves less by running reduced
// than a large one, so the gate holds it to SmallShare: a share of
// near-ties between SmallShare and MaxShare runs large batches reduced and
// small ones plain, and small ones reopen under 0.75 SmallShare.
func TestRefineGateSmallBatches(t *testing.T) {
	small, large := backend.SmallTokens-1, backend.SmallTokens
	if !(0.15 > backend.SmallShare && 0.15 < backend.ReopenShare) {
		t.Fatalf("0.15 is not between SmallShare %g and ReopenShare %g", backend.SmallShare, backend.ReopenShare)
	}
	var g backend.RefineGate
	for range 40 {
		g.Observe(100, 15)
	}
	if g.Open(small) {
		t.Error("a small batch ran reduced at a share of 0.15")
	}
	if !g.Open(large) {
		t.Error("a large batch ran plain at a share of 0.15")
	}
	// Closed for a small batch, it reopens only under 0.75 SmallShare.
	g.Open(small)
	for range 40 {
		g.Observe(100, 9) // under SmallShare, over 0.75 of it
	}
	if g.Open(small) {
		t.Error("reopened for a small batch at a share above 0.75 SmallShare")
	}
	for range 40 {
		g.Observe(100, 5)
	}
	if !g.Open(small) {
		t.Error("closed for a small batch at a share of 0.05")
	}
}

// Spread is the most a gap between two logits moved, over the finite ones;
// RefineGate's Margin is the Refiner's until a spread over half of it is
// seen, then twice the largest spread, and never shrinks.
func TestRefineGateMargin(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, c := range []struct {
		reduced, exact []float32
		want           float32
	}{
		{[]float32{1, 2, 3}, []float32{1, 2, 3}, 0},
		{[]float32{1, 2, 3}, []float32{1.5, 2.5, 3.5}, 0}, // every logit moved alike: no gap moved
		{[]float32{1, 2, 3}, []float32{1.25, 2, 2.5}, 0.75},
		{[]float32{1, nan, 3}, []float32{1, 5, 3.5}, 0.5},
		{[]float32{1, 2, inf}, []float32{1, 2.5, 3}, 0.5},
		{[]float32{1, 2}, []float32{1, 2, 3}, 0},
		{nil, nil, 0},
	} {
		if got := backend.Spread(c.reduced, c.exact); math.Abs(float64(got-c.want)) > 1e-6 {
			t.Errorf("Spread(%v, %v) = %g, want %g", c.reduced, c.exact, got, c.want)
		}
	}
	var g backend.RefineGate
	for _, c := range []struct {
		observe, margin, want float32
	}{
		{0, 0.1, 0.1},
		{0.04, 0.1, 0.1}, // twice 0.04 is under the margin
		{0.08, 0.1, 0.16},
		{0.02, 0.1, 0.16}, // a smaller spread does not shrink it
		{nan, 0.1, 0.16},
		{inf, 0.1, 0.16},
		{-1, 0.1, 0.16},
		{0, 0.5, 0.5},
	} {
		g.ObserveSpread(c.observe)
		if got := g.Margin(c.margin); math.Abs(float64(got-c.want)) > 1e-6 {
			t.Errorf("after a spread of %g: Margin(%g) = %g, want %g", c.observe, c.margin, got, c.want)
		}
	}
}

// Finite: NaN and either infinity are not; the largest float32, the
// smallest subnormal and an empty row are.
func TestFinite(t *testing.T) {
	inf := float32(math.Inf(1))
	for _, c := range []struct {
		values []float32
		want   bool
	}{
		{nil, true},
		{[]float32{0, -1, math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32}, true},
		{[]float32{1, float32(math.NaN())}, false},
		{[]float32{inf, 1}, false},
		{[]float32{1, 2, -inf}, false},
	} {
		if got := backend.Finite(c.values); got != c.want {
			t.Errorf("Finite(%v) = %v, want %v", c.values, got, c.want)
		}
	}
}
