package laya

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/laya-metal/laya/pyjson"
)

// refGroups splits labels into ceil(n/16) groups whose sizes differ by at
// most one, the larger ones first: labels are dealt to the groups in turn to
// size them, then cut in order.
func refGroups(labels []int) [][]int {
	sizes := make([]int, int(math.Ceil(float64(len(labels))/16)))
	for i := range labels {
		sizes[i%len(sizes)]++
	}
	var out [][]int
	rest := labels
	for _, n := range sizes {
		out, rest = append(out, rest[:n]), rest[n:]
	}
	return out
}

// refTournament plays the tournament through the public API: every group is
// a Predict call of its own, with the choice restricted to the group's labels
// (the same instructions, the same criteria form), and the answer's
// probabilities are composed from the rounds' rounded probabilities.
func refTournament(t *testing.T, agent *Agent, state State, id string, def Value) (choice string, probs []float64, rounds, groups int) {
	t.Helper()
	ctx := context.Background()
	crit, _ := def.Get("criteria")
	var labels []pyjson.Member // list criteria keep Key "" and the label in Value
	if crit.Kind() == pyjson.ArrayKind {
		for _, v := range crit.Items() {
			labels = append(labels, pyjson.Member{Value: v})
		}
	} else {
		labels = crit.Members()
	}
	restricted := func(idx []int) Value {
		var c Value
		if crit.Kind() == pyjson.ArrayKind {
			items := make([]Value, len(idx))
			for i, j := range idx {
				items[i] = labels[j].Value
			}
			c = pyjson.Array(items...)
		} else {
			m := make([]pyjson.Member, len(idx))
			for i, j := range idx {
				m[i] = labels[j]
			}
			c = pyjson.Object(m...)
		}
		var out []pyjson.Member
		for _, m := range def.Members() {
			if m.Key == "criteria" {
				m.Value = c
			}
			out = append(out, m)
		}
		return pyjson.Object(out...)
	}
	labelKey := func(j int) string {
		if crit.Kind() == pyjson.ArrayKind {
			return pyjson.KeyText(labels[j].Value)
		}
		return labels[j].Key
	}
	type played struct {
		idx    []int
		p      []float64
		winner int
	}
	alive := make([]int, len(labels))
	for i := range alive {
		alive[i] = i
	}
	var history [][]played
	for {
		var round []played
		for _, idx := range refGroups(alive) {
			res, err := agent.Predict(ctx, state, Questions{{ID: id, Definition: restricted(idx)}})
			if err != nil {
				t.Fatal(err)
			}
			c, err := res.Choice(id)
			if err != nil {
				t.Fatal(err)
			}
			pl := played{idx: idx, p: make([]float64, len(idx))}
			for i, lp := range c.Probabilities {
				pl.p[i] = lp.Probability
				if lp.Label == c.Choice {
					pl.winner = idx[i]
				}
			}
			round = append(round, pl)
		}
		history = append(history, round)
		if len(round) == 1 {
			break
		}
		alive = alive[:0:0]
		for _, pl := range round {
			alive = append(alive, pl.winner)
		}
	}
	probs = make([]float64, len(labels))
	for r := len(history) - 1; r >= 0; r-- {
		for _, pl := range history[r] {
			scale := 1.0
			if r < len(history)-1 {
				scale = probs[pl.winner]
			}
			for i, j := range pl.idx {
				probs[j] = pl.p[i] * scale
			}
		}
	}
	return labelKey(history[len(history)-1][0].winner), probs, len(history), len(history[0])
}

func tournamentChoice(n int, dict bool) Value {
	if dict {
		m := make([]pyjson.Member, n)
		for i := range m {
			m[i] = pyjson.Member{Key: fmt.Sprintf("intent_%03d", i), Value: pyjson.String(fmt.Sprintf("the customer asks about topic %d", i))}
		}
		return pyjson.Object(pyjson.Member{Key: "type", Value: pyjson.String("choice")},
			pyjson.Member{Key: "instructions", Value: pyjson.String("Which intent is this?")},
			pyjson.Member{Key: "criteria", Value: pyjson.Object(m...)})
	}
	labels := make([]string, n)
	for i := range labels {
		labels[i] = fmt.Sprintf("label %d", i)
	}
	return ChoiceQuestion("Which label fits?", labels...)
}

// TestPredictTournamentMatchesReference plays choices of 17 to 300 labels and
// compares with the tournament played call by call through Predict.
func TestPredictTournamentMatchesReference(t *testing.T) {
	ctx := context.Background()
	state := Text("I was charged twice for my subscription this month, please refund the extra payment.")
	for _, tc := range []struct {
		checkpoint string
		n          int
		dict       bool
		rounds     int
	}{
		{"tiny-en", 17, false, 2}, {"tiny-en", 33, true, 2}, {"tiny-en", 64, false, 2},
		{"tiny-ml", 100, true, 2}, {"tiny-en", 200, false, 2}, {"tiny-ml", 300, false, 3},
	} {
		t.Run(fmt.Sprintf("%s/%d", tc.checkpoint, tc.n), func(t *testing.T) {
			agent, err := Load(ctx, checkpointDir(tc.checkpoint), WithBatchSize(7))
			if err != nil {
				t.Fatal(err)
			}
			defer agent.Close()
			def := tournamentChoice(tc.n, tc.dict)
			qs := Questions{{ID: "urgent", Definition: NoulQuestion("Is it urgent?")}, {ID: "intent", Definition: def}}
			got, err := agent.PredictTournament(ctx, Request{State: state, Questions: qs})
			if err != nil {
				t.Fatal(err)
			}
			c, err := got.Choice("intent")
			if err != nil {
				t.Fatal(err)
			}
			choice, probs, rounds, groups := refTournament(t, agent, state, "intent", def)
			if rounds != tc.rounds {
				t.Fatalf("reference played %d rounds, want %d", rounds, tc.rounds)
			}
			if c.Choice != choice {
				t.Errorf("choice %q, want %q", c.Choice, choice)
			}
			sum := 0.0
			for i, lp := range c.Probabilities {
				sum += lp.Probability
				// The reference multiplies rounded probabilities.
				if math.Abs(lp.Probability-probs[i]) > 2e-4 {
					t.Errorf("P(%s) = %v, want %v", lp.Label, lp.Probability, probs[i])
				}
			}
			if math.Abs(sum-1) > float64(tc.n)*1e-4 {
				t.Errorf("probabilities sum to %v", sum)
			}
			for _, lp := range c.Probabilities {
				if lp.Label == c.Choice && lp.Probability != c.AnswerConfidence {
					t.Errorf("answer_confidence %v, P(choice) %v", c.AnswerConfidence, lp.Probability)
				}
			}
			u := got.Usage.Tournament
			if len(u) != 1 || u[0].QuestionID != "intent" || u[0].Labels != tc.n || u[0].Groups != groups || u[0].Rounds != rounds {
				t.Errorf("usage %+v, want %d labels, %d groups, %d rounds", u, tc.n, groups, rounds)
			}
			// The other question is Predict's answer.
			plain, err := agent.Predict(ctx, state, qs[:1])
			if err != nil {
				t.Fatal(err)
			}
			gn, _ := got.Noul("urgent")
			pn, _ := plain.Noul("urgent")
			if gn != pn {
				t.Errorf("noul %+v, Predict %+v", gn, pn)
			}
			if !strings.Contains(got.String(), `"tournament": {"intent": {"labels": `) {
				t.Errorf("usage JSON: %s", got.String())
			}
		})
	}
}

func TestPredictTournamentSmallChoicesArePredict(t *testing.T) {
	ctx := context.Background()
	agent, err := Load(ctx, checkpointDir("tiny-ml"))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	for _, c := range loadRequestCases(t, "tiny-ml") {
		req, err := ParseRequest([]byte(c.request.String()))
		if err != nil {
			t.Fatal(err)
		}
		want, werr := agent.PredictRequest(ctx, req)
		got, gerr := agent.PredictTournament(ctx, req)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%s: errors %v / %v", c.name, gerr, werr)
		}
		if gerr == nil && len(got.Usage.Tournament) > 0 {
			continue // a choice of more than 16 labels: a tournament, not Predict
		}
		if werr == nil && got.String() != want.String() {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, want)
		}
	}
	too := Questions{{ID: "q", Definition: tournamentChoice(MaxTournamentLabels+1, false)}}
	if _, err := agent.PredictTournament(ctx, Request{State: Text("x"), Questions: too}); !errors.Is(err, ErrInvalidQuestion) {
		t.Errorf("too many labels: %v", err)
	}
}
