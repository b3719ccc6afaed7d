package router_test

import (
	"context"
	"fmt"
	"log"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/preset"
	"github.com/laya-metal/laya/router"
)

// Route picks a checkpoint for a request without loading one: German text
// goes to the multilingual checkpoint.
func ExampleRouter_Route() {
	r, err := router.New(router.WithMaxLoaded(1))
	if err != nil {
		log.Fatal(err)
	}
	decision, err := r.Route(laya.Text("Ich wurde zweimal belastet."), preset.TriageQuestions(), router.RouteOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(decision.Model, decision.Repo)
	fmt.Println(decision.Reason)
	// Output:
	// multilingual convaiinnovations/laya/multilingual
	// x
}

// Predict routes, loads the chosen checkpoint on first use and answers on
// it; here the english model is the bundled test checkpoint.
func ExampleRouter_Predict() {
	r, err := router.New(router.WithModels(map[string]string{"english": "../testdata/oracle/checkpoints/real-en"}))
	if err != nil {
		log.Fatal(err)
	}
	defer r.Unload()
	questions := laya.Questions{{ID: "refund", Definition: laya.NoulQuestion("Does the customer ask for money back?")}}
	res, err := r.Predict(context.Background(), laya.Text("I was charged twice. Please refund me."), questions,
		router.RouteOptions{Lang: "en"})
	if err != nil {
		log.Fatal(err)
	}
	refund, _ := res.Noul("refund")
	fmt.Println(res.Routing.Model, res.Routing.Reason)
	fmt.Printf("%.4f\n", refund.Noul)
	// Output:
	// x
}
