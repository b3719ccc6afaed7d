package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/laya-metal/laya/internal/gpuplan"
	"github.com/laya-metal/laya/weights"
)

// planMarkers is the option count of each planned question (the 4-way
// choice of the benchmark's first template).
const planMarkers = 4

// runPlan prints the Metal work plan (gpuplan.Make) of one request
// per --questions count: a MODEL, labelled as such in every format.
func runPlan(ctx context.Context, o options, stdout io.Writer) error {
	// One checkpoint for every count: the plan reads only its shapes.
	var ckpt *weights.Checkpoint
	var name string
	switch {
	case o.model != "" && o.synthetic != "":
		return fmt.Errorf("--plan: give --model or --synthetic, not both")
	case o.model != "":
		var err error
		if ckpt, err = weights.LoadCheckpoint(o.model); err != nil {
			return fmt.Errorf("--plan: %w", err)
		}
		name = o.model
	default:
		spec, ok := syntheticSpec(o.synthetic)
		if !ok {
			return fmt.Errorf("--plan: give --synthetic english|multilingual|tiny or --model DIR (got %q)", o.synthetic)
		}
		var err error
		if ckpt, err = spec.ShapeCheckpoint(); err != nil {
			return fmt.Errorf("--plan: %w", err)
		}
		name = o.synthetic
	}
	defer ckpt.Close()
	var plans []*gpuplan.Plan
	for _, n := range o.questions {
		req := gpuplan.Request{Questions: n, Tokens: o.tokens, Markers: planMarkers}
		if o.splitK {
			req.SplitKGroups = splitKTarget()
		}
		p, err := gpuplan.Make(ctx, name, ckpt, req)
		if err != nil {
			return fmt.Errorf("--plan: %d questions: %w", n, err)
		}
		plans = append(plans, p)
	}
	if o.format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Label string          `json:"label"`
			Plan  *gpuplan.Plan   `json:"plan"`
			Plans []*gpuplan.Plan `json:"plans"`
		}{plans[0].Label, plans[0], plans})
	}
	for _, p := range plans {
		writePlan(stdout, p, o.profile)
	}
	return nil
}

// splitKTarget is --split-k's threadgroup slots: the reference GPU's
// under the plan's time model (an M3 Max: 40 cores × 3 tiles).
func splitKTarget() int { return gpuplan.DefaultTimeModel.SplitKTarget(referenceGPU()) }

// referenceGPU is gpuplan.ReferenceGPU's row of AppleGPUs.
func referenceGPU() gpuplan.GPU {
	for _, g := range gpuplan.AppleGPUs {
		if g.Name == gpuplan.ReferenceGPU {
			return g
		}
	}
	panic("laya-bench: no " + gpuplan.ReferenceGPU + " in gpuplan.AppleGPUs")
}

func writePlan(w io.Writer, p *gpuplan.Plan, dispatches bool) {
	split := ""
	if p.Request.SplitKGroups > 0 {
		split = fmt.Sprintf(", split-K for %d threadgroup slots", p.Request.SplitKGroups)
	}
	fmt.Fprintf(w, "## Metal work plan: %s, %d question(s) × %d tokens, %d options each%s\n\n", p.Model, p.Request.Questions, p.Request.Tokens, p.Request.Markers, split)
	fmt.Fprintf(w, "%s.\n\n", p.Label)
	fmt.Fprintf(w, "- dispatches %d, barriers %d, %d per encoder layer (%d layers), %d in the decision head\n", p.Dispatches, p.Barriers,
		p.DispatchesPerEncoderLayer, p.EncoderLayers, p.DecisionHeadDispatches)
	fmt.Fprintf(w, "- command buffers %d (chunked commits), blocking CPU waits %d\n", p.CommandBuffers, p.Waits)
	fmt.Fprintf(w, "- device buffers allocated: %d by the first request, %d per request after it\n", p.BuffersAllocatedFirst, p.BuffersAllocated)
	fmt.Fprintf(w, "- %.2f GFLOP (%.2f with tile padding), %.1f MB minimal traffic, %.1f MB requested by the kernels' tiling\n\n", p.FLOPs/1e9,
		p.PaddedFLOPs/1e9, p.IdealBytes/1e6, p.RequestedBytes/1e6)
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	ref := gpuplan.ReferenceGPU
	fmt.Fprintf(tw, "| operation\t| dispatches\t| barriers\t| MFLOP\t| ideal MB\t| requested MB\t| threadgroups / slots, %s\t| floor µs\t| MODEL µs\t|\n", ref)
	fmt.Fprintln(tw, "|---\t|---:\t|---:\t|---:\t|---:\t|---:\t|---:\t|---:\t|---:\t|")
	for _, op := range p.Ops {
		fmt.Fprintf(tw, "| %s\t| %d\t| %d\t| %.1f\t| %.2f\t| %.2f\t| %d / %d\t| %.1f\t| %.1f\t|\n", op.Op, op.Dispatches, op.Barriers, op.FLOPs/1e6, op.IdealBytes/1e6,
			op.RequestedBytes/1e6, op.Threadgroups, op.Slots, op.FloorUs[ref], op.ModelUs[ref])
	}
	tw.Flush()
	fmt.Fprintf(w, "\nthreadgroups / slots: the grids' threadgroups against the waves they run in × cores × threadgroups a core holds (idle slots are the difference).\n")
	fmt.Fprintf(w, "\nRoofline floors (MODEL; every kernel at max(FLOPs/peak, bytes/bandwidth); +%.1f µs per barrier in the second column):\n\n", gpuplan.DependentDispatchMicros)
	tw = tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "| GPU\t| cores\t| GHz\t| FP32 TFLOP/s\t| GB/s\t| floor ms\t| + dispatch ms\t| requested-traffic ms\t| MODEL ms (compute / memory)\t| source\t|")
	fmt.Fprintln(tw, "|---\t|---:\t|---:\t|---:\t|---:\t|---:\t|---:\t|---:\t|---:\t|---\t|")
	for _, g := range p.GPUs {
		fmt.Fprintf(tw, "| %s\t| %d\t| %.3f\t| %.2f\t| %.0f\t| %.2f\t| %.2f\t| %.2f\t| %.2f (%.2f / %.2f)\t| %s\t|\n", g.Name, g.Cores, g.ClockGHz, g.FP32TFLOPS, g.BandwidthGBs,
			g.FloorMs, g.WithDispatchMs, g.RequestedMs, g.ModelMs, g.ModelComputeMs, g.ModelMemoryMs, g.Source)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nMODEL ms is the tile-aware time model, an ESTIMATE (each dispatch max(compute, memory) + its barrier). Its assumptions:\n\n")
	for _, a := range p.TimeModel.Assumptions {
		fmt.Fprintf(w, "- %s\n", a)
	}
	fmt.Fprintln(w)
	if dispatches {
		fmt.Fprintf(w, "Dispatches as encoded (%d; | = behind a barrier; MODEL on the %s: threadgroups a core holds, waves, µs):\n\n", len(p.Log), gpuplan.ReferenceGPU)
		models := p.DispatchModels(referenceGPU())
		for i, d := range p.Log {
			b := " "
			if d.AfterBarrier {
				b = "|"
			}
			m := models[i]
			fmt.Fprintf(w, "%4d %s %-22s %-26s grid %dx%dx%d × %d threads   R %d, %d wave(s), %.1f µs\n", i, b, d.Kernel, d.Op,
				d.Groups.X, d.Groups.Y, d.Groups.Z, d.Threads.X*d.Threads.Y*d.Threads.Z, m.Resident, m.Waves, m.TimeUs)
		}
		fmt.Fprintln(w)
	}
}
