package snake

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/internal/stats"
)

// Config sets up a Loop.
type Config struct {
	GameConfig
	// FPS is the tick rate: each tick has 1/FPS seconds, and a decision not back by
	// then is cancelled and replaced by the shield's move. 0 runs as fast as the
	// model answers, with no deadline.
	FPS float64
	// Unassisted executes the model's argmax even when it is unsafe (no shield).
	Unassisted bool
	// Record, when set, receives one JSON line per tick (see Tick.AppendJSON).
	Record io.Writer
}

// MinFPS and MaxFPS bound a paced tick rate (0, unpaced, is allowed too): 10 s to
// 0.1 ms per tick.
const (
	MinFPS = 0.1
	MaxFPS = 10000
)

// maxInFlight bounds the requests a loop has open: the current one plus stale ones
// that ignored their cancellation and are still running. When every slot is taken the
// tick does not wait for the model at all (a deadline miss).
const maxInFlight = 3

// latencyWindow is how many recent ticks the percentiles cover.
const latencyWindow = 1 << 16

// Tick is what happened in one tick. The loop reuses it: copy what you keep.
type Tick struct {
	N        int  // 1-based tick count over the loop's life
	Round    int  // 1-based game count (r resets and deaths start new rounds)
	Plan     Plan // the position before the move
	Answered bool // the decision arrived in time
	Answers  Answers
	Proposed Direction // the model's argmax, NoDirection when it did not answer
	Executed Direction // the move played
	// Intervened: the shield replaced an unsafe argmax with the most probable safe move.
	Intervened bool
	// DeadlineMiss: no decision by the deadline; it was cancelled and the shield's
	// move played.
	DeadlineMiss bool
	ModelTime    time.Duration // request to answer (0 when missed)
	TickTime     time.Duration // plan + decide + step + record, without pacing
	Ate          bool
	Alive        bool
	Score        int
	Length       int
	Head, Food   Point
}

// Loop is the real-time decision loop: each tick plans, asks the model once under the
// tick's deadline, executes the model's move or the shield's, and steps the game.
// A Loop is used from one goroutine; the model runs on the loop's own workers.
type Loop struct {
	cfg    Config
	model  Model
	game   *Game
	budget time.Duration
	slots  [maxInFlight]*slot
	timer  *time.Timer
	tick   Tick
	rec    *bufio.Writer
	line   []byte
	recErr error

	round, best                                         int
	steps, calls, answered, misses, interventions, dead int
	lat                                                 []float64 // ring of tick times, ms
	modelLat                                            []float64 // ring of answered model times, ms
	first, last                                         time.Time
	closed                                              bool
}

type request struct {
	state     laya.State
	questions laya.Questions
}

type response struct {
	answers Answers
	err     error
	took    time.Duration
}

// slot is one request channel to one worker goroutine. busy is the loop's: a request
// was sent and its response not yet taken.
type slot struct {
	ctx  *tickContext
	req  chan request
	res  chan response
	busy bool
}

// New makes a loop over a fresh game. Close it to stop its workers.
func New(model Model, cfg Config) (*Loop, error) {
	if model == nil {
		return nil, fmt.Errorf("%w: no model", ErrConfig)
	}
	if err := CheckFPS(cfg.FPS); err != nil {
		return nil, err
	}
	g, err := NewGame(cfg.GameConfig)
	if err != nil {
		return nil, err
	}
	cfg.GameConfig = g.Config()
	sharedPrompts() // built once, before the first deadline
	l := &Loop{cfg: cfg, model: model, game: g, round: 1,
		lat: make([]float64, 0, latencyWindow), modelLat: make([]float64, 0, latencyWindow),
		line: make([]byte, 0, 1024)}
	l.SetFPS(cfg.FPS)
	l.timer = time.NewTimer(time.Hour)
	l.timer.Stop()
	if cfg.Record != nil {
		l.rec = bufio.NewWriterSize(cfg.Record, 64<<10)
	}
	for i := range l.slots {
		s := &slot{ctx: newTickContext(), req: make(chan request, 1), res: make(chan response, 1)}
		l.slots[i] = s
		go worker(model, s)
	}
	return l, nil
}

func worker(m Model, s *slot) {
	for r := range s.req {
		t0 := time.Now()
		a, err := decideSafely(m, s.ctx, r)
		s.res <- response{answers: a, err: err, took: time.Since(t0)}
	}
}

// decideSafely turns a panicking model into an error, so the loop reports it instead
// of the program dying on a worker goroutine.
func decideSafely(m Model, ctx context.Context, r request) (a Answers, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("model panicked: %v", p)
		}
	}()
	return m.Decide(ctx, r.state, r.questions)
}

// Game is the loop's game (read it between ticks only).
func (l *Loop) Game() *Game { return l.game }

// Config returns the loop's settings, FPS as currently set.
func (l *Loop) Config() Config { return l.cfg }

// CheckFPS accepts 0 (unpaced) and rates in [MinFPS, MaxFPS].
func CheckFPS(fps float64) error {
	if fps != 0 && !(fps >= MinFPS && fps <= MaxFPS) {
		return fmt.Errorf("%w: fps %v must be 0 (as fast as possible) or between %v and %v", ErrConfig, fps, MinFPS, MaxFPS)
	}
	return nil
}

// SetFPS changes the tick rate from the next tick on (0, or clamped to
// [MinFPS, MaxFPS]).
func (l *Loop) SetFPS(fps float64) {
	if math.IsNaN(fps) || fps <= 0 {
		fps = 0
	} else {
		fps = max(MinFPS, min(fps, MaxFPS))
	}
	l.cfg.FPS = fps
	l.budget = 0
	if fps > 0 {
		l.budget = time.Duration(float64(time.Second) / fps)
	}
}

// Budget is the time a tick has (0: no deadline).
func (l *Loop) Budget() time.Duration { return l.budget }

// NewRound starts a new game with seed, cancelling any request still running; the
// counters carry on.
func (l *Loop) NewRound(seed uint64) {
	l.cancelStale(context.Canceled)
	l.game.Reset(seed)
	l.round++
}

// Round is the current game's number (1 for the first).
func (l *Loop) Round() int { return l.round }

func (l *Loop) cancelStale(err error) {
	for _, s := range l.slots {
		if s.busy {
			s.ctx.cancel(err)
		}
	}
}

// freeSlot returns a slot no request runs on, collecting the late answers of stale
// requests on the way (they are discarded), or nil when all are still running.
func (l *Loop) freeSlot() *slot {
	var free *slot
	for _, s := range l.slots {
		if s.busy {
			select {
			case <-s.res:
				s.busy = false
			default:
			}
		}
		if !s.busy && free == nil {
			free = s
		}
	}
	return free
}

// Tick plays one tick: plan, one decision under the deadline, move, step, record. It
// does not pace; Run does. It allocates nothing beyond what the model does.
func (l *Loop) Tick(ctx context.Context) (*Tick, error) {
	if l.closed {
		return nil, fmt.Errorf("%w: loop closed", ErrConfig)
	}
	if !l.game.Alive() {
		return nil, ErrGameOver
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	start := time.Now()
	if l.first.IsZero() {
		l.first = start
	}
	t := &l.tick
	*t = Tick{N: l.steps + 1, Round: l.round, Proposed: NoDirection}
	l.game.Plan(&t.Plan)
	if !l.cfg.Unassisted && t.Plan.SafeCount == 0 {
		return nil, fmt.Errorf("%w: no safe move at tick %d", ErrShield, l.game.Ticks())
	}
	// A request still running belongs to an older tick: make sure it is cancelled.
	l.cancelStale(context.Canceled)
	if err := l.decide(ctx, t, start); err != nil {
		return nil, err
	}
	if t.Answered {
		t.Proposed = t.Answers.Argmax()
		t.Executed = t.Proposed
		if !l.cfg.Unassisted && !t.Plan.Moves[t.Proposed].Safe {
			t.Executed = mostProbableSafe(&t.Plan, &t.Answers)
			t.Intervened = true
			l.interventions++
		}
	} else {
		t.Executed = t.Plan.fallback()
		t.DeadlineMiss = true
		l.misses++
	}
	ate, err := l.game.Step(t.Executed)
	if err != nil {
		return nil, err
	}
	l.steps++
	t.Ate, t.Alive, t.Score, t.Length = ate, l.game.Alive(), l.game.Score(), l.game.Len()
	t.Head = l.game.Head()
	t.Food, _ = l.game.Food()
	l.best = max(l.best, t.Score)
	if l.game.Death() != Alive {
		l.dead++
	}
	t.TickTime = time.Since(start)
	if len(l.lat) < cap(l.lat) {
		l.lat = append(l.lat, ms(t.TickTime))
	} else {
		l.lat[(l.steps-1)%cap(l.lat)] = ms(t.TickTime)
	}
	if l.rec != nil && l.recErr == nil {
		l.line = t.AppendJSON(l.line[:0])
		l.line = append(l.line, '\n')
		if _, err := l.rec.Write(l.line); err != nil {
			l.recErr = fmt.Errorf("snake: record: %w", err)
		}
	}
	l.last = time.Now()
	return t, l.recErr
}

// decide sends the tick's request and waits for the answer, the deadline or ctx.
func (l *Loop) decide(ctx context.Context, t *Tick, start time.Time) error {
	s := l.freeSlot()
	if s == nil {
		return nil // every worker is stuck on a stale request: a miss
	}
	var deadline time.Time
	var timeout <-chan time.Time
	if l.budget > 0 {
		deadline = start.Add(l.budget)
		l.timer.Reset(time.Until(deadline))
		timeout = l.timer.C
	}
	state, questions := Prompt(&t.Plan)
	s.ctx.arm(ctx, deadline)
	s.busy = true
	s.req <- request{state: state, questions: questions}
	l.calls++
	select {
	case r := <-s.res:
		s.busy = false
		l.timer.Stop()
		if r.err != nil {
			if errors.Is(r.err, context.DeadlineExceeded) && ctx.Err() == nil {
				return nil // the model gave up at the deadline itself: a miss
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			return fmt.Errorf("%w: %w", ErrModel, r.err)
		}
		if err := r.answers.check(); err != nil {
			return err
		}
		t.Answers, t.Answered, t.ModelTime = r.answers, true, r.took
		if len(l.modelLat) < cap(l.modelLat) {
			l.modelLat = append(l.modelLat, ms(r.took))
		} else {
			l.modelLat[l.answered%cap(l.modelLat)] = ms(r.took)
		}
		l.answered++
	case <-timeout:
		s.ctx.cancel(context.DeadlineExceeded)
	case <-ctx.Done():
		l.timer.Stop()
		s.ctx.cancel(context.Canceled)
		return ctx.Err()
	}
	return nil
}

// mostProbableSafe is the shield's override: the safe move the model likes best (the
// first in option order on ties).
func mostProbableSafe(p *Plan, a *Answers) Direction {
	best := NoDirection
	for _, d := range Directions {
		if p.Moves[d].Safe && (best == NoDirection || a.Move[d] > a.Move[best]) {
			best = d
		}
	}
	return best
}

// Run plays up to steps ticks (0: until the game ends or ctx is done), pacing them to
// the tick rate on a fixed schedule (so timer overshoot does not lower the rate; a
// loop more than a tick behind restarts its schedule). It stops early when the game
// ends; ctx ending is not an error.
func (l *Loop) Run(ctx context.Context, steps int) error {
	next := time.Now()
	for i := 0; steps == 0 || i < steps; i++ {
		if !l.game.Alive() {
			return nil
		}
		if _, err := l.Tick(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if l.budget <= 0 {
			continue
		}
		next = next.Add(l.budget)
		if now := time.Now(); now.Sub(next) > l.budget {
			next = now
		}
		if !l.sleepUntil(ctx, next) {
			return nil
		}
	}
	return nil
}

// sleepUntil waits for t; false when ctx ended first.
func (l *Loop) sleepUntil(ctx context.Context, t time.Time) bool {
	if wait := time.Until(t); wait > 0 {
		l.timer.Reset(wait)
		select {
		case <-l.timer.C:
		case <-ctx.Done():
			l.timer.Stop()
			return false
		}
	}
	l.last = time.Now()
	return true
}

// Recent copies the latest tick times (ms, oldest first) into dst and returns it.
func (l *Loop) Recent(dst []float64) []float64 {
	n := min(len(dst), len(l.lat))
	dst = dst[:n]
	for i := range n {
		k := l.steps - n + i // tick index, 0-based
		dst[i] = l.lat[k%cap(l.lat)]
	}
	return dst
}

// Close cancels any running request, stops the workers and flushes the record.
func (l *Loop) Close() error {
	if l.closed {
		return nil
	}
	l.closed = true
	l.cancelStale(context.Canceled)
	for _, s := range l.slots {
		close(s.req)
	}
	l.timer.Stop()
	if l.rec != nil {
		if err := l.rec.Flush(); err != nil && l.recErr == nil {
			l.recErr = fmt.Errorf("snake: record: %w", err)
		}
	}
	return l.recErr
}

// Percentiles are tick times in milliseconds.
type Percentiles struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
}

// Summary is a run's outcome, the object --headless --json prints. Alive is false
// only for a snake that died (one that filled the board is alive and Won).
type Summary struct {
	Steps          int         `json:"steps"`
	Alive          bool        `json:"alive"`
	Score          int         `json:"score"`
	MovesPerSecond float64     `json:"moves_per_s"`
	TickMS         Percentiles `json:"tick_ms"`
	// ModelMS covers the answered decisions only: request to answer.
	ModelMS        Percentiles `json:"model_ms"`
	DeadlineMisses int         `json:"deadline_misses"`
	Interventions  int         `json:"interventions"`
	ModelCalls     int         `json:"model_calls"`
	Backend        string      `json:"backend"`
	Model          string      `json:"model"`

	Won        bool    `json:"won"`
	Death      string  `json:"death"`
	Length     int     `json:"length"`
	BestScore  int     `json:"best_score"`
	Rounds     int     `json:"rounds"`
	Deaths     int     `json:"deaths"`
	Answered   int     `json:"answered"`
	Seconds    float64 `json:"seconds"`
	Seed       uint64  `json:"seed"`
	Width      int     `json:"width"`
	Height     int     `json:"height"`
	FPS        float64 `json:"fps"`
	Unassisted bool    `json:"unassisted"`
}

// Summary reports the loop so far. Percentiles cover the last 65,536 ticks (answers).
func (l *Loop) Summary() Summary {
	g := l.game
	s := Summary{
		Steps: l.steps, Alive: g.Death() == Alive, Score: g.Score(),
		DeadlineMisses: l.misses, Interventions: l.interventions, ModelCalls: l.calls,
		Won: g.Won(), Death: g.Death().String(), Length: g.Len(), BestScore: l.best,
		Rounds: l.round, Deaths: l.dead, Answered: l.answered, Seed: g.Config().Seed,
		Width: g.Width(), Height: g.Height(), FPS: l.cfg.FPS, Unassisted: l.cfg.Unassisted,
	}
	if l.steps > 0 {
		s.Seconds = l.last.Sub(l.first).Seconds()
		if s.Seconds > 0 {
			s.MovesPerSecond = round3(float64(l.steps) / s.Seconds)
		}
		s.Seconds = round3(s.Seconds)
		s.TickMS = percentiles(l.lat)
		s.ModelMS = percentiles(l.modelLat)
	}
	return s
}

func percentiles(ms []float64) Percentiles {
	sorted := slices.Clone(ms)
	slices.Sort(sorted)
	return Percentiles{P50: round3(stats.Percentile(sorted, 50)), P95: round3(stats.Percentile(sorted, 95)), P99: round3(stats.Percentile(sorted, 99))}
}

// round3 keeps microseconds of a millisecond figure: timings are not more exact.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Counters are the loop's running totals, cheap to read every frame.
type Counters struct {
	Steps, ModelCalls, Answered, DeadlineMisses, Interventions, Deaths, BestScore, Round int
}

// Counters returns the running totals.
func (l *Loop) Counters() Counters {
	return Counters{Steps: l.steps, ModelCalls: l.calls, Answered: l.answered, DeadlineMisses: l.misses,
		Interventions: l.interventions, Deaths: l.dead, BestScore: l.best, Round: l.round}
}
