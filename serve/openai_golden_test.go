package serve

import (
	"os"
	"strings"
	"testing"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/pyjson"
)

// testdata/decide/openai.json is upstream's laya/openai_api.py run by
// scripts/goldens/decide/openai.py: the questions each request plans to (or its
// rejection and status), and the message or output item that given answers make.

func pget(v pyjson.Value, path ...any) pyjson.Value {
	for _, k := range path {
		switch k := k.(type) {
		case string:
			v, _ = v.Get(k)
		case int:
			if k >= len(v.Items()) {
				return pyjson.Value{}
			}
			v = v.Items()[k]
		}
	}
	return v
}

// sameJSONText compares two JSON texts as values (upstream's json.dumps escapes
// non-ASCII text, ours does not).
func sameJSONText(t *testing.T, what string, got, want pyjson.Value) {
	t.Helper()
	g, err1 := pyjson.Parse([]byte(got.Str()))
	w, err2 := pyjson.Parse([]byte(want.Str()))
	if err1 != nil || err2 != nil || g.String() != w.String() {
		t.Errorf("%s = %s, want %s", what, got, want)
	}
}

func TestOpenAIUpstreamGoldens(t *testing.T) {
	raw, err := os.ReadFile("../testdata/decide/openai.json")
	if err != nil {
		t.Fatal(err)
	}
	golden, err := pyjson.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{cfg: DefaultConfig()}
	cases := pget(golden, "cases").Items()
	if len(cases) < 30 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, c := range cases {
		t.Run(pget(c, "name").Str(), func(t *testing.T) {
			responses := pget(c, "api").Str() == "responses"
			p, e := s.parseOpenAI([]byte(pget(c, "body").String()), responses)
			if want, rejected := c.Get("error"); rejected {
				status := int(pget(c, "status").Float64())
				if e == nil || e.status != status || e.detail != want.Str() {
					t.Fatalf("got %v, want %d %q", e, status, want.Str())
				}
				return
			}
			if e != nil {
				t.Fatalf("rejected: %d %v", e.status, e.detail)
			}
			if got, want := p.state.Value().String(), pget(c, "state").String(); got != want {
				t.Errorf("state %s, want %s", got, want)
			}
			// A named function asks only its own arguments here; upstream asks every
			// tool's and reads only the named one's.
			want := pget(c, "questions")
			if forced := pget(c, "forced_tool"); forced.Kind() == pyjson.StringKind {
				var kept []pyjson.Member
				for _, m := range want.Members() {
					if strings.HasPrefix(m.Key, forced.Str()+"__") {
						kept = append(kept, m)
					}
				}
				want = pyjson.Object(kept...)
			}
			if got := p.qs.Value().String(); got != want.String() {
				t.Errorf("questions\n got %s\nwant %s", got, want)
			}
			answers, ok := c.Get("answers")
			if !ok {
				return
			}
			res, err := laya.ResultFromValue(pyjson.Object(member("answers", answers),
				member("usage", pyjson.Object(member("input_tokens", pyjson.Int(42)), member("output_tokens", pyjson.Int(0))))))
			if err != nil {
				t.Fatal(err)
			}
			v, err := p.response(res, responses)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := pget(v, "usage").String(), pget(c, "usage").String(); got != want {
				t.Errorf("usage %s, want %s", got, want)
			}
			if got, want := pget(v, "model").String(), pget(c, "model").String(); got != want {
				t.Errorf("model %s, want %s", got, want)
			}
			if responses {
				got, want := pget(v, "output", 0), pget(c, "output", 0)
				if pget(got, "type").Str() != pget(want, "type").Str() || pget(got, "name").String() != pget(want, "name").String() {
					t.Fatalf("output %s, want %s", got, want)
				}
				if pget(want, "type").Str() == "function_call" {
					sameJSONText(t, "arguments", pget(got, "arguments"), pget(want, "arguments"))
				} else {
					sameJSONText(t, "output_text", pget(got, "content", 0, "text"), pget(want, "content", 0, "text"))
				}
				return
			}
			got, wantMsg := pget(v, "choices", 0, "message"), pget(c, "message")
			if f := pget(v, "choices", 0, "finish_reason").Str(); f != pget(c, "finish_reason").Str() {
				t.Errorf("finish_reason %q", f)
			}
			if calls := pget(wantMsg, "tool_calls"); calls.Kind() == pyjson.ArrayKind {
				if pget(got, "content").Kind() != pyjson.NullKind || len(pget(got, "tool_calls").Items()) != 1 ||
					pget(got, "tool_calls", 0, "function", "name").String() != pget(calls, 0, "function", "name").String() {
					t.Fatalf("message %s, want %s", got, wantMsg)
				}
				sameJSONText(t, "arguments", pget(got, "tool_calls", 0, "function", "arguments"), pget(calls, 0, "function", "arguments"))
			} else {
				sameJSONText(t, "content", pget(got, "content"), pget(wantMsg, "content"))
			}
		})
	}
	mod := pget(golden, "moderation")
	for i, answers := range pget(mod, "answers").Items() {
		res, err := laya.ResultFromValue(pyjson.Object(member("answers", answers)))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := moderationRow(res, pget(mod, "threshold").Float64()).String(), pget(mod, "results", i).String(); got != want {
			t.Errorf("moderation row %d\n got %s\nwant %s", i, got, want)
		}
	}
}
