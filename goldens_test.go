package laya

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/laya-metal/laya/pyjson"
)

// TestStateSerializationGoldens checks every golden case's state_serialized: upstream's
// json.dumps(state, ensure_ascii=False), or the string itself.
func TestStateSerializationGoldens(t *testing.T) {
	for _, name := range requestCheckpoints {
		for _, c := range loadRequestCases(t, name) {
			st := ValueState(mustGet(c.request, "state"))
			if got := st.Serialize(); got != c.stateSerialized {
				t.Errorf("%s/%s: state serialized as\n%q\nwant\n%q", name, c.name, got, c.stateSerialized)
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
func mustGet(v Value, key string) Value {
	m, _ := v.Get(key)
	return m
}

func readRequestGolden(t *testing.T, name, file string) Value {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(requestGoldenDir, name, file))
	if err != nil {
		t.Fatal(err)
	}
	v, err := pyjson.Parse(raw)
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
	for _, c := range mustGet(readRequestGolden(t, name, "cases.json"), "cases").Items() {
		gc := requestCase{
			name:            mustGet(c, "name").Str(),
			request:         mustGet(c, "request"),
			stateSerialized: mustGet(c, "state_serialized").Str(),
			stateIDs:        goldenInts(t, mustGet(c, "state_ids")),
			truncateLeft:    mustGet(c, "truncate_left").Bool(),
			answerJSON:      mustGet(c, "answer_json").Str(),
		}
		for _, r := range mustGet(c, "rows").Items() {
			st := mustGet(r, "options_stats")
			per := 0
			if p := mustGet(st, "tokens_per_option"); p.Kind() == pyjson.NumberKind {
				per = int(p.Float64())
			}
			gc.rows = append(gc.rows, requestRow{
				qid:          mustGet(r, "qid").Str(),
				inputIDs:     goldenInts(t, mustGet(r, "input_ids")),
				markers:      goldenInts(t, mustGet(r, "markers")),
				length:       int(mustGet(r, "length").Float64()),
				prefixLength: int(mustGet(r, "prefix_length").Float64()),
				bucket:       mustGet(r, "bucket").Str(),
				temperature:  mustGet(r, "temperature").Float64(),
				logits:       goldenFloats32(t, mustGet(r, "logits")),
				actProbs:     goldenFloats32(t, mustGet(r, "act_probs")),
				options: optionStats{
					Options:         int(mustGet(st, "options").Float64()),
					Distinct:        int(mustGet(st, "options_distinct").Float64()),
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
		f := it.Float64()
		if float64(float32(f)) != f {
			t.Fatalf("%s is not a float32 value", it)
		}
		out[i] = float32(f)
	}
	return out
}

// TestNullState: a null state is a state, as upstream's system_one(None) and
// Router.route(None) take it: serialized as json.dumps(None) ("null"), not a
// list, and answered.
func TestNullState(t *testing.T) {
	req, err := ParseRequest([]byte(`{"state": null, "questions": {"q": {"type": "noul", "instructions": "Is it empty?"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for name, st := range map[string]State{"parsed": req.State, "zero": {}, "ValueState": ValueState(pyjson.Null())} {
		if got := st.Serialize(); got != "null" || st.isList() || st.Value().Kind() != pyjson.NullKind {
			t.Errorf("%s: Serialize %q, list %v, kind %v", name, got, st.isList(), st.Value().Kind())
		}
	}
	agent, err := Load(context.Background(), checkpointDir("tiny-en"))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	res, err := agent.Predict(context.Background(), req.State, req.Questions)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := res.Noul("q"); err != nil {
		t.Errorf("no noul answer for a null state: %v", err)
	}
}
