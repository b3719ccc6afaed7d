// Package synthetic writes synthetic Laya checkpoints: the real layout and
// configs (rl_agent_config.json, encoder/config.json, tokenizer/,
// model.safetensors, optionally laya-mlx names and mlx_config.json) with
// deterministic random weights, for tests and benchmarks of checkpoint
// shapes that cannot be shipped. It lives apart from package weights so that
// the loader does not depend on the tokenizer.
package synthetic

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/laya-metal/laya/tokenizer"
	"github.com/laya-metal/laya/weights"
)

// Spec describes a synthetic checkpoint: the real layout and
// configs with deterministic random weights, for tests and benchmarks of
// checkpoints that cannot be shipped.
type Spec struct {
	Name string // written into rl_agent_config.json "encoder"

	VocabSize, HiddenSize, IntermediateSize, NumLayers, NumHeads  int
	MaxPositionEmbeddings, LocalAttention, GlobalAttnEveryNLayers int
	RopeThetaFull, RopeThetaSliding                               float64

	HeadLayers, MaxLen, HeadMaxLen int
	ActCosts                       []string // default ["escalate"]
	Temperature                    [3]float64
	TemperatureByOptions           []TemperatureEntry // written in this order

	DType    weights.DType // default F16
	Seed     uint64        // same seed, same bytes
	MLXNames bool          // laya-mlx parameter names, {"format":"mlx"} and mlx_config.json

	// TokenizerDir holds tokenizer.json (copied) and optionally
	// tokenizer_config.json (copied; otherwise one in ModernBERT's shape is
	// written from the added tokens of tokenizer.json).
	TokenizerDir string
}

// TemperatureEntry is one temperature_by_options bucket.
type TemperatureEntry struct {
	Key   string
	Value float64
}

// englishTemperatures are the published English checkpoint's values
// (laya-spec §1.3), including choice:11+ = 0.1006 that upstream clamps.
func englishTemperatures() ([3]float64, []TemperatureEntry) {
	return [3]float64{1.6369030475616455, 1.2514300346374512, 1.983399510383606}, []TemperatureEntry{
		{"choice:3-5", 1.7601518630981445},
		{"choice:6-10", 1.0000158548355103},
		{"score:3-5", 1.2514300346374512},
		{"noul:2", 1.983399510383606},
		{"choice:11+", 0.10058280825614929},
		{"choice:2", 1.9063563346862793},
	}
}

// English is the English checkpoint's shape: ModernBERT-large
// (28 layers, 1024 wide, 16 heads, GeGLU 2624, vocab 50368), max_len 512,
// head_max_len 192, the English temperatures. 421,293,827 parameters.
func English() Spec {
	temps, buckets := englishTemperatures()
	return Spec{
		Name: "english", VocabSize: 50368, HiddenSize: 1024, IntermediateSize: 2624, NumLayers: 28, NumHeads: 16,
		MaxPositionEmbeddings: 8192, LocalAttention: 128, GlobalAttnEveryNLayers: 3,
		RopeThetaFull: 160000, RopeThetaSliding: 10000,
		HeadLayers: 2, MaxLen: 512, HeadMaxLen: 192, ActCosts: []string{"escalate"},
		Temperature: temps, TemperatureByOptions: buckets, DType: weights.F16, Seed: 1,
	}
}

// Multilingual is the multilingual checkpoint's shape: mmBERT-base
// (22 layers, 768 wide, 12 heads, GeGLU 1152, vocab 256000, RoPE θ 160000
// for both kinds), max_len 1024, head_max_len 256, temperatures [1,1,1].
// 321,908,995 parameters.
func Multilingual() Spec {
	return Spec{
		Name: "multilingual", VocabSize: 256000, HiddenSize: 768, IntermediateSize: 1152, NumLayers: 22, NumHeads: 12,
		MaxPositionEmbeddings: 8192, LocalAttention: 128, GlobalAttnEveryNLayers: 3,
		RopeThetaFull: 160000, RopeThetaSliding: 160000,
		HeadLayers: 2, MaxLen: 1024, HeadMaxLen: 256, ActCosts: []string{"escalate"},
		Temperature: [3]float64{1, 1, 1}, DType: weights.F16, Seed: 1,
	}
}

// Tiny is a small English-tokenizer model (vocab 50368 so every
// ModernBERT id is valid; 64 wide, 2 heads, 4 layers, window 16) with the
// English temperatures, for fast end-to-end tests.
func Tiny() Spec {
	temps, buckets := englishTemperatures()
	return Spec{
		Name: "tiny", VocabSize: 50368, HiddenSize: 64, IntermediateSize: 96, NumLayers: 4, NumHeads: 2,
		MaxPositionEmbeddings: 512, LocalAttention: 16, GlobalAttnEveryNLayers: 3,
		RopeThetaFull: 160000, RopeThetaSliding: 10000,
		HeadLayers: 2, MaxLen: 128, HeadMaxLen: 48, ActCosts: []string{"escalate"},
		Temperature: temps, TemperatureByOptions: buckets, DType: weights.F16, Seed: 1,
	}
}

// layerKinds applies transformers' i % global_attn_every_n_layers rule.
func (s Spec) layerKinds() []weights.LayerKind {
	kinds := make([]weights.LayerKind, s.NumLayers)
	for i := range kinds {
		if s.GlobalAttnEveryNLayers > 0 && i%s.GlobalAttnEveryNLayers != 0 {
			kinds[i] = weights.SlidingAttention
		}
	}
	return kinds
}

func (s Spec) actCosts() []string {
	if len(s.ActCosts) == 0 {
		return []string{"escalate"}
	}
	return s.ActCosts
}

func (s Spec) dtype() weights.DType {
	if s.DType == 0 {
		return weights.F16
	}
	return s.DType
}

// configs resolves the spec into the structures the loader would build.
func (s Spec) configs() (weights.EncoderConfig, weights.HeadConfig) {
	enc := weights.EncoderConfig{
		VocabSize: s.VocabSize, HiddenSize: s.HiddenSize, IntermediateSize: s.IntermediateSize,
		NumLayers: s.NumLayers, NumHeads: s.NumHeads, MaxPositionEmbeddings: s.MaxPositionEmbeddings,
		LocalAttention: s.LocalAttention, NormEps: 1e-5, LayerKinds: s.layerKinds(),
		RopeThetaFull: s.RopeThetaFull, RopeThetaSliding: s.RopeThetaSliding,
	}
	agent := weights.AgentConfig{HeadLayers: s.HeadLayers, NAct: len(s.actCosts()) + 1}
	head, _ := weights.DeriveHead(enc, agent) // validate reports a width the heads cannot split
	return enc, head
}

// ParamCount is the parameter count the spec's checkpoint will have
// (temperature buffer excluded).
func (s Spec) ParamCount() int64 {
	enc, head := s.configs()
	var n int64
	for _, spec := range weights.ExpectedTensors(enc, head) {
		n += int64(weights.TensorHeader{Shape: spec.Shape}.Len())
	}
	return n
}

func (s Spec) validate() error {
	var errs []string
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Sprintf(format, args...))
		}
	}
	check(s.VocabSize > 0 && s.HiddenSize > 0 && s.IntermediateSize > 0 && s.NumLayers > 0 && s.NumHeads > 0,
		"sizes must be positive")
	check(s.NumHeads > 0 && s.HiddenSize%s.NumHeads == 0 && (s.HiddenSize/max(1, s.NumHeads))%2 == 0,
		"hidden_size/num_heads = %d/%d must be an even integer", s.HiddenSize, s.NumHeads)
	check(s.HiddenSize%max(1, s.HiddenSize/64) == 0, "hidden_size %d must divide into max(1, d/64) head-attention heads", s.HiddenSize)
	check(s.LocalAttention > 0 && s.GlobalAttnEveryNLayers > 0, "local_attention and global_attn_every_n_layers must be positive")
	check(s.RopeThetaFull > 0 && s.RopeThetaSliding > 0, "RoPE thetas must be positive")
	check(s.HeadLayers > 0, "head_layers must be positive")
	check(4 < s.HeadMaxLen && s.HeadMaxLen < s.MaxLen && s.MaxLen <= s.MaxPositionEmbeddings,
		"need 4 < head_max_len < max_len <= max_position_embeddings, have %d, %d, %d", s.HeadMaxLen, s.MaxLen, s.MaxPositionEmbeddings)
	check(s.dtype().Size() != 0, "dtype %v is not supported", s.DType)
	check(s.TokenizerDir != "", "TokenizerDir is required (the tokenizer files are copied from it)")
	if len(errs) > 0 {
		return fmt.Errorf("synthetic: spec %q: %s", s.Name, strings.Join(errs, "; "))
	}
	return nil
}

// WriteOnce writes spec's checkpoint into dir unless a checkpoint is there
// already (its weights file): written under dir.partial first and renamed,
// so that an interrupted write is never taken for a checkpoint. For
// benchmarks that keep a full-size checkpoint between runs.
func WriteOnce(dir string, spec Spec) error {
	if _, err := os.Stat(filepath.Join(dir, weights.WeightsFile)); err == nil {
		return nil
	}
	tmp := dir + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := Write(tmp, spec); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}

// TempCheckpoint is WriteOnce into os.TempDir(), in a directory named by
// spec's name, dtype and seed (not its tokenizer), and returns it: the
// benchmarks of one spec, in any package, share one copy.
func TempCheckpoint(spec Spec) (string, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("laya-bench-%s-%v-seed%d", spec.Name, spec.DType, spec.Seed))
	return dir, WriteOnce(dir, spec)
}

// Write writes a complete checkpoint into dir (created if needed):
// rl_agent_config.json, encoder/config.json, tokenizer/, model.safetensors
// (streamed, one tensor chunk in memory at a time) and, with MLXNames,
// mlx_config.json. The weights are seeded random values scaled like the
// oracle checkpoints (unit-variance embeddings, LayerNorm weights near 1,
// linear layers ~1/sqrt(fan_in)), so activations stay finite and answers
// are spread.
func Write(dir string, spec Spec) error {
	if err := spec.validate(); err != nil {
		return err
	}
	tokJSON, err := os.ReadFile(filepath.Join(spec.TokenizerDir, "tokenizer.json"))
	if err != nil {
		return fmt.Errorf("synthetic: tokenizer: %w", err)
	}
	added, err := addedTokens(tokJSON)
	if err != nil {
		return fmt.Errorf("synthetic: tokenizer %s: %w", spec.TokenizerDir, err)
	}
	if maxID := maxTokenID(tokJSON, added); maxID >= spec.VocabSize {
		return fmt.Errorf("synthetic: spec %q: tokenizer id %d does not fit vocab_size %d", spec.Name, maxID, spec.VocabSize)
	}
	tokConfig, err := os.ReadFile(filepath.Join(spec.TokenizerDir, "tokenizer_config.json"))
	if errors.Is(err, os.ErrNotExist) {
		tokConfig = modernBertTokenizerConfig(added)
	} else if err != nil {
		return fmt.Errorf("synthetic: tokenizer: %w", err)
	}
	for _, sub := range []string{"encoder", "tokenizer"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return fmt.Errorf("synthetic: %w", err)
		}
	}
	// The encoder config names the role token ids; read them back through the
	// tokenizer package exactly as a loader will, so any tokenizer works
	// ([CLS] in ModernBERT's, <bos> in Gemma-style ones).
	for name, data := range map[string][]byte{weights.TokenizerFile: tokJSON, weights.TokenizerConfigFile: tokConfig} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("synthetic: %w", err)
		}
	}
	_, roles, err := tokenizer.LoadDir(filepath.Join(dir, "tokenizer"))
	if err != nil {
		return fmt.Errorf("synthetic: spec %q: %w", spec.Name, err)
	}
	files := map[string][]byte{
		weights.AgentConfigFile:   spec.agentConfigJSON(),
		weights.EncoderConfigFile: spec.encoderConfigJSON(roles.CLS, roles.SEP, roles.PAD),
	}
	if spec.MLXNames {
		files[weights.MLXConfigFile] = spec.mlxConfigJSON()
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("synthetic: %w", err)
		}
	}
	return spec.writeWeights(filepath.Join(dir, weights.WeightsFile))
}

func dtypeLongName(d weights.DType) string {
	switch d {
	case weights.F32:
		return "float32"
	case weights.BF16:
		return "bfloat16"
	}
	return "float16"
}
