package snake

// The planner is deterministic and separate from the model: it classifies the four
// moves, writes the criteria the model reads, and is the shield that overrules it.
// Its rules are upstream's (laya-mlx laya_mlx/snake/game.py moves/food_reachability;
// policy.py decide), plus an explicit reachability check for trapping.

// Move is the planner's view of one direction.
type Move struct {
	Direction Direction
	// Legal: no wall, body or neck in the way (Collision says which otherwise).
	Legal     bool
	Collision Death
	// Eats: the target cell holds the food.
	Eats bool
	// Traps: legal, but afterwards the head cannot reach its tail through open
	// cells (flood fill), so the snake would be shut in. Room counts the cells the
	// head could reach after the move.
	Traps bool
	Room  int
	// Advance is how far along the shield's cycle the move jumps (0 for a wall).
	Advance int
	// Safe: legal, keeps the body in cycle order without overtaking the tail or
	// skipping the food along the cycle, and does not trap. A shielded snake only
	// makes safe moves, so it can always follow the cycle and never dies.
	Safe bool
}

// Criterion is the planner's verdict on a move, as the model reads it.
type Criterion uint8

const (
	Blocked     Criterion = iota // "Blocked. Collision."
	Unsafe                       // "Unsafe. Traps the snake." (legal, not safe: traps or leaves cycle order)
	EatNow                       // "Safe. Eat food now. Best."
	BestRoute                    // "Safe. Best route to food."
	SlowerRoute                  // "Safe. Slower route."
	numCriteria
)

// criterionText is upstream's compact wording (laya-mlx policy.py, prompt="compact"),
// word for word: the wording is part of what the model is measured on.
var criterionText = [numCriteria]string{
	"Blocked. Collision.",
	"Unsafe. Traps the snake.",
	"Safe. Eat food now. Best.",
	"Safe. Best route to food.",
	"Safe. Slower route.",
}

func (c Criterion) String() string { return criterionText[c] }

// Plan is the planner's analysis of the current position.
type Plan struct {
	Moves [4]Move
	// SafeCount counts safe moves; Preferred is the safe move with the largest advance
	// (the shield's own move), NoDirection when none is safe.
	SafeCount int
	Preferred Direction
	// FoodReachable: the food is connected to the head through empty cells (the
	// occupied tail is not empty). OpenCells counts the cells so connected.
	FoodReachable bool
	OpenCells     int
	// Criteria are the move question's option descriptions, in option order.
	Criteria [4]Criterion
}

// fallback is the move to play when no decision is available: the preferred safe
// move; failing that the legal move with the most room; failing that UP.
func (p *Plan) fallback() Direction {
	if p.Preferred != NoDirection {
		return p.Preferred
	}
	best, room := Up, -1
	for _, m := range p.Moves {
		if m.Legal && m.Room > room {
			best, room = m.Direction, m.Room
		}
	}
	return best
}

// Plan analyses the position into p (reused: planning allocates nothing).
func (g *Game) Plan(p *Plan) {
	*p = Plan{Preferred: NoDirection}
	if !g.Alive() {
		return
	}
	n := len(g.cycle)
	headCell := g.body(0)
	headAt := int(g.index[headCell])
	tailDist := ((int(g.index[g.body(g.length-1)])-headAt)%n + n) % n
	foodDist := ((int(g.index[g.food])-headAt)%n + n) % n
	bestAdvance := -1
	for _, d := range Directions {
		m := Move{Direction: d}
		m.Collision = g.collision(d)
		m.Legal = m.Collision == Alive
		if c, ok := g.target(d); ok {
			m.Advance = ((int(g.index[c])-headAt)%n + n) % n
			m.Eats = c == g.food
			if m.Legal {
				m.Room, m.Traps = g.roomAfter(c, m.Eats)
			}
		}
		m.Safe = m.Legal && !m.Traps &&
			!(m.Advance > tailDist || (m.Advance == tailDist && m.Eats)) && // overtakes the tail
			!(m.Advance == 0 || m.Advance > foodDist) // skips the food
		if m.Safe {
			p.SafeCount++
			if m.Advance > bestAdvance {
				bestAdvance, p.Preferred = m.Advance, d
			}
		}
		p.Moves[d] = m
	}
	for _, m := range p.Moves {
		switch {
		case !m.Legal:
			p.Criteria[m.Direction] = Blocked
		case !m.Safe:
			p.Criteria[m.Direction] = Unsafe
		case m.Eats:
			p.Criteria[m.Direction] = EatNow
		case m.Direction == p.Preferred:
			p.Criteria[m.Direction] = BestRoute
		default:
			p.Criteria[m.Direction] = SlowerRoute
		}
	}
	p.FoodReachable, p.OpenCells = g.foodReachability()
}

// nextStamp starts a flood fill: a cell is seen when seen[c] == stamp, so no clearing.
func (g *Game) nextStamp() uint32 {
	g.stamp++
	if g.stamp == 0 {
		clear(g.seen)
		g.stamp = 1
	}
	return g.stamp
}

// flood counts the cells reachable from start through cells free(c) allows, and
// reports whether goal (−1: none) was among them.
func (g *Game) flood(start, goal int32, free func(int32) bool) (count int, reached bool) {
	stamp := g.nextStamp()
	g.seen[start] = stamp
	q := g.queue[:0]
	q = append(q, start)
	for i := 0; i < len(q); i++ {
		c := q[i]
		if c == goal {
			reached = true
		}
		x, y := int(c)%g.w, int(c)/g.w
		for _, d := range deltas {
			nx, ny := x+d.X, y+d.Y
			if nx < 0 || nx >= g.w || ny < 0 || ny >= g.h {
				continue
			}
			nc := int32(ny*g.w + nx)
			if g.seen[nc] == stamp || !free(nc) {
				continue
			}
			g.seen[nc] = stamp
			q = append(q, nc)
		}
	}
	return len(q), reached
}

// roomAfter simulates moving the head to target: the new tail is the goal, every
// other body cell blocks. A snake of two can always follow its own tail.
func (g *Game) roomAfter(target int32, eats bool) (room int, traps bool) {
	// After the move the body is target + the old body minus its tail (unless eating);
	// its new tail is old body[len-1] when eating, else old body[len-2].
	oldTail := g.body(g.length - 1)
	newTail := oldTail
	newLen := g.length + 1
	if !eats {
		newTail = g.body(g.length - 2)
		newLen = g.length
	}
	free := func(c int32) bool {
		if c == newTail {
			return true
		}
		if c == oldTail && !eats {
			return true
		}
		return !g.occ[c]
	}
	room, reached := g.flood(target, newTail, free)
	return room, !reached && newLen > 2
}

// foodReachability is upstream's: breadth-first from the head through cells off the
// body; the occupied tail is not treated as empty.
func (g *Game) foodReachability() (bool, int) {
	count, reached := g.flood(g.body(0), g.food, func(c int32) bool { return !g.occ[c] })
	return reached, count
}
