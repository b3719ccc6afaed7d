package gpu

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/internal/forwardpass"
	"github.com/laya-metal/laya/internal/forwardtest"
	"github.com/laya-metal/laya/internal/oracletest"
	"github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/weights"
)

// The whole Laya forward pass on this backend against upstream's goldens,
// with the gates of the CPU backend (root forward_test.go): raw logits within
// 1e-4 and act probabilities within 1e-5 (laya-spec §3.6, oracle README
// fact 5), through the unpruned pipeline of root forward.go's observed runBatch.

// model is the network of root forward.go on one backend.
type model struct {
	ckpt *weights.Checkpoint
	forwardpass.Parts
}

func loadModel(t testing.TB, be backend.Backend, checkpoint string) *model {
	t.Helper()
	ckpt := oracletest.LoadCheckpoint(t, checkpoint)
	// The backend reads ckpt's mapping in place (UploadMapped), so no work
	// on this model may run after its cleanup; the tests' streams are all
	// closed by then. (A backend shared by several tests outlives the
	// checkpoint: harmless once no stream uses its weights.)
	parts, err := forwardpass.NewParts(be, ckpt)
	if err != nil {
		t.Fatal(err)
	}
	return &model{ckpt: ckpt, Parts: parts}
}

// forward runs rows as one right-padded batch (upstream's collate_items)
// and returns each row's logits and act probabilities.
func (m *model) forward(ctx context.Context, be backend.Backend, rows []oracletest.Row) (logits, actProbs [][]float32, err error) {
	return m.RunRows(ctx, be, forwardtest.Rows(rows), int32(m.ckpt.Encoder.PadTokenID), nil)
}

// forwardModels pairs checkpoints with their goldens: fp32 (tiny-en), fp16
// weights kept as halves (tiny-ml) and the 50k-row fp16 embedding (real-en).
var forwardModels = []struct{ checkpoint, golden string }{
	{"tiny-en", "tiny-en"},
	{"tiny-ml", "tiny-ml"},
	{"real-en", "real-en"},
}

// emuCases are the cases the emulator runs by default (it takes ~1 s per
// row on two cores; LAYA_METAL_EMU_ALL=1 runs all): the longest rows
// (past the sliding window, at max_len), the most options, a single
// option, noul labels and an 8-row padded batch of mixed lengths.
var emuCases = map[string]bool{
	"email": true, "long_dict": true, "twenty_options": true, "single_option": true,
	"noul_labels": true, "temp_buckets": true,
}

// runGoldens holds be's forward pass to upstream on the cases of each
// model that keep accepts (nil: all), each case's rows as one padded batch
// (so rows longer than the sliding window and padded keys are both
// exercised).
func runGoldens(t *testing.T, be backend.Backend, keep func(name string) bool) {
	ctx := context.Background()
	for _, fm := range forwardModels {
		t.Run(fm.checkpoint, func(t *testing.T) {
			m := loadModel(t, be, fm.checkpoint)
			var cases []oracletest.Case
			for _, c := range oracletest.Cases(t, fm.golden) {
				if keep == nil || keep(c.Name) {
					cases = append(cases, c)
				}
			}
			if len(cases) == 0 {
				t.Fatalf("%s: no case selected", fm.golden)
			}
			var worstLogit, worstAct float64
			rows := 0
			for _, c := range cases {
				logits, probs, err := m.forward(ctx, be, c.Rows)
				if err != nil {
					t.Fatalf("case %s: %v", c.Name, err)
				}
				for i, want := range c.Rows {
					where := fmt.Sprintf("case %s %s", c.Name, want.QID)
					worstLogit = max(worstLogit, oracletest.Compare(t, where+" logits", logits[i], want.Logits, oracletest.LogitTol))
					worstAct = max(worstAct, oracletest.Compare(t, where+" act_probs", probs[i], want.ActProbs, oracletest.ActProbTol))
					rows++
				}
			}
			t.Logf("%s on %s: %d rows, max |Δlogit| %.2g, max |Δact_prob| %.2g", fm.checkpoint, be.Name(), rows, worstLogit, worstAct)
		})
	}
}

func TestForwardGoldensEmu(t *testing.T) {
	keep := func(name string) bool { return emuCases[name] }
	if os.Getenv("LAYA_METAL_EMU_ALL") == "1" {
		keep = nil
	}
	runGoldens(t, emulator(t), keep)
}

// The goldens once more with every GEMM that has two K steps split
// (split-K on for a GPU of 4096 threadgroup slots, slices of one K step):
// the LayerNorm prologue, GeGLU, residual and bias epilogues all go
// through the slices and the ordered reduction, and the parity gates
// still hold. LAYA_METAL_EMU_ALL=1 runs every case.
func TestForwardGoldensSplitKEmu(t *testing.T) {
	be := emulator(t)
	be.SetSplitK(1 << 12)
	old := splitMinSliceK
	splitMinSliceK = metal.GemmTileK
	defer func() { be.SetSplitK(0); splitMinSliceK = old }()
	keep := func(name string) bool { return name == "email" || name == "twenty_options" }
	if os.Getenv("LAYA_METAL_EMU_ALL") == "1" {
		keep = nil
	}
	runGoldens(t, be, keep)
}

// benchForward times one padded batch (the rows of one golden case) through
// the whole network on be, Read included.
func benchForward(b *testing.B, be backend.Backend, checkpoint, caseName string) {
	m := loadModel(b, be, checkpoint)
	var rows []oracletest.Row
	for _, c := range oracletest.Cases(b, checkpoint) {
		if c.Name == caseName {
			rows = c.Rows
		}
	}
	if rows == nil {
		b.Fatalf("%s: no case %q", checkpoint, caseName)
	}
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := m.forward(ctx, be, rows); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkForwardEmu measures the emulator, not a GPU: it tracks the cost
// of the Go dispatch path and of go test, nothing about Apple hardware.
func BenchmarkForwardEmu(b *testing.B) { benchForward(b, emulator(b), "tiny-en", "email") }
