package serve

import (
	"net/http"
	"unicode/utf8"

	"github.com/laya-metal/laya/pyjson"
)

// readJSON is how the decision routes read their bodies, so each gets the same
// gates: the bearer key (401), draining (503), the body read caps and rate (503, 408,
// 413, slowclient.go), a JSON object (400, a UTF-8 BOM accepted), then check: the
// route's shape (400) and the request limits (413) in the order upstream checks them.
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request, check bodyCheck) (pyjson.Value, *apiError) {
	raw, e := s.readGated(w, r)
	if e != nil {
		return pyjson.Value{}, e
	}
	body, e := parseBody(raw, "request body must be an object with a 'questions' field")
	if e != nil {
		return body, e
	}
	if e := check(body, s.cfg.Limits); e != nil {
		return body, e
	}
	return body, nil
}

// bodyCheck checks a decoded body's shape and limits (400, 413).
type bodyCheck func(body pyjson.Value, lim Limits) *apiError

// readGated is the first half of readJSON, for routes whose body is not a decision
// (the OpenAI routes check their limits on what they turn it into): the bearer key,
// draining, then the body within the read caps and rate.
func (s *Server) readGated(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	if !s.authorized(r) {
		return nil, errorf(401, "invalid or missing bearer token")
	}
	if s.draining.Load() {
		return nil, s.reject(503, "draining", errShuttingDown.Error(), 0)
	}
	return s.readBody(w, r)
}

// checkDecision checks a /v1/systemone body (batch: /v1/systemone/batch) in
// upstream's order (laya/serve.py: the body's shape, then _check_batch_limits and
// _check_request_limits for each state): "questions" present (400); the states a
// non-empty list (400) and their number (413); then state by state, present (400),
// the questions with the first (400, 413), its characters (413). A body wrong in
// shape is a 400 however far it is over a limit checked after.
func checkDecision(batch bool) bodyCheck {
	return func(body pyjson.Value, lim Limits) *apiError {
		if _, ok := body.Get("questions"); !ok {
			return errorf(400, "request body must be an object with a 'questions' field")
		}
		states, e := decisionStates(body, batch)
		if e != nil {
			return e
		}
		if batch && len(states) > lim.BatchStates {
			return errorf(413, "too many states (%d > %d)", len(states), lim.BatchStates)
		}
		for i, sv := range states {
			if sv.Kind() == pyjson.NullKind {
				return errorf(400, "'state' is required")
			}
			if i == 0 {
				if _, e := parseQuestions(body, lim); e != nil {
					return e
				}
			}
			if _, e := parseState(sv, true, lim); e != nil {
				return e
			}
		}
		return nil
	}
}

// decisionStates is a decision body's "state" (a missing one as null), or its
// "states" (400 unless a non-empty list).
func decisionStates(body pyjson.Value, batch bool) ([]pyjson.Value, *apiError) {
	if !batch {
		sv, ok := body.Get("state")
		if !ok {
			sv = pyjson.Null()
		}
		return []pyjson.Value{sv}, nil
	}
	sv, ok := body.Get("states")
	if !ok || sv.Kind() != pyjson.ArrayKind || len(sv.Items()) == 0 {
		return nil, errorf(400, "'states' must be a non-empty list")
	}
	return sv.Items(), nil
}

// checkRequestLimits applies Limits to a {"state", "questions"} body (413 naming
// the limit): the questions, their options and texts, the state.
func checkRequestLimits(body pyjson.Value, lim Limits) *apiError {
	if _, ok := body.Get("questions"); ok {
		if _, e := parseQuestions(body, lim); e != nil {
			return e
		}
	}
	if sv, ok := body.Get("state"); ok && sv.Kind() != pyjson.NullKind {
		if _, e := parseState(sv, true, lim); e != nil {
			return e
		}
	}
	return nil
}

// checkTexts caps the text of one question: its instructions and every criterion or
// level (a description string, or an object's string values).
func checkTexts(id string, q pyjson.Value, lim Limits) *apiError {
	long := func(what string, v pyjson.Value) *apiError {
		if v.Kind() == pyjson.StringKind {
			if n := utf8.RuneCountInString(v.Str()); n > lim.TextChars {
				return errorf(413, "%s of %s too long (%d > %d chars)", what, pyjson.StrRepr(id), n, lim.TextChars)
			}
		}
		return nil
	}
	if v, ok := q.Get("instructions"); ok {
		if e := long("instructions", v); e != nil {
			return e
		}
	}
	crit, _ := q.Get("criteria")
	var items []pyjson.Value
	switch crit.Kind() {
	case pyjson.ObjectKind:
		for _, m := range crit.Members() {
			if e := long("criterion key", pyjson.String(m.Key)); e != nil {
				return e
			}
			items = append(items, m.Value)
		}
	case pyjson.ArrayKind:
		items = crit.Items()
	}
	for _, it := range items {
		if it.Kind() == pyjson.ObjectKind {
			for _, m := range it.Members() {
				if e := long("criterion", m.Value); e != nil {
					return e
				}
			}
			continue
		}
		if e := long("criterion", it); e != nil {
			return e
		}
	}
	return nil
}
