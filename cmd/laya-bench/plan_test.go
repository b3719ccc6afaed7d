package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// --plan works without a GPU and without weights, in both formats; JSON
// carries the plan's counts (dispatches, barriers, buffers, FLOPs, bytes),
// its time model and a per-GPU floor table.
func TestPlanOutput(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"--synthetic", "multilingual", "--plan", "--questions", "1", "--format", "json"}, &stdout, &stderr); err != nil {
		t.Fatalf("%v (stderr: %s)", err, stderr.String())
	}
	var out struct {
		Label string         `json:"label"`
		Plan  map[string]any `json:"plan"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.Label, "MODEL") {
		t.Errorf("label %q does not say the numbers are a model", out.Label)
	}
	for _, k := range []string{"dispatches", "barriers", "dispatches_per_encoder_layer", "buffers_allocated_per_request", "flops", "ideal_bytes", "requested_bytes", "gpus",
		"padded_flops", "decision_head_dispatches", "time_model"} {
		if _, ok := out.Plan[k]; !ok {
			t.Errorf("plan lacks %q", k)
		}
	}
	if n, _ := out.Plan["dispatches_per_encoder_layer"].(float64); n < 1 || n > 5 {
		t.Errorf("dispatches_per_encoder_layer = %v, want 1..5", out.Plan["dispatches_per_encoder_layer"])
	}
	gpus, _ := out.Plan["gpus"].([]any)
	found := false
	for _, g := range gpus {
		m, _ := g.(map[string]any)
		if m["name"] == "M3 Max (40-core)" {
			found = true
			if f, _ := m["floor_ms"].(float64); !(f > 0) {
				t.Errorf("M3 Max floor %v", m["floor_ms"])
			}
			if f, _ := m["model_ms"].(float64); !(f > 0) {
				t.Errorf("M3 Max modelled time %v", m["model_ms"])
			}
		}
	}
	if !found {
		t.Error("no M3 Max row in the GPU table")
	}

	stdout.Reset()
	if err := run(context.Background(), []string{"--synthetic", "tiny", "--plan", "--questions", "2", "--profile"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"MODEL", "per encoder layer", "M3 Max", "Dispatches as encoded", "gemm_f32_f16w", "attention_flash_f32", "ESTIMATE", "philipturner"} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("markdown plan lacks %q:\n%s", w, stdout.String())
		}
	}

	// --split-k records the split GEMMs and their reductions.
	stdout.Reset()
	if err := run(context.Background(), []string{"--synthetic", "multilingual", "--plan", "--questions", "1", "--split-k", "--profile"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"split-K for 120 threadgroup slots", "7 per encoder layer", "gemm_reduce_f32"} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("--split-k plan lacks %q", w)
		}
	}
}

// --plan reads a real checkpoint's configuration (its weights are mapped,
// never read) and refuses impossible requests with a clear error.
func TestPlanModelAndErrors(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"--model", "../../testdata/oracle/checkpoints/tiny-en", "--plan", "--questions", "2"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "5 per encoder layer (4 layers)") {
		t.Errorf("tiny-en plan:\n%s", stdout.String())
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--plan"}, "--synthetic english|multilingual|tiny or --model DIR"},
		{[]string{"--plan", "--synthetic", "english", "--tokens", "3"}, "shape mismatch"},
		{[]string{"--plan", "--synthetic", "klingon"}, `got "klingon"`},
		{[]string{"--model", "../../testdata/oracle/checkpoints/tiny-en", "--backend", "cpu", "--split-k", "--questions", "1", "--runs", "1"}, `backend "cpu" has no split-K`},
	} {
		err := run(context.Background(), c.args, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want one saying %q", c.args, err, c.want)
		}
	}
}
