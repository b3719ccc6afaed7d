package tokenizer

import (
	"encoding/json"
	"fmt"
)

// postProcessor adds the special tokens of a single sequence
// (processors/*.rs). Pairs are not needed by Laya.
type postProcessor interface {
	single(ids []int) []int
	// roles names the special tokens before and after the sequence, for
	// LoadDir's CLS/SEP fallback.
	roles() (before, after []string)
}

func newPostProcessor(raw json.RawMessage, where string, t *Tokenizer) (postProcessor, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var c componentJSON
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%s: %v: %w", where, err, ErrInvalid)
	}
	switch c.Type {
	case "TemplateProcessing":
		return newTemplate(raw, where)
	case "BertProcessing", "RobertaProcessing":
		// {"sep": ["[SEP]", 102], "cls": ["[CLS]", 101]}: one token each.
		var b struct {
			Sep [2]json.RawMessage `json:"sep"`
			Cls [2]json.RawMessage `json:"cls"`
		}
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, fmt.Errorf("%s (%s): %v: %w", where, c.Type, err, ErrInvalid)
		}
		var tp template
		for _, part := range []struct {
			name string
			v    [2]json.RawMessage
		}{{"cls", b.Cls}, {"sep", b.Sep}} {
			var tok string
			var id int
			if json.Unmarshal(part.v[0], &tok) != nil || json.Unmarshal(part.v[1], &id) != nil {
				return nil, fmt.Errorf("%s (%s): %s is not [token, id]: %w", where, c.Type, part.name, ErrInvalid)
			}
			tp.items = append(tp.items, templateItem{special: tok, ids: []int{id}})
			if part.name == "cls" {
				tp.items = append(tp.items, templateItem{sequence: true})
			}
		}
		return &tp, nil
	case "ByteLevel":
		// Only trims offsets; ids are untouched.
		return nil, nil
	case "Sequence":
		seq, err := parseSequence(raw, "processors", where, func(sub json.RawMessage, at string) (postProcessor, error) {
			return newPostProcessor(sub, at, t)
		})
		if err != nil || len(seq) == 0 {
			return nil, err
		}
		return sequencePost(seq), nil
	}
	return nil, fmt.Errorf("%s: type %q: %w", where, c.Type, ErrUnsupported)
}

// template is TemplateProcessing's "single" template.
type template struct {
	items []templateItem
}

type templateItem struct {
	sequence bool   // $A
	special  string // the special token's name in special_tokens
	ids      []int
}

func newTemplate(raw json.RawMessage, where string) (*template, error) {
	var tj struct {
		Single []struct {
			SpecialToken *struct {
				ID string `json:"id"`
			} `json:"SpecialToken"`
			Sequence *struct {
				ID string `json:"id"`
			} `json:"Sequence"`
		} `json:"single"`
		SpecialTokens map[string]struct {
			ID  string `json:"id"`
			IDs []int  `json:"ids"`
		} `json:"special_tokens"`
	}
	if err := json.Unmarshal(raw, &tj); err != nil {
		return nil, fmt.Errorf("%s (TemplateProcessing): %v: %w", where, err, ErrInvalid)
	}
	tp := &template{}
	for i, it := range tj.Single {
		switch {
		case it.Sequence != nil:
			if it.Sequence.ID != "A" {
				return nil, fmt.Errorf("%s (TemplateProcessing): single[%d] is sequence %q, want A: %w", where, i, it.Sequence.ID, ErrInvalid)
			}
			tp.items = append(tp.items, templateItem{sequence: true})
		case it.SpecialToken != nil:
			st, ok := tj.SpecialTokens[it.SpecialToken.ID]
			if !ok {
				return nil, fmt.Errorf("%s (TemplateProcessing): single[%d] names %q, which special_tokens lacks: %w", where, i, it.SpecialToken.ID, ErrInvalid)
			}
			tp.items = append(tp.items, templateItem{special: it.SpecialToken.ID, ids: st.IDs})
		default:
			return nil, fmt.Errorf("%s (TemplateProcessing): single[%d] is neither Sequence nor SpecialToken: %w", where, i, ErrInvalid)
		}
	}
	return tp, nil
}

func (tp *template) single(ids []int) []int {
	out := make([]int, 0, len(ids)+4)
	for _, it := range tp.items {
		if it.sequence {
			out = append(out, ids...)
		} else {
			out = append(out, it.ids...)
		}
	}
	return out
}

func (tp *template) roles() (before, after []string) {
	seen := false
	for _, it := range tp.items {
		switch {
		case it.sequence:
			seen = true
		case seen:
			after = append(after, it.special)
		default:
			before = append(before, it.special)
		}
	}
	return before, after
}

type sequencePost []postProcessor

func (seq sequencePost) single(ids []int) []int {
	for _, p := range seq {
		ids = p.single(ids)
	}
	return ids
}

func (seq sequencePost) roles() (before, after []string) {
	for _, p := range seq {
		b, a := p.roles()
		before = append(before, b...)
		after = append(after, a...)
	}
	return before, after
}
