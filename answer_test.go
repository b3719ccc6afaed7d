package laya

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/laya-metal/laya/heads"
	"github.com/laya-metal/laya/pyjson"
)

// goldenTemperatures reads the effective temperatures upstream applied (cases.json "load").
func goldenTemperatures(t *testing.T, name string) heads.Temperatures {
	load := mustGet(readRequestGolden(t, name, "cases.json"), "load")
	var temps heads.Temperatures
	for i, v := range mustGet(load, "temperature_applied").Items() {
		temps.ByType[i] = v.Float64()
	}
	temps.ByOptions = map[string]float64{}
	for _, m := range mustGet(load, "temperature_by_options_applied").Members() {
		temps.ByOptions[m.Key] = m.Value.Float64()
	}
	return temps
}

// TestDecodeGoldens decodes every golden case from its rows' raw logits and act
// probabilities (no forward pass) and compares with upstream's answer_json byte for byte.
func TestDecodeGoldens(t *testing.T) {
	for _, name := range requestCheckpoints {
		temps := goldenTemperatures(t, name)
		for _, c := range loadRequestCases(t, name) {
			qs, err := questionsFromValue(mustGet(c.request, "questions"))
			if err != nil {
				t.Fatal(err)
			}
			prepared, err := prepareQuestions(qs)
			if err != nil {
				t.Fatalf("%s/%s: %v", name, c.name, err)
			}
			rows := make([]row, len(c.rows))
			outs := make([]rowOutput, len(c.rows))
			for i, r := range c.rows {
				rows[i] = row{IDs: r.inputIDs, Markers: r.markers, Options: r.options}
				outs[i] = rowOutput{Logits: r.logits, ActProbs: r.actProbs}
			}
			res, err := assembleResult(prepared, rows, outs, temps)
			if err != nil {
				t.Fatalf("%s/%s: %v", name, c.name, err)
			}
			if got := res.String(); got != c.answerJSON {
				t.Errorf("%s/%s:\n got %s\nwant %s", name, c.name, got, c.answerJSON)
			}
			data, err := res.MarshalJSON()
			if err != nil || string(data) != c.answerJSON {
				t.Errorf("%s/%s: MarshalJSON differs from answer_json: %v", name, c.name, err)
			}
			// encoding/json re-compacts what MarshalJSON returns: still the same JSON value.
			if compact, err := json.Marshal(res); err != nil || !json.Valid(compact) {
				t.Errorf("%s/%s: json.Marshal: %v", name, c.name, err)
			}
		}
	}
}

func TestResultAccessors(t *testing.T) {
	qs, err := prepareQuestions(Questions{
		{"dept", ChoiceWithCriteria("Which?", Criterion{"billing", "refunds"}, Criterion{"other", ""})},
		{"urgency", ScoreQuestion("How urgent?", "low", "mid", "high")},
		{"refund", NoulQuestion("Refund?")},
		{"ints", mustParse(t, `{"type":"choice","instructions":"n","criteria":[3,"3",true]}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	rows := []row{{IDs: make([]int, 10)}, {IDs: make([]int, 11)}, {IDs: make([]int, 12)},
		{IDs: make([]int, 13), Options: optionStats{Options: 3, Distinct: 2, TokensPerOption: 4}}}
	outs := []rowOutput{
		{Logits: []float32{2, 0}, ActProbs: []float32{0.75, 0.25}},
		{Logits: []float32{0, 0, 0}, ActProbs: []float32{1, 0}},
		{Logits: []float32{0, 0}, ActProbs: []float32{0.5, 0.5}},
		{Logits: []float32{0, 1, 0}, ActProbs: []float32{1, 0}},
	}
	res, err := assembleResult(qs, rows, outs, heads.Temperatures{ByType: [3]float64{1, 1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	// softmax([2, 0]) = [0.8808, 0.1192]; H = 0.8808·0.1269 + 0.1192·2.1269 = 0.3653 nats,
	// confidence 1 − 0.3653/ln 2 = 0.4729. softmax([0, 1, 0]) = [0.2119, 0.5761, 0.2119];
	// H = 2·0.2119·1.5517 + 0.5761·0.5515 = 0.9753, confidence 1 − 0.9753/ln 3 = 0.1122.
	want := `{"model": "laya-rl-agent", "answers": {` +
		`"dept": {"type": "choice", "choice": "billing", "probabilities": {"billing": 0.8808, "other": 0.1192}, "confidence": 0.4729, "answer_confidence": 0.8808, "action": {"act_probability": 0.75}}, ` +
		`"urgency": {"type": "score", "score": 1.0, "legend": {"0": "low", "1": "mid", "2": "high"}, "probabilities": {"0": 0.3333, "1": 0.3333, "2": 0.3333}, "confidence": 0.0, "answer_confidence": 0.3333, "action": {"act_probability": 1.0}}, ` +
		`"refund": {"type": "noul", "noul": 0.5, "confidence": 0.5, "answer_confidence": 0.5, "action": {"act_probability": 0.5}}, ` +
		`"ints": {"type": "choice", "choice": "3", "probabilities": {"3": 0.2119, "3": 0.5761, "true": 0.2119}, "confidence": 0.1122, "answer_confidence": 0.5761, "action": {"act_probability": 1.0}}}, ` +
		`"usage": {"input_tokens": 46, "output_tokens": 0, "options": {"ints": {"total": 3, "distinct": 2, "tokens_per_option": 4}}}}`
	if got := res.String(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if ids := res.QuestionIDs(); !equalStrings(ids, []string{"dept", "urgency", "refund", "ints"}) {
		t.Errorf("ids %v", ids)
	}
	c, err := res.Choice("dept")
	if err != nil || c.Choice != "billing" || c.Probabilities[1].Label != "other" || c.ActProbability != 0.75 {
		t.Errorf("Choice(dept) = %+v, %v", c, err)
	}
	if c, err := res.Choice("ints"); err != nil || c.ChoiceValue.Kind() != pyjson.StringKind {
		t.Errorf("Choice(ints) = %+v, %v; want the string label \"3\"", c, err)
	}
	if s, err := res.Score("urgency"); err != nil || s.Score != 1 || len(s.Legend) != 3 {
		t.Errorf("Score(urgency) = %+v, %v", s, err)
	}
	if n, err := res.Noul("refund"); err != nil || n.Noul != 0.5 {
		t.Errorf("Noul(refund) = %+v, %v", n, err)
	}
	if _, err := res.Score("dept"); !errors.Is(err, ErrWrongKind) {
		t.Errorf("Score(dept) = %v, want ErrWrongKind", err)
	}
	if _, err := res.Noul("nope"); !errors.Is(err, ErrUnknownQuestion) {
		t.Errorf("Noul(nope) = %v, want ErrUnknownQuestion", err)
	}
	if typ, _ := res.Type("urgency"); typ != "score" {
		t.Errorf("Type(urgency) = %q", typ)
	}
}

func TestDecodeRejectsNonFinite(t *testing.T) {
	qs, _ := prepareQuestions(Questions{{"q", NoulQuestion("x")}})
	_, err := assembleResult(qs, []row{{IDs: []int{1}}}, []rowOutput{{Logits: []float32{float32(nan()), 0}, ActProbs: []float32{1, 0}}}, heads.Temperatures{ByType: [3]float64{1, 1, 1}})
	if !errors.Is(err, ErrNonFinite) {
		t.Errorf("err %v, want ErrNonFinite", err)
	}
}

func mustParse(t *testing.T, s string) Value {
	t.Helper()
	v, err := pyjson.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func nan() float64 { var zero float64; return zero / zero }

// TestAccessorsReturnCopies: editing an accessor's answer leaves the Result as it was.
func TestAccessorsReturnCopies(t *testing.T) {
	qs, err := prepareQuestions(Questions{
		{"dept", ChoiceQuestion("Which?", "billing", "other")},
		{"urgency", ScoreQuestion("How urgent?", "low", "high")},
	})
	if err != nil {
		t.Fatal(err)
	}
	outs := []rowOutput{{Logits: []float32{2, 0}, ActProbs: []float32{1, 0}}, {Logits: []float32{0, 1}, ActProbs: []float32{1, 0}}}
	res, err := assembleResult(qs, []row{{IDs: make([]int, 5)}, {IDs: make([]int, 5)}}, outs, heads.Temperatures{ByType: [3]float64{1, 1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	before := res.String()
	ch, _ := res.Choice("dept")
	ch.Probabilities[0].Probability = -1
	sc, _ := res.Score("urgency")
	sc.Probabilities[0], sc.Legend[0] = -1, pyjson.String("edited")
	if res.String() != before {
		t.Errorf("editing accessor answers changed the result:\n%s\nwas\n%s", res, before)
	}
}
