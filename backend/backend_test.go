package backend_test

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"

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

// Past MaxShare the gate still opens for a batch whose measured costs say
// reducing pays: its reduced run plus the plain run of its share of
// near-tie tokens clearly under its plain run. The batch's own costs count
// from costMinRuns runs of its size class on, as the least of them (a run
// slowed by a capture says nothing); the near-ties' run is priced at the
// nearest measured class at or above their tokens, never scaled down. One
// batch in sixteen opened for cost alone runs plain; one in four of a size
// whose reduced run is unmeasured runs reduced.
func TestRefineGateCosts(t *testing.T) {
	const large = 4096 // tokens: fifty questions
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	// A third of the rows near-ties: past MaxShare, so the shares alone close.
	closedGate := func() *backend.RefineGate {
		g := new(backend.RefineGate)
		for range 40 {
			g.Observe(30, 10)
		}
		if g.Open(large) {
			t.Fatal("open at a share of a third with no costs observed")
		}
		return g
	}
	observe := func(g *backend.RefineGate, reduced bool, tokens int, v ...float64) {
		for _, m := range v {
			g.ObserveCost(reduced, tokens, ms(m))
		}
	}
	for _, c := range []struct {
		name                  string
		reduced, plain, again []float64 // ms at large, large and large/3 tokens
		againTokens           int
		want                  bool
	}{
		// 4 + 2.5 against 0.95·8 = 7.6.
		{"pays", []float64{4, 4, 4}, []float64{8, 8, 8}, []float64{2.5, 2.5, 2.5}, large / 3, true},
		// 4 + 3.8 is under 8 but not under 7.6.
		{"within the margin", []float64{4, 4, 4}, []float64{8, 8, 8}, []float64{3.8, 3.8, 3.8}, large / 3, false},
		{"two plain runs only", []float64{4, 4, 4}, []float64{8, 8}, []float64{2.5, 2.5, 2.5}, large / 3, false},
		{"two reduced runs only", []float64{4, 4}, []float64{8, 8, 8}, []float64{2.5, 2.5, 2.5}, large / 3, false},
		// Runs slowed by a capture or a neighbour: the least counts.
		{"slow runs", []float64{4, 4, 4, 40}, []float64{8, 80, 8, 8}, []float64{25, 2.5, 2.5, 2.5}, large / 3, true},
		// Near-ties measured only in a smaller class: not priced from below.
		{"near-ties unmeasured", []float64{4, 4, 4}, []float64{8, 8, 8}, []float64{1, 1, 1}, large / 8, false},
		// Measured in a larger class: priced at its cost, not scaled down.
		{"near-ties above", []float64{4, 4, 4}, []float64{8, 8, 8}, []float64{2.5, 2.5, 2.5}, large / 2, true},
		{"near-ties above, dear", []float64{4, 4, 4}, []float64{8, 8, 8}, []float64{3.8, 3.8, 3.8}, large / 2, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := closedGate()
			observe(g, true, large, c.reduced...)
			observe(g, false, large, c.plain...)
			observe(g, false, c.againTokens, c.again...)
			if got := g.Open(large); got != c.want {
				t.Errorf("Open = %v, want %v", got, c.want)
			}
		})
	}

	// Opened for cost alone, one batch in sixteen runs plain; a share under
	// the limit opens every batch, costs or not.
	g := closedGate()
	observe(g, true, large, 4, 4, 4)
	observe(g, false, large, 8, 8, 8)
	observe(g, false, large/3, 2.5, 2.5, 2.5)
	plain := 0
	for range 64 {
		if !g.Open(large) {
			plain++
		}
	}
	if plain != 4 {
		t.Errorf("%d of 64 batches opened for cost ran plain, want 4", plain)
	}
	for range 40 {
		g.Observe(30, 0)
	}
	for range 32 {
		if !g.Open(large) {
			t.Fatal("closed with no near-ties")
		}
	}

	// A batch size whose plain run is measured and its reduced run not (the
	// gate closed before it came) runs reduced one batch in four until
	// costMinRuns reduced runs price it.
	p := closedGate()
	observe(p, false, large, 8, 8, 8)
	observe(p, false, large/3, 2.5, 2.5, 2.5)
	for run := range 3 {
		opened := 0
		for range 4 {
			if p.Open(large) {
				opened++
			}
		}
		if opened != 1 {
			t.Fatalf("reduced run %d unmeasured: %d of 4 batches reduced, want 1", run, opened)
		}
		observe(p, true, large, 4)
	}
	if !p.Open(large) {
		t.Error("closed once three reduced runs showed that reducing pays")
	}
	q := closedGate()
	observe(q, true, large, 4) // one reduced run; no plain: running plain measures it
	for range 8 {
		if q.Open(large) {
			t.Fatal("a batch ran reduced to measure its reduced run before its plain run was")
		}
	}

	// Costs never close a gate the shares keep open, and one question's
	// near-ties (fewer tokens than a row) are priced as a whole row's run.
	var h backend.RefineGate
	observe(&h, true, large, 9, 9, 9)
	observe(&h, false, large, 8, 8, 8)
	if !h.Open(large) {
		t.Error("closed for cost at a share of 0")
	}
	one := closedGate()
	observe(one, true, 93, 0.87, 0.87, 0.87)
	observe(one, false, 93, 0.95, 0.95, 0.95)
	if one.Open(93) {
		t.Error("one question opened for cost at a share of a third")
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
