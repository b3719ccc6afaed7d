package laya

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/heads"
	"github.com/laya-metal/laya/internal/forwardtest"
	"github.com/laya-metal/laya/internal/oracletest"
	"github.com/laya-metal/laya/weights"
)

func loadNetwork(t testing.TB, dir string, batchSize int) *network {
	t.Helper()
	ckpt, err := weights.LoadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ckpt.Close() })
	// The pad id only fills masked slots; the encoder config's is the
	// tokenizer's [PAD] in every oracle checkpoint. The act logits are
	// read back to be held to upstream's.
	n, err := newNetwork(ckpt, networkOptions{BatchSize: batchSize, PadID: ckpt.Encoder.PadTokenID, ActLogits: true})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// oracleModels pairs each checkpoint with the goldens it must reproduce.
var oracleModels = []struct{ checkpoint, golden string }{
	{"tiny-en", "tiny-en"},
	{"tiny-ml", "tiny-ml"},
	{"tiny-ml-mlxnames", "tiny-ml"},
	{"real-en", "real-en"},
}

// TestForwardGoldens runs every row of every oracle case and compares the raw
// logits and act probabilities with upstream's, with each case's rows as one
// padded batch and in batches of 1 and 3: the answer must not depend on
// batching.
func TestForwardGoldens(t *testing.T) {
	for _, m := range oracleModels {
		cases := oracletest.Cases(t, m.golden)
		// 64 is more rows than any case has: each case is one padded batch.
		for _, batchSize := range []int{64, 1, 3} {
			if testing.Short() && batchSize != 64 {
				continue // -short: one padded batch per case only
			}
			name := fmt.Sprintf("%s/batch=%d", m.checkpoint, batchSize)
			t.Run(name, func(t *testing.T) {
				n := loadNetwork(t, oracletest.Checkpoint(m.checkpoint), batchSize)
				var worstLogit, worstAct float64
				rowsChecked := 0
				for _, c := range cases {
					if len(c.Rows) > batchSize && batchSize == 64 {
						t.Fatalf("case %s has %d rows: raise the one-batch size", c.Name, len(c.Rows))
					}
					rows := forwardtest.Rows(c.Rows)
					got, err := n.forward(context.Background(), rows)
					if err != nil {
						t.Fatalf("case %s: %v", c.Name, err)
					}
					if len(got) != len(rows) {
						t.Fatalf("case %s: %d outputs for %d rows", c.Name, len(got), len(rows))
					}
					for i, want := range c.Rows {
						where := fmt.Sprintf("case %s %s", c.Name, want.QID)
						worstLogit = max(worstLogit, oracletest.Compare(t, where+" logits", got[i].Logits, want.Logits, oracletest.LogitTol))
						worstAct = max(worstAct, oracletest.Compare(t, where+" act_probs", got[i].ActProbs, want.ActProbs, oracletest.ActProbTol))
						if len(got[i].ActLogits) != len(want.ActLogits) {
							t.Errorf("%s: %d act logits, want %d", where, len(got[i].ActLogits), len(want.ActLogits))
						}
						rowsChecked++
					}
				}
				t.Logf("%d rows: max |Δlogit| %.2g, max |Δact_prob| %.2g", rowsChecked, worstLogit, worstAct)
			})
		}
	}
}

// TestForwardDebugHidden compares every intermediate state with upstream's,
// stage by stage, so a divergence names its first layer.
func TestForwardDebugHidden(t *testing.T) {
	for _, m := range oracleModels {
		t.Run(m.checkpoint, func(t *testing.T) {
			dbg := oracletest.Debug(t, m.golden)
			want := map[string][][]float64{
				"embeddings":   dbg.Embeddings,
				"final 0":      dbg.LastHiddenState,
				"head input 0": dbg.HeadInput,
				"markers 0":    dbg.MarkerHidden,
			}
			for i, l := range dbg.EncoderLayers {
				want[fmt.Sprintf("layer %d", i)] = l
			}
			for j, l := range dbg.HeadLayers {
				want[fmt.Sprintf("head layer %d", j)] = l
			}
			n := loadNetwork(t, oracletest.Checkpoint(m.checkpoint), 1)
			seen := map[string]bool{}
			obs := func(s backend.Stream, stage string, index int, tensor backend.Tensor) {
				key := fmt.Sprintf("%s %d", stage, index)
				if stage == "embeddings" {
					key = stage
				}
				ref, ok := want[key]
				if !ok {
					return
				}
				seen[key] = true
				got := make([]float32, tensor.Rows()*tensor.Cols())
				if err := s.Read(context.Background(), tensor, got); err != nil {
					t.Fatalf("%s: %v", key, err)
				}
				if len(ref) != tensor.Rows() || len(ref[0]) != tensor.Cols() {
					t.Fatalf("%s: got [%d, %d], golden [%d, %d]", key, tensor.Rows(), tensor.Cols(), len(ref), len(ref[0]))
				}
				// Magnitudes grow through the layers; hold every stage to
				// 2e-5 relative to its largest entry (float32 over a few
				// hundred sums), and never looser than 2e-5 absolute.
				scale := 1.0
				for _, row := range ref {
					for _, v := range row {
						scale = max(scale, math.Abs(v))
					}
				}
				tol := 2e-5 * scale
				worst, at := 0.0, [2]int{}
				for r, row := range ref {
					for c, v := range row {
						if d := math.Abs(float64(got[r*tensor.Cols()+c]) - v); d > worst || math.IsNaN(d) {
							worst, at = d, [2]int{r, c}
						}
					}
				}
				if !(worst <= tol) {
					t.Errorf("%s: max |Δ| %.3g at [%d, %d] > %.3g (first divergent stage?)", key, worst, at[0], at[1], tol)
				} else {
					t.Logf("%-14s max |Δ| %.2g (scale %.3g)", key, worst, scale)
				}
			}
			out, err := n.runBatch(context.Background(), n.be.NewStream(), []forwardRow{{IDs: dbg.InputIDs, Markers: dbg.Markers, QType: heads.QType(dbg.QType)}}, obs)
			if err != nil {
				t.Fatal(err)
			}
			for key := range want {
				if !seen[key] {
					t.Errorf("stage %s never observed", key)
				}
			}
			oracletest.Compare(t, "logits", out[0].Logits, dbg.Logits, oracletest.LogitTol)
			// Act logits are compared loosely: their size makes absolute
			// errors grow (laya-spec §3.6); act_probs are held in
			// TestForwardGoldens.
			oracletest.Compare(t, "act_logits", out[0].ActLogits, dbg.ActLogits, 1e-3)
		})
	}
}

// TestForwardNameSchemes checks that the upstream-named and the laya-mlx-named
// copies of one checkpoint give bit-identical outputs.
func TestForwardNameSchemes(t *testing.T) {
	cases := oracletest.Cases(t, "tiny-ml")
	var rows []forwardRow
	for _, c := range cases {
		rows = append(rows, forwardtest.Rows(c.Rows)...)
	}
	upstream, err := loadNetwork(t, oracletest.Checkpoint("tiny-ml"), 16).forward(context.Background(), rows)
	if err != nil {
		t.Fatal(err)
	}
	mlx, err := loadNetwork(t, oracletest.Checkpoint("tiny-ml-mlxnames"), 16).forward(context.Background(), rows)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		for _, pair := range [][2][]float32{
			{upstream[i].Logits, mlx[i].Logits},
			{upstream[i].ActLogits, mlx[i].ActLogits},
			{upstream[i].ActProbs, mlx[i].ActProbs},
		} {
			if fmt.Sprint(pair[0]) != fmt.Sprint(pair[1]) {
				t.Fatalf("row %d: upstream names %v, mlx names %v", i, pair[0], pair[1])
			}
		}
	}
}

func TestForwardRejectsBadRows(t *testing.T) {
	n := loadNetwork(t, oracletest.Checkpoint("tiny-en"), 4)
	good := []int{631, 10, 634, 11, 634, 632}
	long := make([]int, n.maxLen+1)
	tests := []struct {
		name string
		row  forwardRow
	}{
		{"empty", forwardRow{Markers: []int{0}}},
		{"too long", forwardRow{IDs: long, Markers: []int{1}}},
		{"id beyond vocab", forwardRow{IDs: []int{631, 640, 632}, Markers: []int{1}}},
		{"negative id", forwardRow{IDs: []int{631, -1, 632}, Markers: []int{1}}},
		{"no markers", forwardRow{IDs: good}},
		{"marker past the row", forwardRow{IDs: good, Markers: []int{2, 6}}},
		{"negative marker", forwardRow{IDs: good, Markers: []int{-1}}},
		{"qtype 3", forwardRow{IDs: good, Markers: []int{2, 4}, QType: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok := forwardRow{IDs: good, Markers: []int{2, 4}}
			_, err := n.forward(context.Background(), []forwardRow{ok, tt.row})
			if !errors.Is(err, errBadRow) {
				t.Fatalf("err = %v, want errBadRow", err)
			}
		})
	}
}

func TestNewNetworkOptions(t *testing.T) {
	ckpt := oracletest.LoadCheckpoint(t, "tiny-en")
	tests := []struct {
		name    string
		opts    networkOptions
		wantErr error
	}{
		{"defaults", networkOptions{PadID: 633}, nil},
		{"unknown backend", networkOptions{Backend: "tpu", PadID: 633}, backend.ErrUnknownBackend},
		{"negative batch", networkOptions{BatchSize: -1, PadID: 633}, errAny},
		{"pad outside vocab", networkOptions{PadID: 640}, errAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := newNetwork(ckpt, tt.opts)
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatal(err)
			case tt.wantErr == nil && n.batchSize != defaultBatchSize:
				t.Fatalf("batch size %d, want %d", n.batchSize, defaultBatchSize)
			case tt.wantErr == errAny && err == nil:
				t.Fatal("no error")
			case tt.wantErr != nil && tt.wantErr != errAny && !errors.Is(err, tt.wantErr):
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

var errAny = errors.New("any error")

func TestForwardCancelled(t *testing.T) {
	n := loadNetwork(t, oracletest.Checkpoint("tiny-en"), 4)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := n.forward(ctx, []forwardRow{{IDs: []int{631, 634, 632}, Markers: []int{1}}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestActLogitsOnRequest checks that the act logits are read back only when the
// network is asked for them, and that leaving them out changes no other output.
func TestActLogitsOnRequest(t *testing.T) {
	var rows []forwardRow
	for _, c := range oracletest.Cases(t, "tiny-en") {
		rows = append(rows, forwardtest.Rows(c.Rows)...)
	}
	ckpt, err := weights.LoadCheckpoint(oracletest.Checkpoint("tiny-en"))
	if err != nil {
		t.Fatal(err)
	}
	defer ckpt.Close()
	outputs := func(actLogits bool) []rowOutput {
		n, err := newNetwork(ckpt, networkOptions{PadID: ckpt.Encoder.PadTokenID, ActLogits: actLogits})
		if err != nil {
			t.Fatal(err)
		}
		defer n.close()
		out, err := n.forward(context.Background(), rows)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	with, without := outputs(true), outputs(false)
	for i := range rows {
		if len(with[i].ActLogits) == 0 || without[i].ActLogits != nil {
			t.Fatalf("row %d: %d act logits when asked, %d when not", i, len(with[i].ActLogits), len(without[i].ActLogits))
		}
		if fmt.Sprint(with[i].Logits, with[i].ActProbs) != fmt.Sprint(without[i].Logits, without[i].ActProbs) {
			t.Errorf("row %d: outputs differ with and without the act logits", i)
		}
	}
}
