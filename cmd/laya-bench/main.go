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
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/backend/cpu"
	_ "github.com/laya-metal/laya/backend/metalemu" // --backend metal-emu
	"github.com/laya-metal/laya/internal/stats"
	"github.com/laya-metal/laya/weights/synthetic"
)

const help = `laya-bench: end-to-end latency of Laya decisions.

Usage:
  laya-bench --model DIR [flags]
  laya-bench --synthetic english|multilingual|tiny [flags]
  laya-bench --compare [flags] A B      (two backends, checkpoints or gobench files; --compare -h)

Each workload is one request of N questions cycling three templates (a
4-way choice, a 3-level score, a noul) over a short email state, as in the
laya-mlx benchmarks. Every request runs --warmup times untimed, then --runs
times timed. Throughput is questions / mean latency, not 1/P50.

--synthetic writes a checkpoint of the real shapes with random weights
(ModernBERT-large for english, mmBERT-base for multilingual) once into the
user cache directory, so the benchmark needs no download. Its answers are
meaningless; its cost is the real model's.

On metal and metal-emu the GPU time of each request (the sum of its command
buffers' device time) is reported next to the wall time. --profile then runs
--runs more requests with every operation submitted and waited for alone and
prints each operation's GPU time per request: the per-operation syncs inflate
those times, so they rank operations rather than add up to the request's.

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

type options struct {
	model, synthetic, tokenizer, backend, format string
	questions                                    []int
	warmup, runs, batchSize                      int
	long, profile                                bool
	joins                                        bool // the cpu backend's idle time at joins
	kernel                                       bool // the cpu backend's GEMM micro-kernel, in the forward and hot
	plan                                         bool // plan.go
	splitK                                       bool // plan.go
	tokens                                       int
	paced                                        bool // paced.go
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "laya-bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "--compare" || args[0] == "-compare") {
		return runCompare(ctx, args[1:], stdout, stderr) // compare.go
	}
	fs := flag.NewFlagSet("laya-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, help); fs.PrintDefaults() }
	var o options
	var questions string
	fs.StringVar(&o.model, "model", "", "checkpoint directory")
	fs.StringVar(&o.synthetic, "synthetic", "", "benchmark a synthetic checkpoint of a real shape: english, multilingual or tiny")
	fs.StringVar(&o.tokenizer, "tokenizer", filepath.Join("testdata", "tokenizers", "modernbert"),
		"with --synthetic: directory holding the tokenizer.json to ship in the checkpoint (run from the repository root, the bundled ModernBERT one)")
	fs.StringVar(&o.backend, "backend", "cpu", "compute backend")
	fs.StringVar(&questions, "questions", "1,5,10", "comma-separated question counts, one workload each")
	fs.IntVar(&o.warmup, "warmup", 5, "untimed runs before timing")
	fs.IntVar(&o.runs, "runs", 50, "timed runs per workload")
	fs.IntVar(&o.batchSize, "batch-size", 16, "rows per padded forward batch")
	fs.BoolVar(&o.long, "long", false, "use a long state that fills the context (full-context workload)")
	fs.StringVar(&o.format, "format", "md", "output: md (table), json (with raw samples), gobench (for benchstat)")
	cpuProfile := fs.String("cpuprofile", "", "write a Go CPU profile of the timed runs to `FILE` (go tool pprof)")
	fs.BoolVar(&o.joins, "joins", false, "cpu backend: during the timed runs, record each parallel operation's worker idle time (held = wall × workers, busy = the chunks' own time) and print it per call site")
	fs.BoolVar(&o.kernel, "kernel", false, "cpu backend: time the GEMM micro-kernel's calls in the timed runs (GFLOP/s per worker-second) and, after each request, the same kernel alone on hot operands (50 ms, same goroutine), and print both")
	fs.BoolVar(&o.profile, "profile", false, "after timing, run --runs more requests timing each operation on the device (backends that can: metal, metal-emu)")
	fs.BoolVar(&o.plan, "plan", false, "print the Metal work plan of one request (a MODEL: dispatches, FLOPs, bytes, roofline floors; no GPU, no weights; see plan.go)")
	fs.IntVar(&o.tokens, "tokens", 93, "with --plan: tokens per question")
	fs.BoolVar(&o.splitK, "split-k", false, "deterministic split-K on (for an M3 Max's threadgroup slots; two dispatches per split GEMM): in --plan, or on a metal backend")
	fs.BoolVar(&o.paced, "paced", false, "after loading and --warmup, run one timed request of the one --questions count per line read from stdin and write its wall time as a JSON line (for a driver interleaving another system's runs: scripts/bench/bench-torch/paired.py)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, f := range strings.Split(questions, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("--questions: %q is not a positive count", f)
		}
		o.questions = append(o.questions, n)
	}
	if o.runs < 1 || o.warmup < 0 {
		return errors.New("--runs must be ≥ 1 and --warmup ≥ 0")
	}
	switch o.format {
	case "md", "json", "gobench":
	default:
		return fmt.Errorf("--format %q: use md, json or gobench", o.format)
	}
	if o.plan {
		return runPlan(ctx, o, stdout)
	}
	if o.paced && (len(o.questions) != 1 || o.profile || o.joins || o.kernel || *cpuProfile != "") {
		return errors.New("--paced: takes one --questions count, and not --profile, --joins, --kernel or --cpuprofile")
	}
	dir, name, err := checkpointDir(o, stderr)
	if err != nil {
		return err
	}

	loadStart := time.Now()
	// The benchmark opens the backend itself to read its device time (an
	// Agent does not expose its backend); the agent closes first (defers run
	// last-in first-out), then the backend.
	be, err := backend.Open(o.backend)
	if err != nil {
		return fmt.Errorf("laya-bench: %w", err)
	}
	defer be.Close()
	if o.splitK {
		sk, ok := be.(interface{ SetSplitK(targetGroups int) })
		if !ok {
			return fmt.Errorf("--split-k: backend %q has no split-K (metal and metal-emu do)", o.backend)
		}
		sk.SetSplitK(splitKTarget())
	}
	agent, err := laya.Load(ctx, dir, laya.WithBackendInstance(be), laya.WithBatchSize(o.batchSize))
	if err != nil {
		return err
	}
	defer agent.Close()
	loadTime := time.Since(loadStart)
	timer, _ := be.(backend.Timer)
	profiler, _ := be.(backend.Profiler)
	if o.joins && o.backend != "cpu" {
		return fmt.Errorf("--joins: only the cpu backend's worker pool records joins (backend %q)", o.backend)
	}
	if o.kernel {
		if o.backend != "cpu" {
			return fmt.Errorf("--kernel: only the cpu backend's GEMM kernel is timed (backend %q)", o.backend)
		}
		if _, ok := cpu.HotKernelGFLOPs(0); !ok {
			return errors.New("--kernel: this build or CPU has no outer-product GEMM kernel to time (it needs AVX-512 on amd64, without the purego tag)")
		}
	}
	if o.profile && profiler == nil {
		return fmt.Errorf("--profile: backend %q cannot time operations on a device", o.backend)
	}

	if o.paced {
		return runPaced(ctx, agent, o.questions[0], o, name, loadTime, stdin, stdout)
	}
	if *cpuProfile != "" {
		stopProfile, err := startCPUProfile(*cpuProfile) // compare.go
		if err != nil {
			return err
		}
		defer stopProfile()
	}
	var results []result
	for _, n := range o.questions {
		r, err := measure(ctx, agent, timer, n, o)
		if err != nil {
			return fmt.Errorf("%d questions: %w", n, err)
		}
		if o.profile {
			if r.Profile, err = profile(ctx, agent, profiler, n, o); err != nil {
				return fmt.Errorf("%d questions, profiling: %w", n, err)
			}
		}
		r.Checkpoint, r.Backend = name, o.backend
		results = append(results, r)
	}
	if err := report(stdout, o.format, loadTime, results); err != nil {
		return err
	}
	if o.joins && o.format != "json" {
		w := stdout
		if o.format == "gobench" {
			w = stderr // benchstat reads stdout
		}
		if err := reportJoins(w, results); err != nil {
			return err
		}
	}
	if o.kernel && o.format != "json" {
		w := stdout
		if o.format == "gobench" {
			w = stderr
		}
		reportKernel(w, results)
	}
	if o.profile {
		// gobench output goes to benchstat: the profile stays off it.
		w := stdout
		if o.format == "gobench" {
			w = stderr
		}
		if o.format != "json" {
			return reportProfile(w, results)
		}
	}
	return nil
}

// checkpointDir returns the directory to load, writing the synthetic
// checkpoint into the user cache on first use.
// syntheticSpec is the synthetic preset --synthetic names (the live
// benchmark's checkpoint and --plan's shape-only one).
func syntheticSpec(name string) (synthetic.Spec, bool) {
	switch name {
	case "english":
		return synthetic.English(), true
	case "multilingual":
		return synthetic.Multilingual(), true
	case "tiny":
		return synthetic.Tiny(), true
	}
	return synthetic.Spec{}, false
}

func checkpointDir(o options, stderr io.Writer) (dir, name string, err error) {
	switch {
	case o.model != "" && o.synthetic != "":
		return "", "", errors.New("give --model or --synthetic, not both")
	case o.model != "":
		return o.model, filepath.Base(filepath.Clean(o.model)), nil
	case o.synthetic == "":
		return "", "", errors.New("no checkpoint: give --model DIR or --synthetic english|multilingual|tiny (see -h)")
	}
	spec, ok := syntheticSpec(o.synthetic)
	if !ok {
		return "", "", fmt.Errorf("--synthetic %q: use english, multilingual or tiny", o.synthetic)
	}
	if _, err := os.Stat(filepath.Join(o.tokenizer, "tokenizer.json")); err != nil {
		return "", "", fmt.Errorf("--synthetic needs a tokenizer.json: %w (run from the repository root, or give --tokenizer DIR)", err)
	}
	spec.TokenizerDir = o.tokenizer
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir = filepath.Join(cache, "laya-metal", "synthetic", o.synthetic)
	if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); err == nil {
		return dir, "synthetic-" + o.synthetic, nil
	}
	fmt.Fprintf(stderr, "laya-bench: writing synthetic %s checkpoint to %s (once)\n", o.synthetic, dir)
	tmp := dir + ".partial"
	os.RemoveAll(tmp)
	if err := synthetic.Write(tmp, spec); err != nil {
		return "", "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", "", err
	}
	return dir, "synthetic-" + o.synthetic, nil
}

// The three laya-mlx benchmark templates; state text is an email body.
var templates = []string{
	`{"type": "choice", "instructions": "Which department should handle this email?", "criteria": {"billing": "invoices, payments, refunds", "technical": "bugs, outages, system errors", "sales": "pricing, new contracts", "other": "everything else"}}`,
	`{"type": "score", "instructions": "How urgent is this request?", "criteria": ["not urgent", "soon", "critical deadline or blocking issue"]}`,
	`{"type": "noul", "instructions": "Does the customer ask for money back?"}`,
}

const shortState = `{"from": "user@example.com", "subject": "Duplicate charge on invoice #4411", "body": "We were billed twice for March. Please refund the duplicate today or we will cancel our plan."}`

func request(n int, long bool) []byte {
	var b strings.Builder
	state := shortState
	if long {
		body := strings.Repeat("The customer reports duplicate billing and requests a refund today. ", 200)
		state = `{"subject": "Duplicate charge", "body": "` + body + `"}`
	}
	b.WriteString(`{"state": ` + state + `, "questions": {`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `"q%d": %s`, i, templates[i%len(templates)])
	}
	b.WriteString("}}")
	return []byte(b.String())
}

type result struct {
	Checkpoint  string    `json:"checkpoint"`
	Backend     string    `json:"backend"`
	Questions   int       `json:"questions"`
	InputTokens int       `json:"input_tokens"`
	FirstMS     float64   `json:"first_call_ms"`
	P50MS       float64   `json:"p50_ms"`
	P95MS       float64   `json:"p95_ms"`
	P99MS       float64   `json:"p99_ms"`
	MeanMS      float64   `json:"mean_ms"`
	SDMS        float64   `json:"sd_ms"`
	QPS         float64   `json:"questions_per_s"`
	SamplesMS   []float64 `json:"samples_ms"`
	// GPU time per request, on backends that report it (backend.Timer).
	GPUP50MS     float64   `json:"gpu_p50_ms,omitempty"`
	GPUMeanMS    float64   `json:"gpu_mean_ms,omitempty"`
	GPUSamplesMS []float64 `json:"gpu_samples_ms,omitempty"`
	// Profile is the GPU time per operation and request (--profile).
	Profile []opProfile `json:"profile,omitempty"`
	// Joins is the cpu backend's worker time per call site and request
	// (--joins), most idle first.
	Joins []joinRow `json:"joins,omitempty"`
	// Kernel is the cpu backend's GEMM micro-kernel in the timed requests
	// and alone on hot operands (--kernel).
	Kernel *kernelRow `json:"kernel,omitempty"`
}

// kernelRow is --kernel's measurement of one workload.
type kernelRow struct {
	GFLOPPerRequest float64   `json:"gflop_per_request"`  // the blocks the kernel computed
	BusyMS          float64   `json:"busy_ms"`            // its own time per request, summed over workers
	Share           float64   `json:"share"`              // busy / (wall × GOMAXPROCS)
	GFLOPs          float64   `json:"gflops"`             // per worker-second, in the requests
	HotGFLOPs       []float64 `json:"hot_gflops_samples"` // alone on hot operands, right after each request
}

// joinRow is one call site's parallel operations per timed request.
type joinRow struct {
	Site       string  `json:"site"`
	PerRequest float64 `json:"per_request"` // operations
	HeldMS     float64 `json:"held_ms"`     // wall time × workers
	BusyMS     float64 `json:"busy_ms"`     // the chunks' own time
	Idle       float64 `json:"idle"`        // 1 − busy/held
	LateMS     float64 `json:"late_ms"`     // of the idle time, before the chunks started
}

// opProfile is one operation's share of a profiled request.
type opProfile struct {
	Op         string  `json:"op"`
	PerRequest float64 `json:"per_request"` // operations of this kind per request
	MS         float64 `json:"ms"`          // GPU ms per request
}

// measure times one workload. timer, when not nil, is the backend's device
// clock: requests run one at a time, so the difference of two readings is
// one request's GPU time.
func measure(ctx context.Context, agent *laya.Agent, timer backend.Timer, n int, o options) (result, error) {
	req := request(n, o.long)
	r := result{Questions: n}
	var gpu time.Duration
	once := func() (time.Duration, []byte, error) {
		var gpuStart time.Duration
		if timer != nil {
			gpuStart = timer.DeviceTime()
		}
		elapsed, out, err := timeRequest(ctx, agent, req)
		if timer != nil {
			gpu = timer.DeviceTime() - gpuStart
		}
		return elapsed, out, err
	}
	first, out, err := once()
	if err != nil {
		return r, err
	}
	r.FirstMS = ms(first)
	if r.InputTokens, err = inputTokens(out); err != nil {
		return r, err
	}
	for i := 1; i < o.warmup; i++ {
		if _, _, err := once(); err != nil {
			return r, err
		}
	}
	if o.joins {
		cpu.RecordJoins(true)
		defer cpu.RecordJoins(false)
	}
	var hot []float64
	if o.kernel {
		cpu.RecordKernelTime(true)
		defer cpu.RecordKernelTime(false)
	}
	for i := 0; i < o.runs; i++ {
		d, _, err := once()
		if err != nil {
			return r, err
		}
		if o.kernel {
			// Seconds from the request, on the goroutine that ran it (the
			// pool's workers run on other threads): this VM's or host's
			// speed of the moment, for the request's kernel time to be set
			// against.
			g, _ := cpu.HotKernelGFLOPs(50 * time.Millisecond)
			hot = append(hot, g)
		}
		r.SamplesMS = append(r.SamplesMS, ms(d))
		if timer != nil {
			r.GPUSamplesMS = append(r.GPUSamplesMS, ms(gpu))
		}
	}
	if o.joins {
		for _, j := range cpu.Joins() {
			r.Joins = append(r.Joins, joinRow{Site: j.Site, PerRequest: float64(j.Calls) / float64(o.runs),
				HeldMS: ms(j.Held) / float64(o.runs), BusyMS: ms(j.Busy) / float64(o.runs), Idle: j.Idle(),
				LateMS: ms(j.Late) / float64(o.runs)})
		}
	}
	if o.kernel {
		kt := cpu.KernelTimes()
		wall := 0.0
		for _, v := range r.SamplesMS {
			wall += v
		}
		r.Kernel = &kernelRow{GFLOPPerRequest: kt.FLOPs / 1e9 / float64(o.runs), BusyMS: ms(kt.Busy) / float64(o.runs),
			Share: ms(kt.Busy) / (wall * float64(runtime.GOMAXPROCS(0))), GFLOPs: kt.GFLOPs(), HotGFLOPs: hot}
	}
	sorted := append([]float64(nil), r.SamplesMS...)
	sort.Float64s(sorted)
	r.P50MS, r.P95MS, r.P99MS = stats.Percentile(sorted, 50), stats.Percentile(sorted, 95), stats.Percentile(sorted, 99)
	r.MeanMS, r.SDMS = meanSD(sorted)
	r.QPS = float64(n) / (r.MeanMS / 1000)
	if timer != nil {
		gpuSorted := append([]float64(nil), r.GPUSamplesMS...)
		sort.Float64s(gpuSorted)
		r.GPUP50MS = stats.Percentile(gpuSorted, 50)
		r.GPUMeanMS, _ = meanSD(gpuSorted)
	}
	return r, nil
}

// timeRequest answers req and returns the wall time of the answer (not of
// its marshalling) and the answer as JSON.
func timeRequest(ctx context.Context, agent *laya.Agent, req []byte) (time.Duration, []byte, error) {
	start := time.Now()
	res, err := agent.PredictJSON(ctx, req)
	if err != nil {
		return 0, nil, err
	}
	elapsed := time.Since(start)
	out, err := json.Marshal(res)
	return elapsed, out, err
}

// inputTokens reads usage.input_tokens from an answer's JSON.
func inputTokens(answer []byte) (int, error) {
	var usage struct {
		Usage struct {
			InputTokens int `json:"input_tokens"`
		} `json:"usage"`
	}
	err := json.Unmarshal(answer, &usage)
	return usage.Usage.InputTokens, err
}

// profile runs o.runs requests with per-operation timing on and returns the
// GPU time per operation and request, longest first.
func profile(ctx context.Context, agent *laya.Agent, p backend.Profiler, n int, o options) ([]opProfile, error) {
	req := request(n, o.long)
	p.SetProfiling(true)
	defer p.SetProfiling(false)
	for range o.runs {
		if _, err := agent.PredictJSON(ctx, req); err != nil {
			return nil, err
		}
	}
	var out []opProfile
	for _, t := range p.OpTimes() {
		out = append(out, opProfile{Op: t.Op, PerRequest: float64(t.Count) / float64(o.runs), MS: ms(t.Time) / float64(o.runs)})
	}
	return out, nil
}

// reportProfile prints each workload's profile as a table.
func reportProfile(w io.Writer, results []result) error {
	for _, r := range results {
		total := 0.0
		for _, p := range r.Profile {
			total += p.MS
		}
		fmt.Fprintf(w, "\nGPU time per operation, %s %s Q=%d (each op synced alone: inflated, for ranking; sum %.2f ms/request):\n",
			r.Checkpoint, r.Backend, r.Questions, total)
		tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.AlignRight|tabwriter.Debug)
		fmt.Fprintln(tw, "op\tper request\tGPU ms/request\tshare\t")
		for _, p := range r.Profile {
			fmt.Fprintf(tw, "%s\t%.1f\t%.3f\t%.1f%%\t\n", p.Op, p.PerRequest, p.MS, 100*p.MS/max(total, 1e-9))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// reportKernel prints each workload's --kernel line.
func reportKernel(w io.Writer, results []result) {
	for _, r := range results {
		k := r.Kernel
		if k == nil {
			continue
		}
		hot := append([]float64(nil), k.HotGFLOPs...)
		sort.Float64s(hot)
		h := stats.Percentile(hot, 50)
		fmt.Fprintf(w, "\nGEMM micro-kernel, %s Q=%d, per request: %.1f GFLOP in %.1f ms of worker time (%.0f %% of wall × %d workers); %.1f GFLOP/s per worker-second, alone on hot operands right after each request %.1f (median of %d): ×%.2f of that in the forward.\n",
			r.Checkpoint, r.Questions, k.GFLOPPerRequest, k.BusyMS, 100*k.Share, runtime.GOMAXPROCS(0), k.GFLOPs, h, len(hot), k.GFLOPs/max(h, 1e-9))
	}
}

// reportJoins prints each workload's --joins table.
func reportJoins(w io.Writer, results []result) error {
	for _, r := range results {
		var held, busy float64
		for _, j := range r.Joins {
			held, busy = held+j.HeldMS, busy+j.BusyMS
		}
		fmt.Fprintf(w, "\nWorker time per parallel operation, %s Q=%d, per request (held = wall × workers; idle %.1f %% of %.1f ms held in all; late: of the idle time, before the chunks started):\n",
			r.Checkpoint, r.Questions, 100*(1-busy/max(held, 1e-9)), held)
		tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.AlignRight|tabwriter.Debug)
		fmt.Fprintln(tw, "call site	per request	held ms	busy ms	idle	late ms	")
		for _, j := range r.Joins {
			fmt.Fprintf(tw, "%s\t%.1f\t%.2f\t%.2f\t%.1f%%\t%.2f\t\n", j.Site, j.PerRequest, j.HeldMS, j.BusyMS, 100*j.Idle, j.LateMS)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	if len(xs) > 1 {
		sd = math.Sqrt(sd / float64(len(xs)-1))
	}
	return mean, sd
}

func report(w io.Writer, format string, load time.Duration, results []result) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{
			"go": runtime.Version(), "goos": runtime.GOOS, "goarch": runtime.GOARCH, "cpus": runtime.NumCPU(),
			"load_ms": ms(load), "results": results,
		})
	case "gobench":
		// One line per sample so benchstat can compute medians and confidence intervals.
		fmt.Fprintf(w, "goos: %s\ngoarch: %s\npkg: github.com/laya-metal/laya/cmd/laya-bench\n", runtime.GOOS, runtime.GOARCH)
		for _, r := range results {
			for i, s := range r.SamplesMS {
				gpu := ""
				if i < len(r.GPUSamplesMS) {
					gpu = fmt.Sprintf("\t%.0f gpu-ns/op", r.GPUSamplesMS[i]*1e6)
				}
				fmt.Fprintf(w, "BenchmarkPredict/%s/%s/q=%d-%d\t1\t%.0f ns/op\t%.1f q/s%s\n",
					r.Checkpoint, r.Backend, r.Questions, runtime.GOMAXPROCS(0), s*1e6, float64(r.Questions)/(s/1000), gpu)
			}
		}
		return nil
	}
	fmt.Fprintf(w, "load: %.1f ms   (%s %s/%s, %d CPUs)\n\n", ms(load), runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.AlignRight|tabwriter.Debug)
	// The GPU columns appear when the backend reports device time.
	gpu := slices.ContainsFunc(results, func(r result) bool { return len(r.GPUSamplesMS) > 0 })
	header := "checkpoint\tbackend\tQ\ttokens\tfirst ms\tP50 ms\tP95 ms\tP99 ms\tmean ± sd ms\tq/s\t"
	if gpu {
		header += "GPU P50 ms\tGPU mean ms\t"
	}
	fmt.Fprintln(tw, header)
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f ± %.2f\t%.1f\t", r.Checkpoint, r.Backend,
			r.Questions, r.InputTokens, r.FirstMS, r.P50MS, r.P95MS, r.P99MS, r.MeanMS, r.SDMS, r.QPS)
		if gpu {
			fmt.Fprintf(tw, "%.2f\t%.2f\t", r.GPUP50MS, r.GPUMeanMS)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
