package laya

import (
	"os"
	"testing"

	"github.com/laya-metal/laya/pyjson"
)

// ParseResult reads back what Result writes: every oracle answer round-trips.
func TestParseResultRoundTrip(t *testing.T) {
	raw, err := os.ReadFile("testdata/oracle/goldens/real-en/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	v, _ := pyjson.Parse(raw)
	cases, _ := v.Get("cases")
	n := 0
	for _, c := range cases.Items() {
		aj, ok := c.Get("answer_json")
		if !ok || aj.Kind() != pyjson.StringKind {
			continue
		}
		res, err := ParseResult([]byte(aj.Str()))
		if err != nil {
			t.Fatalf("%s: %v", name(c), err)
		}
		want, _ := pyjson.Parse([]byte(aj.Str()))
		if got := res.Value().String(); got != want.String() {
			t.Errorf("%s:\n got %s\nwant %s", name(c), got, want)
		}
		n++
	}
	if n < 10 {
		t.Fatalf("only %d cases", n)
	}
	if _, err := ParseResult([]byte(`{"answers": {"a": {"type": "x"}}}`)); err == nil {
		t.Error("unknown answer type accepted")
	}
}

func name(c Value) Value {
	n, _ := c.Get("name")
	return n
}
