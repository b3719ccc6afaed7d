// Package oracletest reads the upstream oracle under testdata/oracle for the
// tests of every package that is held to it (root, encoder, heads,
// backend/gpu): one reader of cases.json and debug_hidden.json, one set of
// tolerances, one comparison.
package oracletest

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/laya-metal/laya/weights"
)

// Tolerances of the forward pass against upstream's torch CPU run (laya-spec
// §3.6, oracle README fact 5).
const (
	LogitTol   = 1e-4
	ActProbTol = 1e-5
)

// Dir is the absolute path of testdata/oracle, whichever package's test asks.
var Dir = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "oracle")
}()

// Checkpoint is the directory of oracle checkpoint name.
func Checkpoint(name string) string { return filepath.Join(Dir, "checkpoints", name) }

// Golden is the path of file in the goldens of golden.
func Golden(golden, file string) string { return filepath.Join(Dir, "goldens", golden, file) }

// Row is the part of a cases.json row the forward pass is held to.
type Row struct {
	QID       string    `json:"qid"`
	InputIDs  []int     `json:"input_ids"`
	Markers   []int     `json:"markers"`
	QType     int       `json:"qtype"`
	Logits    []float64 `json:"logits"`
	ActLogits []float64 `json:"act_logits"`
	ActProbs  []float64 `json:"act_probs"`
}

// Case is one cases.json case: its name and question rows.
type Case struct {
	Name string `json:"name"`
	Rows []Row  `json:"rows"`
}

// DebugHidden is debug_hidden.json: upstream's intermediate states for one
// unpadded row ([L, hidden] row-major per stage).
type DebugHidden struct {
	InputIDs        []int         `json:"input_ids"`
	Markers         []int         `json:"markers"`
	QType           int           `json:"qtype"`
	Embeddings      [][]float64   `json:"embeddings"`
	EncoderLayers   [][][]float64 `json:"encoder_layers"`
	LastHiddenState [][]float64   `json:"last_hidden_state"`
	HeadInput       [][]float64   `json:"head_input"`
	HeadLayers      [][][]float64 `json:"head_layers"`
	MarkerHidden    [][]float64   `json:"marker_hidden"`
	Logits          []float64     `json:"logits"`
	ActLogits       []float64     `json:"act_logits"`
}

// ReadJSON decodes the JSON file at path into v, failing the test on error.
func ReadJSON(t testing.TB, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// Cases reads the cases of golden (tiny-en, tiny-ml, real-en).
func Cases(t testing.TB, golden string) []Case {
	t.Helper()
	var file struct {
		Cases []Case `json:"cases"`
	}
	ReadJSON(t, Golden(golden, "cases.json"), &file)
	if len(file.Cases) == 0 {
		t.Fatalf("%s: no cases", golden)
	}
	return file.Cases
}

// Debug reads the debug_hidden.json of golden.
func Debug(t testing.TB, golden string) DebugHidden {
	t.Helper()
	var d DebugHidden
	ReadJSON(t, Golden(golden, "debug_hidden.json"), &d)
	return d
}

// Compare reports entries of got farther than tol from want and returns the
// largest distance (+Inf on a length mismatch).
func Compare(t testing.TB, what string, got []float32, want []float64, tol float64) float64 {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d values, want %d", what, len(got), len(want))
		return math.Inf(1)
	}
	worst := 0.0
	for i := range want {
		d := math.Abs(float64(got[i]) - want[i])
		if !(d <= tol) {
			t.Errorf("%s[%d] = %v, want %v (|Δ| %.3g > %.1g)", what, i, got[i], want[i], d, tol)
		}
		worst = max(worst, d)
	}
	return worst
}

// LoadCheckpoint loads oracle checkpoint name, failing the test on error,
// and closes it when the test and its subtests are done (t.Cleanup: after
// the cleanups registered later, such as a backend reading its mapping).
func LoadCheckpoint(t testing.TB, name string) *weights.Checkpoint {
	t.Helper()
	ckpt, err := weights.LoadCheckpoint(Checkpoint(name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ckpt.Close() })
	return ckpt
}
