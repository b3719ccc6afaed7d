package structured_test

import (
	"context"
	"fmt"
	"log"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/structured"
)

const checkpoint = "../testdata/oracle/checkpoints/real-en" // or "convaiinnovations/laya"

// The Decide examples ask, as a schema and as a struct, exactly the questions of the
// golden cases "choice_list" and "choice_int_labels" (an enum plans to a choice over its
// values as labels), so the printed values and confidences are upstream's answers.

const ticketEmail = `{"from": "user@example.com", "subject": "Duplicate charge on invoice #4411",
 "body": "We were billed twice for March. Please refund the duplicate today or we will cancel our plan."}`

// Answer a JSON schema in one pass: each property is one question, and the values
// come back in the schema's shape and types.
func ExampleDecide() {
	ctx := context.Background()
	agent, err := laya.Load(ctx, checkpoint)
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()

	state, _ := laya.JSONState([]byte(ticketEmail))
	d, err := structured.Decide(ctx, agent, state, []byte(`{
	  "type": "object",
	  "properties": {
	    "dept": {"type": "string", "enum": ["billing", "technical", "sales"], "description": "Route this ticket."},
	    "two":  {"enum": ["yes", "no"], "description": "Two-way?"}
	  }}`))
	if err != nil {
		log.Fatal(err) // a *structured.SchemaError names the property, e.g. "properties.x: arrays are not supported; …"
	}
	fmt.Println(d.Values)
	dept, _ := d.Field("dept")
	fmt.Println(dept.Confidence, dept.Probabilities[1].Label, dept.Probabilities[1].Probability)
	// Output:
	// {"dept": "technical", "two": "yes"}
	// 0.0413 technical 0.4033
}

// Charges is a struct used as a schema: the laya tag holds the instructions and,
// after ";", the options.
type Charges struct {
	N int `json:"n" laya:"How many charges?;enum=1|2|3"`
}

// Department is a Go enum: a named type that lists its values.
type Department string

const (
	Billing   Department = "billing"
	Technical Department = "technical"
	Sales     Department = "sales"
)

func (Department) EnumValues() []any { return []any{Billing, Technical, Sales} }

// Route uses the enum as a field type; a field of a named type with EnumValues is a
// choice over its values, and the chosen constant is stored.
type Route struct {
	Dept Department `json:"dept" laya:"Route this ticket."`
	Two  string     `json:"two" laya:"Two-way?;enum=yes|no"`
}

// Answer into Go structs: a struct is the schema, and the decided values are stored
// in it with their Go types.
func ExampleDecideInto() {
	ctx := context.Background()
	agent, err := laya.Load(ctx, checkpoint)
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()

	state, _ := laya.JSONState([]byte(ticketEmail))
	var c Charges
	d, err := structured.DecideInto(ctx, agent, state, &c)
	if err != nil {
		log.Fatal(err) // a *structured.SchemaError names the Go field, e.g. "structured: main.Ticket.Notes: properties.notes: …"
	}
	n, _ := d.Field("n")
	fmt.Println(c.N, n.Confidence)

	var r Route
	if _, err := structured.DecideInto(ctx, agent, state, &r); err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.Dept == Technical, r.Two)
	// Output:
	// 2 0.0078
	// true yes
}
