package serve

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/laya-metal/laya/pyjson"
)

// min_confidence maps (upstream #394): each answer is gated at its option-count
// bucket's threshold, else "default", else 0; a key that can name no bucket is
// refused (#1002).
func TestMinConfidenceMap(t *testing.T) {
	for _, tc := range []struct {
		json, err string
	}{
		{`0.5`, ""},
		{`{"choice:2": 0.9, "score:3-5": 0.2, "noul:2": 0.1, "choice:11+": 1, "default": 0}`, ""},
		{`{"choice:6-10": 0.5}`, ""},
		{`{}`, "non-empty object"},
		{`{"choice:7": 0.5}`, `key 'choice:7' names no bucket`},
		{`{"noul:3-5": 0.5}`, `key 'noul:3-5' names no bucket`},
		{`{"Choice:2": 0.5}`, `names no bucket`},
		{`{"choice": 0.5}`, `names no bucket`},
		{`{"multi:2": 0.5}`, `names no bucket`},
		{`{"default": 2}`, `'default' must be a number between 0.0 and 1.0`},
		{`{"noul:2": true}`, `must be a number`},
		{`[0.5]`, `must be a number between 0.0 and 1.0, or an object`},
		{`true`, `must be a number`},
	} {
		v, err := pyjson.Parse([]byte(tc.json))
		if err != nil {
			t.Fatal(err)
		}
		_, e := parseMinConfidence(v)
		switch {
		case tc.err == "" && e != nil:
			t.Errorf("%s: refused: %s", tc.json, e.detail)
		case tc.err != "" && (e == nil || e.status != 422 || !strings.Contains(fmt.Sprint(e.detail), tc.err)):
			t.Errorf("%s: %+v, want 422 %q", tc.json, e, tc.err)
		}
	}

	ts := startServer(t, realModel(t), nil)
	qs := `{"refund": {"type": "noul", "instructions": "Refund?"}, "team": {"type": "choice", "instructions": "Which team?", "criteria": ["billing", "tech", "sales"]}, "urgency": {"type": "score", "instructions": "How urgent?", "criteria": ["no", "soon", "now"]}}`
	r := post(t, ts.url+"/v1/systemone", `{"state": "I was charged twice, refund me", "questions": `+qs+`, "min_confidence": {"choice:3-5": 0.99, "noul:2": 0.01, "default": 0.25}}`)
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	var got struct{ Answers map[string]map[string]any }
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]float64{"team": 0.99, "refund": 0.01, "urgency": 0.25} {
		a := got.Answers[q]
		if a["abstention_threshold"] != want {
			t.Errorf("%s: abstention_threshold %v, want %v", q, a["abstention_threshold"], want)
		}
		conf := a["answer_confidence"].(float64)
		if low := conf < want; a["low_confidence"] != low || (a["abstention"] == "abstained") != low {
			t.Errorf("%s: confidence %v at %v: %v", q, conf, want, a)
		}
	}
	bad := post(t, ts.url+"/v1/systemone", `{"state": "x", "questions": `+qs+`, "min_confidence": {"choice:12": 0.5}}`)
	if bad.status != 422 || !strings.Contains(detail(t, bad), "names no bucket") {
		t.Errorf("bad bucket: %d %s", bad.status, bad.body)
	}
}
