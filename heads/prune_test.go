package heads

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/backend/cpu"
	"github.com/laya-metal/laya/internal/oracletest"
)

// TestForwardRowsMatchesForward holds final-head pruning to the unpruned
// head: on a padded batch of three rows (upstream's last_hidden_state, then
// two shifted copies cut shorter), the kept rows of ForwardRows — [CLS] rows,
// markers, a padded row, in any order and repeated — equal Forward's rows
// bit for bit on the cpu backend, and the golden head output within the
// head test's tolerance.
func TestForwardRowsMatchesForward(t *testing.T) {
	for _, name := range []string{"tiny-en", "real-en"} {
		t.Run(name, func(t *testing.T) {
			dbg := oracletest.Debug(t, name)
			ckpt := oracletest.LoadCheckpoint(t, name)
			be := cpu.New()
			decision, err := NewDecision(be, ckpt)
			if err != nil {
				t.Fatal(err)
			}
			seqLen, d, hv := flatten(dbg.LastHiddenState)
			batch := make([]float32, 0, 3*len(hv))
			for b := range 3 {
				for i, v := range hv {
					batch = append(batch, v+float32(b)*0.01*float32(i%7))
				}
			}
			lengths := []int{seqLen, max(1, seqLen-2), max(1, seqLen/2)}
			q := QType(dbg.QType)
			qtypes := []QType{q, (q + 1) % 3, (q + 2) % 3}
			keep := []int32{0, int32(seqLen), int32(2 * seqLen), int32(dbg.Markers[0]), int32(seqLen + 1), int32(3*seqLen - 1), 0}
			ctx := context.Background()
			s := be.NewStream()
			defer s.Close()

			full, err := decision.Forward(ctx, s, s.FromHost(3*seqLen, d, batch), qtypes, backend.Layout{Lengths: lengths, SeqLen: seqLen}, nil)
			if err != nil {
				t.Fatal(err)
			}
			pruned, err := decision.ForwardRows(ctx, s, s.FromHost(3*seqLen, d, batch), qtypes, backend.Layout{Lengths: lengths, SeqLen: seqLen}, keep, nil)
			if err != nil {
				t.Fatal(err)
			}
			if pruned.Rows() != len(keep) || pruned.Cols() != d {
				t.Fatalf("pruned output [%d, %d], want [%d, %d]", pruned.Rows(), pruned.Cols(), len(keep), d)
			}
			fullHost := make([]float32, full.Rows()*d)
			prunedHost := make([]float32, len(keep)*d)
			if err := s.Read(ctx, full, fullHost); err != nil {
				t.Fatal(err)
			}
			if err := s.Read(ctx, pruned, prunedHost); err != nil {
				t.Fatal(err)
			}
			for i, r := range keep {
				for c := range d {
					g, w := prunedHost[i*d+c], fullHost[int(r)*d+c]
					if math.Float32bits(g) != math.Float32bits(w) {
						t.Fatalf("kept row %d (row %d) col %d = %v, unpruned %v", i, r, c, g, w)
					}
				}
			}
			// Batch row 0 is upstream's own input: its marker row must match
			// the golden head output.
			last := dbg.HeadLayers[len(dbg.HeadLayers)-1]
			m := dbg.Markers[0]
			for c := range d {
				if diff := math.Abs(float64(prunedHost[3*d+c]) - last[m][c]); diff > 2e-5 {
					t.Fatalf("marker row col %d: |Δ| %.3g from the golden head output", c, diff)
				}
			}
		})
	}
}

func TestForwardRowsRejects(t *testing.T) {
	ckpt := oracletest.LoadCheckpoint(t, "tiny-en")
	decision, err := NewDecision(cpu.New(), ckpt)
	if err != nil {
		t.Fatal(err)
	}
	s := cpu.New().NewStream()
	d := ckpt.Head.Dim
	h := s.New(4, d)
	for _, keep := range [][]int32{nil, {}, {4}, {-1}} {
		if _, err := decision.ForwardRows(context.Background(), s, h, []QType{Choice}, backend.Layout{Lengths: []int{4}, SeqLen: 4}, keep, nil); !errors.Is(err, backend.ErrShape) {
			t.Errorf("keep %v: err %v, want ErrShape", keep, err)
		}
	}
}
