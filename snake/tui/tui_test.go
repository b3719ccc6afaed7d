package tui

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/snake"
)

func fastModel(context.Context, laya.State, laya.Questions) (snake.Answers, error) {
	return snake.Answers{Move: [4]float64{0.4, 0.3, 0.2, 0.1}, SafeRoute: 0.75, FoodReachable: 0.625}, nil
}

func screenText(s tcell.SimulationScreen) string {
	cells, w, h := s.GetContents()
	// GetContents hands out the live cells; read them under the screen's own lock, as
	// Show writes them from Run's goroutine.
	if l, ok := s.(sync.Locker); ok {
		l.Lock()
		defer l.Unlock()
	}
	var b strings.Builder
	for y := range h {
		for x := range w {
			c := cells[y*w+x]
			if len(c.Bytes) == 0 {
				b.WriteByte(' ')
			} else {
				b.Write(c.Bytes)
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// waitFor polls the screen until it shows want.
func waitFor(t *testing.T, s tcell.SimulationScreen, want string) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		text := screenText(s)
		if strings.Contains(text, want) {
			return text
		}
		if time.Now().After(deadline) {
			t.Fatalf("screen never showed %q:\n%s", want, text)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestTUIDrawsAndObeysKeys(t *testing.T) {
	s := tcell.NewSimulationScreen("UTF-8")
	if err := s.Init(); err != nil {
		t.Fatal(err)
	}
	defer s.Fini()
	cols, rows := MinSize(24, 16)
	s.SetSize(cols, rows)
	loop, err := snake.New(snake.ModelFunc(fastModel), snake.Config{GameConfig: snake.DefaultGame, FPS: 50})
	if err != nil {
		t.Fatal(err)
	}
	defer loop.Close()
	done := make(chan snake.Summary, 1)
	go func() {
		sum, err := Run(context.Background(), s, loop, Options{Title: "fake · test"})
		if err != nil {
			t.Error(err)
		}
		done <- sum
	}()
	text := waitFor(t, s, "P(safe route) 0.7500")
	for _, want := range []string{"laya snake · fake · test", "shield on", "P(food)       0.6250", "0.4000", "UP", "RIGHT",
		"space pause", "interventions", "50 fps target", "()", "██", "▓▓"} {
		if !strings.Contains(text, want) {
			t.Errorf("screen lacks %q:\n%s", want, text)
		}
	}
	s.InjectKey(tcell.KeyRune, ' ', tcell.ModNone)
	waitFor(t, s, "PAUSED")
	steps := loop.Counters().Steps // read while paused: no tick runs
	time.Sleep(100 * time.Millisecond)
	if got := loop.Counters().Steps; got != steps {
		t.Errorf("paused, yet %d ticks ran", got-steps)
	}
	s.InjectKey(tcell.KeyUp, 0, tcell.ModNone)
	waitFor(t, s, "52 fps target, 19 ms a tick")
	s.InjectKey(tcell.KeyRune, '-', tcell.ModNone)
	s.InjectKey(tcell.KeyRune, '-', tcell.ModNone)
	waitFor(t, s, "48 fps target")
	s.InjectKey(tcell.KeyRune, 'r', tcell.ModNone)
	waitFor(t, s, "round 2")
	s.InjectKey(tcell.KeyRune, ' ', tcell.ModNone)
	time.Sleep(100 * time.Millisecond)
	s.InjectKey(tcell.KeyRune, 'q', tcell.ModNone)
	select {
	case sum := <-done:
		if sum.Steps <= steps || !sum.Alive || sum.Rounds != 2 {
			t.Errorf("summary after resume and quit: %+v", sum)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("q did not quit")
	}
}

func TestTUIAsksForASmallTerminalToGrow(t *testing.T) {
	s := tcell.NewSimulationScreen("UTF-8")
	if err := s.Init(); err != nil {
		t.Fatal(err)
	}
	defer s.Fini()
	s.SetSize(40, 10)
	loop, err := snake.New(snake.ModelFunc(fastModel), snake.Config{GameConfig: snake.DefaultGame})
	if err != nil {
		t.Fatal(err)
	}
	defer loop.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { Run(ctx, s, loop, Options{Steps: 5}); close(done) }()
	waitFor(t, s, "Resize the terminal to at least")
	cancel()
	<-done
}

func TestSparkline(t *testing.T) {
	if got := sparkline([]float64{0, 5, 10, 20}, 10); got != "▁▄██" {
		t.Errorf("budget 10: %q", got)
	}
	if got := sparkline([]float64{1, 2, 4}, 0); got != "▂▄█" {
		t.Errorf("no budget: %q", got)
	}
}

func TestTUIStartsANewRoundAfterADeath(t *testing.T) {
	s := tcell.NewSimulationScreen("UTF-8")
	if err := s.Init(); err != nil {
		t.Fatal(err)
	}
	defer s.Fini()
	s.SetSize(MinSize(24, 16))
	// Unassisted, a model that always says UP hits the top wall within 8 ticks.
	loop, err := snake.New(snake.ModelFunc(fastModel), snake.Config{GameConfig: snake.DefaultGame, FPS: 200, Unassisted: true})
	if err != nil {
		t.Fatal(err)
	}
	defer loop.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		if _, err := Run(ctx, s, loop, Options{RoundPause: 300 * time.Millisecond}); err != nil {
			t.Error(err)
		}
		close(done)
	}()
	waitFor(t, s, "UNASSISTED")
	waitFor(t, s, "DEAD (wall)")
	waitFor(t, s, "round 2")
	cancel()
	<-done
	if c := loop.Counters(); c.Deaths < 1 || c.Round < 2 {
		t.Errorf("%+v", c)
	}
}
