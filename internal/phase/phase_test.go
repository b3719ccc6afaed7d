package phase_test

import (
	"context"
	"testing"
	"time"

	"github.com/laya-metal/laya/internal/phase"
)

// A context carries its Times; Add adds the time since a start to the phase
// it is given and returns the next start; without Times nothing is added.
func TestTimes(t *testing.T) {
	if phase.From(context.Background()) != nil {
		t.Fatal("a bare context has Times")
	}
	var none *phase.Times
	if !none.Start().IsZero() || !none.Add(phase.Parse, time.Time{}).IsZero() {
		t.Error("no Times started or added something")
	}
	var pt phase.Times
	ctx := phase.With(context.Background(), &pt)
	got := phase.From(ctx)
	if got != &pt {
		t.Fatal("From does not return the Times With put in")
	}
	start := got.Start()
	time.Sleep(2 * time.Millisecond)
	next := got.Add(phase.Prepare, start)
	if pt[phase.Prepare] < 2*time.Millisecond || pt[phase.Parse] != 0 || pt[phase.Forward] != 0 || pt[phase.Assemble] != 0 {
		t.Errorf("after one Add: %v", pt)
	}
	if next.Sub(start) != pt[phase.Prepare] {
		t.Errorf("next start %v after the first, Prepare %v", next.Sub(start), pt[phase.Prepare])
	}
	got.Add(phase.Prepare, next)
	if pt[phase.Prepare] < next.Sub(start) {
		t.Errorf("a second Add did not add: %v", pt[phase.Prepare])
	}
}
