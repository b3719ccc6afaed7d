package gpuplan

import (
	"context"
	"math"
	"testing"
	"unsafe"

	"github.com/laya-metal/laya/backend/gpu"
	"github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/weights/synthetic"
)

// The real English (ModernBERT-large) and multilingual (mmBERT-base)
// configurations plan at most 5 dispatches per encoder layer, allocate no
// device buffer once warm, and wait once per request.
func TestPlanRealConfigs(t *testing.T) {
	for _, spec := range []synthetic.Spec{synthetic.English(), synthetic.Multilingual()} {
		ckpt, err := spec.ShapeCheckpoint()
		if err != nil {
			t.Fatal(err)
		}
		p, err := Make(context.Background(), spec.Name, ckpt, Request{Questions: 1, Tokens: 93, Markers: 4})
		ckpt.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d dispatches, %d barriers, %d per layer, %d command buffers, %d waits, %d buffers (first request %d), %.1f GFLOP, %.0f MB ideal, %.0f MB requested",
			p.Model, p.Dispatches, p.Barriers, p.DispatchesPerEncoderLayer, p.CommandBuffers, p.Waits, p.BuffersAllocated, p.BuffersAllocatedFirst,
			p.FLOPs/1e9, p.IdealBytes/1e6, p.RequestedBytes/1e6)
		for _, g := range p.GPUs {
			if g.Name == "M3 Max (40-core)" {
				t.Logf("%s on %s: floor %.2f ms, with dispatch %.2f ms, requested traffic %.2f ms", p.Model, g.Name, g.FloorMs, g.WithDispatchMs, g.RequestedMs)
			}
		}
		for _, op := range p.Ops {
			t.Logf("  %-28s %4d dispatches %4d barriers %8.1f MFLOP %8.2f MB", op.Op, op.Dispatches, op.Barriers, op.FLOPs/1e6, op.IdealBytes/1e6)
		}
		// The FLOPs priced from the recorded dispatches against the same
		// count from the configuration alone: each layer's fused FFN-in
		// GEMM multiplies T = questions × tokens rows of hidden_size by
		// hidden_size × 2·intermediate_size (2 FLOPs a multiply-add), and
		// its LayerNorm prologue is modelled at 8 FLOPs an input element
		// (metal.Cost).
		rows, hidden := float64(p.Request.Questions*p.Request.Tokens), float64(spec.HiddenSize)
		wantFFNIn := float64(spec.NumLayers) * (2*rows*hidden*2*float64(spec.IntermediateSize) + 8*rows*hidden)
		gotFFNIn := -1.0
		for _, op := range p.Ops {
			if op.Op == "layerNorm+linear+geglu" {
				gotFFNIn = op.FLOPs
			}
		}
		if math.Abs(gotFFNIn-wantFFNIn) > 1e-9*wantFFNIn {
			t.Errorf("%s: layerNorm+linear+geglu priced at %.0f FLOPs, want %.0f from the configuration", p.Model, gotFFNIn, wantFFNIn)
		}
		if p.EncoderLayers != spec.NumLayers {
			t.Errorf("%s: %d encoder layers observed, want %d", p.Model, p.EncoderLayers, spec.NumLayers)
		}
		if p.DispatchesPerEncoderLayer > 5 {
			t.Errorf("%s: %d dispatches per encoder layer, want ≤ 5", p.Model, p.DispatchesPerEncoderLayer)
		}
		// The decision head's layers are fused like the encoder's (5
		// dispatches), plus the type embedding's gather and add and the
		// pruned last layer's two row gathers.
		if want := 5*spec.HeadLayers + 2 + 2; p.DecisionHeadDispatches > want {
			t.Errorf("%s: %d decision-head dispatches, want ≤ %d (5 per layer)", p.Model, p.DecisionHeadDispatches, want)
		}
		if p.BuffersAllocated != 0 {
			t.Errorf("%s: %d device buffers allocated by a warm request, want 0", p.Model, p.BuffersAllocated)
		}
		if p.Waits != 1 {
			t.Errorf("%s: %d CPU waits per request, want 1", p.Model, p.Waits)
		}
		// The tile-aware model prices more work than the roofline at a
		// lower rate: it can never be under the floor.
		for _, g := range p.GPUs {
			if !(g.ModelMs >= g.FloorMs) || p.PaddedFLOPs < p.FLOPs {
				t.Errorf("%s on %s: modelled %.3f ms under the floor %.3f ms (padded %.0f < %.0f FLOPs?)", p.Model, g.Name, g.ModelMs, g.FloorMs, p.PaddedFLOPs, p.FLOPs)
			}
		}
	}
}

// With split-K on (the M3 Max's slots), the under-filled projections split
// into slices and a reduction: two dispatches each, 7 per encoder layer,
// and the model prices the request lower than without.
func TestPlanSplitK(t *testing.T) {
	for _, spec := range []synthetic.Spec{synthetic.English(), synthetic.Multilingual()} {
		ckpt, err := spec.ShapeCheckpoint()
		if err != nil {
			t.Fatal(err)
		}
		req := Request{Questions: 1, Tokens: 93, Markers: 4}
		plain, err := Make(context.Background(), spec.Name, ckpt, req)
		if err != nil {
			t.Fatal(err)
		}
		req.SplitKGroups = DefaultTimeModel.SplitKTarget(gpuNamed(t, ReferenceGPU))
		split, err := Make(context.Background(), spec.Name, ckpt, req)
		ckpt.Close()
		if err != nil {
			t.Fatal(err)
		}
		reductions := 0
		for _, d := range split.Log {
			if d.Kernel == "gemm_reduce_f32" {
				reductions++
			}
		}
		// Wo and Wo2 of every layer: 16 or 12 column tiles × 3 row tiles,
		// under half the 120 slots.
		if want := 2 * spec.NumLayers; reductions < want {
			t.Errorf("%s: %d split-K reductions, want at least %d", spec.Name, reductions, want)
		}
		if split.DispatchesPerEncoderLayer != 7 {
			t.Errorf("%s: %d dispatches per encoder layer with split-K, want 7", spec.Name, split.DispatchesPerEncoderLayer)
		}
		if math.Abs(split.FLOPs-plain.FLOPs) > 1e-3*plain.FLOPs {
			t.Errorf("%s: split-K changed the useful FLOPs: %.0f → %.0f", spec.Name, plain.FLOPs, split.FLOPs)
		}
		a, b := gpuFloor(plain, ReferenceGPU), gpuFloor(split, ReferenceGPU)
		t.Logf("%s on %s: modelled %.2f ms → %.2f ms with split-K (floor %.2f → %.2f ms)", spec.Name, ReferenceGPU, a.ModelMs, b.ModelMs, a.FloorMs, b.FloorMs)
		if !(b.ModelMs < a.ModelMs) {
			t.Errorf("%s: split-K modelled at %.2f ms, not under %.2f ms", spec.Name, b.ModelMs, a.ModelMs)
		}
	}
}

func gpuNamed(t *testing.T, name string) GPU {
	for _, g := range AppleGPUs {
		if g.Name == name {
			return g
		}
	}
	t.Fatalf("no GPU %q", name)
	return GPU{}
}

func gpuFloor(p *Plan, name string) GPUFloor {
	for _, g := range p.GPUs {
		if g.Name == name {
			return g
		}
	}
	return GPUFloor{}
}

// The tile-aware model on one dispatch, against the same arithmetic done
// by hand from the model's stated figures: English Wo (93 × 1024 × 1024,
// fp16 W) on an M3 Max is 16 × 3 threadgroups; a core holds 3 of them
// (19,712 bytes of threadgroup memory each against ~60 KB); 120 slots,
// one wave, each threadgroup a whole 32 × 64 × 1024 tile at 1/120 of
// 0.79 × 14.32 TFLOP/s.
func TestTimeModelDispatch(t *testing.T) {
	m := DefaultTimeModel
	for _, c := range []struct {
		kernel  string
		threads int
		want    int
	}{
		{"gemm_f32_f16w", 128, 3}, // 61,440 / 19,712
		{"gemm_f32", 128, 2},      // 61,440 / 29,952
		{"attention_flash_f32", 128, 2},
		{"vector_add", 256, 3}, // 24 SIMD groups / 8
		{"gemv_f32_f16w", 128, 6},
	} {
		if got := m.Resident(c.kernel, c.threads); got != c.want {
			t.Errorf("Resident(%s, %d) = %d, want %d", c.kernel, c.threads, got, c.want)
		}
	}
	g := gpuNamed(t, "M3 Max (40-core)")
	if got := m.SplitKTarget(g); got != 120 {
		t.Errorf("SplitKTarget(M3 Max) = %d, want 40 × 3", got)
	}
	params := metal.GemmParams{M: 93, N: 1024, K: 1024}
	d := gpu.PlannedDispatch{Kernel: "gemm_f32_f16w", Groups: metal.Size3{X: 16, Y: 3, Z: 1}, Threads: metal.Size3{X: 128, Y: 1, Z: 1},
		Args: []metal.Arg{{Index: 4, Bytes: unsafe.Slice((*byte)(unsafe.Pointer(&params)), unsafe.Sizeof(params))}}, AfterBarrier: true}
	c := metal.Cost{FLOPs: 2 * 93 * 1024 * 1024, IdealBytes: 2e6, RequestedBytes: 2e6}
	km := m.Dispatch(g, d, c)
	slotRate := 40 * 128 * 2 * 1.398e9 * (101.7 / 128) / 120 // FLOP/s of one of 120 slots
	wantCompute := 2 * 32 * 64 * 1024 / slotRate * 1e6
	if km.Groups != 48 || km.Resident != 3 || km.Waves != 1 || math.Abs(km.ComputeUs-wantCompute) > 1e-3*wantCompute {
		t.Errorf("Wo on M3 Max: %+v, want 48 threadgroups, 3 per core, 1 wave, %.2f µs of compute", km, wantCompute)
	}
	if want := 2 * 96 * 1024 * 1024.0; km.PaddedFLOPs != want {
		t.Errorf("padded FLOPs %.0f, want %.0f (M rounded up to 96)", km.PaddedFLOPs, want)
	}
	if want := wantCompute + 2.5; math.Abs(km.TimeUs-want) > 1e-3*want {
		t.Errorf("time %.2f µs, want compute %.2f + 2.5 µs barrier", km.TimeUs, wantCompute)
	}
}
