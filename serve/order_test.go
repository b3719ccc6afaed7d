package serve

import (
	"strings"
	"testing"
)

// TestCheckOrder: a body that is wrong in shape and over a limit at once answers
// with the check upstream applies first (laya/serve.py: the states a non-empty
// list, their number, then each state present, the questions with the first state,
// its length), so a client sees the same status from both servers.
func TestCheckOrder(t *testing.T) {
	ts := startServer(t, realModel(t), func(c *Config) {
		c.Limits.Questions, c.Limits.BatchStates, c.Limits.StateChars = 1, 2, 5
	})
	two := `{"a": {"type": "noul", "instructions": "x"}, "b": {"type": "noul", "instructions": "x"}}`
	for _, tc := range []struct {
		name, path, body string
		status           int
		detail           string
	}{
		{"empty states", "/v1/systemone/batch", `{"states": [], "questions": ` + two + `}`, 400, "'states' must be a non-empty list"},
		{"states not a list", "/v1/systemone/batch", `{"states": "a", "questions": ` + two + `}`, 400, "'states' must be a non-empty list"},
		{"no states", "/v1/systemone/batch", `{"state": "a", "questions": ` + two + `}`, 400, "'states' must be a non-empty list"},
		{"first state null", "/v1/systemone/batch", `{"states": [null, "a"], "questions": ` + two + `}`, 400, "'state' is required"},
		{"too many states before a null one", "/v1/systemone/batch", `{"states": [null, "a", "b"], "questions": ` + two + `}`, 413, "too many states (3 > 2)"},
		{"questions before a later null state", "/v1/systemone/batch", `{"states": ["a", null], "questions": ` + two + `}`, 413, "too many questions (2 > 1)"},
		{"first state long before a later null one", "/v1/systemone/batch", `{"states": ["abcdef", null], "questions": {}}`, 413, "state too large (6 > 5 chars)"},
		{"null state after a good one", "/v1/systemone/batch", `{"states": ["a", null], "questions": {}}`, 400, "'state' is required"},
		{"no state", "/v1/systemone", `{"questions": ` + two + `}`, 400, "'state' is required"},
		{"null state", "/v1/systemone", `{"state": null, "questions": ` + two + `}`, 400, "'state' is required"},
		{"questions before state length", "/v1/systemone", `{"state": "abcdef", "questions": ` + two + `}`, 413, "too many questions (2 > 1)"},
		{"questions not an object before state length", "/v1/systemone", `{"state": "abcdef", "questions": []}`, 400, "'questions' must be an object"},
		{"predict no state", "/v1/predict", `{"questions": ` + two + `}`, 400, `no "state"`},
		{"predict unknown field", "/v1/predict", `{"state": "a", "questions": ` + two + `, "lang": "en"}`, 400, `unknown field "lang"`},
		{"predict over a limit", "/v1/predict", `{"state": "a", "questions": ` + two + `}`, 413, "too many questions (2 > 1)"},
	} {
		r := post(t, ts.url+tc.path, tc.body)
		if r.status != tc.status || !strings.Contains(detail(t, r), tc.detail) {
			t.Errorf("%s: %d %.300s, want %d with %q", tc.name, r.status, r.body, tc.status, tc.detail)
		}
	}
}
