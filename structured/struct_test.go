package structured

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/pyjson"
)

// fixedPredictor answers with upstream-shaped answers and records the questions.
type fixedPredictor struct {
	t       *testing.T
	answers string
	asked   laya.Questions
}

func (f *fixedPredictor) Predict(_ context.Context, _ laya.State, qs laya.Questions) (*laya.Result, error) {
	f.asked = qs
	v, err := pyjson.Parse([]byte(f.answers))
	if err != nil {
		f.t.Fatal(err)
	}
	return resultFromUpstream(f.t, v), nil
}

type level int

func (level) EnumValues() []any { return []any{level(10), level(20)} }

type ticket struct {
	Department string   `json:"department" laya:"Which team?;enum=billing|support"`
	Urgency    int      `json:"urgency,omitempty" laya:"How urgent?;min=1;max=3"`
	Human      *bool    `json:"needs_human"`
	Ratio      float64  `laya:"min=-1;max=1"`
	Level      *level   `json:"level"`
	Count      uint8    `json:"count" laya:"enum=1|2"`
	Skipped    []string `json:"-"`
	Ignored    string   `laya:"-"`
	hidden     int
}

func TestDecideIntoRoundTrip(t *testing.T) {
	p := &fixedPredictor{t: t, answers: `{
	  "department": {"type": "choice", "choice": "support", "confidence": 0.6, "probabilities": {"billing": 0.4, "support": 0.6}},
	  "urgency": {"type": "score", "score": 1.1, "confidence": 0.3, "probabilities": {"0": 0.2, "1": 0.5, "2": 0.3}},
	  "needs_human": {"type": "noul", "noul": 0.75, "confidence": 0.75},
	  "Ratio": {"type": "score", "score": 0.2, "confidence": 0.3, "probabilities": {"0": 0.7, "1": 0.2, "2": 0.1}},
	  "level": {"type": "choice", "choice": "20", "confidence": 0.1, "probabilities": {"10": 0.45, "20": 0.55}},
	  "count": {"type": "choice", "choice": "2", "confidence": 0.1, "probabilities": {"1": 0.45, "2": 0.55}}}`}
	var got ticket
	got.hidden = 7
	d, err := DecideInto(context.Background(), p, laya.Text("x"), &got)
	if err != nil {
		t.Fatal(err)
	}
	if got.Department != "support" || got.Urgency != 2 || got.Human == nil || !*got.Human || got.Ratio != -1 ||
		got.Level == nil || *got.Level != 20 || got.Count != 2 || got.hidden != 7 {
		t.Errorf("stored %+v (human %v, level %v)", got, got.Human, got.Level)
	}
	want := `{"department": {"type": "choice", "instructions": "Which team?", "criteria": {"billing": null, "support": null}}, ` +
		`"urgency": {"type": "score", "instructions": "How urgent?", "criteria": ["1", "2", "3"]}, ` +
		`"needs_human": {"type": "noul", "instructions": "Is ` + "`needs_human`" + ` true?"}, ` +
		`"Ratio": {"type": "score", "instructions": "Score ` + "`Ratio`" + ` from -1 to 1", "criteria": ["-1", "0", "1"]}, ` +
		`"level": {"type": "choice", "instructions": "What is ` + "`level`" + `?", "criteria": {"10": null, "20": null}}, ` +
		`"count": {"type": "choice", "instructions": "What is ` + "`count`" + `?", "criteria": {"1": null, "2": null}}}`
	if s := p.asked.Value().String(); s != want {
		t.Errorf("questions\n got %s\nwant %s", s, want)
	}
	if s := d.Values.String(); s != `{"department": "support", "urgency": 2, "needs_human": true, "Ratio": -1, "level": 20, "count": 2}` {
		t.Errorf("values %s", s)
	}
}

type badString struct {
	Name string `json:"name"`
}
type badSlice struct {
	OK   bool     `json:"ok"`
	Tags []string `json:"tags"`
}
type badNested struct {
	Addr struct{ City string } `json:"addr"`
}
type badUnbounded struct {
	N int `json:"n" laya:"min=0"`
}
type badWide struct {
	N int `json:"n" laya:"min=0;max=100"`
}
type badTag struct {
	N int `json:"n" laya:"first;second"`
}
type badEnumNumber struct {
	N int `json:"n" laya:"enum=1|two"`
}
type badDup struct {
	X bool
	Y bool `json:"X"`
}
type badEmpty struct {
	_ bool
}

func TestPlanForRejectionsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		name string
		plan func() (*Plan, error)
		want string
	}{
		{"free-string", PlanFor[badString], "structured: structured.badString.Name: properties.name: a free string cannot be a fixed option set; use 'enum' or a boolean"},
		{"slice", PlanFor[badSlice], "structured: structured.badSlice.Tags: properties.tags: arrays are not supported; ask one field per element"},
		{"nested", PlanFor[badNested], "structured: structured.badNested.Addr: properties.addr: nested objects are not supported; flatten the schema"},
		{"unbounded", PlanFor[badUnbounded], "structured: structured.badUnbounded.N: properties.n: a numeric field needs integer 'minimum' and 'maximum' to become a score"},
		{"wide", PlanFor[badWide], "structured: structured.badWide.N: properties.n: 101 levels exceeds MAX_SCORE_LEVELS=10; narrow the range or use an enum"},
		{"two-instructions", PlanFor[badTag], `structured: structured.badTag.N: laya tag "first;second" has two instructions; separate options with ';' as key=value`},
		{"enum-number", PlanFor[badEnumNumber], `structured: structured.badEnumNumber.N: enum value "two" is not a number`},
		{"duplicate-name", PlanFor[badDup], "structured: structured.badDup: two fields have the same JSON name"},
		{"no-fields", PlanFor[badEmpty], "structured: structured.badEmpty: 'properties' must be a non-empty object"},
		{"not-struct", PlanFor[int], "structured: int: expected a struct, got int"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.plan()
			if err == nil || !errors.Is(err, ErrSchema) || err.Error() != tc.want {
				t.Fatalf("err = %v\nwant %s", err, tc.want)
			}
		})
	}
}

func TestDecideIntoBadDestination(t *testing.T) {
	p := &fixedPredictor{t: t}
	for _, dst := range []any{nil, ticket{}, (*ticket)(nil), new(int)} {
		if _, err := DecideInto(context.Background(), p, laya.Text("x"), dst); err == nil || !strings.HasPrefix(err.Error(), "structured: ") {
			t.Errorf("DecideInto(%T) err = %v", dst, err)
		}
	}
}
