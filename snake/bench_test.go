package snake

import (
	"context"
	"testing"
)

// BenchmarkPlan is the planner alone: four moves with flood fills, food reachability.
func BenchmarkPlan(b *testing.B) {
	g, _ := NewGame(DefaultGame)
	var p Plan
	b.ReportAllocs()
	for b.Loop() {
		g.Plan(&p)
		if _, err := g.Step(p.Preferred); err != nil || !g.Alive() {
			g.Reset(7)
		}
	}
}

// BenchmarkTickOverhead is one loop tick with an instant model: the loop's own cost
// (plan, prompt lookup, worker hand-off, step), which bounds moves/s from above. The
// shielded snake fills the board within a few thousand ticks, so a finished game
// starts a new round (outside the timer): any b.N runs.
func BenchmarkTickOverhead(b *testing.B) {
	l, err := New(&fakeModel{favour: Right}, Config{GameConfig: DefaultGame})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	seed := DefaultGame.Seed
	b.ReportAllocs()
	for b.Loop() {
		if !l.Game().Alive() {
			b.StopTimer()
			seed++
			l.NewRound(seed)
			b.StartTimer()
		}
		if _, err := l.Tick(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
