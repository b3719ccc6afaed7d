package laya

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/laya-metal/laya/internal/phase"
	"github.com/laya-metal/laya/pyjson"
)

// TestPredictBatchMatchesPredict answers every golden request of each checkpoint in one
// PredictBatch call, with an invalid request in the middle, and requires each answer to
// be byte-identical to Predict's answer for that request alone: rows of different
// requests share padded batches and must not see each other.
func TestPredictBatchMatchesPredict(t *testing.T) {
	ctx := context.Background()
	for _, m := range []struct{ checkpoint, golden string }{{"tiny-ml", "tiny-ml"}, {"real-en", "real-en"}} {
		t.Run(m.checkpoint, func(t *testing.T) {
			for _, batchSize := range []int{16, 3} {
				agent, err := Load(ctx, checkpointDir(m.checkpoint), WithBatchSize(batchSize))
				if err != nil {
					t.Fatal(err)
				}
				defer agent.Close()
				var reqs []Request
				var want []string
				for _, c := range loadRequestCases(t, m.golden) {
					req, err := ParseRequest([]byte(c.request.String()))
					if err != nil {
						t.Fatal(err)
					}
					res, err := agent.Predict(ctx, req.State, req.Questions)
					if err != nil {
						t.Fatalf("%s: %v", c.name, err)
					}
					reqs = append(reqs, Request{State: req.State, Questions: req.Questions})
					want = append(want, res.String())
				}
				bad := len(reqs) / 2
				reqs = slices.Insert(reqs, bad, Request{State: Text("x"), Questions: Questions{{ID: "q", Definition: pyjson.Object(pyjson.Member{Key: "type", Value: pyjson.String("multi")})}}})
				want = slices.Insert(want, bad, "")
				got, err := agent.PredictBatch(ctx, reqs)
				if err != nil {
					t.Fatal(err)
				}
				for i, a := range got {
					if i == bad {
						if !errors.Is(a.Err, ErrInvalidQuestion) {
							t.Errorf("request %d: err %v, want ErrInvalidQuestion", i, a.Err)
						}
						continue
					}
					if a.Err != nil {
						t.Errorf("batch %d request %d: %v", batchSize, i, a.Err)
						continue
					}
					if s := a.Result.String(); s != want[i] {
						t.Errorf("batch %d request %d:\n got %s\nwant %s", batchSize, i, s, want[i])
					}
				}
			}
		})
	}
}

// TestPredictBatchUsage checks the truncation report against counts made by hand from
// the full tokenization: which questions lost state tokens, and how many.
func TestPredictBatchUsage(t *testing.T) {
	ctx := context.Background()
	agent, err := Load(ctx, checkpointDir("real-en"))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	qs := Questions{
		{ID: "short", Definition: NoulQuestion("Is it urgent?")},
		{ID: "long", Definition: ChoiceQuestion("Which team should handle this message from the customer, given everything it says?", "billing", "technical", "sales", "other")},
	}
	full := func(s State) int { return len(agent.tok.Encode(s.Serialize())) }
	for _, tc := range []struct {
		name  string
		state State
	}{
		{"short text", Text("refund please")},
		{"long text", Text(strings.Repeat("I was charged twice and want a refund today. ", 40))},
		{"long list", ValueState(pyjson.Array(pyjson.String("hello"), pyjson.String(strings.Repeat("still waiting on my refund. ", 60))))},
	} {
		for _, count := range []bool{false, true} {
			res, err := agent.PredictBatch(ctx, []Request{{State: tc.state, Questions: qs, CountStateTokens: count}})
			if err != nil || res[0].Err != nil {
				t.Fatalf("%s: %v %v", tc.name, err, res[0].Err)
			}
			u := res[0].State
			total := full(tc.state)
			var wantQs []string
			dropped := 0
			for _, q := range qs {
				prepared, _ := prepareQuestions(Questions{q})
				ids, left := agent.builder.encodeState(tc.state)
				r := agent.builder.build(prepared[0], ids, left)
				kept := len(r.IDs) - r.PrefixLength - 1
				if kept < total {
					wantQs = append(wantQs, q.ID)
				}
				dropped = max(dropped, total-kept)
			}
			if u.Truncated != (len(wantQs) > 0) || !slices.Equal(u.TruncatedQuestions, wantQs) {
				t.Errorf("%s: truncated %v %v, want %v", tc.name, u.Truncated, u.TruncatedQuestions, wantQs)
			}
			if count && (!u.Counted || u.StateTokens != total || u.StateTokensDropped != dropped) {
				t.Errorf("%s: counts %+v, want state_tokens %d dropped %d", tc.name, u, total, dropped)
			}
			if !count && u.Counted {
				t.Errorf("%s: counted without CountStateTokens", tc.name)
			}
		}
	}
}

// TestPredictRequestWindows holds PredictRequest to the token windows it is given: with
// a state far longer than any window, every question's row fills max_len exactly, so
// the usage counts max_len tokens per question; a window the checkpoint cannot hold,
// or a negative one, is an invalid request.
func TestPredictRequestWindows(t *testing.T) {
	ctx := context.Background()
	agent, err := Load(ctx, checkpointDir("tiny-en"))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	qs := Questions{
		{ID: "urgent", Definition: NoulQuestion("Is it urgent?")},
		{ID: "team", Definition: ChoiceQuestion("Which team?", "billing", "technical", "sales")},
	}
	state := Text(strings.Repeat("I was charged twice and want a refund today. ", 200))
	for _, maxLen := range []int{40, 64, 100} {
		res, err := agent.PredictRequest(ctx, Request{State: state, Questions: qs, MaxLen: maxLen})
		if err != nil {
			t.Fatalf("max_len %d: %v", maxLen, err)
		}
		if got, want := res.Usage.InputTokens, maxLen*len(qs); got != want {
			t.Errorf("max_len %d: %d input tokens, want %d", maxLen, got, want)
		}
	}
	for _, req := range []Request{
		{State: state, Questions: qs, MaxLen: agent.net.maxLen + 1},
		{State: state, Questions: qs, MaxLen: -1},
		{State: state, Questions: qs, HeadMaxLen: -1},
	} {
		if _, err := agent.PredictRequest(ctx, req); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("max_len %d, head_max_len %d: %v, want ErrInvalidRequest", req.MaxLen, req.HeadMaxLen, err)
		}
	}
}

// A request whose context carries phase.Times gets the time of each of its
// phases added: every phase took some, and together no more than the call.
func TestPredictPhases(t *testing.T) {
	ctx := context.Background()
	agent, err := Load(ctx, checkpointDir("tiny-en"))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	var pt phase.Times
	start := time.Now()
	if _, err := agent.PredictJSON(phase.With(ctx, &pt), []byte(`{"state": {"body": "refund the duplicate charge"}, "questions": {"q": {"type": "noul", "instructions": "A refund?"}}}`)); err != nil {
		t.Fatal(err)
	}
	wall := time.Since(start)
	if pt[phase.Parse] <= 0 || pt[phase.Prepare] <= 0 || pt[phase.Forward] <= 0 || pt[phase.Assemble] <= 0 ||
		pt[phase.Parse]+pt[phase.Prepare]+pt[phase.Forward]+pt[phase.Assemble] > wall {
		t.Errorf("phases %v, call %v", pt, wall)
	}
}
