package cpu

import (
	"strings"
	"testing"
	"time"
)

// TestJoins: with recording on, an operation whose one chunk of four works
// 3 ms while the others return at once is recorded under its call site
// with about four times its wall time held and a quarter of it busy; with
// recording off nothing more is added.
func TestJoins(t *testing.T) {
	be := New()
	be.workers = 4
	uneven := func() {
		be.parallelFor(4, 1, func(lo, hi int) {
			if lo == 0 {
				time.Sleep(3 * time.Millisecond)
			}
		})
	}
	recordJoins(true)
	for range 3 {
		uneven()
	}
	recordJoins(false)
	uneven()
	var got *Join
	for _, j := range joinsRecorded() {
		if strings.Contains(j.Site, "TestJoins") {
			got = &j
		}
	}
	if got == nil {
		t.Fatalf("no join recorded for this test's call site in %+v", joinsRecorded())
	}
	if got.Calls != 3 {
		t.Errorf("%d calls recorded, want 3 (recording was off for the fourth)", got.Calls)
	}
	if got.Busy < 9*time.Millisecond || got.Held < 4*got.Busy {
		t.Errorf("held %v, busy %v: want busy ≥ 9 ms and held ≥ 4 × busy", got.Held, got.Busy)
	}
	if idle := got.Idle(); idle < 0.7 || idle > 0.95 {
		t.Errorf("idle %.2f, want about 0.75 (more with slow hand-offs)", idle)
	}
	if idle := got.Held - got.Busy; got.Late < 0 || got.Late > idle/2 {
		// The slow chunk is the caller's own, the others start at once
		// and end at once: the idle time is waiting for it, after them.
		t.Errorf("late %v of %v idle: want most of it after the chunks", got.Late, idle)
	}
	t.Logf("site %q: %d calls, held %v, busy %v, idle %.2f, late %v", got.Site, got.Calls, got.Held, got.Busy, got.Idle(), got.Late)
	recordJoins(true)
	if len(joinsRecorded()) != 0 {
		t.Errorf("recordJoins(true) kept %d sites", len(joinsRecorded()))
	}
	recordJoins(false)
}

// TestJoinLate: a chunk that starts 2 ms after its operation adds those
// 2 ms to the operation's late time, and its own time to busy.
func TestJoinLate(t *testing.T) {
	j := startJoin(2)
	fn := j.chunk(func(lo, hi int) { time.Sleep(time.Millisecond) })
	time.Sleep(2 * time.Millisecond)
	fn(0, 1)
	late, busy := time.Duration(j.late.Load()), time.Duration(j.busy.Load())
	if late < 2*time.Millisecond {
		t.Errorf("late %v: want ≥ 2 ms", late)
	}
	if busy < time.Millisecond {
		t.Errorf("busy %v: want the chunk's own time, ≥ 1 ms", busy)
	}
}
