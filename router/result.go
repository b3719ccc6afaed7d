package router

import (
	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/lang"
	"github.com/laya-metal/laya/pyjson"
)

// Value is the decision as upstream writes result["routing"].
func (d Decision) Value() laya.Value {
	detection, workflow := pyjson.Null(), pyjson.Null()
	if d.Detection != nil {
		detection = analysisValue(*d.Detection)
	}
	if d.Workflow != "" {
		workflow = pyjson.String(d.Workflow)
	}
	return pyjson.Object(
		pyjson.Member{Key: "model", Value: pyjson.String(d.Model)},
		pyjson.Member{Key: "repo", Value: pyjson.String(d.Repo)},
		pyjson.Member{Key: "reason", Value: pyjson.String(d.Reason)},
		pyjson.Member{Key: "detection", Value: detection},
		pyjson.Member{Key: "workflow", Value: workflow},
	)
}

// MarshalJSON writes Value in Python's json.dumps form.
func (d Decision) MarshalJSON() ([]byte, error) { return d.Value().MarshalJSON() }

func analysisValue(a lang.Analysis) laya.Value {
	profile := make([]pyjson.Member, len(a.Profile))
	for i, s := range a.Profile {
		profile[i] = pyjson.Member{Key: s.Script, Value: pyjson.Float(s.Fraction)}
	}
	language, mixed := pyjson.Null(), pyjson.Null()
	if a.Language != "" {
		language = pyjson.String(a.Language)
	}
	if a.MixedSegment != "" {
		mixed = pyjson.String(a.MixedSegment)
	}
	return pyjson.Object(
		pyjson.Member{Key: "script", Value: pyjson.String(a.Script)},
		pyjson.Member{Key: "script_profile", Value: pyjson.Object(profile...)},
		pyjson.Member{Key: "language", Value: language},
		pyjson.Member{Key: "is_english", Value: pyjson.Bool(a.IsEnglish)},
		pyjson.Member{Key: "language_undecided", Value: pyjson.Bool(a.LanguageUndecided)},
		pyjson.Member{Key: "diacritic_rate", Value: pyjson.Float(a.DiacriticRate)},
		pyjson.Member{Key: "non_latin_fraction", Value: pyjson.Float(a.NonLatinFraction)},
		pyjson.Member{Key: "mixed_segment", Value: mixed},
	)
}

// Result is a model's answer together with the routing decision; its
// JSON is the result's with "routing" added last, as laya-mlx returns it.
type Result struct {
	*laya.Result
	Routing Decision
}

// Value returns the result JSON with the "routing" member.
func (r *Result) Value() laya.Value {
	v := r.Result.Value()
	return pyjson.Object(append(append([]pyjson.Member(nil), v.Members()...), pyjson.Member{Key: "routing", Value: r.Routing.Value()})...)
}

// MarshalJSON writes Value in Python's json.dumps form.
func (r *Result) MarshalJSON() ([]byte, error) { return r.Value().MarshalJSON() }

// String is the JSON text.
func (r *Result) String() string { return r.Value().String() }
