package router_test

import (
	"context"
	"fmt"
	"log"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/router"
)

// A checkpoint of your own sits beside the built-ins: requests name it, and
// it is loaded, evicted and unloaded like them.
func ExampleWithModel() {
	r, err := router.New(router.WithModel("support-bot", "../testdata/oracle/checkpoints/tiny-en"))
	if err != nil {
		log.Fatal(err)
	}
	defer r.Unload()
	qs := laya.Questions{{ID: "refund", Definition: laya.NoulQuestion("Does the customer ask for money back?")}}
	res, err := r.Predict(context.Background(), laya.Text("Please refund me."), qs, router.RouteOptions{Model: "support-bot"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Routing.Model, res.Routing.Reason)
	fmt.Println(r.Models()["support-bot"], r.Loaded())
	// Output:
	// support-bot explicit model='support-bot'
	// ../testdata/oracle/checkpoints/tiny-en [support-bot]
}
