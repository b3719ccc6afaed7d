package weights

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/laya-metal/laya/pyjson"
)

const oracleDir = "../testdata/oracle"

func oracleCheckpoint(name string) string { return filepath.Join(oracleDir, "checkpoints", name) }

// headerShapes reads a safetensors header with encoding/json, independently
// of the package's parser: name → shape.
func headerShapes(t *testing.T, path string) map[string][]int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(data)
	var header map[string]json.RawMessage
	if err := json.Unmarshal(data[8:8+n], &header); err != nil {
		t.Fatal(err)
	}
	out := map[string][]int{}
	for name, raw := range header {
		if name == "__metadata__" {
			continue
		}
		var info struct{ Shape []int }
		if err := json.Unmarshal(raw, &info); err != nil {
			t.Fatal(err)
		}
		out[name] = info.Shape
	}
	return out
}

func TestLoadOracleCheckpoints(t *testing.T) {
	tests := []struct {
		name                          string
		scheme                        string
		layers, hidden, heads, inter  int
		vocab, headHeads, headHeadDim int
		maxLen, headMaxLen            int
		dtype                         DType
		kinds                         string
		thetaSliding                  float64
	}{
		{"tiny-en", SchemeUpstream, 4, 64, 2, 96, 640, 1, 64, 128, 48, F32, "FSSF", 10000},
		{"tiny-ml", SchemeUpstream, 5, 128, 2, 192, 992, 2, 64, 160, 64, F16, "FSSFS", 160000},
		{"tiny-ml-mlxnames", SchemeMLX, 5, 128, 2, 192, 992, 2, 64, 160, 64, F16, "FSSFS", 160000},
		{"real-en", SchemeUpstream, 3, 32, 1, 48, 50368, 1, 32, 160, 48, F16, "FSS", 10000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := oracleCheckpoint(tt.name)
			c, err := LoadCheckpoint(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			e := c.Encoder
			if c.NameScheme != tt.scheme || e.NumLayers != tt.layers || e.HiddenSize != tt.hidden || e.NumHeads != tt.heads ||
				e.IntermediateSize != tt.inter || e.VocabSize != tt.vocab || c.Head.Heads != tt.headHeads ||
				c.Head.HeadDim != tt.headHeadDim || c.Agent.MaxLen != tt.maxLen || c.Agent.HeadMaxLen != tt.headMaxLen ||
				c.Head.Layers != 2 || c.Agent.NAct != 2 || e.LocalAttention != 16 || e.RopeThetaFull != 160000 || e.RopeThetaSliding != tt.thetaSliding {
				t.Errorf("got scheme %s encoder %+v head %+v agent max_len %d head_max_len %d", c.NameScheme, e, c.Head, c.Agent.MaxLen, c.Agent.HeadMaxLen)
			}
			var kinds strings.Builder
			for _, k := range e.LayerKinds {
				kinds.WriteByte("FS"[k])
			}
			if kinds.String() != tt.kinds {
				t.Errorf("layer kinds %s, want %s", kinds.String(), tt.kinds)
			}
			dtypes := c.DTypes()
			if len(dtypes) != 1 || dtypes[tt.dtype] != len(c.Weights.Tensors) {
				t.Errorf("dtypes %v, want all %v", dtypes, tt.dtype)
			}
			// Parameter count, computed independently from the raw header.
			var want int64
			shapes := headerShapes(t, filepath.Join(dir, WeightsFile))
			for name, shape := range shapes {
				if name == TemperatureBuffer {
					continue
				}
				n := int64(1)
				for _, d := range shape {
					n *= int64(d)
				}
				want += n
			}
			if got := c.ParamCount(); got != want {
				t.Errorf("ParamCount = %d, want %d", got, want)
			}
			// Every expected tensor resolves by canonical name to its stored data.
			if len(c.Expected()) != len(shapes)-1 {
				t.Errorf("%d expected tensors, file has %d plus the temperature buffer", len(c.Expected()), len(shapes)-1)
			}
			for _, spec := range c.Expected() {
				tensor := c.Tensor(spec.Name)
				if tensor == nil || !slices.Equal(tensor.Shape, spec.Shape) || len(tensor.Float32()) != tensor.Len() {
					t.Errorf("tensor %q: %+v", spec.Name, tensor)
				}
			}
			if c.Tensor("no.such.tensor") != nil {
				t.Error("Tensor of an absent name is not nil")
			}
		})
	}
}

// goldenLoad is the "load" block of goldens/<name>/cases.json.
type goldenLoad struct {
	LoadWarnings                []string              `json:"load_warnings"`
	TemperatureApplied          []float64             `json:"temperature_applied"`
	TemperatureByOptionsApplied map[string]float64    `json:"temperature_by_options_applied"`
	StrictLoad                  struct{ Tensors int } `json:"strict_load"`
}

func TestOracleLoadGoldens(t *testing.T) {
	for _, name := range []string{"tiny-en", "tiny-ml", "real-en"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(oracleDir, "goldens", name, "cases.json"))
			if err != nil {
				t.Fatal(err)
			}
			var golden struct{ Load goldenLoad }
			if err := json.Unmarshal(data, &golden); err != nil {
				t.Fatal(err)
			}
			c, err := LoadCheckpoint(oracleCheckpoint(name))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if !slices.Equal(c.Agent.Warnings, golden.Load.LoadWarnings) && !(len(c.Agent.Warnings) == 0 && len(golden.Load.LoadWarnings) == 0) {
				t.Errorf("warnings %q\nwant     %q", c.Agent.Warnings, golden.Load.LoadWarnings)
			}
			if !slices.Equal(c.Agent.Temperature[:], golden.Load.TemperatureApplied) {
				t.Errorf("temperature %v, want %v", c.Agent.Temperature, golden.Load.TemperatureApplied)
			}
			if len(c.Agent.TemperatureByOptions) != len(golden.Load.TemperatureByOptionsApplied) {
				t.Errorf("by options %v, want %v", c.Agent.TemperatureByOptions, golden.Load.TemperatureByOptionsApplied)
			}
			for k, v := range golden.Load.TemperatureByOptionsApplied {
				if c.Agent.TemperatureByOptions[k] != v {
					t.Errorf("by options[%q] = %v, want %v", k, c.Agent.TemperatureByOptions[k], v)
				}
			}
			if golden.Load.StrictLoad.Tensors != 0 && len(c.Weights.Tensors) != golden.Load.StrictLoad.Tensors {
				t.Errorf("%d tensors, upstream strict load saw %d", len(c.Weights.Tensors), golden.Load.StrictLoad.Tensors)
			}
		})
	}
}

// tiny-ml and tiny-ml-mlxnames hold the same weights under the two name
// schemes: canonical lookups must give byte-identical data.
func TestMLXNamesMatchUpstream(t *testing.T) {
	up, err := LoadCheckpoint(oracleCheckpoint("tiny-ml"))
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	mlx, err := LoadCheckpoint(oracleCheckpoint("tiny-ml-mlxnames"))
	if err != nil {
		t.Fatal(err)
	}
	defer mlx.Close()
	if mlx.Weights.Metadata["format"] != "mlx" || mlxFormat(mlx.MLXConfig) != "laya-mlx" {
		t.Errorf("mlx metadata %v, mlx_config %v", mlx.Weights.Metadata, mlx.MLXConfig)
	}
	renamed := 0
	for _, spec := range up.Expected() {
		a, b := up.Tensor(spec.Name), mlx.Tensor(spec.Name)
		if a == nil || b == nil || a.DType != b.DType || !slices.Equal(a.Shape, b.Shape) || !bytes.Equal(a.Raw, b.Raw) {
			t.Errorf("tensor %q differs between the schemes", spec.Name)
		}
		if b != nil && b.Name != spec.Name {
			renamed++
		}
	}
	// 2 head layers × in_proj weight+bias, scorer 6, act_head 4.
	if renamed != 14 {
		t.Errorf("%d tensors were stored under mlx names, want 14", renamed)
	}
}

func TestNameMapping(t *testing.T) {
	tests := []struct{ mlx, upstream string }{
		{"head.layers.1.self_attn.in_proj.weight", "head.layers.1.self_attn.in_proj_weight"},
		{"head.layers.0.self_attn.in_proj.bias", "head.layers.0.self_attn.in_proj_bias"},
		{"scorer.layers.3.bias", "scorer.3.bias"},
		{"act_head.layers.0.weight", "act_head.0.weight"},
		{"encoder.layers.2.attn.Wqkv.weight", "encoder.layers.2.attn.Wqkv.weight"},
		{"head.layers.0.self_attn.out_proj.weight", "head.layers.0.self_attn.out_proj.weight"},
		{"temperature", "temperature"},
	}
	for _, tt := range tests {
		if got := CanonicalName(tt.mlx); got != tt.upstream {
			t.Errorf("CanonicalName(%q) = %q, want %q", tt.mlx, got, tt.upstream)
		}
		if got := MLXName(tt.upstream); got != tt.mlx {
			t.Errorf("MLXName(%q) = %q, want %q", tt.upstream, got, tt.mlx)
		}
	}
}

// copyDir copies a checkpoint so a test can damage it.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// storedTensor is a tensor copied out of a file, for rewriting.
type storedTensor struct {
	header TensorHeader
	raw    []byte
}

func readTensors(t *testing.T, path string) []storedTensor {
	t.Helper()
	s, err := OpenSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []storedTensor
	for _, tensor := range s.Tensors {
		out = append(out, storedTensor{TensorHeader{tensor.Name, tensor.DType, slices.Clone(tensor.Shape)}, slices.Clone(tensor.Raw)})
	}
	return out
}

func writeTensors(t *testing.T, path string, tensors []storedTensor) {
	t.Helper()
	headers := make([]TensorHeader, len(tensors))
	for i, st := range tensors {
		headers[i] = st.header
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = WriteSafetensors(f, map[string]string{"format": "pt"}, headers, func(i int, w io.Writer) error {
		_, err := w.Write(tensors[i].raw)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func editJSON(t *testing.T, path string, edit func(map[string]any)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	edit(doc)
	out, _ := json.Marshal(doc)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestBrokenCheckpoints(t *testing.T) {
	weightsEdit := func(edit func([]storedTensor) []storedTensor) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			path := filepath.Join(dir, WeightsFile)
			writeTensors(t, path, edit(readTensors(t, path)))
		}
	}
	without := func(name string) func([]storedTensor) []storedTensor {
		return func(ts []storedTensor) []storedTensor {
			return slices.DeleteFunc(ts, func(st storedTensor) bool { return st.header.Name == name })
		}
	}
	agentEdit := func(edit func(map[string]any)) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) { editJSON(t, filepath.Join(dir, AgentConfigFile), edit) }
	}
	encoderEdit := func(edit func(map[string]any)) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) { editJSON(t, filepath.Join(dir, EncoderConfigFile), edit) }
	}
	tests := []struct {
		name     string
		base     string
		damage   func(t *testing.T, dir string)
		mentions []string
	}{
		{"missing tensor", "tiny-en", weightsEdit(without("encoder.layers.2.mlp.Wo.weight")), []string{"missing tensor", "encoder.layers.2.mlp.Wo.weight", "[64 96]"}},
		{"missing mlx tensor", "tiny-ml-mlxnames", weightsEdit(without("scorer.layers.3.bias")), []string{"missing tensor", `"scorer.3.bias"`}},
		{"extra tensor", "tiny-en", weightsEdit(func(ts []storedTensor) []storedTensor {
			return append(ts, storedTensor{TensorHeader{"encoder.layers.0.attn_norm.weight", F32, []int{64}}, make([]byte, 256)})
		}), []string{"unexpected tensor", "encoder.layers.0.attn_norm.weight"}},
		{"misshapen tensor", "tiny-en", weightsEdit(func(ts []storedTensor) []storedTensor {
			for i := range ts {
				if ts[i].header.Name == "act_head.0.weight" {
					ts[i].header.Shape = []int{68, 256}
				}
			}
			return ts
		}), []string{"act_head.0.weight", "[68 256]", "want [256 68]"}},
		{"misshapen mlx tensor", "tiny-ml-mlxnames", weightsEdit(func(ts []storedTensor) []storedTensor {
			for i := range ts {
				if ts[i].header.Name == "head.layers.1.self_attn.in_proj.weight" {
					ts[i].header.Shape = []int{128, 384}
				}
			}
			return ts
		}), []string{`"head.layers.1.self_attn.in_proj_weight" (stored as "head.layers.1.self_attn.in_proj.weight")`}},
		{"mixed name schemes", "tiny-ml", weightsEdit(func(ts []storedTensor) []storedTensor {
			for i := range ts {
				if ts[i].header.Name == "scorer.3.bias" {
					ts[i].header.Name = "scorer.layers.3.bias"
				}
			}
			return ts
		}), []string{"mixes laya-mlx names"}},
		{"both spellings of one tensor", "tiny-ml", weightsEdit(func(ts []storedTensor) []storedTensor {
			for _, st := range ts {
				if st.header.Name == "scorer.3.bias" {
					st.header.Name = "scorer.layers.3.bias"
					return append(ts, st)
				}
			}
			return ts
		}), []string{"both map to", "scorer.3.bias"}},
		{"bad temperature buffer", "tiny-en", weightsEdit(func(ts []storedTensor) []storedTensor {
			for i := range ts {
				if ts[i].header.Name == "temperature" {
					ts[i].header.Shape = []int{1, 3}
				}
			}
			return ts
		}), []string{`"temperature"`, "want [3]"}},
		{"fewer head layers in config", "tiny-en", agentEdit(func(m map[string]any) { m["head_layers"] = 1 }), []string{"unexpected tensor", "head.layers.1."}},
		{"more act costs", "tiny-en", agentEdit(func(m map[string]any) { m["act_costs"] = map[string]any{"a": 1, "b": 2} }), []string{"act_head.2.weight", "want [3 256]"}},
		{"missing head_layers", "tiny-en", agentEdit(func(m map[string]any) { delete(m, "head_layers") }), []string{`"head_layers"`}},
		{"max_len over max_position_embeddings", "tiny-en", agentEdit(func(m map[string]any) { m["max_len"] = 1024 }), []string{"max_position_embeddings"}},
		{"head_max_len over max_len", "tiny-en", agentEdit(func(m map[string]any) { m["head_max_len"] = 200 }), []string{"head_max_len"}},
		{"temperature length", "tiny-en", agentEdit(func(m map[string]any) { m["temperature"] = []any{1, 2} }), []string{"temperature"}},
		{"vocab mismatch", "tiny-en", encoderEdit(func(m map[string]any) { m["vocab_size"] = 641 }), []string{"tok_embeddings", "want [641 64]"}},
		{"more layers", "tiny-en", encoderEdit(func(m map[string]any) {
			m["num_hidden_layers"] = 5
			m["layer_types"] = []any{"full_attention", "sliding_attention", "sliding_attention", "full_attention", "sliding_attention"}
		}), []string{"missing tensor", "encoder.layers.4.attn.Wqkv.weight"}},
		{"activation", "tiny-en", encoderEdit(func(m map[string]any) { m["hidden_activation"] = "relu" }), []string{"hidden_activation"}},
		{"model type", "tiny-en", encoderEdit(func(m map[string]any) { m["model_type"] = "bert" }), []string{"model_type"}},
		{"missing tokenizer config", "tiny-en", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, TokenizerConfigFile))
		}, []string{"tokenizer_config.json"}},
		{"missing weights", "tiny-en", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, WeightsFile))
		}, []string{"model.safetensors"}},
		{"truncated weights", "tiny-en", func(t *testing.T, dir string) {
			path := filepath.Join(dir, WeightsFile)
			data, _ := os.ReadFile(path)
			os.WriteFile(path, data[:len(data)-10], 0o644)
		}, []string{"model.safetensors", "past"}},
		{"invalid agent JSON", "tiny-en", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, AgentConfigFile), []byte(`{"encoder": `), 0o644)
		}, []string{AgentConfigFile, "invalid JSON"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyDir(t, oracleCheckpoint(tt.base))
			tt.damage(t, dir)
			c, err := LoadCheckpoint(dir)
			if err == nil {
				c.Close()
				t.Fatal("LoadCheckpoint accepted a broken checkpoint")
			}
			if !errors.Is(err, ErrInvalidCheckpoint) {
				t.Errorf("error does not wrap ErrInvalidCheckpoint: %v", err)
			}
			for _, m := range tt.mentions {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error does not mention %q:\n%v", m, err)
				}
			}
		})
	}
}

// Every problem is reported, not only the first.
func TestCheckCheckpointCollectsAllProblems(t *testing.T) {
	dir := copyDir(t, oracleCheckpoint("tiny-en"))
	path := filepath.Join(dir, WeightsFile)
	ts := readTensors(t, path)
	ts = slices.DeleteFunc(ts, func(st storedTensor) bool { return st.header.Name == "type_emb.weight" })
	ts = append(ts, storedTensor{TensorHeader{"extra.bias", F32, []int{2}}, make([]byte, 8)})
	writeTensors(t, path, ts)
	os.Remove(filepath.Join(dir, TokenizerFile))
	c, err := CheckCheckpoint(dir)
	//lint:ignore SA5001 CheckCheckpoint returns a checkpoint to close whether or not it is valid (its doc says so).
	defer c.Close()
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != 4 { // header + 3 problems
		t.Fatalf("want 3 problems, got %v", err)
	}
	if c.Encoder.HiddenSize != 64 || c.Weights == nil {
		t.Errorf("CheckCheckpoint did not keep what it resolved: %+v", c.Encoder)
	}
	if _, err := LoadCheckpoint(filepath.Join(dir, "nope")); !errors.Is(err, ErrInvalidCheckpoint) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing directory: %v", err)
	}
}

func mlxFormat(cfg pyjson.Value) string {
	v, _ := cfg.Get("format")
	return v.Str()
}
