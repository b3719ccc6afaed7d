package main

import (
	"fmt"
	"strings"
)

// The three laya-mlx benchmark templates; state text is an email body.
var templates = []string{
	`{"type": "choice", "instructions": "Which department should handle this email?", "criteria": {"billing": "invoices, payments, refunds", "technical": "bugs, outages, system errors", "sales": "pricing, new contracts", "other": "everything else"}}`,
	`{"type": "score", "instructions": "How urgent is this request?", "criteria": ["not urgent", "soon", "critical deadline or blocking issue"]}`,
	`{"type": "noul", "instructions": "Does the customer ask for money back?"}`,
}

const shortState = `{"from": "user@example.com", "subject": "Duplicate charge on invoice #4411", "body": "We were billed twice for March. Please refund the duplicate today or we will cancel our plan."}`

func request(n int, long bool) []byte { return variedRequest(n, long, 0) }

// variedRequest is request with extra one-token words at the end of the
// state's body: --vary's requests of other token counts.
func variedRequest(n int, long bool, extra int) []byte {
	var b strings.Builder
	state := shortState
	if extra > 0 {
		state = strings.Replace(state, `cancel our plan."}`, `cancel our plan.`+strings.Repeat(" ok", extra)+`"}`, 1)
	}
	if long {
		body := strings.Repeat("The customer reports duplicate billing and requests a refund today. ", 200)
		state = `{"subject": "Duplicate charge", "body": "` + body + `"}`
	}
	b.WriteString(`{"state": ` + state + `, "questions": {`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `"q%d": %s`, i, templates[i%len(templates)])
	}
	b.WriteString("}}")
	return []byte(b.String())
}
