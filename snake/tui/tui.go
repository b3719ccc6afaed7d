// Package tui is the terminal UI of laya snake: the board, the model's move
// probabilities, P(safe route), P(food), a latency sparkline and moves/s, drawn with
// tcell while the decision loop runs on its own goroutine.
//
// Keys: space pauses; ↑/↓ or +/− change the tick rate by 2 fps (1–240); r resets to a
// new game; q, Esc or Ctrl-C quit.
package tui

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/laya-metal/laya/snake"
)

// Options set up Run.
type Options struct {
	Title string // shown in the header, e.g. "real-en · cpu"
	Steps int    // stop after this many ticks (0: run until quit)
	// RoundPause is how long a finished game stays on screen before the next round
	// starts (default 1 s).
	RoundPause time.Duration
}

// fps keys move the rate in steps of 2 within [1, 240], as upstream's demo does.
const (
	fpsStep = 2
	fpsMin  = 1
	fpsMax  = 240
)

// MinSize returns the terminal size a board needs.
func MinSize(width, height int) (cols, rows int) {
	return 2*width + 2 + 2 + panelWidth, max(height+2, panelRows) + 1
}

const (
	panelWidth = 56
	panelRows  = 20
	sparkLen   = 40
)

type control int

const (
	ctlPause control = iota
	ctlFaster
	ctlSlower
	ctlReset
)

// frame is what the UI draws: a copy of the loop's state after a tick.
type frame struct {
	w, h       int
	cells      []byte // 0 empty, 1 body, 2 head, 3 food
	tick       snake.Tick
	hasTick    bool
	counters   snake.Counters
	score, len int
	alive, won bool
	death      string
	fps        float64
	paused     bool
	unassisted bool
	spark      []float64
	movesPerS  float64
	budgetMS   float64
	err        error
}

type ui struct {
	screen tcell.Screen
	loop   *snake.Loop
	opts   Options

	mu     sync.Mutex
	cur    frame
	notify chan struct{}
	ctl    chan control

	ends    [61]time.Time // ring of recent tick end times, for moves/s
	endsN   int
	sparkBf [sparkLen]float64
}

// Run plays the loop on screen (already initialised; the caller Fini's it) until q,
// ctx, or opts.Steps. It returns the loop's summary.
func Run(ctx context.Context, screen tcell.Screen, loop *snake.Loop, opts Options) (snake.Summary, error) {
	if opts.RoundPause == 0 {
		opts.RoundPause = time.Second
	}
	u := &ui{screen: screen, loop: loop, opts: opts, notify: make(chan struct{}, 1), ctl: make(chan control, 16)}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	u.publish(nil, false, nil)

	keys := make(chan *tcell.EventKey, 16)
	resize := make(chan struct{}, 1)
	go func() {
		for {
			ev := screen.PollEvent()
			switch ev := ev.(type) {
			case nil:
				return
			case *tcell.EventKey:
				select {
				case keys <- ev:
				case <-ctx.Done():
					return
				}
			case *tcell.EventResize:
				select {
				case resize <- struct{}{}:
				default:
				}
			}
		}
	}()
	gameDone := make(chan error, 1)
	go func() { gameDone <- u.play(ctx) }()

	u.draw()
	for {
		select {
		case <-ctx.Done():
			<-gameDone
			return loop.Summary(), nil
		case err := <-gameDone:
			u.draw()
			return loop.Summary(), err
		case <-u.notify:
			u.draw()
		case <-resize:
			screen.Sync()
			u.draw()
		case ev := <-keys:
			if quit := u.key(ev); quit {
				cancel()
				<-gameDone
				return loop.Summary(), nil
			}
		}
	}
}

// key turns a key press into a control; true means quit.
func (u *ui) key(ev *tcell.EventKey) bool {
	send := func(c control) {
		select {
		case u.ctl <- c:
		default: // a flood of keys: drop the extra ones
		}
	}
	switch ev.Key() {
	case tcell.KeyCtrlC, tcell.KeyEscape:
		return true
	case tcell.KeyUp:
		send(ctlFaster)
	case tcell.KeyDown:
		send(ctlSlower)
	case tcell.KeyRune:
		switch ev.Rune() {
		case 'q', 'Q':
			return true
		case ' ':
			send(ctlPause)
		case '+', '=':
			send(ctlFaster)
		case '-', '_':
			send(ctlSlower)
		case 'r', 'R':
			send(ctlReset)
		}
	}
	return false
}

// play runs the game: ticks paced to the loop's rate, controls between ticks.
func (u *ui) play(ctx context.Context) error {
	paused := false
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	apply := func(c control) {
		cfg := u.loop.Config()
		switch c {
		case ctlPause:
			paused = !paused
		case ctlFaster:
			u.loop.SetFPS(min(fpsMax, max(fpsMin, cfg.FPS+fpsStep)))
		case ctlSlower:
			u.loop.SetFPS(max(fpsMin, min(fpsMax, cfg.FPS-fpsStep)))
		case ctlReset:
			u.loop.NewRound(cfg.Seed + uint64(u.loop.Round()))
			u.endsN = 0
		}
		u.publish(nil, paused, nil)
	}
	// wait sleeps d (forever when d < 0), handling controls; false when ctx ended.
	wait := func(d time.Duration) bool {
		var tc <-chan time.Time
		if d >= 0 {
			timer.Reset(d)
			tc = timer.C
		}
		defer timer.Stop()
		for {
			select {
			case <-ctx.Done():
				return false
			case c := <-u.ctl:
				apply(c)
				if d < 0 && !paused {
					return true
				}
			case <-tc:
				return true
			}
		}
	}
	for {
		for drained := false; !drained; {
			select {
			case c := <-u.ctl:
				apply(c)
			default:
				drained = true
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		if paused {
			if !wait(-1) {
				return nil
			}
			continue
		}
		if u.opts.Steps > 0 && u.loop.Counters().Steps >= u.opts.Steps {
			<-ctx.Done() // keep the last frame up until q
			return nil
		}
		g := u.loop.Game()
		if !g.Alive() {
			if !wait(u.opts.RoundPause) {
				return nil
			}
			if !g.Alive() { // r may already have started a new round
				u.loop.NewRound(u.loop.Config().Seed + uint64(u.loop.Round()))
				u.endsN = 0
			}
			continue
		}
		start := time.Now()
		t, err := u.loop.Tick(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			u.publish(nil, paused, err)
			return err
		}
		u.ends[u.endsN%len(u.ends)] = time.Now()
		u.endsN++
		u.publish(t, paused, nil)
		if b := u.loop.Budget(); b > 0 {
			if !wait(time.Until(start.Add(b))) {
				return nil
			}
		}
	}
}

// publish copies the loop's state into the shared frame and wakes the drawer.
func (u *ui) publish(t *snake.Tick, paused bool, err error) {
	g := u.loop.Game()
	cfg := u.loop.Config()
	u.mu.Lock()
	f := &u.cur
	f.w, f.h = g.Width(), g.Height()
	if len(f.cells) != f.w*f.h {
		f.cells = make([]byte, f.w*f.h)
	}
	clear(f.cells)
	for y := range f.h {
		for x := range f.w {
			if g.Occupied(snake.Point{X: x, Y: y}) {
				f.cells[y*f.w+x] = 1
			}
		}
	}
	h := g.Head()
	f.cells[h.Y*f.w+h.X] = 2
	if p, ok := g.Food(); ok {
		f.cells[p.Y*f.w+p.X] = 3
	}
	if t != nil {
		f.tick, f.hasTick = *t, true
	} else if g.Ticks() == 0 {
		f.hasTick = false
	}
	f.counters = u.loop.Counters()
	f.score, f.len, f.alive, f.won, f.death = g.Score(), g.Len(), g.Alive(), g.Won(), g.Death().String()
	f.fps, f.paused, f.unassisted, f.err = cfg.FPS, paused, cfg.Unassisted, err
	f.spark = append(f.spark[:0], u.loop.Recent(u.sparkBf[:])...)
	f.budgetMS = float64(u.loop.Budget()) / float64(time.Millisecond)
	f.movesPerS = 0
	if n := min(u.endsN, len(u.ends)); n > 1 {
		newest := u.ends[(u.endsN-1)%len(u.ends)]
		oldest := u.ends[(u.endsN-n)%len(u.ends)]
		if d := newest.Sub(oldest).Seconds(); d > 0 {
			f.movesPerS = float64(n-1) / d
		}
	}
	u.mu.Unlock()
	select {
	case u.notify <- struct{}{}:
	default:
	}
}

var (
	stBase   = tcell.StyleDefault
	stDim    = stBase.Foreground(tcell.ColorGray)
	stBold   = stBase.Bold(true)
	stBody   = stBase.Foreground(tcell.ColorGreen)
	stHead   = stBase.Foreground(tcell.ColorLime).Bold(true)
	stFood   = stBase.Foreground(tcell.ColorRed).Bold(true)
	stWall   = stBase.Foreground(tcell.ColorSilver)
	stWarn   = stBase.Foreground(tcell.ColorYellow).Bold(true)
	stBad    = stBase.Foreground(tcell.ColorRed)
	stGood   = stBase.Foreground(tcell.ColorGreen)
	stBar    = stBase.Foreground(tcell.ColorAqua)
	stChosen = stBase.Foreground(tcell.ColorAqua).Bold(true)
)

// draw renders the current frame.
func (u *ui) draw() {
	u.mu.Lock()
	f := u.cur
	f.spark = append([]float64(nil), u.cur.spark...)
	f.cells = append([]byte(nil), u.cur.cells...)
	u.mu.Unlock()
	s := u.screen
	s.Clear()
	cols, rows := s.Size()
	needC, needR := MinSize(f.w, f.h)
	if cols < needC || rows < needR {
		put(s, 0, 0, fmt.Sprintf("Resize the terminal to at least %d×%d (now %d×%d).", needC, needR, cols, rows), stWarn)
		put(s, 0, 1, "The game keeps running. q quits.", stDim)
		s.Show()
		return
	}
	title := "laya snake"
	if u.opts.Title != "" {
		title += " · " + u.opts.Title
	}
	put(s, 0, 0, title, stBold)
	shield := "shield on"
	if f.unassisted {
		shield = "UNASSISTED (no shield)"
	}
	put(s, len([]rune(title))+2, 0, shield, stDim)

	// Board, two columns per cell.
	bx, by := 0, 1
	bw := 2*f.w + 2
	put(s, bx, by, "┌"+strings.Repeat("─", bw-2)+"┐", stWall)
	for y := range f.h {
		put(s, bx, by+1+y, "│", stWall)
		for x := range f.w {
			var r string
			var st tcell.Style
			switch f.cells[y*f.w+x] {
			case 1:
				r, st = "██", stBody
			case 2:
				r, st = "▓▓", stHead
			case 3:
				r, st = "()", stFood
			default:
				r, st = " ·", stDim
			}
			put(s, bx+1+2*x, by+1+y, r, st)
		}
		put(s, bx+bw-1, by+1+y, "│", stWall)
	}
	put(s, bx, by+f.h+1, "└"+strings.Repeat("─", bw-2)+"┘", stWall)

	// Panel.
	px, py := bw+2, 1
	line := func(text string, st tcell.Style) {
		put(s, px, py, text, st)
		py++
	}
	c := f.counters
	status := fmt.Sprintf("round %d  score %d  best %d  length %d", c.Round, f.score, c.BestScore, f.len)
	line(status, stBold)
	rate := fmt.Sprintf("%.0f fps target, %.0f ms a tick", f.fps, f.budgetMS)
	if f.fps == 0 {
		rate = "as fast as possible"
	}
	line(fmt.Sprintf("tick %d  %.1f moves/s  (%s)", c.Steps, f.movesPerS, rate), stBase)
	switch {
	case f.err != nil:
		line("error: "+f.err.Error(), stBad)
	case f.paused:
		line("PAUSED (space resumes)", stWarn)
	case f.won:
		line("BOARD FILLED: the snake won", stGood)
	case !f.alive:
		line("DEAD ("+f.death+"): next round starts", stBad)
	default:
		line("", stBase)
	}
	py++
	line("move        P(move)            planner says", stDim)
	t := f.tick
	for _, d := range snake.Directions {
		p := t.Answers.Move[d]
		bar := strings.Repeat("█", int(p*12+0.5)) + strings.Repeat("░", 12-int(p*12+0.5))
		prob := fmt.Sprintf("%.4f", p)
		if !f.hasTick || !t.Answered {
			bar, prob = strings.Repeat("░", 12), "  -   "
		}
		mark, st := "  ", stBase
		if f.hasTick && d == t.Executed {
			mark, st = "▶ ", stChosen
		}
		crit := ""
		if f.hasTick {
			crit = t.Plan.Criteria[d].String()
		}
		put(s, px, py, fmt.Sprintf("%s%-6s", mark, d), st)
		put(s, px+8, py, bar, stBar)
		put(s, px+21, py, prob, st)
		put(s, px+28, py, crit, stDim)
		py++
	}
	verdict := ""
	switch {
	case !f.hasTick:
	case t.DeadlineMiss:
		verdict = fmt.Sprintf("deadline missed: shield played %v", t.Executed)
	case t.Intervened:
		verdict = fmt.Sprintf("shield: %v unsafe, played %v", t.Proposed, t.Executed)
	default:
		verdict = fmt.Sprintf("model's %v played", t.Executed)
	}
	line(verdict, stWarn)
	py++
	if f.hasTick && t.Answered {
		line(fmt.Sprintf("P(safe route) %.4f   dead-end risk %.4f", t.Answers.SafeRoute, 1-t.Answers.SafeRoute), stBase)
		line(fmt.Sprintf("P(food)       %.4f   planner: %s", t.Answers.FoodReachable, yesNo(t.Plan.FoodReachable)), stBase)
	} else {
		line("P(safe route)   -", stBase)
		line("P(food)         -", stBase)
	}
	py++
	latest := 0.0
	if len(f.spark) > 0 {
		latest = f.spark[len(f.spark)-1]
	}
	line(fmt.Sprintf("tick latency %.2f ms", latest), stBase)
	line(sparkline(f.spark, f.budgetMS), stBar)
	line(fmt.Sprintf("interventions %d  deadline misses %d  model calls %d", c.Interventions, c.DeadlineMisses, c.ModelCalls), stBase)
	py++
	line("space pause · ↑/↓ +/- fps · r reset · q quit", stDim)
	s.Show()
}

// sparkline scales the latencies to eight levels; a tick over the budget is full.
func sparkline(ms []float64, budget float64) string {
	const levels = "▁▂▃▄▅▆▇█"
	top := budget
	for _, v := range ms {
		if budget == 0 && v > top {
			top = v
		}
	}
	var b strings.Builder
	for _, v := range ms {
		i := 0
		if top > 0 {
			i = int(v / top * 7)
		}
		i = max(0, min(i, 7))
		b.WriteRune([]rune(levels)[i])
	}
	return b.String()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func put(s tcell.Screen, x, y int, text string, st tcell.Style) {
	s.PutStrStyled(x, y, text, st)
}
