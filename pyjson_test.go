package laya

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/laya-metal/laya/internal/pyfmt"
)

// TestPyFloatRepr checks Python's repr(float); every expected string was written by hand
// from CPython's rules (shortest round-trip digits, ".0" on integral values, exponent form
// when the decimal exponent is < -4 or ≥ 16, two-digit exponents with a sign).
func TestPyFloatRepr(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{1, "1.0"},
		{0, "0.0"},
		{math.Copysign(0, -1), "-0.0"},
		{0.9501, "0.9501"},
		{0.1, "0.1"},
		{1.5, "1.5"},
		{100, "100.0"},
		{1e-05, "1e-05"},
		{0.0001, "0.0001"},
		{0.00012345, "0.00012345"},
		{1.2345e-05, "1.2345e-05"},
		{1e15, "1000000000000000.0"},
		{9999999999999998, "9999999999999998.0"},
		{1e16, "1e+16"},
		{1.5e16, "1.5e+16"},
		{1e22, "1e+22"},
		{1.7976931348623157e308, "1.7976931348623157e+308"},
		{5e-324, "5e-324"},
		{123456789.125, "123456789.125"},
		{-2.5, "-2.5"},
		{0.30000000000000004, "0.30000000000000004"},
		{1.0 / 3, "0.3333333333333333"},
		{2.0 / 3, "0.6666666666666666"},
		{-1e-07, "-1e-07"},
	} {
		if got := pyfmt.FloatRepr(tc.in); got != tc.want {
			t.Errorf("pyfmt.FloatRepr(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct {
		in   float64
		want string
	}{{math.NaN(), "NaN"}, {math.Inf(1), "Infinity"}, {math.Inf(-1), "-Infinity"}} {
		if got := pyFloatLiteral(tc.in); got != tc.want {
			t.Errorf("pyFloatLiteral(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestPyDumps checks json.dumps(x, ensure_ascii=False) of parsed JSON; expected strings
// are written by hand from CPython's encoder (ESCAPE_DCT, float repr, int as is).
func TestPyDumps(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"b":1,"a":2}`, `{"b": 1, "a": 2}`},
		{`[1,2.50,1e2,-0,-0.0,1E-7,12345678901234567890123]`, `[1, 2.5, 100.0, 0, -0.0, 1e-07, 12345678901234567890123]`},
		{`"<a href=\"x\">&amp;</a> / \u00e9 日本"`, `"<a href=\"x\">&amp;</a> / é 日本"`},
		{`"tab\there\nnew\r\b\f\u0001\u001f\u007f"`, "\"tab\\there\\nnew\\r\\b\\f\\u0001\\u001f\u007f\""},
		{`"\u2028\u2029"`, "\"\u2028\u2029\""},
		{`"\ud83d\ude00 \\ \/"`, `"😀 \\ /"`},
		{`{"a":{"a":1,"b":[]},"c":{}}`, `{"a": {"a": 1, "b": []}, "c": {}}`},
		{`{"k":1,"j":2,"k":3}`, `{"k": 3, "j": 2}`},
		{`[true,false,null,NaN,Infinity,-Infinity]`, `[true, false, null, NaN, Infinity, -Infinity]`},
		{`1e400`, `Infinity`},
		{` "x" `, `"x"`},
	} {
		v, err := ParseJSON([]byte(tc.in))
		if err != nil {
			t.Errorf("ParseJSON(%s): %v", tc.in, err)
			continue
		}
		if got := pyDumps(v); got != tc.want {
			t.Errorf("pyDumps(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestParseJSONRejects(t *testing.T) {
	for _, in := range []string{``, `{`, `{"a" 1}`, `[1,]`, `01`, `1.`, `"a` + "\n" + `"`, `{"a":1} x`, `'a'`, `"\x"`, `-`, `tru`} {
		if _, err := ParseJSON([]byte(in)); !errors.Is(err, ErrInvalidJSON) {
			t.Errorf("ParseJSON(%q) = %v, want ErrInvalidJSON", in, err)
		}
	}
}

func TestPyRepr(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"q"`, `'q'`},
		{`"it's"`, `"it's"`},
		{`"both ' and \""`, `'both \' and "'`},
		{`"a\nb\\c"`, `'a\nb\\c'`},
		{`["b"]`, `['b']`},
		{`{"x":[1,2.0,null,true]}`, `{'x': [1, 2.0, None, True]}`},
		{`"é\u00a0\u0007"`, `'é\xa0\x07'`},
		{`null`, `None`},
	} {
		v, err := ParseJSON([]byte(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		if got := pyRepr(v); got != tc.want {
			t.Errorf("pyRepr(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestValueOf(t *testing.T) {
	v, err := ValueOf(map[string]any{"b": 1, "a": []any{1.5, "x", nil, true, float32(0.5)}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := pyDumps(v), `{"a": [1.5, "x", null, true, 0.5], "b": 1}`; got != want {
		t.Errorf("ValueOf = %s, want %s", got, want)
	}
	if _, err := ValueOf(struct{}{}); !errors.Is(err, ErrInvalidJSON) {
		t.Errorf("ValueOf(struct) = %v, want ErrInvalidJSON", err)
	}
}

// TestStateSerializationGoldens checks every golden case's state_serialized: upstream's
// json.dumps(state, ensure_ascii=False), or the string itself.
func TestStateSerializationGoldens(t *testing.T) {
	for _, name := range requestCheckpoints {
		for _, c := range loadRequestCases(t, name) {
			st := ValueState(c.request.MustGet("state"))
			if got := st.Serialize(); got != c.stateSerialized {
				t.Errorf("%s/%s: state serialised as\n%q\nwant\n%q", name, c.name, got, c.stateSerialized)
			}
			if st.isList() != c.truncateLeft {
				t.Errorf("%s/%s: list state %v, want truncate_left %v", name, c.name, st.isList(), c.truncateLeft)
			}
		}
	}
}

// requestGoldenDir is the oracle copy in testdata.
var requestGoldenDir = filepath.Join("testdata", "oracle", "goldens")

var requestCheckpoints = []string{"tiny-en", "tiny-ml", "real-en"}

// MustGet is a test helper: the member or a zero Value.
func (v Value) MustGet(key string) Value {
	m, _ := v.Get(key)
	return m
}

func readRequestGolden(t *testing.T, name, file string) Value {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(requestGoldenDir, name, file))
	if err != nil {
		t.Fatal(err)
	}
	v, err := ParseJSON(raw)
	if err != nil {
		t.Fatalf("%s/%s: %v", name, file, err)
	}
	return v
}

// requestCase is one entry of cases.json, read with the order-preserving parser.
type requestCase struct {
	name            string
	request         Value
	stateSerialized string
	stateIDs        []int
	truncateLeft    bool
	rows            []requestRow
	answerJSON      string
}

type requestRow struct {
	qid          string
	inputIDs     []int
	markers      []int
	length       int
	prefixLength int
	bucket       string
	temperature  float64
	logits       []float32
	actProbs     []float32
	options      optionStats
}

func loadRequestCases(t *testing.T, name string) []requestCase {
	t.Helper()
	var out []requestCase
	for _, c := range readRequestGolden(t, name, "cases.json").MustGet("cases").Items() {
		gc := requestCase{
			name:            c.MustGet("name").Str(),
			request:         c.MustGet("request"),
			stateSerialized: c.MustGet("state_serialized").Str(),
			stateIDs:        goldenInts(t, c.MustGet("state_ids")),
			truncateLeft:    c.MustGet("truncate_left").Bool(),
			answerJSON:      c.MustGet("answer_json").Str(),
		}
		for _, r := range c.MustGet("rows").Items() {
			st := r.MustGet("options_stats")
			per := 0
			if p := st.MustGet("tokens_per_option"); p.Kind() == NumberKind {
				per = int(p.float())
			}
			gc.rows = append(gc.rows, requestRow{
				qid:          r.MustGet("qid").Str(),
				inputIDs:     goldenInts(t, r.MustGet("input_ids")),
				markers:      goldenInts(t, r.MustGet("markers")),
				length:       int(r.MustGet("length").float()),
				prefixLength: int(r.MustGet("prefix_length").float()),
				bucket:       r.MustGet("bucket").Str(),
				temperature:  r.MustGet("temperature").float(),
				logits:       goldenFloats32(t, r.MustGet("logits")),
				actProbs:     goldenFloats32(t, r.MustGet("act_probs")),
				options: optionStats{
					Options:         int(st.MustGet("options").float()),
					Distinct:        int(st.MustGet("options_distinct").float()),
					TokensPerOption: per,
				},
			})
		}
		out = append(out, gc)
	}
	return out
}

func goldenInts(t *testing.T, v Value) []int {
	out := make([]int, len(v.Items()))
	for i, it := range v.Items() {
		n, err := strconv.Atoi(it.Literal())
		if err != nil {
			t.Fatalf("not an int: %s", it)
		}
		out[i] = n
	}
	return out
}

// floats32 reads float32 values written by Python as the repr of their float64 widening.
func goldenFloats32(t *testing.T, v Value) []float32 {
	out := make([]float32, len(v.Items()))
	for i, it := range v.Items() {
		f := it.float()
		if float64(float32(f)) != f {
			t.Fatalf("%s is not a float32 value", it)
		}
		out[i] = float32(f)
	}
	return out
}
