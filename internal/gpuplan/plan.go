// Package gpuplan records the forward pass of one request on a device that
// runs nothing and prices it: a work plan (laya-bench --plan). The pass
// recorded is internal/forwardpass.RunPruned, the library's own, on
// backend/gpu's Stream over a gpu.PlanDevice (the same fusion, barriers,
// arena and chunked commits as on a GPU); each dispatch is priced with
// metal.DispatchCost against a roofline of named Apple GPUs and a
// tile-aware time model. A plan is a MODEL, never a measurement: no GPU
// runs.
//
// It is a package of its own, above the model, because the op layer
// (backend/...) never imports the model it serves.
package gpuplan

import (
	"math"

	"github.com/laya-metal/laya/backend/gpu"
	"github.com/laya-metal/laya/metal"
)

// Request is the request a plan records: Questions batch rows of
// Tokens tokens each, Markers option markers per row.
type Request struct {
	Questions int `json:"questions"`
	Tokens    int `json:"tokens"`
	Markers   int `json:"markers"`
	// SplitKGroups, when set, records the request with split-K on
	// (gpu.Backend.SetSplitK with this target: TimeModel.SplitKTarget of the
	// GPU it is planned for).
	SplitKGroups int `json:"split_k_target_groups,omitempty"`
}

// OpPlan is the plan of one kind of stream operation.
type OpPlan struct {
	Op         string `json:"op"`
	Dispatches int    `json:"dispatches"`
	Barriers   int    `json:"barriers"`
	metal.Cost
	// FloorUs is the operation's roofline floor per GPU of AppleGPUs, by
	// name, in µs (a MODEL): beside laya-bench --profile's measured GPU
	// time per operation on a Mac it shows how far each kernel is from it.
	FloorUs map[string]float64 `json:"floor_us"`
	// ModelUs is the operation's time under the tile-aware model
	// (DefaultTimeModel, an ESTIMATE), per GPU, barriers included.
	ModelUs map[string]float64 `json:"model_us"`
	// PaddedFLOPs are the FLOPs its tiles compute (padding included).
	PaddedFLOPs float64 `json:"padded_flops"`
	// Threadgroups and Waves are summed over its dispatches on the
	// reference GPU (ReferenceGPU): waves × cores × resident threadgroups
	// against threadgroups shows the slots left idle.
	Threadgroups int `json:"threadgroups"`
	Waves        int `json:"waves_reference_gpu"`
	Slots        int `json:"slots_reference_gpu"`
}

// Plan is a request's recorded work.
type Plan struct {
	Model   string  `json:"model"`
	Request Request `json:"request"`
	Label   string  `json:"label"`
	// Counts of the second identical request (the first warms the buffer
	// arena; its allocations are BuffersAllocatedFirst).
	Dispatches                int `json:"dispatches"`
	Barriers                  int `json:"barriers"`
	CommandBuffers            int `json:"command_buffers"`
	Waits                     int `json:"waits"`
	DispatchesPerEncoderLayer int `json:"dispatches_per_encoder_layer"`
	EncoderLayers             int `json:"encoder_layers"`
	// DecisionHeadDispatches are the decision head's dispatches (type
	// embedding, its layers, the final-head pruning's gathers).
	DecisionHeadDispatches int        `json:"decision_head_dispatches"`
	BuffersAllocated       int        `json:"buffers_allocated_per_request"`
	BuffersAllocatedFirst  int        `json:"buffers_allocated_first_request"`
	FLOPs                  float64    `json:"flops"`
	PaddedFLOPs            float64    `json:"padded_flops"`
	IdealBytes             float64    `json:"ideal_bytes"`
	RequestedBytes         float64    `json:"requested_bytes"`
	Ops                    []OpPlan   `json:"ops"`
	GPUs                   []GPUFloor `json:"gpus"`
	// TimeModel is the tile-aware model's assumptions (GPUFloor.ModelMs,
	// OpPlan.ModelUs).
	TimeModel TimeModel             `json:"time_model"`
	Log       []gpu.PlannedDispatch `json:"-"`
	costs     []metal.Cost          // per dispatch of Log
}

// GPU is one Apple GPU of the roofline table.
type GPU struct {
	Name     string  `json:"name"`
	Cores    int     `json:"cores"`
	ClockGHz float64 `json:"clock_ghz"`
	// FP32TFLOPS is cores × 128 ALUs × 2 (FMA) × clock; FP16 runs at the
	// same rate and simdgroup matrices on the same pipes
	// (philipturner/metal-benchmarks).
	FP32TFLOPS   float64 `json:"fp32_tflops"`
	BandwidthGBs float64 `json:"bandwidth_gbs"`
	Source       string  `json:"source"`
}

// AppleGPUs are the GPUs the plan prices. Cores and bandwidth are Apple's
// published specifications (apple.com tech specs / newsroom); clocks are
// from philipturner/metal-benchmarks ("Overview of Apple-designed GPUs")
// for M1 and M2, from hmc-tech's spec pages for M3 (1.398 GHz), and for M4
// from the 1.578–1.68 GHz reported for M4-class GPUs (third-party, not
// verified: marked "reported"). FP32 TFLOP/s is derived from cores and
// clock. All figures are inputs to a model.
var AppleGPUs = []GPU{
	appleGPU("M1 (8-core GPU)", 8, 1.278, 68.25, "clock philipturner/metal-benchmarks; 68.25 GB/s Apple"),
	appleGPU("M1 Pro (16-core)", 16, 1.296, 200, "clock philipturner/metal-benchmarks; 200 GB/s Apple"),
	appleGPU("M1 Max (32-core)", 32, 1.296, 400, "clock philipturner/metal-benchmarks; 400 GB/s Apple"),
	appleGPU("M2 (10-core)", 10, 1.398, 100, "clock philipturner/metal-benchmarks; 100 GB/s Apple"),
	appleGPU("M2 Pro (19-core)", 19, 1.398, 200, "clock ≥1.398 philipturner/metal-benchmarks; 200 GB/s Apple"),
	appleGPU("M2 Max (38-core)", 38, 1.398, 400, "clock ≥1.398 philipturner/metal-benchmarks; 400 GB/s Apple"),
	appleGPU("M3 (10-core)", 10, 1.398, 100, "clock hmc-tech (reported); 100 GB/s Apple"),
	appleGPU("M3 Pro (18-core)", 18, 1.398, 150, "clock hmc-tech (reported); 150 GB/s Apple"),
	appleGPU("M3 Max (40-core)", 40, 1.398, 400, "clock hmc-tech (5120 ALUs × 2 × 1.398 GHz = 14.3 TFLOP/s); 400 GB/s Apple"),
	appleGPU("M4 (10-core)", 10, 1.578, 120, "clock reported for M4-class GPUs, unverified; 120 GB/s Apple"),
	appleGPU("M4 Pro (20-core)", 20, 1.578, 273, "clock reported for M4-class GPUs, unverified; 273 GB/s Apple"),
	appleGPU("M4 Max (40-core)", 40, 1.68, 546, "clock ~1.68 GHz reported (MacRumors), unverified; 546 GB/s Apple"),
}

func appleGPU(name string, cores int, clock, bw float64, source string) GPU {
	return GPU{Name: name, Cores: cores, ClockGHz: clock, FP32TFLOPS: math.Round(float64(cores)*128*2*clock/1e3*100) / 100,
		BandwidthGBs: bw, Source: source}
}

// ReferenceGPU is the GPU whose per-operation floors laya-bench's table
// shows (the target machine of the GPU path).
const ReferenceGPU = "M3 Max (40-core)"

// DependentDispatchMicros is the modelled GPU cost of one dispatch behind
// a barrier: 2.4–2.75 µs on an M3 Ultra (ml-explore/mlx#4521), 5.2 µs on
// an M2 Pro (antonellof/ferrox#149); the model takes 2.5.
const DependentDispatchMicros = 2.5

// GPUFloor is the roofline of a plan on one GPU (a MODEL).
type GPUFloor struct {
	GPU
	// FloorMs is Σ over dispatches of max(FLOPs / peak, ideal bytes /
	// bandwidth): every kernel at the roofline.
	FloorMs float64 `json:"floor_ms"`
	// WithDispatchMs adds DependentDispatchMicros per barrier.
	WithDispatchMs float64 `json:"floor_with_dispatch_ms"`
	// RequestedMs is Σ max(FLOPs / peak, requested bytes / bandwidth):
	// the kernels' own traffic as if no cache served any of it.
	RequestedMs float64 `json:"requested_traffic_ms"`
	// ModelMs is the tile-aware ESTIMATE (TimeModel): padded tile FLOPs
	// at the simdgroup-matrix rate, wave quantisation, requested bytes,
	// barriers. ModelComputeMs and ModelMemoryMs are its two terms summed
	// alone (each dispatch takes the larger).
	ModelMs        float64 `json:"model_ms"`
	ModelComputeMs float64 `json:"model_compute_ms"`
	ModelMemoryMs  float64 `json:"model_memory_ms"`
}

// DispatchModels prices each dispatch of Log on g under the plan's time
// model (an ESTIMATE), in Log's order.
func (p *Plan) DispatchModels(g GPU) []KernelModel {
	out := make([]KernelModel, len(p.Log))
	for i, d := range p.Log {
		out[i] = p.TimeModel.Dispatch(g, d, p.costs[i])
	}
	return out
}

func (p *Plan) floor(g GPU) GPUFloor {
	f := GPUFloor{GPU: g}
	peak, bw := g.FP32TFLOPS*1e12, g.BandwidthGBs*1e9
	for i, c := range p.costs {
		f.FloorMs += max(c.FLOPs/peak, c.IdealBytes/bw) * 1e3
		f.RequestedMs += max(c.FLOPs/peak, c.RequestedBytes/bw) * 1e3
		km := p.TimeModel.Dispatch(g, p.Log[i], c)
		f.ModelMs += km.TimeUs / 1e3
		f.ModelComputeMs += km.ComputeUs / 1e3
		f.ModelMemoryMs += km.MemoryUs / 1e3
	}
	f.WithDispatchMs = f.FloorMs + float64(p.Barriers)*DependentDispatchMicros/1e3
	return f
}
