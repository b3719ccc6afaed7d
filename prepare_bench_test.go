package laya

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/laya-metal/laya/internal/oracletest"
)

// BenchmarkPrepareRequest is the host's work before a forward pass:
// parsing a request of laya-bench's workload (a 4-way choice, a 3-level
// score and a noul, cycled over a short email state) and building its
// question rows, on tiny-en's ModernBERT tokenizer. The agent is warm, as
// a server's is: its caches have seen the templates.
func BenchmarkPrepareRequest(b *testing.B) {
	a, err := Load(context.Background(), oracletest.Checkpoint("tiny-en"))
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	templates := []string{
		`{"type": "choice", "instructions": "Which department should handle this email?", "criteria": {"billing": "invoices, payments, refunds", "technical": "bugs, outages, system errors", "sales": "pricing, new contracts", "other": "everything else"}}`,
		`{"type": "score", "instructions": "How urgent is this request?", "criteria": ["not urgent", "soon", "critical deadline or blocking issue"]}`,
		`{"type": "noul", "instructions": "Does the customer ask for money back?"}`,
	}
	for _, n := range []int{1, 50} {
		var sb strings.Builder
		sb.WriteString(`{"state": {"from": "user@example.com", "subject": "Duplicate charge on invoice #4411", "body": "We were billed twice for March. Please refund the duplicate today or we will cancel our plan."}, "questions": {`)
		for i := range n {
			if i > 0 {
				sb.WriteString(", ")
			}
			fmt.Fprintf(&sb, `"q%d": %s`, i, templates[i%len(templates)])
		}
		sb.WriteString("}}")
		raw := []byte(sb.String())
		b.Run(fmt.Sprintf("questions=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req, err := ParseRequest(raw)
				if err != nil {
					b.Fatal(err)
				}
				if _, _, _, err := a.prepareRequest(req, 8192); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
