package laya

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/laya-metal/laya/hub"
)

// agentCheckpoints pairs each oracle checkpoint with the goldens it must reproduce;
// tiny-ml-mlxnames stores laya-mlx parameter names and must answer exactly as tiny-ml.
var agentCheckpoints = []struct{ checkpoint, golden string }{
	{"tiny-en", "tiny-en"},
	{"tiny-ml", "tiny-ml"},
	{"tiny-ml-mlxnames", "tiny-ml"},
	{"real-en", "real-en"},
}

func checkpointDir(name string) string {
	return filepath.Join("testdata", "oracle", "checkpoints", name)
}

// TestAgentGoldens runs every golden request end to end (tokenizer, forward pass,
// calibration) and compares with upstream's answer_json byte for byte.
func TestAgentGoldens(t *testing.T) {
	ctx := context.Background()
	for _, m := range agentCheckpoints {
		t.Run(m.checkpoint, func(t *testing.T) {
			agent, err := Load(ctx, checkpointDir(m.checkpoint))
			if err != nil {
				t.Fatal(err)
			}
			defer agent.Close()
			for _, c := range loadRequestCases(t, m.golden) {
				res, err := agent.PredictJSON(ctx, []byte(c.request.String()))
				if err != nil {
					t.Errorf("%s: %v", c.name, err)
					continue
				}
				got := res.String()
				if got == c.answerJSON {
					continue
				}
				if why, ok := roundingBoundaryCases[m.golden+"/"+c.name]; ok && closeJSON(t, got, c.answerJSON) {
					t.Logf("%s: one 4th-decimal flip at a rounding boundary (%s)", c.name, why)
					continue
				}
				t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.answerJSON)
			}
		})
	}
}

// roundingBoundaryCases are goldens with a reported number whose unrounded value lies
// within 1e-5 of a 4th-decimal rounding boundary, closer than the forward pass can match
// upstream's torch CPU run (oracle README fact 5: logits within ~1e-5). Decoding the
// golden logits reproduces them exactly (TestDecodeGoldens); end to end they may round
// the other way, so these cases alone compare every number within 1e-4.
var roundingBoundaryCases = map[string]string{
	// act_probs[0] = 0.5257493257522583: 0.7e-6 below 0.52575.
	"tiny-en/lang_es": "q0 act_probability 0.52574933",
	// probs[2] = 0.3240496516227722: 0.35e-6 below 0.32405.
	"tiny-en/conversation": "q1 probabilities[2] 0.32404965",
	// probs [0.68155551, 0.26946691, 0.04897756]: confidence 0.30604887, 1.1e-6 below 0.30605.
	"tiny-ml/conversation_long": "q1 confidence 0.30604887",
	// Σ i·p_i = 1.5291549265: 0.5e-6 below 1.52915.
	"tiny-ml/structured_unicode": "score 1.52915493",
}

// closeJSON reports whether two answer JSONs have the same structure and strings and
// numbers within 1e-4 of each other.
func closeJSON(t *testing.T, got, want string) bool {
	g, err1 := ParseJSON([]byte(got))
	w, err2 := ParseJSON([]byte(want))
	if err1 != nil || err2 != nil {
		t.Fatalf("parse: %v %v", err1, err2)
	}
	var walk func(a, b Value) bool
	walk = func(a, b Value) bool {
		if a.Kind() != b.Kind() {
			return false
		}
		switch a.Kind() {
		case NumberKind:
			return math.Abs(a.float()-b.float()) <= 1.0001e-4
		case ArrayKind:
			if len(a.Items()) != len(b.Items()) {
				return false
			}
			for i := range a.Items() {
				if !walk(a.Items()[i], b.Items()[i]) {
					return false
				}
			}
			return true
		case ObjectKind:
			if len(a.Members()) != len(b.Members()) {
				return false
			}
			for i, m := range a.Members() {
				if m.Key != b.Members()[i].Key || !walk(m.Value, b.Members()[i].Value) {
					return false
				}
			}
			return true
		}
		return pyDumps(a) == pyDumps(b)
	}
	return walk(g, w)
}

// TestAgentErrorGoldens sends every errors.json request through the full agent.
func TestAgentErrorGoldens(t *testing.T) {
	ctx := context.Background()
	agent, err := Load(ctx, checkpointDir("tiny-en"))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	for _, c := range readRequestGolden(t, "tiny-en", "errors.json").MustGet("cases").Items() {
		res, err := agent.PredictJSON(ctx, []byte(c.MustGet("request").String()))
		if want, ok := c.Get("result_json"); ok {
			if err != nil || res.String() != want.Str() {
				t.Errorf("%s: %v %v, want %s", c.MustGet("name").Str(), res, err, want.Str())
			}
			continue
		}
		if want := c.MustGet("message").Str(); err == nil || err.Error() != want || !errors.Is(err, ErrInvalidQuestion) {
			t.Errorf("%s: err %v, want %q", c.MustGet("name").Str(), err, want)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		path string
		opts []Option
		want error
	}{
		{"missing dir", "./" + filepath.Join("testdata", "no-such-checkpoint"), nil, ErrNotCheckpoint},
		// Without ./ the same text has the org/name shape of a Hub id; offline and
		// uncached, the error must name both readings.
		{"missing dir or hub id", filepath.Join("testdata", "no-such-checkpoint"), []Option{WithHub(WithOffline())}, hub.ErrOffline},
		{"not a checkpoint", "testdata", nil, ErrNotCheckpoint},
		{"a file", filepath.Join(checkpointDir("tiny-en"), "rl_agent_config.json"), nil, ErrNotCheckpoint},
	} {
		_, err := Load(ctx, tc.path, tc.opts...)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if tc.want == hub.ErrOffline && !strings.Contains(err.Error(), "no local directory") {
			t.Errorf("%s: %v does not mention the local reading", tc.name, err)
		}
	}
	if _, err := Load(ctx, checkpointDir("tiny-en"), WithBatchSize(0)); err == nil {
		t.Error("WithBatchSize(0) accepted")
	}
	if _, err := Load(ctx, checkpointDir("tiny-en"), WithBackend("")); err == nil {
		t.Error("WithBackend(\"\") accepted")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Load(cancelled, checkpointDir("tiny-en")); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Load: %v", err)
	}
}

// TestBatchSizeDoesNotChangeAnswers runs the 20-question case in batches of one row.
func TestBatchSizeDoesNotChangeAnswers(t *testing.T) {
	ctx := context.Background()
	agent, err := Load(ctx, checkpointDir("tiny-en"), WithBatchSize(1))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	for _, c := range loadRequestCases(t, "tiny-en") {
		if c.name != "many_questions" && c.name != "email" {
			continue
		}
		req, err := ParseRequest([]byte(c.request.String()))
		if err != nil {
			t.Fatal(err)
		}
		res, err := agent.Predict(ctx, req.State, req.Questions)
		if err != nil {
			t.Fatal(err)
		}
		if res.String() != c.answerJSON {
			t.Errorf("%s with batch size 1:\n got %s\nwant %s", c.name, res, c.answerJSON)
		}
	}
}
