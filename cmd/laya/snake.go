package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/gdamore/tcell/v2"
	"golang.org/x/term"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/internal/cli"
	"github.com/laya-metal/laya/snake"
	"github.com/laya-metal/laya/snake/tui"
)

func init() {
	register("snake", command{
		summary: "play Snake with a Laya model deciding every move in real time (laya snake benchmark: deadlines)",
		run:     runSnake,
	})
}

// defaultSnakeModel is the bundled checkpoint; its weights are random, so the shield,
// not the model, keeps the snake alive.
const defaultSnakeModel = "testdata/oracle/checkpoints/real-en"

const snakeUsage = `Usage: laya snake [--model DIR|ORG/NAME] [--backend auto] [--fps 12] [--steps N]
                  [--width 24] [--height 16] [--seed 7] [--initial-length 6]
                  [--unassisted] [--record FILE] [--headless [--json]]
       laya snake benchmark [flags]   (laya snake benchmark -h)

A Laya model plays Snake. Every tick it answers three questions in one
Agent.Predict on a compact state text: "move" (UP/DOWN/LEFT/RIGHT, with the
planner's verdict on each as the option text), "risk" ("Is a safe route
available?") and "food" ("Is food reachable through empty cells?"). The most
probable move is played when it is safe; otherwise the shield plays the most
probable safe move (an intervention). Safe means: no collision, no trap (the
head can still reach its tail), and progress along a Hamiltonian cycle of the
board, so a shielded snake never dies. --unassisted plays the raw argmax.

Each tick has 1/fps seconds (--fps 0: no deadline, as fast as the model goes).
A decision not back in time is cancelled through its context and the shield's
move is played (a deadline miss).

The default model is the bundled real-en checkpoint, whose weights are random:
its probabilities mean nothing and the shield keeps the snake alive. Point
--model at a real checkpoint (convaiinnovations/laya) for real decisions.

Without --headless a terminal UI shows the board, the probabilities, P(safe
route), P(food), a latency sparkline and moves/s. Keys: space pause, ↑/↓ or +/-
fps, r reset, q quit.

--record FILE writes one JSON line per tick (tick, probabilities, chosen,
executed, latency_ms, ...). --headless --json prints one summary object:
{"steps","alive","score","moves_per_s","tick_ms":{"p50","p95","p99"},
"deadline_misses","interventions","model_calls","backend","model",...}.

Examples:
  $ laya snake
  $ laya snake --headless --json --steps 600 --fps 0
  $ laya snake --headless --steps 300 --fps 60 --record /tmp/snake.jsonl
  $ laya snake benchmark --seeds 101,102,103 --rates 10,20,40,80

Flags:
`

// snakeFlags are the flags laya snake and laya snake benchmark share.
type snakeFlags struct {
	model, backend string
	batchSize      int
	width, height  int
	initialLength  int
	unassisted     bool
}

func (f *snakeFlags) register(fs interface {
	StringVar(*string, string, string, string)
	IntVar(*int, string, int, string)
	BoolVar(*bool, string, bool, string)
}) {
	fs.StringVar(&f.model, "model", defaultSnakeModel, "Laya checkpoint `DIR` or Hub id")
	fs.StringVar(&f.backend, "backend", "auto", "compute `backend`: "+backendList())
	fs.IntVar(&f.batchSize, "batch-size", 3, "question rows per forward batch (3 questions per tick)")
	fs.IntVar(&f.width, "width", snake.DefaultGame.Width, "board width in cells (≥ 4; one side even)")
	fs.IntVar(&f.height, "height", snake.DefaultGame.Height, "board height in cells (≥ 4; one side even)")
	fs.IntVar(&f.initialLength, "initial-length", snake.DefaultGame.InitialLength, "snake length at the start (≥ 2)")
	fs.BoolVar(&f.unassisted, "unassisted", false, "play the model's argmax even when unsafe (no shield)")
}

// game checks the board flags before anything is loaded.
func (f *snakeFlags) game(seed uint64) (snake.GameConfig, error) {
	gc := snake.GameConfig{Width: f.width, Height: f.height, Seed: seed, InitialLength: f.initialLength}
	if f.initialLength < 2 { // 0 would silently mean the default
		return gc, usagef("--initial-length %d: %w: the snake needs at least 2 cells", f.initialLength, snake.ErrConfig)
	}
	if _, err := snake.NewGame(gc); err != nil {
		return gc, usagef("--width %d --height %d --initial-length %d: %w", f.width, f.height, f.initialLength, err)
	}
	return gc, nil
}

func (f *snakeFlags) load(ctx context.Context, stderr io.Writer) (*laya.Agent, error) {
	if f.model == defaultSnakeModel {
		if _, err := os.Stat(defaultSnakeModel); err != nil {
			return nil, fmt.Errorf("the default --model is the repository's bundled %s: run from the repository root or pass --model DIR|ORG/NAME", defaultSnakeModel)
		}
	}
	if f.batchSize < 1 {
		return nil, usagef("--batch-size %d must be at least 1", f.batchSize)
	}
	agent, err := laya.Load(ctx, f.model, laya.WithBackend(f.backend), laya.WithBatchSize(f.batchSize),
		laya.WithHub(progressClient(stderr)))
	if err != nil {
		return nil, err
	}
	// Reports and titles name the backend that runs, not "auto".
	f.backend = agent.Backend()
	printBackendNote(stderr, agent)
	return agent, nil
}

func checkFPS(fps float64) error {
	if err := snake.CheckFPS(fps); err != nil {
		return usagef("--fps: %w", err)
	}
	return nil
}

// warmup plays a few unmeasured ticks on another seed, so the first measured tick
// does not pay for first-call costs (upstream warms up the same way).
func warmup(ctx context.Context, m snake.Model, gc snake.GameConfig, ticks int) error {
	if ticks <= 0 {
		return nil
	}
	gc.Seed += 10000
	l, err := snake.New(m, snake.Config{GameConfig: gc})
	if err != nil {
		return err
	}
	defer l.Close()
	return l.Run(ctx, ticks)
}

func runSnake(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "benchmark" {
		return runSnakeBenchmark(ctx, args[1:], stdout, stderr)
	}
	fs := newFlags("snake", snakeUsage, stderr)
	var sf snakeFlags
	sf.register(fs)
	seed := fs.Uint64("seed", snake.DefaultGame.Seed, "food `seed` (r and new rounds use the next seeds)")
	fps := fs.Float64("fps", 12, "ticks per second; 0 = as fast as possible, no deadline")
	steps := fs.Int("steps", 0, "stop after `N` ticks (0: until q, Ctrl-C or, headless, the end of the game)")
	record := fs.String("record", "", "write one JSON line per tick to `FILE`")
	headless := fs.Bool("headless", false, "run without the terminal UI; print a summary")
	asJSON := fs.Bool("json", false, "with --headless: print the summary as one JSON object")
	warm := fs.Int("warmup", 6, "unmeasured warm-up `ticks` before the game (on another seed)")
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	gc, err := sf.game(*seed)
	if err != nil {
		return err
	}
	if err := checkFPS(*fps); err != nil {
		return err
	}
	switch {
	case *steps < 0:
		return usagef("--steps %d must be 0 (no limit) or more", *steps)
	case *warm < 0:
		return usagef("--warmup %d must be 0 or more", *warm)
	case *asJSON && !*headless:
		return usagef("--json needs --headless (the terminal UI has no summary object)")
	}
	var tty *os.File
	if !*headless {
		f, ok := stdout.(*os.File)
		if !ok || !term.IsTerminal(int(f.Fd())) {
			return usagef("the terminal UI needs a terminal; use --headless for a run without one")
		}
		tty = f
	}
	var rec *os.File
	if *record != "" {
		if rec, err = os.Create(*record); err != nil {
			return fmt.Errorf("--record: %w", err)
		}
		defer rec.Close()
	}
	agent, err := sf.load(ctx, stderr)
	if err != nil {
		return err
	}
	defer agent.Close()
	model := snake.AgentModel{Agent: agent}
	if err := warmup(ctx, model, gc, *warm); err != nil {
		return err
	}
	cfg := snake.Config{GameConfig: gc, FPS: *fps, Unassisted: sf.unassisted}
	if rec != nil {
		cfg.Record = rec
	}
	loop, err := snake.New(model, cfg)
	if err != nil {
		return err
	}
	var sum snake.Summary
	if tty != nil {
		sum, err = playTUI(ctx, loop, sf, *steps)
	} else {
		err = loop.Run(ctx, *steps)
		sum = loop.Summary()
	}
	if cerr := loop.Close(); err == nil {
		err = cerr
	}
	if rec != nil {
		if cerr := rec.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("--record: %w", cerr)
		}
	}
	if err != nil {
		return err
	}
	sum.Backend, sum.Model = sf.backend, sf.model
	if *asJSON {
		data, err := json.Marshal(sum)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, string(data))
		return err
	}
	_, err = fmt.Fprintln(stdout, summaryLine(sum))
	return err
}

func summaryLine(s snake.Summary) string {
	state := "alive"
	switch {
	case s.Won:
		state = "won (board filled)"
	case !s.Alive:
		state = "dead (" + s.Death + ")"
	}
	return fmt.Sprintf("%d steps, %s, score %d, %.1f moves/s, tick p50 %.2f ms p95 %.2f ms p99 %.2f ms, %d deadline misses, %d interventions, %d model calls (%s, %s)",
		s.Steps, state, s.Score, s.MovesPerSecond, s.TickMS.P50, s.TickMS.P95, s.TickMS.P99,
		s.DeadlineMisses, s.Interventions, s.ModelCalls, s.Backend, s.Model)
}

func playTUI(ctx context.Context, loop *snake.Loop, sf snakeFlags, steps int) (snake.Summary, error) {
	screen, err := tcell.NewScreen()
	if err != nil {
		return snake.Summary{}, fmt.Errorf("terminal: %w", err)
	}
	if err := screen.Init(); err != nil {
		return snake.Summary{}, fmt.Errorf("terminal: %w", err)
	}
	defer screen.Fini()
	title := sf.model + " · " + sf.backend
	if sf.model == defaultSnakeModel {
		title = "real-en (random weights) · " + sf.backend
	}
	return tui.Run(ctx, screen, loop, tui.Options{Title: title, Steps: steps})
}

const snakeBenchUsage = `Usage: laya snake benchmark [--model DIR|ORG/NAME] [--backend auto]
                            [--seeds 101,102,103] [--rates 10,20,40,80,160,320] [--steps 150]
                            [--raw-steps 200] [--json] [--output FILE]

Plays every seed unassisted (the model's own argmax, no shield: how far the model
gets alone), then once with the shield as fast as possible (moves/s), then at
every rate, each tick under a 1/rate deadline, and reports the highest rate at
which every seed survived and at least 99 % of ticks met their deadline. Model
load and --warmup ticks are not measured. Timings depend on the machine and its
load.

Example:
  $ laya snake benchmark --seeds 101,102 --rates 20,50,100 --steps 100

Flags:
`

func runSnakeBenchmark(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("snake benchmark", snakeBenchUsage, stderr)
	var sf snakeFlags
	sf.register(fs)
	seedsArg := fs.String("seeds", "101,102,103", "comma-separated game `seeds`")
	ratesArg := fs.String("rates", "10,20,40,80,160,320", "comma-separated paced tick `rates` (fps)")
	steps := fs.Int("steps", 150, "ticks per game")
	warm := fs.Int("warmup", 20, "unmeasured warm-up `ticks` before the first game")
	rawSteps := fs.Int("raw-steps", 200, "also play each seed unassisted (no shield) for up to `N` ticks; 0: skip")
	asJSON := fs.Bool("json", false, "print the whole report as JSON instead of a table")
	output := fs.String("output", "", "also write the JSON report to `FILE`")
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	gc, err := sf.game(0)
	if err != nil {
		return err
	}
	seeds, err := parseList(*seedsArg, "--seeds", func(s string) (uint64, error) { return strconv.ParseUint(s, 10, 64) })
	if err != nil {
		return err
	}
	rates, err := parseList(*ratesArg, "--rates", func(s string) (float64, error) {
		r, err := strconv.ParseFloat(s, 64)
		if err == nil && r == 0 {
			err = errors.New("0 is the uncapped run, which is always played")
		}
		if err == nil {
			err = snake.CheckFPS(r)
		}
		return r, err
	})
	if err != nil {
		return err
	}
	if *steps < 1 || *warm < 0 || *rawSteps < 0 {
		return usagef("--steps %d must be at least 1, --warmup %d and --raw-steps %d at least 0", *steps, *warm, *rawSteps)
	}
	agent, err := sf.load(ctx, stderr)
	if err != nil {
		return err
	}
	defer agent.Close()
	// With --json the rows are progress, for a person at a terminal only:
	// stdout holds the report.
	progress := io.Discard
	if *asJSON && cli.IsTerminal(stderr) {
		progress = stderr
	}
	if !*asJSON {
		progress = stdout
		fmt.Fprintf(stdout, "%-6s %-9s %6s %6s %7s %10s %9s %9s %9s %7s %s\n",
			"seed", "fps", "steps", "alive", "score", "moves/s", "p50 ms", "p95 ms", "p99 ms", "missed", "passes")
	}
	rep, err := snake.Benchmark(ctx, snake.AgentModel{Agent: agent}, snake.BenchConfig{
		GameConfig: gc, Seeds: seeds, Rates: rates, Steps: *steps, Warmup: *warm, RawSteps: *rawSteps,
		Unassisted: sf.unassisted,
		Progress: func(r snake.BenchRun) {
			fps := r.Kind // raw, uncapped
			if r.FPS > 0 {
				fps = strconv.FormatFloat(r.FPS, 'g', -1, 64)
			}
			s := r.Summary
			fmt.Fprintf(progress, "%-6d %-9s %6d %6v %7d %10.1f %9.2f %9.2f %9.2f %6.1f%% %v\n",
				r.Seed, fps, s.Steps, s.Alive || s.Won, s.Score, s.MovesPerSecond, s.TickMS.P50, s.TickMS.P95, s.TickMS.P99,
				100*r.MissFraction, r.Passes)
		},
	})
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(struct {
		Model   string `json:"model"`
		Backend string `json:"backend"`
		snake.BenchReport
	}{sf.model, sf.backend, rep}, "", "  ")
	if err != nil {
		return err
	}
	if *output != "" {
		if err := os.WriteFile(*output, append(data, '\n'), 0o644); err != nil {
			return fmt.Errorf("--output: %w", err)
		}
	}
	if *asJSON {
		_, err = fmt.Fprintln(stdout, string(data))
		return err
	}
	highest := "none of the rates passed"
	if rep.HighestPassingFPS > 0 {
		highest = strconv.FormatFloat(rep.HighestPassingFPS, 'g', -1, 64) + " fps"
	}
	raw := ""
	if len(rep.Raw) > 0 {
		alive := 0
		for _, r := range rep.Raw {
			if r.Summary.Alive {
				alive++
			}
		}
		raw = fmt.Sprintf("; unassisted: %d of %d seeds survived %d ticks", alive, len(rep.Raw), *rawSteps)
	}
	_, err = fmt.Fprintf(stdout, "uncapped: %.1f moves/s over %d seeds; highest passing rate (alive, ≥ 99 %% of ticks on time, every seed): %s%s (%s, %s)\n",
		rep.UncappedMovesPerSecond, len(seeds), highest, raw, sf.backend, sf.model)
	return err
}

// parseList reads a comma-separated list of values.
func parseList[T any](arg, flagName string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for _, s := range strings.Split(arg, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		v, err := parse(s)
		if err != nil {
			return nil, usagef("%s: %q: %w", flagName, s, err)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, usagef("%s is empty", flagName)
	}
	return out, nil
}
