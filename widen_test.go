package laya

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/backend/cpu"
)

// Stream kinds an overflow backend hands out.
const (
	plainKind = iota
	reducedKind
	wideKind
)

// overflow is a cpu backend whose streams overflow as a narrow precision
// does on a checkpoint with massive activations: the token embedding of
// one token comes out NaN, so that every row holding it (and only those:
// rows never see each other) has NaN outputs, the others their exact ones.
// Its streams record the rows they ran, by kind. It is no backend.Widener;
// the types embedding it below are.
type overflow struct {
	backend.Backend
	poison      int32 // the token that overflows; -1: none
	widePoisons bool  // the wide streams overflow too
	emb         backend.Tensor

	wideCalls int
	rows      [3][]string // the rows each kind of stream ran
	poisoned  [3][]string // the rows each kind of stream turned NaN
}

func (o *overflow) Upload(name string, dtype backend.DType, rows, cols int, raw []byte) (backend.Tensor, error) {
	t, err := o.Backend.Upload(name, dtype, rows, cols, raw)
	if name == "encoder.embeddings.tok_embeddings.weight" {
		o.emb = t
	}
	return t, err
}

func (o *overflow) NewStream() backend.Stream { return o.stream(plainKind, true) }

func (o *overflow) stream(kind int, poison bool) backend.Stream {
	return &overflowStream{Stream: o.Backend.NewStream().(*cpu.Stream), o: o, kind: kind, poison: poison}
}

// overflowWide is an overflow backend whose wide streams are clean cpu
// streams (unless widePoisons).
type overflowWide struct{ *overflow }

func (o overflowWide) WideStream() backend.Stream {
	o.wideCalls++
	return o.stream(wideKind, o.widePoisons)
}

// overflowNoWider is an overflow backend already in its widest precision.
type overflowNoWider struct{ *overflow }

func (o overflowNoWider) WideStream() backend.Stream {
	o.wideCalls++
	return nil
}

// overflowRefiner is an overflowWide backend that is also a
// backend.Refiner whose reduced streams overflow like its plain ones.
type overflowRefiner struct{ overflowWide }

func (o overflowRefiner) ReducedStream(tokens int) (backend.Stream, float32) {
	return o.stream(reducedKind, true), 1e-9
}

// overflowStream is a cpu stream (packed rows and Discard as the cpu
// backend's) whose token embedding lookup records the rows and, where
// poison, turns the poison token's embeddings NaN.
type overflowStream struct {
	*cpu.Stream
	o      *overflow
	kind   int
	poison bool
}

func (s *overflowStream) Gather(dst, table backend.Tensor, index []int32) {
	s.Stream.Gather(dst, table, index)
	if table != s.o.emb || len(index) == 0 {
		return
	}
	// Every row starts with [CLS], and a packed batch has no padding.
	cls := index[0]
	var row []int32
	flush := func() {
		if len(row) == 0 {
			return
		}
		key := fmt.Sprint(row)
		s.o.rows[s.kind] = append(s.o.rows[s.kind], key)
		if s.poison && slices.Contains(row, s.o.poison) {
			s.o.poisoned[s.kind] = append(s.o.poisoned[s.kind], key)
		}
		row = nil
	}
	for _, id := range index {
		if id == cls {
			flush()
		}
		row = append(row, id)
	}
	flush()
	if !s.poison || !slices.Contains(index, s.o.poison) {
		return
	}
	cols := dst.Cols()
	nan := make([]float32, len(index)*cols)
	for p, id := range index {
		if id == s.o.poison {
			for j := range cols {
				nan[p*cols+j] = float32(math.NaN())
			}
		}
	}
	// x + 0 is x: the other positions keep their embeddings bit for bit.
	s.Stream.Add(dst, dst, s.Stream.FromHost(len(index), cols, nan))
}

// widenRequest has questions of every type, five rows for batches of two.
var widenRequest = []byte(`{"state": "I was charged twice for March and the box arrived damaged.", "questions": {
	"refund": {"type": "noul", "instructions": "Does the customer ask for money back?"},
	"dept": {"type": "choice", "instructions": "Which team should answer?", "criteria": ["billing", "shipping", "technical"]},
	"anger": {"type": "score", "instructions": "How angry is the customer?", "criteria": ["calm", "annoyed", "furious"]},
	"damage": {"type": "noul", "instructions": "Did a parcel arrive broken?"},
	"lang": {"type": "choice", "instructions": "Which language is the message in?", "criteria": ["English", "French"]}}}`)

// Rows whose outputs are not finite on a backend's streams run again on its
// wide stream (backend.Widener), after any refinement of a reduced batch,
// and only those, each once: the answers are a plain cpu agent's, byte for
// byte. Without a wider precision (no Widener, or WideStream nil), or where
// the wide stream overflows too, the request fails with ErrNonFinite, as it
// does on the overflowing streams alone.
func TestWidenNonFiniteRows(t *testing.T) {
	ctx := context.Background()
	const batch = 2
	type predictor func(*Agent) (*Result, error)
	request := func(a *Agent) (*Result, error) { return a.PredictJSON(ctx, widenRequest) }
	// Windows compete, so they run on forwardExact.
	long := func(a *Agent) (*Result, error) {
		return a.PredictLong(ctx, Request{State: Text(longText(40)), Questions: longQuestions()}, LongOptions{})
	}
	const (
		someRows = iota
		everyRow
		noRow
	)
	for _, c := range []struct {
		name        string
		predict     predictor
		poison      int
		wrap        func(*overflow) backend.Backend
		widePoisons bool
		wantErr     bool
	}{
		{"some rows overflow", request, someRows, func(o *overflow) backend.Backend { return overflowWide{o} }, false, false},
		{"every row overflows", request, everyRow, func(o *overflow) backend.Backend { return overflowWide{o} }, false, false},
		{"no row overflows", request, noRow, func(o *overflow) backend.Backend { return overflowWide{o} }, false, false},
		{"reduced batches and their refinement overflow", request, someRows,
			func(o *overflow) backend.Backend { return overflowRefiner{overflowWide{o}} }, false, false},
		{"windows of a long state overflow", long, someRows, func(o *overflow) backend.Backend { return overflowWide{o} }, false, false},
		{"no Widener", request, someRows, func(o *overflow) backend.Backend { return o }, false, true},
		{"no wider precision", request, someRows, func(o *overflow) backend.Backend { return overflowNoWider{o} }, false, true},
		{"the wide stream overflows too", request, someRows, func(o *overflow) backend.Backend { return overflowWide{o} }, true, true},
		// Refined rows still not finite run wide once, not once more for
		// the refinement.
		{"reduced batches, their refinement and the wide stream overflow", request, someRows,
			func(o *overflow) backend.Backend { return overflowRefiner{overflowWide{o}} }, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			plain, err := Load(ctx, checkpointDir("tiny-en"), WithBackend("cpu"), WithBatchSize(batch))
			if err != nil {
				t.Fatal(err)
			}
			defer plain.Close()
			want, err := c.predict(plain)
			if err != nil {
				t.Fatal(err)
			}

			// The rows the request makes, to pick the poison from.
			rec := &overflow{Backend: cpu.New(), poison: -1}
			recAgent, err := Load(ctx, checkpointDir("tiny-en"), WithBackendInstance(rec), WithBatchSize(batch))
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.predict(recAgent)
			recAgent.Close()
			if err != nil {
				t.Fatal(err)
			}
			rows := rec.rows[plainKind]
			o := &overflow{Backend: cpu.New(), poison: -1, widePoisons: c.widePoisons}
			switch c.poison {
			case everyRow:
				o.poison = firstToken(rows[0]) // [CLS]
			case someRows:
				o.poison = halfToken(t, rows)
			}

			be := c.wrap(o)
			agent, err := Load(ctx, checkpointDir("tiny-en"), WithBackendInstance(be), WithBatchSize(batch))
			if err != nil {
				t.Fatal(err)
			}
			defer agent.Close()
			got, err := c.predict(agent)
			overflowed := distinct(slices.Concat(o.poisoned[plainKind], o.poisoned[reducedKind]))
			switch {
			case c.poison != noRow && len(overflowed) == 0:
				t.Fatal("no row overflowed")
			case c.poison == everyRow && len(overflowed) != len(distinct(rows)):
				t.Fatalf("%d of %d rows overflowed, want all", len(overflowed), len(distinct(rows)))
			case c.poison == someRows && len(overflowed) == len(distinct(rows)):
				t.Fatalf("all %d rows overflowed, want some", len(overflowed))
			}
			if c.wantErr {
				if !errors.Is(err, ErrNonFinite) {
					t.Fatalf("err = %v, want ErrNonFinite", err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if got.String() != want.String() {
					t.Errorf("answers %s, a plain cpu agent's %s", got, want)
				}
			}
			// Each overflowed row ran once on a wide stream, and no other.
			wide := o.rows[wideKind]
			switch be.(type) {
			case *overflow:
				if o.wideCalls != 0 || len(wide) != 0 {
					t.Errorf("WideStream asked %d times, %d rows run wide; want none", o.wideCalls, len(wide))
				}
				return
			case overflowNoWider:
				if o.wideCalls != 1 || len(wide) != 0 {
					t.Errorf("WideStream asked %d times, %d rows run wide; want once, none", o.wideCalls, len(wide))
				}
				return
			}
			if len(distinct(wide)) != len(wide) || !slices.Equal(distinct(wide), overflowed) {
				t.Errorf("rows run wide:\n%v\nwant each overflowed row once:\n%v", wide, overflowed)
			}
			if want := (len(overflowed) + batch - 1) / batch; o.wideCalls != want {
				t.Errorf("%d wide streams for %d rows, want %d", o.wideCalls, len(overflowed), want)
			}
			if _, ok := be.(overflowRefiner); ok {
				// A row overflowed on a reduced stream, again when refined
				// on a plain one, and was answered on the wide one.
				refined := 0
				for _, r := range o.poisoned[reducedKind] {
					if slices.Contains(o.poisoned[plainKind], r) {
						refined++
					}
				}
				if refined == 0 {
					t.Errorf("no overflowed row of a reduced batch was refined (%d reduced, %d plain)",
						len(o.poisoned[reducedKind]), len(o.poisoned[plainKind]))
				}
			}
			t.Logf("%d rows, %d overflowed, %d wide streams", len(distinct(rows)), len(overflowed), o.wideCalls)
		})
	}
}

// distinct is the sorted set of keys.
func distinct(keys []string) []string {
	s := slices.Clone(keys)
	slices.Sort(s)
	return slices.Compact(s)
}

// firstToken is the first id of a row recorded as fmt.Sprint([]int32).
func firstToken(row string) int32 {
	var id int32
	fmt.Sscan(strings.TrimPrefix(row, "["), &id)
	return id
}

// halfToken is a token that some of the rows hold but not all, held by as
// near half of them as any (the smallest id among ties).
func halfToken(t *testing.T, rows []string) int32 {
	t.Helper()
	held := map[int32]int{}
	rows = distinct(rows)
	for _, r := range rows {
		seen := map[int32]bool{}
		for _, f := range strings.Fields(strings.Trim(r, "[]")) {
			var id int32
			fmt.Sscan(f, &id)
			if !seen[id] {
				seen[id] = true
				held[id]++
			}
		}
	}
	off := func(id int32) int { return abs(2*held[id] - len(rows)) }
	best := int32(-1)
	for id, k := range held {
		if k < len(rows) && (best < 0 || off(id) < off(best) || off(id) == off(best) && id < best) {
			best = id
		}
	}
	if best < 0 {
		t.Fatalf("no token held by some of the %d rows but not all", len(rows))
	}
	return best
}

func abs(x int) int { return max(x, -x) }

// The shortlist's embeddings widen as answers do: a text whose vector is
// not finite on the backend's streams runs again on its wide stream, and
// every vector is a plain cpu agent's, bit for bit; without a Widener the
// overflowed vectors stay NaN.
func TestWidenEmbeddings(t *testing.T) {
	ctx := context.Background()
	texts := []string{"refund my order", "the parcel arrived broken", "where is my invoice", "refund the invoice please", "hello"}
	embed := func(be backend.Backend) [][]float32 {
		t.Helper()
		a, err := Load(ctx, checkpointDir("tiny-en"), WithBackendInstance(be))
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		vecs, err := AgentEmbedder(a, 0, 2).Embed(ctx, texts)
		if err != nil {
			t.Fatal(err)
		}
		return vecs
	}
	want := embed(cpu.New())
	rec := &overflow{Backend: cpu.New(), poison: -1}
	embed(rec)
	rows := rec.rows[plainKind]
	for _, c := range []struct {
		name string
		wrap func(*overflow) backend.Backend
		wide bool
	}{
		{"Widener", func(o *overflow) backend.Backend { return overflowWide{o} }, true},
		{"no Widener", func(o *overflow) backend.Backend { return o }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := &overflow{Backend: cpu.New(), poison: halfToken(t, rows)}
			got := embed(c.wrap(o))
			if len(o.poisoned[plainKind]) == 0 || len(distinct(o.poisoned[plainKind])) == len(distinct(rows)) {
				t.Fatalf("%d of %d texts overflowed, want some", len(distinct(o.poisoned[plainKind])), len(distinct(rows)))
			}
			nan := 0
			for i := range texts {
				switch {
				case backend.Finite(got[i]) && slices.Equal(got[i], want[i]):
				case !backend.Finite(got[i]) && !c.wide:
					nan++
				default:
					t.Errorf("text %d %q: vector %v…, want %v…", i, texts[i], got[i][:3], want[i][:3])
				}
			}
			if !c.wide && nan != len(distinct(o.poisoned[plainKind])) {
				t.Errorf("%d vectors not finite, %d texts overflowed", nan, len(distinct(o.poisoned[plainKind])))
			}
			if wide := o.rows[wideKind]; c.wide && !slices.Equal(distinct(wide), distinct(o.poisoned[plainKind])) {
				t.Errorf("texts run wide %v, want the overflowed ones %v", wide, o.poisoned[plainKind])
			}
		})
	}
}
