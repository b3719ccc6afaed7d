package laya_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/pyjson"
)

// A server that decodes a body to check its fields and sizes builds the request
// from the same value, without decoding the text twice.
func ExampleValueRequest() {
	body, err := pyjson.Parse([]byte(`{"state": "Where is my order?", "questions": {"late": {"type": "noul", "instructions": "Is the order late?"}}}`))
	if err != nil {
		log.Fatal(err)
	}
	qv, _ := body.Get("questions")
	fmt.Println("questions:", len(qv.Members())) // a limit check on the decoded body
	req, err := laya.ValueRequest(body)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(req.State.Serialize(), req.Questions[0].ID)

	_, err = laya.ValueRequest(pyjson.Object(pyjson.Member{Key: "state", Value: pyjson.String("hi")}))
	fmt.Println(errors.Is(err, laya.ErrInvalidRequest), err)
	// Output:
	// questions: 1
	// Where is my order? late
	// true laya: invalid request: no "questions"; give an object of question id -> definition
}
