package snake

import (
	"errors"
	"fmt"
	"math/rand/v2"
)

// Errors of the package; every error it returns wraps one of them.
var (
	// ErrBoard reports a board the shield cannot cover: smaller than 4×4, both sides
	// odd, or too large.
	ErrBoard = errors.New("snake: bad board")
	// ErrConfig reports another bad setting (initial length, fps, steps).
	ErrConfig = errors.New("snake: bad setting")
	// ErrGameOver reports a step or tick asked of a finished game.
	ErrGameOver = errors.New("snake: the game is over")
	// ErrModel reports a decision maker that failed or answered nonsense.
	ErrModel = errors.New("snake: model failed")
	// ErrShield reports the impossible: a shielded game with no safe move. It would
	// mean the cycle invariant broke, so the loop stops rather than play on.
	ErrShield = errors.New("snake: shield invariant violated")
)

// Point is a board cell; X grows to the right, Y downwards, (0,0) is the top left.
type Point struct{ X, Y int }

// Direction is a move of the head. The order is upstream's DIRECTIONS, which is also
// the order of the move question's options and of every probability array here.
type Direction uint8

const (
	Up Direction = iota
	Down
	Left
	Right
	// NoDirection marks "no move" (a decision that never arrived).
	NoDirection Direction = 255
)

// Directions lists the four moves in option order.
var Directions = [4]Direction{Up, Down, Left, Right}

var directionNames = [4]string{"UP", "DOWN", "LEFT", "RIGHT"}

// String returns the option label: UP, DOWN, LEFT or RIGHT.
func (d Direction) String() string {
	if d < 4 {
		return directionNames[d]
	}
	return "NONE"
}

// parseDirection reads an option label.
func parseDirection(s string) (Direction, error) {
	for i, n := range directionNames {
		if n == s {
			return Direction(i), nil
		}
	}
	return NoDirection, fmt.Errorf("%w: unknown direction %q", ErrConfig, s)
}

var deltas = [4]Point{{0, -1}, {0, 1}, {-1, 0}, {1, 0}}

// Death says why a game ended.
type Death uint8

const (
	Alive Death = iota
	HitWall
	HitBody
	Reversed
)

func (d Death) String() string {
	return [...]string{"alive", "wall", "body", "reverse"}[d]
}

// GameConfig sets up a game.
type GameConfig struct {
	Width, Height int    // board size; ≥ 4×4, one side even
	Seed          uint64 // food placement
	InitialLength int    // ≥ 2 and smaller than the board; 0 means 6
}

// DefaultGame is upstream's default board: 24×16, seed 7, length 6.
var DefaultGame = GameConfig{Width: 24, Height: 16, Seed: 7, InitialLength: 6}

// Game is the board, the snake and the food. The rules are upstream's (laya-mlx
// laya_mlx/snake/game.py): moving into a wall, into the body, or back into the neck
// kills; the tail cell is free on a step that does not eat; eating grows the snake by
// one and spawns food on a uniformly chosen empty cell; filling the board wins.
//
// Every per-step structure is allocated once, so stepping and planning allocate
// nothing.
type Game struct {
	cfg    GameConfig
	w, h   int
	cycle  []int32 // cycle position → cell
	index  []int32 // cell → cycle position
	rng    *rand.Rand
	ring   []int32 // body cells; ring[head] is the head, the tail is length-1 back
	head   int
	length int
	occ    []bool // cell is part of the body
	food   int32  // −1 when the board is full

	score, ticks int
	death        Death
	won          bool

	// planner scratch
	queue []int32
	seen  []uint32
	stamp uint32
}

// NewGame starts a game: the snake lies along the cycle, backwards from the board's
// centre, so it starts in cycle order.
func NewGame(cfg GameConfig) (*Game, error) {
	if cfg.InitialLength == 0 {
		cfg.InitialLength = DefaultGame.InitialLength
	}
	tour, err := HamiltonianCycle(cfg.Width, cfg.Height)
	if err != nil {
		return nil, err
	}
	n := cfg.Width * cfg.Height
	if cfg.InitialLength < 2 || cfg.InitialLength >= n {
		return nil, fmt.Errorf("%w: initial length %d must be at least 2 and smaller than the %d cells of the board", ErrConfig, cfg.InitialLength, n)
	}
	g := &Game{
		cfg: cfg, w: cfg.Width, h: cfg.Height,
		cycle: make([]int32, n), index: make([]int32, n),
		ring: make([]int32, n), occ: make([]bool, n),
		queue: make([]int32, n), seen: make([]uint32, n),
	}
	for i, p := range tour {
		c := int32(p.Y*g.w + p.X)
		g.cycle[i] = c
		g.index[c] = int32(i)
	}
	g.Reset(cfg.Seed)
	return g, nil
}

// Reset starts the game over with another food seed.
func (g *Game) Reset(seed uint64) {
	g.cfg.Seed = seed
	// PCG seeded from the game seed: the same seed gives the same game.
	g.rng = rand.New(rand.NewPCG(seed, 0x5a4b45)) // "SKE"
	clear(g.occ)
	n := len(g.cycle)
	start := int(g.index[(g.h/2)*g.w+g.w/2])
	g.length = g.cfg.InitialLength
	g.head = g.length - 1
	for i := 0; i < g.length; i++ {
		c := g.cycle[((start-i)%n+n)%n]
		g.ring[g.head-i] = c
		g.occ[c] = true
	}
	g.score, g.ticks, g.death, g.won = 0, 0, Alive, false
	g.spawnFood()
}

// Config returns the game's settings (Seed is the current round's).
func (g *Game) Config() GameConfig { return g.cfg }

// Width and Height are the board size.
func (g *Game) Width() int  { return g.w }
func (g *Game) Height() int { return g.h }

// Capacity is the number of cells.
func (g *Game) Capacity() int { return len(g.cycle) }

// Score counts the food eaten; Ticks the steps taken; Len the snake's length.
func (g *Game) Score() int { return g.score }
func (g *Game) Ticks() int { return g.ticks }
func (g *Game) Len() int   { return g.length }

// Alive reports a snake still playing (a won game is not alive: it is over).
func (g *Game) Alive() bool { return g.death == Alive && !g.won }

// Won reports a board filled by the snake.
func (g *Game) Won() bool { return g.won }

// Death says why the snake died (Alive while it has not).
func (g *Game) Death() Death { return g.death }

func (g *Game) point(c int32) Point { return Point{int(c) % g.w, int(c) / g.w} }

// body returns the i-th body cell, 0 the head.
func (g *Game) body(i int) int32 {
	n := len(g.ring)
	return g.ring[((g.head-i)%n+n)%n]
}

// Head returns the head cell; Tail the last body cell.
func (g *Game) Head() Point { return g.point(g.body(0)) }
func (g *Game) Tail() Point { return g.point(g.body(g.length - 1)) }

// Body appends the body cells, head first, to dst.
func (g *Game) Body(dst []Point) []Point {
	for i := 0; i < g.length; i++ {
		dst = append(dst, g.point(g.body(i)))
	}
	return dst
}

// Occupied reports a body cell.
func (g *Game) Occupied(p Point) bool { return g.inside(p) && g.occ[p.Y*g.w+p.X] }

// Food returns the food cell; ok is false once the board is full.
func (g *Game) Food() (p Point, ok bool) {
	if g.food < 0 {
		return Point{}, false
	}
	return g.point(g.food), true
}

func (g *Game) inside(p Point) bool { return p.X >= 0 && p.X < g.w && p.Y >= 0 && p.Y < g.h }

// spawnFood puts the food on a uniformly chosen empty cell, scanning in cycle order
// as upstream does, or clears it when the board is full.
func (g *Game) spawnFood() {
	empty := len(g.cycle) - g.length
	if empty == 0 {
		g.food = -1
		return
	}
	k := g.rng.IntN(empty)
	for _, c := range g.cycle {
		if !g.occ[c] {
			if k == 0 {
				g.food = c
				return
			}
			k--
		}
	}
}

// target is the cell the head would enter; ok is false for a wall.
func (g *Game) target(d Direction) (int32, bool) {
	p := g.point(g.body(0))
	p.X += deltas[d].X
	p.Y += deltas[d].Y
	if !g.inside(p) {
		return -1, false
	}
	return int32(p.Y*g.w + p.X), true
}

// collision says what moving d would hit (Alive: nothing).
func (g *Game) collision(d Direction) Death {
	c, ok := g.target(d)
	switch {
	case !ok:
		return HitWall
	case c == g.body(1):
		return Reversed
	case g.occ[c] && !(c == g.body(g.length-1) && c != g.food):
		// The tail moves out of its cell on a step that does not eat.
		return HitBody
	}
	return Alive
}

// Step moves the head one cell in direction d. It reports whether the snake ate; a
// collision ends the game (Death says why).
func (g *Game) Step(d Direction) (ate bool, err error) {
	if !g.Alive() {
		return false, ErrGameOver
	}
	if d >= 4 {
		return false, fmt.Errorf("%w: unknown direction %d", ErrConfig, d)
	}
	g.ticks++
	if why := g.collision(d); why != Alive {
		g.death = why
		return false, nil
	}
	c, _ := g.target(d)
	n := len(g.ring)
	if c == g.food {
		g.head = (g.head + 1) % n
		g.ring[g.head] = c
		g.occ[c] = true
		g.length++
		g.score++
		if g.length == n {
			g.won, g.food = true, -1
		} else {
			g.spawnFood()
		}
		return true, nil
	}
	tail := g.body(g.length - 1)
	g.occ[tail] = false
	g.head = (g.head + 1) % n
	g.ring[g.head] = c
	g.occ[c] = true
	return false, nil
}

// cycleOrderValid reports the shield's invariant: walking the body from the tail to
// the head only ever moves forward along the cycle, less than one full lap in total
// (upstream cycle_order_valid).
func (g *Game) cycleOrderValid() bool {
	n := len(g.cycle)
	sum := 0
	for i := g.length - 1; i > 0; i-- {
		a, b := int(g.index[g.body(i)]), int(g.index[g.body(i-1)])
		d := ((b-a)%n + n) % n
		if d == 0 {
			return false
		}
		sum += d
	}
	return sum < n
}
