package laya

import (
	"context"
	"errors"
	"testing"

	"github.com/laya-metal/laya/pyjson"
)

// TestErrorGoldens runs every request of errors.json that is rejected before
// tokenization and checks upstream's exact message and the sentinel error. The case
// needing a tokenizer (too_many_options) is checked in sequence_test.go; the
// empty-questions case must give upstream's exact JSON without touching a model.
func TestErrorGoldens(t *testing.T) {
	for _, name := range requestCheckpoints {
		for _, c := range mustGet(readRequestGolden(t, name, "errors.json"), "cases").Items() {
			caseName := mustGet(c, "name").Str()
			req := mustGet(c, "request")
			qs, err := questionsFromValue(mustGet(req, "questions"))
			if err != nil {
				t.Fatalf("%s/%s: %v", name, caseName, err)
			}
			if want, ok := c.Get("result_json"); ok {
				var a Agent // no model: empty questions must not need one
				res, err := a.Predict(context.Background(), ValueState(mustGet(req, "state")), qs)
				if err != nil {
					t.Fatalf("%s/%s: %v", name, caseName, err)
				}
				if got := res.String(); got != want.Str() {
					t.Errorf("%s/%s: got %s, want %s", name, caseName, got, want.Str())
				}
				continue
			}
			if caseName == "too_many_options" {
				continue
			}
			wantMsg := mustGet(c, "message").Str()
			_, err = prepareQuestions(qs)
			if err == nil {
				t.Errorf("%s/%s: accepted, want %q", name, caseName, wantMsg)
				continue
			}
			if err.Error() != wantMsg {
				t.Errorf("%s/%s:\n got %q\nwant %q", name, caseName, err.Error(), wantMsg)
			}
			if !errors.Is(err, ErrInvalidQuestion) || errors.Is(err, ErrTooManyOptions) {
				t.Errorf("%s/%s: %v does not match ErrInvalidQuestion alone", name, caseName, err)
			}
			var qe *QuestionError
			if !errors.As(err, &qe) || qe.QuestionID == "" {
				t.Errorf("%s/%s: %v is not a *QuestionError naming the question", name, caseName, err)
			}
		}
	}
}

// TestQuestionEdgeCases covers upstream validation and rendering rules the goldens do not
// reach; expected texts follow upstream _check_question / render_options at 8ef5b2dd.
func TestQuestionEdgeCases(t *testing.T) {
	for _, tc := range []struct {
		name, def string
		wantErr   string
		options   []string
	}{
		{"missing type", `{"instructions":"x"}`, "question 'q': unknown type None; use one of ['choice', 'noul', 'score']", nil},
		{"numeric type", `{"type":1,"instructions":"x"}`, "question 'q': unknown type 1; use one of ['choice', 'noul', 'score']", nil},
		{"definition list", `[]`, "question 'q': definition must be a dict, got list", nil},
		{"definition null", `null`, "question 'q': definition must be a dict, got NoneType", nil},
		{"choice dict label", `{"type":"choice","instructions":"x","criteria":["a",{"b":1}]}`,
			"question 'q': choice label 1 is a dict; a label is rendered as option text and used as the answer key, so it must be a scalar (a string, number or None), got {'b': 1}", nil},
		{"score null first", `{"type":"score","instructions":"x","criteria":[null]}`,
			"question 'q': score level 0 is null; give every level a description, index 0 first", nil},
		{"noul mixed keys sorted", `{"type":"noul","instructions":"x","criteria":{"True":"a","Maybe":"b"}}`,
			"question 'q': a noul question takes 'criteria' keyed only 'true'/'false' (either or both, and omitted is fine), got ['maybe', 'true']. Those keys are the option texts the model reads; any other key was silently dropped and replaced with the defaults. If you want the answer worded differently, keep 'criteria' keyed 'true'/'false' and set 'labels' instead.", nil},
		{"noul labels extra key", `{"type":"noul","instructions":"x","labels":{"false":"n","true":"y","x":"z"}}`,
			"question 'q': noul labels must map exactly 'false' and 'true' to distinct non-empty strings", nil},
		{"noul labels blank", `{"type":"noul","instructions":"x","labels":{"false":"  ","true":"y"}}`,
			"question 'q': noul labels must map exactly 'false' and 'true' to distinct non-empty strings", nil},
		{"noul labels not strings", `{"type":"noul","instructions":"x","labels":{"false":0,"true":1}}`,
			"question 'q': noul labels must map exactly 'false' and 'true' to distinct non-empty strings", nil},
		{"labels on score", `{"type":"score","instructions":"x","criteria":["a"],"labels":null}`,
			"question 'q': 'labels' is only supported for noul questions", nil},

		{"choice descriptions", `{"type":"choice","instructions":"x","criteria":{"a":"first","b":null,"c":"","d":0,"e":false,"f":{"k":[1,2.50]}}}`, "",
			[]string{"a: first", "b", "c", "d: 0", "e: false", `f: {"k": [1, 2.5]}`}},
		{"choice list dedup like dict.fromkeys", `{"type":"choice","instructions":"x","criteria":["a",1,"a",1.0,true,null,2.5,"1"]}`, "",
			[]string{"a", "1", "None", "2.5", "1"}},
		{"score structured levels", `{"type":"score","instructions":"x","criteria":[{"level":"low"},"high",3]}`, "",
			[]string{`level 0: {"level": "low"}`, "level 1: high", "level 2: 3"}},
		{"noul defaults", `{"type":"noul","instructions":"x"}`, "",
			[]string{"false: no, the statement does not hold", "true: yes, the statement holds"}},
		{"noul null criteria and labels", `{"type":"noul","instructions":"x","criteria":null,"labels":null}`, "",
			[]string{"false: no, the statement does not hold", "true: yes, the statement holds"}},
		{"noul boolean-cased keys and labels", `{"type":"noul","instructions":"x","criteria":{"TRUE":{"reason":"money"},"false":""},"labels":{"false":" No ","true":"Yes"}}`, "",
			[]string{"No: no, the statement does not hold", `Yes: {"reason": "money"}`}},
	} {
		def, err := pyjson.Parse([]byte(tc.def))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		qs, err := prepareQuestions(Questions{{ID: "q", Definition: def}})
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("%s: err %v\nwant %s", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := qs[0].options; !equalStrings(got, tc.options) {
			t.Errorf("%s: options %q, want %q", tc.name, got, tc.options)
		}
	}
}

func TestInstructionsRendering(t *testing.T) {
	for _, tc := range []struct{ ins, want string }{
		{`"Plain text"`, "Plain text"},
		{`{"task":"choose département"}`, `{"task": "choose département"}`}, // ensure_ascii=False (fact 3)
		{`["a",1.0]`, `["a", 1.0]`},
		{`null`, "null"},
		{`12`, "12"},
	} {
		def, _ := pyjson.Parse([]byte(`{"type":"noul","instructions":` + tc.ins + `}`))
		qs, err := prepareQuestions(Questions{{ID: "q", Definition: def}})
		if err != nil {
			t.Fatal(err)
		}
		if qs[0].instructions != tc.want {
			t.Errorf("instructions %s rendered %q, want %q", tc.ins, qs[0].instructions, tc.want)
		}
	}
}

func TestDuplicateQuestionID(t *testing.T) {
	_, err := prepareQuestions(Questions{{"a", NoulQuestion("x")}, {"a", NoulQuestion("y")}})
	if !errors.Is(err, ErrInvalidQuestion) {
		t.Errorf("duplicate id: %v, want ErrInvalidQuestion", err)
	}
}

// TestConstructors checks the typed constructors produce upstream's schema.
func TestConstructors(t *testing.T) {
	for _, tc := range []struct {
		def  Value
		want string
	}{
		{ChoiceQuestion("Pick", "a", "b"), `{"type": "choice", "instructions": "Pick", "criteria": ["a", "b"]}`},
		{ChoiceWithCriteria("Pick", Criterion{"billing", "refunds"}, Criterion{"other", ""}),
			`{"type": "choice", "instructions": "Pick", "criteria": {"billing": "refunds", "other": ""}}`},
		{ScoreQuestion("How urgent?", "low", "high"), `{"type": "score", "instructions": "How urgent?", "criteria": ["low", "high"]}`},
		{NoulQuestion("Refund?"), `{"type": "noul", "instructions": "Refund?"}`},
		{NoulWithCriteria("Refund?", "no refund", "refund"), `{"type": "noul", "instructions": "Refund?", "criteria": {"false": "no refund", "true": "refund"}}`},
		{NoulWithLabels("Refund?", "no", "yes"), `{"type": "noul", "instructions": "Refund?", "labels": {"false": "no", "true": "yes"}}`},
	} {
		if got := tc.def.String(); got != tc.want {
			t.Errorf("got %s, want %s", got, tc.want)
		}
		if _, err := prepareQuestions(Questions{{"q", tc.def}}); err != nil {
			t.Errorf("%s: %v", tc.want, err)
		}
	}
}

func TestParseRequest(t *testing.T) {
	req, err := ParseRequest([]byte(`{"state": {"z": 1, "a": [1.50]}, "questions": {"b": {"type":"noul","instructions":"x"}, "a": {"type":"noul","instructions":"y"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := req.State.Serialize(), `{"z": 1, "a": [1.5]}`; got != want {
		t.Errorf("state %s, want %s", got, want)
	}
	if len(req.Questions) != 2 || req.Questions[0].ID != "b" || req.Questions[1].ID != "a" {
		t.Errorf("question order %v", req.Questions)
	}
	text, err := ParseRequest([]byte(`{"state": "plain [MASK] text", "questions": {}}`))
	if err != nil || !text.State.isText || text.State.Serialize() != "plain [MASK] text" {
		t.Errorf("string state: %+v %v", text.State, err)
	}
	for _, bad := range []string{`[]`, `{"questions": {}}`, `{"state": ""}`, `{"state": "", "questions": []}`, `{"state": "", "questions": {}, "extra": 1}`, `{`} {
		if _, err := ParseRequest([]byte(bad)); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("ParseRequest(%s) = %v, want ErrInvalidRequest", bad, err)
		}
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
