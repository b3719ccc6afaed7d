package snake

import (
	"sync"

	"github.com/laya-metal/laya"
)

// The prompt is upstream's "compact" one (laya-mlx laya_mlx/snake/policy.py), word for
// word: a two-fact state text and three questions.
const (
	MoveInstructions = "Choose the best safe move toward food."
	RiskInstructions = "Is a safe route available?"
	FoodInstructions = "Is food reachable through empty cells?"
)

// Question ids of the three questions asked every tick.
const (
	MoveQuestion = "move"
	RiskQuestion = "risk"
	FoodQuestion = "food"
)

// stateText is the compact state: "Safe route: yes/no. Food reachable through empty
// cells: yes/no."
func stateText(safeRoute, foodReachable bool) string {
	return "Safe route: " + yesNo(safeRoute) + ". Food reachable through empty cells: " + yesNo(foodReachable) + "."
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// prompts holds every state and question set a tick can ask, built once, so a tick
// picks them by index instead of building JSON values (which would allocate): 4 states
// (two yes/no facts) and 5^4 move questions (one criterion per direction).
type prompts struct {
	states    [4]laya.State
	questions [625]laya.Questions
}

var sharedPrompts = sync.OnceValue(func() *prompts {
	p := &prompts{}
	for i := range p.states {
		p.states[i] = laya.Text(stateText(i&1 != 0, i&2 != 0))
	}
	risk := laya.Question{ID: RiskQuestion, Definition: laya.NoulQuestion(RiskInstructions)}
	food := laya.Question{ID: FoodQuestion, Definition: laya.NoulQuestion(FoodInstructions)}
	for i := range p.questions {
		var cs [4]laya.Criterion
		k := i
		for d := range cs {
			cs[d] = laya.Criterion{Label: directionNames[d], Description: criterionText[k%int(numCriteria)]}
			k /= int(numCriteria)
		}
		move := laya.Question{ID: MoveQuestion, Definition: laya.ChoiceWithCriteria(MoveInstructions, cs[:]...)}
		p.questions[i] = laya.Questions{move, risk, food}
	}
	return p
})

// Prompt returns the state and questions of a plan: what the model is asked this tick.
// The values are shared and must not be modified.
func Prompt(p *Plan) (laya.State, laya.Questions) {
	tab := sharedPrompts()
	s := 0
	if p.SafeCount > 0 {
		s |= 1
	}
	if p.FoodReachable {
		s |= 2
	}
	q := 0
	for d := 3; d >= 0; d-- {
		q = q*int(numCriteria) + int(p.Criteria[d])
	}
	return tab.states[s], tab.questions[q]
}
