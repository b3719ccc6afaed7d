package synthetic

import (
	"crypto/sha256"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/laya-metal/laya/weights"
)

const modernBertTokenizerDir = "../../testdata/tokenizers/modernbert"

// The presets reproduce the published parameter counts (laya-spec §1.1,
// laya-mlx BENCHMARKS).
func TestSyntheticPresetParamCounts(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want int64
	}{
		{"english", English(), 421_293_827},
		{"multilingual", Multilingual(), 321_908_995},
	}
	for _, tt := range tests {
		if got := tt.spec.ParamCount(); got != tt.want {
			t.Errorf("%s: ParamCount = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func smallSpec() Spec {
	s := Tiny()
	s.HiddenSize, s.NumHeads, s.IntermediateSize, s.NumLayers = 96, 3, 80, 5
	s.GlobalAttnEveryNLayers = 2
	s.ActCosts = []string{"escalate", "refund"}
	s.TokenizerDir = modernBertTokenizerDir
	s.Seed = 42
	return s
}

func fileSHA(t *testing.T, path string) [32]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	io.Copy(h, f)
	return [32]byte(h.Sum(nil))
}

func TestWriteSyntheticRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dtype weights.DType
		mlx   bool
	}{{"f16", weights.F16, false}, {"f32", weights.F32, false}, {"bf16 mlx names", weights.BF16, true}} {
		t.Run(tc.name, func(t *testing.T) {
			spec := smallSpec()
			spec.DType, spec.MLXNames = tc.dtype, tc.mlx
			dir := t.TempDir()
			if err := Write(dir, spec); err != nil {
				t.Fatal(err)
			}
			c, err := weights.LoadCheckpoint(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			wantScheme := weights.SchemeUpstream
			if tc.mlx {
				wantScheme = weights.SchemeMLX
			}
			if c.NameScheme != wantScheme || c.Encoder.HiddenSize != 96 || c.Encoder.NumLayers != 5 || c.Head.Heads != 1 ||
				c.Head.HeadDim != 96 || c.Agent.NAct != 3 || c.Encoder.PadTokenID != 50283 || c.ParamCount() != spec.ParamCount() {
				t.Errorf("scheme %s encoder %+v head %+v params %d", c.NameScheme, c.Encoder, c.Head, c.ParamCount())
			}
			if kinds := c.Encoder.LayerKinds; !slices.Equal(kinds, []weights.LayerKind{weights.FullAttention, weights.SlidingAttention, weights.FullAttention, weights.SlidingAttention, weights.FullAttention}) {
				t.Errorf("layer kinds %v", kinds)
			}
			// English temperatures, including the clamp of choice:11+.
			if len(c.Agent.Warnings) != 1 || c.Agent.TemperatureByOptions["choice:11+"] != 0.5 || c.Agent.Temperature[0] != 1.6369030475616455 {
				t.Errorf("calibration %+v", c.Agent)
			}
			if dt := c.DTypes(); dt[tc.dtype] != len(c.Weights.Tensors) {
				t.Errorf("dtypes %v", dt)
			}
			// Scales: embeddings ~N(0,1), norm weights ~1, linears ~1/sqrt(fan_in).
			checkStats := func(name string, mean, std, tol float64) {
				values := c.Tensor(name).Float32()
				var sum, sq float64
				for _, v := range values {
					if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
						t.Fatalf("%s holds %v", name, v)
					}
					sum += float64(v)
				}
				m := sum / float64(len(values))
				for _, v := range values {
					sq += (float64(v) - m) * (float64(v) - m)
				}
				s := math.Sqrt(sq / float64(len(values)))
				if math.Abs(m-mean) > tol || math.Abs(s-std) > tol*std+tol {
					t.Errorf("%s: mean %.4f std %.4f, want %.4f / %.4f", name, m, s, mean, std)
				}
			}
			checkStats("encoder.embeddings.tok_embeddings.weight", 0, 1, 0.02)
			checkStats("encoder.layers.1.attn.Wqkv.weight", 0, 1/math.Sqrt(96), 0.05)
			checkStats("encoder.layers.2.mlp.Wo.weight", 0, 1/math.Sqrt(80), 0.05)
			checkStats("head.layers.1.linear2.weight", 0, 1/math.Sqrt(384), 0.05)
			checkStats("encoder.final_norm.weight", 1, 0.15, 0.1)
			if tb := c.Tensor(weights.TemperatureBuffer).Float32(); !slices.Equal(tb, []float32{1, 1, 1}) {
				t.Errorf("temperature buffer %v", tb)
			}
			for _, tensor := range c.Weights.Tensors {
				if tensor.Offset%int64(tensor.DType.Size()) != 0 {
					t.Errorf("tensor %q misaligned at %d", tensor.Name, tensor.Offset)
				}
			}
			// Same seed → same bytes; another seed → other bytes.
			again := t.TempDir()
			if err := Write(again, spec); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{weights.WeightsFile, weights.AgentConfigFile, weights.EncoderConfigFile, weights.TokenizerConfigFile} {
				if fileSHA(t, filepath.Join(dir, name)) != fileSHA(t, filepath.Join(again, name)) {
					t.Errorf("%s differs between two writes with the same seed", name)
				}
			}
			spec.Seed++
			other := t.TempDir()
			if err := Write(other, spec); err != nil {
				t.Fatal(err)
			}
			if fileSHA(t, filepath.Join(dir, weights.WeightsFile)) == fileSHA(t, filepath.Join(other, weights.WeightsFile)) {
				t.Error("a different seed wrote the same weights")
			}
		})
	}
}

func TestWriteSyntheticRejectsBadSpecs(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Spec)
	}{
		{"vocab smaller than tokenizer", func(s *Spec) { s.VocabSize = 1000 }},
		{"odd head dim", func(s *Spec) { s.HiddenSize, s.NumHeads = 66, 2 }},
		{"head budget", func(s *Spec) { s.HeadMaxLen = s.MaxLen }},
		{"no tokenizer", func(s *Spec) { s.TokenizerDir = "" }},
		{"missing tokenizer", func(s *Spec) { s.TokenizerDir = "/nonexistent" }},
	}
	for _, tt := range tests {
		spec := smallSpec()
		tt.edit(&spec)
		if err := Write(t.TempDir(), spec); err == nil {
			t.Errorf("%s: Write accepted the spec", tt.name)
		}
	}
}

func BenchmarkWriteSyntheticTiny(b *testing.B) {
	spec := Tiny()
	spec.TokenizerDir = modernBertTokenizerDir
	b.SetBytes(spec.ParamCount() * 2)
	for b.Loop() {
		if err := Write(b.TempDir(), spec); err != nil {
			b.Fatal(err)
		}
	}
}

// WriteOnce writes a checkpoint the first time only, through a temporary
// directory, and takes a later call's directory as it is; a failed write
// leaves no checkpoint behind.
func TestWriteOnce(t *testing.T) {
	spec := Tiny()
	spec.TokenizerDir = modernBertTokenizerDir
	dir := filepath.Join(t.TempDir(), "tiny")
	if err := WriteOnce(dir, spec); err != nil {
		t.Fatal(err)
	}
	w := filepath.Join(dir, weights.WeightsFile)
	first, err := os.Stat(w)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir + ".partial"); !os.IsNotExist(err) {
		t.Errorf("the temporary directory is left: %v", err)
	}
	spec.Seed++ // other weights: a second write would change the file
	if err := WriteOnce(dir, spec); err != nil {
		t.Fatal(err)
	}
	if again, err := os.Stat(w); err != nil || !again.ModTime().Equal(first.ModTime()) || again.Size() != first.Size() {
		t.Errorf("the checkpoint was written again (%v)", err)
	}
	bad := filepath.Join(t.TempDir(), "bad")
	spec.TokenizerDir = ""
	if err := WriteOnce(bad, spec); err == nil {
		t.Fatal("a spec without a tokenizer was written")
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Errorf("a failed write left %s: %v", bad, err)
	}
}
