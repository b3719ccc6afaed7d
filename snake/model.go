package snake

import (
	"context"
	"fmt"
	"math"

	"github.com/laya-metal/laya"
)

// Answers are one tick's decision: the move distribution and the two yes/no answers.
type Answers struct {
	// Move holds P(UP), P(DOWN), P(LEFT), P(RIGHT), in Directions order.
	Move [4]float64
	// SafeRoute is P("Is a safe route available?"); dead-end risk is 1 − SafeRoute.
	SafeRoute float64
	// FoodReachable is P("Is food reachable through empty cells?").
	FoodReachable float64
	// InputTokens is what the model read (0 when unknown).
	InputTokens int
}

// Model is the decision maker the loop asks once per tick. It must honour ctx: the
// loop cancels it when the tick's deadline passes or a newer tick supersedes it, and
// then discards whatever it returns. *AgentModel is the Laya one; tests inject others.
type Model interface {
	Decide(ctx context.Context, state laya.State, questions laya.Questions) (Answers, error)
}

// ModelFunc adapts a function to Model.
type ModelFunc func(ctx context.Context, state laya.State, questions laya.Questions) (Answers, error)

// Decide calls f.
func (f ModelFunc) Decide(ctx context.Context, state laya.State, questions laya.Questions) (Answers, error) {
	return f(ctx, state, questions)
}

// AgentModel asks a Laya agent: one Agent.Predict with the three questions.
type AgentModel struct{ Agent *laya.Agent }

// Decide runs one Predict and reads the move, risk and food answers.
func (m AgentModel) Decide(ctx context.Context, state laya.State, questions laya.Questions) (Answers, error) {
	res, err := m.Agent.Predict(ctx, state, questions)
	if err != nil {
		return Answers{}, err
	}
	var a Answers
	move, err := res.Choice(MoveQuestion)
	if err != nil {
		return Answers{}, err
	}
	for _, lp := range move.Probabilities {
		d, err := parseDirection(lp.Label)
		if err != nil {
			return Answers{}, fmt.Errorf("%w: move answer: %w", ErrModel, err)
		}
		a.Move[d] = lp.Probability
	}
	risk, err := res.Noul(RiskQuestion)
	if err != nil {
		return Answers{}, err
	}
	food, err := res.Noul(FoodQuestion)
	if err != nil {
		return Answers{}, err
	}
	a.SafeRoute, a.FoodReachable = risk.Noul, food.Noul
	a.InputTokens = res.Usage.InputTokens
	return a, nil
}

// check rejects answers that are not probabilities (upstream refuses to move on them).
func (a *Answers) check() error {
	for _, p := range [6]float64{a.Move[0], a.Move[1], a.Move[2], a.Move[3], a.SafeRoute, a.FoodReachable} {
		if math.IsNaN(p) || p < 0 || p > 1 {
			return fmt.Errorf("%w: answer %v is not a probability", ErrModel, p)
		}
	}
	return nil
}

// Argmax returns the most probable move, the first in option order on ties (as
// upstream's max over DIRECTIONS).
func (a *Answers) Argmax() Direction {
	best := Up
	for _, d := range Directions[1:] {
		if a.Move[d] > a.Move[best] {
			best = d
		}
	}
	return best
}
