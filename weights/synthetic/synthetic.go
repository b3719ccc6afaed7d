// Package synthetic writes synthetic Laya checkpoints: the real layout and
// configs (rl_agent_config.json, encoder/config.json, tokenizer/,
// model.safetensors, optionally laya-mlx names and mlx_config.json) with
// deterministic random weights, for tests and benchmarks of checkpoint
// shapes that cannot be shipped. It lives apart from package weights so that
// the loader does not depend on the tokenizer.
package synthetic

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/laya-metal/laya/pyjson"
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
		files[weights.MLXConfigFile] = []byte(fmt.Sprintf("{\n  \"format\": \"laya-mlx\",\n  \"format_version\": 1,\n  \"dtype\": %q\n}\n", dtypeLongName(spec.dtype())))
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

func (s Spec) writeWeights(path string) (err error) {
	enc, head := s.configs()
	specs := append(weights.ExpectedTensors(enc, head), weights.TensorSpec{Name: weights.TemperatureBuffer, Shape: []int{3}})
	headers := make([]weights.TensorHeader, len(specs))
	for i, spec := range specs {
		name := spec.Name
		if s.MLXNames {
			name = weights.MLXName(name)
		}
		headers[i] = weights.TensorHeader{Name: name, DType: s.dtype(), Shape: spec.Shape}
	}
	meta := map[string]string{"format": "pt"}
	if s.MLXNames {
		meta["format"] = "mlx"
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("synthetic: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("synthetic: %w", cerr)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	const chunk = 1 << 16
	values := make([]float32, chunk)
	var encoded []byte
	err = weights.WriteSafetensors(bw, meta, headers, func(i int, w io.Writer) error {
		init := initFor(specs[i])
		rng := newSplitMix(s.Seed ^ nameHash(specs[i].Name))
		for left := headers[i].Len(); left > 0; {
			n := min(left, chunk)
			for j := range values[:n] {
				values[j] = init.sample(rng)
			}
			encoded = weights.EncodeFloat32(encoded[:0], values[:n], s.dtype())
			if _, err := w.Write(encoded); err != nil {
				return err
			}
			left -= n
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("synthetic: %w", err)
	}
	return nil
}

// tensorInit is the distribution of one tensor: mean + std·N(0,1).
type tensorInit struct{ mean, std float64 }

func (t tensorInit) sample(r *splitMix) float32 {
	if t.std == 0 {
		return float32(t.mean)
	}
	return float32(t.mean + t.std*r.normal())
}

// initFor picks scales after the oracle tiny-en checkpoint (std measured
// per tensor): embeddings 1.0, norm weights 1±0.15, biases ~0.08, linear
// weights ~1/sqrt(fan_in), a wider final scorer so option logits spread.
func initFor(spec weights.TensorSpec) tensorInit {
	name := spec.Name
	switch {
	case name == weights.TemperatureBuffer:
		return tensorInit{1, 0}
	case strings.HasSuffix(name, "tok_embeddings.weight"):
		return tensorInit{0, 1}
	case name == "type_emb.weight":
		return tensorInit{0, 0.5}
	case name == "scorer.3.bias":
		return tensorInit{0, 0.25}
	case name == "act_head.2.bias":
		return tensorInit{0, 0.4}
	case strings.Contains(name, "norm") || name == "scorer.0.weight" || name == "scorer.0.bias":
		if strings.HasSuffix(name, ".bias") {
			return tensorInit{0, 0.08}
		}
		return tensorInit{1, 0.15}
	case strings.HasSuffix(name, "bias"):
		return tensorInit{0, 0.08}
	}
	fanIn := 1.0
	if len(spec.Shape) == 2 {
		fanIn = float64(spec.Shape[1])
	}
	gain := 1.0
	if name == "scorer.3.weight" {
		gain = 4
	}
	return tensorInit{0, gain / math.Sqrt(fanIn)}
}

// splitMix is SplitMix64 (Steele, Lea, Flood 2014): tiny, fast and fully
// determined by its seed, unlike the math/rand global source.
type splitMix struct {
	state uint64
	spare float64
	has   bool
}

func newSplitMix(seed uint64) *splitMix { return &splitMix{state: seed} }

func (r *splitMix) next() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// normal draws N(0,1) by Box–Muller, two values per pair of uniforms.
func (r *splitMix) normal() float64 {
	if r.has {
		r.has = false
		return r.spare
	}
	u1 := (float64(r.next()>>11) + 1) / (1 << 53) // (0, 1]
	u2 := float64(r.next()>>11) / (1 << 53)
	radius := math.Sqrt(-2 * math.Log(u1))
	sin, cos := math.Sincos(2 * math.Pi * u2)
	r.spare, r.has = radius*sin, true
	return radius * cos
}

func nameHash(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// addedToken is one entry of tokenizer.json "added_tokens".
type addedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	Lstrip     bool   `json:"lstrip"`
	Rstrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

func addedTokens(tokJSON []byte) ([]addedToken, error) {
	var doc struct {
		AddedTokens []addedToken `json:"added_tokens"`
	}
	if err := json.Unmarshal(tokJSON, &doc); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	return doc.AddedTokens, nil
}

// maxTokenID is the largest id of the vocabulary or the added tokens.
func maxTokenID(tokJSON []byte, added []addedToken) int {
	var doc struct {
		Model struct {
			Vocab json.RawMessage `json:"vocab"`
		} `json:"model"`
	}
	maxID := -1
	if json.Unmarshal(tokJSON, &doc) == nil {
		var byToken map[string]int // BPE / WordPiece
		var pieces [][2]json.RawMessage
		if json.Unmarshal(doc.Model.Vocab, &byToken) == nil {
			for _, id := range byToken {
				maxID = max(maxID, id)
			}
		} else if json.Unmarshal(doc.Model.Vocab, &pieces) == nil { // Unigram: [piece, score]
			maxID = len(pieces) - 1
		}
	}
	for _, t := range added {
		maxID = max(maxID, t.ID)
	}
	return maxID
}

// modernBertTokenizerConfig writes tokenizer_config.json in the shape of
// ModernBERT's: role tokens as strings, added_tokens_decoder with the
// flags of tokenizer.json (oracle README, real-en).
func modernBertTokenizerConfig(added []addedToken) []byte {
	var b bytes.Buffer
	b.WriteString("{\n  \"added_tokens_decoder\": {")
	for i, t := range added {
		if i > 0 {
			b.WriteByte(',')
		}
		content, _ := json.Marshal(t.Content)
		fmt.Fprintf(&b, "\n    \"%d\": {\n      \"content\": %s,\n      \"lstrip\": %t,\n      \"normalized\": %t,\n      \"rstrip\": %t,\n      \"single_word\": %t,\n      \"special\": %t\n    }",
			t.ID, content, t.Lstrip, t.Normalized, t.Rstrip, t.SingleWord, t.Special)
	}
	b.WriteString("\n  },\n")
	b.WriteString(`  "clean_up_tokenization_spaces": true,
  "cls_token": "[CLS]",
  "mask_token": "[MASK]",
  "model_input_names": [
    "input_ids",
    "attention_mask"
  ],
  "model_max_length": 8192,
  "pad_token": "[PAD]",
  "sep_token": "[SEP]",
  "tokenizer_class": "PreTrainedTokenizerFast",
  "unk_token": "[UNK]"
}
`)
	return b.Bytes()
}

// orderedJSON writes a JSON object with keys in the given order.
type orderedJSON struct {
	b     bytes.Buffer
	count int
}

func (o *orderedJSON) field(key string, value any) {
	if o.count > 0 {
		o.b.WriteString(",\n")
	}
	o.count++
	k, _ := json.Marshal(key)
	var v []byte
	switch x := value.(type) {
	case json.RawMessage:
		v = x
	default:
		v, _ = json.Marshal(x)
	}
	fmt.Fprintf(&o.b, "  %s: %s", k, v)
}

func (o *orderedJSON) bytes() []byte {
	return append(append([]byte("{\n"), o.b.Bytes()...), "\n}\n"...)
}

// pyFloat writes a float as Python's json.dumps would (1.0, not 1).
func pyFloat(f float64) json.RawMessage { return json.RawMessage(pyjson.FloatLiteral(f)) }

func (s Spec) agentConfigJSON() []byte {
	var o orderedJSON
	o.field("encoder", "synthetic/"+s.Name+" (random weights; laya-metal)")
	o.field("head_layers", s.HeadLayers)
	o.field("max_len", s.MaxLen)
	o.field("head_max_len", s.HeadMaxLen)
	o.field("max_prefixes", 6)
	costs := []string{}
	for _, c := range s.actCosts() {
		k, _ := json.Marshal(c)
		costs = append(costs, string(k)+": 0.5")
	}
	o.field("act_costs", json.RawMessage("{"+strings.Join(costs, ", ")+"}"))
	o.field("cost_wrong_act", pyFloat(3))
	o.field("amp_dtype", "bf16")
	o.field("model_name", "rl-agent")
	o.field("temperature", json.RawMessage(fmt.Sprintf("[%s, %s, %s]",
		pyFloat(s.Temperature[0]), pyFloat(s.Temperature[1]), pyFloat(s.Temperature[2]))))
	buckets := []string{}
	for _, e := range s.TemperatureByOptions {
		k, _ := json.Marshal(e.Key)
		buckets = append(buckets, string(k)+": "+string(pyFloat(e.Value)))
	}
	o.field("temperature_by_options", json.RawMessage("{"+strings.Join(buckets, ", ")+"}"))
	o.field("training", json.RawMessage(fmt.Sprintf(`{"synthetic": true, "seed": %d, "weights_dtype": %q}`, s.Seed, dtypeLongName(s.dtype()))))
	return o.bytes()
}

// encoderConfigJSON writes a transformers-5 ModernBertConfig (rope_parameters
// and layer_types, no *_rope_theta keys), like the oracle checkpoints.
func (s Spec) encoderConfigJSON(cls, sep, pad int) []byte {
	kinds := make([]string, s.NumLayers)
	for i, k := range s.layerKinds() {
		kinds[i] = strconv.Quote(k.String())
	}
	var o orderedJSON
	o.field("architectures", []string{"ModernBertForMaskedLM"})
	o.field("attention_bias", false)
	o.field("attention_dropout", pyFloat(0))
	o.field("bos_token_id", cls)
	o.field("classifier_activation", "gelu")
	o.field("classifier_bias", false)
	o.field("classifier_dropout", pyFloat(0))
	o.field("classifier_pooling", "cls")
	o.field("cls_token_id", cls)
	o.field("decoder_bias", true)
	o.field("deterministic_flash_attn", false)
	o.field("dtype", "float32")
	o.field("embedding_dropout", pyFloat(0))
	o.field("eos_token_id", sep)
	o.field("global_attn_every_n_layers", s.GlobalAttnEveryNLayers)
	o.field("hidden_activation", "gelu")
	o.field("hidden_size", s.HiddenSize)
	o.field("initializer_cutoff_factor", pyFloat(2))
	o.field("initializer_range", 0.02)
	o.field("intermediate_size", s.IntermediateSize)
	o.field("layer_types", json.RawMessage("["+strings.Join(kinds, ", ")+"]"))
	o.field("local_attention", s.LocalAttention)
	o.field("max_position_embeddings", s.MaxPositionEmbeddings)
	o.field("mlp_bias", false)
	o.field("mlp_dropout", pyFloat(0))
	o.field("model_type", "modernbert")
	o.field("norm_bias", false)
	o.field("norm_eps", pyFloat(1e-05))
	o.field("num_attention_heads", s.NumHeads)
	o.field("num_hidden_layers", s.NumLayers)
	o.field("pad_token_id", pad)
	o.field("rope_parameters", json.RawMessage(fmt.Sprintf(
		`{"full_attention": {"rope_theta": %s, "rope_type": "default"}, "sliding_attention": {"rope_theta": %s, "rope_type": "default"}}`,
		pyFloat(s.RopeThetaFull), pyFloat(s.RopeThetaSliding))))
	o.field("sep_token_id", sep)
	o.field("sparse_pred_ignore_index", -100)
	o.field("sparse_prediction", false)
	o.field("tie_word_embeddings", true)
	o.field("transformers_version", "5.17.0")
	o.field("vocab_size", s.VocabSize)
	return o.bytes()
}
