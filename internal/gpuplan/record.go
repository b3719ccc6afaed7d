package gpuplan

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/backend/gpu"
	"github.com/laya-metal/laya/heads"
	"github.com/laya-metal/laya/internal/forwardpass"
	"github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/weights"
)

// Make records ckpt's forward pass for req on a gpu.PlanDevice: no GPU,
// and the weights are wrapped in place, never read, so a shape-only
// checkpoint (weights.ShapeCheckpoint, synthetic.Spec.ShapeCheckpoint)
// serves. model names the plan.
func Make(ctx context.Context, model string, ckpt *weights.Checkpoint, req Request) (*Plan, error) {
	if req.Questions <= 0 || req.Tokens < 2 || req.Markers <= 0 || req.Markers > req.Tokens-2 {
		return nil, fmt.Errorf("gpuplan: %w: %d questions of %d tokens with %d markers", backend.ErrShape, req.Questions, req.Tokens, req.Markers)
	}
	r, err := newRecorder(ckpt, true)
	if err != nil {
		return nil, err
	}
	defer r.close()
	r.be.SetSplitK(req.SplitKGroups)
	// The first request warms the buffer arena; the plan is the second's.
	if err := r.run(ctx, req); err != nil {
		return nil, err
	}
	first := r.be.BuffersAllocated()
	r.dev.Reset()
	if err := r.run(ctx, req); err != nil {
		return nil, err
	}
	st := r.dev.Stats()
	p := &Plan{
		Model: model, Request: req,
		Label:      "MODEL: counted on a recording device and priced with a roofline; not a measurement",
		Dispatches: st.Dispatches, Barriers: st.Barriers, CommandBuffers: st.CommandBuffers, Waits: st.Waits,
		BuffersAllocated:      r.be.BuffersAllocated() - first,
		BuffersAllocatedFirst: first,
		Log:                   r.dev.Log(),
		TimeModel:             DefaultTimeModel,
	}
	p.EncoderLayers, p.DispatchesPerEncoderLayer, p.DecisionHeadDispatches = r.weights.stages(p.Log)
	if err := p.price(); err != nil {
		return nil, err
	}
	return p, nil
}

// price prices each dispatch of p.Log and sums the prices by operation and
// by GPU.
func (p *Plan) price() error {
	byOp := map[string]*OpPlan{}
	for _, d := range p.Log {
		c, err := metal.DispatchCost(d.Kernel, d.Constants, d.Groups, d.Threads, d.Args)
		if err != nil {
			return fmt.Errorf("gpuplan: %s: %w", d.Op, err)
		}
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
	return nil
}

// recorder is a checkpoint's network, built as the library builds it
// (forwardpass.NewParts), on backend/gpu over a plan device.
type recorder struct {
	dev     *gpu.PlanDevice
	be      *gpu.Backend
	parts   forwardpass.Parts
	pad     int32
	vocab   int
	weights weightIndex
	// The last request's batch and the read buffers, kept for the next
	// request of the same size (a server's request pool would hold them
	// likewise): the host encoding benchmarks measure the stream's work.
	req   Request
	rows  []forwardpass.Row
	batch *forwardpass.Batch
	read  []float32
}

// newRecorder builds ckpt's network on a plan device that records every
// dispatch (record) or only counts them.
func newRecorder(ckpt *weights.Checkpoint, record bool) (*recorder, error) {
	r := &recorder{dev: gpu.NewPlanDevice(record), vocab: ckpt.Encoder.VocabSize, pad: int32(max(ckpt.Encoder.PadTokenID, 0))}
	r.be = gpu.New("plan", r.dev)
	var err error
	if r.parts, err = forwardpass.NewParts(r.be, ckpt); err != nil {
		r.be.Close()
		return nil, fmt.Errorf("gpuplan: %w", err)
	}
	r.weights = indexWeights(ckpt)
	return r, nil
}

func (r *recorder) close() { r.be.Close() }

// run records one request as the library runs one batch of it: the
// batch laid out for the stream (forwardpass.Layout), the pruned pass
// (forwardpass.RunPruned), and the reads of its three outputs.
func (r *recorder) run(ctx context.Context, req Request) error {
	if r.rows == nil || req != r.req {
		r.rows, r.req = r.requestRows(req), req
		r.batch = nil
	}
	s := r.be.NewStream()
	defer s.Close()
	if r.batch == nil {
		b := forwardpass.Layout(s, r.rows, r.pad)
		r.batch = &b
	}
	out, err := r.parts.RunPruned(ctx, s, *r.batch)
	if err != nil {
		return fmt.Errorf("gpuplan: %w", err)
	}
	for _, t := range [...]backend.Tensor{out.Logits, out.ActLogits, out.ActProbs} {
		n := t.Rows() * t.Cols()
		if cap(r.read) < n {
			r.read = make([]float32, n)
		}
		if err := s.Read(ctx, t, r.read[:n]); err != nil {
			return fmt.Errorf("gpuplan: %w", err)
		}
	}
	return nil
}

// requestRows are req's question rows: any valid token ids (the plan does
// not depend on them), the markers spread over each row, the question
// types in turn.
func (r *recorder) requestRows(req Request) []forwardpass.Row {
	rows := make([]forwardpass.Row, req.Questions)
	for b := range rows {
		ids := make([]int, req.Tokens)
		for i := range ids {
			ids[i] = (1000 + 37*i) % r.vocab
		}
		markers := make([]int, req.Markers)
		for m := range markers {
			markers[m] = 1 + m*(req.Tokens-2)/req.Markers
		}
		rows[b] = forwardpass.Row{IDs: ids, Markers: markers, QType: heads.QType(b % heads.NumQuestionTypes)}
	}
	return rows
}

// A dispatch's part of the network is told by the weights it binds: the
// checkpoint's bytes are wrapped in place, never copied, on a plan device,
// so a bound address inside a tensor's bytes names that tensor. The
// recorded pass is the library's own, so the plan learns where a layer
// starts from what it reads rather than from a copy of the pipeline.

// weightRange is the address range of one tensor's bytes and the part of
// the network it belongs to.
type weightRange struct {
	lo, hi uintptr
	part   part
}

// part is a piece of the model diagram: an encoder layer (layer ≥ 0), the
// rest of the encoder, the decision head, or the heads after it.
type part struct {
	kind  partKind
	layer int
}

type partKind int

const (
	partNone partKind = iota
	partEncoder
	partEncoderLayer
	partDecision
	partOutput // scorer and act head
)

// weightIndex is every tensor's range, sorted by address.
type weightIndex []weightRange

func indexWeights(ckpt *weights.Checkpoint) weightIndex {
	var idx weightIndex
	for _, spec := range ckpt.Expected() {
		t := ckpt.Tensor(spec.Name)
		if t == nil || len(t.Raw) == 0 {
			continue
		}
		lo := uintptr(unsafe.Pointer(unsafe.SliceData(t.Raw)))
		idx = append(idx, weightRange{lo: lo, hi: lo + uintptr(len(t.Raw)), part: partOf(spec.Name)})
	}
	sort.Slice(idx, func(i, j int) bool { return idx[i].lo < idx[j].lo })
	return idx
}

// partOf places a canonical (upstream) weight name.
func partOf(name string) part {
	if rest, ok := strings.CutPrefix(name, "encoder.layers."); ok {
		n, _, _ := strings.Cut(rest, ".")
		if i, err := strconv.Atoi(n); err == nil {
			return part{kind: partEncoderLayer, layer: i}
		}
	}
	switch {
	case strings.HasPrefix(name, "encoder."):
		return part{kind: partEncoder}
	case strings.HasPrefix(name, "head.") || strings.HasPrefix(name, "type_emb."):
		return part{kind: partDecision}
	}
	return part{kind: partOutput}
}

// find is the part whose weights a dispatch binds (partNone: none).
func (idx weightIndex) find(d gpu.PlannedDispatch) part {
	for _, a := range d.Args {
		if a.Buffer == nil {
			continue
		}
		b := a.Buffer.Bytes()
		if a.Offset < 0 || a.Offset >= len(b) {
			continue
		}
		p := uintptr(unsafe.Pointer(&b[a.Offset]))
		i := sort.Search(len(idx), func(i int) bool { return idx[i].hi > p })
		if i < len(idx) && idx[i].lo <= p {
			return idx[i].part
		}
	}
	return part{}
}

// stages counts the encoder layers in log, the most dispatches one layer
// encodes (from the first dispatch reading a layer's weights to the first
// reading the next layer's: the embedding before the first layer and the
// final norm after the last are in no layer), and the decision head's
// dispatches (from the first reading its weights to the last). A dispatch
// reading no weight that continues the operation before it counts with it.
func (idx weightIndex) stages(log []gpu.PlannedDispatch) (layers, perLayer, decision int) {
	var firsts []int
	firstHead, lastHead := -1, -1
	var prev part
	for i, d := range log {
		p := idx.find(d)
		if p.kind == partNone && i > 0 && d.Op == log[i-1].Op {
			// The second dispatch of one operation (a split-K GEMM's
			// reduction) binds no weight but belongs with the first.
			p = prev
		}
		prev = p
		switch p.kind {
		case partEncoderLayer:
			if p.layer == len(firsts) {
				firsts = append(firsts, i)
			}
		case partDecision:
			if firstHead < 0 {
				firstHead = i
			}
			lastHead = i
		}
	}
	for i := 1; i < len(firsts); i++ {
		perLayer = max(perLayer, firsts[i]-firsts[i-1])
	}
	if firstHead >= 0 {
		decision = lastHead - firstHead + 1
	}
	return len(firsts), perLayer, decision
}
