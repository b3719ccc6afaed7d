package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/preset"
	"github.com/laya-metal/laya/pyjson"
)

// The OpenAI routes are driven by the official Go client (github.com/openai/openai-go)
// against a running server on the bundled checkpoint. The schema and tools ask exactly
// the questions of golden case "choice_list" (dept: technical, two: yes are upstream's
// answers), with the case's state sent as the user message: a text state is read as
// the JSON state's serialization.

var ticketParams = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"dept": map[string]any{"type": "string", "enum": []any{"billing", "technical", "sales"}, "description": "Route this ticket."},
		"two":  map[string]any{"enum": []any{"yes", "no"}, "description": "Two-way?"},
	},
}

const wantTicket = `{"dept": "technical", "two": "yes"}`

func choiceListState(t *testing.T) string {
	t.Helper()
	for _, c := range goldenCases(t) {
		if c.Name == "choice_list" {
			var req struct{ State json.RawMessage }
			if err := json.Unmarshal(c.Request, &req); err != nil {
				t.Fatal(err)
			}
			st, err := laya.JSONState(req.State)
			if err != nil {
				t.Fatal(err)
			}
			return st.Serialize()
		}
	}
	t.Fatal("no golden case choice_list")
	return ""
}

func openAIClient(ts *testServer, key string) openai.Client {
	return openai.NewClient(option.WithBaseURL(ts.url+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
}

func sameJSON(t *testing.T, what, got, want string) {
	t.Helper()
	g, err := pyjson.Parse([]byte(got))
	if err != nil {
		t.Fatalf("%s: %v in %q", what, err, got)
	}
	w, _ := pyjson.Parse([]byte(want))
	if g.String() != w.String() {
		t.Errorf("%s = %s, want %s", what, g, w)
	}
}

func TestOpenAIChatCompletions(t *testing.T) {
	ts := startServer(t, SingleModel(realEN), nil)
	client := openAIClient(ts, "not-needed")
	ctx := context.Background()
	state := choiceListState(t)

	t.Run("json_schema", func(t *testing.T) {
		comp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:    "laya",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(state)},
			ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "ticket", Schema: ticketParams},
			}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(comp.Choices) != 1 || comp.Choices[0].FinishReason != "stop" || comp.Object != "chat.completion" || comp.Model != "laya" {
			t.Fatalf("completion %s", comp.RawJSON())
		}
		sameJSON(t, "content", comp.Choices[0].Message.Content, wantTicket)
		if u := comp.Usage; u.CompletionTokens != 0 || u.PromptTokens == 0 || u.TotalTokens != u.PromptTokens {
			t.Errorf("usage %+v", u)
		}
	})

	tool := func(name, desc string) openai.ChatCompletionToolUnionParam {
		return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: name, Description: openai.String(desc), Parameters: shared.FunctionParameters(ticketParams),
		})
	}
	t.Run("one tool", func(t *testing.T) {
		comp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:    "laya",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(state)},
			Tools:    []openai.ChatCompletionToolUnionParam{tool("route_ticket", "Route a support ticket")},
		})
		if err != nil {
			t.Fatal(err)
		}
		c := comp.Choices[0]
		if c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) != 1 || c.Message.Content != "" {
			t.Fatalf("choice %s", c.RawJSON())
		}
		call := c.Message.ToolCalls[0]
		if call.Function.Name != "route_ticket" || !strings.HasPrefix(call.ID, "call_") {
			t.Errorf("call %s", call.RawJSON())
		}
		sameJSON(t, "arguments", call.Function.Arguments, wantTicket)
	})
	t.Run("forced tool", func(t *testing.T) {
		comp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:    "laya",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(state)},
			Tools:    []openai.ChatCompletionToolUnionParam{tool("escalate", "Hand to a human"), tool("route_ticket", "Route a support ticket")},
			ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfFunctionToolChoice: &openai.ChatCompletionNamedToolChoiceParam{
				Function: openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "route_ticket"},
			}},
		})
		if err != nil {
			t.Fatal(err)
		}
		call := comp.Choices[0].Message.ToolCalls[0]
		if call.Function.Name != "route_ticket" {
			t.Errorf("forced call went to %q", call.Function.Name)
		}
		sameJSON(t, "arguments", call.Function.Arguments, wantTicket)
	})
	t.Run("tool selection", func(t *testing.T) {
		comp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:    "laya",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(state)},
			Tools:    []openai.ChatCompletionToolUnionParam{tool("escalate", "Hand to a human"), tool("route_ticket", "Route a support ticket")},
		})
		if err != nil {
			t.Fatal(err)
		}
		// The selection is the choice over the tool names, asked in the same pass:
		// the call must be what the model answers to that question.
		agent, err := laya.Load(ctx, realEN)
		if err != nil {
			t.Fatal(err)
		}
		defer agent.Close()
		q := laya.Questions{{ID: "tool", Definition: pyjson.Object(
			member("type", pyjson.String("choice")),
			member("instructions", pyjson.String("Which tool should be used for this request?")),
			member("criteria", pyjson.Object(member("escalate", pyjson.String("Hand to a human")), member("route_ticket", pyjson.String("Route a support ticket")))))}}
		res, err := agent.Predict(ctx, laya.Text(state), q)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := res.Choice("tool")
		call := comp.Choices[0].Message.ToolCalls[0]
		if call.Function.Name != want.Choice {
			t.Errorf("called %q, the selection question answers %q", call.Function.Name, want.Choice)
		}
		sameJSON(t, "arguments", call.Function.Arguments, wantTicket)
	})
}

func TestOpenAIResponses(t *testing.T) {
	ts := startServer(t, SingleModel(realEN), nil)
	client := openAIClient(ts, "x")
	ctx := context.Background()
	state := choiceListState(t)

	resp, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Model: "laya",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(state)},
		Text:  responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigParamOfJSONSchema("ticket", ticketParams)},
	})
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "output_text", resp.OutputText(), wantTicket)
	if resp.Usage.OutputTokens != 0 || resp.Usage.InputTokens == 0 || resp.Status != "completed" {
		t.Errorf("response %s", resp.RawJSON())
	}

	resp, err = client.Responses.New(ctx, responses.ResponseNewParams{
		Model:      "laya",
		Input:      responses.ResponseNewParamsInputUnion{OfString: openai.String(state)},
		Tools:      []responses.ToolUnionParam{responses.ToolParamOfFunction("escalate", ticketParams, false), responses.ToolParamOfFunction("route_ticket", ticketParams, false)},
		ToolChoice: responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "route_ticket"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Output) != 1 || resp.Output[0].Type != "function_call" || resp.Output[0].Name != "route_ticket" {
		t.Fatalf("output %s", resp.RawJSON())
	}
	sameJSON(t, "arguments", resp.Output[0].Arguments.OfString, wantTicket)
}

func TestOpenAIModerations(t *testing.T) {
	ts := startServer(t, SingleModel(realEN), func(c *Config) { c.ModerationThreshold = 0.3 })
	client := openAIClient(ts, "x")
	ctx := context.Background()
	inputs := []string{"you are an idiot", "Thanks, the invoice is paid."}
	mod, err := client.Moderations.New(ctx, openai.ModerationNewParams{
		Input: openai.ModerationNewParamsInputUnion{OfStringArray: inputs},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(mod.Results) != len(inputs) || !strings.HasPrefix(mod.ID, "modr-") {
		t.Fatalf("moderation %s", mod.RawJSON())
	}
	agent, err := laya.Load(ctx, realEN)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	for i, in := range inputs {
		res, err := agent.Predict(ctx, laya.ValueState(pyjson.Object(member("post", pyjson.String(in)))), preset.ModerationQuestions())
		if err != nil {
			t.Fatal(err)
		}
		var row struct {
			Flagged        bool
			Categories     map[string]bool
			CategoryScores map[string]float64 `json:"category_scores"`
		}
		if err := json.Unmarshal([]byte(mod.Results[i].RawJSON()), &row); err != nil {
			t.Fatal(err)
		}
		flagged := false
		for _, id := range res.QuestionIDs() {
			var want float64
			if n, err := res.Noul(id); err == nil {
				want = n.Noul
			} else {
				sc, _ := res.Score(id)
				want = sc.Score / float64(len(sc.Probabilities)-1) // severity on 0..1
			}
			if d := row.CategoryScores[id] - want; d > 1e-4 || d < -1e-4 {
				t.Errorf("input %d %s: score %v, want %v", i, id, row.CategoryScores[id], want)
			}
			if row.Categories[id] != (want >= 0.3) {
				t.Errorf("input %d %s: flagged %v at score %v", i, id, row.Categories[id], want)
			}
			flagged = flagged || want >= 0.3
		}
		if row.Flagged != flagged || len(row.Categories) != 5 {
			t.Errorf("input %d: %+v", i, row)
		}
	}
}

func TestOpenAIModels(t *testing.T) {
	ts := startServer(t, SingleModel(realEN), func(c *Config) { c.APIKey = "sekret" })
	ctx := context.Background()
	client, wrong := openAIClient(ts, "sekret"), openAIClient(ts, "wrong")
	page, err := client.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || page.Data[0].ID != "real-en" || page.Data[0].OwnedBy != "laya" {
		t.Fatalf("models %s", page.RawJSON())
	}
	m, err := client.Models.Get(ctx, "real-en")
	if err != nil || m.ID != "real-en" {
		t.Fatalf("model %v %v", m, err)
	}
	_, err = wrong.Models.List(ctx)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 {
		t.Fatalf("wrong key: %v", err)
	}
	_, err = client.Models.Get(ctx, "nope")
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Fatalf("unknown model: %v", err)
	}
}

// Rejections, with upstream's statuses: 400 for what a decision model cannot do, 422 for
// a schema outside the subset (naming the path), 413 past the body limit, 401 without the
// key.
func TestOpenAIRejections(t *testing.T) {
	ts := startServer(t, SingleModel(realEN), func(c *Config) { c.APIKey = "k"; c.Limits.BodyBytes = 512 << 10 })
	msg := `"messages": [{"role": "user", "content": "hi"}]`
	fn := func(name string) string {
		return `{"type": "function", "function": {"name": "` + name + `", "parameters": {"properties": {"ok": {"type": "boolean"}}}}}`
	}
	tools := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fn(string(rune('a' + i)))
		}
		return `[` + strings.Join(parts, ",") + `]`
	}
	deep := strings.Repeat(`{"anyOf": [`, 10000) + `{}` + strings.Repeat(`]}`, 10000)
	manyProps := make([]string, 10000)
	for i := range manyProps {
		manyProps[i] = fmt.Sprintf(`"p%d": {"type": "boolean"}`, i)
	}
	schema := func(s string) string {
		return `{` + msg + `, "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": ` + s + `}}}`
	}
	for _, tc := range []struct {
		name, path, body string
		key              string
		status           int
		detail           string
	}{
		{"no key", "/v1/chat/completions", schema(`{"properties": {"ok": {"type": "boolean"}}}`), "", 401, "invalid or missing bearer token"},
		{"nothing to answer", "/v1/chat/completions", `{` + msg + `}`, "k", 400, "Laya is a structured-decision engine: send response_format json_schema or tools"},
		{"json_object", "/v1/chat/completions", `{` + msg + `, "response_format": {"type": "json_object"}}`, "k", 400, "Laya needs options to choose from; use response_format json_schema, not json_object"},
		{"both", "/v1/chat/completions", `{` + msg + `, "tools": ` + tools(1) + `, "response_format": {"type": "json_schema", "json_schema": {"schema": {}}}}`, "k", 400, "send either tools or response_format, not both"},
		{"nine tools", "/v1/chat/completions", `{` + msg + `, "tools": ` + tools(9) + `}`, "k", 400, "9 tools exceeds MAX_TOOLS=8"},
		{"duplicate tool", "/v1/chat/completions", `{` + msg + `, "tools": [` + fn("a") + `,` + fn("a") + `]}`, "k", 400, "duplicate tool name 'a'"},
		{"non-function tool", "/v1/chat/completions", `{` + msg + `, "tools": [{"type": "retrieval"}]}`, "k", 400, "only 'function' tools are supported"},
		{"unknown tool_choice", "/v1/chat/completions", `{` + msg + `, "tools": ` + tools(2) + `, "tool_choice": {"type": "function", "function": {"name": "zz"}}}`, "k", 400, "tool_choice names unknown tool 'zz'"},
		{"stream", "/v1/chat/completions", `{` + msg + `, "stream": true, "tools": ` + tools(1) + `}`, "k", 400, "streaming is not supported; resend without 'stream'"},
		{"n", "/v1/chat/completions", `{` + msg + `, "n": 2, "tools": ` + tools(1) + `}`, "k", 400, "'n' is not supported; Laya returns a single choice"},
		{"no messages", "/v1/chat/completions", `{"tools": ` + tools(1) + `}`, "k", 400, "'messages' must be a non-empty list"},
		{"not an object", "/v1/chat/completions", `[1]`, "k", 400, "request body must be an object"},
		{"null body", "/v1/responses", `null`, "k", 400, "request body must be an object"},
		{"not json", "/v1/moderations", `{"input": `, "k", 400, "request body must be valid JSON"},
		{"moderation not an object", "/v1/moderations", `"hi"`, "k", 400, "request body must be an object"},
		{"free string", "/v1/chat/completions", schema(`{"properties": {"name": {"type": "string"}}}`), "k", 422, "properties.name: a free string cannot be a fixed option set; use 'enum' or a boolean"},
		{"tool schema", "/v1/chat/completions", `{` + msg + `, "tools": [{"type": "function", "function": {"name": "t", "parameters": {"properties": {"tags": {"type": "array"}}}}}]}`, "k", 422, "properties.t__tags: arrays are not supported; ask one field per element"},
		{"array top", "/v1/chat/completions", schema(`{"type": "array", "items": {}}`), "k", 422, "the top level must be an object with 'properties'"},
		{"10k properties", "/v1/chat/completions", schema(`{"properties": {` + strings.Join(manyProps, ",") + `}}`), "k", 422, "10000 properties exceeds MAX_PROPERTIES=32"},
		{"body limit", "/v1/chat/completions", schema(`{"properties": {"a": {"type": "boolean", "description": "` + strings.Repeat("x", 600<<10) + `"}}}`), "k", 413, "request body too large"},
		{"10k deep", "/v1/chat/completions", schema(deep), "k", 400, "request body must be valid JSON"},
		{"huge enum", "/v1/chat/completions", schema(`{"properties": {"a": {"enum": [` + strings.TrimSuffix(strings.Repeat(`1,`, 5000), ",") + `]}}}`), "k", 422, "properties.a: 5000 options exceeds MAX_OPTIONS=32"},
		{"responses nothing", "/v1/responses", `{"input": "hi"}`, "k", 400, "Laya is a structured-decision engine: send text.format json_schema or tools"},
		{"responses input", "/v1/responses", `{"input": [], "tools": ` + tools(1) + `}`, "k", 400, "'input' must be a string or a non-empty list"},
		{"moderation input", "/v1/moderations", `{"input": {"text": "x"}}`, "k", 400, "'input' must be a string or a list of strings"},
		{"moderation mixed list", "/v1/moderations", `{"input": ["a", 1]}`, "k", 400, "'input' must be a string or a list of strings"},
		{"moderation empty list", "/v1/moderations", `{"input": []}`, "k", 400, "'input' must be a string or a list of strings"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", ts.url+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			if tc.key != "" {
				req.Header.Set("Authorization", "Bearer "+tc.key)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			var e struct{ Detail string }
			json.Unmarshal(body, &e)
			if resp.StatusCode != tc.status || e.Detail != tc.detail {
				t.Fatalf("%d %s\nwant %d %q", resp.StatusCode, body, tc.status, tc.detail)
			}
		})
	}
	// Through the client, the status is what the caller sees.
	client := openAIClient(ts, "k")
	_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:          "laya",
		Messages:       []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
		t.Fatalf("json_object through the client: %v", err)
	}
}

// Under the router, /v1/models lists the router's model table.
func TestOpenAIModelsRouter(t *testing.T) {
	ts := startServer(t, RouterModels(testRouter(t)), nil)
	client := openAIClient(ts, "x")
	page, err := client.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "english,multilingual,typed-decisions" {
		t.Fatalf("models %v", ids)
	}
}

// A draining server refuses the OpenAI routes as it refuses the others, before
// reading the body.
func TestOpenAIWhileDraining(t *testing.T) {
	ts := startServer(t, SingleModel(realEN), nil)
	if r := post(t, ts.url+"/drain", ""); r.status != 200 {
		t.Fatalf("POST /drain: %d %s", r.status, r.body)
	}
	body := `{"messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"properties": {"ok": {"type": "boolean"}}}}}}`
	for _, path := range []string{"/v1/chat/completions", "/v1/responses"} {
		if r := post(t, ts.url+path, body); r.status != 503 || !strings.Contains(r.body, "shutting down") {
			t.Errorf("%s while draining: %d %s, want 503 server is shutting down", path, r.status, r.body)
		}
	}
}
