package laya

import (
	"fmt"

	"github.com/laya-metal/laya/pyjson"
)

// Request is one predict call: {"state": …, "questions": {id: definition, …}}, and the
// per-request settings upstream's predict() takes beside them. The zero settings are
// Predict's: the checkpoint's windows and temperatures, no state token count.
type Request struct {
	State     State
	Questions Questions
	// Lang is the request's language tag ("de", "pt-BR"). When the checkpoint ships
	// lang_temperatures for its primary subtag, those calibrate the answers instead of
	// the checkpoint's default temperatures (upstream predict(lang=...)). Blank, or a
	// language without an override, changes nothing.
	Lang string
	// MaxLen and HeadMaxLen override the checkpoint's token windows for this request
	// (upstream predict(max_len=..., head_max_len=...)); 0 keeps the checkpoint's.
	MaxLen, HeadMaxLen int
	// CountStateTokens tokenizes the whole state to report StateUsage.StateTokens and
	// StateTokensDropped (upstream state_token_counts=True). It costs a full
	// tokenization, so it is off by default.
	CountStateTokens bool
}

// ParseRequest reads {"state": …, "questions": {…}}, keeping the order of the questions,
// their criteria and the state's objects. The settings are not part of the JSON: they
// keep their zero values.
func ParseRequest(data []byte) (Request, error) {
	v, err := pyjson.Parse(data)
	if err != nil {
		return Request{}, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	return ValueRequest(v)
}

// ValueRequest is ParseRequest for a request already decoded, as a server that has
// read the body to check it holds it: the same checks and errors, without decoding
// the text again.
func ValueRequest(v Value) (Request, error) {
	if v.Kind() != pyjson.ObjectKind {
		return Request{}, fmt.Errorf("%w: a request is a JSON object {\"state\": ..., \"questions\": {...}}, got %s", ErrInvalidRequest, pyjson.TypeName(v))
	}
	for _, m := range v.Members() {
		if m.Key != "state" && m.Key != "questions" {
			return Request{}, fmt.Errorf("%w: unknown field %q; a request has \"state\" and \"questions\"", ErrInvalidRequest, m.Key)
		}
	}
	state, ok := v.Get("state")
	if !ok {
		return Request{}, fmt.Errorf("%w: no \"state\"; give the text or JSON value the questions are about", ErrInvalidRequest)
	}
	qv, ok := v.Get("questions")
	if !ok {
		return Request{}, fmt.Errorf("%w: no \"questions\"; give an object of question id -> definition", ErrInvalidRequest)
	}
	qs, err := questionsFromValue(qv)
	if err != nil {
		return Request{}, err
	}
	return Request{State: ValueState(state), Questions: qs}, nil
}

// MarshalJSON writes the request as {"state": …, "questions": {…}}; the settings are
// left out, as ParseRequest reads none.
func (r Request) MarshalJSON() ([]byte, error) {
	return pyjson.Object(
		pyjson.Member{Key: "state", Value: r.State.Value()},
		pyjson.Member{Key: "questions", Value: r.Questions.Value()},
	).MarshalJSON()
}
