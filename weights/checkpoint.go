package weights

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/laya-metal/laya/pyjson"
)

// File names of the checkpoint layout (laya-spec §1.2).
const (
	AgentConfigFile     = "rl_agent_config.json"
	EncoderConfigFile   = "encoder/config.json"
	TokenizerFile       = "tokenizer/tokenizer.json"
	TokenizerConfigFile = "tokenizer/tokenizer_config.json"
	WeightsFile         = "model.safetensors"
	MLXConfigFile       = "mlx_config.json"
)

// Name schemes of model.safetensors.
const (
	SchemeUpstream = "upstream" // PyTorch state_dict names (upstream Laya)
	SchemeMLX      = "mlx"      // laya-mlx names: in_proj.weight, scorer.layers.N, act_head.layers.N
)

// TemperatureBuffer is the persistent "temperature" buffer upstream saves
// with the weights (ones, never read at inference: laya-spec §1.6).
const TemperatureBuffer = "temperature"

// Checkpoint is a loaded Laya checkpoint directory.
type Checkpoint struct {
	Dir        string
	Agent      AgentConfig
	Encoder    EncoderConfig
	Head       HeadConfig
	NameScheme string // SchemeUpstream or SchemeMLX
	Weights    *Safetensors
	// MLXConfig is mlx_config.json when present (format, dtype, source...):
	// a JSON object, or null when the file is absent.
	MLXConfig pyjson.Value

	canonical map[string]*Tensor // canonical (upstream) name → tensor
	expected  []TensorSpec
}

// TensorSpec is a tensor the configs imply: canonical name and shape.
type TensorSpec struct {
	Name  string
	Shape []int
}

// LoadCheckpoint loads dir strictly, like upstream's load_state_dict
// (strict=True): every tensor the configs imply must exist with its exact
// shape and nothing else may be stored (the temperature buffer excepted).
// On failure the error joins every problem found and wraps
// ErrInvalidCheckpoint.
func LoadCheckpoint(dir string) (*Checkpoint, error) {
	c, err := CheckCheckpoint(dir)
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// CheckCheckpoint is LoadCheckpoint for diagnosis: it returns what could be
// resolved even when the checkpoint is invalid (the caller closes it), so
// that `laya inspect` can print the architecture next to every problem.
// The returned Checkpoint is never nil.
func CheckCheckpoint(dir string) (*Checkpoint, error) {
	c := &Checkpoint{Dir: dir, NameScheme: SchemeUpstream}
	var p problems
	c.load(&p)
	if len(p.list) == 0 {
		return c, nil
	}
	head := fmt.Errorf("weights: %s: %w (%d problem%s)", dir, ErrInvalidCheckpoint, len(p.list), plural(len(p.list)))
	return c, errors.Join(append([]error{head}, p.list...)...)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func (c *Checkpoint) load(p *problems) {
	if st, err := os.Stat(c.Dir); err != nil {
		p.addErr(fmt.Errorf("checkpoint directory: %w", err))
		return
	} else if !st.IsDir() {
		p.add("checkpoint directory: %s is not a directory", c.Dir)
		return
	}
	var agentOK, encoderOK bool
	if data, err := os.ReadFile(filepath.Join(c.Dir, AgentConfigFile)); err != nil {
		p.addErr(fmt.Errorf("%s: %w", AgentConfigFile, err))
	} else {
		c.Agent = parseAgentConfig(data, p)
		agentOK = c.Agent.HeadLayers > 0
	}
	if data, err := os.ReadFile(filepath.Join(c.Dir, EncoderConfigFile)); err != nil {
		p.addErr(fmt.Errorf("%s: %w", EncoderConfigFile, err))
	} else {
		c.Encoder = parseEncoderConfig(data, p)
		e := c.Encoder
		encoderOK = e.VocabSize > 0 && e.HiddenSize > 0 && e.IntermediateSize > 0 && e.NumLayers > 0 && len(e.LayerKinds) == e.NumLayers
	}
	if c.Encoder.MaxPositionEmbeddings > 0 && c.Agent.MaxLen > c.Encoder.MaxPositionEmbeddings {
		p.add("%s: max_len %d exceeds %s max_position_embeddings %d", AgentConfigFile, c.Agent.MaxLen, EncoderConfigFile, c.Encoder.MaxPositionEmbeddings)
	}
	c.Head = deriveHead(c.Encoder, c.Agent, p)
	// The tokenizer package parses these; here they only have to exist.
	for _, name := range []string{TokenizerFile, TokenizerConfigFile} {
		if st, err := os.Stat(filepath.Join(c.Dir, name)); err != nil {
			p.addErr(fmt.Errorf("%s: %w", name, err))
		} else if !st.Mode().IsRegular() {
			p.add("%s: not a regular file", name)
		}
	}
	if data, err := os.ReadFile(filepath.Join(c.Dir, MLXConfigFile)); err == nil {
		if v, err := pyjson.Parse(data); err != nil {
			p.add("%s: %w", MLXConfigFile, err)
		} else if v.Kind() != pyjson.ObjectKind {
			p.add("%s: want a JSON object, got %s", MLXConfigFile, shown(v))
		} else {
			c.MLXConfig = v
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		p.addErr(fmt.Errorf("%s: %w", MLXConfigFile, err))
	}

	w, err := OpenSafetensors(filepath.Join(c.Dir, WeightsFile))
	if err != nil {
		p.addErr(err)
		return
	}
	c.Weights = w
	c.canonicalize(p)
	// Without the sizes the implied tensor set is unknown; comparing
	// against a guessed one would bury the real problem under noise. Other
	// config problems (activation, RoPE type...) do not hide tensor ones.
	if agentOK && encoderOK {
		c.expected = ExpectedTensors(c.Encoder, c.Head)
		c.checkTensors(p)
	}
}

// CanonicalName maps a laya-mlx parameter name to the upstream one
// (the inverse of laya-mlx sanitize_weights, laya-spec §1.6); upstream
// names come back unchanged.
func CanonicalName(name string) string {
	name = strings.Replace(name, ".in_proj.weight", ".in_proj_weight", 1)
	name = strings.Replace(name, ".in_proj.bias", ".in_proj_bias", 1)
	for _, prefix := range []string{"scorer.", "act_head."} {
		if rest, ok := strings.CutPrefix(name, prefix+"layers."); ok {
			name = prefix + rest
		}
	}
	return name
}

// MLXName maps a canonical (upstream) name to laya-mlx's spelling.
func MLXName(name string) string {
	name = strings.Replace(name, ".in_proj_weight", ".in_proj.weight", 1)
	name = strings.Replace(name, ".in_proj_bias", ".in_proj.bias", 1)
	for _, prefix := range []string{"scorer.", "act_head."} {
		if rest, ok := strings.CutPrefix(name, prefix); ok && !strings.HasPrefix(rest, "layers.") {
			name = prefix + "layers." + rest
		}
	}
	return name
}

// canonicalize maps every stored name to its canonical name and detects
// the scheme; a file mixing both spellings, or two names mapping to one
// canonical name, is an error.
func (c *Checkpoint) canonicalize(p *problems) {
	c.canonical = make(map[string]*Tensor, len(c.Weights.Tensors))
	var mlxNames, upstreamNames []string
	for _, t := range c.Weights.Tensors {
		canon := CanonicalName(t.Name)
		switch {
		case canon != t.Name:
			mlxNames = append(mlxNames, t.Name)
		case MLXName(t.Name) != t.Name:
			upstreamNames = append(upstreamNames, t.Name)
		}
		if prev, dup := c.canonical[canon]; dup {
			p.add("%s: tensors %q and %q both map to %q", WeightsFile, prev.Name, t.Name, canon)
			continue
		}
		c.canonical[canon] = t
	}
	if len(mlxNames) > 0 {
		c.NameScheme = SchemeMLX
		if len(upstreamNames) > 0 {
			p.add("%s: mixes laya-mlx names (%q) and upstream names (%q)", WeightsFile, mlxNames[0], upstreamNames[0])
		}
	}
}

// ExpectedTensors lists every tensor the configs imply, canonical names,
// in the order of upstream's state_dict (laya-spec §1.6).
func ExpectedTensors(enc EncoderConfig, head HeadConfig) []TensorSpec {
	d, inter := enc.HiddenSize, enc.IntermediateSize
	specs := []TensorSpec{
		{"encoder.embeddings.tok_embeddings.weight", []int{enc.VocabSize, d}},
		{"encoder.embeddings.norm.weight", []int{d}},
	}
	for i := range enc.NumLayers {
		l := "encoder.layers." + strconv.Itoa(i) + "."
		if i > 0 { // layer 0 uses Identity instead of attn_norm
			specs = append(specs, TensorSpec{l + "attn_norm.weight", []int{d}})
		}
		specs = append(specs,
			TensorSpec{l + "attn.Wqkv.weight", []int{3 * d, d}},
			TensorSpec{l + "attn.Wo.weight", []int{d, d}},
			TensorSpec{l + "mlp_norm.weight", []int{d}},
			TensorSpec{l + "mlp.Wi.weight", []int{2 * inter, d}},
			TensorSpec{l + "mlp.Wo.weight", []int{d, inter}},
		)
	}
	specs = append(specs, TensorSpec{"encoder.final_norm.weight", []int{d}})
	for j := range head.Layers {
		l := "head.layers." + strconv.Itoa(j) + "."
		specs = append(specs,
			TensorSpec{l + "self_attn.in_proj_weight", []int{3 * d, d}},
			TensorSpec{l + "self_attn.in_proj_bias", []int{3 * d}},
			TensorSpec{l + "self_attn.out_proj.weight", []int{d, d}},
			TensorSpec{l + "self_attn.out_proj.bias", []int{d}},
			TensorSpec{l + "linear1.weight", []int{head.FFN, d}},
			TensorSpec{l + "linear1.bias", []int{head.FFN}},
			TensorSpec{l + "linear2.weight", []int{d, head.FFN}},
			TensorSpec{l + "linear2.bias", []int{d}},
			TensorSpec{l + "norm1.weight", []int{d}},
			TensorSpec{l + "norm1.bias", []int{d}},
			TensorSpec{l + "norm2.weight", []int{d}},
			TensorSpec{l + "norm2.bias", []int{d}},
		)
	}
	specs = append(specs,
		TensorSpec{"type_emb.weight", []int{3, d}},
		TensorSpec{"scorer.0.weight", []int{d}},
		TensorSpec{"scorer.0.bias", []int{d}},
		TensorSpec{"scorer.1.weight", []int{d, d}},
		TensorSpec{"scorer.1.bias", []int{d}},
		TensorSpec{"scorer.3.weight", []int{1, d}},
		TensorSpec{"scorer.3.bias", []int{1}},
		TensorSpec{"act_head.0.weight", []int{head.ActHidden, d + 4}},
		TensorSpec{"act_head.0.bias", []int{head.ActHidden}},
		TensorSpec{"act_head.2.weight", []int{head.NAct, head.ActHidden}},
		TensorSpec{"act_head.2.bias", []int{head.NAct}},
	)
	return specs
}

func (c *Checkpoint) checkTensors(p *problems) {
	stored := func(canon string) string {
		if t := c.canonical[canon]; t != nil && t.Name != canon {
			return fmt.Sprintf("%q (stored as %q)", canon, t.Name)
		}
		return strconv.Quote(canon)
	}
	want := make(map[string]bool, len(c.expected))
	for _, spec := range c.expected {
		want[spec.Name] = true
		t, ok := c.canonical[spec.Name]
		if !ok {
			p.add("%s: missing tensor %q, want shape %v", WeightsFile, spec.Name, spec.Shape)
			continue
		}
		if !slices.Equal(t.Shape, spec.Shape) {
			p.add("%s: tensor %s has shape %v, want %v", WeightsFile, stored(spec.Name), t.Shape, spec.Shape)
		}
	}
	for _, t := range c.Weights.Tensors {
		canon := CanonicalName(t.Name)
		if want[canon] {
			continue
		}
		if canon == TemperatureBuffer {
			if !slices.Equal(t.Shape, []int{3}) {
				p.add("%s: tensor %q has shape %v, want [3]", WeightsFile, t.Name, t.Shape)
			}
			continue
		}
		p.add("%s: unexpected tensor %q with shape %v", WeightsFile, t.Name, t.Shape)
	}
}

// Tensor returns a tensor by canonical upstream name (e.g.
// "encoder.layers.3.attn.Wqkv.weight", "head.layers.0.self_attn.in_proj_weight",
// "scorer.3.bias"), whatever scheme the file uses; nil if absent.
func (c *Checkpoint) Tensor(name string) *Tensor {
	if c == nil {
		return nil
	}
	return c.canonical[name]
}

// Expected lists the tensors the configs imply (canonical names, shapes).
func (c *Checkpoint) Expected() []TensorSpec { return c.expected }

// ParamCount is the number of elements of all stored tensors except the
// temperature buffer (421,293,827 for the English checkpoint).
func (c *Checkpoint) ParamCount() int64 {
	if c == nil || c.Weights == nil {
		return 0
	}
	var n int64
	for _, t := range c.Weights.Tensors {
		if CanonicalName(t.Name) != TemperatureBuffer {
			n += int64(t.Len())
		}
	}
	return n
}

// DTypes lists the dtypes stored, with their tensor counts, in DType order.
func (c *Checkpoint) DTypes() map[DType]int {
	out := map[DType]int{}
	if c == nil || c.Weights == nil {
		return out
	}
	for _, t := range c.Weights.Tensors {
		out[t.DType]++
	}
	return out
}

// Close releases the weights mapping; tensors must not be used afterwards.
func (c *Checkpoint) Close() error {
	if c == nil || c.Weights == nil {
		return nil
	}
	return c.Weights.Close()
}
