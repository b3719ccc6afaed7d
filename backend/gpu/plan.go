package gpu

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/encoder"
	"github.com/laya-metal/laya/heads"
	"github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/weights"
)

// A work plan is the Metal forward pass of one request, recorded on a
// PlanDevice by this package's own Stream (the same fusion, barriers,
// arena and chunked commits as on a GPU) and priced with metal.DispatchCost
// against a roofline of named Apple GPUs. It is a MODEL, never a
// measurement: no GPU runs.

// PlanRequest is the request a plan records: Questions batch rows of
// Tokens tokens each, Markers option markers per row.
type PlanRequest struct {
	Questions int `json:"questions"`
	Tokens    int `json:"tokens"`
	Markers   int `json:"markers"`
	// SplitKGroups, when set, records the request with split-K on
	// (Backend.SetSplitK with this target: TimeModel.SplitKTarget of the
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
	Model   string      `json:"model"`
	Request PlanRequest `json:"request"`
	Label   string      `json:"label"`
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
	TimeModel TimeModel         `json:"time_model"`
	Log       []PlannedDispatch `json:"-"`
	costs     []metal.Cost      // per dispatch of Log
}

// MakePlan records ckpt's forward pass for req on a PlanDevice: no GPU,
// and the weights are wrapped in place, never read, so a shape-only
// checkpoint (weights.ShapeCheckpoint, synthetic.Spec.ShapeCheckpoint)
// serves. model names the plan.
func MakePlan(ctx context.Context, model string, ckpt *weights.Checkpoint, req PlanRequest) (*Plan, error) {
	if req.Questions <= 0 || req.Tokens < 2 || req.Markers <= 0 || req.Markers > req.Tokens-2 {
		return nil, fmt.Errorf("backend/gpu: plan: %w: %d questions of %d tokens with %d markers", backend.ErrShape, req.Questions, req.Tokens, req.Markers)
	}
	dev := NewPlanDevice(true)
	be := New("plan", dev)
	defer be.Close()
	be.SetSplitK(req.SplitKGroups)
	net, err := newPlanNetwork(be, ckpt)
	if err != nil {
		return nil, fmt.Errorf("backend/gpu: plan: %w", err)
	}
	if _, err := net.run(ctx, req, nil); err != nil {
		return nil, err
	}
	first := be.BuffersAllocated()
	dev.Reset()
	var layerEnds []int
	encoderEnd, headEnd := 0, 0
	if _, err := net.run(ctx, req, func(stage string, i int) {
		switch stage {
		case "layer":
			layerEnds = append(layerEnds, dev.Stats().Dispatches)
		case "encoder":
			encoderEnd = dev.Stats().Dispatches
		case "decision":
			headEnd = dev.Stats().Dispatches
		}
	}); err != nil {
		return nil, err
	}
	st := dev.Stats()
	p := &Plan{
		Model: model, Request: req,
		Label:      "MODEL: counted on a recording device and priced with a roofline; not a measurement",
		Dispatches: st.Dispatches, Barriers: st.Barriers, CommandBuffers: st.CommandBuffers, Waits: st.Waits,
		EncoderLayers:          len(layerEnds),
		DecisionHeadDispatches: headEnd - encoderEnd,
		BuffersAllocated:       be.BuffersAllocated() - first,
		BuffersAllocatedFirst:  first,
		Log:                    dev.Log(),
		TimeModel:              DefaultTimeModel,
	}
	// Dispatches between the end of one layer and the next: the first
	// layer also holds the embedding gather and its norm.
	for i := 1; i < len(layerEnds); i++ {
		p.DispatchesPerEncoderLayer = max(p.DispatchesPerEncoderLayer, layerEnds[i]-layerEnds[i-1])
	}
	byOp := map[string]*OpPlan{}
	for _, d := range p.Log {
		c := metal.DispatchCost(d.Kernel, d.Constants, d.Groups, d.Threads, d.Args)
		p.costs = append(p.costs, c)
		op := byOp[d.Op]
		if op == nil {
			op = &OpPlan{Op: d.Op, FloorUs: map[string]float64{}, ModelUs: map[string]float64{}}
			byOp[d.Op] = op
		}
		for _, g := range AppleGPUs {
			op.FloorUs[g.Name] += max(c.FLOPs/(g.FP32TFLOPS*1e12), c.IdealBytes/(g.BandwidthGBs*1e9)) * 1e6
			km := p.TimeModel.Dispatch(g, d, c)
			op.ModelUs[g.Name] += km.TimeUs
			if g.Name == ReferenceGPU {
				op.PaddedFLOPs += km.PaddedFLOPs
				p.PaddedFLOPs += km.PaddedFLOPs
				op.Threadgroups += km.Groups
				op.Waves += km.Waves
				op.Slots += km.Waves * g.Cores * km.Resident
			}
		}
		op.Dispatches++
		if d.AfterBarrier {
			op.Barriers++
		}
		op.Cost = op.Cost.Add(c)
		p.FLOPs += c.FLOPs
		p.IdealBytes += c.IdealBytes
		p.RequestedBytes += c.RequestedBytes
	}
	for _, op := range byOp {
		p.Ops = append(p.Ops, *op)
	}
	sort.Slice(p.Ops, func(i, j int) bool {
		return p.Ops[i].FLOPs > p.Ops[j].FLOPs || p.Ops[i].FLOPs == p.Ops[j].FLOPs && p.Ops[i].Op < p.Ops[j].Op
	})
	for _, g := range AppleGPUs {
		p.GPUs = append(p.GPUs, p.floor(g))
	}
	return p, nil
}

// planNetwork is the request pipeline of the root package's network, as
// internal/forwardpass.RunPruned records it (encoder → decision head with
// final-head pruning to the [CLS] and marker rows → scorer on the markers
// → act head → three reads), on a plan backend, with observers.
type planNetwork struct {
	enc      *encoder.ModernBERT
	decision *heads.Decision
	scorer   *heads.Scorer
	act      *heads.ActHead
	be       backend.Backend
	vocab    int
	// The request's host arrays, kept for the next request of the same
	// size (a server's request pool would hold them likewise).
	ids                []int32
	lengths, count     []int
	qtypes             []heads.QType
	markerRows         []int32
	keep, cls, markers []int32
	read               []float32
}

func newPlanNetwork(be backend.Backend, ckpt *weights.Checkpoint) (*planNetwork, error) {
	n := &planNetwork{be: be, vocab: ckpt.Encoder.VocabSize}
	var err error
	if n.enc, err = encoder.New(be, ckpt); err != nil {
		return nil, err
	}
	if n.decision, err = heads.NewDecision(be, ckpt); err != nil {
		return nil, err
	}
	if n.scorer, err = heads.NewScorer(be, ckpt); err != nil {
		return nil, err
	}
	if n.act, err = heads.NewActHead(be, ckpt); err != nil {
		return nil, err
	}
	return n, nil
}

// run records one request; observe sees ("layer", i) after each encoder
// layer is encoded, then ("encoder", 0) and ("decision", 0) after the
// encoder and the decision head (what they recorded encoded first: plans
// only, a benchmark passes no observer and keeps the stream's deferral
// intact).
func (n *planNetwork) run(ctx context.Context, req PlanRequest, observe func(stage string, i int)) ([]float32, error) {
	rows, L := req.Questions, req.Tokens
	ids := grow(&n.ids, rows*L)
	lengths, qtypes, counts := grow(&n.lengths, rows), grow(&n.qtypes, rows), grow(&n.count, rows)
	markerRows := n.markerRows[:0]
	for b := range rows {
		for i := range L {
			ids[b*L+i] = int32((1000 + 37*i) % n.vocab) // any valid ids: the plan does not depend on them
		}
		lengths[b], qtypes[b], counts[b] = L, heads.QType(b%heads.NumQuestionTypes), req.Markers
		for m := range req.Markers {
			markerRows = append(markerRows, int32(b*L+1+m*(L-2)/req.Markers))
		}
	}
	s := n.be.NewStream()
	defer s.Close()
	var encObs backend.Observer
	if observe != nil {
		encObs = func(_ backend.Stream, stage string, i int, _ backend.Tensor) { observe(stage, i) }
	}
	hidden, err := n.enc.Forward(ctx, s, ids, backend.Layout{Lengths: lengths, SeqLen: L}, encObs)
	if err != nil {
		return nil, err
	}
	if observe != nil {
		_ = s.Err()
		observe("encoder", 0)
	}
	// Final-head pruning: the last head layer computes the [CLS] rows,
	// then the markers; the scorer and the act head read those.
	n.markerRows = markerRows
	keep, cls, markers := n.keep[:0], n.cls[:0], n.markers[:0]
	for b := range rows {
		keep = append(keep, int32(b*L))
		cls = append(cls, int32(b))
	}
	keep = append(keep, markerRows...)
	for i := range markerRows {
		markers = append(markers, int32(rows+i))
	}
	n.keep, n.cls, n.markers = keep, cls, markers
	kept, err := n.decision.ForwardRows(ctx, s, hidden, qtypes, backend.Layout{Lengths: lengths, SeqLen: L}, keep, nil)
	if err != nil {
		return nil, err
	}
	if observe != nil {
		_ = s.Err()
		observe("decision", 0)
	}
	logits := n.scorer.Forward(s, kept, markers, nil)
	actLogits, actProbs := n.act.ForwardRows(s, kept, cls, logits, counts)
	for _, t := range [...]backend.Tensor{actLogits, actProbs, logits} {
		if err := s.Read(ctx, t, grow(&n.read, t.Rows()*t.Cols())); err != nil {
			return nil, err
		}
	}
	return n.read, nil // the logits (the last read)
}

// grow sets *buf to n elements, reusing its array when it is large enough.
func grow[T any](buf *[]T, n int) []T {
	if cap(*buf) < n {
		*buf = make([]T, n)
	}
	*buf = (*buf)[:n]
	return *buf
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
	gpu("M1 (8-core GPU)", 8, 1.278, 68.25, "clock philipturner/metal-benchmarks; 68.25 GB/s Apple"),
	gpu("M1 Pro (16-core)", 16, 1.296, 200, "clock philipturner/metal-benchmarks; 200 GB/s Apple"),
	gpu("M1 Max (32-core)", 32, 1.296, 400, "clock philipturner/metal-benchmarks; 400 GB/s Apple"),
	gpu("M2 (10-core)", 10, 1.398, 100, "clock philipturner/metal-benchmarks; 100 GB/s Apple"),
	gpu("M2 Pro (19-core)", 19, 1.398, 200, "clock ≥1.398 philipturner/metal-benchmarks; 200 GB/s Apple"),
	gpu("M2 Max (38-core)", 38, 1.398, 400, "clock ≥1.398 philipturner/metal-benchmarks; 400 GB/s Apple"),
	gpu("M3 (10-core)", 10, 1.398, 100, "clock hmc-tech (reported); 100 GB/s Apple"),
	gpu("M3 Pro (18-core)", 18, 1.398, 150, "clock hmc-tech (reported); 150 GB/s Apple"),
	gpu("M3 Max (40-core)", 40, 1.398, 400, "clock hmc-tech (5120 ALUs × 2 × 1.398 GHz = 14.3 TFLOP/s); 400 GB/s Apple"),
	gpu("M4 (10-core)", 10, 1.578, 120, "clock reported for M4-class GPUs, unverified; 120 GB/s Apple"),
	gpu("M4 Pro (20-core)", 20, 1.578, 273, "clock reported for M4-class GPUs, unverified; 273 GB/s Apple"),
	gpu("M4 Max (40-core)", 40, 1.68, 546, "clock ~1.68 GHz reported (MacRumors), unverified; 546 GB/s Apple"),
}

func gpu(name string, cores int, clock, bw float64, source string) GPU {
	return GPU{Name: name, Cores: cores, ClockGHz: clock, FP32TFLOPS: math.Round(float64(cores)*128*2*clock/1e3*100) / 100,
		BandwidthGBs: bw, Source: source}
}

// ReferenceGPU is the GPU whose per-operation floors laya-bench's table
// shows (the target machine).
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
