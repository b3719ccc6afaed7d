package router_test

import (
	"context"
	"fmt"
	"log"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/preset"
	"github.com/laya-metal/laya/pyjson"
	"github.com/laya-metal/laya/router"
)

// Route picks a checkpoint for a request without loading one: German text
// goes to the multilingual checkpoint (laya-mlx's decision for this state,
// testdata/router/route.json case "german").
func ExampleRouter_Route() {
	r, err := router.New(router.WithMaxLoaded(1))
	if err != nil {
		log.Fatal(err)
	}
	state := laya.Text("Mein Konto wurde zweimal belastet, bitte erstatten Sie mir den Betrag.")
	decision, err := r.Route(state, preset.TriageQuestions(), router.RouteOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(decision.Model, decision.Repo)
	fmt.Println(decision.Reason)
	// Output:
	// multilingual convaiinnovations/laya/multilingual
	// Latin script but language looks like 'de', not English
}

// Predict routes, loads the chosen checkpoint on first use and answers on
// it; here the english model is the bundled test checkpoint, and the answer
// is upstream's for this request (golden case "lang_en").
func ExampleRouter_Predict() {
	r, err := router.New(router.WithModels(map[string]string{"english": "../testdata/oracle/checkpoints/real-en"}))
	if err != nil {
		log.Fatal(err)
	}
	defer r.Unload()
	questions := laya.Questions{{ID: "refund", Definition: laya.NoulQuestion("Does the customer ask for money back?")}}
	state := laya.ValueState(pyjson.Object(pyjson.Member{Key: "message",
		Value: pyjson.String("I was charged twice for invoice 4411, please refund it today.")}))
	res, err := r.Predict(context.Background(), state, questions, router.RouteOptions{Lang: "en"})
	if err != nil {
		log.Fatal(err)
	}
	refund, _ := res.Noul("refund")
	fmt.Println(res.Routing.Model, res.Routing.Reason)
	fmt.Println(refund.Noul, r.Loaded())
	// Output:
	// english explicit lang='en'
	// 0.5627 [english]
}
