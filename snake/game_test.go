package snake

import (
	"errors"
	"math/rand/v2"
	"testing"
)

var boards = []struct{ w, h int }{{4, 4}, {4, 5}, {5, 4}, {6, 7}, {7, 6}, {8, 8}, {24, 16}, {16, 24}, {9, 10}}

func TestHamiltonianCycleVisitsEveryCellOnceWithUnitSteps(t *testing.T) {
	for _, b := range boards {
		tour, err := HamiltonianCycle(b.w, b.h)
		if err != nil {
			t.Fatalf("%d×%d: %v", b.w, b.h, err)
		}
		if len(tour) != b.w*b.h {
			t.Fatalf("%d×%d: tour has %d cells, want %d", b.w, b.h, len(tour), b.w*b.h)
		}
		seen := map[Point]bool{}
		for i, p := range tour {
			if p.X < 0 || p.X >= b.w || p.Y < 0 || p.Y >= b.h {
				t.Fatalf("%d×%d: cell %v off the board", b.w, b.h, p)
			}
			if seen[p] {
				t.Fatalf("%d×%d: cell %v visited twice", b.w, b.h, p)
			}
			seen[p] = true
			q := tour[(i+1)%len(tour)] // includes the closing edge
			if abs(p.X-q.X)+abs(p.Y-q.Y) != 1 {
				t.Fatalf("%d×%d: step %d %v→%v is not a unit step", b.w, b.h, i, p, q)
			}
		}
	}
}

func TestBadBoardsAreRejected(t *testing.T) {
	for _, b := range []struct{ w, h int }{{3, 4}, {4, 3}, {5, 5}, {7, 9}, {0, 0}, {-4, 8}, {1 << 20, 1 << 20}, {2, 1 << 30}} {
		if _, err := HamiltonianCycle(b.w, b.h); !errors.Is(err, ErrBoard) {
			t.Errorf("%d×%d: err = %v, want ErrBoard", b.w, b.h, err)
		}
		if _, err := NewGame(GameConfig{Width: b.w, Height: b.h}); !errors.Is(err, ErrBoard) {
			t.Errorf("NewGame %d×%d: err = %v, want ErrBoard", b.w, b.h, err)
		}
	}
	for _, n := range []int{1, -3, 16, 17} {
		if _, err := NewGame(GameConfig{Width: 4, Height: 4, InitialLength: n}); !errors.Is(err, ErrConfig) {
			t.Errorf("initial length %d: err = %v, want ErrConfig", n, err)
		}
	}
}

// refGame is an independent, map-based model of the rules, used to check the planner.
type refGame struct {
	w, h int
	body []Point // head first
	food Point
}

func refOf(g *Game) refGame {
	f, _ := g.Food()
	return refGame{w: g.Width(), h: g.Height(), body: g.Body(nil), food: f}
}

func (r refGame) inside(p Point) bool { return p.X >= 0 && p.X < r.w && p.Y >= 0 && p.Y < r.h }

// after returns the body after moving to target, and whether the move kills.
func (r refGame) after(d Direction) (body []Point, dies bool) {
	h := r.body[0]
	t := Point{h.X + deltas[d].X, h.Y + deltas[d].Y}
	if !r.inside(t) || t == r.body[1] {
		return nil, true
	}
	eats := t == r.food
	rest := r.body
	if !eats {
		rest = r.body[:len(r.body)-1]
	}
	for _, b := range rest {
		if b == t {
			return nil, true
		}
	}
	return append([]Point{t}, rest...), false
}

// reach is a plain BFS from start over cells not in blocked.
func (r refGame) reach(start Point, blocked map[Point]bool) map[Point]bool {
	seen := map[Point]bool{start: true}
	q := []Point{start}
	for len(q) > 0 {
		p := q[0]
		q = q[1:]
		for _, d := range deltas {
			n := Point{p.X + d.X, p.Y + d.Y}
			if r.inside(n) && !blocked[n] && !seen[n] {
				seen[n] = true
				q = append(q, n)
			}
		}
	}
	return seen
}

func checkPlanAgainstReference(t *testing.T, g *Game, p *Plan) {
	t.Helper()
	r := refOf(g)
	for _, d := range Directions {
		m := p.Moves[d]
		body, dies := r.after(d)
		if m.Legal == dies {
			t.Fatalf("tick %d %v: Legal=%v but the reference says dies=%v", g.Ticks(), d, m.Legal, dies)
		}
		if !m.Legal {
			if m.Safe {
				t.Fatalf("tick %d %v: an illegal move is safe", g.Ticks(), d)
			}
			continue
		}
		blocked := map[Point]bool{}
		for _, b := range body[1 : len(body)-1] {
			blocked[b] = true
		}
		seen := r.reach(body[0], blocked)
		traps := !seen[body[len(body)-1]] && len(body) > 2
		if m.Traps != traps || m.Room != len(seen) {
			t.Fatalf("tick %d %v: Traps=%v Room=%d, reference %v %d", g.Ticks(), d, m.Traps, m.Room, traps, len(seen))
		}
		if m.Safe && m.Traps {
			t.Fatalf("tick %d %v: a trapping move is safe", g.Ticks(), d)
		}
	}
	blocked := map[Point]bool{}
	for _, b := range r.body[1:] {
		blocked[b] = true
	}
	seen := r.reach(r.body[0], blocked)
	if p.FoodReachable != seen[r.food] || p.OpenCells != len(seen) {
		t.Fatalf("tick %d: food reachable %v open %d, reference %v %d", g.Ticks(), p.FoodReachable, p.OpenCells, seen[r.food], len(seen))
	}
}

// TestShieldKeepsEverySnakeAlive plays shielded games where the "model" picks a
// random safe move (the worst a shielded model can do): the snake never dies, the body
// stays in cycle order, food comes at least once per lap of the cycle, and the planner
// agrees with an independent reference of the rules every tick.
func TestShieldKeepsEverySnakeAlive(t *testing.T) {
	for _, b := range boards {
		if b.w*b.h > 100 && testing.Short() {
			continue
		}
		for seed := uint64(1); seed <= 3; seed++ {
			g, err := NewGame(GameConfig{Width: b.w, Height: b.h, Seed: seed, InitialLength: 3})
			if err != nil {
				t.Fatal(err)
			}
			pick := rand.New(rand.NewPCG(seed, 99))
			var p Plan
			lastFood := 0
			for step := 0; step < 3*g.Capacity()+200 && g.Alive(); step++ {
				g.Plan(&p)
				if g.Capacity() <= 100 || step%5 == 0 { // the map-based reference is slow
					checkPlanAgainstReference(t, g, &p)
				}
				if p.SafeCount == 0 {
					t.Fatalf("%d×%d seed %d tick %d: no safe move", b.w, b.h, seed, g.Ticks())
				}
				var safe []Direction
				for _, m := range p.Moves {
					if m.Safe {
						safe = append(safe, m.Direction)
					}
				}
				if p.Moves[p.Preferred].Advance < p.Moves[safe[0]].Advance {
					t.Fatalf("preferred %v is not the largest advance", p.Preferred)
				}
				ate, err := g.Step(safe[pick.IntN(len(safe))])
				if err != nil {
					t.Fatal(err)
				}
				if g.Death() != Alive {
					t.Fatalf("%d×%d seed %d tick %d: died (%v)", b.w, b.h, seed, g.Ticks(), g.Death())
				}
				if !g.Won() && !g.cycleOrderValid() {
					t.Fatalf("%d×%d seed %d tick %d: body left cycle order", b.w, b.h, seed, g.Ticks())
				}
				if ate {
					lastFood = g.Ticks()
				}
				if g.Ticks()-lastFood > g.Capacity() {
					t.Fatalf("%d×%d seed %d: %d ticks without food on a %d-cell board", b.w, b.h, seed, g.Ticks()-lastFood, g.Capacity())
				}
			}
		}
	}
}

// TestPreferredMoveWinsSmallBoards follows the shield's own move until the board is
// full: on small boards that must happen within a bounded number of ticks.
func TestPreferredMoveWinsSmallBoards(t *testing.T) {
	for _, b := range []struct{ w, h int }{{4, 4}, {4, 5}, {6, 4}, {6, 6}} {
		g, err := NewGame(GameConfig{Width: b.w, Height: b.h, Seed: 5, InitialLength: 2})
		if err != nil {
			t.Fatal(err)
		}
		var p Plan
		limit := g.Capacity() * g.Capacity()
		for g.Alive() && g.Ticks() < limit {
			g.Plan(&p)
			if _, err := g.Step(p.Preferred); err != nil {
				t.Fatal(err)
			}
		}
		if !g.Won() || g.Len() != g.Capacity() || g.Score() != g.Capacity()-2 {
			t.Fatalf("%d×%d: won=%v len=%d score=%d after %d ticks", b.w, b.h, g.Won(), g.Len(), g.Score(), g.Ticks())
		}
		if _, err := g.Step(Up); !errors.Is(err, ErrGameOver) {
			t.Fatalf("step after winning: %v, want ErrGameOver", err)
		}
	}
}

func TestCollisionsKill(t *testing.T) {
	g, err := NewGame(GameConfig{Width: 6, Height: 6, Seed: 1, InitialLength: 4})
	if err != nil {
		t.Fatal(err)
	}
	var p Plan
	g.Plan(&p)
	var wall, neck Direction = NoDirection, NoDirection
	for _, m := range p.Moves {
		if m.Collision == Reversed {
			neck = m.Direction
		}
	}
	if neck == NoDirection {
		t.Fatal("no move into the neck found")
	}
	if _, err := g.Step(neck); err != nil || g.Death() != Reversed || g.Alive() {
		t.Fatalf("reversing: err=%v death=%v", err, g.Death())
	}
	// March into the nearest wall.
	g.Reset(1)
	for g.Alive() {
		g.Plan(&p)
		wall = Up
		if p.Moves[Up].Collision == Reversed {
			wall = Down
		}
		if _, err := g.Step(wall); err != nil {
			t.Fatal(err)
		}
	}
	if g.Death() != HitWall && g.Death() != HitBody {
		t.Fatalf("death = %v", g.Death())
	}
}

func TestSameSeedSameGame(t *testing.T) {
	play := func() []Point {
		g, _ := NewGame(DefaultGame)
		var p Plan
		var foods []Point
		for range 500 {
			g.Plan(&p)
			g.Step(p.Preferred)
			f, _ := g.Food()
			foods = append(foods, f)
		}
		return foods
	}
	a, b := play(), play()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("tick %d: food %v vs %v", i, a[i], b[i])
		}
	}
}

func TestPromptWording(t *testing.T) {
	g, _ := NewGame(DefaultGame)
	var p Plan
	g.Plan(&p)
	state, qs := Prompt(&p)
	if got, want := state.Serialize(), "Safe route: yes. Food reachable through empty cells: yes."; got != want {
		t.Errorf("state %q, want %q", got, want)
	}
	data, err := qs.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	// The criteria follow the plan, in option order, with upstream's compact texts.
	want := `{"move":{"type":"choice","instructions":"Choose the best safe move toward food.","criteria":{` +
		`"UP":"` + p.Criteria[Up].String() + `","DOWN":"` + p.Criteria[Down].String() +
		`","LEFT":"` + p.Criteria[Left].String() + `","RIGHT":"` + p.Criteria[Right].String() + `"}},` +
		`"risk":{"type":"noul","instructions":"Is a safe route available?"},` +
		`"food":{"type":"noul","instructions":"Is food reachable through empty cells?"}}`
	if compact(string(data)) != want {
		t.Errorf("questions\n%s\nwant\n%s", data, want)
	}
	if stateText(false, false) != "Safe route: no. Food reachable through empty cells: no." {
		t.Error(stateText(false, false))
	}
	// Every criterion combination maps to its own question set.
	for i := range 625 {
		var pl Plan
		pl.SafeCount = 1
		k := i
		for d := range 4 {
			pl.Criteria[d] = Criterion(k % 5)
			k /= 5
		}
		_, q := Prompt(&pl)
		data, _ := q[0].Definition.MarshalJSON()
		for d := range 4 {
			if !contains(compact(string(data)), `"`+directionNames[d]+`":"`+pl.Criteria[d].String()+`"`) {
				t.Fatalf("combination %d: %s", i, data)
			}
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
