package cpu

import (
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Join is what the worker pool's parallel operations of one call site cost
// while Profile.Joins was on: how long they held their workers (each
// operation's wall time × its workers, summed) and how much of that the
// chunks computed (their own times, summed). The difference is the
// workers' idle time at the hand-offs and the joins: waiting for a chunk
// to be picked up, for the slowest chunk, for the last GEMM unit.
type Join struct {
	Site  string        // the function that split the work, and its caller
	Calls int           // operations
	Held  time.Duration // wall time × workers
	Busy  time.Duration // the chunks' own time
	// Late is the part of the idle time before the chunks started (from
	// the operation's start to each chunk's, summed: the hand-off to the
	// workers, and chunks that no idle worker took, which the caller ran
	// after its own); the rest of it (Held − Busy − Late) came after
	// them: waiting for the slowest chunk.
	Late time.Duration
}

// Idle is the fraction of Held the workers did not compute.
func (j Join) Idle() float64 {
	if j.Held <= 0 {
		return 0
	}
	return 1 - float64(j.Busy)/float64(j.Held)
}

var joins struct {
	on    atomic.Bool
	mu    sync.Mutex
	sites map[[2]uintptr]*Join
}

// recordJoins turns the recording of parallel operations' costs on
// (clearing what was recorded) or off (Backend.SetProfile). It covers
// every operation of the process's pool, whichever backend or stream ran
// it.
func recordJoins(on bool) {
	joins.mu.Lock()
	defer joins.mu.Unlock()
	if on {
		joins.sites = map[[2]uintptr]*Join{}
	}
	joins.on.Store(on)
}

// joinsRecorded returns what was recorded, most idle time first.
func joinsRecorded() []Join {
	joins.mu.Lock()
	defer joins.mu.Unlock()
	out := make([]Join, 0, len(joins.sites))
	for _, j := range joins.sites {
		out = append(out, *j)
	}
	slices.SortFunc(out, func(a, b Join) int {
		ia, ib := a.Held-a.Busy, b.Held-b.Busy
		switch {
		case ia > ib:
			return -1
		case ia < ib:
			return 1
		}
		return strings.Compare(a.Site, b.Site)
	})
	return out
}

// joinRecorder times one parallel operation for recordJoins.
type joinRecorder struct {
	start      time.Time
	workers    int
	busy, late atomic.Int64
	site       [2]uintptr
}

// startJoin begins timing an operation of workers chunks called from
// parallelFor's caller (skip frames up).
func startJoin(workers int) *joinRecorder {
	j := &joinRecorder{start: time.Now(), workers: workers}
	var pcs [2]uintptr
	runtime.Callers(3, pcs[:]) // startJoin, parallelFor: then the split and its caller
	j.site = pcs
	return j
}

// chunk wraps fn to add its time to the operation's busy time.
func (j *joinRecorder) chunk(fn func(lo, hi int)) func(lo, hi int) {
	return func(lo, hi int) {
		t := time.Now()
		j.late.Add(int64(t.Sub(j.start)))
		fn(lo, hi)
		j.busy.Add(int64(time.Since(t)))
	}
}

// end records the operation.
func (j *joinRecorder) end() {
	held := time.Since(j.start) * time.Duration(j.workers)
	joins.mu.Lock()
	defer joins.mu.Unlock()
	if joins.sites == nil {
		return
	}
	s := joins.sites[j.site]
	if s == nil {
		s = &Join{Site: siteName(j.site)}
		joins.sites[j.site] = s
	}
	s.Calls++
	s.Held += held
	s.Busy += time.Duration(j.busy.Load())
	s.Late += time.Duration(j.late.Load())
}

// siteName names a call site by its two innermost functions, the package
// path trimmed, and the outer one's file line (one function may split work
// at several lines): "(*Stream).LayerNorm < encoder.(*ModernBERT).Forward:140".
func siteName(pcs [2]uintptr) string {
	frames := runtime.CallersFrames(pcs[:])
	var names []string
	for {
		f, more := frames.Next()
		if f.Function != "" {
			name := f.Function
			if i := strings.LastIndex(name, "/"); i >= 0 {
				name = name[i+1:]
			}
			name = strings.TrimPrefix(name, "cpu.")
			if len(names) == 1 {
				name += ":" + strconv.Itoa(f.Line)
			}
			names = append(names, name)
		}
		if !more || len(names) == 2 {
			break
		}
	}
	return strings.Join(names, " < ")
}
