package laya

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/laya-metal/laya/heads"
	"github.com/laya-metal/laya/pyjson"
)

// Question validation and normalization follow upstream Laya at 8ef5b2dd:
// Agent._check_question and Agent._to_internal (laya/agent.py), render_options and
// _resolve_noul_labels (laya/common.py). The error texts are upstream's, word for word,
// because callers and the goldens (testdata/oracle/goldens/*/errors.json) match on them.

var (
	// ErrInvalidRequest reports a request that is not {"state": …, "questions": {…}}.
	ErrInvalidRequest = errors.New("laya: invalid request")
	// ErrInvalidQuestion reports a question definition upstream Laya rejects.
	ErrInvalidQuestion = errors.New("laya: invalid question")
	// ErrTooManyOptions reports a question whose options do not fit the token budget:
	// some option markers fell past max_len. It also matches ErrInvalidQuestion.
	ErrTooManyOptions = errors.New("laya: too many options for the token budget")
)

// QuestionError is a rejected question. Error returns upstream's message exactly
// ("question 'q': …"); errors.Is matches ErrInvalidQuestion, and ErrTooManyOptions too
// when the options overflowed the budget.
type QuestionError struct {
	QuestionID string
	msg        string
	tooMany    bool
}

func (e *QuestionError) Error() string { return e.msg }

// Unwrap lets errors.Is find the sentinel errors.
func (e *QuestionError) Unwrap() []error {
	if e.tooMany {
		return []error{ErrTooManyOptions, ErrInvalidQuestion}
	}
	return []error{ErrInvalidQuestion}
}

// questionErrorf builds "question 'id': …" with the id in Python repr, as upstream's %r.
func questionErrorf(id, format string, args ...any) *QuestionError {
	return &QuestionError{QuestionID: id, msg: fmt.Sprintf("question %s: ", pyjson.StrRepr(id)) + fmt.Sprintf(format, args...)}
}

// Question is one question of a request: its id and its definition, a JSON object in
// upstream's schema:
//
//	{"type": "choice", "instructions": "…", "criteria": {"label": "description", …} or ["label", …]}
//	{"type": "score",  "instructions": "…", "criteria": ["level 0 description", …]}
//	{"type": "noul",   "instructions": "…", "criteria": {"false": "…", "true": "…"}, "labels": {"false": "…", "true": "…"}}
//
// Build definitions with ChoiceQuestion, ChoiceWithCriteria, ScoreQuestion, NoulQuestion,
// or take them from JSON with ParseQuestions.
type Question struct {
	ID         string
	Definition Value
}

// Questions are the questions of one request, in the order their answers come back.
type Questions []Question

// ParseQuestions reads a JSON object of question id → definition, keeping its order.
func ParseQuestions(data []byte) (Questions, error) {
	v, err := pyjson.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("questions: %w", err)
	}
	return questionsFromValue(v)
}

func questionsFromValue(v Value) (Questions, error) {
	if v.Kind() != pyjson.ObjectKind {
		return nil, fmt.Errorf("%w: questions must be a JSON object of id -> definition, got %s", ErrInvalidRequest, pyjson.TypeName(v))
	}
	qs := make(Questions, len(v.Members()))
	for i, m := range v.Members() {
		qs[i] = Question{ID: m.Key, Definition: m.Value}
	}
	return qs, nil
}

// Value returns the questions as the JSON object upstream's predict() takes.
func (qs Questions) Value() Value {
	members := make([]pyjson.Member, len(qs))
	for i, q := range qs {
		members[i] = pyjson.Member{Key: q.ID, Value: q.Definition}
	}
	return pyjson.Object(members...)
}

// MarshalJSON writes the questions as one JSON object in their order.
func (qs Questions) MarshalJSON() ([]byte, error) { return qs.Value().MarshalJSON() }

// UnmarshalJSON reads a JSON object of id → definition, keeping its order.
func (qs *Questions) UnmarshalJSON(data []byte) error {
	parsed, err := ParseQuestions(data)
	if err != nil {
		return err
	}
	*qs = parsed
	return nil
}

// Criterion is one labelled option of a choice question. An empty Description leaves
// the option as its bare label, as upstream does for null or "".
type Criterion struct {
	Label       string
	Description string
}

// ChoiceQuestion defines a choice among labels with no descriptions (the list form).
func ChoiceQuestion(instructions string, labels ...string) Value {
	items := make([]Value, len(labels))
	for i, l := range labels {
		items[i] = pyjson.String(l)
	}
	return pyjson.Object(
		pyjson.Member{Key: "type", Value: pyjson.String("choice")},
		pyjson.Member{Key: "instructions", Value: pyjson.String(instructions)},
		pyjson.Member{Key: "criteria", Value: pyjson.Array(items...)},
	)
}

// ChoiceWithCriteria defines a choice among labelled options, in the given order.
func ChoiceWithCriteria(instructions string, criteria ...Criterion) Value {
	members := make([]pyjson.Member, len(criteria))
	for i, c := range criteria {
		members[i] = pyjson.Member{Key: c.Label, Value: pyjson.String(c.Description)}
	}
	return pyjson.Object(
		pyjson.Member{Key: "type", Value: pyjson.String("choice")},
		pyjson.Member{Key: "instructions", Value: pyjson.String(instructions)},
		pyjson.Member{Key: "criteria", Value: pyjson.Object(members...)},
	)
}

// ScoreQuestion defines a score over levels, level 0 first; the answer is the expected level.
func ScoreQuestion(instructions string, levels ...string) Value {
	items := make([]Value, len(levels))
	for i, l := range levels {
		items[i] = pyjson.String(l)
	}
	return pyjson.Object(
		pyjson.Member{Key: "type", Value: pyjson.String("score")},
		pyjson.Member{Key: "instructions", Value: pyjson.String(instructions)},
		pyjson.Member{Key: "criteria", Value: pyjson.Array(items...)},
	)
}

// NoulQuestion defines a yes/no question; the answer is P(true).
func NoulQuestion(instructions string) Value {
	return pyjson.Object(
		pyjson.Member{Key: "type", Value: pyjson.String("noul")},
		pyjson.Member{Key: "instructions", Value: pyjson.String(instructions)},
	)
}

// NoulWithCriteria is NoulQuestion with the option texts the model reads for false and
// true; an empty text keeps upstream's default for that side.
func NoulWithCriteria(instructions, falseDescription, trueDescription string) Value {
	return pyjson.Object(
		pyjson.Member{Key: "type", Value: pyjson.String("noul")},
		pyjson.Member{Key: "instructions", Value: pyjson.String(instructions)},
		pyjson.Member{Key: "criteria", Value: pyjson.Object(
			pyjson.Member{Key: "false", Value: pyjson.String(falseDescription)},
			pyjson.Member{Key: "true", Value: pyjson.String(trueDescription)},
		)},
	)
}

// NoulWithLabels is NoulQuestion with the words shown to the model in place of
// "false"/"true"; the answer is still P(true).
func NoulWithLabels(instructions, falseLabel, trueLabel string) Value {
	return pyjson.Object(
		pyjson.Member{Key: "type", Value: pyjson.String("noul")},
		pyjson.Member{Key: "instructions", Value: pyjson.String(instructions)},
		pyjson.Member{Key: "labels", Value: pyjson.Object(
			pyjson.Member{Key: "false", Value: pyjson.String(falseLabel)},
			pyjson.Member{Key: "true", Value: pyjson.String(trueLabel)},
		)},
	)
}

// question is a validated question in upstream's internal form.
type question struct {
	id           string
	qtype        heads.QType
	instructions string   // str(ins): the text, or json.dumps of a non-string
	options      []string // render_options, in slot order
	// labels are the choice keys as given (list-form labels may be numbers);
	// levels are the score criteria as given, returned as the legend.
	labels []Value
	levels []Value
}

// qtypeNames is sorted(QTYPES) as upstream prints it.
const qtypeNames = "['choice', 'noul', 'score']"

// ValidateQuestions checks questions as Predict does before it tokenizes anything, and
// returns the same *QuestionError Predict would: a server can refuse a bad request
// before it queues it. Options that overflow head_max_len are found only by tokenizing,
// so Predict can still refuse questions that pass.
func ValidateQuestions(qs Questions) error {
	_, err := prepareQuestions(qs)
	return err
}

// checkQuestion is upstream's Agent._check_question.
func checkQuestion(id string, def Value) error {
	if def.Kind() != pyjson.ObjectKind {
		return questionErrorf(id, "definition must be a dict, got %s", pyjson.TypeName(def))
	}
	typ, _ := def.Get("type")
	qtype, ok := heads.ParseQType(typ.Str())
	if typ.Kind() != pyjson.StringKind || !ok {
		return questionErrorf(id, "unknown type %s; use one of %s", pyjson.Repr(typ), qtypeNames)
	}
	if _, ok := def.Get("instructions"); !ok {
		return questionErrorf(id, "no 'instructions'; add the text the model should answer")
	}
	crit, hasCrit := def.Get("criteria")
	switch qtype {
	case heads.Choice:
		if crit.Kind() != pyjson.ObjectKind && crit.Kind() != pyjson.ArrayKind {
			return questionErrorf(id, "a choice question takes 'criteria' as a dict of label -> description, or a list of labels")
		}
		if len(crit.Items()) == 0 && len(crit.Members()) == 0 {
			return questionErrorf(id, "a choice question needs at least one criterion")
		}
		// Dict keys are always strings; only the list form can hold a nested label.
		for i, label := range crit.Items() {
			if label.Kind() == pyjson.ArrayKind || label.Kind() == pyjson.ObjectKind {
				return questionErrorf(id, "choice label %d is a %s; a label is rendered as option text "+
					"and used as the answer key, so it must be a scalar (a string, number or "+
					"None), got %s", i, pyjson.TypeName(label), pyjson.Repr(label))
			}
		}
	case heads.Score:
		if crit.Kind() != pyjson.ArrayKind {
			return questionErrorf(id, "a score question takes 'criteria' as a list of level descriptions, index 0 first")
		}
		if len(crit.Items()) == 0 {
			return questionErrorf(id, "a score question needs at least one level")
		}
		for i, level := range crit.Items() {
			if level.Kind() == pyjson.NullKind {
				return questionErrorf(id, "score level %d is null; give every level a description, index 0 first", i)
			}
		}
	case heads.Noul:
		if hasCrit && crit.Kind() != pyjson.NullKind && crit.Kind() != pyjson.ObjectKind {
			return questionErrorf(id, "a noul question takes 'criteria' as a dict with optional 'true'/'false' descriptions, or omits it")
		}
		if crit.Kind() == pyjson.ObjectKind {
			keySet := map[string]bool{}
			bad := false
			for _, m := range crit.Members() {
				k := strings.ToLower(m.Key)
				keySet[k] = true
				if k != "true" && k != "false" {
					bad = true
				}
			}
			if bad {
				keys := make([]string, 0, len(keySet))
				for k := range keySet {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				return questionErrorf(id, "a noul question takes 'criteria' keyed only 'true'/'false' (either "+
					"or both, and omitted is fine), got %s. Those keys are the option texts the model "+
					"reads; any other key was silently dropped and replaced with the defaults. If you "+
					"want the answer worded differently, keep 'criteria' keyed 'true'/'false' and set "+
					"'labels' instead.", pyjson.StrListRepr(keys))
			}
		}
	}
	if labels, ok := def.Get("labels"); ok {
		if qtype != heads.Noul {
			return questionErrorf(id, "'labels' is only supported for noul questions")
		}
		if _, _, err := noulLabels(labels); err != nil {
			return questionErrorf(id, "%s", err)
		}
	}
	return nil
}

// errNoulLabels is _resolve_noul_labels' message.
var errNoulLabels = errors.New("noul labels must map exactly 'false' and 'true' to distinct non-empty strings")

// noulLabels is _resolve_noul_labels: null means the defaults "false"/"true".
func noulLabels(labels Value) (falseLabel, trueLabel string, err error) {
	if labels.Kind() == pyjson.NullKind {
		return "false", "true", nil
	}
	if labels.Kind() != pyjson.ObjectKind || len(labels.Members()) != 2 {
		return "", "", errNoulLabels
	}
	f, okF := labels.Get("false")
	t, okT := labels.Get("true")
	if !okF || !okT || f.Kind() != pyjson.StringKind || t.Kind() != pyjson.StringKind {
		return "", "", errNoulLabels
	}
	falseLabel, trueLabel = pyStrip(f.Str()), pyStrip(t.Str())
	if falseLabel == "" || trueLabel == "" || falseLabel == trueLabel {
		return "", "", errNoulLabels
	}
	return falseLabel, trueLabel, nil
}

// pyStrip is Python's str.strip(): Unicode whitespace plus the separators U+001C–U+001F,
// which Python counts as whitespace and Go does not.
func pyStrip(s string) string {
	return strings.TrimFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
	})
}

// toInternal is upstream's Agent._to_internal followed by render_options, for a
// definition checkQuestion accepted.
func toInternal(id string, def Value) *question {
	q := new(question)
	q.fromDefinition(id, def, new(optionTexts))
	return q
}

// fromDefinition is toInternal into q; text is scratch space for the options.
func (q *question) fromDefinition(id string, def Value, text *optionTexts) {
	typ, _ := def.Get("type")
	qtype, _ := heads.ParseQType(typ.Str())
	*q = question{id: id, qtype: qtype}
	ins, _ := def.Get("instructions")
	if ins.Kind() == pyjson.StringKind {
		q.instructions = ins.Str()
	} else {
		// ensure_ascii=False since upstream #228 (oracle README fact 3).
		q.instructions = pyjson.Dumps(ins)
	}
	crit, _ := def.Get("criteria")
	switch qtype {
	case heads.Choice:
		if crit.Kind() == pyjson.ArrayKind {
			// dict.fromkeys(list): a repeated label (by Python equality: 1 == 1.0 == True)
			// keeps its first position and has no description.
			seen := map[string]bool{}
			for _, label := range crit.Items() {
				key, hashable := pyjson.HashKey(label)
				if hashable && seen[key] {
					continue
				}
				seen[key] = true
				q.labels = append(q.labels, label)
				q.options = append(q.options, pyjson.Str(label))
			}
			break
		}
		q.labels = make([]Value, len(crit.Members()))
		for i, m := range crit.Members() {
			q.labels[i] = pyjson.String(m.Key)
			if isNoDescription(m.Value) {
				text.add(m.Key)
			} else {
				text.add(m.Key, ": ", renderCriterion(m.Value))
			}
		}
		q.options = text.strings()
	case heads.Score:
		q.levels = crit.Items()
		for i, level := range q.levels {
			text.add("level ", strconv.Itoa(i), ": ", renderCriterion(level))
		}
		q.options = text.strings()
	case heads.Noul:
		labels, _ := def.Get("labels")
		falseLabel, trueLabel, _ := noulLabels(labels)
		falseText, trueText := "no, the statement does not hold", "yes, the statement holds"
		if v, ok := noulCriterion(crit, "false"); ok && !isNoDescription(v) {
			falseText = renderCriterion(v)
		}
		if v, ok := noulCriterion(crit, "true"); ok && !isNoDescription(v) {
			trueText = renderCriterion(v)
		}
		text.add(falseLabel, ": ", falseText)
		text.add(trueLabel, ": ", trueText)
		q.options = text.strings()
	}
}

// optionTexts builds the option texts of one question as one string, each
// option a slice of it: a string per option was over a quarter of a
// 50-question request's allocations. One optionTexts serves the questions of
// a request in turn.
type optionTexts struct {
	buf  []byte
	ends []int
}

// add adds an option, the concatenation of parts.
func (t *optionTexts) add(parts ...string) {
	for _, p := range parts {
		t.buf = append(t.buf, p...)
	}
	t.ends = append(t.ends, len(t.buf))
}

// strings returns the options added since the last call.
func (t *optionTexts) strings() []string {
	all := string(t.buf)
	out := make([]string, len(t.ends))
	start := 0
	for i, end := range t.ends {
		out[i] = all[start:end]
		start = end
	}
	t.buf, t.ends = t.buf[:0], t.ends[:0]
	return out
}

// noulCriterion is lowered.get(side) for upstream's lowered criteria,
// {k.lower(): v for k, v in criteria.items()}: the last key that lower-cases
// to side holds its value.
func noulCriterion(crit Value, side string) (v Value, ok bool) {
	for _, m := range crit.Members() {
		if strings.ToLower(m.Key) == side {
			v, ok = m.Value, true
		}
	}
	return v, ok
}

// isNoDescription is upstream's `v is None or v == ""`: 0 and false are real descriptions.
func isNoDescription(v Value) bool {
	return v.Kind() == pyjson.NullKind || (v.Kind() == pyjson.StringKind && v.Str() == "")
}

// renderCriterion is render_criterion: strings pass through, anything else is
// json.dumps(…, ensure_ascii=False) with ", " and ": " separators.
func renderCriterion(v Value) string {
	if v.Kind() == pyjson.StringKind {
		return v.Str()
	}
	return pyjson.Dumps(v)
}
