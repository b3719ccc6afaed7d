package serve

import (
	"math"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/pyjson"
	"github.com/laya-metal/laya/router"
)

// systemoneValue is the /v1/systemone answer: the library's result with upstream's
// HTTP additions — usage.truncated / truncated_questions (and the state token counts
// when asked for), the abstention report when min_confidence is set, and routing last.
// strict projects it onto the Jev contract instead (LAYA_JEV_STRICT).
func systemoneValue(res *laya.Result, st laya.StateUsage, routing router.Decision, c controls, strict bool) pyjson.Value {
	v := res.Value()
	var out []pyjson.Member
	for _, m := range v.Members() {
		switch m.Key {
		case "answers":
			m.Value = answersValue(res, m.Value, c.minConf, strict)
		case "usage":
			m.Value = usageValue(m.Value, st, strict)
		}
		out = append(out, m)
	}
	if !strict {
		out = append(out, pyjson.Member{Key: "routing", Value: routing.Value()})
	}
	return pyjson.Object(out...)
}

// jevKeys are the answer keys the strict Jev contract keeps, by answer type.
var jevKeys = map[string][]string{
	"choice": {"type", "choice", "probabilities", "confidence"},
	"score":  {"type", "score", "probabilities", "confidence", "legend"},
	"noul":   {"type", "noul"},
}

// answersValue is the result's answers member (answers, in res's question order) with
// the abstention report added, or projected onto the Jev contract.
func answersValue(res *laya.Result, answers pyjson.Value, minConf *confidenceGate, strict bool) pyjson.Value {
	out := make([]pyjson.Member, 0, len(answers.Members()))
	for _, a := range answers.Members() {
		members := a.Value.Members()
		typ, _ := res.Type(a.Key)
		if strict {
			keep := map[string]bool{}
			for _, k := range jevKeys[typ] {
				keep[k] = true
			}
			var kept []pyjson.Member
			for _, m := range members {
				if keep[m.Key] {
					kept = append(kept, m)
				}
			}
			members = kept
		} else if minConf != nil {
			members = append(append([]pyjson.Member(nil), members...), abstention(answerConfidence(res, a.Key, typ), minConf.threshold(res, a.Key, typ))...)
		}
		out = append(out, pyjson.Member{Key: a.Key, Value: pyjson.Object(members...)})
	}
	return pyjson.Object(out...)
}

// answerConfidence is the calibrated confidence of question qid, of type typ; NaN
// when the result has no such answer.
func answerConfidence(res *laya.Result, qid, typ string) float64 {
	switch typ {
	case "choice":
		if c, err := res.Choice(qid); err == nil {
			return c.AnswerConfidence
		}
	case "score":
		if sc, err := res.Score(qid); err == nil {
			return sc.AnswerConfidence
		}
	case "noul":
		if n, err := res.Noul(qid); err == nil {
			return n.AnswerConfidence
		}
	}
	return math.NaN()
}

// abstention is upstream's abstention gate report (#361): "abstained" with
// low_confidence true when the answer confidence falls below the threshold, "passed"
// when it clears it, "unevaluated" when the answer has no usable confidence (NaN or
// infinite). The answer itself is kept in every state.
func abstention(confidence, threshold float64) []pyjson.Member {
	state, low := "unevaluated", false
	if !math.IsNaN(confidence) && !math.IsInf(confidence, 0) {
		state, low = "passed", confidence < threshold
		if low {
			state = "abstained"
		}
	}
	return []pyjson.Member{
		{Key: "abstention", Value: pyjson.String(state)},
		{Key: "abstention_threshold", Value: pyjson.Float(threshold)},
		{Key: "low_confidence", Value: pyjson.Bool(low)},
	}
}

func usageValue(usage pyjson.Value, st laya.StateUsage, strict bool) pyjson.Value {
	var out []pyjson.Member
	var options *pyjson.Member
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
		return pyjson.Object(out...)
	}
	ids := make([]pyjson.Value, len(st.TruncatedQuestions))
	for i, id := range st.TruncatedQuestions {
		ids[i] = pyjson.String(id)
	}
	out = append(out,
		pyjson.Member{Key: "truncated", Value: pyjson.Bool(st.Truncated)},
		pyjson.Member{Key: "truncated_questions", Value: pyjson.Array(ids...)},
	)
	if st.Counted {
		out = append(out,
			pyjson.Member{Key: "state_tokens", Value: pyjson.Int(int64(st.StateTokens))},
			pyjson.Member{Key: "state_tokens_dropped", Value: pyjson.Int(int64(st.StateTokensDropped))},
		)
	}
	if options != nil {
		out = append(out, *options)
	}
	return pyjson.Object(out...)
}
