package metal

import (
	"context"
	"math"
	"testing"

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
		p, err := MakePlan(context.Background(), spec.Name, ckpt, PlanRequest{Questions: 1, Tokens: 93, Markers: 4})
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
	}
}
