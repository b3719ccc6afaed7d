package laya

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/laya-metal/laya/heads"
	"github.com/laya-metal/laya/pyjson"
)

// A state that fits every row is answered as Predict answers it, byte for byte,
// and so as upstream's predict: the golden requests whose state no row cut give
// upstream's answer_json.
func TestPredictLongFitsIsUpstreamPredict(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"tiny-en", "tiny-ml", "real-en"} {
		t.Run(name, func(t *testing.T) {
			agent, err := Load(ctx, checkpointDir(name))
			if err != nil {
				t.Fatal(err)
			}
			defer agent.Close()
			checked := 0
			for _, c := range loadRequestCases(t, name) {
				fits := true
				for _, r := range c.rows {
					fits = fits && r.prefixLength+len(c.stateIDs)+1 <= agent.builder.maxLen
				}
				if !fits {
					continue
				}
				req, err := ParseRequest([]byte(c.request.String()))
				if err != nil {
					t.Fatal(err)
				}
				res, err := agent.PredictLong(ctx, req, LongOptions{})
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				got := res.String()
				if got != c.answerJSON {
					// The 4th-decimal boundary rule of TestAgentGoldens.
					if _, ok := onlyBoundaryFlips(t, got, c, ourUnrounded(t, agent, c)); !ok {
						t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.answerJSON)
					}
				}
				// And Predict's own answer, byte for byte.
				want, err := agent.PredictRequest(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				if got != want.String() {
					t.Errorf("%s: PredictLong\n%s\nPredict\n%s", c.name, got, want)
				}
				checked++
			}
			if checked < 3 {
				t.Fatalf("only %d golden requests fit their rows", checked)
			}
		})
	}
}

// refWindows is the window rule written out independently: n tokens, windows
// of room tokens every stride tokens, the last one flush with the end, the
// first budget kept (the last budget for a list state).
func refWindows(n, room, overlap, budget int, fromEnd bool) (starts []int, cut bool) {
	if n <= room {
		return []int{0}, false
	}
	if overlap == 0 {
		overlap = room / 4
	}
	stride := room - overlap
	count := 1 + (n-room+stride-1)/stride
	for i := range count {
		starts = append(starts, min(i*stride, n-room))
	}
	if count <= budget {
		return starts, false
	}
	if !fromEnd {
		return starts[:budget], true
	}
	starts = starts[:0]
	for i := budget - 1; i >= 0; i-- {
		starts = append(starts, n-room-i*stride)
	}
	return starts, true
}

// longQuestions has one question of each type, so each combination rule runs.
func longQuestions() Questions {
	return Questions{
		{ID: "fraud", Definition: NoulQuestion("Does the text mention fraud?")},
		{ID: "severity", Definition: ScoreQuestion("How severe is the worst problem?", "none", "minor", "major", "critical")},
		{ID: "topic", Definition: ChoiceQuestion("What is the text about?", "billing", "shipping", "login", "other")},
	}
}

func longText(sentences int) string {
	words := []string{"The invoice for March was charged twice and the customer asked for a refund.",
		"Shipping took three weeks and the box arrived damaged.",
		"Nobody could log in after the password reset on Friday.",
		"The account shows a payment from an unknown card, which looks like fraud."}
	var b strings.Builder
	for i := range sentences {
		b.WriteString(words[(i*7+i/3)%len(words)])
		b.WriteByte(' ')
	}
	return b.String()
}

// TestPredictLongMatchesReference runs the windows of the reference rule
// through the network directly and combines them by the documented rules, and
// requires PredictLong's answers and usage to be the same.
func TestPredictLongMatchesReference(t *testing.T) {
	ctx := context.Background()
	turns := make([]Value, 40)
	for i := range turns {
		turns[i] = pyjson.Object(pyjson.Member{Key: "role", Value: pyjson.String([]string{"user", "agent"}[i%2])},
			pyjson.Member{Key: "content", Value: pyjson.String(longText(3 + i%4))})
	}
	for _, tc := range []struct {
		checkpoint string
		state      State
		opts       LongOptions
	}{
		{"tiny-en", Text(longText(60)), LongOptions{}},
		{"tiny-en", Text(longText(60)), LongOptions{Overlap: 7, MaxWindows: 3}},
		{"tiny-ml", Text(longText(45)), LongOptions{Overlap: 1}},
		{"tiny-en", ValueState(pyjson.Array(turns...)), LongOptions{MaxWindows: 4}},
		{"tiny-ml", ValueState(pyjson.Array(turns...)), LongOptions{}},
		{"real-en", ValueState(pyjson.Object(pyjson.Member{Key: "subject", Value: pyjson.String("Account")},
			pyjson.Member{Key: "body", Value: pyjson.String(longText(30))})), LongOptions{MaxWindows: 5}},
	} {
		agent, err := Load(ctx, checkpointDir(tc.checkpoint), WithBatchSize(5))
		if err != nil {
			t.Fatal(err)
		}
		qs := longQuestions()
		got, err := agent.PredictLong(ctx, Request{State: tc.state, Questions: qs}, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		budget := tc.opts.MaxWindows
		if budget == 0 {
			budget = DefaultMaxWindows
		}
		// The whole state's tokens, as the model reads it.
		ids := agent.tok.Encode(strings.ReplaceAll(tc.state.Serialize(), agent.builder.sp.MaskToken, " "))
		fromEnd := tc.state.isList()
		inputTokens, multi := 0, 0
		for i, q := range qs {
			iq := toInternal(q.ID, q.Definition)
			empty := agent.builder.build(iq, nil, fromEnd)
			room := agent.builder.maxLen - empty.PrefixLength - 1
			starts, cut := refWindows(len(ids), room, tc.opts.Overlap, budget, fromEnd)
			var rows []forwardRow
			for _, s := range starts {
				rowIDs := append(append([]int(nil), empty.IDs[:empty.PrefixLength]...), ids[s:s+room]...)
				rowIDs = append(rowIDs, agent.builder.sp.SEP)
				rows = append(rows, forwardRow{IDs: rowIDs, Markers: empty.Markers, QType: iq.qtype})
				inputTokens += len(rowIDs)
			}
			outs, err := agent.net.forward(ctx, rows)
			if err != nil {
				t.Fatal(err)
			}
			var best answer
			bestKey := -1.0
			for j, out := range outs {
				a, err := decodeAnswer(iq, out.Logits, out.ActProbs, agent.temps)
				if err != nil {
					t.Fatal(err)
				}
				key := map[heads.QType]func() float64{
					heads.Noul:   func() float64 { return a.noul.Noul },
					heads.Score:  func() float64 { return a.score.Score },
					heads.Choice: func() float64 { return a.choice.AnswerConfidence },
				}[iq.qtype]()
				if j == 0 || key > bestKey {
					best, bestKey = a, key
				}
			}
			if g, w := got.answers[i].value().String(), best.value().String(); g != w {
				t.Errorf("%s %s: answer\n got %s\nwant %s", tc.checkpoint, q.ID, g, w)
			}
			if len(starts) > 1 {
				w := got.Usage.Windows[multi]
				multi++
				covered := starts[len(starts)-1] + room - starts[0]
				if w.QuestionID != q.ID || w.Windows != len(starts) || w.WindowTokens != room || w.StateTokens != covered || w.Truncated != cut {
					t.Errorf("%s %s: usage %+v, want %d windows of %d covering %d, truncated %v", tc.checkpoint, q.ID, w, len(starts), room, covered, cut)
				}
			}
		}
		if multi != len(got.Usage.Windows) || multi == 0 {
			t.Errorf("%s: %d questions read in windows, usage lists %d", tc.checkpoint, multi, len(got.Usage.Windows))
		}
		if got.Usage.InputTokens != inputTokens {
			t.Errorf("%s: input_tokens %d, want %d", tc.checkpoint, got.Usage.InputTokens, inputTokens)
		}
		if !strings.Contains(got.String(), `"windows": {"fraud": {"windows": `) {
			t.Errorf("%s: usage JSON has no windows: %s", tc.checkpoint, got.String())
		}
		agent.Close()
	}
}

func TestPredictLongOptions(t *testing.T) {
	ctx := context.Background()
	agent, err := Load(ctx, checkpointDir("tiny-en"))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	req := Request{State: Text(longText(20)), Questions: longQuestions()}
	for _, opts := range []LongOptions{{MaxWindows: -1}, {MaxWindows: MaxLongWindows + 1}, {Overlap: -3}} {
		if _, err := agent.PredictLong(ctx, req, opts); !errors.Is(err, ErrInvalidLong) {
			t.Errorf("%+v: err %v, want ErrInvalidLong", opts, err)
		}
	}
	// An overlap as long as the window still advances.
	if _, err := agent.PredictLong(ctx, req, LongOptions{Overlap: 10000, MaxWindows: 2}); err != nil {
		t.Errorf("overlap past the window: %v", err)
	}
	// A hostile state costs the scan budget, not its size.
	huge := Request{State: Text(strings.Repeat("fraud everywhere and nothing else. ", 200000)), Questions: longQuestions()}
	res, err := agent.PredictLong(ctx, huge, LongOptions{MaxWindows: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range res.Usage.Windows {
		if w.Windows != 2 || !w.Truncated {
			t.Errorf("huge state: %+v, want 2 windows, truncated", w)
		}
	}
	if _, err := agent.PredictLong(ctx, Request{State: Text("x"), Questions: Questions{{ID: "q", Definition: pyjson.Object()}}}, LongOptions{}); !errors.Is(err, ErrInvalidQuestion) {
		t.Errorf("bad question: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := agent.PredictLong(cancelled, req, LongOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if res, err := agent.PredictLong(ctx, Request{State: Text("x")}, LongOptions{}); err != nil || len(res.answers) != 0 {
		t.Errorf("no questions: %v", err)
	}
}
