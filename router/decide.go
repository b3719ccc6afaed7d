package router

import (
	"context"

	"github.com/laya-metal/laya"
)

// Predictor returns the router as a laya.Predictor that routes every request with opts.
// It is a structured.RoutedPredictor: structured.Decide and DecideInto put its routing
// decision in Decision.Routing.
//
//	d, err := structured.Decide(ctx, r.Predictor(router.RouteOptions{}), state, schema)
func (r *Router) Predictor(opts RouteOptions) *Routed { return &Routed{r: r, opts: opts} }

// Routed is a Router bound to its route options; see Router.Predictor.
type Routed struct {
	r    *Router
	opts RouteOptions
}

// Predict routes and answers the questions.
func (p *Routed) Predict(ctx context.Context, state laya.State, questions laya.Questions) (*laya.Result, error) {
	res, _, err := p.PredictRouted(ctx, state, questions)
	return res, err
}

// PredictRouted routes and answers the questions, and returns the routing decision as JSON.
func (p *Routed) PredictRouted(ctx context.Context, state laya.State, questions laya.Questions) (*laya.Result, laya.Value, error) {
	res, err := p.r.Predict(ctx, state, questions, p.opts)
	if err != nil {
		return nil, laya.Value{}, err
	}
	return res.Result, res.Routing.Value(), nil
}
