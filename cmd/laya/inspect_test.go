package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// paramsFromHeader sums prod(shape) over the raw safetensors header,
// independently of the weights package (temperature buffer excluded).
func paramsFromHeader(t *testing.T, path string) (params int64, tensors int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(data)
	var header map[string]struct {
		Shape []int64 `json:"shape"`
	}
	if err := json.Unmarshal(data[8:8+n], &header); err != nil {
		t.Fatal(err)
	}
	for name, info := range header {
		if name == "__metadata__" {
			continue
		}
		tensors++
		if name == "temperature" {
			continue
		}
		p := int64(1)
		for _, d := range info.Shape {
			p *= d
		}
		params += p
	}
	return params, tensors
}

func TestInspectOracleJSON(t *testing.T) {
	tests := []struct {
		name          string
		scheme        string
		tensors       int // tiny-en: 62 per goldens/tiny-en/cases.json load.strict_load
		warnings      int
		effective11   float64
		hasBucket11   bool
		sliding       float64
		mlxMetaFormat string
	}{
		{"tiny-en", "upstream", 62, 1, 0.5, true, 10000, "pt"},
		{"real-en", "upstream", 56, 1, 0.5, true, 10000, "pt"},
		{"tiny-ml", "upstream", 68, 0, 0, false, 160000, "pt"},
		{"tiny-ml-mlxnames", "mlx", 68, 0, 0, false, 160000, "mlx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join("../../testdata/oracle/checkpoints", tt.name)
			var out, errOut bytes.Buffer
			if err := runInspect(context.Background(), []string{"--model", dir, "--json"}, nil, &out, &errOut); err != nil {
				t.Fatalf("inspect: %v (%s)", err, errOut.String())
			}
			var r inspectReport
			if err := json.Unmarshal(out.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			params, tensors := paramsFromHeader(t, filepath.Join(dir, "model.safetensors"))
			if !r.Valid || len(r.Problems) != 0 || r.ParamCount != params || r.Tensors != tensors || r.Tensors != tt.tensors || r.NameScheme != tt.scheme {
				t.Errorf("report: valid %v problems %v params %d (want %d) tensors %d (want %d) scheme %s",
					r.Valid, r.Problems, r.ParamCount, params, r.Tensors, tt.tensors, r.NameScheme)
			}
			if r.Encoder == nil || r.Encoder.RopeThetaSliding != tt.sliding || r.Metadata["format"] != tt.mlxMetaFormat {
				t.Errorf("encoder %+v metadata %v", r.Encoder, r.Metadata)
			}
			if r.Calibration == nil || len(r.Calibration.Warnings) != tt.warnings {
				t.Fatalf("calibration %+v", r.Calibration)
			}
			found := false
			for _, b := range r.Calibration.TemperatureByOptionsRaw {
				if b.Bucket == "choice:11+" {
					found = true
					if b.Effective != tt.effective11 || string(b.Raw) == "0.5" {
						t.Errorf("choice:11+ raw %s effective %v", b.Raw, b.Effective)
					}
				}
			}
			if found != tt.hasBucket11 {
				t.Errorf("choice:11+ bucket present %v, want %v", found, tt.hasBucket11)
			}
			// Every file is listed with its size and a sha256 that can be
			// recomputed here.
			if len(r.Files) != 5+map[bool]int{true: 1}[tt.scheme == "mlx"] {
				t.Errorf("files %+v", r.Files)
			}
			for _, f := range r.Files {
				info, err := os.Stat(filepath.Join(dir, f.Path))
				if err != nil || info.Size() != f.Size || len(f.SHA256) != 64 {
					t.Errorf("file %+v", f)
				}
			}
		})
	}
}

func TestInspectText(t *testing.T) {
	var out bytes.Buffer
	err := runInspect(context.Background(), []string{"--model", "../../testdata/oracle/checkpoints/tiny-en"}, nil, &out, &out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Status:       valid", "303,491", "upstream names", "F32 ×62", "choice:11+=0.1006 -> 0.5", "FSSF", "1 heads × 64", "model.safetensors"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// A damaged checkpoint: every problem is listed and the command fails.
func TestInspectReportsEveryProblem(t *testing.T) {
	src := "../../testdata/oracle/checkpoints/tiny-en"
	dir := t.TempDir()
	for _, name := range []string{"rl_agent_config.json", "encoder/config.json", "model.safetensors", "tokenizer/tokenizer.json"} {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "encoder/config.json" {
			data = bytes.Replace(data, []byte(`"vocab_size": 640`), []byte(`"vocab_size": 641`), 1)
			data = bytes.Replace(data, []byte(`"hidden_activation": "gelu"`), []byte(`"hidden_activation": "silu"`), 1)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errOut bytes.Buffer
	err := runInspect(context.Background(), []string{"--model", dir, "--json", "--no-hash"}, nil, &out, &errOut)
	if err == nil {
		t.Fatal("inspect succeeded on a damaged checkpoint")
	}
	var r inspectReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(r.Problems, "\n")
	for _, want := range []string{"hidden_activation", "tokenizer_config.json", "want [641 64]"} {
		if !strings.Contains(joined, want) {
			t.Errorf("problems lack %q:\n%s", want, joined)
		}
	}
	if r.Valid || len(r.Problems) != 3 || r.ParamCount == 0 {
		t.Errorf("valid %v, %d problems, params %d:\n%s", r.Valid, len(r.Problems), r.ParamCount, joined)
	}
}

func TestSynthThenInspect(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	args := []string{"--preset", "tiny", "--out", dir, "--seed", "7", "--dtype", "bf16", "--mlx-names", "--tokenizer", "../../testdata/tokenizers/modernbert"}
	if err := runSynth(context.Background(), args, nil, &out, &out); err != nil {
		t.Fatalf("synth: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := runInspect(context.Background(), []string{"--model", dir, "--json"}, nil, &out, &out); err != nil {
		t.Fatalf("inspect: %v\n%s", err, out.String())
	}
	var r inspectReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.NameScheme != "mlx" || r.DTypes["BF16"] != r.Tensors || r.Encoder.HiddenSize != 64 {
		t.Errorf("report %+v", r)
	}
	for _, bad := range [][]string{{"--preset", "huge", "--out", dir}, {"--preset", "tiny"}, {"--out", dir, "--dtype", "f8"}} {
		if err := runSynth(context.Background(), bad, nil, &out, &out); err == nil {
			t.Errorf("synth %v succeeded", bad)
		}
	}
}
