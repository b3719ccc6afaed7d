package laya_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/laya-metal/laya"
)

// A state longer than a question's row is read in windows: the noul keeps
// its highest P(true) across them, and usage says how the state was read.
func ExampleAgent_PredictLong() {
	ctx := context.Background()
	agent, err := laya.Load(ctx, checkpoint)
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()
	ticket := strings.Repeat("The customer called again about the late delivery. ", 30) +
		"At the end of the call she asked for her money back."
	req := laya.Request{State: laya.Text(ticket), Questions: laya.Questions{
		{ID: "refund", Definition: laya.NoulQuestion("Does the customer ask for money back?")},
	}}
	res, err := agent.PredictLong(ctx, req, laya.LongOptions{MaxWindows: 8})
	if err != nil {
		log.Fatal(err)
	}
	w := res.Usage.Windows[0]
	fmt.Printf("%s: %d windows of %d tokens, covering %d, truncated %v\n", w.QuestionID, w.Windows, w.WindowTokens, w.StateTokens, w.Truncated)
	// Output:
	// refund: 3 windows of 126 tokens, covering 283, truncated false
}

// A choice of 40 labels is played in groups of at most 16: three groups,
// then a final between their winners.
func ExampleAgent_PredictTournament() {
	ctx := context.Background()
	agent, err := laya.Load(ctx, checkpoint)
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()
	labels := make([]string, 40)
	for i := range labels {
		labels[i] = fmt.Sprintf("intent %d", i)
	}
	req := laya.Request{State: laya.Text("I was charged twice, please refund me."), Questions: laya.Questions{
		{ID: "intent", Definition: laya.ChoiceQuestion("Which intent is this?", labels...)},
	}}
	res, err := agent.PredictTournament(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	u := res.Usage.Tournament[0]
	intent, _ := res.Choice("intent")
	fmt.Printf("%d labels, %d groups, %d rounds, %d rows; %d probabilities\n", u.Labels, u.Groups, u.Rounds, u.Rows, len(intent.Probabilities))
	// Output:
	// 40 labels, 3 groups, 2 rounds, 4 rows; 40 probabilities
}
