package laya_test

import (
	"context"
	"fmt"
	"log"
	"math"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/pyjson"
)

// The examples run on the bundled checkpoint testdata/oracle/checkpoints/real-en
// (upstream's English model); every printed number and JSON text is the
// answer upstream Laya gave for the same request
// (testdata/oracle/goldens/real-en/cases.json, cases "lang_en", "email",
// "noul_labels" and "choice_list"), so an Example fails when the port drifts.

const checkpoint = "testdata/oracle/checkpoints/real-en" // or "convaiinnovations/laya"

// emailRequest is the golden case "email".
const emailRequest = `{"state": {"from": "user@example.com", "subject": "Duplicate charge on invoice #4411",
  "body": "We were billed twice for March. Please refund the duplicate today or we will cancel our plan."},
 "questions": {
  "q0": {"type": "choice", "instructions": "Which department should handle this email?",
         "criteria": {"billing": "invoices, payments, refunds", "technical": "bugs, outages, system errors",
                      "sales": "pricing, new contracts", "other": "everything else"}},
  "q1": {"type": "score", "instructions": "How urgent is this request?",
         "criteria": ["not urgent", "soon", "critical deadline or blocking issue"]},
  "q2": {"type": "noul", "instructions": "Does the customer ask for money back?"}}}`

// Load a checkpoint, ask three typed questions about one state in one
// encoder pass, read the answers by kind.
func Example() {
	ctx := context.Background()
	agent, err := laya.Load(ctx, checkpoint)
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()

	questions := laya.Questions{
		{ID: "department", Definition: laya.ChoiceWithCriteria("Which department should handle this email?",
			laya.Criterion{Label: "billing", Description: "invoices, payments, refunds"},
			laya.Criterion{Label: "technical", Description: "bugs, outages, system errors"},
			laya.Criterion{Label: "sales", Description: "pricing, new contracts"},
			laya.Criterion{Label: "other", Description: "everything else"})},
		{ID: "urgency", Definition: laya.ScoreQuestion("How urgent is this request?",
			"not urgent", "soon", "critical deadline or blocking issue")},
		{ID: "refund", Definition: laya.NoulQuestion("Does the customer ask for money back?")},
	}
	state := laya.ValueState(pyjson.Object(pyjson.Member{Key: "message",
		Value: pyjson.String("I was charged twice for invoice 4411, please refund it today.")}))
	res, err := agent.Predict(ctx, state, questions)
	if err != nil {
		log.Fatal(err) // a *laya.QuestionError names the question and field
	}
	dept, _ := res.Choice("department")
	urgency, _ := res.Score("urgency")
	refund, _ := res.Noul("refund")
	fmt.Println(dept.Choice, urgency.Score, refund.Noul, res.Usage.InputTokens)
	// Output:
	// billing 0.2727 0.5627 170
}

// PredictJSON takes a request as upstream's predict does and keeps the order
// of its questions and criteria; the result prints as upstream's
// json.dumps(result), byte for byte.
func ExampleAgent_PredictJSON() {
	agent, err := laya.Load(context.Background(), checkpoint)
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()
	res, err := agent.PredictJSON(context.Background(), []byte(emailRequest))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res)
	// Output:
	// {"model": "laya-rl-agent", "answers": {"q0": {"type": "choice", "choice": "sales", "probabilities": {"billing": 0.3334, "technical": 0.1829, "sales": 0.4622, "other": 0.0216}, "confidence": 0.1946, "answer_confidence": 0.4622, "action": {"act_probability": 0.3813}}, "q1": {"type": "score", "score": 0.1504, "legend": {"0": "not urgent", "1": "soon", "2": "critical deadline or blocking issue"}, "probabilities": {"0": 0.8773, "1": 0.095, "2": 0.0277}, "confidence": 0.6015, "answer_confidence": 0.8773, "action": {"act_probability": 0.2879}}, "q2": {"type": "noul", "noul": 0.2421, "confidence": 0.7579, "answer_confidence": 0.7579, "action": {"act_probability": 0.8935}}}, "usage": {"input_tokens": 254, "output_tokens": 0}}
}

// predictEmail answers the golden "email" request.
func predictEmail() *laya.Result {
	agent, err := laya.Load(context.Background(), checkpoint)
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()
	res, err := agent.PredictJSON(context.Background(), []byte(emailRequest))
	if err != nil {
		log.Fatal(err)
	}
	return res
}

// Choice reads a choice answer: the chosen label, each option's calibrated
// probability in criteria order, and how concentrated they are.
func ExampleResult_Choice() {
	res := predictEmail()
	dept, err := res.Choice("q0")
	if err != nil {
		log.Fatal(err) // no question q0, or q0 is not a choice question
	}
	fmt.Println(dept.Choice, dept.AnswerConfidence, dept.Confidence)
	for _, p := range dept.Probabilities {
		fmt.Printf("%s %.4f\n", p.Label, p.Probability)
	}
	if _, err := res.Choice("q2"); err != nil {
		fmt.Println(err)
	}
	// Output:
	// sales 0.4622 0.1946
	// billing 0.3334
	// technical 0.1829
	// sales 0.4622
	// other 0.0216
	// laya: the answer is of another question type: question "q2" is a noul question, not choice
}

// Score reads a score answer: the expected level Σ i·p_i over the levels
// the criteria list, level 0 first.
func ExampleResult_Score() {
	urgency, err := predictEmail().Score("q1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(urgency.Score, urgency.Probabilities, urgency.ActProbability)
	fmt.Println(urgency.Legend[int(math.Round(urgency.Score))].Str())
	// Output:
	// 0.1504 [0.8773 0.095 0.0277] 0.2879
	// not urgent
}

// Noul reads a yes/no answer: P(true) and its confidence.
func ExampleResult_Noul() {
	refund, err := predictEmail().Noul("q2")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(refund.Noul, refund.Confidence, refund.Noul >= 0.5)
	// Output:
	// 0.2421 0.7579 false
}

// JSONState takes a structured state as raw JSON (an email object, a
// conversation list); the model reads it serialised as upstream's
// json.dumps, keys in the order given.
func ExampleJSONState() {
	state, err := laya.JSONState([]byte(`{"from": "user@example.com", "subject": "Duplicate charge on invoice #4411",
		"body": "We were billed twice for March. Please refund the duplicate today or we will cancel our plan."}`))
	if err != nil {
		log.Fatal(err)
	}
	questions, err := laya.ParseQuestions([]byte(`{
		"refund": {"type": "noul", "instructions": "Is a refund requested?",
		           "criteria": {"false": "no refund wanted", "true": "a refund is requested"},
		           "labels": {"false": "  no  ", "true": "yes"}},
		"esc": {"type": "noul", "instructions": "Escalate?", "labels": {"true": "ESCALATE", "false": "KEEP"}}}`))
	if err != nil {
		log.Fatal(err)
	}
	agent, err := laya.Load(context.Background(), checkpoint)
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()
	res, err := agent.Predict(context.Background(), state, questions)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(state.Serialize())
	fmt.Println(res)
	// Output:
	// {"from": "user@example.com", "subject": "Duplicate charge on invoice #4411", "body": "We were billed twice for March. Please refund the duplicate today or we will cancel our plan."}
	// {"model": "laya-rl-agent", "answers": {"refund": {"type": "noul", "noul": 0.0131, "confidence": 0.9869, "answer_confidence": 0.9869, "action": {"act_probability": 0.6971}}, "esc": {"type": "noul", "noul": 0.0393, "confidence": 0.9607, "answer_confidence": 0.9607, "action": {"act_probability": 0.8024}}}, "usage": {"input_tokens": 153, "output_tokens": 0}}
}

// PredictShortlist cuts a choice question with many labels to the k most
// similar to the request before the model reads it. This toy embedder
// ranks options in the order given (option i at angle i/10 from the query),
// so "marketing" is cut and the model answers the three labels of the
// golden case "choice_list".
func ExamplePredictShortlist() {
	agent, err := laya.Load(context.Background(), checkpoint)
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()
	embed := laya.EmbedderFunc(func(ctx context.Context, texts []string) ([][]float32, error) {
		vecs := [][]float32{{1, 0}} // the query
		for i := range texts[1:] {
			a := float64(i) / 10
			vecs = append(vecs, []float32{float32(math.Cos(a)), float32(math.Sin(a))})
		}
		return vecs, nil
	}) // laya.AgentEmbedder(agent, 0, 0) embeds with the checkpoint's encoder
	state, _ := laya.JSONState([]byte(`{"from": "user@example.com", "subject": "Duplicate charge on invoice #4411",
		"body": "We were billed twice for March. Please refund the duplicate today or we will cancel our plan."}`))
	questions := laya.Questions{{ID: "dept", Definition: laya.ChoiceQuestion("Route this ticket.",
		"billing", "technical", "sales", "marketing")}}
	res, err := laya.PredictShortlist(context.Background(), agent, state, questions, embed, 3)
	if err != nil {
		log.Fatal(err)
	}
	dept, _ := res.Choice("dept")
	fmt.Println(res.Shortlist[0].Labels, res.Shortlist[0].N)
	fmt.Println(dept.Choice, dept.Probabilities[0].Probability, dept.Probabilities[1].Probability, dept.Probabilities[2].Probability)
	// Output:
	// ["billing" "technical" "sales"] 4
	// technical 0.3991 0.4033 0.1977
}
