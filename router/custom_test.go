package router

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/laya-metal/laya"
)

func tinyCheckpoint(name string) string {
	return filepath.Join("..", "testdata", "oracle", "checkpoints", name)
}

// A checkpoint of the caller's own, loaded by the default loader from a local
// directory, answers as laya.Load of that directory does.
func TestCustomModelThroughTheLibrary(t *testing.T) {
	ctx := context.Background()
	r := mustRouter(t, WithModel("Support-Bot", tinyCheckpoint("tiny-en")), WithMaxLoaded(1))
	if got := r.Models()["support-bot"]; got != tinyCheckpoint("tiny-en") {
		t.Fatalf("Models() = %v, want support-bot listed", r.Models())
	}
	state := laya.Text("I was charged twice, please refund me.")
	qs := laya.Questions{{ID: "refund", Definition: laya.NoulQuestion("Does the customer want a refund?")}}
	got, err := r.Predict(ctx, state, qs, RouteOptions{Model: "SUPPORT-BOT"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Routing.Model != "support-bot" || got.Routing.Repo != tinyCheckpoint("tiny-en") || got.Routing.Reason != "explicit model='SUPPORT-BOT'" {
		t.Errorf("routing %+v", got.Routing)
	}
	agent, err := laya.Load(ctx, tinyCheckpoint("tiny-en"))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	want, err := agent.Predict(ctx, state, qs)
	if err != nil {
		t.Fatal(err)
	}
	if got.Result.String() != want.String() {
		t.Errorf("routed %s\nwant %s", got.Result, want)
	}
	// Long states and tournaments run on it too.
	long, err := r.PredictLong(ctx, laya.Text(strings.Repeat("The refund for the double charge is still missing. ", 40)), qs, RouteOptions{Task: "support-bot"}, laya.LongOptions{})
	if err != nil || len(long.Usage.Windows) != 1 || long.Routing.Model != "support-bot" {
		t.Errorf("PredictLong: %v %+v", err, long)
	}
	labels := make([]string, 20)
	for i := range labels {
		labels[i] = "intent " + string(rune('a'+i))
	}
	tour, err := r.PredictTournament(ctx, state, laya.Questions{{ID: "intent", Definition: laya.ChoiceQuestion("Which intent?", labels...)}}, RouteOptions{Model: "support-bot"})
	if err != nil || len(tour.Usage.Tournament) != 1 {
		t.Errorf("PredictTournament: %v %+v", err, tour)
	}
	// Another model past the residency cap of one evicts it.
	if err := r.Register("ml", tinyCheckpoint("tiny-ml")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Predict(ctx, state, qs, RouteOptions{Model: "multilingual"}); err != nil {
		t.Fatal(err)
	}
	if l := r.Loaded(); !slices.Equal(l, []string{ModelMultilingual}) {
		t.Errorf("Loaded() = %v after the switch", l)
	}
}

func TestRegisterAndUnregister(t *testing.T) {
	ctx := context.Background()
	fl := newFakeLoader()
	r := mustRouter(t, WithLoader(fl.load), WithMaxLoaded(3))
	qs := laya.Questions{{ID: "q", Definition: laya.NoulQuestion("x")}}
	if _, err := r.Route(laya.Text("x"), qs, RouteOptions{Model: "mine"}); !errors.Is(err, ErrUnknownModel) {
		t.Fatalf("unregistered: %v", err)
	}
	if err := r.Register("mine", "org/laya-mine/sub@v2"); err != nil {
		t.Fatal(err)
	}
	res, err := r.Predict(ctx, laya.Text("x"), qs, RouteOptions{Model: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Routing.Repo != "org/laya-mine/sub@v2" || fl.models["mine"].name != "mine@org/laya-mine/sub@v2" {
		t.Errorf("routing %+v, loaded %v", res.Routing, fl.models["mine"].name)
	}
	// The same source again keeps the loaded model; a new one unloads it.
	if err := r.Register("mine", "org/laya-mine/sub@v2"); err != nil || !slices.Contains(r.Loaded(), "mine") {
		t.Errorf("re-register with the same source: %v, loaded %v", err, r.Loaded())
	}
	old := fl.models["mine"]
	if err := r.Register("mine", "/models/mine-v3"); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(r.Loaded(), "mine") || !old.closed.Load() {
		t.Errorf("re-register: loaded %v, old closed %v", r.Loaded(), old.closed.Load())
	}
	if _, err := r.Predict(ctx, laya.Text("x"), qs, RouteOptions{Model: "mine"}); err != nil || fl.models["mine"].name != "mine@/models/mine-v3" {
		t.Errorf("after re-register: %v %s", err, fl.models["mine"].name)
	}
	cur := fl.models["mine"]
	if err := r.Unregister("MINE"); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Models()["mine"]; ok || !cur.closed.Load() || slices.Contains(r.Loaded(), "mine") {
		t.Errorf("after Unregister: models %v, closed %v, loaded %v", r.Models(), cur.closed.Load(), r.Loaded())
	}
	for _, tc := range []struct {
		name string
		err  error
	}{{"english", ErrBuiltinModel}, {"ml", ErrBuiltinModel}, {"mine", ErrUnknownModel}} {
		if err := r.Unregister(tc.name); !errors.Is(err, tc.err) {
			t.Errorf("Unregister(%q) = %v, want %v", tc.name, err, tc.err)
		}
	}
	for _, bad := range []struct{ name, source string }{{"", "x"}, {"two words", "x"}, {"ok", " "}, {strings.Repeat("a", 65), "x"}} {
		if err := r.Register(bad.name, bad.source); err == nil {
			t.Errorf("Register(%q, %q) accepted", bad.name, bad.source)
		}
	}
	// A custom default model: requests nothing identifies go to it.
	d := mustRouter(t, WithLoader(fl.load), WithDefaultModel("house"), WithModel("house", "org/house"))
	dec, err := d.Route(laya.Text("12345"), nil, RouteOptions{})
	if err != nil || dec.Model != "house" || dec.Reason != "no letters detected in state; using default (house)" {
		t.Errorf("default custom model: %v %+v", err, dec)
	}
	if err := d.Unregister("house"); err == nil {
		t.Error("unregistered the default model")
	}
	if _, err := New(WithDefaultModel("nowhere")); !errors.Is(err, ErrUnknownModel) {
		t.Errorf("unknown default: %v", err)
	}
	// Routing JSON of a custom model is the built-ins' shape.
	if got := dec.Value().String(); !strings.HasPrefix(got, `{"model": "house", "repo": "org/house", `) {
		t.Errorf("decision JSON %s", got)
	}
}

// A predictor without PredictLong or PredictTournament (a custom loader's)
// says so instead of answering another way.
func TestLongAndTournamentNeedSupport(t *testing.T) {
	r := mustRouter(t, WithLoader(newFakeLoader().load))
	qs := laya.Questions{{ID: "q", Definition: laya.NoulQuestion("x")}}
	if _, err := r.PredictLong(context.Background(), laya.Text("x"), qs, RouteOptions{}, laya.LongOptions{}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("PredictLong: %v", err)
	}
	if _, err := r.PredictTournament(context.Background(), laya.Text("x"), qs, RouteOptions{}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("PredictTournament: %v", err)
	}
	if _, err := r.PredictLong(context.Background(), laya.Text("x"), qs, RouteOptions{Model: "nope"}, laya.LongOptions{}); !errors.Is(err, ErrUnknownModel) {
		t.Errorf("unknown model: %v", err)
	}
}
