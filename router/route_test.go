package router

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/pyjson"
)

// testdata/router/route.json: states (and language codes, as lang and as a
// lang_guess hint) with upstream's routing decision (model, reason, detection)
// computed by its router.py/lang.py under CPython (scripts/goldens/routing).
func TestRouteDetectionMatchesUpstream(t *testing.T) {
	b, err := os.ReadFile("../testdata/router/route.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Name        string          `json:"name"`
		State       json.RawMessage `json:"state"`
		Code        *string         `json:"code"`
		Lang        *string         `json:"lang"`
		LangGuess   *string         `json:"lang_guess"`
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
			var opts RouteOptions
			if tc.Lang != nil {
				opts.Lang = *tc.Lang
			}
			if tc.LangGuess != nil {
				opts.LangGuess = func(laya.State) string { return *tc.LangGuess }
			}
			got, err := r.Route(state, nil, opts)
			if err != nil {
				t.Fatal(err)
			}
			wantModel, _ := want.Get("model")
			wantReason, _ := want.Get("reason")
			wantDet, _ := want.Get("detection")
			if got.Model != wantModel.Str() || got.Reason != wantReason.Str() {
				t.Errorf("Route = %s / %q, want %s / %q", got.Model, got.Reason, wantModel.Str(), wantReason.Str())
			}
			if wantDet.Kind() == pyjson.NullKind {
				if got.Detection != nil {
					t.Errorf("detection %+v, want none", *got.Detection)
				}
				return
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
	// A name that is no built-in is a model of the caller's own.
	if r, err := New(WithModels(map[string]string{"French": "x/y"})); err != nil || r.Models()["french"] != "x/y" {
		t.Errorf("WithModels with a new name: err = %v", err)
	}
	if _, err := New(WithModels(map[string]string{"french model": "x/y"})); err == nil || !strings.Contains(err.Error(), `"french model"`) {
		t.Errorf("WithModels with a bad name: err = %v", err)
	}
	if _, err := New(WithDefaultModel("nope")); !errors.Is(err, ErrUnknownModel) {
		t.Errorf("WithDefaultModel(nope): err = %v", err)
	}
}
