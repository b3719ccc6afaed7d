package laya_test

import (
	"context"
	"fmt"
	"log"

	"github.com/laya-metal/laya"
)

// The README's library example: load a checkpoint, ask three typed questions
// about one state, read the answers by kind.
func Example() {
	ctx := context.Background()
	agent, err := laya.Load(ctx, "testdata/oracle/checkpoints/real-en") // or "convaiinnovations/laya"
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()

	questions := laya.Questions{
		{ID: "department", Definition: laya.ChoiceWithCriteria("Which department should handle this email?",
			laya.Criterion{Label: "billing", Description: "invoices, payments, refunds"},
			laya.Criterion{Label: "technical", Description: "bugs, outages, system errors"},
			laya.Criterion{Label: "other", Description: "everything else"})},
		{ID: "urgency", Definition: laya.ScoreQuestion("How urgent is this request?",
			"not urgent", "soon", "critical deadline or blocking issue")},
		{ID: "refund", Definition: laya.NoulQuestion("Does the customer ask for money back?")},
	}
	res, err := agent.Predict(ctx, laya.Text("I was charged twice for March. Please refund me today."), questions)
	if err != nil {
		log.Fatal(err) // a *laya.QuestionError names the question and field
	}
	dept, _ := res.Choice("department")
	urgency, _ := res.Score("urgency")
	refund, _ := res.Noul("refund")
	fmt.Println(dept.Choice, urgency.Score, refund.Noul)
	fmt.Println(res) // upstream Laya's JSON, byte for byte
}
