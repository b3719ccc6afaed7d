package router

import (
	"github.com/laya-metal/laya"
)

// typedDecisionWorkflows are the question-id sets of the four workflows
// typed-decisions was fine-tuned on. Matching needs the exact set, so an
// unrelated schema that happens to contain "urgency" is never captured.
var typedDecisionWorkflows = []struct {
	name string
	ids  []string
}{
	{"agent_trace_observability", []string{"action", "needs_review", "outcome", "risk", "urgency"}},
	{"customer_service", []string{"action", "category", "churn_risk", "needs_human", "urgency"}},
	{"invoice_processing", []string{"discrepancy_severity", "disposition", "duplicate", "matches_order", "urgency"}},
	{"security_incidents", []string{"credential_compromise", "disposition", "severity", "true_positive", "urgency"}},
}

// MatchTypedDecisionsWorkflow names the typed-decisions workflow whose exact
// question-id set these questions have, or returns "".
func MatchTypedDecisionsWorkflow(questions laya.Questions) string {
	ids := map[string]bool{}
	for _, q := range questions {
		ids[q.ID] = true
	}
	for _, wf := range typedDecisionWorkflows {
		if len(ids) != len(wf.ids) {
			continue
		}
		all := true
		for _, id := range wf.ids {
			all = all && ids[id]
		}
		if all {
			return wf.name
		}
	}
	return ""
}
