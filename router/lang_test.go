package router

import (
	"testing"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/lang"
	"github.com/laya-metal/laya/pyjson"
)

// The language a routed request is calibrated for (moved from the root's
// lang_temperature_test.go with the router).
func TestRequestLang(t *testing.T) {
	de := &lang.Analysis{Language: "de"}
	en := &lang.Analysis{Language: "en"}
	for _, tc := range []struct {
		opts     RouteOptions
		decision Decision
		want     string
	}{
		{RouteOptions{Lang: "pt-BR"}, Decision{Detection: de}, "pt-BR"},
		{RouteOptions{}, Decision{Detection: de}, "de"},
		{RouteOptions{}, Decision{Detection: en}, ""},
		{RouteOptions{Lang: "en"}, Decision{Detection: en}, "en"},
		{RouteOptions{Lang: "  "}, Decision{}, ""},
	} {
		if got := requestLang(tc.opts, tc.decision); got != tc.want {
			t.Errorf("requestLang(%+v, %+v) = %q, want %q", tc.opts, tc.decision.Detection, got, tc.want)
		}
	}
}

// TestRouteReadsStringLeaves: every way of building a state reaches detection
// as upstream's analyse(state) sees it (laya/lang.py _iter_text): a str is
// one leaf, even one that holds JSON; a dict or list gives its string leaves
// in order, keys ignored, numbers/booleans/None skipped, nothing deeper than
// 6 levels; None, "" and containers without strings have no letters. The
// expectations were worked by hand from that rule.
func TestRouteReadsStringLeaves(t *testing.T) {
	r, err := New()
	if err != nil {
		t.Fatal(err)
	}
	jsonState := func(s string) laya.State {
		st, err := laya.JSONState([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	mapState, err := laya.StateOf(map[string]any{"n": 3, "ok": true, "body": "Mein Konto wurde zweimal belastet, bitte erstatten Sie den Betrag"})
	if err != nil {
		t.Fatal(err)
	}
	const noLetters = "no letters detected in state; using default (english)"
	const german = "Latin script but language looks like 'de', not English"
	for _, tc := range []struct {
		name   string
		state  laya.State
		reason string
	}{
		{"zero State (null)", laya.State{}, noLetters},
		{"ValueState(null)", laya.ValueState(pyjson.Null()), noLetters},
		{"JSON null", jsonState(`null`), noLetters},
		{"empty text", laya.Text(""), noLetters},
		{"numbers and booleans only", jsonState(`{"a": 1, "b": [true, 2.5, null]}`), noLetters},
		{"StateOf a Go map", mapState, german},
		{"keys ignored", jsonState(`{"subject of the message from the customer": "Bom dia, preciso de ajuda com a minha conta"}`),
			"Latin script but language looks like 'pt', not English"},
		// The same text as a str is one leaf, keys and all: en 4 > pt 3.
		{"a str holding JSON is text", laya.Text(`{"subject of the message from the customer": "Bom dia, preciso de ajuda com a minha conta"}`),
			"English Latin text"},
		{"depth 6 read", jsonState(`{"a": [{"b": [{"c": ["Mein Konto wurde zweimal belastet, bitte erstatten Sie den Betrag"]}]}]}`), german},
		{"depth 7 not read", jsonState(`{"a": [{"b": [{"c": [["Mein Konto wurde zweimal belastet, bitte erstatten Sie den Betrag"]]}]}]}`), noLetters},
	} {
		d, err := r.Route(tc.state, nil, RouteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Reason != tc.reason {
			t.Errorf("%s: reason %q, want %q", tc.name, d.Reason, tc.reason)
		}
	}
}
