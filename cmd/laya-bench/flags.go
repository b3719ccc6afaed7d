package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/backend/cpu"
	"github.com/laya-metal/laya/internal/cli"
)

type options struct {
	model, synthetic, tokenizer, backend, format string
	questions                                    []int
	warmup, runs, batchSize, vary                int
	long, profile                                bool
	joins                                        bool // the cpu backend's idle time at joins
	kernel                                       bool // the cpu backend's GEMM micro-kernel, in the forward and hot
	plan                                         bool // plan.go
	splitK                                       bool // plan.go
	tokens                                       int
	paced                                        bool // paced.go
	cpuProfile                                   string
	version                                      bool

	cpu *cpu.Backend    // the backend --joins and --kernel profile
	be  backend.Backend // the backend measured: its counters (backend.Counter) go with each result
}

// parseOptions reads the command line of a benchmark run (or --plan) and
// checks what can be checked before anything is loaded.
func parseOptions(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("laya-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, help); fs.PrintDefaults() }
	var o options
	var questions string
	fs.StringVar(&o.model, "model", "", "checkpoint directory")
	fs.StringVar(&o.synthetic, "synthetic", "", "benchmark a synthetic checkpoint of a real shape: english, multilingual or tiny")
	fs.StringVar(&o.tokenizer, "tokenizer", "",
		"with --synthetic: `DIR` holding the tokenizer.json to ship in the checkpoint (default: the ModernBERT tokenizer built into laya-bench)")
	fs.StringVar(&o.backend, "backend", "cpu", "compute backend: "+strings.Join(backend.Names(), ", "))
	fs.StringVar(&questions, "questions", "1,5,10", "comma-separated question counts, one workload each")
	fs.IntVar(&o.warmup, "warmup", 5, "untimed runs before timing")
	fs.IntVar(&o.vary, "vary", 0, "cycle each workload's state through `N` token counts (request k has k mod N extra words), as real traffic varies: on cuda this shows what its token buckets buy (LAYA_CUDA=bucket=1 turns them off)")
	fs.IntVar(&o.runs, "runs", 50, "timed runs per workload")
	fs.IntVar(&o.batchSize, "batch-size", 0, "question rows per forward batch, 0 for the backend's: 16, on cuda up to 64 rows and 8192 tokens")
	fs.BoolVar(&o.long, "long", false, "use a long state that fills the context (full-context workload)")
	fs.StringVar(&o.format, "format", "md", "output: md (table), json (with raw samples), gobench (for benchstat)")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a Go CPU profile of the timed runs to `FILE` (go tool pprof)")
	fs.BoolVar(&o.joins, "joins", false, "cpu backend: during the timed runs, record each parallel operation's worker idle time (held = wall × workers, busy = the chunks' own time) and print it per call site")
	fs.BoolVar(&o.kernel, "kernel", false, "cpu backend: time the GEMM micro-kernel's calls in the timed runs (GFLOP/s per worker-second) and, after each request, the same kernel alone on hot operands (50 ms, same goroutine), and print both")
	fs.BoolVar(&o.profile, "profile", false, "after timing, run --runs more requests timing each operation on the device (backends that can: metal, metal-emu)")
	fs.BoolVar(&o.plan, "plan", false, "print the Metal work plan of one request (a MODEL: dispatches, FLOPs, bytes, roofline floors; no GPU, no weights; see plan.go)")
	fs.IntVar(&o.tokens, "tokens", 93, "with --plan: tokens per question")
	fs.BoolVar(&o.splitK, "split-k", false, "deterministic split-K on (for an M3 Max's threadgroup slots; two dispatches per split GEMM): in --plan, or on a metal backend")
	fs.BoolVar(&o.paced, "paced", false, "after loading and --warmup, run one timed request of the one --questions count per line read from stdin and write its wall time as a JSON line (for a driver interleaving another system's runs: scripts/bench/bench-torch/paired.py)")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	if err := cli.ParseFlags(fs, args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, cli.Usagef("unexpected argument %q: the checkpoint is --model DIR or --synthetic NAME (two configurations are --compare A B)", fs.Arg(0))
	}
	var err error
	if o.questions, err = parseCounts(questions); err != nil {
		return o, err
	}
	if o.vary < 0 {
		return o, cli.Usagef("--vary %d: want a count of token counts (0: one)", o.vary)
	}
	if o.vary > 0 && o.long {
		// The long state fills the context: extra words would be cut off.
		return o, cli.Usagef("--vary: not with --long, whose state fills the context")
	}
	if o.runs < 1 || o.warmup < 0 {
		return o, cli.Usagef("--runs must be ≥ 1 and --warmup ≥ 0")
	}
	switch o.format {
	case "md", "json", "gobench":
	default:
		return o, cli.Usagef("--format %q: use md, json or gobench", o.format)
	}
	if o.paced && (len(o.questions) != 1 || o.profile || o.joins || o.kernel || o.cpuProfile != "") {
		return o, cli.Usagef("--paced: takes one --questions count, and not --profile, --joins, --kernel or --cpuprofile")
	}
	return o, nil
}

// parseCounts reads --questions: comma-separated positive counts.
func parseCounts(arg string) ([]int, error) {
	var counts []int
	for _, f := range strings.Split(arg, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, cli.Usagef("--questions: %q is not a positive count", f)
		}
		counts = append(counts, n)
	}
	return counts, nil
}

// checkBackendOptions refuses the options the opened backend cannot serve,
// before the checkpoint is loaded.
func checkBackendOptions(o options, be backend.Backend) error {
	if o.joins && o.backend != "cpu" {
		return cli.Usagef("--joins: only the cpu backend's worker pool records joins (backend %q)", o.backend)
	}
	if o.kernel {
		if o.backend != "cpu" {
			return cli.Usagef("--kernel: only the cpu backend's GEMM kernel is timed (backend %q)", o.backend)
		}
		if _, ok := cpu.HotKernelGFLOPs(0); !ok {
			return errors.New("--kernel: this build or CPU has no outer-product GEMM kernel to time (it needs AVX-512 on amd64, without the purego tag)")
		}
	}
	_, timed := be.(backend.Timer)
	if _, ok := be.(backend.Profiler); o.profile && (!ok || !timed) {
		return cli.Usagef("--profile: backend %q cannot time operations on a device", o.backend)
	}
	return nil
}

// backendError makes an unknown --backend a usage error; its text lists the
// backends there are.
func backendError(err error) error {
	if errors.Is(err, backend.ErrUnknownBackend) {
		return cli.Usage(err)
	}
	return err
}
