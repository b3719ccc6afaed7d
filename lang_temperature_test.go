package laya

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/laya-metal/laya/heads"
)

// copyCheckpoint copies an oracle checkpoint so a test can edit its config.
func copyCheckpoint(t *testing.T, name string) string {
	t.Helper()
	src, dst := checkpointDir(name), t.TempDir()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestLangTemperatures calibrates a request with the checkpoint's per-language
// override when its language has one, and leaves every other request as upstream
// answers it. The reference is upstream's own logits of the case, softmaxed at the
// override's temperature.
func TestLangTemperatures(t *testing.T) {
	dir := copyCheckpoint(t, "tiny-en")
	cfgPath := filepath.Join(dir, "rl_agent_config.json")
	var cfg map[string]any
	data, _ := os.ReadFile(cfgPath)
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["lang_temperatures"] = map[string]any{"de": map[string]any{"temperature": []float64{3, 3, 3}}}
	data, _ = json.Marshal(cfg)
	if err := os.WriteFile(cfgPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	agent, err := Load(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	var c requestCase
	for _, gc := range loadRequestCases(t, "tiny-en") {
		if gc.name == "email" {
			c = gc
		}
	}
	req, err := ParseRequest([]byte(c.request.String()))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"", "fr", "en"} {
		res, err := agent.PredictRequest(ctx, Request{State: req.State, Questions: req.Questions, Lang: l})
		if err != nil {
			t.Fatal(err)
		}
		if res.String() != c.answerJSON {
			t.Errorf("lang %q (no override): %s\nwant upstream's %s", l, res, c.answerJSON)
		}
	}
	res, err := agent.PredictRequest(ctx, Request{State: req.State, Questions: req.Questions, Lang: "de-AT"})
	if err != nil {
		t.Fatal(err)
	}
	choice, err := res.Choice(c.rows[0].qid)
	if err != nil {
		t.Fatal(err)
	}
	want := heads.Softmax(c.rows[0].logits, 3)
	for i, p := range choice.Probabilities {
		if math.Abs(p.Probability-heads.Round4(float64(want[i]))) > 1.0001e-4 {
			t.Errorf("de-AT %s: %v, want %v (upstream logits at T=3)", p.Label, p.Probability, want[i])
		}
	}
}
