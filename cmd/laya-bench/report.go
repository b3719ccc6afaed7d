package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sort"
	"time"

	"github.com/laya-metal/laya/internal/stats"
)

// writeReports prints the results in --format, then the tables of
// --joins, --kernel and --profile (which json carries in its results).
// gobench output goes to benchstat: those tables go to stderr then.
func writeReports(stdout, stderr io.Writer, o options, load time.Duration, results []result) error {
	if err := report(stdout, o.format, load, results); err != nil {
		return err
	}
	if o.format == "json" {
		return nil
	}
	w := stdout
	if o.format == "gobench" {
		w = stderr
	}
	if o.joins {
		if err := reportJoins(w, results); err != nil {
			return err
		}
	}
	if o.kernel {
		reportKernel(w, results)
	}
	if o.profile {
		return reportProfile(w, results)
	}
	return nil
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
	// The GPU columns appear when the backend reports device time.
	gpu := slices.ContainsFunc(results, func(r result) bool { return len(r.GPUSamplesMS) > 0 })
	columns := []string{"checkpoint", "backend", ">Q", ">tokens", ">first ms", ">P50 ms", ">P95 ms", ">P99 ms", ">mean ± sd ms", ">q/s"}
	if gpu {
		columns = append(columns, ">GPU P50 ms", ">GPU mean ms")
	}
	t := newMDTable(columns...)
	for _, r := range results {
		row := []string{r.Checkpoint, r.Backend, fmt.Sprint(r.Questions), fmt.Sprint(r.InputTokens), f2(r.FirstMS), f2(r.P50MS), f2(r.P95MS),
			f2(r.P99MS), f2(r.MeanMS) + " ± " + f2(r.SDMS), fmt.Sprintf("%.1f", r.QPS)}
		if gpu {
			row = append(row, f2(r.GPUP50MS), f2(r.GPUMeanMS))
		}
		t.add(row...)
	}
	return t.write(w)
}

func f2(x float64) string { return fmt.Sprintf("%.2f", x) }

// reportProfile prints each workload's profile as a table.
func reportProfile(w io.Writer, results []result) error {
	for _, r := range results {
		total := 0.0
		for _, p := range r.Profile {
			total += p.MS
		}
		fmt.Fprintf(w, "\nGPU time per operation, %s %s Q=%d (each op synced alone: inflated, for ranking; sum %.2f ms/request):\n\n",
			r.Checkpoint, r.Backend, r.Questions, total)
		t := newMDTable("op", ">per request", ">GPU ms/request", ">share")
		for _, p := range r.Profile {
			t.add(p.Op, fmt.Sprintf("%.1f", p.PerRequest), fmt.Sprintf("%.3f", p.MS), fmt.Sprintf("%.1f%%", 100*p.MS/max(total, 1e-9)))
		}
		if err := t.write(w); err != nil {
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
		fmt.Fprintf(w, "\nWorker time per parallel operation, %s Q=%d, per request (held = wall × workers; idle %.1f %% of %.1f ms held in all; late: of the idle time, before the chunks started):\n\n",
			r.Checkpoint, r.Questions, 100*(1-busy/max(held, 1e-9)), held)
		t := newMDTable("call site", ">per request", ">held ms", ">busy ms", ">idle", ">late ms")
		for _, j := range r.Joins {
			t.add(j.Site, fmt.Sprintf("%.1f", j.PerRequest), f2(j.HeldMS), f2(j.BusyMS), fmt.Sprintf("%.1f%%", 100*j.Idle), f2(j.LateMS))
		}
		if err := t.write(w); err != nil {
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
