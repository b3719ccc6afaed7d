package snake

import (
	"context"
	"fmt"
	"slices"
)

// BenchConfig sets up Benchmark.
type BenchConfig struct {
	GameConfig           // board and initial length; Seed is unused (Seeds are)
	Seeds      []uint64  // one game per seed and rate
	Rates      []float64 // paced tick rates to try, fps > 0
	Steps      int       // ticks per game
	Warmup     int       // unmeasured ticks before the first game (model warm-up)
	// RawSteps > 0 also plays every seed unassisted (the model's argmax, no shield),
	// uncapped, for up to RawSteps ticks: how far the model gets on its own.
	RawSteps   int
	Unassisted bool
	// Progress, when set, is called after every game.
	Progress func(BenchRun)
}

// BenchRun is one game of a benchmark. FPS 0 is an uncapped run.
type BenchRun struct {
	Kind         string  `json:"kind"` // "raw" (unassisted), "uncapped" or "paced"
	Seed         uint64  `json:"seed"`
	FPS          float64 `json:"fps"`
	MissFraction float64 `json:"miss_fraction"`
	// Passes: the snake survived every tick (or filled the board) and at most 1 % of
	// ticks missed their deadline.
	Passes  bool    `json:"passes"`
	Summary Summary `json:"summary"`
}

// BenchReport is the outcome of a benchmark.
type BenchReport struct {
	Seeds    []uint64   `json:"seeds"`
	Rates    []float64  `json:"rates"`
	Steps    int        `json:"steps"`
	Raw      []BenchRun `json:"raw_unassisted,omitempty"`
	Uncapped []BenchRun `json:"uncapped"`
	Paced    []BenchRun `json:"paced"`
	// UncappedMovesPerSecond is total uncapped steps over their total time.
	UncappedMovesPerSecond float64 `json:"uncapped_moves_per_s"`
	// HighestPassingFPS is the highest rate at which every seed passed; 0 when none did.
	HighestPassingFPS float64 `json:"highest_passing_fps"`
}

// passFraction is the share of ticks that may miss their deadline in a passing run
// (upstream's benchmark: ≤ 1 %).
const passFraction = 0.01

// Benchmark plays every seed unassisted when RawSteps is set (the model alone), every
// seed uncapped (moves/s), then every seed at every rate (paced ticks under
// deadlines), and reports the highest rate at which every seed passed. The structure
// is upstream's benchmark (laya-mlx laya_mlx/snake/benchmark.py), with every seed
// played at every rate instead of a one-seed sweep followed by soaks.
func Benchmark(ctx context.Context, model Model, cfg BenchConfig) (BenchReport, error) {
	if len(cfg.Seeds) == 0 || len(cfg.Rates) == 0 || cfg.Steps < 1 {
		return BenchReport{}, fmt.Errorf("%w: a benchmark needs seeds, rates and steps ≥ 1", ErrConfig)
	}
	rates := slices.Clone(cfg.Rates)
	slices.Sort(rates)
	rates = slices.Compact(rates)
	for _, r := range rates {
		if r == 0 {
			return BenchReport{}, fmt.Errorf("%w: rate 0 is the uncapped run, which every benchmark plays; give paced rates", ErrConfig)
		}
		if err := CheckFPS(r); err != nil {
			return BenchReport{}, err
		}
	}
	rep := BenchReport{Seeds: cfg.Seeds, Rates: rates, Steps: cfg.Steps}
	if cfg.Warmup > 0 {
		warm := cfg.GameConfig
		warm.Seed = 9001
		if _, err := runGame(ctx, model, Config{GameConfig: warm}, cfg.Warmup); err != nil {
			return rep, err
		}
	}
	play := func(kind string, seed uint64, fps float64, unassisted bool, steps int) (BenchRun, error) {
		gc := cfg.GameConfig
		gc.Seed = seed
		s, err := runGame(ctx, model, Config{GameConfig: gc, FPS: fps, Unassisted: unassisted}, steps)
		if err != nil {
			return BenchRun{}, err
		}
		run := BenchRun{Kind: kind, Seed: seed, FPS: fps, Summary: s, MissFraction: missFraction(s), Passes: passes(s, steps)}
		if cfg.Progress != nil {
			cfg.Progress(run)
		}
		return run, ctx.Err()
	}
	for _, seed := range cfg.Seeds {
		if cfg.RawSteps <= 0 {
			break
		}
		run, err := play("raw", seed, 0, true, cfg.RawSteps)
		if err != nil {
			return rep, err
		}
		rep.Raw = append(rep.Raw, run)
	}
	var steps int
	var seconds float64
	for _, seed := range cfg.Seeds {
		run, err := play("uncapped", seed, 0, cfg.Unassisted, cfg.Steps)
		if err != nil {
			return rep, err
		}
		rep.Uncapped = append(rep.Uncapped, run)
		steps += run.Summary.Steps
		seconds += run.Summary.Seconds
	}
	if seconds > 0 {
		rep.UncappedMovesPerSecond = float64(steps) / seconds
	}
	for _, fps := range rates {
		all := true
		for _, seed := range cfg.Seeds {
			run, err := play("paced", seed, fps, cfg.Unassisted, cfg.Steps)
			if err != nil {
				return rep, err
			}
			rep.Paced = append(rep.Paced, run)
			all = all && run.Passes
		}
		if all {
			rep.HighestPassingFPS = fps
		}
	}
	return rep, nil
}

func runGame(ctx context.Context, model Model, cfg Config, steps int) (Summary, error) {
	l, err := New(model, cfg)
	if err != nil {
		return Summary{}, err
	}
	defer l.Close()
	if err := l.Run(ctx, steps); err != nil {
		return Summary{}, err
	}
	return l.Summary(), nil
}

func missFraction(s Summary) float64 {
	if s.Steps == 0 {
		return 0
	}
	return float64(s.DeadlineMisses) / float64(s.Steps)
}

// passes: the snake lived through every tick asked for (or filled the board first)
// and at most passFraction of ticks missed their deadline.
func passes(s Summary, steps int) bool {
	return (s.Alive && s.Steps == steps || s.Won) && missFraction(s) <= passFraction
}
