//go:build linux

package cuda

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"testing"

	"github.com/laya-metal/laya/internal/forwardpass"
)

// The tests here compare two backends bit for bit, so both take cuBLASLt's
// first heuristic choice for each GEMM (NoTune): timed, each would pick its
// own, and the emulated cuBLASLt's candidates include a split of k whose
// sums differ in the last bits (which one wins depends on the machine's
// load).

// Starting a forward's first layers before the Read (Submit, at the
// encoder's layer boundaries) changes when the GPU runs them, not what it
// computes: the scorer's logits and the act head's probabilities are bit
// for bit those of the forward recorded whole, in each precision, whether
// the segments run kernel by kernel, are captured, or replay their graphs
// (a chain of entries whose keys hold the addresses of the residual stream
// the first one made).
func TestEmuSubmitMatchesWhole(t *testing.T) {
	for _, p := range []Precision{FP32, FP16, FP16X2} {
		t.Run(p.String(), func(t *testing.T) {
			whole := emuTinyModelWith(t, p, func(o *Options) { o.SubmitOps, o.NoTune = -1, true })
			split := emuTinyModelWith(t, p, func(o *Options) { o.SubmitOps, o.NoTune = 1, true })
			for _, shape := range [][2]int{{12, 1}, {40, 3}, {100, 2}} {
				rows := whole.rows(shape[0], shape[1])
				for step := range 3 {
					before := split.b.Stats()
					emuSameForward(t, whole, split, rows, shape)
					st := split.b.Stats()
					// submit=1: after the first layer, then after the
					// second (four times one operation), then no more.
					if early := st.Submitted - before.Submitted; early != 2 {
						t.Errorf("%v run %d: %d segments started early, want 2", shape, step, early)
					}
					ran := st.Eager + st.Captures + st.Replays - before.Eager - before.Captures - before.Replays
					if ran != 3 {
						t.Errorf("%v run %d: %d segments, want 3", shape, step, ran)
					}
					if step == 2 && st.Replays-before.Replays != 3 {
						t.Errorf("%v run %d: stats %+v after %+v, want every segment replayed", shape, step, st, before)
					}
				}
			}
			if st := whole.b.Stats(); st.Submitted != 0 {
				t.Errorf("submit=off: %d segments started early", st.Submitted)
			}
			// The same kernels: the fusions that need a tensor of the
			// segment's own (a residual Add folded into a GEMM or a
			// LayerNorm, FP16X2's stacked products, 16-bit-only outputs)
			// hold across a split. But for one: in FP16X2 a layer ends
			// with the residual Add its GEMM could not take, which the
			// next layer's LayerNorm takes instead (a kernel fewer); a
			// split between the two keeps the Add's kernel.
			rows := whole.rows(40, 3)
			w, sp := emuOpCounts(t, whole, rows), emuOpCounts(t, split, rows)
			if p == FP16X2 {
				w["add"] += 2
			}
			if !maps.Equal(w, sp) {
				t.Errorf("operations launched: %v started early, %v recorded whole (adjusted)", sp, w)
			}
		})
	}
}

// emuOpCounts runs rows once with m's backend profiling, and counts the
// operations launched by name.
func emuOpCounts(t *testing.T, m *emuTiny, rows []forwardpass.Row) map[string]int {
	t.Helper()
	m.b.SetProfiling(true)
	defer m.b.SetProfiling(false)
	if err := m.run(rows); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, o := range m.b.OpTimes() {
		out[o.Op] += o.Count
	}
	return out
}

func sameBits(t *testing.T, shape [2]int, what string, want, got [][]float32) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%v %s: %d rows, want %d", shape, what, len(got), len(want))
	}
	for i := range want {
		if len(want[i]) != len(got[i]) {
			t.Fatalf("%v %s row %d: %d values, want %d", shape, what, i, len(got[i]), len(want[i]))
		}
		for j := range want[i] {
			if math.Float32bits(want[i][j]) != math.Float32bits(got[i][j]) {
				t.Errorf("%v %s row %d [%d]: %v started early, %v recorded whole", shape, what, i, j, got[i][j], want[i][j])
				return
			}
		}
	}
}

// A stream closed with segments started and no Read waits for them (a
// request cancelled after its first layers): the entries go back to the
// cache, and the next request of the shape, taking them, computes what the
// forward recorded whole does.
func TestEmuSubmitThenClose(t *testing.T) {
	whole := emuTinyModelWith(t, FP16X2, func(o *Options) { o.SubmitOps, o.NoTune = -1, true })
	split := emuTinyModelWith(t, FP16X2, func(o *Options) { o.SubmitOps, o.NoTune = 1, true })
	rows := whole.rows(40, 2)
	want, _, err := whole.parts.RunRowsPruned(context.Background(), whole.b, rows, whole.pad)
	if err != nil {
		t.Fatal(err)
	}
	for step := range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		s := &cancelAtSubmit{split.b.NewStream().(*stream), cancel}
		_, err := split.parts.RunPruned(ctx, s, forwardpass.Layout(s, rows, split.pad))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("run %d: %v, want the forward cancelled after its first layer", step, err)
		}
		if s.started != 1 {
			t.Fatalf("run %d: %d segments started before the cancel, want 1", step, s.started)
		}
		s.Close()
		if s.started != 0 {
			t.Fatalf("run %d: closed with %d started segments not waited for", step, s.started)
		}
		got, _, err := split.parts.RunRowsPruned(context.Background(), split.b, rows, split.pad)
		if err != nil {
			t.Fatal(err)
		}
		sameBits(t, [2]int{40, 2}, "logits", want, got)
	}
}

// cancelAtSubmit is a stream that cancels its request's context at the
// first Submit, after starting the segment.
type cancelAtSubmit struct {
	*stream
	cancel func()
}

func (c *cancelAtSubmit) Submit() {
	c.stream.Submit()
	c.cancel()
}

// Two streams of one shape at once each start their own chain of segments
// (the first's entries are held, so the second's first segment takes
// another entry, and its later segments keys of their own), and with room
// for fewer entries than a request has segments the cache frees later
// segments before earlier ones: every result is the whole forward's.
func TestEmuSubmitChains(t *testing.T) {
	whole := emuTinyModelWith(t, FP16X2, func(o *Options) { o.SubmitOps, o.NoTune = -1, true })
	for _, maxGraphs := range []int{0, 2} {
		split := emuTinyModelWith(t, FP16X2, func(o *Options) { o.SubmitOps, o.MaxGraphs, o.NoTune = 1, maxGraphs, true })
		shapes := [][]forwardpass.Row{whole.rows(40, 2), whole.rows(12, 1), whole.rows(100, 1)}
		var want [][]float32
		for _, rows := range shapes {
			s := whole.b.NewStream()
			w, err := whole.logits(s, rows)
			s.Close()
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, w)
		}
		for step := range 3 {
			for i, rows := range shapes {
				s1, s2 := split.b.NewStream(), split.b.NewStream()
				g1, err1 := split.logits(s1, rows)
				g2, err2 := split.logits(s2, rows)
				s1.Close()
				s2.Close()
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				shape := [2]int{len(rows[0].IDs), len(rows)}
				sameBits(t, shape, "logits (first stream)", [][]float32{want[i]}, [][]float32{g1})
				sameBits(t, shape, "logits (second stream)", [][]float32{want[i]}, [][]float32{g2})
			}
			if st := split.b.Stats(); maxGraphs > 0 && st.Entries > maxGraphs {
				t.Errorf("maxgraphs=%d, run %d: %d entries cached", maxGraphs, step, st.Entries)
			}
		}
	}
}

// splits=N starts N segments early, each once the one being recorded has
// four times the operations of the one before (submit=1: the first layer,
// then the next, then the next two of tiny-en's four layers, whose last
// boundary is the encoder's end), and the answer stays the forward
// recorded whole, bit for bit, kernel by kernel, captured and replayed.
func TestEmuSubmitSplits(t *testing.T) {
	whole := emuTinyModelWith(t, FP16X2, func(o *Options) { o.SubmitOps, o.NoTune = -1, true })
	rows := whole.rows(40, 3)
	for _, c := range []struct{ splits, early int }{{1, 1}, {2, 2}, {3, 3}, {MaxSubmitSplits, 3}} {
		t.Run(fmt.Sprintf("splits=%d", c.splits), func(t *testing.T) {
			split := emuTinyModelWith(t, FP16X2, func(o *Options) { o.SubmitOps, o.SubmitSplits, o.NoTune = 1, c.splits, true })
			for step := range 3 {
				before := split.b.Stats()
				emuSameForward(t, whole, split, rows, [2]int{40, 3})
				st := split.b.Stats()
				if early := st.Submitted - before.Submitted; early != c.early {
					t.Errorf("run %d: %d segments started early, want %d", step, early, c.early)
				}
				if step == 2 && st.Replays-before.Replays != c.early+1 {
					t.Errorf("run %d: stats %+v after %+v, want every segment replayed", step, st, before)
				}
			}
		})
	}
}

// emuSameForward runs rows (shape: tokens, rows) through both models and
// holds split's logits and act probabilities to whole's, bit for bit.
func emuSameForward(t *testing.T, whole, split *emuTiny, rows []forwardpass.Row, shape [2]int) {
	t.Helper()
	wl, wa, err := whole.parts.RunRowsPruned(context.Background(), whole.b, rows, whole.pad)
	if err != nil {
		t.Fatal(err)
	}
	sl, sa, err := split.parts.RunRowsPruned(context.Background(), split.b, rows, split.pad)
	if err != nil {
		t.Fatal(err)
	}
	sameBits(t, shape, "logits", wl, sl)
	sameBits(t, shape, "act probabilities", wa, sa)
}
