package forwardpass_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/backend/cpu"
	"github.com/laya-metal/laya/heads"
	"github.com/laya-metal/laya/internal/forwardpass"
	"github.com/laya-metal/laya/internal/forwardtest"
	"github.com/laya-metal/laya/internal/oracletest"
)

// TestPack holds the packed layout to a hand-written batch: rows back to
// back, markers and [CLS] at their rows' offsets.
func TestPack(t *testing.T) {
	got := forwardpass.Pack([]forwardpass.Row{
		{IDs: []int{1, 5, 2}, Markers: []int{1}, QType: 0},
		{IDs: []int{1, 6, 6, 6, 2}, Markers: []int{1, 2, 3}, QType: 2},
		{IDs: []int{1, 2}, Markers: []int{0}, QType: 1},
	}, 9)
	want := forwardpass.Batch{
		IDs:    []int32{1, 5, 2, 1, 6, 6, 6, 2, 1, 2},
		Layout: backend.Layout{SeqLen: 5, Packed: true, Lengths: []int{3, 5, 2}}, QTypes: []heads.QType{0, 2, 1}, Counts: []int{1, 3, 1},
		MarkerRows: []int32{1, 4, 5, 6, 8}, PadID: 9,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Pack = %+v, want %+v", got, want)
	}
	if cls := got.CLSRows(); !reflect.DeepEqual(cls, []int32{0, 3, 8}) {
		t.Errorf("CLSRows = %v, want [0 3 8]", cls)
	}
}

// TestPackedEqualsPadded runs the pruned pass over rows of uneven lengths
// on the cpu backend packed and right-padded: every output must be bit for
// bit the same (every op but RoPE and attention is row-wise, and those take
// each row on its own), on every oracle checkpoint.
func TestPackedEqualsPadded(t *testing.T) {
	for _, name := range []string{"tiny-en", "tiny-ml", "real-en"} {
		t.Run(name, func(t *testing.T) {
			ckpt := oracletest.LoadCheckpoint(t, name)
			be := cpu.New()
			defer be.Close()
			parts, err := forwardpass.NewParts(be, ckpt)
			if err != nil {
				t.Fatal(err)
			}
			cfg := ckpt.Encoder
			var rows []forwardpass.Row
			seed := uint64(7)
			for i, n := range []int{5, 17, 2, 40, 9} {
				ids := make([]int, n)
				for j := range ids {
					seed = seed*6364136223846793005 + 1442695040888963407
					ids[j] = int(seed>>33) % cfg.VocabSize
				}
				markers := []int{n / 2}
				if n > 3 {
					markers = append(markers, n-2)
				}
				rows = append(rows, forwardpass.Row{IDs: ids, Markers: markers, QType: heads.QType(i % 3)})
			}
			pad := int32(max(cfg.PadTokenID, 0))
			run := func(b forwardpass.Batch) [3][]float32 { return readOutputs(t, be, b, parts.RunPruned) }
			padded := run(forwardpass.Pad(rows, pad))
			packed := run(forwardpass.Pack(rows, pad))
			for i, what := range []string{"logits", "act logits", "act probs"} {
				if fmt.Sprint(packed[i]) != fmt.Sprint(padded[i]) {
					t.Errorf("%s: packed %v, padded %v", what, packed[i], padded[i])
				}
			}
			// On streams with token buckets (a GPU backend's) the pass runs
			// a fill row after the real ones, which must change nothing.
			for _, bucket := range []int{16, 3} {
				var gathered []int
				logits, probs, err := parts.RunRowsPruned(context.Background(), forwardtest.Buckets(be, bucket, &gathered), rows, pad)
				if err != nil {
					t.Fatal(err)
				}
				var flatLogits, flatProbs []float32
				for i := range rows {
					flatLogits, flatProbs = append(flatLogits, logits[i]...), append(flatProbs, probs[i]...)
				}
				if fmt.Sprint(flatLogits) != fmt.Sprint(padded[0]) || fmt.Sprint(flatProbs) != fmt.Sprint(padded[2]) {
					t.Errorf("bucket %d: logits %v, act probs %v; padded %v, %v", bucket, flatLogits, flatProbs, padded[0], padded[2])
				}
				if len(gathered) == 0 || gathered[0]%bucket != 0 || gathered[0] <= 73 {
					t.Errorf("bucket %d: the encoder gathered %v tokens, want a multiple of %d above the rows' 73", bucket, gathered, bucket)
				}
			}
		})
	}
}

// TestObservedEqualsPruned runs one padded batch through RunObserved (with
// an observer that counts the stages it sees, and without one) and through
// RunPruned: final-head pruning computes the kept rows with the same
// row-wise ops, so on the cpu backend every output is bit for bit the same.
func TestObservedEqualsPruned(t *testing.T) {
	ckpt := oracletest.LoadCheckpoint(t, "tiny-en")
	be := cpu.New()
	defer be.Close()
	parts, err := forwardpass.NewParts(be, ckpt)
	if err != nil {
		t.Fatal(err)
	}
	rows := []forwardpass.Row{
		{IDs: []int{1, 40, 41, 42, 43, 2}, Markers: []int{2, 4}, QType: heads.Score},
		{IDs: []int{1, 50, 51, 2}, Markers: []int{1, 2, 3}, QType: heads.Noul},
	}
	batch := forwardpass.Pad(rows, int32(max(ckpt.Encoder.PadTokenID, 0)))
	stages := map[string]int{}
	observed := func(ctx context.Context, s backend.Stream, b forwardpass.Batch) (forwardpass.Outputs, error) {
		return parts.RunObserved(ctx, s, b, func(_ backend.Stream, stage string, _ int, _ backend.Tensor) { stages[stage]++ })
	}
	unobserved := func(ctx context.Context, s backend.Stream, b forwardpass.Batch) (forwardpass.Outputs, error) {
		return parts.RunObserved(ctx, s, b, nil)
	}
	pruned := readOutputs(t, be, batch, parts.RunPruned)
	for name, run := range map[string]func(context.Context, backend.Stream, forwardpass.Batch) (forwardpass.Outputs, error){"observed": observed, "unobserved": unobserved} {
		got := readOutputs(t, be, batch, run)
		for i, what := range []string{"logits", "act logits", "act probs"} {
			if fmt.Sprint(got[i]) != fmt.Sprint(pruned[i]) {
				t.Errorf("%s %s: %v, pruned %v", name, what, got[i], pruned[i])
			}
		}
	}
	layers, headLayers := ckpt.Encoder.NumLayers, ckpt.Head.Layers
	want := map[string]int{"embeddings": 1, "layer": layers, "final": 1, "head input": 1, "head layer": headLayers, "markers": 1}
	if fmt.Sprint(stages) != fmt.Sprint(want) {
		t.Errorf("stages seen %v, want %v", stages, want)
	}
}

// readOutputs runs b through run on a fresh stream of be and reads back
// the logits, act logits and act probabilities.
func readOutputs(t *testing.T, be backend.Backend, b forwardpass.Batch, run func(context.Context, backend.Stream, forwardpass.Batch) (forwardpass.Outputs, error)) [3][]float32 {
	t.Helper()
	s := be.NewStream()
	defer s.Close()
	out, err := run(context.Background(), s, b)
	if err != nil {
		t.Fatal(err)
	}
	var got [3][]float32
	for i, x := range []backend.Tensor{out.Logits, out.ActLogits, out.ActProbs} {
		got[i] = make([]float32, x.Rows()*x.Cols())
		if err := s.Read(context.Background(), x, got[i]); err != nil {
			t.Fatal(err)
		}
	}
	return got
}
