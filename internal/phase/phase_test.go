package phase_test

import (
	"context"
	"testing"
	"time"

	"github.com/laya-metal/laya/internal/phase"
)

// A context carries its Times; Add adds the time since a start to the field
// it is given and returns the next start; without Times, Start is zero.
func TestTimes(t *testing.T) {
	if phase.From(context.Background()) != nil {
		t.Fatal("a bare context has Times")
	}
	var nilTimes *phase.Times
	if !nilTimes.Start().IsZero() {
		t.Error("Start of no Times is not zero")
	}
	var pt phase.Times
	ctx := phase.With(context.Background(), &pt)
	got := phase.From(ctx)
	if got != &pt {
		t.Fatal("From does not return the Times With put in")
	}
	start := got.Start()
	time.Sleep(2 * time.Millisecond)
	next := got.Add(&got.Prepare, start)
	if pt.Prepare < 2*time.Millisecond || pt.Parse != 0 || pt.Forward != 0 || pt.Assemble != 0 {
		t.Errorf("after one Add: %+v", pt)
	}
	if next.Sub(start) != pt.Prepare {
		t.Errorf("next start %v after the first, Prepare %v", next.Sub(start), pt.Prepare)
	}
	got.Add(&got.Prepare, next)
	if pt.Prepare < next.Sub(start) {
		t.Errorf("a second Add did not add: %v", pt.Prepare)
	}
}
