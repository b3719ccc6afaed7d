package cpu

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/laya-metal/laya/backend"
)

// TestParallelForCoversOnce: every index of [0, n) is handed to exactly one
// chunk, and parallelFor returns only after all of them ran, with the pool's
// workers polling (poolSpin) or blocked, back to back and after gaps.
func TestParallelForCoversOnce(t *testing.T) {
	be := New()
	be.workers = 4
	for _, gap := range []time.Duration{0, poolSpin / 2, 2 * poolSpin} {
		for _, n := range []int{1, 2, 3, 5, 64, 1000} {
			hits := make([]atomic.Int32, n)
			be.parallelFor(n, 1, func(lo, hi int) {
				time.Sleep(time.Duration(lo%3) * 50 * time.Microsecond) // uneven chunks
				for i := lo; i < hi; i++ {
					hits[i].Add(1)
				}
			})
			for i := range hits {
				if h := hits[i].Load(); h != 1 {
					t.Fatalf("gap %v, n = %d: index %d ran %d times", gap, n, i, h)
				}
			}
			time.Sleep(gap)
		}
	}
}

// TestParallelForConcurrentCallers: callers sharing the pool (several
// streams) each get every index run exactly once, whether an idle worker
// took a chunk or the caller ran it because none was idle.
func TestParallelForConcurrentCallers(t *testing.T) {
	be := New()
	be.workers = 4
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range 200 {
				n := 1 + (g*7+it)%64
				hits := make([]atomic.Int32, n)
				be.parallelFor(n, 1, func(lo, hi int) {
					for i := lo; i < hi; i++ {
						hits[i].Add(1)
					}
				})
				for i := range hits {
					if h := hits[i].Load(); h != 1 {
						errs <- fmt.Sprintf("caller %d, call %d, n = %d: index %d ran %d times", g, it, n, i, h)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestPoolWorkersBlockWhenIdle: the workers' polling is bounded: once the
// pool has been idle well past poolSpin, every worker is blocked on its
// wake channel, so an idle process burns no CPU.
func TestPoolWorkersBlockWhenIdle(t *testing.T) {
	be := New()
	be.workers = 3
	be.parallelFor(3, 1, func(lo, hi int) {})
	deadline := time.Now().Add(5 * time.Second)
	for {
		time.Sleep(min(20*poolSpin, 100*time.Millisecond))
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		var busy, workers int
		for _, g := range strings.Split(stacks, "\n\n") {
			if !strings.Contains(g, "(*poolWorker).run") {
				continue
			}
			workers++
			if !strings.Contains(strings.SplitN(g, "\n", 2)[0], "[chan receive") {
				busy++
			}
		}
		if workers == 0 {
			t.Fatal("no pool worker found in the goroutine dump")
		}
		if busy == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d idle workers still polling after 5 s", busy, workers)
		}
	}
}

// BenchmarkParallelForGap times a parallelFor of ~3 µs of work per chunk
// (one chunk a worker, GOMAXPROCS workers: -cpu 2,16) after a serial gap
// of 0, 20 or 200 µs, the gap excluded: the cost of handing chunks to
// workers that are polling (gaps below poolSpin) or blocked (above it),
// and of the caller waiting for them.
func BenchmarkParallelForGap(b *testing.B) {
	be := New()
	workers := be.workerCount()
	sink := make([]float64, 8*workers)
	for _, gap := range []time.Duration{0, 20 * time.Microsecond, 200 * time.Microsecond} {
		b.Run(fmt.Sprintf("gap=%v", gap), func(b *testing.B) {
			var spent time.Duration
			for b.Loop() {
				t0 := time.Now()
				be.parallelFor(workers, 1, func(lo, hi int) {
					for i := range 2000 {
						sink[lo*8] += float64(i)
					}
				})
				spent += time.Since(t0)
				for t1 := time.Now(); time.Since(t1) < gap; {
				}
			}
			b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N), "ns/call")
		})
	}
}

func TestSpinFromEnv(t *testing.T) {
	const def = 200 * time.Microsecond
	for _, c := range []struct {
		v    string
		want time.Duration
	}{
		{"", def},
		{"0", 0},
		{"50us", 50 * time.Microsecond},
		{"1ms", time.Millisecond},
		{"-1ms", def},
		{"fast", def},
		{"200", def}, // a bare number has no unit: rejected, not read as ns
	} {
		if got := spinFromEnv(c.v, def); got != c.want {
			t.Errorf("spinFromEnv(%q) = %v, want %v", c.v, got, c.want)
		}
	}
}

// BenchmarkSmallOps times operations of a few microseconds of work a
// worker, as a ten-question multilingual forward runs them between its
// GEMMs (862 rows of 768: a LayerNorm, the packed batch's Rope), on
// GOMAXPROCS workers (-cpu 1,2,16): what the hand-offs and the join cost
// next to the work.
func BenchmarkSmallOps(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	const rows, d, heads = 862, 768, 12
	s := New().NewStream().(*Stream)
	x := s.FromHost(rows, d, randomValues(rng, rows*d))
	w, bias := s.FromHost(1, d, randomValues(rng, d)), s.FromHost(1, d, randomValues(rng, d))
	out := s.New(rows, d)
	qkv := s.FromHost(rows, 3*d, randomValues(rng, rows*3*d))
	lengths := []int{86, 86, 86, 86, 86, 86, 86, 86, 86, 88}
	b.Run("layerNorm", func(b *testing.B) {
		for b.Loop() {
			s.LayerNorm(out, x, w, bias, 1e-5)
			s.runPending() // it runs with the next operation (norm.go): time it here
		}
	})
	b.Run("rope", func(b *testing.B) {
		for b.Loop() {
			s.Rope(qkv, backend.RopeParams{Layout: backend.Layout{SeqLen: 88, Packed: true, Lengths: lengths}, Heads: heads, HeadDim: d / heads, Theta: 160000})
		}
	})
	if err := s.Err(); err != nil {
		b.Fatal(err)
	}
}
