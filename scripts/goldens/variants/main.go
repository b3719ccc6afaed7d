// Command variants writes the synthetic checkpoints of testdata/variants:
// Laya checkpoints in shapes the oracle checkpoints do not cover (a 96-wide
// decision head with three layers and three act classes, transformers-4
// RoPE keys without layer_types, BF16 weights, F32 with laya-mlx names, a
// one-layer head over a 128-wide encoder with an odd GeGLU width).
//
// The goldens beside them (goldens.json) come from reference.py, which
// rebuilds each model from torch's and transformers' own modules on a
// machine with PyTorch; this program writes only the checkpoints.
//
// Usage, from the module root:
//
//	go run ./scripts/goldens/variants [-out testdata/variants]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/laya-metal/laya/weights"
	"github.com/laya-metal/laya/weights/synthetic"
)

// variant is one checkpoint: a synthetic spec plus the edits of
// encoder/config.json that synthetic.Write has no knob for.
type variant struct {
	spec synthetic.Spec
	// configEdits are set (or, with a nil value, deleted) in
	// encoder/config.json after writing, as raw JSON: transformers 5
	// validates config types strictly, so a float must stay "2.0", never "2".
	configEdits map[string]json.RawMessage
}

const (
	englishTokenizer      = "testdata/oracle/checkpoints/tiny-en/tokenizer" // 637 ids, [CLS] 631 … [MASK] 634
	multilingualTokenizer = "testdata/oracle/checkpoints/tiny-ml/tokenizer" // 986 ids, <pad> 0, <eos> 1, <bos> 2, <mask> 4
)

func variants() []variant {
	base := func(name string, seed uint64) synthetic.Spec {
		return synthetic.Spec{
			Name: name, VocabSize: 640, MaxPositionEmbeddings: 512, LocalAttention: 16, GlobalAttnEveryNLayers: 3,
			RopeThetaFull: 160000, RopeThetaSliding: 10000,
			HeadLayers: 2, MaxLen: 256, HeadMaxLen: 64,
			Temperature: [3]float64{1, 1, 1}, DType: weights.F16, Seed: seed, TokenizerDir: englishTokenizer,
		}
	}

	// (a) d = 96: one decision-head attention head of width 96 (oracle
	// README fact 2), three head layers, two act_costs so n_act = 3.
	headWide := base("d96-head3-act3", 11)
	headWide.HiddenSize, headWide.NumHeads, headWide.NumLayers, headWide.IntermediateSize = 96, 2, 2, 64
	headWide.HeadLayers = 3
	headWide.ActCosts = []string{"escalate", "defer"}

	// (b) transformers-4 config: no layer_types (layer kinds from
	// i % global_attn_every_n_layers), global_rope_theta / local_rope_theta
	// instead of rope_parameters, and a window of 8 so rows of up to 200
	// tokens cross many windows. The thetas differ from transformers'
	// defaults so that a reader that ignores the old keys is caught.
	legacy := base("legacy-rope-every2", 12)
	legacy.HiddenSize, legacy.NumHeads, legacy.NumLayers, legacy.IntermediateSize = 96, 3, 5, 48
	legacy.LocalAttention, legacy.GlobalAttnEveryNLayers = 8, 2
	legacy.RopeThetaFull, legacy.RopeThetaSliding = 40000, 2500
	legacy.HeadLayers = 1 // keeps testdata/variants near 4 MB

	// (c) BF16 weights behind the Gemma-style tokenizer (pad id 0).
	bf16 := base("bf16-mltok", 13)
	bf16.VocabSize, bf16.TokenizerDir = 992, multilingualTokenizer
	bf16.HiddenSize, bf16.NumHeads, bf16.NumLayers, bf16.IntermediateSize = 64, 4, 3, 80
	bf16.RopeThetaSliding = 160000
	bf16.DType = weights.BF16

	// (d) F32 with laya-mlx parameter names and one encoder head of 32.
	mlx := base("f32-mlxnames", 14)
	mlx.HiddenSize, mlx.NumHeads, mlx.NumLayers, mlx.IntermediateSize = 32, 1, 3, 40
	mlx.DType, mlx.MLXNames = weights.F32, true

	// (e) d = 128 (two decision-head heads of 64), one head layer, eight
	// encoder heads of 16 and an odd GeGLU width.
	oneLayer := base("d128-head1-inter100", 15)
	oneLayer.HiddenSize, oneLayer.NumHeads, oneLayer.NumLayers, oneLayer.IntermediateSize = 128, 8, 2, 100
	oneLayer.LocalAttention = 32
	oneLayer.HeadLayers = 1

	return []variant{
		{spec: headWide},
		{spec: legacy, configEdits: map[string]json.RawMessage{
			"layer_types":       nil,
			"rope_parameters":   nil,
			"global_rope_theta": pyFloat(legacy.RopeThetaFull),
			"local_rope_theta":  pyFloat(legacy.RopeThetaSliding),
		}},
		// synthetic.Write reads the role ids (<bos> 2, <eos> 1, <pad> 0) from this
		// tokenizer's own files.
		{spec: bf16},
		{spec: mlx},
		{spec: oneLayer},
	}
}

func main() {
	out := flag.String("out", "testdata/variants", "directory that receives one checkpoint per variant")
	flag.Parse()
	for _, v := range variants() {
		dir := filepath.Join(*out, v.spec.Name)
		if err := write(dir, v); err != nil {
			log.Fatalf("variants: %s: %v", v.spec.Name, err)
		}
		ckpt, err := weights.LoadCheckpoint(dir)
		if err != nil {
			log.Fatalf("variants: %s does not load: %v", dir, err)
		}
		fmt.Printf("%-22s d=%d enc heads %d×%d layers %d kinds %v θ %g/%g | head layers %d heads %d×%d n_act %d | %s %v\n",
			v.spec.Name, ckpt.Encoder.HiddenSize, ckpt.Encoder.NumHeads, ckpt.Encoder.HeadDim(), ckpt.Encoder.NumLayers,
			ckpt.Encoder.LayerKinds, ckpt.Encoder.RopeThetaFull, ckpt.Encoder.RopeThetaSliding,
			ckpt.Head.Layers, ckpt.Head.Heads, ckpt.Head.HeadDim, ckpt.Head.NAct, ckpt.NameScheme, ckpt.DTypes())
		ckpt.Close()
	}
}

// pyFloat writes an integral float the way Python's json does ("40000.0").
func pyFloat(f float64) json.RawMessage {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	return json.RawMessage(s)
}

func write(dir string, v variant) error {
	if err := synthetic.Write(dir, v.spec); err != nil {
		return err
	}
	if len(v.configEdits) == 0 {
		return nil
	}
	path := filepath.Join(dir, "encoder", "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var config map[string]json.RawMessage
	if err := json.Unmarshal(data, &config); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for key, value := range v.configEdits {
		if value == nil {
			delete(config, key)
		} else {
			config[key] = value
		}
	}
	// Sorted keys and two-space indent: the shape transformers writes.
	data, err = json.MarshalIndent(config, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
