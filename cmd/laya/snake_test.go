package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/laya-metal/laya/snake"
)

func TestSnakeHeadlessJSONAndRecord(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "run.jsonl")
	var out, errOut bytes.Buffer
	err := runSnake(context.Background(), []string{"--model", predictModel, "--headless", "--json",
		"--steps", "120", "--fps", "0", "--seed", "11", "--record", rec}, nil, &out, &errOut)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	var sum map[string]any
	if err := json.Unmarshal(out.Bytes(), &sum); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out.String())
	}
	for _, k := range []string{"steps", "alive", "score", "moves_per_s", "tick_ms", "deadline_misses", "interventions", "model_calls", "backend", "model"} {
		if _, ok := sum[k]; !ok {
			t.Errorf("summary lacks %q: %s", k, out.String())
		}
	}
	if sum["steps"] != 120.0 || sum["model_calls"] != 120.0 || sum["alive"] != true || sum["backend"] != "cpu" || sum["model"] != predictModel {
		t.Errorf("summary %s", out.String())
	}
	data, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 120 {
		t.Fatalf("%d record lines for 120 ticks", len(lines))
	}
	var last map[string]any
	if err := json.Unmarshal([]byte(lines[119]), &last); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"tick", "probabilities", "chosen", "executed", "latency_ms"} {
		if _, ok := last[k]; !ok {
			t.Errorf("record line lacks %q: %s", k, lines[119])
		}
	}
	if last["tick"] != 120.0 {
		t.Errorf("last line %s", lines[119])
	}
}

func TestSnakeHeadlessText(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := runSnake(context.Background(), []string{"--model", predictModel, "--headless", "--steps", "20", "--fps", "0",
		"--width", "8", "--height", "7"}, nil, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "20 steps, alive, score ") || !strings.Contains(out.String(), "20 model calls") {
		t.Errorf("summary line %q", out.String())
	}
}

func TestSnakeBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
		is   error
	}{
		{[]string{"--headless", "--width", "5", "--height", "5"}, "two odd sides", snake.ErrBoard},
		{[]string{"--headless", "--width", "3", "--height", "4"}, "smaller than 4×4", snake.ErrBoard},
		{[]string{"--headless", "--width", "4", "--height", "2"}, "smaller than 4×4", snake.ErrBoard},
		{[]string{"--headless", "--width", "100000", "--height", "100000"}, "more than", snake.ErrBoard},
		{[]string{"--headless", "--initial-length", "1"}, "--initial-length 1", snake.ErrConfig},
		{[]string{"--headless", "--initial-length", "0"}, "--initial-length 0", snake.ErrConfig},
		{[]string{"--headless", "--initial-length", "384"}, "smaller than the 384 cells", snake.ErrConfig},
		{[]string{"--headless", "--fps", "-1"}, "fps -1", snake.ErrConfig},
		{[]string{"--headless", "--fps", "1e-12"}, "fps 1e-12", snake.ErrConfig},
		{[]string{"--headless", "--fps", "NaN"}, "fps NaN", snake.ErrConfig},
		{[]string{"--headless", "--steps", "-5"}, "--steps -5", nil},
		{[]string{"--json"}, "--json needs --headless", nil},
		{[]string{}, "needs a terminal", nil},
		{[]string{"--headless", "--model", "/nonexistent/ckpt"}, "/nonexistent/ckpt", nil},
		{[]string{"--headless", "--record", "/nonexistent/dir/x.jsonl"}, "--record", nil},
		{[]string{"--headless", "extra"}, "unexpected argument", nil},
		{[]string{"benchmark", "--rates", "0"}, "--rates", nil},
		{[]string{"benchmark", "--seeds", "a,b"}, "--seeds", nil},
		{[]string{"benchmark", "--width", "7", "--height", "9"}, "two odd sides", snake.ErrBoard},
		{[]string{"benchmark", "--steps", "0"}, "--steps 0", nil},
		{[]string{"benchmark", "--raw-steps", "-1"}, "--raw-steps -1", nil},
	} {
		var out, errOut bytes.Buffer
		err := runSnake(context.Background(), tc.args, nil, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want one mentioning %q", tc.args, err, tc.want)
			continue
		}
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%v: %v does not match %v", tc.args, err, tc.is)
		}
	}
}

func TestSnakeBenchmarkCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	err := runSnake(context.Background(), []string{"benchmark", "--model", predictModel, "--seeds", "1,2", "--rates", "50,10000",
		"--steps", "15", "--warmup", "2", "--raw-steps", "30", "--width", "8", "--height", "8", "--json"}, nil, &out, &errOut)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	var rep struct {
		Model    string           `json:"model"`
		Backend  string           `json:"backend"`
		Raw      []snake.BenchRun `json:"raw_unassisted"`
		Uncapped []snake.BenchRun `json:"uncapped"`
		Paced    []snake.BenchRun `json:"paced"`
		Highest  float64          `json:"highest_passing_fps"`
		MPS      float64          `json:"uncapped_moves_per_s"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	// stderr is no terminal: the rows, progress only, are not drawn; the
	// one line is the default backend's choice (auto picks cpu off a Mac).
	stray := errOut.String()
	if line, rest, _ := strings.Cut(stray, "\n"); strings.HasPrefix(line, "laya: backend auto: cpu (") {
		stray = rest
	}
	if stray != "" {
		t.Errorf("stderr got %q", errOut.String())
	}
	if len(rep.Raw) != 2 || len(rep.Uncapped) != 2 || len(rep.Paced) != 4 || rep.MPS <= 0 || rep.Backend != "cpu" {
		t.Fatalf("%s", out.String())
	}
	// 10,000 fps gives each tick 0.1 ms: no forward pass of real-en makes that.
	for _, r := range rep.Paced {
		if r.FPS == 10000 && r.Passes {
			t.Errorf("passed at 10000 fps: %+v", r)
		}
	}
	if rep.Highest == 10000 {
		t.Errorf("highest %v", rep.Highest)
	}
}

func TestSnakeHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"benchmark", "-h"}} {
		var out, errOut bytes.Buffer
		if err := runSnake(context.Background(), args, nil, &out, &errOut); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(errOut.String(), "Example") || !strings.Contains(errOut.String(), "-fps") && args[0] == "-h" {
			t.Errorf("%v: help %s", args, errOut.String())
		}
	}
}
