package serve

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/pyjson"
	"github.com/laya-metal/laya/router"
)

func testRouter(t testing.TB) *router.Router {
	t.Helper()
	r, err := router.New(router.WithMaxLoaded(2), router.WithModels(map[string]string{
		"english":         realEN,
		"multilingual":    "../testdata/oracle/checkpoints/tiny-ml",
		"typed-decisions": "../testdata/oracle/checkpoints/tiny-en",
	}))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRouterMode serves the router over three checkpoints and holds every answer,
// routing block included, to the library Router's own answer for the same request,
// sequentially and with requests for different checkpoints in flight at once; at most
// two checkpoints stay resident.
func TestRouterMode(t *testing.T) {
	ts := startServer(t, RouterModels(testRouter(t)), nil)
	ref := testRouter(t)
	defer ref.Unload(ref.Loaded()...)
	qs := `{"refund": {"type": "noul", "instructions": "Does the customer ask for money back?"}, "team": {"type": "choice", "instructions": "Which team?", "criteria": {"billing": "payments", "tech": "bugs"}}}`
	cases := []struct {
		state, extra string
		opts         router.RouteOptions
		model        string
	}{
		{`"I was charged twice this month and I want my money back"`, ``, router.RouteOptions{}, "english"},
		{`"Ich wurde diesen Monat doppelt belastet und möchte mein Geld zurück"`, ``, router.RouteOptions{}, "multilingual"},
		{`"这个月我被扣了两次款，我要退款"`, ``, router.RouteOptions{}, "multilingual"},
		{`"refund please"`, `, "model": "typed-decisions"`, router.RouteOptions{Model: "typed-decisions"}, "typed-decisions"},
		{`"refund please"`, `, "lang": "de"`, router.RouteOptions{Lang: "de"}, "multilingual"},
		{`"refund please"`, `, "task": "typed-decisions"`, router.RouteOptions{Task: "typed-decisions"}, "typed-decisions"},
		{`"refund please"`, `, "model": "convaiinnovations/laya-multilingual"`, router.RouteOptions{Model: "multilingual"}, "multilingual"},
	}
	want := make([]string, len(cases))
	for i, c := range cases {
		st, err := laya.JSONState([]byte(c.state))
		if err != nil {
			t.Fatal(err)
		}
		q, err := laya.ParseQuestions([]byte(qs))
		if err != nil {
			t.Fatal(err)
		}
		res, err := ref.Predict(context.Background(), st, q, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if res.Routing.Model != c.model {
			t.Fatalf("case %d: the library routes to %s, the test expects %s", i, res.Routing.Model, c.model)
		}
		// Clients see a local checkpoint by its name, not where it lies on disk.
		res.Routing.Repo = filepath.Base(res.Routing.Repo)
		want[i] = res.String()
	}
	check := func(i int, body string) {
		got, err := pyjson.Parse([]byte(body))
		if err != nil {
			t.Errorf("case %d: %v: %s", i, err, body)
			return
		}
		w, _ := pyjson.Parse([]byte(want[i]))
		for _, k := range []string{"model", "answers", "routing"} {
			g, _ := got.Get(k)
			wv, _ := w.Get(k)
			if g.String() != wv.String() {
				t.Errorf("case %d %s:\n got %s\nwant %s", i, k, g, wv)
			}
		}
	}
	for i, c := range cases {
		r := post(t, ts.url+"/v1/systemone", `{"state": `+c.state+`, "questions": `+qs+c.extra+`}`)
		if r.status != 200 {
			t.Fatalf("case %d: %d %s", i, r.status, r.body)
		}
		check(i, r.body)
		if loaded := ts.models.loaded(); len(loaded) > 2 {
			t.Errorf("%d checkpoints resident, want at most 2: %v", len(loaded), loaded)
		}
	}
	if r := post(t, ts.url+"/v1/predict", `{"state": `+cases[0].state+`, "questions": `+qs+`}`); r.body != want[0]+"\n" {
		t.Errorf("/v1/predict under the router:\n got %s\nwant %s", r.body, want[0])
	}
	var wg sync.WaitGroup
	for k := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			i := k % len(cases)
			r := post(t, ts.url+"/v1/systemone", `{"state": `+cases[i].state+`, "questions": `+qs+cases[i].extra+`}`)
			if r.status != 200 {
				t.Errorf("concurrent case %d: %d %s", i, r.status, r.body)
				return
			}
			check(i, r.body)
		}()
	}
	wg.Wait()
	if r := do(t, nil, "GET", ts.url+"/health", "", nil); !strings.Contains(r.body, `"loaded":[`) {
		t.Errorf("/health: %s", r.body)
	}
}

// closingModel is a router model that records its Close and fails once closed.
type closingModel struct{ closed atomic.Bool }

func (m *closingModel) Predict(context.Context, laya.State, laya.Questions) (*laya.Result, error) {
	if m.closed.Load() {
		return nil, laya.ErrClosed
	}
	return &laya.Result{}, nil
}

func (m *closingModel) Close() error { m.closed.Store(true); return nil }

// TestRoutedPredictorHoldsItsModel: the model a batch pass got from the router is
// not closed when a request for another checkpoint evicts it during the pass (cap
// 1), only at the pass's release.
func TestRoutedPredictorHoldsItsModel(t *testing.T) {
	ctx := context.Background()
	models := map[string]*closingModel{"english": {}, "multilingual": {}}
	r, err := router.New(router.WithMaxLoaded(1), router.WithLoader(func(_ context.Context, name, _ string) (laya.Predictor, error) {
		return models[name], nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	m := RouterModels(r)
	p, release, err := m.predictor(ctx, "english")
	if err != nil {
		t.Fatal(err)
	}
	if _, other, err := m.predictor(ctx, "multilingual"); err != nil { // evicts english
		t.Fatal(err)
	} else {
		other()
	}
	qs := laya.Questions{{ID: "q", Definition: laya.NoulQuestion("x")}}
	answers, err := p.PredictBatch(ctx, []laya.Request{{State: laya.Text("x"), Questions: qs}})
	if err != nil || len(answers) != 1 || answers[0].Err != nil {
		t.Fatalf("pass on the held model after its eviction: %v, %+v", err, answers)
	}
	release()
	if !models["english"].closed.Load() {
		t.Error("the evicted model was not closed at the pass's release")
	}
	if models["multilingual"].closed.Load() {
		t.Error("the resident model was closed")
	}
}
