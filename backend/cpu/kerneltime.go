package cpu

import (
	"sync/atomic"
	"time"
	"unsafe"
)

// KernelTime is what the outer-product micro-kernel did while
// Profile.Kernel was on: the FLOPs of the blocks it computed (8 × 48 ×
// k multiply-adds a call, ragged blocks included) and its own time, summed
// over the workers. Their ratio is the kernel's speed inside the forward,
// which HotKernelGFLOPs, measured on the same core seconds apart, puts in
// proportion: the rest of a request's time is everything around the
// kernel (packing, epilogues, attention, joins), and the gap between the
// two is what memory and the other worker cost the kernel itself.
type KernelTime struct {
	FLOPs float64
	Busy  time.Duration
	Calls int64
}

// GFLOPs is the kernel's speed per worker-second.
func (k KernelTime) GFLOPs() float64 {
	if k.Busy <= 0 {
		return 0
	}
	return k.FLOPs / k.Busy.Seconds() / 1e9
}

var kernelTime struct {
	on                  atomic.Bool
	flops, nanos, calls atomic.Int64
}

// recordKernelTime turns the timing of the outer-product kernel's calls
// on (clearing what was recorded) or off (Backend.SetProfile).
func recordKernelTime(on bool) {
	if on {
		kernelTime.flops.Store(0)
		kernelTime.nanos.Store(0)
		kernelTime.calls.Store(0)
	}
	kernelTime.on.Store(on)
}

// kernelTimes returns what was recorded since recordKernelTime(true).
func kernelTimes() KernelTime {
	return KernelTime{FLOPs: float64(kernelTime.flops.Load()), Busy: time.Duration(kernelTime.nanos.Load()),
		Calls: kernelTime.calls.Load()}
}

// kernelTally sums one outerFill's timed kernel calls, added to the
// totals once at its end.
type kernelTally struct {
	flops, nanos, calls int64
}

// add counts one kernel call of depth k that took d.
func (t *kernelTally) add(k int, d time.Duration) {
	t.flops += 2 * outerMR * outerNR * int64(k)
	t.nanos += int64(d)
	t.calls++
}

func (t *kernelTally) flush() {
	if t.calls > 0 {
		kernelTime.flops.Add(t.flops)
		kernelTime.nanos.Add(t.nanos)
		kernelTime.calls.Add(t.calls)
	}
}

// HotKernelGFLOPs runs the outer-product kernel on hot operands for about
// d on the calling goroutine, as BenchmarkOuterSweep's loop does (a 128-row
// panel of k = 768 against two 48-token tiles, stored transposed into a
// staging block), and returns its GFLOP/s: what the kernel does on this
// core now with nothing in its way. ok is false where this build or CPU
// has no such kernel.
func HotKernelGFLOPs(d time.Duration) (gflops float64, ok bool) {
	kern := simdGemmOuter()
	if kern == nil {
		return 0, false
	}
	const nrows, k, tiles = 128, 768, 2
	sweep := outerSweep(kern, nrows, k, tiles)
	sweep() // operands into cache
	start := time.Now()
	sweeps := 0
	for time.Since(start) < d || sweeps == 0 {
		sweep()
		sweeps++
	}
	return 2 * float64(nrows*tiles*outerNR*k) * float64(sweeps) / time.Since(start).Seconds() / 1e9, true
}

// outerSweep returns one sweep of the kernel as outerFill drives it on one
// group, on operands of its own: every 8-row block of an nrows-row F32
// panel (k deep) against each of tiles Xᵀ tiles, stored transposed into a
// staging block (HotKernelGFLOPs, BenchmarkOuterSweep).
func outerSweep(kern outerKernelFunc, nrows, k, tiles int) func() {
	a := make([]float32, nrows*k)
	for i := range a {
		a[i] = float32(i%7) - 3
	}
	bt := make([]float32, tiles*k*outerNR)
	for i := range bt {
		bt[i] = float32(i%5) - 2
	}
	ldS := outerStageStride(nrows)
	stage := make([]float32, tiles*outerNR*ldS)
	var off [outerNR]int32
	for j := range off {
		off[j] = int32(j * ldS)
	}
	// The kernel's prefetches go to its own B, as outerFill's last group
	// does.
	pf := (*byte)(unsafe.Pointer(&bt[0]))
	var ap [outerMR]*float32
	return func() {
		for i0 := 0; i0 < nrows; i0 += outerMR {
			for r := range ap {
				ap[r] = &a[(i0+r)*k]
			}
			for t := range tiles {
				kern(&ap, &bt[t*k*outerNR], k, &stage[t*outerNR*ldS+i0], 0, outerMR, outerNR, &off[0], pf, pf)
			}
		}
	}
}
