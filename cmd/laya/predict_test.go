package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/preset"
	"github.com/laya-metal/laya/pyjson"
)

const predictModel = "../../testdata/oracle/checkpoints/real-en"

// goldenCase reads one case of the real-en goldens: its request and upstream's answer.
func goldenPredictCase(t *testing.T, name string) (request json.RawMessage, answer string) {
	t.Helper()
	data, err := os.ReadFile("../../testdata/oracle/goldens/real-en/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []struct {
			Name       string          `json:"name"`
			Request    json.RawMessage `json:"request"`
			AnswerJSON string          `json:"answer_json"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	for _, c := range file.Cases {
		if c.Name == name {
			return c.Request, c.AnswerJSON
		}
	}
	t.Fatalf("no case %q", name)
	return nil, ""
}

func TestPredictCommand(t *testing.T) {
	request, answer := goldenPredictCase(t, "email")
	dir := t.TempDir()
	reqFile := filepath.Join(dir, "request.json")
	if err := os.WriteFile(reqFile, request, 0o644); err != nil {
		t.Fatal(err)
	}
	var req struct {
		State     json.RawMessage `json:"state"`
		Questions json.RawMessage `json:"questions"`
	}
	if err := json.Unmarshal(request, &req); err != nil {
		t.Fatal(err)
	}
	stateFile := filepath.Join(dir, "state.json")
	if err := os.WriteFile(stateFile, req.State, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
	}{
		{"request file", []string{"--model", predictModel, "--request", reqFile}, ""},
		{"request stdin", []string{"--model", predictModel, "--request", "-", "--batch-size", "1"}, string(request)},
		{"state file and inline questions", []string{"--model", predictModel, "--state", "@" + stateFile, "--questions", string(req.Questions)}, ""},
	} {
		// A Hub id must never reach the network from a test.
		t.Setenv("HF_HUB_OFFLINE", "1")
		var stdout, stderr bytes.Buffer
		err := runPredict(context.Background(), tc.args, strings.NewReader(tc.stdin), &stdout, &stderr)
		if err != nil {
			t.Errorf("%s: %v (%s)", tc.name, err, stderr.String())
			continue
		}
		if got := stdout.String(); got != answer+"\n" {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, answer)
		}
	}
}

func TestPredictCommandErrors(t *testing.T) {
	noul := `{"q": {"type": "noul", "instructions": "x"}}`
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no model", []string{"--state", "x", "--questions", noul}, "--model is required"},
		{"no input", []string{"--model", predictModel}, "give --request FILE, or --state with --questions or --preset"},
		{"questions and preset", []string{"--model", predictModel, "--state", "x", "--questions", noul, "--preset", "triage"}, "not both"},
		{"unknown preset", []string{"--model", predictModel, "--state", "x", "--preset", "nope"}, "use triage, email"},
		{"both inputs", []string{"--model", predictModel, "--request", "r.json", "--state", "x"}, "not both"},
		{"bad question", []string{"--model", predictModel, "--state", "x", "--questions", `{"q": {"type": "multi"}}`},
			"question 'q': unknown type 'multi'; use one of ['choice', 'noul', 'score']"},
		{"bad json", []string{"--model", predictModel, "--state", "x", "--questions", `{"q": `}, "invalid JSON"},
		{"missing request file", []string{"--model", predictModel, "--request", "no-such-request.json"}, "--request: open no-such-request.json: "},
		{"missing questions file", []string{"--model", predictModel, "--state", "x", "--questions", "no-such-questions.json"}, "--questions: open no-such-questions.json: "},
		{"missing model dir", []string{"--model", "./no/such/dir", "--state", "x", "--questions", noul}, "not a Laya checkpoint"},
		{"hub id offline, not cached", []string{"--model", "nobody/no-such-laya", "--state", "x", "--questions", noul}, "HF_HUB_OFFLINE"},
		{"bad batch size", []string{"--model", predictModel, "--batch-size", "-1", "--state", "x", "--questions", noul}, "batch size -1"},
		{"long and tournament", []string{"--model", predictModel, "--long", "--tournament", "--state", "x", "--questions", noul}, "give --long or --tournament, not both"},
		{"windows without long", []string{"--model", predictModel, "--max-windows", "3", "--state", "x", "--questions", noul}, "need --long"},
		{"too many windows", []string{"--model", predictModel, "--long", "--max-windows", "1000", "--state", "x", "--questions", noul}, "--max-windows 1000: want 1 to 256"},
		{"negative overlap", []string{"--model", predictModel, "--long", "--overlap", "-1", "--state", "x", "--questions", noul}, "--overlap -1"},
	} {
		// A Hub id must never reach the network from a test.
		t.Setenv("HF_HUB_OFFLINE", "1")
		var stdout, stderr bytes.Buffer
		err := runPredict(context.Background(), tc.args, strings.NewReader(""), &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want it to contain %q", tc.name, err, tc.want)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error spans lines: %q", tc.name, err)
		}
	}
}

func TestPredictHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := runPredict(context.Background(), []string{"-h"}, strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "Example:") || !strings.Contains(stderr.String(), "--request") {
		t.Errorf("help lacks an example: %s", stderr.String())
	}
}

// TestSampleRequest checks that testdata/requests/email.json, used by the README, runs.
func TestSampleRequest(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := runPredict(context.Background(), []string{"--model", predictModel, "--request", "../../testdata/requests/email.json"},
		strings.NewReader(""), &stdout, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	out := stdout.String()
	for _, want := range []string{`{"model": "laya-rl-agent", "answers": {"department": {"type": "choice"`, `"urgency": {"type": "score"`, `"refund": {"type": "noul"`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s: %s", want, out)
		}
	}
}

// TestPredictPreset checks --preset gives the same answer as passing the
// preset's questions as JSON, and that every preset id is answered in order.
func TestPredictPreset(t *testing.T) {
	ctx := context.Background()
	state := "My order arrived broken and I want a refund today, this is the third time!"
	for _, name := range []string{"triage", "email", "guard", "moderation", "router"} {
		t.Run(name, func(t *testing.T) {
			qs, err := presetQuestions(name)
			if err != nil {
				t.Fatal(err)
			}
			var viaPreset, viaJSON, stderr bytes.Buffer
			if err := runPredict(ctx, []string{"--model", predictModel, "--state", state, "--preset", name}, nil, &viaPreset, &stderr); err != nil {
				t.Fatalf("%v (%s)", err, stderr.String())
			}
			if err := runPredict(ctx, []string{"--model", predictModel, "--state", state, "--questions", qs.Value().String()}, nil, &viaJSON, &stderr); err != nil {
				t.Fatal(err)
			}
			if viaPreset.String() != viaJSON.String() {
				t.Errorf("--preset %s:\n%s\n--questions with the same JSON:\n%s", name, viaPreset.String(), viaJSON.String())
			}
			last := -1
			for _, q := range qs {
				at := strings.Index(viaPreset.String(), `"`+q.ID+`": {"type"`)
				if at <= last {
					t.Errorf("answer %q missing or out of order in %s", q.ID, viaPreset.String())
				}
				last = at
			}
		})
	}
	if _, err := presetQuestions("nope"); err == nil || !strings.Contains(err.Error(), "triage") {
		t.Errorf("unknown preset error %v should list the presets", err)
	}
}

// TestPredictEmptyState: an empty --state is an empty text state, not a missing flag.
// The answer is upstream's own for the empty_state golden (real-en).
func TestPredictEmptyState(t *testing.T) {
	request, answer := goldenPredictCase(t, "empty_state")
	var req struct {
		State     string          `json:"state"`
		Questions json.RawMessage `json:"questions"`
	}
	if err := json.Unmarshal(request, &req); err != nil || req.State != "" {
		t.Fatalf("empty_state golden: state %q, %v", req.State, err)
	}
	ctx := context.Background()
	var stdout, stderr bytes.Buffer
	if err := runPredict(ctx, []string{"--model", predictModel, "--state", "", "--questions", string(req.Questions)}, nil, &stdout, &stderr); err != nil {
		t.Fatalf("%v (%s)", err, stderr.String())
	}
	if got := stdout.String(); got != answer+"\n" {
		t.Errorf("--state '':\n got %s\nwant %s", got, answer)
	}
	// With a preset: every email question is answered about the empty state.
	stdout.Reset()
	if err := runPredict(ctx, []string{"--model", predictModel, "--state", "", "--preset", "email"}, nil, &stdout, &stderr); err != nil {
		t.Fatalf("--state '' --preset email: %v (%s)", err, stderr.String())
	}
	qs, err := presetQuestions("email")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		if !strings.Contains(stdout.String(), `"`+q.ID+`": {"type"`) {
			t.Errorf("--state '' --preset email: no answer for %q in %s", q.ID, stdout.String())
		}
	}
}

// --long and --tournament give the library's PredictLong and PredictTournament
// answers; on a state that fits, --long is plain predict.
func TestPredictLongAndTournament(t *testing.T) {
	ctx := context.Background()
	agent, err := laya.Load(ctx, predictModel)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	noul := `{"refund": {"type": "noul", "instructions": "Does the customer ask for money back?"}}`
	qs, err := laya.ParseQuestions([]byte(noul))
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("I was charged twice for my order and nobody answers my emails. ", 60)
	labels := make([]string, 20)
	for i := range labels {
		labels[i] = fmt.Sprintf("%q", fmt.Sprintf("team %d", i))
	}
	choice := `{"team": {"type": "choice", "instructions": "Which team?", "criteria": [` + strings.Join(labels, ", ") + `]}}`
	cqs, err := laya.ParseQuestions([]byte(choice))
	if err != nil {
		t.Fatal(err)
	}
	want := func(res *laya.Result, err error) string {
		if err != nil {
			t.Fatal(err)
		}
		return res.String() + "\n"
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--long", "--max-windows", "3", "--state", long, "--questions", noul},
			want(agent.PredictLong(ctx, laya.Request{State: laya.Text(long), Questions: qs}, laya.LongOptions{MaxWindows: 3}))},
		{[]string{"--long", "--state", "short", "--questions", noul}, want(agent.Predict(ctx, laya.Text("short"), qs))},
		{[]string{"--long", "--max-windows", "2", "--preset", "triage", "--state", `{"message": "` + long + `"}`},
			want(agent.PredictLong(ctx, laya.Request{State: laya.ValueState(pyjson.Object(pyjson.Member{Key: "message", Value: pyjson.String(long)})),
				Questions: preset.TriageQuestions()}, laya.LongOptions{MaxWindows: 2}))},
		{[]string{"--tournament", "--state", "refund please", "--questions", choice},
			want(agent.PredictTournament(ctx, laya.Request{State: laya.Text("refund please"), Questions: cqs}))},
	} {
		var stdout, stderr bytes.Buffer
		if err := runPredict(ctx, append([]string{"--model", predictModel}, tc.args...), strings.NewReader(""), &stdout, &stderr); err != nil {
			t.Fatalf("%v: %v", tc.args[:2], err)
		}
		if stdout.String() != tc.want {
			t.Errorf("%v:\n got %s\nwant %s", tc.args[:2], stdout.String(), tc.want)
		}
	}
}
