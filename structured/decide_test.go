package structured

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/pyjson"
)

// testdata/decide/goldens.json is upstream's own planner (laya/structured.py) run by
// scripts/goldens/decide/gen.py over the schemas it holds: the questions each schema
// plans to, or upstream's rejection text, and the projection of given answers.
func loadDecideGoldens(t *testing.T) []laya.Value {
	t.Helper()
	raw, err := os.ReadFile("../testdata/decide/goldens.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := pyjson.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	cases, _ := v.Get("cases")
	if len(cases.Items()) < 30 {
		t.Fatalf("only %d golden cases", len(cases.Items()))
	}
	return cases.Items()
}

func get(v laya.Value, key string) laya.Value {
	x, _ := v.Get(key)
	return x
}

// resultFromUpstream builds a Result from answers written in upstream's JSON shape.
func resultFromUpstream(t *testing.T, answers laya.Value) *laya.Result {
	t.Helper()
	res, err := laya.ResultFromValue(pyjson.Object(pyjson.Member{Key: "answers", Value: answers}))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// choiceResult is a result whose one choice question id chose label.
func choiceResult(t *testing.T, id, label string) *laya.Result {
	t.Helper()
	return resultFromUpstream(t, pyjson.Object(pyjson.Member{Key: id, Value: pyjson.Object(
		pyjson.Member{Key: "type", Value: pyjson.String("choice")},
		pyjson.Member{Key: "choice", Value: pyjson.String(label)},
		pyjson.Member{Key: "probabilities", Value: pyjson.Object(pyjson.Member{Key: label, Value: pyjson.Float(1)})},
	)}))
}

func TestPlanSchemaGoldens(t *testing.T) {
	for _, c := range loadDecideGoldens(t) {
		name := get(c, "name").Str()
		t.Run(name, func(t *testing.T) {
			plan, err := PlanSchema(get(c, "schema"))
			if want, rejected := c.Get("error"); rejected {
				var se *SchemaError
				if !errors.As(err, &se) || !errors.Is(err, ErrSchema) {
					t.Fatalf("err = %v, want the SchemaError %q", err, want.Str())
				}
				if se.Message != want.Str() {
					t.Fatalf("message\n got %q\nwant %q", se.Message, want.Str())
				}
				if se.Error() != "structured: "+want.Str() {
					t.Errorf("Error() = %q", se.Error())
				}
				return
			}
			if err != nil {
				t.Fatalf("PlanSchema: %v", err)
			}
			if got, want := plan.Questions().Value().String(), get(c, "questions").String(); got != want {
				t.Fatalf("questions\n got %s\nwant %s", got, want)
			}
			if err := laya.ValidateQuestions(plan.Questions()); err != nil {
				t.Errorf("the planned questions do not validate: %v", err)
			}
			answers, ok := c.Get("answers")
			if !ok {
				return
			}
			d, err := plan.Project(resultFromUpstream(t, answers))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := d.Values.String(), get(c, "values").String(); got != want {
				t.Errorf("values\n got %s\nwant %s", got, want)
			}
			dv := d.Value()
			for _, key := range []string{"confidence", "probabilities"} {
				if got, want := get(dv, key).String(), get(c, key).String(); got != want {
					t.Errorf("%s\n got %s\nwant %s", key, got, want)
				}
			}
		})
	}
}

// The projection keeps the JSON type of an enum value: 2 stays an integer, 2.5 a float,
// null a null.
func TestProjectKeepsTypes(t *testing.T) {
	plan, err := ParseSchema([]byte(`{"properties": {"v": {"enum": [2, 2.5, null, "2x"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		label string
		kind  pyjson.Kind
		float bool
	}{{"2", pyjson.NumberKind, false}, {"2.5", pyjson.NumberKind, true}, {"null", pyjson.NullKind, false}, {"2x", pyjson.StringKind, false}} {
		res := choiceResult(t, "v", tc.label)
		d, err := plan.Project(res)
		if err != nil {
			t.Fatal(err)
		}
		v := get(d.Values, "v")
		if v.Kind() != tc.kind || (tc.kind == pyjson.NumberKind && v.IsFloat() != tc.float) {
			t.Errorf("label %q projected to %s (%s)", tc.label, v, pyjson.TypeName(v))
		}
	}
}

// Local references: ours resolves "$defs" that upstream would reject; the goldens cover
// the pydantic shapes, these the failures.
func TestPlanSchemaRefErrors(t *testing.T) {
	for _, tc := range []struct{ name, schema, want string }{
		{"missing", `{"properties": {"a": {"$ref": "#/$defs/Nope"}}, "$defs": {}}`, `properties.a: $ref '#/$defs/Nope' names no local definition`},
		{"chain", `{"properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"$ref": "#/$defs/A"}}}`, `properties.a: $ref/recursion is not supported; flatten the schema`},
		{"not-string", `{"properties": {"a": {"$ref": 3}}}`, `properties.a: $ref/recursion is not supported; flatten the schema`},
		{"nested-object-def", `{"properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"type": "object", "properties": {"x": {"type": "boolean"}}}}}`, `properties.a: nested objects are not supported; flatten the schema`},
		{"def-not-object", `{"properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": 1}}`, `properties.a: property must be an object, got int`},
		{"enum-not-list", `{"properties": {"a": {"enum": "abc"}}}`, `properties.a: 'enum' must be a list, got str`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSchema([]byte(tc.schema))
			var se *SchemaError
			if !errors.As(err, &se) || se.Message != tc.want {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// Hostile schemas fail fast with a SchemaError or a parse error, without recursing
// into them or building anything their size.
func TestPlanSchemaHostile(t *testing.T) {
	deep := strings.Repeat(`{"anyOf": [`, 10000) + `{"type": "boolean"}` + strings.Repeat(`]}`, 10000)
	manyProps := `{"properties": {` + strings.Repeat(`"p": {"type": "boolean"}, `, 0)
	var b strings.Builder
	b.WriteString(manyProps)
	for i := range 10000 {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `"p%d": {"type": "boolean"}`, i)
	}
	b.WriteString("}}")
	hugeEnum := `{"properties": {"a": {"enum": [` + strings.TrimSuffix(strings.Repeat(`"x", `, 200000), ", ") + `]}}}`
	wideUnion := `{"properties": {"a": {"anyOf": [` + strings.TrimSuffix(strings.Repeat(`{"type": "boolean"}, `, 100000), ", ") + `]}}}`
	for _, tc := range []struct{ name, schema, want string }{
		{"10k-deep", `{"properties": {"a": ` + deep + `}}`, "pyjson: invalid JSON"},
		{"10k-properties", b.String(), "10000 properties exceeds MAX_PROPERTIES=32"},
		{"huge-enum", hugeEnum, "properties.a: 200000 options exceeds MAX_OPTIONS=32"},
		{"wide-union", wideUnion, "properties.a: 100000 variants in 'anyOf' cannot both be honoured"},
		{"top-array", `[` + strings.Repeat(`1,`, 1000) + `1]`, "expected a JSON schema object, got list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSchema([]byte(tc.schema))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %.300v, want %q", err, tc.want)
			}
		})
	}
	// A Value built in Go is not depth-bounded by the parser: the planner reads a fixed
	// number of levels, and the repr in its message is cut short.
	v := pyjson.Object(pyjson.Member{Key: "x", Value: pyjson.Bool(true)})
	for range 100000 {
		v = pyjson.Object(pyjson.Member{Key: "not", Value: v})
	}
	_, err := PlanSchema(pyjson.Object(pyjson.Member{Key: "properties", Value: pyjson.Object(pyjson.Member{Key: "a", Value: v})}))
	if err == nil || len(err.Error()) > 400 {
		t.Fatalf("err = %.400v (%d bytes)", err, len(fmt.Sprint(err)))
	}
}

// A union of titled consts is an enum with labels: the model reads the titles (and the
// branches' descriptions), the answer is the const.
func TestPlanSchemaTitledConsts(t *testing.T) {
	plan, err := ParseSchema([]byte(`{"properties": {"tier": {"description": "Which plan?", "oneOf": [
	  {"const": 1, "title": "free", "description": "no payment"},
	  {"const": 2, "title": "pro"},
	  {"const": 3},
	  {"type": "null"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"tier": {"type": "choice", "instructions": "Which plan?", "criteria": {"free": "no payment", "pro": null, "3": null}}}`
	if got := plan.Questions().Value().String(); got != want {
		t.Fatalf("questions\n got %s\nwant %s", got, want)
	}
	res := choiceResult(t, "tier", "pro")
	d, err := plan.Project(res)
	if err != nil || d.Values.String() != `{"tier": 2}` {
		t.Fatalf("values %v, %v", d, err)
	}
	// Mixed unions keep upstream's rule.
	if _, err := ParseSchema([]byte(`{"properties": {"a": {"oneOf": [{"const": 1}, {"type": "boolean"}]}}}`)); err == nil ||
		!strings.Contains(err.Error(), "2 variants in 'oneOf' cannot both be honoured") {
		t.Errorf("mixed union: %v", err)
	}
	many := `{"properties": {"a": {"anyOf": [` + strings.TrimSuffix(strings.Repeat(`{"const": 1},`, 40), ",") + `]}}}`
	if _, err := ParseSchema([]byte(many)); err == nil || !strings.Contains(err.Error(), "properties.a: 40 options exceeds MAX_OPTIONS=32") {
		t.Errorf("40 consts: %v", err)
	}
}
