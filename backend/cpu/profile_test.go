package cpu

import (
	"strings"
	"testing"
	"time"

	"github.com/laya-metal/laya/backend"
)

var _ backend.Profiler = (*Backend)(nil)

// TestProfile: the backend's profiling turns the pool's join recording on
// and off, and OpTimes reports the recorded call sites with their chunks'
// time, as Joins does.
func TestProfile(t *testing.T) {
	be := New()
	be.workers = 2
	t.Cleanup(func() { be.SetProfile(Profile{}) })
	work := func() {
		be.parallelFor(2, 1, func(lo, hi int) { time.Sleep(time.Millisecond) })
	}
	be.SetProfile(Profile{Kernel: true})
	work()
	if js := be.Joins(); len(js) != 0 {
		t.Errorf("joins recorded with only Kernel on: %+v", js)
	}
	be.SetProfiling(true)
	for range 2 {
		work() // one call site: the line is part of it
	}
	be.SetProfiling(false)
	work()
	var site *backend.OpTime
	for _, op := range be.OpTimes() {
		if strings.Contains(op.Op, "TestProfile") {
			site = &op
		}
	}
	if site == nil {
		t.Fatalf("no op time for this test's call site in %+v", be.OpTimes())
	}
	if site.Count != 2 || site.Time < 2*time.Millisecond {
		t.Errorf("op time %+v, want 2 calls of at least 1 ms each", *site)
	}
	for _, j := range be.Joins() {
		if j.Site == site.Op && (j.Calls != site.Count || j.Busy != site.Time) {
			t.Errorf("Joins has %+v for the site OpTimes reports as %+v", j, *site)
		}
	}
}
