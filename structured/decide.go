package structured

import (
	"context"
	"fmt"
	"math/big"
	"strconv"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/heads"
	"github.com/laya-metal/laya/pyjson"
)

// RoutedPredictor is a laya.Predictor that also says where it sent the request: Decide puts
// that routing into Decision.Routing. router.Router's Predictor method returns one.
type RoutedPredictor interface {
	laya.Predictor
	PredictRouted(ctx context.Context, state laya.State, questions laya.Questions) (*laya.Result, laya.Value, error)
}

// FieldDecision is one decided field: its value, the answer's confidence and the
// probability of every option (a choice's labels, a score's levels "0", "1", …, a
// noul's "false" and "true").
type FieldDecision struct {
	Name          string
	Kind          FieldKind
	Value         laya.Value
	Confidence    float64
	Probabilities []laya.LabelProbability
}

// Decision is a schema answered in one pass: the values in the schema's shape and, per
// field, the confidence and probabilities behind them (upstream's DecisionResult).
type Decision struct {
	// Values is the JSON object of property → value, in schema order: choice values
	// keep their JSON type (an enum of integers answers an integer), scores are
	// integers, booleans are booleans.
	Values laya.Value
	Fields []FieldDecision
	Usage  laya.Usage
	// Routing is the router's decision as JSON when a RoutedPredictor answered;
	// null otherwise.
	Routing laya.Value
	// Result is the raw prediction the values were projected from.
	Result *laya.Result
}

// Field returns the named field's decision.
func (d *Decision) Field(name string) (FieldDecision, bool) {
	for _, f := range d.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return FieldDecision{}, false
}

// Value returns the decision as upstream's DecisionResult reads in JSON: values,
// confidence, probabilities, usage and (when routed) routing.
func (d *Decision) Value() laya.Value {
	conf := make([]pyjson.Member, len(d.Fields))
	probs := make([]pyjson.Member, len(d.Fields))
	for i, f := range d.Fields {
		conf[i] = pyjson.Member{Key: f.Name, Value: pyjson.Float(f.Confidence)}
		ps := make([]pyjson.Member, len(f.Probabilities))
		for j, p := range f.Probabilities {
			ps[j] = pyjson.Member{Key: p.Label, Value: pyjson.Float(p.Probability)}
		}
		probs[i] = pyjson.Member{Key: f.Name, Value: pyjson.Pairs(ps...)}
	}
	members := []pyjson.Member{
		{Key: "values", Value: d.Values},
		{Key: "confidence", Value: pyjson.Object(conf...)},
		{Key: "probabilities", Value: pyjson.Object(probs...)},
		{Key: "usage", Value: pyjson.Object(
			pyjson.Member{Key: "input_tokens", Value: pyjson.Int(int64(d.Usage.InputTokens))},
			pyjson.Member{Key: "output_tokens", Value: pyjson.Int(int64(d.Usage.OutputTokens))},
		)},
	}
	if d.Routing.Kind() != pyjson.NullKind {
		members = append(members, pyjson.Member{Key: "routing", Value: d.Routing})
	}
	return pyjson.Object(members...)
}

// MarshalJSON writes Value.
func (d *Decision) MarshalJSON() ([]byte, error) { return d.Value().MarshalJSON() }

// Decide answers a JSON schema about state in one forward pass of p (an *Agent, or a
// router's Predictor) and returns the values in the schema's shape. See PlanSchema for
// the supported subset; a schema outside it is a *SchemaError (errors.Is ErrSchema)
// naming the path, before anything runs.
func Decide(ctx context.Context, p laya.Predictor, state laya.State, schema []byte) (*Decision, error) {
	plan, err := ParseSchema(schema)
	if err != nil {
		return nil, err
	}
	return plan.Decide(ctx, p, state)
}

// Decide asks the plan's questions about state on p and projects the answers.
func (pl *Plan) Decide(ctx context.Context, p laya.Predictor, state laya.State) (*Decision, error) {
	qs := pl.Questions()
	var (
		res     *laya.Result
		routing laya.Value
		err     error
	)
	if rp, ok := p.(RoutedPredictor); ok {
		res, routing, err = rp.PredictRouted(ctx, state, qs)
	} else {
		res, err = p.Predict(ctx, state, qs)
	}
	if err != nil {
		return nil, err
	}
	d, err := pl.Project(res)
	if err != nil {
		return nil, err
	}
	d.Routing = routing
	return d, nil
}

// Project maps a prediction of the plan's questions onto the schema's values:
// a choice's label back to its original value, a score to minimum + its likeliest
// level, a noul to P(true) ≥ 0.5.
func (pl *Plan) Project(res *laya.Result) (*Decision, error) {
	if res == nil {
		return nil, fmt.Errorf("structured: project: no result")
	}
	d := &Decision{Fields: make([]FieldDecision, len(pl.Fields)), Usage: res.Usage, Result: res}
	values := make([]pyjson.Member, len(pl.Fields))
	for i, f := range pl.Fields {
		fd, err := projectField(f, res)
		if err != nil {
			return nil, err
		}
		d.Fields[i] = fd
		values[i] = pyjson.Member{Key: f.Name, Value: fd.Value}
	}
	d.Values = pyjson.Object(values...)
	return d, nil
}

func projectField(f PlanField, res *laya.Result) (FieldDecision, error) {
	fd := FieldDecision{Name: f.Name, Kind: f.Kind}
	switch f.Kind {
	case FieldNoul:
		a, err := res.Noul(f.Name)
		if err != nil {
			return fd, err
		}
		fd.Value, fd.Confidence = pyjson.Bool(a.Noul >= 0.5), a.Confidence
		fd.Probabilities = []laya.LabelProbability{
			{Label: "false", Value: pyjson.String("false"), Probability: heads.Round4(1 - a.Noul)},
			{Label: "true", Value: pyjson.String("true"), Probability: a.Noul},
		}
	case FieldScore:
		a, err := res.Score(f.Name)
		if err != nil {
			return fd, err
		}
		best := 0
		for i, p := range a.Probabilities {
			if p > a.Probabilities[best] {
				best = i
			}
		}
		level := new(big.Int).Add(f.Minimum, big.NewInt(int64(best)))
		fd.Value, _ = pyjson.Parse([]byte(level.String()))
		fd.Confidence = a.Confidence
		fd.Probabilities = make([]laya.LabelProbability, len(a.Probabilities))
		for i, p := range a.Probabilities {
			key := strconv.Itoa(i)
			fd.Probabilities[i] = laya.LabelProbability{Label: key, Value: pyjson.String(key), Probability: p}
		}
	default:
		a, err := res.Choice(f.Name)
		if err != nil {
			return fd, err
		}
		fd.Value = pyjson.String(a.Choice)
		for i, l := range f.Labels {
			if l == a.Choice {
				fd.Value = f.Options[i]
				break
			}
		}
		fd.Confidence, fd.Probabilities = a.Confidence, a.Probabilities
	}
	return fd, nil
}
