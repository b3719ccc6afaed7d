package laya

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/laya-metal/laya/internal/forwardtest"
	"github.com/laya-metal/laya/internal/oracletest"
	"github.com/laya-metal/laya/weights"
)

// The checkpoints need only Go; their goldens need PyTorch and transformers
// (each goldens.json records the versions it was written with).
//go:generate go run ./scripts/goldens/variants -out testdata/variants
//go:generate sh -c "python3 scripts/goldens/variants/reference.py testdata/variants testdata/variants/*/ && mv testdata/variants/report.json testdata/variants/reference-report.json"

// variantsDir holds synthetic checkpoints in shapes the oracle does not
// cover (written by scripts/goldens/variants) and, beside each, goldens.json: the
// outputs of the model rebuilt from torch's and transformers' own modules
// (scripts/goldens/variants/reference.py, which first reproduces the oracle
// goldens of tiny-en and tiny-ml-mlxnames to within 9e-6).
const variantsDir = "testdata/variants"

// minVariants guards against a checkout that lost variant directories: the
// tests below would otherwise pass over nothing.
const minVariants = 5

// variantGoldens is testdata/variants/<name>/goldens.json.
type variantGoldens struct {
	Variant string `json:"variant"`
	// AsRead is the configuration as transformers and torch resolved it,
	// an independent reading of the same files.
	AsRead struct {
		LayerTypes     []string `json:"layer_types"`
		RopeParameters map[string]struct {
			RopeTheta float64 `json:"rope_theta"`
		} `json:"rope_parameters"`
		LocalAttention       int `json:"local_attention"`
		HeadAttentionHeads   int `json:"head_attention_heads"`
		HeadAttentionHeadDim int `json:"head_attention_head_dim"`
		HeadLayers           int `json:"head_layers"`
		NAct                 int `json:"n_act"`
		PadTokenID           int `json:"pad_token_id"`
		HiddenSize           int `json:"hidden_size"`
	} `json:"as_read_by_transformers"`
	BatchSize int              `json:"batch_size"` // rows per padded batch in the reference run
	Rows      []oracletest.Row `json:"rows"`
}

// loadVariants reads every variant directory with a goldens.json.
func loadVariants(t *testing.T) map[string]variantGoldens {
	t.Helper()
	entries, err := os.ReadDir(variantsDir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]variantGoldens{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		var g variantGoldens
		oracletest.ReadJSON(t, filepath.Join(variantsDir, e.Name(), "goldens.json"), &g)
		if g.Variant != e.Name() || len(g.Rows) == 0 || g.BatchSize < 1 {
			t.Fatalf("%s/goldens.json: variant %q, %d rows, batch size %d", e.Name(), g.Variant, len(g.Rows), g.BatchSize)
		}
		out[e.Name()] = g
	}
	if len(out) < minVariants {
		t.Fatalf("%s: %d variants, want at least %d", variantsDir, len(out), minVariants)
	}
	return out
}

// TestVariantsConfig holds our reading of each variant's configs to
// transformers' and torch's: layer kinds (layer_types, or the i % N rule),
// RoPE bases (rope_parameters, or the transformers-4 keys), window,
// decision-head shape (max(1, d/64) heads) and n_act.
func TestVariantsConfig(t *testing.T) {
	for name, g := range loadVariants(t) {
		t.Run(name, func(t *testing.T) {
			ckpt, err := weights.LoadCheckpoint(filepath.Join(variantsDir, name))
			if err != nil {
				t.Fatal(err)
			}
			defer ckpt.Close()
			want := g.AsRead
			enc, head := ckpt.Encoder, ckpt.Head
			kinds := make([]string, len(enc.LayerKinds))
			for i, k := range enc.LayerKinds {
				kinds[i] = k.String()
			}
			if fmt.Sprint(kinds) != fmt.Sprint(want.LayerTypes) {
				t.Errorf("layer kinds %v, transformers has %v", kinds, want.LayerTypes)
			}
			for _, c := range []struct {
				kind string
				got  float64
			}{{"full_attention", enc.RopeThetaFull}, {"sliding_attention", enc.RopeThetaSliding}} {
				if w, ok := want.RopeParameters[c.kind]; !ok || c.got != w.RopeTheta {
					t.Errorf("RoPE θ %s = %g, transformers has %g", c.kind, c.got, w.RopeTheta)
				}
			}
			for _, c := range []struct {
				what      string
				got, want int
			}{
				{"hidden_size", enc.HiddenSize, want.HiddenSize},
				{"local_attention", enc.LocalAttention, want.LocalAttention},
				{"pad_token_id", enc.PadTokenID, want.PadTokenID},
				{"decision-head attention heads", head.Heads, want.HeadAttentionHeads},
				{"decision-head head dim", head.HeadDim, want.HeadAttentionHeadDim},
				{"head layers", head.Layers, want.HeadLayers},
				{"n_act", head.NAct, want.NAct},
			} {
				if c.got != c.want {
					t.Errorf("%s = %d, torch has %d", c.what, c.got, c.want)
				}
			}
		})
	}
}

// TestVariantsForward runs every golden row through the network in the
// reference's padded batches and one row at a time, and holds logits and
// act probabilities to the tolerances of the oracle goldens.
func TestVariantsForward(t *testing.T) {
	for name, g := range loadVariants(t) {
		for _, batchSize := range []int{g.BatchSize, 1} {
			if testing.Short() && batchSize != g.BatchSize {
				continue
			}
			t.Run(fmt.Sprintf("%s/cpu/batch=%d", name, batchSize), func(t *testing.T) {
				n := loadNetwork(t, filepath.Join(variantsDir, name), batchSize)
				checkVariantRows(t, n, g)
			})
		}
	}
}

// TestVariantsForwardMetalEmu runs one variant's golden rows through the
// Metal kernels in the MSL emulator: the BF16 one, whose four encoder
// heads of 16 and window of 16 are shapes the oracle does not give the
// kernels.
func TestVariantsForwardMetalEmu(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the emulator compiles every kernel with clang")
	}
	const name = "bf16-mltok"
	g, ok := loadVariants(t)[name]
	if !ok {
		t.Fatalf("variant %s missing", name)
	}
	ckpt, err := weights.LoadCheckpoint(filepath.Join(variantsDir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer ckpt.Close()
	n, err := newNetwork(ckpt, networkOptions{Backend: "metal-emu", BatchSize: g.BatchSize, PadID: ckpt.Encoder.PadTokenID, ActLogits: true})
	if err != nil {
		t.Fatal(err)
	}
	defer n.be.Close()
	checkVariantRows(t, n, g)
}

func checkVariantRows(t *testing.T, n *network, g variantGoldens) {
	t.Helper()
	rows := forwardtest.Rows(g.Rows)
	got, err := n.forward(context.Background(), rows)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) {
		t.Fatalf("%d outputs for %d rows", len(got), len(rows))
	}
	var worstLogit, worstAct float64
	for i, want := range g.Rows {
		where := fmt.Sprintf("row %d (%d tokens, %d options, qtype %d)", i, len(want.InputIDs), len(want.Markers), want.QType)
		worstLogit = max(worstLogit, oracletest.Compare(t, where+" logits", got[i].Logits, want.Logits, oracletest.LogitTol))
		worstAct = max(worstAct, oracletest.Compare(t, where+" act_probs", got[i].ActProbs, want.ActProbs, oracletest.ActProbTol))
		if len(got[i].ActLogits) != len(want.ActLogits) {
			t.Errorf("%s: %d act logits, want %d", where, len(got[i].ActLogits), len(want.ActLogits))
		}
	}
	if math.IsInf(worstLogit, 0) || math.IsInf(worstAct, 0) {
		return // compare has reported the length mismatch
	}
	t.Logf("%d rows: max |Δlogit| %.2g, max |Δact_prob| %.2g", len(g.Rows), worstLogit, worstAct)
}
