package router

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/laya-metal/laya"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/laya-metal/laya/pyjson"
)

// fakeModel stands in for an Agent: routing and residency need no network.
type fakeModel struct {
	name   string
	closed atomic.Bool
	calls  atomic.Int32
	block  chan struct{} // if set, Predict waits on it
}

func (m *fakeModel) Predict(ctx context.Context, s laya.State, q laya.Questions) (*laya.Result, error) {
	m.calls.Add(1)
	if m.block != nil {
		<-m.block
	}
	if m.closed.Load() {
		return nil, errors.New("predict on a closed model")
	}
	return &laya.Result{}, nil
}

func (m *fakeModel) Close() error { m.closed.Store(true); return nil }

type fakeLoader struct {
	mu     sync.Mutex
	loads  map[string]int
	models map[string]*fakeModel
	delay  time.Duration
	fail   map[string]error
}

func newFakeLoader() *fakeLoader {
	return &fakeLoader{loads: map[string]int{}, models: map[string]*fakeModel{}, fail: map[string]error{}}
}

func (l *fakeLoader) load(ctx context.Context, name, ref string) (laya.Predictor, error) {
	time.Sleep(l.delay)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.loads[name]++
	if err := l.fail[name]; err != nil {
		return nil, err
	}
	m := &fakeModel{name: name + "@" + ref}
	l.models[name] = m
	return m, nil
}

func mustRouter(t *testing.T, opts ...Option) *Router {
	t.Helper()
	r, err := New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// testdata/router/route.json: states with laya-mlx's routing decision
// (model, reason, detection) computed by its router.py/lang.py under CPython.
func TestRouteDetectionMatchesLayaMLX(t *testing.T) {
	b, err := os.ReadFile("../testdata/router/route.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Name        string          `json:"name"`
		State       json.RawMessage `json:"state"`
		Code        *string         `json:"code"`
		WantEnglish *bool           `json:"want_english"`
		Want        json.RawMessage `json:"want"`
	}
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	r := mustRouter(t, WithLoader(newFakeLoader().load))
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			if tc.Code != nil {
				want := -1
				if tc.WantEnglish != nil {
					want = map[bool]int{true: 1, false: 0}[*tc.WantEnglish]
				}
				if got := englishFromCode(*tc.Code); got != want {
					t.Errorf("englishFromCode(%q) = %d, want %d", *tc.Code, got, want)
				}
				return
			}
			state, err := laya.JSONState(tc.State)
			if err != nil {
				t.Fatal(err)
			}
			want, err := pyjson.Parse(tc.Want)
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.Route(state, nil, RouteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			wantModel, _ := want.Get("model")
			wantReason, _ := want.Get("reason")
			wantDet, _ := want.Get("detection")
			if got.Model != wantModel.Str() || got.Reason != wantReason.Str() {
				t.Errorf("Route = %s / %q, want %s / %q", got.Model, got.Reason, wantModel.Str(), wantReason.Str())
			}
			if got.Detection == nil {
				t.Fatal("no detection in a detection decision")
			}
			if g, w := analysisValue(*got.Detection).String(), wantDet.String(); g != w {
				t.Errorf("detection =\n%s\nwant\n%s", g, w)
			}
		})
	}
}

func TestRoutePrecedence(t *testing.T) {
	german := laya.Text("Mein Konto wurde zweimal belastet, bitte erstatten Sie mir den Betrag.")
	english := laya.Text("I was charged twice, please refund me.")
	typedIDs := laya.Questions{{ID: "urgency", Definition: laya.NoulQuestion("u")}, {ID: "severity", Definition: laya.NoulQuestion("s")}, {ID: "disposition", Definition: laya.NoulQuestion("d")},
		{ID: "true_positive", Definition: laya.NoulQuestion("t")}, {ID: "credential_compromise", Definition: laya.NoulQuestion("c")}}
	abstain := func(laya.State) string { return "" }
	saysFrench := func(laya.State) string { return "fr_FR.UTF-8" }
	saysEnglish := func(laya.State) string { return "en" }
	tests := []struct {
		name     string
		opts     []Option
		state    laya.State
		qs       laya.Questions
		ro       RouteOptions
		model    string
		reason   string
		workflow string
		repo     string
	}{
		{name: "explicit model alias", state: german, ro: RouteOptions{Model: "ML"}, model: "multilingual",
			reason: "explicit model='ML'", repo: "convaiinnovations/laya/multilingual"},
		{name: "model beats task and lang", state: german, ro: RouteOptions{Model: "en", Task: "typed_decisions", Lang: "de"},
			model: "english", reason: "explicit model='en'", repo: "convaiinnovations/laya"},
		{name: "task typed-decisions", state: english, ro: RouteOptions{Task: "Typed-Decisions"}, model: "typed-decisions",
			reason: "explicit task='Typed-Decisions'", repo: "convaiinnovations/laya/typed-decisions"},
		{name: "task names a model", state: english, ro: RouteOptions{Task: "multi"}, model: "multilingual", reason: "explicit task='multi'"},
		{name: "workflow without opt-in is reported only", state: english, qs: typedIDs, model: "english",
			reason: "English Latin text", workflow: "security_incidents"},
		{name: "workflow with opt-in", opts: []Option{WithAutoTaskDetection()}, state: german, qs: typedIDs,
			model: "typed-decisions", reason: "question ids match the 'security_incidents' typed-decisions workflow", workflow: "security_incidents"},
		{name: "subset of a workflow does not match", opts: []Option{WithAutoTaskDetection()}, state: english, qs: typedIDs[:4],
			model: "english", reason: "English Latin text"},
		{name: "lang beats detection", state: german, ro: RouteOptions{Lang: "en_US.UTF-8"}, model: "english", reason: "explicit lang='en_US.UTF-8'"},
		{name: "non-English lang", state: english, ro: RouteOptions{Lang: "pt-BR"}, model: "multilingual", reason: "explicit lang='pt-BR'"},
		{name: "blank lang falls through", state: german, ro: RouteOptions{Lang: "  "}, model: "multilingual",
			reason: "Latin script but language looks like 'de', not English"},
		{name: "per-call guess", state: english, ro: RouteOptions{LangGuess: saysFrench}, model: "multilingual",
			reason: "lang_guess: the caller identified this as non-English text"},
		{name: "router guess after abstaining call guess", opts: []Option{WithLangGuess(saysEnglish)}, state: german,
			ro: RouteOptions{LangGuess: abstain}, model: "english", reason: "Router(lang_guess=...): the caller identified this as English text"},
		{name: "lang beats guess", state: english, ro: RouteOptions{Lang: "de", LangGuess: saysEnglish}, model: "multilingual", reason: "explicit lang='de'"},
		{name: "default for no letters", opts: []Option{WithDefaultModel("multi")}, state: laya.Text("1234 !!"), model: "multilingual",
			reason: "no letters detected in state; using default (multilingual)"},
		{name: "default for undecided Latin", opts: []Option{WithDefaultModel("multilingual")}, state: laya.Text("Quero cancelar"),
			model: "multilingual", reason: "Latin script, language not identified and no non-English letters; using default (multilingual)"},
		{name: "standalone repos", opts: []Option{WithStandaloneRepos()}, state: german, model: "multilingual",
			reason: "Latin script but language looks like 'de', not English", repo: "convaiinnovations/laya-multilingual"},
		{name: "mlx overrides", opts: []Option{WithModels(MLXModels())}, state: laya.Text("Где мой заказ?"), model: "multilingual",
			reason: "non-Latin script (cyrillic, 100% of letters); the English checkpoint cannot read it", repo: "aac6fef/laya-multilingual-mlx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustRouter(t, append([]Option{WithLoader(newFakeLoader().load)}, tt.opts...)...)
			d, err := r.Route(tt.state, tt.qs, tt.ro)
			if err != nil {
				t.Fatal(err)
			}
			if d.Model != tt.model || d.Reason != tt.reason || d.Workflow != tt.workflow {
				t.Errorf("Route = %s %q workflow %q; want %s %q workflow %q", d.Model, d.Reason, d.Workflow, tt.model, tt.reason, tt.workflow)
			}
			if tt.repo != "" && d.Repo != tt.repo {
				t.Errorf("repo = %s, want %s", d.Repo, tt.repo)
			}
			if r.Loaded() != nil {
				t.Errorf("Route loaded models: %v", r.Loaded())
			}
		})
	}
}

func TestRouteErrors(t *testing.T) {
	r := mustRouter(t)
	for _, ro := range []RouteOptions{{Model: "gpt-4"}, {Task: "summarise"}} {
		_, err := r.Route(laya.Text("x"), nil, ro)
		if !errors.Is(err, ErrUnknownModel) || !strings.Contains(err.Error(), "english") {
			t.Errorf("Route(%+v) err = %v, want ErrUnknownModel listing the choices", ro, err)
		}
	}
	if _, err := New(WithModels(map[string]string{"french": "x/y"})); !errors.Is(err, ErrUnknownModel) {
		t.Errorf("WithModels with an unknown name: err = %v", err)
	}
	if _, err := New(WithDefaultModel("nope")); !errors.Is(err, ErrUnknownModel) {
		t.Errorf("WithDefaultModel(nope): err = %v", err)
	}
}

func TestRouterLRU(t *testing.T) {
	ctx := context.Background()
	fl := newFakeLoader()
	r := mustRouter(t, WithLoader(fl.load))
	for _, n := range []string{"english", "multi", "english", "typed"} {
		if _, err := r.Load(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := r.Loaded(), []string{"english", "typed-decisions"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Loaded = %v, want %v", got, want)
	}
	if !fl.models["multilingual"].closed.Load() {
		t.Error("evicted multilingual model was not closed")
	}
	if fl.models["english"].closed.Load() {
		t.Error("resident english model was closed")
	}
	if _, err := r.Load(ctx, "multilingual"); err != nil {
		t.Fatal(err)
	}
	if fl.loads["multilingual"] != 2 || fl.loads["english"] != 1 {
		t.Errorf("loads = %v, want multilingual twice and english once", fl.loads)
	}

	// Attach raises the cap instead of evicting.
	own := &fakeModel{name: "mine"}
	if err := r.Attach("english", own); err != nil {
		t.Fatal(err)
	}
	if err := r.Attach("laya-multilingual", &fakeModel{}); err != nil {
		t.Fatal(err)
	}
	if err := r.Attach("typed", &fakeModel{}); err != nil {
		t.Fatal(err)
	}
	if r.MaxLoaded() != 3 || len(r.Loaded()) != 3 {
		t.Errorf("after attaching three: max %d loaded %v", r.MaxLoaded(), r.Loaded())
	}
	if m, _ := r.Load(ctx, "en"); m != laya.Predictor(own) {
		t.Error("Load after Attach did not return the attached model")
	}
	if err := r.Unload("english"); err != nil {
		t.Fatal(err)
	}
	if !own.closed.Load() {
		t.Error("Unload did not close the model")
	}
	if err := r.Unload(); err != nil || len(r.Loaded()) != 0 {
		t.Errorf("Unload() left %v (err %v)", r.Loaded(), err)
	}
	if err := r.Unload("nope"); !errors.Is(err, ErrUnknownModel) {
		t.Errorf("Unload(nope) = %v", err)
	}
}

func TestRouterPreload(t *testing.T) {
	ctx := context.Background()
	fl := newFakeLoader()
	r := mustRouter(t, WithLoader(fl.load), WithMaxLoaded(1))
	if err := r.Preload(ctx, "english", "multilingual"); err != nil {
		t.Fatal(err)
	}
	if r.MaxLoaded() != 2 || len(r.Loaded()) != 2 {
		t.Errorf("Preload of 2 with cap 1: max %d loaded %v", r.MaxLoaded(), r.Loaded())
	}
	if err := r.Preload(ctx); err != nil {
		t.Fatal(err)
	}
	if len(r.Loaded()) != 3 || fl.loads["english"] != 1 {
		t.Errorf("Preload() loaded %v with loads %v", r.Loaded(), fl.loads)
	}
	if err := r.Preload(ctx, "bogus"); !errors.Is(err, ErrUnknownModel) {
		t.Errorf("Preload(bogus) = %v", err)
	}
}

func TestRouterLoadFailure(t *testing.T) {
	fl := newFakeLoader()
	fl.fail["multilingual"] = errors.New("disk full")
	r := mustRouter(t, WithLoader(fl.load))
	_, err := r.Predict(context.Background(), laya.Text("Где мой заказ?"), laya.Questions{{ID: "q", Definition: laya.NoulQuestion("ok?")}}, RouteOptions{})
	if err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), "multilingual") {
		t.Fatalf("err = %v, want the load error naming the model", err)
	}
	if len(r.Loaded()) != 0 {
		t.Errorf("a failed load stays resident: %v", r.Loaded())
	}
	delete(fl.fail, "multilingual")
	if _, err := r.Load(context.Background(), "multilingual"); err != nil {
		t.Errorf("retry after a failed load: %v", err)
	}
}

func TestRouterPredictConcurrent(t *testing.T) {
	fl := newFakeLoader()
	fl.delay = 20 * time.Millisecond
	r := mustRouter(t, WithLoader(fl.load))
	qs := laya.Questions{{ID: "q", Definition: laya.NoulQuestion("Is it urgent?")}}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			state := laya.Text("I was charged twice for my order, please help.")
			if i%2 == 1 {
				state = laya.Text("我的订单还没有到，请帮我查一下。")
			}
			res, err := r.Predict(context.Background(), state, qs, RouteOptions{})
			if err != nil {
				errs <- err
				return
			}
			want := map[bool]string{false: "english", true: "multilingual"}[i%2 == 1]
			if res.Routing.Model != want {
				errs <- errors.New("routed to " + res.Routing.Model)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if fl.loads["english"] != 1 || fl.loads["multilingual"] != 1 {
		t.Errorf("concurrent first requests loaded %v, want one load per model", fl.loads)
	}
}

// A model evicted while a request runs on it is closed only after the request ends.
func TestRouterEvictionWaitsForInference(t *testing.T) {
	ctx := context.Background()
	fl := newFakeLoader()
	r := mustRouter(t, WithLoader(fl.load), WithMaxLoaded(1))
	busy := &fakeModel{block: make(chan struct{})}
	if err := r.Attach("english", busy); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		_, err := r.Predict(ctx, laya.Text("please refund the order"), laya.Questions{{ID: "q", Definition: laya.NoulQuestion("x")}}, RouteOptions{Model: "english"})
		done <- err
	}()
	for busy.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	if _, err := r.Load(ctx, "multilingual"); err != nil { // evicts english (cap 1)
		t.Fatal(err)
	}
	if busy.closed.Load() {
		t.Fatal("model closed while a request was running on it")
	}
	close(busy.block)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !busy.closed.Load() {
		t.Error("evicted model not closed after its last request")
	}
}

// A model held by Acquire survives its eviction until released (the second
// release does nothing), and a model acquired by alias is the same entry.
func TestRouterAcquireHoldsTheModel(t *testing.T) {
	ctx := context.Background()
	r := mustRouter(t, WithLoader(newFakeLoader().load), WithMaxLoaded(1))
	held := &fakeModel{name: "english"}
	if err := r.Attach("english", held); err != nil {
		t.Fatal(err)
	}
	m, release, err := r.Acquire(ctx, "english")
	if err != nil {
		t.Fatal(err)
	}
	if m != laya.Predictor(held) {
		t.Fatalf("Acquire returned %v, want the attached model", m)
	}
	if _, err := r.Load(ctx, "multilingual"); err != nil { // evicts english (cap 1)
		t.Fatal(err)
	}
	if held.closed.Load() {
		t.Fatal("an acquired model was closed before its release")
	}
	if _, err := m.Predict(ctx, laya.Text("x"), laya.Questions{{ID: "q", Definition: laya.NoulQuestion("x")}}); err != nil {
		t.Fatalf("predict on the held model after its eviction: %v", err)
	}
	release()
	if !held.closed.Load() {
		t.Error("the evicted model was not closed at its release")
	}
	release() // idempotent: must not drive the count below zero
	if _, _, err := r.Acquire(ctx, "no-such-model"); err == nil {
		t.Error("Acquire of an unknown model: no error")
	}
}

func TestRoutedResultJSON(t *testing.T) {
	r := mustRouter(t, WithLoader(newFakeLoader().load))
	res, err := r.Predict(context.Background(), laya.Text("Bonjour, je veux annuler mon abonnement pour le mois prochain."), laya.Questions{{ID: "q", Definition: laya.NoulQuestion("x")}}, RouteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := res.String()
	want := `"routing": {"model": "multilingual", "repo": "convaiinnovations/laya/multilingual", "reason": "Latin script but language looks like 'fr', not English", "detection": {"script": "latin", "script_profile": {"latin": 1.0}, "language": "fr", "is_english": false, "language_undecided": false, "diacritic_rate": 0.0, "non_latin_fraction": 0.0}, "workflow": null}}`
	if !strings.HasSuffix(got, want) || !strings.HasPrefix(got, `{"model": "laya-rl-agent"`) {
		t.Errorf("routed result JSON =\n%s\nwant suffix\n%s", got, want)
	}
}

// A request waiting for a model that another request is loading must not fail
// because the loading request's context ended: it loads the model itself.
func TestRouterSharedLoadCancelled(t *testing.T) {
	var loads atomic.Int32
	firstLoading := make(chan struct{})
	loader := func(ctx context.Context, name, ref string) (laya.Predictor, error) {
		if loads.Add(1) == 1 {
			close(firstLoading)
			<-ctx.Done() // a slow download its caller gives up on
			return nil, ctx.Err()
		}
		return &fakeModel{name: name}, nil
	}
	r := mustRouter(t, WithLoader(loader))
	qs := laya.Questions{{ID: "q", Definition: laya.NoulQuestion("Is it urgent?")}}
	state := laya.Text("please refund the order")

	firstCtx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := r.Predict(firstCtx, state, qs, RouteOptions{Model: "english"})
		first <- err
	}()
	<-firstLoading
	second := make(chan error, 1)
	go func() {
		_, err := r.Predict(context.Background(), state, qs, RouteOptions{Model: "english"})
		second <- err
	}()
	// Let the second request join the first one's load before it is cancelled.
	for {
		r.mu.Lock()
		refs := r.entries["english"].refs
		r.mu.Unlock()
		if refs == 2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled request: %v, want context.Canceled", err)
	}
	if err := <-second; err != nil {
		t.Errorf("waiting request failed with the other request's cancellation: %v", err)
	}
	if n := loads.Load(); n != 2 {
		t.Errorf("%d loads, want 2 (the cancelled one and the waiter's own)", n)
	}
}

// A loader that returns a model together with an error leaves nothing open.
func TestRouterLoaderErrorClosesModel(t *testing.T) {
	half := &fakeModel{}
	r := mustRouter(t, WithLoader(func(ctx context.Context, name, ref string) (laya.Predictor, error) {
		return half, errors.New("tokenizer missing")
	}))
	if _, err := r.Load(context.Background(), "english"); err == nil {
		t.Fatal("Load succeeded, want the loader's error")
	}
	if !half.closed.Load() {
		t.Error("the model the failed loader returned was not closed")
	}
}
