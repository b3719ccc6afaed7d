package laya

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/laya-metal/laya/heads"
	"github.com/laya-metal/laya/pyjson"
)

// Answer decoding follows upstream Agent._decode_answers (laya/agent.py at 8ef5b2dd); the
// numerics live in package heads. The JSON form is json.dumps(result, ensure_ascii=False)
// with upstream's key order, so Result.MarshalJSON is byte-identical to upstream's output.

var (
	// ErrUnknownQuestion reports a question id the result has no answer for.
	ErrUnknownQuestion = errors.New("laya: no answer for that question id")
	// ErrWrongKind reports asking for a choice answer of a score question, and so on.
	ErrWrongKind = errors.New("laya: the answer is of another question type")
	// ErrNonFinite reports model outputs that are NaN or infinite.
	ErrNonFinite = errors.New("laya: non-finite model outputs")
)

// modelName is the literal upstream puts in every result.
const modelName = "laya-rl-agent"

// LabelProbability is one option of a choice answer.
type LabelProbability struct {
	// Label is the option's key as the JSON answer writes it; Value is the label as the
	// request gave it (a number stays a number in list-form criteria).
	Label       string
	Value       Value
	Probability float64
}

// ChoiceAnswer answers a choice question. Probabilities are in criteria order; every
// number is rounded to 4 decimals as upstream reports it.
type ChoiceAnswer struct {
	Choice           string // the chosen option's Label
	ChoiceValue      Value  // the chosen label as given in the request
	Probabilities    []LabelProbability
	Confidence       float64 // 1 − normalized entropy: how concentrated the distribution is
	AnswerConfidence float64 // the calibrated probability of the chosen option
	ActProbability   float64
}

// ScoreAnswer answers a score question.
type ScoreAnswer struct {
	Score            float64 // the expected level, Σ i·p_i
	Legend           []Value // the level descriptions as given, level 0 first
	Probabilities    []float64
	Confidence       float64
	AnswerConfidence float64
	ActProbability   float64
}

// NoulAnswer answers a noul (yes/no) question.
type NoulAnswer struct {
	Noul             float64 // P(true)
	Confidence       float64 // max(P(true), 1 − P(true))
	AnswerConfidence float64
	ActProbability   float64
}

// OptionUsage reports a question whose squeezed options no longer all have a token span
// of their own (upstream usage["options"]).
type OptionUsage struct {
	QuestionID      string
	Total, Distinct int
	TokensPerOption int // the per-option cap; 0 when none was applied
}

// Usage counts the tokens of a call: the unpadded length of every question row.
type Usage struct {
	InputTokens  int
	OutputTokens int
	Options      []OptionUsage
	// Windows: the questions PredictLong read in more than one window.
	Windows []WindowUsage
	// Tournament: the choice questions PredictTournament answered in rounds.
	Tournament []TournamentUsage
}

// answer is one question's answer; exactly one of the typed fields is set.
type answer struct {
	id     string
	choice *ChoiceAnswer
	score  *ScoreAnswer
	noul   *NoulAnswer
}

// Result is the answer to a request. Its JSON form (MarshalJSON, String) is upstream's
// json.dumps(result, ensure_ascii=False) byte for byte. encoding/json.Marshal re-compacts
// what MarshalJSON returns, so call MarshalJSON or String for the exact bytes.
type Result struct {
	answers []answer
	Usage   Usage
}

// QuestionIDs returns the answered question ids in request order.
func (r *Result) QuestionIDs() []string {
	ids := make([]string, len(r.answers))
	for i, a := range r.answers {
		ids[i] = a.id
	}
	return ids
}

func (r *Result) find(qid string) (answer, error) {
	for _, a := range r.answers {
		if a.id == qid {
			return a, nil
		}
	}
	return answer{}, fmt.Errorf("%w: %q", ErrUnknownQuestion, qid)
}

// Type returns "choice", "score" or "noul" for an answered question.
func (r *Result) Type(qid string) (string, error) {
	a, err := r.find(qid)
	if err != nil {
		return "", err
	}
	return a.typeName(), nil
}

func (a answer) typeName() string {
	switch {
	case a.choice != nil:
		return "choice"
	case a.score != nil:
		return "score"
	}
	return "noul"
}

// Choice returns the answer of choice question qid.
func (r *Result) Choice(qid string) (ChoiceAnswer, error) {
	a, err := r.find(qid)
	if err != nil {
		return ChoiceAnswer{}, err
	}
	if a.choice == nil {
		return ChoiceAnswer{}, fmt.Errorf("%w: question %q is a %s question, not choice", ErrWrongKind, qid, a.typeName())
	}
	c := *a.choice
	// A copy: editing the returned answer must not change the Result's JSON.
	c.Probabilities = slices.Clone(c.Probabilities)
	return c, nil
}

// Score returns the answer of score question qid.
func (r *Result) Score(qid string) (ScoreAnswer, error) {
	a, err := r.find(qid)
	if err != nil {
		return ScoreAnswer{}, err
	}
	if a.score == nil {
		return ScoreAnswer{}, fmt.Errorf("%w: question %q is a %s question, not score", ErrWrongKind, qid, a.typeName())
	}
	sc := *a.score
	sc.Probabilities, sc.Legend = slices.Clone(sc.Probabilities), slices.Clone(sc.Legend)
	return sc, nil
}

// Noul returns the answer of noul question qid.
func (r *Result) Noul(qid string) (NoulAnswer, error) {
	a, err := r.find(qid)
	if err != nil {
		return NoulAnswer{}, err
	}
	if a.noul == nil {
		return NoulAnswer{}, fmt.Errorf("%w: question %q is a %s question, not noul", ErrWrongKind, qid, a.typeName())
	}
	return *a.noul, nil
}

// MarshalJSON writes the result as upstream's json.dumps(result, ensure_ascii=False).
func (r *Result) MarshalJSON() ([]byte, error) { return r.Value().MarshalJSON() }

// String returns the JSON form.
func (r *Result) String() string { return pyjson.Dumps(r.Value()) }

// Value returns the result as upstream's dict, keys in upstream's order.
func (r *Result) Value() Value {
	answers := make([]pyjson.Member, len(r.answers))
	for i, a := range r.answers {
		answers[i] = pyjson.Member{Key: a.id, Value: a.value()}
	}
	usage := []pyjson.Member{
		{Key: "input_tokens", Value: pyjson.Int(int64(r.Usage.InputTokens))},
		{Key: "output_tokens", Value: pyjson.Int(int64(r.Usage.OutputTokens))},
	}
	if len(r.Usage.Options) > 0 {
		opts := make([]pyjson.Member, len(r.Usage.Options))
		for i, o := range r.Usage.Options {
			per := pyjson.Null()
			if o.TokensPerOption > 0 {
				per = pyjson.Int(int64(o.TokensPerOption))
			}
			opts[i] = pyjson.Member{Key: o.QuestionID, Value: pyjson.Object(
				pyjson.Member{Key: "total", Value: pyjson.Int(int64(o.Total))},
				pyjson.Member{Key: "distinct", Value: pyjson.Int(int64(o.Distinct))},
				pyjson.Member{Key: "tokens_per_option", Value: per},
			)}
		}
		usage = append(usage, pyjson.Member{Key: "options", Value: rawObject(opts)})
	}
	if len(r.Usage.Windows) > 0 {
		usage = append(usage, pyjson.Member{Key: "windows", Value: windowsValue(r.Usage.Windows)})
	}
	if len(r.Usage.Tournament) > 0 {
		usage = append(usage, pyjson.Member{Key: "tournament", Value: tournamentValue(r.Usage.Tournament)})
	}
	return pyjson.Object(
		pyjson.Member{Key: "model", Value: pyjson.String(modelName)},
		pyjson.Member{Key: "answers", Value: rawObject(answers)},
		pyjson.Member{Key: "usage", Value: pyjson.Object(usage...)},
	)
}

// rawObject builds an object without merging repeated keys: a Python dict keyed by the
// label 1 and the label "1" has two entries that json.dumps writes with the same key.
func rawObject(members []pyjson.Member) Value {
	return pyjson.Pairs(members...)
}

func (a answer) value() Value {
	switch {
	case a.choice != nil:
		c := a.choice
		probs := make([]pyjson.Member, len(c.Probabilities))
		for i, p := range c.Probabilities {
			probs[i] = pyjson.Member{Key: p.Label, Value: pyjson.Float(p.Probability)}
		}
		return pyjson.Object(
			pyjson.Member{Key: "type", Value: pyjson.String("choice")},
			pyjson.Member{Key: "choice", Value: c.ChoiceValue},
			pyjson.Member{Key: "probabilities", Value: rawObject(probs)},
			pyjson.Member{Key: "confidence", Value: pyjson.Float(c.Confidence)},
			pyjson.Member{Key: "answer_confidence", Value: pyjson.Float(c.AnswerConfidence)},
			pyjson.Member{Key: "action", Value: actionValue(c.ActProbability)},
		)
	case a.score != nil:
		s := a.score
		legend := make([]pyjson.Member, len(s.Legend))
		for i, l := range s.Legend {
			legend[i] = pyjson.Member{Key: strconv.Itoa(i), Value: l}
		}
		probs := make([]pyjson.Member, len(s.Probabilities))
		for i, p := range s.Probabilities {
			probs[i] = pyjson.Member{Key: strconv.Itoa(i), Value: pyjson.Float(p)}
		}
		return pyjson.Object(
			pyjson.Member{Key: "type", Value: pyjson.String("score")},
			pyjson.Member{Key: "score", Value: pyjson.Float(s.Score)},
			pyjson.Member{Key: "legend", Value: pyjson.Object(legend...)},
			pyjson.Member{Key: "probabilities", Value: pyjson.Object(probs...)},
			pyjson.Member{Key: "confidence", Value: pyjson.Float(s.Confidence)},
			pyjson.Member{Key: "answer_confidence", Value: pyjson.Float(s.AnswerConfidence)},
			pyjson.Member{Key: "action", Value: actionValue(s.ActProbability)},
		)
	}
	n := a.noul
	return pyjson.Object(
		pyjson.Member{Key: "type", Value: pyjson.String("noul")},
		pyjson.Member{Key: "noul", Value: pyjson.Float(n.Noul)},
		pyjson.Member{Key: "confidence", Value: pyjson.Float(n.Confidence)},
		pyjson.Member{Key: "answer_confidence", Value: pyjson.Float(n.AnswerConfidence)},
		pyjson.Member{Key: "action", Value: actionValue(n.ActProbability)},
	)
}

func actionValue(p float64) Value {
	return pyjson.Object(pyjson.Member{Key: "act_probability", Value: pyjson.Float(p)})
}

// calibrated checks one row's outputs for k options of question q (all of them, or
// a tournament group's) and returns the options' calibrated probabilities.
func calibrated(q *question, k int, logits, actProbs []float32, temps heads.Temperatures) ([]float32, error) {
	if len(logits) < k || len(actProbs) == 0 {
		return nil, fmt.Errorf("laya: question %q: the network returned %d logits and %d act probabilities for %d options",
			q.id, len(logits), len(actProbs), k)
	}
	logits = logits[:k]
	for _, l := range logits {
		if math.IsNaN(float64(l)) || math.IsInf(float64(l), 0) {
			return nil, fmt.Errorf("%w: question %q has option logits %v", ErrNonFinite, q.id, logits)
		}
	}
	if math.IsNaN(float64(actProbs[0])) {
		return nil, fmt.Errorf("%w: question %q has act probabilities %v", ErrNonFinite, q.id, actProbs)
	}
	temperature, _ := temps.For(q.qtype, k)
	return heads.Softmax(logits, temperature), nil
}

// decodeAnswer turns one row's raw option logits and act probabilities into the answer.
func decodeAnswer(q *question, logits, actProbs []float32, temps heads.Temperatures) (answer, error) {
	k := len(q.options)
	p, err := calibrated(q, k, logits, actProbs, temps)
	if err != nil {
		return answer{}, err
	}
	act := heads.Round4(float64(actProbs[0]))
	answerConf := heads.Round4(float64(heads.AnswerConfidence(p)))
	a := answer{id: q.id}
	switch q.qtype {
	case heads.Choice:
		c := &ChoiceAnswer{
			Probabilities:    make([]LabelProbability, k),
			Confidence:       heads.Round4(float64(heads.EntropyConfidence(p))),
			AnswerConfidence: answerConf,
			ActProbability:   act,
		}
		for i, label := range q.labels {
			c.Probabilities[i] = LabelProbability{Label: pyjson.KeyText(label), Value: label, Probability: heads.Round4(float64(p[i]))}
		}
		best := heads.Argmax(p)
		c.Choice, c.ChoiceValue = c.Probabilities[best].Label, q.labels[best]
		a.choice = c
	case heads.Score:
		s := &ScoreAnswer{
			Score:            heads.Round4(heads.ExpectedLevel(p)),
			Legend:           q.levels,
			Probabilities:    make([]float64, k),
			Confidence:       heads.Round4(float64(heads.EntropyConfidence(p))),
			AnswerConfidence: answerConf,
			ActProbability:   act,
		}
		for i := range p {
			s.Probabilities[i] = heads.Round4(float64(p[i]))
		}
		a.score = s
	default:
		pTrue := p[1]
		a.noul = &NoulAnswer{
			Noul:             heads.Round4(float64(pTrue)),
			Confidence:       heads.Round4(heads.NoulConfidence(pTrue)),
			AnswerConfidence: answerConf,
			ActProbability:   act,
		}
	}
	return a, nil
}

// assembleResult decodes every row and counts usage: input_tokens is the sum of the
// unpadded row lengths, and usage.options lists the questions whose squeezed options
// collapsed into shared token spans (upstream collapsed_options).
func assembleResult(qs []*question, rows []row, outs []rowOutput, temps heads.Temperatures) (*Result, error) {
	if len(rows) != len(qs) || len(outs) != len(qs) {
		return nil, fmt.Errorf("laya: %d questions, %d rows and %d network outputs", len(qs), len(rows), len(outs))
	}
	res := &Result{answers: make([]answer, len(qs))}
	for i, q := range qs {
		a, err := decodeAnswer(q, outs[i].Logits, outs[i].ActProbs, temps)
		if err != nil {
			return nil, err
		}
		res.answers[i] = a
		res.Usage.InputTokens += len(rows[i].IDs)
		if st := rows[i].Options; st.Distinct < st.Options {
			res.Usage.Options = append(res.Usage.Options, OptionUsage{
				QuestionID: q.id, Total: st.Options, Distinct: st.Distinct, TokensPerOption: st.TokensPerOption,
			})
		}
	}
	return res, nil
}
