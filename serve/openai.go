package serve

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/pyjson"
	"github.com/laya-metal/laya/router"
	"github.com/laya-metal/laya/structured"
)

// The OpenAI-compatible routes follow upstream's laya/openai_api.py and docs/openai.md
// (NandhaKishorM/laya): the structured subset of the wire format, a schema or tools
// answered in one pass, and 400 for what a decision model cannot do.

// MaxTools caps the functions of one request (upstream MAX_TOOLS).
const MaxTools = 8

// toolQuestion is the id of the choice over tool names.
const toolQuestion = "tool"

// chatPlan is a parsed OpenAI request, ready to answer.
type chatPlan struct {
	state laya.State
	model string // as the client sent it
	qs    laya.Questions
	// schema mode
	schema *structured.Plan
	// tools mode: names in order, each tool's plan over namespaced properties
	tools  []string
	plans  map[string]*structured.Plan
	forced string
}

func badRequest(format string, args ...any) *apiError { return errorf(400, format, args...) }

// textFromContent is upstream's _text_from_content: a string, the text parts of a
// list joined by newlines, "" for null, str() of anything else.
func textFromContent(v pyjson.Value) string {
	switch v.Kind() {
	case pyjson.StringKind:
		return v.Str()
	case pyjson.NullKind:
		return ""
	case pyjson.ArrayKind:
		var parts []string
		for _, p := range v.Items() {
			switch p.Kind() {
			case pyjson.ObjectKind:
				t, _ := p.Get("type")
				if t.Kind() == pyjson.NullKind || isOneOf(t, "text", "input_text", "output_text") {
					if text, ok := p.Get("text"); ok {
						if s := pyjson.Str(text); s != "" {
							parts = append(parts, s)
						}
					}
				}
			case pyjson.StringKind:
				if p.Str() != "" {
					parts = append(parts, p.Str())
				}
			}
		}
		return strings.Join(parts, "\n")
	}
	return pyjson.Str(v)
}

func isOneOf(v pyjson.Value, options ...string) bool {
	if v.Kind() != pyjson.StringKind {
		return false
	}
	for _, o := range options {
		if v.Str() == o {
			return true
		}
	}
	return false
}

// turnsState is one turn's text, or the conversation as [{"role", "content"}, …].
func turnsState(turns []pyjson.Value) pyjson.Value {
	if len(turns) == 1 {
		c, _ := turns[0].Get("content")
		return c
	}
	return pyjson.Array(turns...)
}

func turn(role, content string) pyjson.Value {
	return pyjson.Object(member("role", pyjson.String(role)), member("content", pyjson.String(content)))
}

func stateFromMessages(v pyjson.Value, ok bool) (pyjson.Value, *apiError) {
	if !ok || v.Kind() != pyjson.ArrayKind || len(v.Items()) == 0 {
		return v, badRequest("'messages' must be a non-empty list")
	}
	turns := make([]pyjson.Value, len(v.Items()))
	for i, m := range v.Items() {
		role, has := m.Get("role")
		if m.Kind() != pyjson.ObjectKind || !has {
			return v, badRequest("each message needs a 'role'")
		}
		content, _ := m.Get("content")
		turns[i] = turn(pyjson.Str(role), textFromContent(content))
	}
	return turnsState(turns), nil
}

func stateFromInput(v pyjson.Value, ok bool) (pyjson.Value, *apiError) {
	if ok && v.Kind() == pyjson.StringKind {
		return v, nil
	}
	if !ok || v.Kind() != pyjson.ArrayKind || len(v.Items()) == 0 {
		return v, badRequest("'input' must be a string or a non-empty list")
	}
	turns := make([]pyjson.Value, len(v.Items()))
	for i, item := range v.Items() {
		switch item.Kind() {
		case pyjson.StringKind:
			turns[i] = turn("user", item.Str())
		case pyjson.ObjectKind:
			role := "user"
			if r, ok := item.Get("role"); ok {
				role = pyjson.Str(r)
			}
			content, _ := item.Get("content")
			turns[i] = turn(role, textFromContent(content))
		default:
			return v, badRequest("each input item must be a string or an object")
		}
	}
	return turnsState(turns), nil
}

// planSchema plans a request's schema; a schema outside the subset is a 422 naming
// the path, as upstream answers it.
func planSchema(schema pyjson.Value) (*structured.Plan, *apiError) {
	p, err := structured.PlanSchema(schema)
	if err != nil {
		var se *structured.SchemaError
		if errors.As(err, &se) {
			return nil, errorf(422, "%s", se.Message)
		}
		return nil, errorf(422, "%s", err.Error())
	}
	return p, nil
}

// namespaced prefixes every property of a tool's parameters with "<tool>__", so that the
// tools' arguments are distinct questions of one pass.
func namespaced(params pyjson.Value, prefix string) (pyjson.Value, *apiError) {
	props, ok := params.Get("properties")
	if params.Kind() != pyjson.ObjectKind || !ok || props.Kind() != pyjson.ObjectKind {
		return params, badRequest("a tool needs an object 'parameters' schema with 'properties'")
	}
	renamed := make([]pyjson.Member, len(props.Members()))
	for i, m := range props.Members() {
		renamed[i] = member(prefix+m.Key, m.Value)
	}
	out := make([]pyjson.Member, 0, len(params.Members()))
	for _, m := range params.Members() {
		if m.Key == "properties" {
			m.Value = pyjson.Object(renamed...)
		}
		out = append(out, m)
	}
	return pyjson.Object(out...), nil
}

// flatTool maps the Responses tool shape {"type": "function", "name", …} onto the Chat
// shape {"type": "function", "function": {…}}.
func flatTool(t pyjson.Value) pyjson.Value {
	if t.Kind() != pyjson.ObjectKind {
		return t
	}
	if _, nested := t.Get("function"); nested {
		return t
	}
	typ, hasType := t.Get("type")
	name, hasName := t.Get("name")
	if (hasType && !isOneOf(typ, "function")) || !hasName || name.Kind() != pyjson.StringKind {
		return t
	}
	desc, _ := t.Get("description")
	params, _ := t.Get("parameters")
	if params.Kind() == pyjson.NullKind {
		params = pyjson.Object()
	}
	return pyjson.Object(member("type", pyjson.String("function")), member("function", pyjson.Object(
		member("name", name), member("description", desc), member("parameters", params))))
}

// forcedTool is the function a tool_choice names ("" for "auto", "none", "required").
func forcedTool(choice pyjson.Value, responses bool, names map[string]*structured.Plan) (string, *apiError) {
	if choice.Kind() != pyjson.ObjectKind {
		return "", nil
	}
	fn, _ := choice.Get("function")
	name, ok := fn.Get("name")
	if responses && !ok {
		name, ok = choice.Get("name")
	}
	if !ok || name.Kind() == pyjson.NullKind {
		return "", nil
	}
	if _, known := names[pyjson.Str(name)]; name.Kind() != pyjson.StringKind || !known {
		return "", badRequest("tool_choice names unknown tool %s", pyjson.Repr(name))
	}
	return name.Str(), nil
}

func (p *chatPlan) planTools(tools, choice pyjson.Value, responses bool) *apiError {
	if tools.Kind() != pyjson.ArrayKind || len(tools.Items()) == 0 {
		return badRequest("'tools' must be a non-empty list")
	}
	if n := len(tools.Items()); n > MaxTools {
		return badRequest("%d tools exceeds MAX_TOOLS=%d", n, MaxTools)
	}
	p.plans = map[string]*structured.Plan{}
	var descriptions []pyjson.Member
	for _, t := range tools.Items() {
		if responses {
			t = flatTool(t)
		}
		if typ, _ := t.Get("type"); t.Kind() != pyjson.ObjectKind || !isOneOf(typ, "function") {
			return badRequest("only 'function' tools are supported")
		}
		fn, _ := t.Get("function")
		nameV, _ := fn.Get("name")
		if !truthyString(nameV) {
			return badRequest("every tool needs function.name")
		}
		name := nameV.Str()
		if _, dup := p.plans[name]; dup {
			return badRequest("duplicate tool name %s", pyjson.StrRepr(name))
		}
		params, _ := fn.Get("parameters")
		if params.Kind() == pyjson.NullKind {
			params = pyjson.Object()
		}
		schema, e := namespaced(params, name+"__")
		if e != nil {
			return e
		}
		plan, e := planSchema(schema)
		if e != nil {
			return e
		}
		p.tools = append(p.tools, name)
		p.plans[name] = plan
		desc, _ := fn.Get("description")
		if desc.Kind() != pyjson.StringKind || desc.Str() == "" {
			desc = pyjson.Null()
		}
		descriptions = append(descriptions, member(name, desc))
	}
	forced, e := forcedTool(choice, responses, p.plans)
	if e != nil {
		return e
	}
	p.forced = forced
	if forced != "" {
		// A named function skips the selection, and only its arguments are asked.
		p.qs = p.plans[forced].Questions()
		return nil
	}
	for _, name := range p.tools {
		p.qs = append(p.qs, p.plans[name].Questions()...)
	}
	if len(p.tools) > 1 {
		p.qs = append(p.qs, laya.Question{ID: toolQuestion, Definition: pyjson.Object(
			member("type", pyjson.String("choice")),
			member("instructions", pyjson.String("Which tool should be used for this request?")),
			member("criteria", pyjson.Object(descriptions...)),
		)})
	}
	return nil
}

func truthyString(v pyjson.Value) bool { return v.Kind() == pyjson.StringKind && v.Str() != "" }

// parseObject is parseBody for the OpenAI routes, whose bodies have no "questions".
func parseObject(raw []byte) (pyjson.Value, *apiError) {
	return parseBody(raw, "request body must be an object")
}

// rejectStreamAndN refuses what one decision cannot honour: a stream, or n > 1.
func rejectStreamAndN(body pyjson.Value) *apiError {
	if s, ok := body.Get("stream"); ok && s.Kind() != pyjson.NullKind && !(s.Kind() == pyjson.BoolKind && !s.Bool()) {
		return badRequest("streaming is not supported; resend without 'stream'")
	}
	if n, ok := body.Get("n"); ok && n.Kind() != pyjson.NullKind && !(n.Kind() == pyjson.NumberKind && n.Float64() == 1) {
		return badRequest("'n' is not supported; Laya returns a single choice")
	}
	return nil
}

// parseOpenAI reads a chat completions (responses false) or Responses request.
func (s *Server) parseOpenAI(raw []byte, responses bool) (*chatPlan, *apiError) {
	body, e := parseObject(raw)
	if e != nil {
		return nil, e
	}
	if e := rejectStreamAndN(body); e != nil {
		return nil, e
	}
	var stateV pyjson.Value
	if responses {
		v, ok := body.Get("input")
		stateV, e = stateFromInput(v, ok)
	} else {
		v, ok := body.Get("messages")
		stateV, e = stateFromMessages(v, ok)
	}
	if e != nil {
		return nil, e
	}
	p := &chatPlan{}
	if p.state, e = parseState(stateV, true, s.cfg.Limits); e != nil {
		return nil, e
	}
	if m, ok := body.Get("model"); ok && m.Kind() == pyjson.StringKind {
		p.model = m.Str()
	}
	tools, _ := body.Get("tools")
	choice, _ := body.Get("tool_choice")
	var format pyjson.Value
	var formatName string
	if responses {
		text, _ := body.Get("text")
		format, _ = text.Get("format")
		formatName = "text.format"
	} else {
		format, _ = body.Get("response_format")
		formatName = "response_format"
	}
	switch {
	case truthy(tools) && truthy(format):
		return nil, badRequest("send either tools or %s, not both", formatName)
	case truthy(tools):
		if e := p.planTools(tools, choice, responses); e != nil {
			return nil, e
		}
	case format.Kind() != pyjson.NullKind:
		schema, e := schemaFromFormat(format, formatName, responses)
		if e != nil {
			return nil, e
		}
		if p.schema, e = planSchema(schema); e != nil {
			return nil, e
		}
		p.qs = p.schema.Questions()
	default:
		return nil, badRequest("Laya is a structured-decision engine: send %s json_schema or tools", formatName)
	}
	if _, e := parseQuestions(pyjson.Object(member("questions", p.qs.Value())), s.cfg.Limits); e != nil {
		return nil, e
	}
	return p, nil
}

func truthy(v pyjson.Value) bool {
	switch v.Kind() {
	case pyjson.NullKind:
		return false
	case pyjson.BoolKind:
		return v.Bool()
	case pyjson.ArrayKind:
		return len(v.Items()) > 0
	case pyjson.ObjectKind:
		return len(v.Members()) > 0
	case pyjson.StringKind:
		return v.Str() != ""
	}
	return v.Float64() != 0
}

func schemaFromFormat(f pyjson.Value, name string, responses bool) (pyjson.Value, *apiError) {
	if f.Kind() != pyjson.ObjectKind {
		return f, badRequest("'%s' must be an object", name)
	}
	kind, _ := f.Get("type")
	if isOneOf(kind, "json_object") {
		return f, badRequest("Laya needs options to choose from; use %s json_schema, not json_object", name)
	}
	if !isOneOf(kind, "json_schema") {
		return f, badRequest("unsupported %s type %s", name, pyjson.Repr(kind))
	}
	if responses {
		schema, _ := f.Get("schema")
		if schema.Kind() != pyjson.ObjectKind {
			return f, badRequest("text.format.schema must be an object")
		}
		return schema, nil
	}
	inner, _ := f.Get("json_schema")
	schema, _ := inner.Get("schema")
	if schema.Kind() != pyjson.ObjectKind {
		return f, badRequest("response_format.json_schema.schema must be an object")
	}
	return schema, nil
}

// answerPlan routes and runs a plan's questions through the queue like any decision.
func (s *Server) answerPlan(w http.ResponseWriter, r *http.Request, state laya.State, qs laya.Questions, model string) ([]jobResult, bool) {
	d, e := s.routeDecision(state, qs, router.RouteOptions{Model: resolveModel(model)})
	if e != nil {
		s.fail(w, "", e)
		return nil, false
	}
	results, e := s.runAdmitted(w, r, []decision{d})
	if e != nil {
		s.fail(w, d.routing.Model, e)
		return nil, false
	}
	return results, true
}

// toolCall picks the tool (forced, the selection's choice, or the only one) and its
// arguments with the "<tool>__" prefix taken off.
func (p *chatPlan) toolCall(res *laya.Result) (string, pyjson.Value, error) {
	tool := p.forced
	if tool == "" {
		tool = p.tools[0]
		if len(p.tools) > 1 {
			c, err := res.Choice(toolQuestion)
			if err != nil {
				return "", pyjson.Value{}, err
			}
			if _, ok := p.plans[c.Choice]; ok {
				tool = c.Choice
			}
		}
	}
	d, err := p.plans[tool].Project(res)
	if err != nil {
		return "", pyjson.Value{}, err
	}
	args := make([]pyjson.Member, len(d.Values.Members()))
	for i, m := range d.Values.Members() {
		args[i] = member(strings.TrimPrefix(m.Key, tool+"__"), m.Value)
	}
	return tool, pyjson.Object(args...), nil
}

func newID(prefix string) string {
	var b [16]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func (p *chatPlan) modelName() string {
	if p.model == "" {
		return "laya"
	}
	return p.model
}

func openAIUsage(u laya.Usage, responses bool) pyjson.Value {
	in := pyjson.Int(int64(u.InputTokens))
	out := pyjson.Int(int64(u.OutputTokens))
	total := pyjson.Int(int64(u.InputTokens + u.OutputTokens))
	if responses {
		return pyjson.Object(member("input_tokens", in), member("output_tokens", out), member("total_tokens", total))
	}
	return pyjson.Object(member("prompt_tokens", in), member("completion_tokens", out), member("total_tokens", total))
}

// handleChatCompletions is POST /v1/chat/completions.
func (s *Server) handleChatCompletions(w http.ResponseWriter, r *http.Request) {
	s.handleOpenAI(w, r, false)
}

// handleResponses is POST /v1/responses.
func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	s.handleOpenAI(w, r, true)
}

// readAuthorized reads the body through readJSON's gates (readGated); when it fails
// it has answered w, and ok is false.
func (s *Server) readAuthorized(w http.ResponseWriter, r *http.Request) (raw []byte, ok bool) {
	raw, e := s.readGated(w, r)
	if e != nil {
		s.fail(w, "", e)
		return nil, false
	}
	return raw, true
}

func (s *Server) handleOpenAI(w http.ResponseWriter, r *http.Request, responses bool) {
	raw, ok := s.readAuthorized(w, r)
	if !ok {
		return
	}
	p, e := s.parseOpenAI(raw, responses)
	if e != nil {
		s.fail(w, "", e)
		return
	}
	results, ok := s.answerPlan(w, r, p.state, p.qs, p.model)
	if !ok {
		return
	}
	v, err := p.response(results[0].answer.Result, responses)
	if err != nil {
		s.log.Error("inference failed", "error", err.Error())
		s.fail(w, "", errorf(500, "inference failed"))
		return
	}
	s.answer(w, results, compact(v))
}

// response is the chat completion (or Responses) body of a plan's answers.
func (p *chatPlan) response(res *laya.Result, responses bool) (pyjson.Value, error) {
	var (
		text     string
		tool     string
		args     pyjson.Value
		toolMode = p.schema == nil
	)
	if toolMode {
		var err error
		if tool, args, err = p.toolCall(res); err != nil {
			return pyjson.Value{}, err
		}
	} else {
		d, err := p.schema.Project(res)
		if err != nil {
			return pyjson.Value{}, err
		}
		text = pyjson.Dumps(d.Values)
	}
	now := pyjson.Int(time.Now().Unix())
	var v pyjson.Value
	if responses {
		var item pyjson.Value
		if toolMode {
			item = pyjson.Object(member("type", pyjson.String("function_call")), member("id", pyjson.String(newID("fc_"))),
				member("call_id", pyjson.String(newID("call_"))), member("name", pyjson.String(tool)),
				member("arguments", pyjson.String(pyjson.Dumps(args))), member("status", pyjson.String("completed")))
		} else {
			item = pyjson.Object(member("type", pyjson.String("message")), member("id", pyjson.String(newID("msg_"))),
				member("role", pyjson.String("assistant")), member("status", pyjson.String("completed")),
				member("content", pyjson.Array(pyjson.Object(member("type", pyjson.String("output_text")),
					member("text", pyjson.String(text)), member("annotations", pyjson.Array())))))
		}
		v = pyjson.Object(member("id", pyjson.String(newID("resp_"))), member("object", pyjson.String("response")),
			member("created_at", now), member("model", pyjson.String(p.modelName())), member("status", pyjson.String("completed")),
			member("output", pyjson.Array(item)), member("usage", openAIUsage(res.Usage, true)))
	} else {
		var message pyjson.Value
		finish := "stop"
		if toolMode {
			finish = "tool_calls"
			message = pyjson.Object(member("role", pyjson.String("assistant")), member("content", pyjson.Null()),
				member("tool_calls", pyjson.Array(pyjson.Object(member("id", pyjson.String(newID("call_"))),
					member("type", pyjson.String("function")), member("function", pyjson.Object(
						member("name", pyjson.String(tool)), member("arguments", pyjson.String(pyjson.Dumps(args)))))))))
		} else {
			message = pyjson.Object(member("role", pyjson.String("assistant")), member("content", pyjson.String(text)))
		}
		v = pyjson.Object(member("id", pyjson.String(newID("chatcmpl-"))), member("object", pyjson.String("chat.completion")),
			member("created", now), member("model", pyjson.String(p.modelName())),
			member("choices", pyjson.Array(pyjson.Object(member("index", pyjson.Int(0)), member("message", message),
				member("finish_reason", pyjson.String(finish))))),
			member("usage", openAIUsage(res.Usage, false)))
	}
	return v, nil
}

// registerOpenAI adds the OpenAI-compatible routes.
func (s *Server) registerOpenAI() {
	s.mux.HandleFunc("/v1/chat/completions", s.post(s.handleChatCompletions))
	s.mux.HandleFunc("/v1/responses", s.post(s.handleResponses))
	s.mux.HandleFunc("/v1/moderations", s.post(s.handleModerations))
	s.mux.HandleFunc("/v1/models", s.get(s.handleModels))
	s.mux.HandleFunc("/v1/models/", s.get(s.handleModels))
}
