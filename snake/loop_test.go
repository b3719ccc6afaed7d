package snake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/laya-metal/laya"
)

// fakeModel answers instantly: uniform-ish probabilities favouring one direction.
type fakeModel struct {
	favour Direction
	calls  atomic.Int64
}

func (f *fakeModel) Decide(ctx context.Context, _ laya.State, qs laya.Questions) (Answers, error) {
	f.calls.Add(1)
	if len(qs) != 3 || qs[0].ID != MoveQuestion || qs[1].ID != RiskQuestion || qs[2].ID != FoodQuestion {
		return Answers{}, errors.New("fake: unexpected questions")
	}
	a := Answers{Move: [4]float64{0.1, 0.1, 0.1, 0.1}, SafeRoute: 0.9, FoodReachable: 0.8}
	a.Move[f.favour] = 0.7
	return a, nil
}

// slowModel takes delay per decision, or until its context ends; it records how each
// of its calls ended.
type slowModel struct {
	delay     time.Duration
	ignoreCtx bool // keeps working after cancellation (a model that does not honour ctx)
	mu        sync.Mutex
	ends      []error
	inflight  atomic.Int64
	peak      atomic.Int64
	deadlines atomic.Int64 // calls whose context carried a deadline
}

func (s *slowModel) Decide(ctx context.Context, _ laya.State, _ laya.Questions) (Answers, error) {
	n := s.inflight.Add(1)
	defer s.inflight.Add(-1)
	for {
		p := s.peak.Load()
		if n <= p || s.peak.CompareAndSwap(p, n) {
			break
		}
	}
	if _, ok := ctx.Deadline(); ok {
		s.deadlines.Add(1)
	}
	var err error
	if s.ignoreCtx {
		time.Sleep(s.delay)
		err = ctx.Err()
	} else {
		select {
		case <-time.After(s.delay):
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	s.mu.Lock()
	s.ends = append(s.ends, err)
	s.mu.Unlock()
	if err != nil {
		return Answers{}, err
	}
	return Answers{Move: [4]float64{1, 0, 0, 0}, SafeRoute: 1, FoodReachable: 1}, nil
}

func newLoop(t *testing.T, m Model, cfg Config) *Loop {
	t.Helper()
	if cfg.Width == 0 {
		cfg.GameConfig = DefaultGame
	}
	l, err := New(m, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestLoopShieldsAFastModel(t *testing.T) {
	for _, favour := range Directions {
		m := &fakeModel{favour: favour}
		l := newLoop(t, m, Config{})
		if err := l.Run(context.Background(), 600); err != nil {
			t.Fatal(err)
		}
		s := l.Summary()
		if s.Steps != 600 || !s.Alive || s.ModelCalls != 600 || s.Answered != 600 || m.calls.Load() != 600 {
			t.Fatalf("favour %v: %+v, fake called %d times", favour, s, m.calls.Load())
		}
		if s.DeadlineMisses != 0 || s.Score == 0 || s.Interventions == 0 {
			t.Fatalf("favour %v: %+v", favour, s)
		}
	}
}

func TestUnassistedPlaysTheArgmax(t *testing.T) {
	l := newLoop(t, &fakeModel{favour: Up}, Config{Unassisted: true})
	if err := l.Run(context.Background(), 100); err != nil {
		t.Fatal(err)
	}
	s := l.Summary()
	// Always UP from the centre of a 16-high board: dead on the wall within 16 ticks.
	if s.Alive || s.Death != "wall" || s.Steps > 16 || s.Interventions != 0 {
		t.Fatalf("%+v", s)
	}
	if _, err := l.Tick(context.Background()); !errors.Is(err, ErrGameOver) {
		t.Fatalf("tick after death: %v", err)
	}
}

// TestLoopAllocatesNothingPerTick: with a model that allocates nothing, a tick
// (plan, prompt, request through the worker, wait under a deadline, step, record) must
// not allocate either.
func TestLoopAllocatesNothingPerTick(t *testing.T) {
	for _, fps := range []float64{0, 1} { // 1 fps: a deadline is armed every tick, never hit
		var rec bytes.Buffer
		rec.Grow(1 << 20)
		l := newLoop(t, &fakeModel{favour: Right}, Config{GameConfig: GameConfig{Width: 24, Height: 16, Seed: 3}, FPS: fps, Record: &rec})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		for range 20 { // warm: the first ticks size the record buffer
			if _, err := l.Tick(ctx); err != nil {
				t.Fatal(err)
			}
		}
		allocs := testing.AllocsPerRun(300, func() {
			if _, err := l.Tick(ctx); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("fps %v: %v allocations per tick, want 0", fps, allocs)
		}
		if !l.Game().Alive() {
			t.Fatal("died")
		}
	}
}

// TestSlowModelMissesDeadlinesAndIsCancelled: a model 25× slower than the tick
// budget misses every deadline, the loop plays the shield's move without waiting for
// it, and every request's context is cancelled. The margins are wide on purpose: the
// model cannot answer faster than it sleeps, however loaded the machine is.
func TestSlowModelMissesDeadlinesAndIsCancelled(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		const ticks, delay = 10, 500 * time.Millisecond
		slow := &slowModel{delay: delay, ignoreCtx: ignore}
		l := newLoop(t, slow, Config{FPS: 50}) // 20 ms per tick
		start := time.Now()
		if err := l.Run(context.Background(), ticks); err != nil {
			t.Fatal(err)
		}
		elapsed := time.Since(start)
		s := l.Summary()
		if s.Steps != ticks || !s.Alive || s.DeadlineMisses != ticks || s.Answered != 0 || s.Interventions != 0 {
			t.Fatalf("ignoreCtx=%v: %+v", ignore, s)
		}
		// The loop never waited for the model: 10 ticks of 20 ms, not 10 × 500 ms.
		if elapsed > ticks*delay/2 {
			t.Errorf("ignoreCtx=%v: %d ticks took %v; the loop waited for the slow model", ignore, ticks, elapsed)
		}
		if p := slow.peak.Load(); p > maxInFlight {
			t.Errorf("ignoreCtx=%v: %d requests in flight, bound is %d", ignore, p, maxInFlight)
		}
		if int(slow.deadlines.Load()) != s.ModelCalls {
			t.Errorf("%d of %d calls had a deadline on their context", slow.deadlines.Load(), s.ModelCalls)
		}
		if !ignore && s.ModelCalls < ticks/2 {
			t.Errorf("a model honouring ctx frees its slot for the next ticks: only %d calls in %d ticks", s.ModelCalls, ticks)
		}
		if ignore && s.ModelCalls > maxInFlight {
			t.Errorf("a model ignoring ctx holds its slots: %d calls, at most %d can be open", s.ModelCalls, maxInFlight)
		}
		l.Close()
		time.Sleep(delay + 200*time.Millisecond) // let the stale calls end
		slow.mu.Lock()
		if len(slow.ends) != s.ModelCalls {
			t.Errorf("ignoreCtx=%v: %d calls ended, %d made", ignore, len(slow.ends), s.ModelCalls)
		}
		for i, e := range slow.ends {
			// Cancelled at its deadline, not later by the next tick or by Close.
			if !errors.Is(e, context.DeadlineExceeded) {
				t.Errorf("ignoreCtx=%v: call %d ended with %v, want context.DeadlineExceeded", ignore, i, e)
			}
		}
		slow.mu.Unlock()
	}
}

func TestDeadlineMetByAFastModel(t *testing.T) {
	slow := &slowModel{delay: time.Millisecond}
	const fps = 10
	l := newLoop(t, slow, Config{FPS: fps}) // 100 ms budget, 1 ms model
	if err := l.Run(context.Background(), 10); err != nil {
		t.Fatal(err)
	}
	s := l.Summary()
	if s.DeadlineMisses > 1 || s.Answered < 9 {
		t.Fatalf("%+v", s)
	}
	// The model sleeps 1 ms, so it cannot have answered faster (a lower bound holds on
	// any machine).
	if s.ModelMS.P50 < 1 || s.TickMS.P50 < s.ModelMS.P50 {
		t.Errorf("model p50 %.3f ms, tick p50 %.3f ms", s.ModelMS.P50, s.TickMS.P50)
	}
	// Timers never fire early, so pacing can only make the loop slower than the rate.
	if s.MovesPerSecond > fps*1.05 {
		t.Errorf("paced at %d fps: %.1f moves/s", fps, s.MovesPerSecond)
	}
}

func TestRunStopsOnContext(t *testing.T) {
	slow := &slowModel{delay: time.Hour}
	l := newLoop(t, slow, Config{FPS: 0.5})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := l.Run(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Tick(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("tick on a done context: %v", err)
	}
}

type badModel struct {
	a   Answers
	err error
}

func (b badModel) Decide(context.Context, laya.State, laya.Questions) (Answers, error) {
	return b.a, b.err
}

func TestModelFailuresStopTheLoop(t *testing.T) {
	boom := errors.New("boom")
	for _, m := range []badModel{{err: boom}, {a: Answers{Move: [4]float64{math.NaN(), 0, 0, 0}}}, {a: Answers{Move: [4]float64{2, 0, 0, 0}}}} {
		l := newLoop(t, m, Config{})
		_, err := l.Tick(context.Background())
		if !errors.Is(err, ErrModel) {
			t.Fatalf("%+v: err = %v, want ErrModel", m, err)
		}
		if m.err != nil && !errors.Is(err, boom) {
			t.Fatalf("err = %v does not wrap the model's", err)
		}
	}
	panicky := ModelFunc(func(context.Context, laya.State, laya.Questions) (Answers, error) { panic("boom") })
	if _, err := newLoop(t, panicky, Config{}).Tick(context.Background()); !errors.Is(err, ErrModel) || !strings.Contains(err.Error(), "panicked: boom") {
		t.Fatalf("panicking model: %v", err)
	}
	if _, err := New(nil, Config{GameConfig: DefaultGame}); !errors.Is(err, ErrConfig) {
		t.Fatal(err)
	}
	for _, fps := range []float64{-1, math.NaN(), MaxFPS + 1, 1e-12, math.Inf(1)} {
		if _, err := New(&fakeModel{}, Config{GameConfig: DefaultGame, FPS: fps}); !errors.Is(err, ErrConfig) {
			t.Fatalf("fps %v: %v", fps, err)
		}
	}
}

func TestRecordFormat(t *testing.T) {
	var rec bytes.Buffer
	slow := &slowModel{delay: 30 * time.Millisecond}
	// 1: fast and shielded; 2: deadline misses.
	for _, tc := range []struct {
		m    Model
		fps  float64
		miss bool
	}{{&fakeModel{favour: Left}, 0, false}, {slow, 100, true}} {
		rec.Reset()
		l := newLoop(t, tc.m, Config{GameConfig: GameConfig{Width: 8, Height: 6, Seed: 2}, FPS: tc.fps, Record: &rec})
		if err := l.Run(context.Background(), 40); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(rec.String(), "\n"), "\n")
		if len(lines) != 40 {
			t.Fatalf("%d lines, want one per tick (40)", len(lines))
		}
		for i, line := range lines {
			var r struct {
				Tick          *int                `json:"tick"`
				Probabilities map[string]float64  `json:"probabilities"`
				Chosen        *string             `json:"chosen"`
				Executed      *string             `json:"executed"`
				LatencyMS     *float64            `json:"latency_ms"`
				ModelMS       *float64            `json:"model_ms"`
				Safe          []string            `json:"safe"`
				Criteria      map[string]string   `json:"criteria"`
				DeadlineMiss  bool                `json:"deadline_miss"`
				Intervened    bool                `json:"intervened"`
				PSafe         *float64            `json:"p_safe_route"`
				Head          []int               `json:"head"`
				Alive         bool                `json:"alive"`
				Extra         map[string]struct{} `json:"-"`
			}
			dec := json.NewDecoder(strings.NewReader(line))
			if err := dec.Decode(&r); err != nil {
				t.Fatalf("line %d is not JSON: %v\n%s", i+1, err, line)
			}
			if r.Tick == nil || *r.Tick != i+1 || r.Executed == nil || r.LatencyMS == nil || *r.LatencyMS < 0 || len(r.Head) != 2 || !r.Alive {
				t.Fatalf("line %d: %s", i+1, line)
			}
			if !contains(strings.Join(r.Safe, ","), *r.Executed) {
				t.Fatalf("line %d: executed %s is not among the safe moves %v", i+1, *r.Executed, r.Safe)
			}
			if len(r.Criteria) != 4 {
				t.Fatalf("line %d: criteria %v", i+1, r.Criteria)
			}
			if tc.miss {
				if !r.DeadlineMiss || r.Probabilities != nil || r.Chosen != nil || r.ModelMS != nil || r.PSafe != nil {
					t.Fatalf("line %d of a missed tick: %s", i+1, line)
				}
				// A missed tick waited out its whole 10 ms budget (timers never fire early).
				if *r.LatencyMS < 10 {
					t.Fatalf("line %d: a missed tick took %v ms, under its 10 ms budget", i+1, *r.LatencyMS)
				}
				continue
			}
			sum := 0.0
			for _, d := range directionNames {
				p, ok := r.Probabilities[d]
				if !ok {
					t.Fatalf("line %d: no probability for %s", i+1, d)
				}
				sum += p
			}
			if math.Abs(sum-1) > 1e-9 || r.Chosen == nil || *r.Chosen != "LEFT" || r.DeadlineMiss || r.ModelMS == nil {
				t.Fatalf("line %d: %s", i+1, line)
			}
			if r.Intervened == (*r.Executed == "LEFT") {
				t.Fatalf("line %d: intervened=%v but executed %s for a LEFT argmax", i+1, r.Intervened, *r.Executed)
			}
		}
	}
}

func TestSummaryJSONFields(t *testing.T) {
	l := newLoop(t, &fakeModel{favour: Down}, Config{})
	if err := l.Run(context.Background(), 30); err != nil {
		t.Fatal(err)
	}
	s := l.Summary()
	s.Backend, s.Model = "cpu", "m"
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"steps", "alive", "score", "moves_per_s", "tick_ms", "deadline_misses", "interventions", "model_calls", "backend", "model", "model_ms"} {
		if _, ok := m[k]; !ok {
			t.Errorf("summary has no %q: %s", k, data)
		}
	}
	tm := m["tick_ms"].(map[string]any)
	for _, k := range []string{"p50", "p95", "p99"} {
		if v, ok := tm[k].(float64); !ok || v < 0 {
			t.Errorf("tick_ms.%s = %v", k, tm[k])
		}
	}
	if s.TickMS.P50 > s.TickMS.P95 || s.TickMS.P95 > s.TickMS.P99 {
		t.Errorf("percentiles out of order: %+v", s.TickMS)
	}
}

func TestBenchmarkFindsTheHighestPassingRate(t *testing.T) {
	// A model taking 20 ms: 10 and 5 fps (100 and 200 ms budgets) pass, 1000 fps (1 ms)
	// misses (nearly) every tick. With 2 ms the 1000 fps row flaked on a loaded CI
	// machine (2 of 5 ticks missed: a deadline timer firing over a millisecond late lets
	// the model's answer in); 20 ms leaves 19 ms of timer slack and 80 ms of budget.
	const delay = 20 * time.Millisecond
	slow := &slowModel{delay: delay}
	var runs []BenchRun
	rep, err := Benchmark(context.Background(), slow, BenchConfig{
		GameConfig: GameConfig{Width: 8, Height: 8}, Seeds: []uint64{1, 2}, Rates: []float64{1000, 5, 10, 10}, Steps: 5, Warmup: 2, RawSteps: 50,
		Progress: func(r BenchRun) { runs = append(runs, r) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Raw) != 2 || len(rep.Uncapped) != 2 || len(rep.Paced) != 6 || len(runs) != 10 || len(rep.Rates) != 3 {
		t.Fatalf("%d raw, %d uncapped, %d paced, %d progress calls, rates %v", len(rep.Raw), len(rep.Uncapped), len(rep.Paced), len(runs), rep.Rates)
	}
	if rep.HighestPassingFPS != 10 {
		t.Fatalf("highest passing fps %v, want 10: %+v", rep.HighestPassingFPS, rep.Paced)
	}
	// The slow model always says UP: unassisted, it runs into the top wall of an 8×8 board.
	for _, r := range rep.Raw {
		if r.Kind != "raw" || r.Summary.Alive || r.Summary.Death != "wall" || r.Summary.Steps > 8 || r.Passes || !r.Summary.Unassisted {
			t.Errorf("raw run: %+v", r)
		}
	}
	for _, r := range rep.Paced {
		// Most ticks miss, not necessarily all: a late answer can land
		// inside a later tick's budget and count for it (CI saw 4 of 5
		// on a loaded machine).
		if r.FPS == 1000 && (r.Passes || r.MissFraction < 0.5 || !r.Summary.Alive) {
			t.Errorf("1000 fps with a %v model: %+v", delay, r)
		}
	}
	if rep.UncappedMovesPerSecond <= 0 || rep.UncappedMovesPerSecond > float64(time.Second/delay) {
		t.Errorf("uncapped %.1f moves/s for a %v model", rep.UncappedMovesPerSecond, delay)
	}
	for _, rates := range [][]float64{{0}, {-2}, {1e-9}} {
		if _, err := Benchmark(context.Background(), slow, BenchConfig{GameConfig: DefaultGame, Seeds: []uint64{1}, Rates: rates, Steps: 5}); !errors.Is(err, ErrConfig) {
			t.Errorf("rates %v: %v", rates, err)
		}
	}
}

func TestBenchRunPassCriterion(t *testing.T) {
	// 1 miss in 100 ticks passes (≤ 1 %), 2 do not; a dead snake never passes.
	for _, c := range []struct {
		misses int
		alive  bool
		want   bool
	}{{0, true, true}, {1, true, true}, {2, true, false}, {0, false, false}} {
		if got := passes(Summary{Steps: 100, Alive: c.alive, DeadlineMisses: c.misses}, 100); got != c.want {
			t.Errorf("%d misses alive=%v: passes=%v", c.misses, c.alive, got)
		}
	}
	if !passes(Summary{Steps: 40, Won: true}, 100) {
		t.Error("a won game ends early and passes")
	}
	if passes(Summary{Steps: 40, Alive: true}, 100) {
		t.Error("a game cut short does not pass")
	}
}

// plannerReader is a model that reads the move question's criteria and picks what
// they recommend: eat now, else the best route. It sees only the prompt.
type plannerReader struct{}

func (plannerReader) Decide(_ context.Context, _ laya.State, qs laya.Questions) (Answers, error) {
	var a Answers
	best := -1
	for _, m := range qs[0].Definition.Members() {
		if m.Key != "criteria" {
			continue
		}
		for i, c := range m.Value.Members() {
			if c.Key != directionNames[i] {
				return a, errors.New("criteria out of option order")
			}
			switch c.Value.Str() {
			case "Safe. Eat food now. Best.":
				best = i
			case "Safe. Best route to food.":
				if best < 0 || a.Move[best] < 0.5 {
					best = i
				}
			}
			if best == i {
				a.Move = [4]float64{}
				a.Move[i] = 1
			}
		}
	}
	if best < 0 {
		return a, errors.New("no safe option offered")
	}
	a.SafeRoute, a.FoodReachable = 1, 1
	return a, nil
}

func TestPlannerFollowingModelFillsTheBoard(t *testing.T) {
	l := newLoop(t, plannerReader{}, Config{GameConfig: GameConfig{Width: 4, Height: 6, Seed: 3, InitialLength: 3}})
	if err := l.Run(context.Background(), 10000); err != nil {
		t.Fatal(err)
	}
	s := l.Summary()
	if !s.Won || !s.Alive || s.Length != 24 || s.Score != 21 || s.Interventions != 0 || s.Steps >= 10000 {
		t.Fatalf("%+v", s)
	}
}
