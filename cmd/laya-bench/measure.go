package main

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"time"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/backend/cpu"
	"github.com/laya-metal/laya/internal/cli"
	"github.com/laya-metal/laya/internal/phase"
	"github.com/laya-metal/laya/internal/stats"
)

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
	// Host is the median of each phase of the timed requests on the host
	// (--format json), and what the forward took beyond the device's time.
	Host *hostRow `json:"host_ms,omitempty"`
	// Counters are the backend's counts over the timed requests
	// (backend.Counter), e.g. the cuda backend's graph replays and
	// segments run kernel by kernel.
	Counters map[string]int `json:"backend_counters,omitempty"`
	// Profile is the GPU time per operation and request (--profile).
	Profile []opProfile `json:"profile,omitempty"`
	// Joins is the cpu backend's worker time per call site and request
	// (--joins), most idle first.
	Joins []joinRow `json:"joins,omitempty"`
	// Kernel is the cpu backend's GEMM micro-kernel in the timed requests
	// and alone on hot operands (--kernel).
	Kernel *kernelRow `json:"kernel,omitempty"`
}

// hostRow is where the timed requests' wall time went, medians over them
// (internal/phase): parsing the JSON, preparing the rows, the forward
// (device time included; BeyondGPU is the forward less the request's
// device time, on backends that report it), assembling the answers, and
// the rest of the wall time (taking hold of the network among it).
type hostRow struct {
	Parse     float64  `json:"parse"`
	Prepare   float64  `json:"prepare"`
	Forward   float64  `json:"forward"`
	BeyondGPU *float64 `json:"forward_beyond_gpu,omitempty"`
	Assemble  float64  `json:"assemble"`
	Other     float64  `json:"other"`
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
func measure(ctx context.Context, agent *laya.Agent, timer backend.Timer, n int, o options, progress *cli.Progress) (result, error) {
	r := result{Questions: n}
	var gpu time.Duration
	// --vary: the k-th request's state has k mod N extra words.
	reqs := make([][]byte, max(o.vary, 1))
	for k := range reqs {
		reqs[k] = variedRequest(n, o.long, k)
	}
	calls := 0
	var pt phase.Times // the last request's
	once := func() (time.Duration, *laya.Result, error) {
		req := reqs[calls%len(reqs)]
		calls++
		var gpuStart time.Duration
		if timer != nil {
			gpuStart = timer.DeviceTime()
		}
		pt = phase.Times{}
		elapsed, out, err := timeRequest(phase.With(ctx, &pt), agent, req)
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
	r.InputTokens = out.Usage.InputTokens
	for i := 1; i < o.warmup; i++ {
		progress.Printf("laya-bench: %d questions: warm-up %d of %d", n, i+1, o.warmup)
		if _, _, err := once(); err != nil {
			return r, err
		}
	}
	if o.joins || o.kernel {
		o.cpu.SetProfile(cpu.Profile{Joins: o.joins, Kernel: o.kernel})
		defer o.cpu.SetProfile(cpu.Profile{})
	}
	var hot []float64
	var host [6][]float64 // hostRow's fields, a sample a timed request
	counter, _ := o.be.(backend.Counter)
	var before map[string]int
	if counter != nil {
		before = counter.Counters()
	}
	for i := 0; i < o.runs; i++ {
		progress.Printf("laya-bench: %d questions: run %d of %d", n, i+1, o.runs)
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
		for k, v := range [6]float64{ms(pt[phase.Parse]), ms(pt[phase.Prepare]), ms(pt[phase.Forward]), ms(pt[phase.Forward] - gpu),
			ms(pt[phase.Assemble]), ms(d - pt[phase.Parse] - pt[phase.Prepare] - pt[phase.Forward] - pt[phase.Assemble])} {
			host[k] = append(host[k], v)
		}
	}
	if o.runs > 0 {
		med := func(v []float64) float64 {
			v = append([]float64(nil), v...)
			sort.Float64s(v)
			return stats.Percentile(v, 50)
		}
		r.Host = &hostRow{Parse: med(host[0]), Prepare: med(host[1]), Forward: med(host[2]), Assemble: med(host[4]), Other: med(host[5])}
		if timer != nil {
			b := med(host[3])
			r.Host.BeyondGPU = &b
		}
	}
	if counter != nil {
		r.Counters = map[string]int{}
		for k, v := range counter.Counters() {
			r.Counters[k] = v - before[k]
		}
	}
	if o.joins {
		for _, j := range o.cpu.Joins() {
			r.Joins = append(r.Joins, joinRow{Site: j.Site, PerRequest: float64(j.Calls) / float64(o.runs),
				HeldMS: ms(j.Held) / float64(o.runs), BusyMS: ms(j.Busy) / float64(o.runs), Idle: j.Idle(),
				LateMS: ms(j.Late) / float64(o.runs)})
		}
	}
	if o.kernel {
		kt := o.cpu.KernelTime()
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

// timeRequest answers req and returns the wall time of the answer and the
// answer.
func timeRequest(ctx context.Context, agent *laya.Agent, req []byte) (time.Duration, *laya.Result, error) {
	start := time.Now()
	res, err := agent.PredictJSON(ctx, req)
	if err != nil {
		return 0, nil, err
	}
	return time.Since(start), res, nil
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

// measureAll times every --questions workload (and profiles it with
// --profile), showing on progress which run is going.
func measureAll(ctx context.Context, agent *laya.Agent, be backend.Backend, o options, name string, progress *cli.Progress) ([]result, error) {
	defer progress.Clear()
	timer, _ := be.(backend.Timer)
	profiler, _ := be.(backend.Profiler)
	o.cpu, _ = be.(*cpu.Backend)
	o.be = be
	var results []result
	for _, n := range o.questions {
		r, err := measure(ctx, agent, timer, n, o, progress)
		if err != nil {
			return nil, fmt.Errorf("%d questions: %w", n, err)
		}
		if o.profile {
			progress.Printf("laya-bench: %d questions: profiling %d runs", n, o.runs)
			if r.Profile, err = profile(ctx, agent, profiler, n, o); err != nil {
				return nil, fmt.Errorf("%d questions, profiling: %w", n, err)
			}
		}
		r.Checkpoint, r.Backend = name, o.backend
		results = append(results, r)
	}
	return results, nil
}
