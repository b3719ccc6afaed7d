package laya

import (
	"fmt"
	"unicode/utf8"

	"github.com/laya-metal/laya/pyjson"
)

// State is what the questions are asked about: a text, or any JSON value (an email as an
// object, a conversation as a list of turns). Upstream serializes a non-string state with
// json.dumps(state, ensure_ascii=False), so object key order and number literals matter:
// build it with JSONState or ValueState to keep them.
type State struct {
	text   string
	value  Value
	isText bool
}

// Text is a plain-text state, used as it is.
func Text(s string) State { return State{text: s, isText: true} }

// JSONState is a state given as JSON text: objects keep their key order and numbers
// their literals. A JSON string is a text state, as Python receives a str.
func JSONState(raw []byte) (State, error) {
	v, err := pyjson.Parse(raw)
	if err != nil {
		return State{}, fmt.Errorf("state: %w", err)
	}
	return ValueState(v), nil
}

// ValueState is a state from a Value; a string Value is a text state.
func ValueState(v Value) State {
	if v.Kind() == pyjson.StringKind {
		return Text(v.Str())
	}
	return State{value: v}
}

// StateOf is a state from a Go value (see pyjson.ValueOf). Go maps have no order, so a map's
// keys come out SORTED, which changes the text the model reads compared with the same
// object in another order: use JSONState or ValueState with pyjson.Object to keep an order.
func StateOf(x any) (State, error) {
	v, err := pyjson.ValueOf(x)
	if err != nil {
		return State{}, fmt.Errorf("state: %w", err)
	}
	return ValueState(v), nil
}

// Serialize returns the state as the model reads it before mask scrubbing: the text
// itself, or json.dumps(state, ensure_ascii=False).
func (s State) Serialize() string {
	if s.isText {
		return s.text
	}
	return pyjson.Dumps(s.value)
}

// isList reports a list state, which truncates from the left.
func (s State) isList() bool { return !s.isText && s.value.Kind() == pyjson.ArrayKind }

// Value returns the state as a JSON value (a string for a text state).
func (s State) Value() Value {
	if s.isText {
		return pyjson.String(s.text)
	}
	return s.value
}

// MarshalJSON writes the state as JSON.
func (s State) MarshalJSON() ([]byte, error) { return s.Value().MarshalJSON() }

// UnmarshalJSON reads any JSON value as a state, keeping order and literals.
func (s *State) UnmarshalJSON(data []byte) error {
	st, err := JSONState(data)
	if err != nil {
		return err
	}
	*s = st
	return nil
}

// serializePrefix returns the first limit bytes (or slightly fewer, at a character
// boundary) of s.Serialize(), and whether that is all of it.
func serializePrefix(s State, limit int) (string, bool) {
	if !s.isText {
		return pyjson.DumpsPrefix(s.value, limit)
	}
	if len(s.text) <= limit {
		return s.text, true
	}
	return validPrefix(s.text[:max(limit, 0)]), false
}

// serializeSuffix returns the last limit bytes (or slightly fewer, at a character
// boundary) of a list state's serialisation, and whether that is all of it.
func serializeSuffix(s State, limit int) (string, bool) {
	return pyjson.DumpsSuffix(s.value, limit)
}

// validPrefix drops a partial UTF-8 character at the end of s.
func validPrefix(s string) string {
	for i := 0; i < utf8.UTFMax && len(s) > 0; i++ {
		r, size := utf8.DecodeLastRuneInString(s)
		if r != utf8.RuneError || size != 1 {
			return s
		}
		s = s[:len(s)-1]
	}
	return s
}
