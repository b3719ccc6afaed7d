package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/internal/cli"
	"github.com/laya-metal/laya/internal/stats"
)

const compareHelp = `laya-bench --compare A B: which of two configurations is faster, and by how much.

Usage:
  laya-bench --compare [flags] A B

A and B are each one of
  backend=NAME[,model=DIR|,synthetic=PRESET]   a backend on a checkpoint
  DIR                                          a checkpoint directory (backend cpu)
  FILE                                         a gobench file (laya-bench --format gobench, go test -bench)
A and B are both live configurations or both gobench files.

Live: both are loaded, then every workload runs --warmup untimed requests of
each and --runs timed pairs, alternating which goes first, so drift and
noise hit both alike. The ratio is B/A of the paired wall times (> 1: B is
slower); its 95 % interval is a percentile bootstrap of the median of the
paired ratios (2000 resamples). Peak RSS is the process's high-water mark
(VmHWM, reset before each workload where Linux allows), with both loaded.

Files: for every benchmark name in both files, the ratio of the medians B/A
with a bootstrap interval over independent resamples of each side.

Examples:
  laya-bench --compare --questions 1 backend=cpu,synthetic=tiny backend=metal-emu,synthetic=tiny
  laya-bench --compare old.txt new.txt
  laya-bench --compare --format json testdata/oracle/checkpoints/tiny-en testdata/oracle/checkpoints/tiny-ml

Flags:
`

// compareResult is one workload's (or benchmark's) comparison.
type compareResult struct {
	Name       string    `json:"name"`
	Questions  int       `json:"questions,omitempty"`
	AMedianMS  float64   `json:"a_median_ms"`
	BMedianMS  float64   `json:"b_median_ms"`
	Ratio      float64   `json:"ratio_b_over_a"`
	RatioLow   float64   `json:"ratio_ci95_low"`
	RatioHigh  float64   `json:"ratio_ci95_high"`
	Pairs      int       `json:"pairs,omitempty"`
	PeakRSSMiB float64   `json:"peak_rss_mib,omitempty"`
	ASamplesMS []float64 `json:"a_samples_ms"`
	BSamplesMS []float64 `json:"b_samples_ms"`
}

// runCompare is laya-bench --compare; args follow the --compare flag.
func runCompare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("laya-bench --compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, compareHelp); fs.PrintDefaults() }
	questions := fs.String("questions", "1,10", "comma-separated question counts, one workload each (live)")
	warmup := fs.Int("warmup", 3, "untimed requests of each configuration per workload (live)")
	runs := fs.Int("runs", 20, "timed pairs per workload (live)")
	batchSize := fs.Int("batch-size", 0, "question rows per forward batch, 0 for the backend's: 16, on cuda up to 64 rows and 8192 tokens (live)")
	tokDir := fs.String("tokenizer", "", "tokenizer `DIR` for synthetic= checkpoints (default: the ModernBERT tokenizer built into laya-bench)")
	format := fs.String("format", "md", "output: md or json")
	seed := fs.Uint64("seed", 1, "bootstrap seed")
	if err := cli.ParseFlags(fs, args); err != nil {
		return compareUsage(err)
	}
	if fs.NArg() != 2 {
		return compareUsage(fmt.Errorf("--compare: want two configurations A B, got %d arguments", fs.NArg()))
	}
	if *format != "md" && *format != "json" {
		return compareUsage(fmt.Errorf("--compare: --format %q: use md or json", *format))
	}
	if *runs < 2 || *warmup < 0 {
		return compareUsage(errors.New("--compare: --runs must be ≥ 2 and --warmup ≥ 0"))
	}
	a, b := fs.Arg(0), fs.Arg(1)
	rng := rand.New(rand.NewPCG(*seed, 0x1a7a))
	var results []compareResult
	var err error
	aFile, bFile := isFile(a), isFile(b)
	switch {
	case aFile && bFile:
		results, err = compareFiles(a, b, rng)
	case aFile || bFile:
		return compareUsage(errors.New("--compare: compare two gobench files or two live configurations, not one of each"))
	default:
		counts, cerr := parseCounts(*questions)
		if cerr != nil {
			return compareUsage(cerr)
		}
		o := options{tokenizer: *tokDir, warmup: *warmup, runs: *runs, batchSize: *batchSize}
		results, err = compareLive(ctx, a, b, counts, o, rng, stderr)
	}
	if err != nil {
		return err
	}
	return reportCompare(stdout, *format, a, b, results)
}

// compareUsage marks err as a mistake in --compare's command line, whose
// help is --compare -h.
func compareUsage(err error) error {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return &cli.UsageError{Err: err, Help: "laya-bench --compare"}
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// liveConfig is a parsed live configuration.
type liveConfig struct {
	backend, model, synthetic string
}

func parseConfig(spec string) (liveConfig, error) {
	c := liveConfig{backend: "cpu"}
	if !strings.Contains(spec, "=") {
		c.model = spec
		return c, nil
	}
	for _, kv := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(kv, "=")
		switch {
		case !ok || v == "":
			return c, fmt.Errorf("--compare: %q: want key=value in %q", kv, spec)
		case k == "backend":
			c.backend = v
		case k == "model":
			c.model = v
		case k == "synthetic":
			c.synthetic = v
		default:
			return c, fmt.Errorf("--compare: unknown key %q in %q (backend, model, synthetic)", k, spec)
		}
	}
	if c.model == "" && c.synthetic == "" {
		return c, fmt.Errorf("--compare: %q names no checkpoint (model=DIR or synthetic=PRESET)", spec)
	}
	return c, nil
}

func compareLive(ctx context.Context, a, b string, counts []int, o options, rng *rand.Rand, stderr io.Writer) ([]compareResult, error) {
	var agents [2]*laya.Agent
	for i, spec := range []string{a, b} {
		c, err := parseConfig(spec)
		if err != nil {
			return nil, compareUsage(err)
		}
		co := o
		co.model, co.synthetic = c.model, c.synthetic
		dir, _, err := checkpointDir(co, stderr)
		if cli.IsUsage(err) {
			return nil, compareUsage(err)
		} else if err != nil {
			return nil, err
		}
		agent, err := laya.Load(ctx, dir, laya.WithBackend(c.backend), laya.WithBatchSize(o.batchSize))
		if err != nil {
			err = fmt.Errorf("--compare %s: %w", spec, err)
			if errors.Is(err, backend.ErrUnknownBackend) {
				return nil, compareUsage(err)
			}
			return nil, err
		}
		defer agent.Close()
		agents[i] = agent
	}
	progress := cli.NewProgress(stderr)
	defer progress.Clear()
	var results []compareResult
	for _, n := range counts {
		req := request(n, false)
		once := func(agent *laya.Agent) (float64, error) {
			start := time.Now()
			_, err := agent.PredictJSON(ctx, req)
			return ms(time.Since(start)), err
		}
		resetPeakRSS()
		progress.Printf("laya-bench --compare: %d questions: warm-up", n)
		for range o.warmup {
			for _, agent := range agents {
				if _, err := once(agent); err != nil {
					return nil, fmt.Errorf("%d questions: %w", n, err)
				}
			}
		}
		r := compareResult{Name: fmt.Sprintf("q=%d", n), Questions: n, Pairs: o.runs}
		for i := range o.runs {
			progress.Printf("laya-bench --compare: %d questions: pair %d of %d", n, i+1, o.runs)
			order := []int{0, 1}
			if i%2 == 1 {
				order = []int{1, 0}
			}
			var t [2]float64
			for _, k := range order {
				d, err := once(agents[k])
				if err != nil {
					return nil, fmt.Errorf("%d questions: %w", n, err)
				}
				t[k] = d
			}
			r.ASamplesMS = append(r.ASamplesMS, t[0])
			r.BSamplesMS = append(r.BSamplesMS, t[1])
		}
		r.PeakRSSMiB = peakRSSMiB()
		r.AMedianMS, r.BMedianMS = median(r.ASamplesMS), median(r.BSamplesMS)
		ratios := make([]float64, o.runs)
		for i := range ratios {
			ratios[i] = r.BSamplesMS[i] / r.ASamplesMS[i]
		}
		r.Ratio = median(ratios)
		r.RatioLow, r.RatioHigh = bootstrapCI(rng, func(resample func([]float64) []float64) float64 {
			return median(resample(ratios))
		})
		results = append(results, r)
	}
	return results, nil
}

// gobenchLine matches "BenchmarkName[-P]  N  123 ns/op ...".
var gobenchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([0-9.e+]+) ns/op`)

// readGobench returns each benchmark's ns/op samples in ms, and the names in
// file order.
func readGobench(path string) (map[string][]float64, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("--compare: %w", err)
	}
	defer f.Close()
	samples := map[string][]float64{}
	var names []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := gobenchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			continue
		}
		if _, seen := samples[m[1]]; !seen {
			names = append(names, m[1])
		}
		samples[m[1]] = append(samples[m[1]], v/1e6)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("--compare: %s: %w", path, err)
	}
	if len(names) == 0 {
		return nil, nil, fmt.Errorf("--compare: %s holds no benchmark lines (ns/op)", path)
	}
	return samples, names, nil
}

func compareFiles(a, b string, rng *rand.Rand) ([]compareResult, error) {
	as, names, err := readGobench(a)
	if err != nil {
		return nil, err
	}
	bs, _, err := readGobench(b)
	if err != nil {
		return nil, err
	}
	var results []compareResult
	for _, name := range names {
		bv, ok := bs[name]
		if !ok {
			continue
		}
		av := as[name]
		r := compareResult{Name: name, ASamplesMS: av, BSamplesMS: bv, AMedianMS: median(av), BMedianMS: median(bv)}
		r.Ratio = r.BMedianMS / r.AMedianMS
		r.RatioLow, r.RatioHigh = bootstrapCI(rng, func(resample func([]float64) []float64) float64 {
			a := median(resample(av)) // drawn first, as before: the same CI for a seed
			return median(resample(bv)) / a
		})
		results = append(results, r)
	}
	if len(results) == 0 {
		return nil, fmt.Errorf("--compare: %s and %s share no benchmark name", a, b)
	}
	return results, nil
}

// bootstrapCI is the 2.5th and 97.5th percentiles of stat over 2000
// resamples; stat draws each sample it needs with resample(xs), len(xs)
// values of xs picked with replacement.
func bootstrapCI(rng *rand.Rand, stat func(resample func(xs []float64) []float64) float64) (lo, hi float64) {
	const resamples = 2000
	vals := make([]float64, resamples)
	resample := func(xs []float64) []float64 {
		s := make([]float64, len(xs))
		for i := range s {
			s[i] = xs[rng.IntN(len(xs))]
		}
		return s
	}
	for i := range vals {
		vals[i] = stat(resample)
	}
	sort.Float64s(vals)
	return stats.Percentile(vals, 2.5), stats.Percentile(vals, 97.5)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	sort.Float64s(s)
	return stats.Percentile(s, 50)
}

// resetPeakRSS resets the process's RSS high-water mark (Linux: writing 5 to
// clear_refs); elsewhere, or where it is refused, the mark keeps counting
// from the start.
func resetPeakRSS() {
	if runtime.GOOS == "linux" {
		_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	}
}

// peakRSSMiB is VmHWM from /proc/self/status (0 where there is none).
func peakRSSMiB() float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			if err == nil {
				return kb / 1024
			}
		}
	}
	return 0
}

func reportCompare(w io.Writer, format, a, b string, results []compareResult) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{
			"a": a, "b": b, "go": runtime.Version(), "goos": runtime.GOOS, "goarch": runtime.GOARCH,
			"cpus": runtime.NumCPU(), "gomaxprocs": runtime.GOMAXPROCS(0), "results": results,
		})
	}
	fmt.Fprintf(w, "A = %s\nB = %s\n(%s %s/%s, GOMAXPROCS %d; ratio B/A, > 1: B slower)\n\n", a, b, runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0))
	t := newMDTable("workload", ">A median ms", ">B median ms", ">B/A", ">95% CI", ">peak RSS MiB")
	for _, r := range results {
		rss := "-"
		if r.PeakRSSMiB > 0 {
			rss = fmt.Sprintf("%.0f", r.PeakRSSMiB)
		}
		t.add(r.Name, f2(r.AMedianMS), f2(r.BMedianMS), fmt.Sprintf("%.3f", r.Ratio), fmt.Sprintf("[%.3f, %.3f]", r.RatioLow, r.RatioHigh), rss)
	}
	if err := t.write(w); err != nil {
		return err
	}
	if slices.ContainsFunc(results, func(r compareResult) bool { return math.IsNaN(r.Ratio) }) {
		return errors.New("--compare: a ratio is undefined (a zero time)")
	}
	return nil
}

// startCPUProfile starts a Go CPU profile into path (laya-bench
// --cpuprofile) and returns the function that stops and writes it.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
