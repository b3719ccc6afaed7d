package router_test

import (
	"context"
	"fmt"
	"log"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/router"
	"github.com/laya-metal/laya/structured"
)

// A router answers a schema through its Predictor, and the decision says where it
// went. The schema plans to the questions of golden case "choice_list", so the values
// are upstream's answers on the bundled checkpoint.
func ExampleRouter_Predictor() {
	r, err := router.New(router.WithModels(map[string]string{"english": "../testdata/oracle/checkpoints/real-en"}))
	if err != nil {
		log.Fatal(err)
	}
	defer r.Unload()
	state, _ := laya.JSONState([]byte(`{"from": "user@example.com", "subject": "Duplicate charge on invoice #4411",
	  "body": "We were billed twice for March. Please refund the duplicate today or we will cancel our plan."}`))
	d, err := structured.Decide(context.Background(), r.Predictor(router.RouteOptions{Lang: "en"}), state, []byte(`{"properties": {
	  "dept": {"enum": ["billing", "technical", "sales"], "description": "Route this ticket."},
	  "two": {"enum": ["yes", "no"], "description": "Two-way?"}}}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d.Values)
	model, _ := d.Routing.Get("model")
	fmt.Println(model)
	// Output:
	// {"dept": "technical", "two": "yes"}
	// "english"
}
