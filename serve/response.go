package serve

import (
	"math"
	"strconv"

	"github.com/laya-metal/laya"
)

// systemoneValue is the /v1/systemone answer: the library's result with upstream's
// HTTP additions — usage.truncated / truncated_questions (and the state token counts
// when asked for), the abstention report when min_confidence is set, and routing last.
// strict projects it onto the Jev contract instead (LAYA_JEV_STRICT).
func systemoneValue(res *laya.Result, st laya.StateUsage, routing laya.RouteDecision, c controls, strict bool) laya.Value {
	v := res.Value()
	var out []laya.Member
	for _, m := range v.Members() {
		switch m.Key {
		case "answers":
			m.Value = answersValue(m.Value, c.minConf, strict)
		case "usage":
			m.Value = usageValue(m.Value, st, strict)
		}
		out = append(out, m)
	}
	if !strict {
		out = append(out, laya.Member{Key: "routing", Value: routing.Value()})
	}
	return laya.ObjectValue(out...)
}

// jevKeys are the answer keys the strict Jev contract keeps, by answer type.
var jevKeys = map[string][]string{
	"choice": {"type", "choice", "probabilities", "confidence"},
	"score":  {"type", "score", "probabilities", "confidence", "legend"},
	"noul":   {"type", "noul"},
}

func answersValue(answers laya.Value, minConf *float64, strict bool) laya.Value {
	out := make([]laya.Member, 0, len(answers.Members()))
	for _, a := range answers.Members() {
		members := a.Value.Members()
		if strict {
			typ, _ := a.Value.Get("type")
			keep := map[string]bool{}
			for _, k := range jevKeys[typ.Str()] {
				keep[k] = true
			}
			var kept []laya.Member
			for _, m := range members {
				if keep[m.Key] {
					kept = append(kept, m)
				}
			}
			members = kept
		} else if minConf != nil {
			members = append(append([]laya.Member(nil), members...), abstention(a.Value, *minConf)...)
		}
		out = append(out, laya.Member{Key: a.Key, Value: laya.ObjectValue(members...)})
	}
	return laya.ObjectValue(out...)
}

// abstention is upstream's abstention gate report (#361): "abstained" with
// low_confidence true when answer_confidence falls below the threshold, "passed" when
// it clears it, "unevaluated" when the answer has no usable confidence. The answer itself
// is kept in every state.
func abstention(answer laya.Value, threshold float64) []laya.Member {
	state, low := "unevaluated", false
	if c, ok := answer.Get("answer_confidence"); ok && c.Kind() == laya.NumberKind {
		if f, err := strconv.ParseFloat(c.Literal(), 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			state, low = "passed", f < threshold
			if low {
				state = "abstained"
			}
		}
	}
	return []laya.Member{
		{Key: "abstention", Value: laya.StringValue(state)},
		{Key: "abstention_threshold", Value: laya.FloatValue(threshold)},
		{Key: "low_confidence", Value: laya.BoolValue(low)},
	}
}

func usageValue(usage laya.Value, st laya.StateUsage, strict bool) laya.Value {
	var out []laya.Member
	var options *laya.Member
	for _, m := range usage.Members() {
		switch m.Key {
		case "input_tokens", "output_tokens":
			out = append(out, m)
		case "options":
			m := m
			options = &m
		default:
			if !strict {
				out = append(out, m)
			}
		}
	}
	if strict {
		return laya.ObjectValue(out...)
	}
	ids := make([]laya.Value, len(st.TruncatedQuestions))
	for i, id := range st.TruncatedQuestions {
		ids[i] = laya.StringValue(id)
	}
	out = append(out,
		laya.Member{Key: "truncated", Value: laya.BoolValue(st.Truncated)},
		laya.Member{Key: "truncated_questions", Value: laya.ArrayValue(ids...)},
	)
	if st.Counted {
		out = append(out,
			laya.Member{Key: "state_tokens", Value: laya.IntValue(int64(st.StateTokens))},
			laya.Member{Key: "state_tokens_dropped", Value: laya.IntValue(int64(st.StateTokensDropped))},
		)
	}
	if options != nil {
		out = append(out, *options)
	}
	return laya.ObjectValue(out...)
}
