package serve

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/pyjson"
	"github.com/laya-metal/laya/router"
)

// apiError is an HTTP error with upstream's body {"detail": ...}.
type apiError struct {
	status int
	detail any
	reason string // laya_rejections_total reason, when it is a shed request
	// retryAfter is the Retry-After of a 503 or 429 in seconds (1 when 0).
	retryAfter int
}

func (e *apiError) Error() string { return fmt.Sprint(e.detail) }

func errorf(status int, format string, args ...any) *apiError {
	return &apiError{status: status, detail: fmt.Sprintf(format, args...)}
}

// hookFields are predict()'s callable arguments, refused over HTTP (docs/http-api.md):
// a hook runs inside the server process, so no value a caller sends means anything.
var hookFields = []string{"hooks", "on_predict_start", "on_predict_end", "hooks_raise", "hooks_timeout"}

// publishedModelIDs are the Hugging Face ids a client may name a checkpoint by
// (laya/serve.py _PUBLISHED_MODEL_IDS); the bundle id means "let the router choose".
var publishedModelIDs = map[string]string{
	"convaiinnovations/laya-multilingual":    router.ModelMultilingual,
	"convaiinnovations/laya-typed-decisions": router.ModelTypedDecisions,
}

// controls are a request's per-call settings, shared by every state of a batch.
type controls struct {
	route       router.RouteOptions
	lang        string
	maxLen      int
	headMaxLen  int
	minConf     *confidenceGate
	countTokens bool
}

// decodeJSON decodes every request body. It is a variable so that a test can see
// how many times a body is decoded, and which decoding the answer comes from.
var decodeJSON = pyjson.Parse

// parseBody reads the JSON body as an object (400 otherwise, notObject when it is
// JSON of another kind).
func parseBody(raw []byte, notObject string) (pyjson.Value, *apiError) {
	if s, ok := loneSurrogate(raw); ok {
		return pyjson.Value{}, errorf(400, "request body holds an unpaired surrogate escape %s; a JSON string must encode whole characters", s)
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return v, errorf(400, "request body must be valid JSON")
	}
	if v.Kind() != pyjson.ObjectKind {
		return v, errorf(400, "%s", notObject)
	}
	return v, nil
}

// parseControls reads and checks the optional fields (422 naming the field); a task
// must name a checkpoint of m.
func parseControls(body pyjson.Value, lim Limits, m Models) (controls, *apiError) {
	var c controls
	for _, h := range hookFields {
		if _, ok := body.Get(h); ok {
			return c, errorf(422, "'%s' is not accepted over HTTP: hooks run inside the server process; install them on the server instead", h)
		}
	}
	str := func(name string) (string, *apiError) {
		v, ok := body.Get(name)
		if !ok || v.Kind() == pyjson.NullKind {
			return "", nil
		}
		if v.Kind() != pyjson.StringKind {
			return "", errorf(422, "'%s' must be a string", name)
		}
		return v.Str(), nil
	}
	model, e := str("model")
	if e != nil {
		return c, e
	}
	c.route.Model = resolveModel(model)
	if c.route.Task, e = str("task"); e != nil {
		return c, e
	}
	if c.route.Task != "" {
		if err := checkTask(c.route.Task, m); err != nil {
			return c, err
		}
	}
	if c.lang, e = str("lang"); e != nil {
		return c, e
	}
	c.route.Lang = c.lang
	guess, e := str("lang_guess")
	if e != nil {
		return c, e
	}
	if strings.TrimSpace(guess) != "" {
		c.route.LangGuess = func(laya.State) string { return guess }
	}
	for _, f := range []struct {
		name string
		dst  *int
	}{{"max_len", &c.maxLen}, {"head_max_len", &c.headMaxLen}} {
		v, ok := body.Get(f.name)
		if !ok || v.Kind() == pyjson.NullKind {
			continue
		}
		n, isInt := intLiteral(v)
		switch {
		case !isInt:
			return c, errorf(422, "'%s' must be an integer", f.name)
		case n <= 0:
			return c, errorf(422, "'%s' must be a positive integer", f.name)
		case n > int64(lim.TokenBudget):
			return c, errorf(422, "'%s' exceeds server limit (%d > %d, LAYA_MAX_TOKEN_BUDGET)", f.name, n, lim.TokenBudget)
		}
		*f.dst = int(n)
	}
	if v, ok := body.Get("min_confidence"); ok && v.Kind() != pyjson.NullKind {
		if c.minConf, e = parseMinConfidence(v); e != nil {
			return c, e
		}
	}
	if v, ok := body.Get("state_token_counts"); ok && v.Kind() != pyjson.NullKind {
		if v.Kind() != pyjson.BoolKind {
			return c, errorf(422, "'state_token_counts' must be a boolean")
		}
		c.countTokens = v.Bool()
	}
	return c, nil
}

// resolveModel maps a client's model field onto a checkpoint name, or "" to let the
// router choose: an id such as Jev's "jev-1" is expected and ignored (laya/serve.py
// _resolve_model).
func resolveModel(model string) string {
	if model == "" {
		return ""
	}
	if key, ok := publishedModelIDs[strings.ToLower(strings.TrimSpace(model))]; ok {
		return key
	}
	key, err := router.NormalizeModelName(model)
	if err != nil {
		// Maybe a model of the router's own (--model-dir name=…): the router
		// decides, and ignores a name it does not know either.
		return strings.TrimSpace(model)
	}
	return key
}

// checkTask refuses a task that names no checkpoint of m (422 naming it): a router's
// own models (router.WithModel, --model-dir NAME=DIR) are tasks as its built-ins are.
func checkTask(task string, m Models) *apiError {
	t := strings.ReplaceAll(strings.ToLower(task), "-", "_")
	if t == "typed_decisions" {
		return nil
	}
	if _, err := m.checkpoint(task); err != nil {
		return errorf(422, "unknown task %s: %v", pyjson.StrRepr(task), err)
	}
	return nil
}

// intLiteral reads an integer JSON number; 3.0, 1e3 and true are not integers, as
// isinstance(value, int) says in Python.
func intLiteral(v pyjson.Value) (int64, bool) {
	if v.Kind() != pyjson.NumberKind {
		return 0, false
	}
	n, err := strconv.ParseInt(v.Literal(), 10, 64)
	if err != nil {
		if strings.ContainsAny(v.Literal(), ".eE") {
			return 0, false
		}
		return math.MaxInt64, true // an integer too large for int64 is over any cap
	}
	return n, true
}

// parseQuestions checks the questions object and the option limits (400/413); the
// questions themselves are checked later (laya.ValidateQuestions, 422).
func parseQuestions(body pyjson.Value, lim Limits) (laya.Questions, *apiError) {
	qv, ok := body.Get("questions")
	if !ok {
		return nil, errorf(400, "request body must be an object with a 'questions' field")
	}
	if qv.Kind() != pyjson.ObjectKind {
		return nil, errorf(400, "'questions' must be an object")
	}
	members := qv.Members()
	if len(members) > lim.Questions {
		return nil, errorf(413, "too many questions (%d > %d)", len(members), lim.Questions)
	}
	total := 0
	for _, m := range members {
		if m.Value.Kind() != pyjson.ObjectKind {
			continue
		}
		if e := checkTexts(m.Key, m.Value, lim); e != nil {
			return nil, e
		}
		typ, _ := m.Value.Get("type")
		crit, _ := m.Value.Get("criteria")
		n := 0
		switch crit.Kind() {
		case pyjson.ObjectKind:
			n = len(crit.Members())
		case pyjson.ArrayKind:
			n = len(crit.Items())
		}
		switch {
		case typ.Kind() == pyjson.StringKind && typ.Str() == "choice" && (crit.Kind() == pyjson.ObjectKind || crit.Kind() == pyjson.ArrayKind):
			total += n
			if n > lim.ChoiceOptions {
				return nil, errorf(413, "too many choice options for %s (%d > %d)", pyjson.StrRepr(m.Key), n, lim.ChoiceOptions)
			}
		case typ.Kind() == pyjson.StringKind && typ.Str() == "score" && crit.Kind() == pyjson.ArrayKind:
			total += n
			if n > lim.ScoreLevels {
				return nil, errorf(413, "too many score levels for %s (%d > %d)", pyjson.StrRepr(m.Key), n, lim.ScoreLevels)
			}
		}
	}
	if total > lim.TotalOptions {
		return nil, errorf(413, "too many answer options across questions (%d > %d)", total, lim.TotalOptions)
	}
	return questionsOf(qv), nil
}

// questionsOf is a "questions" object as Questions, in its written order.
func questionsOf(qv pyjson.Value) laya.Questions {
	members := qv.Members()
	qs := make(laya.Questions, len(members))
	for i, m := range members {
		qs[i] = laya.Question{ID: m.Key, Definition: m.Value}
	}
	return qs
}

// parseState checks one state: present, not null, within the character limit.
func parseState(v pyjson.Value, present bool, lim Limits) (laya.State, *apiError) {
	if !present || v.Kind() == pyjson.NullKind {
		return laya.State{}, errorf(400, "'state' is required")
	}
	s := laya.ValueState(v)
	// Characters as Python's len() counts them, of the text the model is given.
	var n int
	if v.Kind() == pyjson.StringKind {
		n = utf8.RuneCountInString(v.Str())
	} else {
		n = utf8.RuneCountInString(s.Serialize())
	}
	if n > lim.StateChars {
		return s, errorf(413, "state too large (%d > %d chars)", n, lim.StateChars)
	}
	return s, nil
}

// loneSurrogate finds a \uD800–\uDFFF escape without its pair in a JSON text: legal
// JSON, but it names no character, so no tokenizer can read it (upstream answers 400).
func loneSurrogate(raw []byte) (string, bool) {
	hex4 := func(i int) (rune, bool) {
		if i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
			return 0, false
		}
		n, err := strconv.ParseUint(string(raw[i+2:i+6]), 16, 32)
		return rune(n), err == nil
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' || i+1 >= len(raw) {
			continue
		}
		if raw[i+1] != 'u' {
			i++ // an escaped character, \\ included
			continue
		}
		r, ok := hex4(i)
		if !ok {
			continue
		}
		switch {
		case r >= 0xD800 && r <= 0xDBFF:
			if lo, ok := hex4(i + 6); ok && lo >= 0xDC00 && lo <= 0xDFFF {
				i += 11
				continue
			}
			return string(raw[i : i+6]), true
		case r >= 0xDC00 && r <= 0xDFFF:
			return string(raw[i : i+6]), true
		}
		i += 5
	}
	return "", false
}
