package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/pyjson"
	"github.com/laya-metal/laya/router"
	"github.com/laya-metal/laya/structured"
)

// MaxBatch caps the requests of one laya_predict_batch call.
const MaxBatch = 64

// guardrails is upstream's usage note for the decision tools, so that an LLM picks them
// for what they are good at.
const guardrails = " Use for structured decisions only: choice (finite labels), score (ordinal rubric), " +
	"noul (calibrated P(true)). No text generation, so no hallucination. Do NOT use for open Q&A, " +
	"summarization, rewriting, code, or multi-hop reasoning. Do NOT use for >20-option choice " +
	"questions without shortlisting (use the laya_shortlist tool)."

const modelDoc = " model: 'auto' (default) lets the router pick the checkpoint; anything else names one " +
	"(english, multilingual, typed-decisions, or an alias such as 'en' or 'ml')."

const questionsDoc = "questions: {name: {type: 'choice'|'score'|'noul', instructions: str, criteria?: object|array}}; " +
	"options are read in the order written (option_order is kept). For noul, optional labels: {false: str, true: str}."

// Input schemas, as JSON. Arguments are read in their written order, not through a Go
// map, because a choice's option order is part of what the model reads.
const (
	stateSchema     = `{"description": "what the questions are about: a text, or any JSON value (an email object, a list of chat turns)"}`
	questionsSchema = `{"type": "object", "description": "question id -> definition"}`
	modelSchema     = `{"type": "string", "default": "auto"}`
)

var tools = []struct {
	name, description, schema string
}{
	{"laya_predict", "Answer typed questions (choice/score/noul) over any state in one forward pass. " + questionsDoc +
		" Returns answers with confidence and the routing decision." + guardrails + modelDoc,
		`{"type": "object", "properties": {"state": ` + stateSchema + `, "questions": ` + questionsSchema + `, "model": ` + modelSchema + `}, "required": ["state", "questions"]}`},
	{"laya_predict_batch", "Answer several independent requests, each {state, questions, model?}, and return their results in order." + guardrails,
		`{"type": "object", "properties": {"requests": {"type": "array", "maxItems": ` + strconv.Itoa(MaxBatch) + `, "items": {"type": "object", "properties": {"state": ` + stateSchema + `, "questions": ` + questionsSchema + `, "model": ` + modelSchema + `}, "required": ["state", "questions"]}}}, "required": ["requests"]}`},
	{"laya_route", "Decide which Laya checkpoint would answer, without running a forward pass (english vs multilingual vs typed-decisions), and say why." + modelDoc,
		`{"type": "object", "properties": {"state": ` + stateSchema + `, "questions": ` + questionsSchema + `, "model": ` + modelSchema + `}, "required": ["state"]}`},
	{"laya_shortlist", "Shortlist each many-option choice question to its k most likely labels by embedding similarity (the answering checkpoint's own encoder), then answer in one forward pass. Use it instead of laya_predict when a choice has more options than the guardrails allow." + guardrails + modelDoc,
		`{"type": "object", "properties": {"state": ` + stateSchema + `, "questions": ` + questionsSchema + `, "model": ` + modelSchema + `, "k": {"type": "integer", "minimum": 1, "default": 20}}, "required": ["state", "questions"]}`},
	{"laya_decide", "Answer a JSON schema in one forward pass: each property becomes one question (enum/const: choice, boolean: noul, integer with minimum and maximum at most 10 apart: score) and the values come back in the schema's shape, with per-field confidence and probabilities. Free strings, arrays and nested objects are rejected with the path." + modelDoc,
		`{"type": "object", "properties": {"state": ` + stateSchema + `, "schema": {"type": "object", "description": "a JSON schema object with 'properties'"}, "model": ` + modelSchema + `}, "required": ["state", "schema"]}`},
}

// toolError is a failure the caller can act on; its JSON is what the tool returns.
type toolError struct{ code, message string }

func (e *toolError) Error() string { return e.message }

func fail(code, format string, args ...any) *toolError {
	return &toolError{code: code, message: fmt.Sprintf(format, args...)}
}

// NewServer returns an MCP server with the Laya tools over b. Serve it with
// Run(ctx, &sdk.StdioTransport{}) or an sdk.StreamableHTTPHandler.
func NewServer(b Backend, version string) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "laya", Version: version}, nil)
	h := handlers{b: b}
	run := map[string]func(context.Context, pyjson.Value) (pyjson.Value, error){
		"laya_predict":       h.predict,
		"laya_predict_batch": h.predictBatch,
		"laya_route":         h.route,
		"laya_shortlist":     h.shortlist,
		"laya_decide":        h.decide,
	}
	for _, t := range tools {
		fn := run[t.name]
		s.AddTool(&sdk.Tool{Name: t.name, Description: t.description, InputSchema: json.RawMessage(t.schema)},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				args, err := pyjson.Parse(req.Params.Arguments)
				if len(req.Params.Arguments) == 0 {
					args, err = pyjson.Object(), nil
				}
				var out pyjson.Value
				if err == nil && args.Kind() != pyjson.ObjectKind {
					err = fail("invalid_arguments", "arguments must be a JSON object")
				} else if err == nil {
					out, err = fn(ctx, args)
				} else {
					err = fail("invalid_arguments", "arguments: %v", err)
				}
				if err != nil {
					return errorResult(err), nil
				}
				text := out.String()
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}, StructuredContent: json.RawMessage(text)}, nil
			})
	}
	return s
}

func errorResult(err error) *sdk.CallToolResult {
	var te *toolError
	var re *RemoteError
	var se *structured.SchemaError
	var qe *laya.QuestionError
	switch {
	case errors.As(err, &te):
	case errors.As(err, &se):
		te = fail("invalid_schema", "%s", se.Message)
	case errors.As(err, &qe), errors.Is(err, laya.ErrInvalidQuestion), errors.Is(err, laya.ErrInvalidRequest):
		te = fail("invalid_questions", "%s", err.Error())
	case errors.Is(err, router.ErrUnknownModel):
		te = fail("invalid_model", "%s", err.Error())
	case errors.Is(err, ErrUnsupported):
		te = fail("unsupported", "%s", err.Error())
	case errors.As(err, &re) && re.Status == 401:
		te = fail("unauthorized", "laya serve refused the bearer token: %s", re.Detail)
	case errors.As(err, &re) && (re.Status == 400 || re.Status == 413 || re.Status == 422):
		te = fail("invalid_request", "%s", re.Detail)
	case errors.As(err, &re) && re.Status == 503:
		te = fail("busy", "laya serve is busy: %s", re.Detail)
	case errors.Is(err, context.DeadlineExceeded):
		te = fail("timeout", "%s", err.Error())
	default:
		te = fail("internal_error", "%s", err.Error())
	}
	text := pyjson.Object(pyjson.Member{Key: "error", Value: pyjson.String(te.code)}, pyjson.Member{Key: "message", Value: pyjson.String(te.message)}).String()
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: text}}}
}

type handlers struct{ b Backend }

type call struct {
	state laya.State
	qs    laya.Questions
	model string
}

func readCall(args pyjson.Value, needQuestions bool) (call, error) {
	var c call
	sv, ok := args.Get("state")
	if !ok || sv.Kind() == pyjson.NullKind {
		return c, fail("invalid_state", "state is required: a text or a JSON value")
	}
	c.state = laya.ValueState(sv)
	qv, ok := args.Get("questions")
	switch {
	case !ok && !needQuestions:
	case qv.Kind() != pyjson.ObjectKind || len(qv.Members()) == 0:
		return c, fail("invalid_questions", "questions must be a non-empty JSON object keyed by question name")
	default:
		for _, m := range qv.Members() {
			c.qs = append(c.qs, laya.Question{ID: m.Key, Definition: m.Value})
		}
		if err := laya.ValidateQuestions(c.qs); err != nil {
			return c, fail("invalid_questions", "%s", err.Error())
		}
	}
	mv, ok := args.Get("model")
	switch {
	case !ok || mv.Kind() == pyjson.NullKind:
		c.model = "auto"
	case mv.Kind() != pyjson.StringKind:
		return c, fail("invalid_model", "model must be a string, got %s", pyjson.TypeName(mv))
	default:
		c.model = mv.Str()
		if c.model != "auto" {
			if _, err := router.NormalizeModelName(c.model); err != nil {
				return c, fail("invalid_model", "%s", err.Error())
			}
		}
	}
	return c, nil
}

func ms(d time.Duration) pyjson.Value { return pyjson.Float(float64(d.Microseconds()) / 1000) }

func (h handlers) predictOne(ctx context.Context, c call) (pyjson.Value, error) {
	start := time.Now()
	res, routing, err := h.b.Predict(ctx, c.state, c.qs, c.model)
	if err != nil {
		return pyjson.Value{}, err
	}
	answers, _ := res.Value().Get("answers")
	return pyjson.Object(
		pyjson.Member{Key: "answers", Value: answers},
		pyjson.Member{Key: "routing", Value: routing},
		pyjson.Member{Key: "usage", Value: usageValue(res.Usage)},
		pyjson.Member{Key: "latency_ms", Value: ms(time.Since(start))},
	), nil
}

func usageValue(u laya.Usage) pyjson.Value {
	return pyjson.Object(
		pyjson.Member{Key: "input_tokens", Value: pyjson.Int(int64(u.InputTokens))},
		pyjson.Member{Key: "output_tokens", Value: pyjson.Int(int64(u.OutputTokens))},
	)
}

func (h handlers) predict(ctx context.Context, args pyjson.Value) (pyjson.Value, error) {
	c, err := readCall(args, true)
	if err != nil {
		return pyjson.Value{}, err
	}
	return h.predictOne(ctx, c)
}

func (h handlers) predictBatch(ctx context.Context, args pyjson.Value) (pyjson.Value, error) {
	reqs, _ := args.Get("requests")
	if reqs.Kind() != pyjson.ArrayKind || len(reqs.Items()) == 0 {
		return pyjson.Value{}, fail("invalid_requests", "requests must be a non-empty list of {state, questions, model?}")
	}
	if n := len(reqs.Items()); n > MaxBatch {
		return pyjson.Value{}, fail("invalid_requests", "%d requests exceeds the limit of %d per call", n, MaxBatch)
	}
	calls := make([]call, len(reqs.Items()))
	for i, r := range reqs.Items() {
		if r.Kind() != pyjson.ObjectKind {
			return pyjson.Value{}, fail("invalid_requests", "requests[%d] must be an object", i)
		}
		c, err := readCall(r, true)
		if err != nil {
			var te *toolError
			errors.As(err, &te)
			return pyjson.Value{}, fail(te.code, "requests[%d]: %s", i, te.message)
		}
		calls[i] = c
	}
	results := make([]pyjson.Value, len(calls))
	for i, c := range calls {
		v, err := h.predictOne(ctx, c)
		if err != nil {
			return pyjson.Value{}, fmt.Errorf("requests[%d]: %w", i, err)
		}
		results[i] = v
	}
	return pyjson.Object(pyjson.Member{Key: "results", Value: pyjson.Array(results...)}), nil
}

func (h handlers) route(_ context.Context, args pyjson.Value) (pyjson.Value, error) {
	c, err := readCall(args, false)
	if err != nil {
		return pyjson.Value{}, err
	}
	d, err := h.b.Route(c.state, c.qs, c.model)
	if err != nil {
		return pyjson.Value{}, err
	}
	return d.Value(), nil
}

func (h handlers) shortlist(ctx context.Context, args pyjson.Value) (pyjson.Value, error) {
	c, err := readCall(args, true)
	if err != nil {
		return pyjson.Value{}, err
	}
	k := laya.DefaultShortlistK
	if kv, ok := args.Get("k"); ok && kv.Kind() != pyjson.NullKind {
		n, isInt := kv.Float64(), kv.Kind() == pyjson.NumberKind && !kv.IsFloat()
		if !isInt || n < 1 || n > 1<<20 {
			return pyjson.Value{}, fail("invalid_k", "k must be a positive integer, got %s", pyjson.Repr(kv))
		}
		k = int(n)
	}
	start := time.Now()
	res, routing, err := h.b.Shortlist(ctx, c.state, c.qs, c.model, k)
	if err != nil {
		return pyjson.Value{}, err
	}
	v := res.Value()
	answers, _ := v.Get("answers")
	shortlist, _ := v.Get("shortlist")
	return pyjson.Object(
		pyjson.Member{Key: "answers", Value: answers},
		pyjson.Member{Key: "routing", Value: routing},
		pyjson.Member{Key: "shortlist", Value: shortlist},
		pyjson.Member{Key: "latency_ms", Value: ms(time.Since(start))},
	), nil
}

func (h handlers) decide(ctx context.Context, args pyjson.Value) (pyjson.Value, error) {
	c, err := readCall(args, false)
	if err != nil {
		return pyjson.Value{}, err
	}
	schema, ok := args.Get("schema")
	if !ok {
		return pyjson.Value{}, fail("invalid_schema", "schema is required: a JSON schema object with 'properties'")
	}
	plan, err := structured.PlanSchema(schema)
	if err != nil {
		return pyjson.Value{}, err
	}
	d, err := plan.Decide(ctx, backendPredictor{h.b, c.model}, c.state)
	if err != nil {
		return pyjson.Value{}, err
	}
	return d.Value(), nil
}

// backendPredictor lets structured.Decide run on a Backend and report its routing.
type backendPredictor struct {
	b     Backend
	model string
}

func (p backendPredictor) Predict(ctx context.Context, state laya.State, qs laya.Questions) (*laya.Result, error) {
	res, _, err := p.b.Predict(ctx, state, qs, p.model)
	return res, err
}

func (p backendPredictor) PredictRouted(ctx context.Context, state laya.State, qs laya.Questions) (*laya.Result, laya.Value, error) {
	return p.b.Predict(ctx, state, qs, p.model)
}
