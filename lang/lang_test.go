package lang

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/laya-metal/laya/pyjson"
)

// testdata/analyse.json holds states in many languages and scripts (mixed
// lines, acronyms, shouted text, Swedish, loanwords, codes) and the result of
// upstream's analyse() for each, produced by scripts/goldens/routing/gen.py
// running upstream's lang.py under CPython (so Python's isalpha, lower, re and
// round decide the expected values, not this package).
type analyzeCase struct {
	Name  string          `json:"name"`
	State json.RawMessage `json:"state"`
	Want  struct {
		Script            string          `json:"script"`
		ScriptProfile     json.RawMessage `json:"script_profile"`
		Language          *string         `json:"language"`
		IsEnglish         bool            `json:"is_english"`
		LanguageUndecided bool            `json:"language_undecided"`
		DiacriticRate     float64         `json:"diacritic_rate"`
		NonLatinFraction  float64         `json:"non_latin_fraction"`
		MixedSegment      *string         `json:"mixed_segment"`
	} `json:"want"`
}

// orderedProfile decodes a JSON object into shares in document order.
func orderedProfile(t *testing.T, raw json.RawMessage) []Share {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var out []Share
	for dec.More() {
		k, _ := dec.Token()
		var f float64
		if err := dec.Decode(&f); err != nil {
			t.Fatal(err)
		}
		out = append(out, Share{k.(string), f})
	}
	return out
}

func loadCases(t *testing.T) []analyzeCase {
	t.Helper()
	b, err := os.ReadFile("testdata/analyse.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []analyzeCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 300 {
		t.Fatalf("only %d cases in testdata/analyse.json", len(cases))
	}
	return cases
}

func TestAnalyzeMatchesUpstream(t *testing.T) {
	for _, tc := range loadCases(t) {
		t.Run(tc.Name, func(t *testing.T) {
			// Parsed as json.loads would, so key order is the document's.
			state, err := pyjson.Parse(tc.State)
			if err != nil {
				t.Fatal(err)
			}
			got := Analyze(state)
			w := tc.Want
			wantLang, wantMixed := "", ""
			if w.Language != nil {
				wantLang = *w.Language
			}
			if w.MixedSegment != nil {
				wantMixed = *w.MixedSegment
			}
			if got.MixedSegment != wantMixed {
				t.Errorf("MixedSegment = %q, want %q", got.MixedSegment, wantMixed)
			}
			if got.Script != w.Script || got.Language != wantLang || got.IsEnglish != w.IsEnglish ||
				got.LanguageUndecided != w.LanguageUndecided || got.DiacriticRate != w.DiacriticRate ||
				got.NonLatinFraction != w.NonLatinFraction {
				t.Errorf("Analyze = script %q lang %q english %v undecided %v diac %v nonlatin %v\n"+
					"      want script %q lang %q english %v undecided %v diac %v nonlatin %v",
					got.Script, got.Language, got.IsEnglish, got.LanguageUndecided, got.DiacriticRate, got.NonLatinFraction,
					w.Script, wantLang, w.IsEnglish, w.LanguageUndecided, w.DiacriticRate, w.NonLatinFraction)
			}
			wantProf := orderedProfile(t, w.ScriptProfile)
			if len(got.Profile) != len(wantProf) {
				t.Fatalf("profile = %v, want %v", got.Profile, wantProf)
			}
			for i := range wantProf {
				if got.Profile[i].Script != wantProf[i].Script || math.Abs(got.Profile[i].Fraction-wantProf[i].Fraction) > 1e-15 {
					t.Errorf("profile[%d] = %v, want %v", i, got.Profile[i], wantProf[i])
				}
			}
			if IsEnglish(state) != w.IsEnglish {
				t.Errorf("IsEnglish disagrees with Analyze")
			}
		})
	}
}

func TestStateShapes(t *testing.T) {
	tests := []struct {
		name  string
		state string // JSON
		want  string
	}{
		{"null", `null`, ""},
		{"number", `12`, ""},
		{"string", `"hello"`, "hello"},
		{"strings", `["a", "b"]`, "a b"},
		{"mixed list", `["a", 1, true, null, ["b"]]`, "a b"},
		{"document order", `{"z":"one","a":["two",{"k":"three"}],"n":1.5}`, "one two three"},
		{"depth 6 read, 7 not", `[[[[[["six", ["seven"]]]]]]]`, "six"},
		{"object depth 6 read, 7 not", `{"a":{"b":{"c":{"d":{"e":{"f":"six","g":{"h":"seven"}}}}}}}`, "six"},
		{"keys ignored", `{"English key": "valor"}`, "valor"},
		// The cases below are upstream's _iter_text/state_text (laya/lang.py) worked by hand.
		{"numbers, booleans and null are not text", `{"a": 1, "b": true, "c": null, "d": 2.5, "e": "x"}`, "x"},
		{"empty leaves still take a separator", `["a", "", "b"]`, "a  b"},
		{"nested keys ignored at every level", `{"subject": {"English": ["Olá", {"words": "tudo bem"}]}}`, "Olá tudo bem"},
		{"list of objects in order", `[{"role": "user", "content": "hola"}, {"role": "agent", "content": "hi"}]`, "user hola agent hi"},
		{"depth 6 through objects and lists", `{"a": [{"b": [{"c": ["six", ["seven"]]}]}]}`, "six"},
		{"a string of JSON is one leaf", `"{\"k\": \"v\"}"`, `{"k": "v"}`},
		{"empty object", `{}`, ""},
		{"empty string", `""`, ""},
	}
	for _, tt := range tests {
		state, err := pyjson.Parse([]byte(tt.state))
		if err != nil {
			t.Fatal(err)
		}
		if got := Text(state); got != tt.want {
			t.Errorf("%s: Text = %q, want %q", tt.name, got, tt.want)
		}
	}
	if got := Text(pyjson.Value{}); got != "" {
		t.Errorf("zero Value: Text = %q", got)
	}
	long := strings.Repeat("é", 5000)
	// 2000 + 1 + 1997 + 1 leave one character of budget: the third leaf gives "c".
	if got := Text(pyjson.Array(pyjson.String(strings.Repeat("a", 2000)), pyjson.String(strings.Repeat("b", 1997)), pyjson.String("cd"))); got != strings.Repeat("a", 2000)+" "+strings.Repeat("b", 1997)+" c" {
		t.Errorf("Text after the last cut: got ...%q", got[len(got)-4:])
	}
	if got := Text(pyjson.Array(pyjson.String(long), pyjson.String("next"))); len([]rune(got)) != maxChars {
		t.Errorf("Text of a 5000-character leaf has %d characters, want %d", len([]rune(got)), maxChars)
	}
	if got := Text(pyjson.Array(pyjson.String(strings.Repeat("a", 3998)), pyjson.String("bcd"))); got != strings.Repeat("a", 3998)+" b" {
		t.Errorf("Text budget: got ...%q", got[len(got)-4:])
	}
	// The budget counts the separators: a 3999-character leaf spends it all, so
	// nothing follows it, not even the space.
	if got := Text(pyjson.Array(pyjson.String(strings.Repeat("a", 3999)), pyjson.String("b"))); got != strings.Repeat("a", 3999) {
		t.Errorf("Text at the boundary: got ...%q", got[len(got)-4:])
	}
	if got := Text(pyjson.Array(pyjson.String(strings.Repeat("é", 4000)), pyjson.String("b"))); got != strings.Repeat("é", 4000) {
		t.Errorf("Text of exactly 4000 characters: %d characters", len([]rune(got)))
	}
}

func TestDetectScriptAndGuess(t *testing.T) {
	tests := []struct {
		text, script, lang string
	}{
		{"", Unknown, ""},
		{"12 + 3", Unknown, ""},
		{"hello world", Latin, ""},
		{"this is what we have in the box", Latin, "en"},
		{"la casa de los abuelos es muy bonita", Latin, "es"},
		{"Tokyo Tower 东", Latin, ""},
		{"東京都庁舎 Tokyo", "han", ""}, // a tie goes to the script seen first
	}
	for _, tt := range tests {
		if got := DetectScript(tt.text); got != tt.script {
			t.Errorf("DetectScript(%q) = %q, want %q", tt.text, got, tt.script)
		}
		if tt.script == Latin {
			if got := GuessLatinLanguage(tt.text); got != tt.lang {
				t.Errorf("GuessLatinLanguage(%q) = %q, want %q", tt.text, got, tt.lang)
			}
		}
	}
}

func BenchmarkAnalyze(b *testing.B) {
	state := pyjson.Object(
		pyjson.Member{Key: "subject", Value: pyjson.String("Problema com fatura")},
		pyjson.Member{Key: "body", Value: pyjson.String(strings.Repeat("Olá, a minha fatura está errada e preciso de ajuda. ", 60))},
	)
	for b.Loop() {
		Analyze(state)
	}
}
