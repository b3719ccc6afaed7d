package serve

import (
	"context"
	"strings"
	"testing"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/pyjson"
	"github.com/laya-metal/laya/router"
)

// A checkpoint of the router's own (laya serve --router --model-dir
// support-bot=DIR) answers requests that name it, with the library's answer;
// a model id the router does not know still lets the router choose.
func TestCustomRouterModel(t *testing.T) {
	tinyEN := "../testdata/oracle/checkpoints/tiny-en"
	r, err := router.New(router.WithModel("support-bot", tinyEN), router.WithModels(map[string]string{"english": realEN}))
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, RouterModels(r), func(c *Config) { c.Preload = []string{"support-bot", "english"} })
	qs := `{"refund": {"type": "noul", "instructions": "Does the customer ask for money back?"}}`
	state := "I was charged twice this month and I want my money back"
	ref, err := laya.Load(context.Background(), tinyEN)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	q, err := laya.ParseQuestions([]byte(qs))
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Predict(context.Background(), laya.Text(state), q)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ field, model, routed, reason string }{
		{"model", "Support-Bot", "support-bot", "explicit model='Support-Bot'"},
		{"model", "jev-1", "english", "English Latin text"},
		{"task", "Support-Bot", "support-bot", "explicit task='Support-Bot'"},
		{"task", "english", "english", "explicit task='english'"},
	} {
		resp := post(t, ts.url+"/v1/systemone", `{"state": "`+state+`", "questions": `+qs+`, "`+tc.field+`": "`+tc.model+`"}`)
		if resp.status != 200 {
			t.Fatalf("%s %s: status %d: %s", tc.field, tc.model, resp.status, resp.body)
		}
		got, err := pyjson.Parse([]byte(resp.body))
		if err != nil {
			t.Fatal(err)
		}
		routing, _ := got.Get("routing")
		m, _ := routing.Get("model")
		reason, _ := routing.Get("reason")
		if m.Str() != tc.routed || reason.Str() != tc.reason {
			t.Errorf("%s: routed to %s (%s)", tc.model, m.Str(), reason.Str())
		}
		if tc.routed == "support-bot" {
			answers, _ := got.Get("answers")
			w, _ := pyjson.Parse([]byte(want.String()))
			wa, _ := w.Get("answers")
			if answers.String() != wa.String() {
				t.Errorf("answers %s\nwant %s", answers, wa)
			}
		}
	}
	// A task the router does not serve is still refused, naming it and the choices.
	resp := post(t, ts.url+"/v1/systemone/batch", `{"states": ["`+state+`"], "questions": `+qs+`, "task": "billing-bot"}`)
	if d := detail(t, resp); resp.status != 422 || !strings.HasPrefix(d, "unknown task 'billing-bot': ") || !strings.Contains(d, "support-bot") || strings.Contains(d, "\n") {
		t.Errorf("unknown task: %d %s", resp.status, resp.body)
	}
	if !strings.Contains(strings.Join(r.Loaded(), ","), "support-bot") {
		t.Errorf("loaded %v", r.Loaded())
	}
}
