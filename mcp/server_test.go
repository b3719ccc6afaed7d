package mcp_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/laya-metal/laya/mcp"
	"github.com/laya-metal/laya/pyjson"
	"github.com/laya-metal/laya/router"
	"github.com/laya-metal/laya/serve"
)

const realEN = "../testdata/oracle/checkpoints/real-en"

// golden returns upstream's request and answer_json for an oracle case.
func golden(t *testing.T, name string) (request, answers pyjson.Value) {
	t.Helper()
	raw, err := os.ReadFile("../testdata/oracle/goldens/real-en/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	v, _ := pyjson.Parse(raw)
	cases, _ := v.Get("cases")
	for _, c := range cases.Items() {
		if n, _ := c.Get("name"); n.Str() == name {
			req, _ := c.Get("request")
			aj, _ := c.Get("answer_json")
			res, err := pyjson.Parse([]byte(aj.Str()))
			if err != nil {
				t.Fatal(err)
			}
			answers, _ := res.Get("answers")
			return req, answers
		}
	}
	t.Fatalf("no golden case %q", name)
	return
}

// connect runs the server over b and returns a client connected to it (in-memory
// transports: the same JSON-RPC a stdio client speaks).
func connect(t *testing.T, b mcp.Backend) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, ct := sdk.NewInMemoryTransports()
	server := mcp.NewServer(b, "test")
	go server.Run(ctx, st)
	client := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1"}, nil)
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func localBackend(t *testing.T) mcp.Backend {
	t.Helper()
	r, err := router.New(router.WithModels(map[string]string{"english": realEN}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Unload(r.Loaded()...) })
	return mcp.Local(r)
}

// callTool sends raw JSON arguments, as a client writes them, and returns the result
// text parsed in order.
func callTool(t *testing.T, cs *sdk.ClientSession, name, args string) (pyjson.Value, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d contents", name, len(res.Content))
	}
	text := res.Content[0].(*sdk.TextContent).Text
	v, err := pyjson.Parse([]byte(text))
	if err != nil {
		t.Fatalf("%s: %v in %s", name, err, text)
	}
	return v, res.IsError
}

func get(v pyjson.Value, path ...string) pyjson.Value {
	for _, k := range path {
		v, _ = v.Get(k)
	}
	return v
}

func TestToolsList(t *testing.T) {
	cs := connect(t, localBackend(t))
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" || tool.InputSchema == nil {
			t.Errorf("tool %s has no description or schema", tool.Name)
		}
	}
	slices.Sort(names)
	if want := "laya_decide,laya_predict,laya_predict_batch,laya_route,laya_shortlist"; strings.Join(names, ",") != want {
		t.Fatalf("tools %v", names)
	}
	if cs.InitializeResult().ServerInfo.Name != "laya" {
		t.Errorf("server info %+v", cs.InitializeResult().ServerInfo)
	}
}

// testPredict asks golden case "choice_list" through laya_predict; the options are in
// non-alphabetical order ("technical" after "billing", "sales" last; "yes" before "no"),
// so an answer decoded through a Go map would come back reordered.
func testPredict(t *testing.T, cs *sdk.ClientSession, model string) {
	req, want := golden(t, "choice_list")
	v, isErr := callTool(t, cs, "laya_predict", req.String())
	if isErr {
		t.Fatalf("error %s", v)
	}
	if got := get(v, "answers").String(); got != want.String() {
		t.Errorf("answers\n got %s\nwant %s", got, want)
	}
	if get(v, "routing", "model").Str() != model || get(v, "usage", "input_tokens").Float64() == 0 {
		t.Errorf("result %s", v)
	}
}

func TestPredictKeepsOptionOrder(t *testing.T) {
	testPredict(t, connect(t, localBackend(t)), "english")
}

// The same tools answer from a running laya serve (upstream LAYA_BASE_URL).
func TestRemoteBackend(t *testing.T) {
	cfg := serve.DefaultConfig()
	cfg.Warmup, cfg.APIKey = false, "k"
	srv, err := serve.New(cfg, serve.SingleModel(realEN))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv.Start(ctx)
	for deadline := time.Now().Add(20 * time.Second); !srv.Ready(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("server not ready")
		}
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	b, err := mcp.Remote(hs.URL, "k", hs.Client())
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, b)
	testPredict(t, cs, "real-en") // the server's one checkpoint
	v, isErr := callTool(t, cs, "laya_shortlist", `{"state": "x", "questions": {"a": {"type": "noul", "instructions": "?"}}}`)
	if !isErr || get(v, "error").Str() != "unsupported" {
		t.Errorf("shortlist over HTTP: %s", v)
	}
	bad, _ := mcp.Remote(hs.URL, "wrong", hs.Client())
	v, isErr = callTool(t, connect(t, bad), "laya_predict", `{"state": "x", "questions": {"a": {"type": "noul", "instructions": "?"}}}`)
	if !isErr || get(v, "error").Str() != "unauthorized" {
		t.Errorf("wrong key: %s", v)
	}
	if _, err := mcp.Remote("ftp://x", "", nil); err == nil {
		t.Error("an ftp base URL was accepted")
	}
}

func TestDecideRouteBatchShortlist(t *testing.T) {
	cs := connect(t, localBackend(t))
	req, want := golden(t, "choice_list")
	state := get(req, "state").String()
	schema := `{"properties": {"dept": {"enum": ["billing", "technical", "sales"], "description": "Route this ticket."},
	  "two": {"enum": ["yes", "no"], "description": "Two-way?"}}}`
	v, isErr := callTool(t, cs, "laya_decide", `{"state": `+state+`, "schema": `+schema+`}`)
	if isErr {
		t.Fatalf("decide: %s", v)
	}
	if got := get(v, "values").String(); got != `{"dept": "technical", "two": "yes"}` {
		t.Errorf("values %s", got)
	}
	if got, w := get(v, "probabilities", "dept").String(), get(want, "dept", "probabilities").String(); got != w {
		t.Errorf("probabilities %s, want %s", got, w)
	}
	if get(v, "routing", "model").Str() != "english" {
		t.Errorf("routing %s", get(v, "routing"))
	}

	v, _ = callTool(t, cs, "laya_route", `{"state": "Mein Konto wurde zweimal belastet, bitte erstatten Sie den Betrag."}`)
	if get(v, "model").Str() != "multilingual" {
		t.Errorf("route %s", v)
	}

	v, isErr = callTool(t, cs, "laya_predict_batch", `{"requests": [`+req.String()+`, {"state": "x", "questions": {"q": {"type": "noul", "instructions": "Is it x?"}}, "model": "en"}]}`)
	results := get(v, "results").Items()
	if isErr || len(results) != 2 || get(results[0], "answers").String() != want.String() || get(results[1], "answers", "q", "type").Str() != "noul" {
		t.Errorf("batch %s", v)
	}

	v, isErr = callTool(t, cs, "laya_shortlist", `{"state": `+state+`, "questions": `+get(req, "questions").String()+`, "k": 2}`)
	if isErr || get(v, "answers", "dept", "type").Str() != "choice" || len(get(v, "answers", "dept", "probabilities").Members()) != 2 {
		t.Errorf("shortlist %s", v)
	}
}

func TestToolErrors(t *testing.T) {
	cs := connect(t, localBackend(t))
	noul := `{"a": {"type": "noul", "instructions": "?"}}`
	for _, tc := range []struct{ tool, args, code, message string }{
		{"laya_predict", `{"questions": ` + noul + `}`, "invalid_state", "state is required: a text or a JSON value"},
		{"laya_predict", `{"state": "x", "questions": {}}`, "invalid_questions", "questions must be a non-empty JSON object keyed by question name"},
		{"laya_predict", `{"state": "x", "questions": {"a": {"type": "vote", "instructions": "?"}}}`, "invalid_questions", ""},
		{"laya_predict", `{"state": "x", "questions": ` + noul + `, "model": "gpt"}`, "invalid_model", ""},
		{"laya_predict", `[1]`, "invalid_arguments", "arguments must be a JSON object"},
		{"laya_decide", `{"state": "x", "schema": {"properties": {"name": {"type": "string"}}}}`, "invalid_schema", "properties.name: a free string cannot be a fixed option set; use 'enum' or a boolean"},
		{"laya_decide", `{"state": "x", "schema": {"properties": {"a": ` + strings.Repeat(`{"anyOf": [`, 200) + `{}` + strings.Repeat(`]}`, 200) + `}}}`, "invalid_schema", ""},
		{"laya_predict_batch", `{"requests": []}`, "invalid_requests", "requests must be a non-empty list of {state, questions, model?}"},
		{"laya_predict_batch", `{"requests": [` + strings.TrimSuffix(strings.Repeat(`{"state": "x", "questions": `+noul+`},`, 65), ",") + `]}`, "invalid_requests", "65 requests exceeds the limit of 64 per call"},
		{"laya_predict_batch", `{"requests": [{"state": "x"}]}`, "invalid_questions", "requests[0]: questions must be a non-empty JSON object keyed by question name"},
		{"laya_shortlist", `{"state": "x", "questions": ` + noul + `, "k": 0}`, "invalid_k", "k must be a positive integer, got 0"},
	} {
		v, isErr := callTool(t, cs, tc.tool, tc.args)
		if !isErr || get(v, "error").Str() != tc.code || (tc.message != "" && get(v, "message").Str() != tc.message) {
			t.Errorf("%s %.80s: %s", tc.tool, tc.args, v)
		}
	}
}
