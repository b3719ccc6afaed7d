package laya

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/laya-metal/laya/internal/forwardtest"
	"github.com/laya-metal/laya/internal/oracletest"
	"github.com/laya-metal/laya/pyjson"
)

type recordingModel struct{ got Questions }

func (m *recordingModel) Predict(ctx context.Context, s State, q Questions) (*Result, error) {
	m.got = q
	return &Result{}, nil
}

// axisEmbedder embeds texts by keyword: each text gets a fixed vector so the
// expected ranking can be worked out by hand.
func axisEmbedder(vectors map[string][]float32, calls *[][]string) Embedder {
	return EmbedderFunc(func(ctx context.Context, texts []string) ([][]float32, error) {
		*calls = append(*calls, texts)
		out := make([][]float32, len(texts))
		for i, t := range texts {
			out[i] = []float32{0, 0}
			for key, v := range vectors {
				if strings.Contains(t, key) {
					out[i] = v
				}
			}
		}
		return out, nil
	})
}

func TestPredictShortlist(t *testing.T) {
	questions := Questions{
		{"topic", ChoiceWithCriteria("Which topic?",
			Criterion{"alpha", "first"}, Criterion{"beta", "second"}, Criterion{"gamma", "third"}, Criterion{"delta", "fourth"})},
		{"urgent", NoulQuestion("Is it urgent?")},
		{"small", ChoiceQuestion("Pick", "x", "y")},
		{"listed", ChoiceQuestion("List", "red", "green", "blue")},
	}
	before := questions.Value().String()
	vectors := map[string][]float32{
		"Which topic?": {1, 0}, // the query
		"alpha":        {0, 1}, // orthogonal: 0
		"beta":         {1, 1}, // 0.7071
		"gamma":        {2, 2}, // 0.7071, a tie with beta: beta came first
		"delta":        {3, 0}, // 1
		"List":         {0, 1},
		"red":          {0, 0}, // zero vector scores 0
		"green":        {0, -1},
		"blue":         {1, 1},
	}
	var calls [][]string
	model := &recordingModel{}
	res, err := PredictShortlist(context.Background(), model, Text("the state"), questions, axisEmbedder(vectors, &calls), 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 {
		t.Fatalf("embedder called %d times, want once (only 'topic' has more than k labels)", len(calls))
	}
	wantTexts := []string{"Which topic?\nthe state", "alpha: first", "beta: second", "gamma: third", "delta: fourth"}
	if strings.Join(calls[0], "|") != strings.Join(wantTexts, "|") {
		t.Errorf("embedded texts = %q, want %q", calls[0], wantTexts)
	}
	if got, want := model.got[0].Definition.String(), `{"type": "choice", "instructions": "Which topic?", "criteria": {"delta": "fourth", "beta": "second", "gamma": "third"}}`; got != want {
		t.Errorf("reduced question = %s, want %s", got, want)
	}
	if questions.Value().String() != before {
		t.Error("the caller's questions were modified")
	}
	out := res.String()
	want := `"shortlist": {"topic": {"labels": ["delta", "beta", "gamma"], "scores": [1.0, 0.7071067811865475, 0.7071067811865475], "k": 3, "n": 4, "passthrough": false}, ` +
		`"small": {"labels": ["x", "y"], "scores": null, "k": 3, "n": 2, "passthrough": true}, ` +
		`"listed": {"labels": ["red", "green", "blue"], "scores": null, "k": 3, "n": 3, "passthrough": true}}}`
	if !strings.HasSuffix(out, want) {
		t.Errorf("result JSON =\n%s\nwant suffix\n%s", out, want)
	}

	// List criteria, a zero vector and a negative similarity, k = 2.
	calls = nil
	res, err = PredictShortlist(context.Background(), model, Text("s"), questions[3:], axisEmbedder(vectors, &calls), 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := model.got[0].Definition.String(); got != `{"type": "choice", "instructions": "List", "criteria": ["blue", "red"]}` {
		t.Errorf("reduced list question = %s", got)
	}
	if e := res.Shortlist[0]; e.Scores[1] != 0 {
		t.Errorf("zero vector scored %v, want 0", e.Scores[1])
	}
}

func TestPredictShortlistErrors(t *testing.T) {
	qs := Questions{{"c", ChoiceQuestion("Pick", "a", "b", "c")}}
	model := &recordingModel{}
	good := EmbedderFunc(func(ctx context.Context, texts []string) ([][]float32, error) {
		out := make([][]float32, len(texts))
		for i := range out {
			out[i] = []float32{1, float32(i)}
		}
		return out, nil
	})
	tests := []struct {
		name  string
		k     int
		embed Embedder
		want  error
		text  string
	}{
		{"k zero", 0, good, ErrInvalidShortlist, "k must be a positive integer"},
		{"too few vectors", 1, EmbedderFunc(func(ctx context.Context, texts []string) ([][]float32, error) {
			return [][]float32{{1}}, nil
		}), ErrInvalidShortlist, "1 vectors for 4 texts"},
		{"ragged vectors", 1, EmbedderFunc(func(ctx context.Context, texts []string) ([][]float32, error) {
			return [][]float32{{1, 2}, {1}, {1, 2}, {1, 2}}, nil
		}), ErrInvalidShortlist, "vector 1 has 1 dimensions"},
		{"empty vectors", 1, EmbedderFunc(func(ctx context.Context, texts []string) ([][]float32, error) {
			return make([][]float32, len(texts)), nil
		}), ErrInvalidShortlist, "empty vectors"},
		{"embedder error", 1, EmbedderFunc(func(ctx context.Context, texts []string) ([][]float32, error) {
			return nil, context.DeadlineExceeded
		}), context.DeadlineExceeded, "embedder"},
	}
	for _, tt := range tests {
		_, err := PredictShortlist(context.Background(), model, Text("s"), qs, tt.embed, tt.k)
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.text) {
			t.Errorf("%s: err = %v, want %v mentioning %q", tt.name, err, tt.want, tt.text)
		}
	}
	bad := Questions{{"c", pyjson.Object(pyjson.Member{Key: "type", Value: pyjson.String("choice")}, pyjson.Member{Key: "instructions", Value: pyjson.String("x")})}}
	if _, err := PredictShortlist(context.Background(), model, Text("s"), bad, good, 1); err == nil {
		t.Error("a choice question without criteria was accepted")
	}
}

// TestAgentEmbedderMeansUpstreamHiddenStates holds the embedder to upstream's
// own encoder output: the golden last_hidden_state of debug_hidden.json,
// mean-pooled in float64 here, must equal the embedding of the same ids, also
// when the row is batched before and after a longer one (padding must not
// leak in, packed rows must start where they do).
func TestAgentEmbedderMeansUpstreamHiddenStates(t *testing.T) {
	for _, m := range oracleModels {
		t.Run(m.checkpoint, func(t *testing.T) {
			dbg := oracletest.Debug(t, m.golden)
			want := make([]float64, len(dbg.LastHiddenState[0]))
			for _, tok := range dbg.LastHiddenState {
				for j, v := range tok {
					want[j] += v / float64(len(dbg.LastHiddenState))
				}
			}
			row := dbg.InputIDs
			longer := append(append([]int(nil), row...), row[1:9]...)
			n := loadNetwork(t, oracletest.Checkpoint(m.checkpoint), 16)
			// The same on streams that ask for 16-token buckets, as the
			// cuda backend's do: the batch gets a fill row nothing reads.
			var gathered []int
			bucketed := loadNetwork(t, oracletest.Checkpoint(m.checkpoint), 16)
			bucketed.be = forwardtest.Buckets(bucketed.be, 16, &gathered)
			for _, net := range []*network{n, bucketed} {
				// The row first, then second: its tokens start at 0 and
				// after the longer row's (packed) or at the padded stride.
				got, err := net.embed(context.Background(), [][]int{row, longer, row}, 3)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != 3 || len(got[0]) != len(want) {
					t.Fatalf("got %d vectors of %d, want 3 of %d", len(got), len(got[0]), len(want))
				}
				for _, at := range []int{0, 2} {
					for j := range want {
						if d := math.Abs(float64(got[at][j]) - want[j]); d > 5e-5 {
							t.Fatalf("vector %d, dim %d: %v, upstream mean %v (|Δ| %.2g)", at, j, got[at][j], want[j], d)
						}
					}
				}
			}
			if len(gathered) != 1 || gathered[0]%16 != 0 || gathered[0] < 3*len(row)+8 {
				t.Errorf("the bucketed encoder gathered %v tokens, want one batch of a multiple of 16 ≥ %d", gathered, 3*len(row)+8)
			}
		})
	}
}
