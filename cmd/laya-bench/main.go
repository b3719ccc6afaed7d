// Command laya-bench measures end-to-end Laya decision latency the way the
// laya-mlx benchmarks do (a fixed warm-up, then timed runs; P50/P95/P99;
// throughput = questions / mean latency), so numbers are comparable.
//
// Timing covers what a caller pays per request: question validation, state
// serialisation, tokenization, the forward pass and answer decoding. Loading
// is reported separately. On a backend that reports device time
// (backend.Timer: metal, metal-emu) each request's GPU time, the sum of its
// command buffers', is shown next to the wall time; --profile adds the GPU
// time per operation.
//
// The files: flags.go (the options), checkpoint.go (--model or
// --synthetic), workload.go (the request), measure.go (timing), report.go
// and mdtable.go (output), compare.go (--compare), paced.go (--paced),
// plan.go (--plan).
//
// Exit status: 0 on success, 1 when the work failed, 2 for a mistake on the
// command line.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/backend"
	_ "github.com/laya-metal/laya/backend/cuda"     // --backend cuda
	_ "github.com/laya-metal/laya/backend/metalemu" // --backend metal-emu
	"github.com/laya-metal/laya/internal/cli"
)

const help = `laya-bench: end-to-end latency of Laya decisions.

Usage:
  laya-bench --model DIR [flags]
  laya-bench --synthetic english|multilingual|tiny [flags]
  laya-bench --compare [flags] A B      (two backends, checkpoints or gobench files; --compare -h)
  laya-bench --version

Each workload is one request of N questions cycling three templates (a
4-way choice, a 3-level score, a noul) over a short email state, as in the
laya-mlx benchmarks. Every request runs --warmup times untimed, then --runs
times timed. Throughput is questions / mean latency, not 1/P50.

--synthetic writes a checkpoint of the real shapes with random weights
(ModernBERT-large for english, mmBERT-base for multilingual) once into the
user cache directory, so the benchmark needs no download. Its answers are
meaningless; its cost is the real model's. Its tokenizer is the ModernBERT
one built into laya-bench, or --tokenizer DIR's.

On a terminal, stderr shows which run is going; piped, it stays quiet.

On metal and metal-emu the GPU time of each request (the sum of its command
buffers' device time) is reported next to the wall time. --profile then runs
--runs more requests with every operation submitted and waited for alone and
prints each operation's GPU time per request: the per-operation syncs inflate
those times, so they rank operations rather than add up to the request's.
On cuda the same (GPU time: events around each request's work), and
--format json adds backend_counters: what the backend did over the timed
requests (graph replays, captures, segments run kernel by kernel, GEMM
shapes tuned, streams run in fp16 first and in the backend's precision),
so a timed request that missed its graph, or whose near-ties were run
again, shows.

On every backend --format json adds host_ms: the median time of each phase
of the timed requests (parsing the JSON, preparing the rows, the forward,
assembling the answers, the rest), and on one that reports GPU time the
forward's time beyond it (recording, launching, waiting, reading back).

On cpu, --joins records every parallel operation of the timed requests and
prints, per call site, how long its workers were held (wall time × workers)
and how much of that they computed: the rest is idle time at the hand-offs
and joins (a slow chunk, the last GEMM unit), where more cores stop paying.
Its "late ms" is the part of that idle time before the chunks started (a
slow hand-off, a worker woken from sleep); the rest is waiting for the
slowest chunk.

On cpu, --kernel times every call of the GEMM micro-kernel in the timed
requests (about 1 % slower for it) and, after each request, runs the same
kernel alone on hot operands for 50 ms: their ratio is what memory and the
other workers cost the kernel inside the forward, and its share of the
workers' time is what the rest of the forward (packing, epilogues,
attention, joins) leaves it.

--paced serves timed requests on cue for a driver that interleaves them
with another system's runs: after loading and the warm-up it writes a JSON
header line (with the request's input_tokens), then runs one request per
line read from stdin and writes {"ms": wall time}; "quit" or the end of
stdin ends it (scripts/bench/bench-torch/paired.py pairs it with PyTorch).

--plan prints the Metal work plan of one request without a GPU or weights
(only the configuration): dispatches, barriers, FLOPs and bytes per
operation, roofline floors for named Apple GPUs and a tile-aware time model.
It is a MODEL, not a measurement. With --profile it lists every dispatch as
encoded. --split-k turns deterministic split-K on (for an M3 Max's 120
threadgroup slots): in the plan, or, on metal and metal-emu, for the timed
requests, so a Mac can measure what the plan only models.

Examples:
  laya-bench --synthetic english --plan --questions 1
  laya-bench --synthetic multilingual --plan --format json
  laya-bench --synthetic english --plan --split-k       # the same with split-K
  laya-bench --model testdata/oracle/checkpoints/real-en --questions 1,5,10
  laya-bench --model testdata/oracle/checkpoints/tiny-en --backend metal --questions 5 --profile
  laya-bench --synthetic english --backend metal --questions 1 --split-k
  laya-bench --synthetic english --questions 1 --runs 20 --format gobench > new.txt
  laya-bench --synthetic multilingual --questions 10 --runs 3 --joins
  laya-bench --synthetic multilingual --questions 10 --runs 3 --kernel
  printf 'go\ngo\n' | laya-bench --synthetic multilingual --questions 1 --warmup 2 --paced

Flags:
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(cli.Report(os.Stderr, "laya-bench", err))
}

// run is the whole command, callable from tests.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if cli.IsVersion(args) {
		_, err := fmt.Fprintln(stdout, cli.Version("laya-bench"))
		return err
	}
	if len(args) > 0 && (args[0] == "--compare" || args[0] == "-compare") {
		return runCompare(ctx, args[1:], stdout, stderr) // compare.go
	}
	o, err := parseOptions(args, stderr)
	if err != nil {
		return err
	}
	if o.version {
		_, err := fmt.Fprintln(stdout, cli.Version("laya-bench"))
		return err
	}
	if o.plan {
		return runPlan(ctx, o, stdout)
	}
	dir, name, err := checkpointDir(o, stderr)
	if err != nil {
		return err
	}
	loadStart := time.Now()
	// The benchmark opens the backend itself to read its device time (an
	// Agent does not expose its backend); the agent closes first (defers run
	// last-in first-out), then the backend.
	be, err := openBackend(o)
	if err != nil {
		return err
	}
	defer be.Close()
	if err := checkBackendOptions(o, be); err != nil {
		return err
	}
	agent, err := laya.Load(ctx, dir, laya.WithBackendInstance(be), laya.WithBatchSize(o.batchSize))
	if err != nil {
		return err
	}
	defer agent.Close()
	loadTime := time.Since(loadStart)
	if o.paced {
		return runPaced(ctx, agent, o.questions[0], o, name, loadTime, stdin, stdout)
	}
	if o.cpuProfile != "" {
		stopProfile, err := startCPUProfile(o.cpuProfile) // compare.go
		if err != nil {
			return err
		}
		defer stopProfile()
	}
	results, err := measureAll(ctx, agent, be, o, name, cli.NewProgress(stderr))
	if err != nil {
		return err
	}
	return writeReports(stdout, stderr, o, loadTime, results)
}

// openBackend opens --backend, with --split-k set where asked.
func openBackend(o options) (backend.Backend, error) {
	be, err := backend.Open(o.backend)
	if err != nil {
		return nil, backendError(err)
	}
	if o.splitK {
		sk, ok := be.(interface{ SetSplitK(targetGroups int) })
		if !ok {
			be.Close()
			return nil, cli.Usagef("--split-k: backend %q has no split-K (metal and metal-emu do)", o.backend)
		}
		sk.SetSplitK(splitKTarget())
	}
	return be, nil
}
