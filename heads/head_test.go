package heads

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/backend/cpu"
	"github.com/laya-metal/laya/internal/oracletest"
)

func flatten(m [][]float64) (rows, cols int, out []float32) {
	for _, r := range m {
		for _, v := range r {
			out = append(out, float32(v))
		}
	}
	return len(m), len(m[0]), out
}

func maxAbsDiff(got []float32, want [][]float64) float64 {
	worst := 0.0
	cols := len(want[0])
	for r, row := range want {
		for c, v := range row {
			d := math.Abs(float64(got[r*cols+c]) - v)
			if math.IsNaN(d) {
				return math.Inf(1)
			}
			worst = max(worst, d)
		}
	}
	return worst
}

// TestHeadsFromGoldenEncoderOutput feeds upstream's own last_hidden_state to
// the decision head, scorer and act head, so the head is held to upstream
// without the encoder's float32 error: every head stage, the marker states,
// the logits and the act logits.
func TestHeadsFromGoldenEncoderOutput(t *testing.T) {
	for _, name := range []string{"tiny-en", "tiny-ml", "real-en"} {
		t.Run(name, func(t *testing.T) {
			dbg := oracletest.Debug(t, name)
			ckpt := oracletest.LoadCheckpoint(t, name)
			be := cpu.New()
			decision, err := NewDecision(be, ckpt)
			if err != nil {
				t.Fatal(err)
			}
			scorer, err := NewScorer(be, ckpt)
			if err != nil {
				t.Fatal(err)
			}
			act, err := NewActHead(be, ckpt)
			if err != nil {
				t.Fatal(err)
			}

			s := be.NewStream()
			defer s.Close()
			rows, cols, hv := flatten(dbg.LastHiddenState)
			ctx := context.Background()
			check := func(what string, x backend.Tensor, want [][]float64, tol float64) {
				t.Helper()
				got := make([]float32, x.Rows()*x.Cols())
				if err := s.Read(ctx, x, got); err != nil {
					t.Fatal(err)
				}
				if d := maxAbsDiff(got, want); !(d <= tol) {
					t.Errorf("%s: max |Δ| %.3g > %.1g", what, d, tol)
				}
			}
			obs := func(_ backend.Stream, stage string, j int, x backend.Tensor) {
				switch stage {
				case "input":
					check("head input", x, dbg.HeadInput, 1e-6)
				case "layer":
					check(fmt.Sprintf("head layer %d", j), x, dbg.HeadLayers[j], 2e-5)
				}
			}
			h, err := decision.Forward(ctx, s, s.FromHost(rows, cols, hv), []QType{QType(dbg.QType)}, backend.Layout{Lengths: []int{rows}, SeqLen: rows}, obs)
			if err != nil {
				t.Fatal(err)
			}
			markerRows := make([]int32, len(dbg.Markers))
			for k, p := range dbg.Markers {
				markerRows[k] = int32(p)
			}
			var markers backend.Tensor
			logits := scorer.Forward(s, h, markerRows, &markers)
			check("marker states", markers, dbg.MarkerHidden, 2e-5)
			check("logits", logits, column(dbg.Logits), 2e-5)
			actLogits, actProbs := act.ForwardRows(s, h, []int32{0}, logits, []int{len(dbg.Markers)})
			check("act logits", actLogits, [][]float64{dbg.ActLogits}, 2e-5)
			probs := make([]float32, actProbs.Cols())
			if err := s.Read(ctx, actProbs, probs); err != nil {
				t.Fatal(err)
			}
			// softmax of upstream's act logits, in float64
			z0, z1 := dbg.ActLogits[0], dbg.ActLogits[1]
			if want := 1 / (1 + math.Exp(z1-z0)); math.Abs(float64(probs[0])-want) > 1e-5 {
				t.Errorf("act prob %v, want %v", probs[0], want)
			}
		})
	}
}

func column(v []float64) [][]float64 {
	out := make([][]float64, len(v))
	for i, x := range v {
		out[i] = []float64{x}
	}
	return out
}
