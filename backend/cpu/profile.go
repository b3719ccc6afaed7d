package cpu

import (
	"cmp"
	"slices"

	"github.com/laya-metal/laya/backend"
)

// Profile selects what a cpu backend's profiling records (SetProfile).
// The worker pool and the GEMM kernels are the process's, shared by every
// cpu backend: what is recorded covers all of them, whichever backend
// turned it on.
type Profile struct {
	// Joins records the pool's parallel operations by call site (Joins,
	// OpTimes): how long they held their workers and how much of that the
	// chunks computed. Off, it costs one atomic load per operation; on, a
	// clock read per chunk and a stack walk per operation.
	Joins bool
	// Kernel times the outer-product GEMM kernel's calls (KernelTime).
	// Off, it costs an atomic load per work unit; on, two clock reads per
	// kernel call (each call is 8 × 48 × k multiply-adds, microseconds at
	// the encoders' k: about 1 % more).
	Kernel bool
}

// SetProfile turns on what p names and off the rest; what it turns on
// starts from nothing.
func (b *Backend) SetProfile(p Profile) {
	recordJoins(p.Joins)
	recordKernelTime(p.Kernel)
}

// SetProfiling implements backend.Profiler: SetProfile with everything on,
// or off.
func (b *Backend) SetProfiling(on bool) { b.SetProfile(Profile{Joins: on, Kernel: on}) }

// OpTimes implements backend.Profiler: the parallel operations recorded
// since profiling was turned on, by call site (Join.Site), with the time
// their chunks computed, summed over the workers (a CPU has no device
// clock: see Joins for the time the workers were held). Longest first.
func (b *Backend) OpTimes() []backend.OpTime {
	js := joinsRecorded()
	out := make([]backend.OpTime, len(js))
	for i, j := range js {
		out[i] = backend.OpTime{Op: j.Site, Count: j.Calls, Time: j.Busy}
	}
	sortOpTimes(out)
	return out
}

// Joins returns the parallel operations recorded since Profile.Joins was
// turned on, most idle time first.
func (b *Backend) Joins() []Join { return joinsRecorded() }

// KernelTime returns what the outer-product kernel did since Profile.Kernel
// was turned on.
func (b *Backend) KernelTime() KernelTime { return kernelTimes() }

// sortOpTimes orders op times longest first, then by name.
func sortOpTimes(ts []backend.OpTime) {
	slices.SortFunc(ts, func(a, b backend.OpTime) int {
		return cmp.Or(cmp.Compare(b.Time, a.Time), cmp.Compare(a.Op, b.Op))
	})
}
