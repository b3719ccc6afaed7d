package laya

import (
	"fmt"
	"strconv"

	"github.com/laya-metal/laya/pyjson"
)

// ParseResult reads a result in the JSON Result.Value writes (and laya serve answers):
// {"answers": {id: {...}}, "usage": {...}}, other members ignored. It is how a client of
// a remote server gets a Result to read answers from, or to project with Plan.Project.
func ParseResult(data []byte) (*Result, error) {
	v, err := pyjson.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("laya: result: %w", err)
	}
	return ResultFromValue(v)
}

// ResultFromValue is ParseResult of an already parsed value.
func ResultFromValue(v Value) (*Result, error) {
	answers, ok := v.Get("answers")
	if v.Kind() != pyjson.ObjectKind || !ok || answers.Kind() != pyjson.ObjectKind {
		return nil, fmt.Errorf("laya: result: want an object with \"answers\", got %s", pyjson.TypeName(v))
	}
	res := &Result{answers: make([]answer, 0, len(answers.Members()))}
	num := func(a Value, key string) float64 {
		x, _ := a.Get(key)
		f, _ := pyjson.ToFloat(x)
		return f
	}
	for _, m := range answers.Members() {
		a, id := m.Value, m.Key
		typ, _ := a.Get("type")
		act, _ := a.Get("action")
		out := answer{id: id}
		probs, _ := a.Get("probabilities")
		switch typ.Str() {
		case "choice":
			c := &ChoiceAnswer{Confidence: num(a, "confidence"), AnswerConfidence: num(a, "answer_confidence"), ActProbability: num(act, "act_probability")}
			c.ChoiceValue, _ = a.Get("choice")
			c.Choice = pyjson.KeyText(c.ChoiceValue)
			for _, p := range probs.Members() {
				f, _ := pyjson.ToFloat(p.Value)
				c.Probabilities = append(c.Probabilities, LabelProbability{Label: p.Key, Value: pyjson.String(p.Key), Probability: f})
			}
			out.choice = c
		case "score":
			s := &ScoreAnswer{Score: num(a, "score"), Confidence: num(a, "confidence"), AnswerConfidence: num(a, "answer_confidence"), ActProbability: num(act, "act_probability")}
			for i := range probs.Members() {
				s.Probabilities = append(s.Probabilities, num(probs, strconv.Itoa(i)))
			}
			legend, _ := a.Get("legend")
			for i := range legend.Members() {
				l, _ := legend.Get(strconv.Itoa(i))
				s.Legend = append(s.Legend, l)
			}
			out.score = s
		case "noul":
			out.noul = &NoulAnswer{Noul: num(a, "noul"), Confidence: num(a, "confidence"), AnswerConfidence: num(a, "answer_confidence"), ActProbability: num(act, "act_probability")}
		default:
			return nil, fmt.Errorf("laya: result: answer %q has type %s", id, pyjson.Repr(typ))
		}
		res.answers = append(res.answers, out)
	}
	usage, _ := v.Get("usage")
	res.Usage.InputTokens = int(num(usage, "input_tokens"))
	res.Usage.OutputTokens = int(num(usage, "output_tokens"))
	return res, nil
}
