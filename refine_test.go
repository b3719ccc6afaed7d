package laya

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/backend/cpu"
	"github.com/laya-metal/laya/internal/forwardtest"
	"github.com/laya-metal/laya/internal/oracletest"
	"github.com/laya-metal/laya/weights"
)

// refiner is a cpu backend with a backend.Refiner whose "reduced" streams
// add skew·(j mod 3) to the j-th value of every read: outputs that move by
// up to 2·skew, as a reduced precision's would.
type refiner struct {
	backend.Backend
	margin    float32
	minTokens int
	skew      float32
	// clock, when set, is the network's (network.now), and a batch takes on
	// it a microsecond a logit it reads on a reduced stream, 1+plainSlow
	// on a plain one: a plain precision dearer than a reduced one in
	// proportion to the batch, whatever the machine's load.
	clock     *testClock
	plainSlow float64

	plain, reduced int
}

func (r *refiner) NewStream() backend.Stream {
	r.plain++
	if r.clock != nil {
		return &clocked{Stream: r.Backend.NewStream(), clock: r.clock, per: 1 + r.plainSlow}
	}
	return r.Backend.NewStream()
}

// testClock is a clock that moves only when told.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// took moves the clock on by per microseconds for each value of a batch's
// first read (its logits: about its rows' work).
func (c *testClock) took(values int, per float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Duration(per * float64(values) * float64(time.Microsecond)))
}

// clocked is a plain stream whose batch takes per microseconds a logit on
// its refiner's clock.
type clocked struct {
	backend.Stream
	clock *testClock
	per   float64
	read  bool
}

func (s *clocked) Read(ctx context.Context, t backend.Tensor, dst []float32) error {
	if !s.read {
		s.read = true
		s.clock.took(len(dst), s.per)
	}
	return s.Stream.Read(ctx, t, dst)
}

func (r *refiner) ReducedStream(tokens int) (backend.Stream, float32) {
	if tokens < r.minTokens {
		return nil, 0
	}
	return &skewed{Stream: r.Backend.NewStream(), skew: r.skew, r: r}, r.margin
}

// skewed counts itself in r.reduced when it is first read: a reduced stream
// the network closes unused (its gate shut) did not run.
type skewed struct {
	backend.Stream
	skew float32
	r    *refiner
	read bool
}

func (s *skewed) Read(ctx context.Context, t backend.Tensor, dst []float32) error {
	if !s.read {
		s.read = true
		s.r.reduced++
		if s.r.clock != nil {
			s.r.clock.took(len(dst), 1)
		}
	}
	err := s.Stream.Read(ctx, t, dst)
	for j := range dst {
		dst[j] += s.skew * float32(j%3)
	}
	return err
}

// gap is the distance between a row's two largest logits.
func gap(logits []float32) float32 {
	s := slices.Clone(logits)
	slices.Sort(s)
	if len(s) < 2 {
		return float32(math.Inf(1))
	}
	return s[len(s)-1] - s[len(s)-2]
}

func sameOutputs(a, b rowOutput, tol float64) bool {
	near := func(x, y []float32) bool {
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if math.Abs(float64(x[i]-y[i])) > tol {
				return false
			}
		}
		return true
	}
	return near(a.Logits, b.Logits) && near(a.ActProbs, b.ActProbs)
}

// tinyRows loads tiny-en (closed at the test's end) and returns every
// golden row with its outputs on a plain network and the gap between their
// two largest logits.
func tinyRows(t *testing.T) (ckpt *weights.Checkpoint, rows []forwardRow, exact []rowOutput, gaps []float32) {
	t.Helper()
	ckpt, err := weights.LoadCheckpoint(oracletest.Checkpoint("tiny-en"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ckpt.Close() })
	for _, c := range oracletest.Cases(t, "tiny-en") {
		rows = append(rows, forwardtest.Rows(c.Rows)...)
	}
	exactNet, err := newNetwork(ckpt, networkOptions{BatchSize: 8, PadID: ckpt.Encoder.PadTokenID})
	if err != nil {
		t.Fatal(err)
	}
	defer exactNet.close()
	if exact, err = exactNet.forward(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
	gaps = make([]float32, len(rows))
	for i, o := range exact {
		gaps[i] = gap(o.Logits)
	}
	return ckpt, rows, exact, gaps
}

// A network on a backend.Refiner runs each batch on the reduced stream and
// exactly the rows whose reduced logits are a near-tie again on a plain one,
// whose outputs replace the reduced ones; a batch below the reduced
// stream's token count runs plain. The expected rows come from the exact
// outputs: a row whose exact gap is more than 2·skew (the most the skew
// moves a gap) from the margin is refined or not for sure.
func TestRefineNearTies(t *testing.T) {
	ckpt, rows, exact, gaps := tinyRows(t)
	sorted := slices.Clone(gaps)
	slices.Sort(sorted)
	// A tenth of the rows under the margin: few enough that the network's
	// gate (backend.RefineGate) stays open over the batches of 8.
	tenth := sorted[len(sorted)/10]

	for _, c := range []struct {
		name      string
		margin    float32
		minTokens int
		skew      float32
		batch     int
	}{
		{"margin at the tenth gap", tenth, 1, 1e-3, 8},
		// One batch: a gate closes after a few batches refined throughout.
		{"every row refined", 1e9, 1, 0.5, len(rows)},
		{"no row refined", 1e-9, 1, 0, 8},
		{"batches too small to reduce", tenth, 1 << 30, 0.5, 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			be := &refiner{Backend: cpu.New(), margin: c.margin, minTokens: c.minTokens, skew: c.skew}
			n, err := newNetwork(ckpt, networkOptions{Instance: be, BatchSize: c.batch, PadID: ckpt.Encoder.PadTokenID})
			if err != nil {
				t.Fatal(err)
			}
			defer n.close()
			be.plain = 0
			got, err := n.forward(context.Background(), rows)
			if err != nil {
				t.Fatal(err)
			}
			batches := (len(rows) + c.batch - 1) / c.batch
			if c.minTokens > 1 {
				if be.reduced != 0 || be.plain != batches {
					t.Errorf("%d reduced and %d plain streams, want 0 and %d", be.reduced, be.plain, batches)
				}
				for i := range rows {
					if !sameOutputs(got[i], exact[i], 1e-5) {
						t.Errorf("row %d: %v, want the exact %v", i, got[i], exact[i])
					}
				}
				return
			}
			if be.reduced != batches {
				t.Errorf("%d reduced streams, want %d", be.reduced, batches)
			}
			again, kept := 0, 0
			for i := range rows {
				refined := sameOutputs(got[i], exact[i], 1e-5)
				switch {
				case gaps[i] < c.margin-2*c.skew && !refined:
					t.Errorf("row %d: gap %g under the margin %g, not refined", i, gaps[i], c.margin)
				case gaps[i] >= c.margin+2*c.skew && refined && c.skew > 0:
					t.Errorf("row %d: gap %g over the margin %g, refined", i, gaps[i], c.margin)
				}
				switch {
				case refined && c.skew > 0:
					again++
				case len(rows[i].Markers) > 1:
					kept++ // a row of one option is never a tie
				}
			}
			if want := (again + c.batch - 1) / c.batch; c.skew > 0 && be.plain != want {
				t.Errorf("%d plain streams for %d refined rows, want %d", be.plain, again, want)
			}
			if c.margin == 1e9 && kept != 0 || c.margin == 1e-9 && be.plain != 0 {
				t.Errorf("%d rows kept, %d plain streams", kept, be.plain)
			}
			t.Logf("%d rows: %d refined, %d kept", len(rows), again, kept)
		})
	}
}

// A reduced precision that moves gaps by more than the Refiner's margin
// allows for: the rows refined show it (backend.Spread), the network's gate
// grows its margin to twice the largest move, and the rows kept under the
// smaller margin are looked at again. No row is kept that is a near-tie
// under the grown margin; refined rows are the exact ones.
func TestRefineMarginGrows(t *testing.T) {
	ckpt, rows, exact, gaps := tinyRows(t)
	slices.Sort(gaps)
	margin := gaps[len(gaps)/20]
	// One batch, so that the gate, which closes once many rows run again,
	// does not send the rest to plain streams before they show anything.
	be := &refiner{Backend: cpu.New(), margin: margin, minTokens: 1, skew: 2 * margin}
	n, err := newNetwork(ckpt, networkOptions{Instance: be, BatchSize: len(rows), PadID: ckpt.Encoder.PadTokenID})
	if err != nil {
		t.Fatal(err)
	}
	defer n.close()
	got, err := n.forward(context.Background(), rows)
	if err != nil {
		t.Fatal(err)
	}
	grown := n.gate.Margin(margin)
	if grown <= margin {
		t.Fatalf("margin %g after refining rows moved by up to %g: did not grow", grown, 4*margin)
	}
	refined := 0
	for i := range rows {
		if sameOutputs(got[i], exact[i], 1e-5) {
			refined++
			continue
		}
		if g := gap(got[i].Logits); len(rows[i].Markers) > 1 && g < grown {
			t.Errorf("row %d kept with a gap of %g, under the grown margin %g", i, g, grown)
		} else if g < margin {
			t.Errorf("row %d kept with a gap of %g, under the margin %g", i, g, margin)
		}
	}
	t.Logf("margin %g grew to %g; %d of %d rows refined", margin, grown, refined, len(rows))
}

// NearTie: a gap under the margin, or a value that is not a number.
func TestNearTie(t *testing.T) {
	inf := float32(math.Inf(1))
	for _, c := range []struct {
		logits []float32
		margin float32
		want   bool
	}{
		{[]float32{1, 2, 3}, 0.5, false},
		{[]float32{1, 2.9, 3}, 0.5, true},
		{[]float32{3, 1, 2.9}, 0.5, true},
		{[]float32{3, 3}, 1e-9, true},
		{[]float32{5}, 1e9, false},
		{[]float32{1, float32(math.NaN())}, 0.1, true},
		{[]float32{1, -inf}, 0.1, true},
		{nil, 1, false},
	} {
		if got := backend.NearTie(c.logits, c.margin); got != c.want {
			t.Errorf("NearTie(%v, %g) = %v, want %v", c.logits, c.margin, got, c.want)
		}
	}
}

// Once most rows of reduced batches run again, the network's gate sends
// batches to plain streams, which still report their near-ties: while they
// last no batch runs reduced, and once they stop the gate opens again,
// without a batch run twice to find out. A long state's windows never run
// reduced.
func TestRefineGateCloses(t *testing.T) {
	ckpt, err := weights.LoadCheckpoint(oracletest.Checkpoint("tiny-en"))
	if err != nil {
		t.Fatal(err)
	}
	defer ckpt.Close()
	rows := forwardtest.Rows(oracletest.Cases(t, "tiny-en")[0].Rows)
	be := &refiner{Backend: cpu.New(), margin: 1e9, minTokens: 1}
	n, err := newNetwork(ckpt, networkOptions{Instance: be, BatchSize: len(rows), PadID: ckpt.Encoder.PadTokenID})
	if err != nil {
		t.Fatal(err)
	}
	defer n.close()
	const calls = 40
	for range calls {
		if _, err := n.forward(context.Background(), rows); err != nil {
			t.Fatal(err)
		}
	}
	// The first few batches run reduced until the moving average passes
	// MaxShare; none after.
	if be.reduced > 6 || be.reduced == 0 || n.gate.Open(backend.SmallTokens) {
		t.Errorf("%d of %d batches reduced with every row refined, want the first few only", be.reduced, calls)
	}
	before := be.reduced
	if _, err := n.forwardExact(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
	if be.reduced != before {
		t.Error("forwardExact ran a batch reduced")
	}
	// No more near-ties at the reduced stream's margin: the plain batches
	// say so, and reduced runs resume.
	be.margin = 1e-9
	for range calls {
		if _, err := n.forward(context.Background(), rows); err != nil {
			t.Fatal(err)
		}
	}
	if be.reduced < before+calls/2 {
		t.Errorf("%d of %d batches reduced after the near-ties stopped, want most", be.reduced-before, calls)
	}
}

// Where a third of the rows are near-ties the gate's shares close it, but a
// reduced run that costs far less than a plain one, measured on the
// network's own runs, opens it again: most batches run reduced, one in
// sixteen of those opened for cost alone plain.
func TestRefineGateOpensForCost(t *testing.T) {
	ckpt, rows, _, gaps := tinyRows(t)
	rows, gaps = rows[:12], slices.Clone(gaps[:12])
	slices.Sort(gaps)
	be := &refiner{Backend: cpu.New(), margin: gaps[len(gaps)/3], minTokens: 1, skew: 1e-4, clock: &testClock{}, plainSlow: 8}
	n, err := newNetwork(ckpt, networkOptions{Instance: be, BatchSize: len(rows), PadID: ckpt.Encoder.PadTokenID})
	if err != nil {
		t.Fatal(err)
	}
	defer n.close()
	n.now = be.clock.now
	const calls, last = 32, 16
	reduced := 0
	for i := range calls {
		before := be.reduced
		if _, err := n.forward(context.Background(), rows); err != nil {
			t.Fatal(err)
		}
		if i >= calls-last {
			reduced += be.reduced - before
		}
	}
	if reduced < last-3 {
		t.Errorf("%d of the last %d batches reduced with a third of their rows near-ties and plain runs far dearer, want most", reduced, last)
	}
}

// PredictLong's windows compete with each other, which a row's own near-tie
// check does not cover: a long state runs no batch reduced, a state that
// fits runs as PredictRequest does.
func TestPredictLongNotReduced(t *testing.T) {
	ctx := context.Background()
	be := &refiner{Backend: cpu.New(), margin: 1e-9, minTokens: 1}
	agent, err := Load(ctx, checkpointDir("tiny-en"), WithBackendInstance(be), WithBatchSize(5))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	if _, err := agent.PredictLong(ctx, Request{State: Text(longText(60)), Questions: longQuestions()}, LongOptions{}); err != nil {
		t.Fatal(err)
	}
	if be.reduced != 0 {
		t.Errorf("a long state ran %d batches reduced", be.reduced)
	}
	if _, err := agent.PredictLong(ctx, Request{State: Text(longText(1)), Questions: longQuestions()}, LongOptions{}); err != nil {
		t.Fatal(err)
	}
	if be.reduced == 0 {
		t.Error("a state that fits ran no batch reduced, as PredictRequest would")
	}
}
